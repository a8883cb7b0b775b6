// A benchmark prompt set: the requests `moepack bench` sends, one at a time, and the figures a
// published evaluation reported for them (docs/benchmarks.md, "Prompt sets").
//
// File format (JSON object; resources/benchmarks/published-10.json is the default set):
//   name               string, required
//   description        string, optional
//   settings           object, optional: the evaluation's own settings (temperature,
//                      max_tokens, concurrency); recorded in the report, not applied
//   published_results  object, optional: { CONFIG: { DATASET: { FIELD: number } } }, copied
//                      into the report and shown beside our aggregates of the same DATASET
//   requests           array, required, non-empty: { id: string, dataset: string,
//                      prompt: string } with unique ids
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace moepack::bench {

struct BenchRequest {
  std::string id;       // unique within the set
  std::string dataset;  // aggregation group ("alpaca", "mmlu", ...)
  std::string prompt;   // exact text, sent as one user message (or raw with --raw)
};

struct PromptSet {
  std::string path;  // where it was read from ("" when parsed from memory)
  std::string name;
  std::string description;
  nlohmann::json settings = nlohmann::json::object();
  nlohmann::json published_results = nlohmann::json::object();
  std::vector<BenchRequest> requests;

  // Distinct datasets in order of first appearance.
  std::vector<std::string> datasets() const;
};

// Validates and converts; `origin` (a file name) appears in errors. Throws FormatError naming
// the field (e.g. "requests[3].prompt") for a missing or mistyped member, an empty request
// list or a duplicate id.
PromptSet parse_prompt_set(const nlohmann::json& j, const std::string& origin);
// Reads and parses a prompt set file. Throws IoError / FormatError naming the path.
PromptSet load_prompt_set(const std::string& path);

// The default prompt set, resources/benchmarks/published-10.json, looked for in this order:
//   1. $MOEPACK_BENCHMARKS_DIR/published-10.json
//   2. <dir of the running executable>/../share/moepack/benchmarks/published-10.json (installed)
//   3. <source tree>/resources/benchmarks/published-10.json (a build tree; path compiled in)
// Returns the first that exists. Throws Error listing the places tried when none does.
std::string default_prompt_set_path();

}  // namespace moepack::bench
