// `moepack bench`: runs a prompt set through the MoePack engine and through OpenAI-compatible
// baselines, and returns the report (report_json.h; docs/benchmarks.md).
//
// Method (the published evaluation's: requests one at a time, in file order, greedy):
//   - MoePack first, every request, then each baseline in turn, every request (never
//     interleaved, so that a baseline on the same machine does not run while we measure).
//   - Temperature 0 (greedy argmax; the sampler's other stages are irrelevant then), exactly
//     max_tokens completion tokens when ignore_eos (the default: end-of-generation tokens do not
//     stop a request, so every request and every system decodes the same number of tokens).
//   - A fresh KV cache per request (Session::reset()); the expert cache is NOT cleared between
//     requests, as in a serving process: the first request starts cold, later ones find the
//     experts earlier ones left behind.
//   - Chat mode renders the model's chat template around one user message (baselines:
//     /v1/chat/completions); raw mode sends the prompt text as is (/v1/completions).
//   - A request that fails (an engine exception, or a baseline error of any kind) is recorded
//     with its error message and the run continues; aggregates skip it and count it.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/openai_client.h"
#include "bench/prompt_set.h"
#include "core/engine_settings.h"

namespace moepack::bench {

struct BaselineSpec {
  std::string url;
  std::string model;  // "" : the first id of GET {url}/v1/models, else "default"
};

struct BenchOptions {
  std::string model_path;  // GGUF, shard, Ollama name or Expert Pack
  EngineSettings settings;
  PromptSet prompts;
  int32_t max_tokens = 200;  // completion tokens per request (>= 1)
  bool chat = true;
  bool ignore_eos = true;
  std::vector<BaselineSpec> baselines;
  ClientOptions client;
  // Human-readable progress lines (no newline), e.g. to stderr.
  std::function<void(const std::string&)> progress;
};

// Runs the benchmark. Throws Error (IoError / FormatError) when the model cannot be loaded or
// max_tokens < 1; request-level failures are recorded in the report instead.
nlohmann::json run_bench(const BenchOptions& options);

// Formats a report can be written in.
struct ReportFormats {
  bool json = true, csv = true, html = true;
};
// Parses "json,csv,html" (any non-empty subset, any order). Throws Error naming the bad item.
ReportFormats parse_formats(const std::string& list);

// Writes report.json / report.csv / report.html into `out_dir` (created if missing), each
// atomically (core/durable_io.h: temp file, fsync, rename). Returns the paths written.
std::vector<std::string> write_reports(const nlohmann::json& report, const std::string& out_dir,
                                       const ReportFormats& formats);

}  // namespace moepack::bench
