// Options shared by the commands that run a model (`run`, `chat`): engine settings
// (`--config FILE.json`, `--set key=value`, `--backend`) and the sampler's parameters, with
// llama.cpp's llama-cli defaults (core/sampler.h). Also the JSON form of BackendStats.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/engine_settings.h"
#include "core/sampler.h"
#include "core/session.h"

namespace moepack::cli {

struct EngineOptions {
  std::string config;             // --config FILE.json
  std::vector<std::string> sets;  // --set key=value (repeatable)
  std::string backend;            // --backend cpu|cuda|auto (empty: from the settings)
};

// Registers --config, --set and --backend on `sub`.
void add_engine_options(CLI::App* sub, EngineOptions& o);
// Settings in this order: defaults, --config file, each --set in order, --backend. Throws Error
// naming the key (and the file) for anything invalid.
EngineSettings resolve_engine_settings(const EngineOptions& o);

// Registers --temperature, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n,
// --presence-penalty, --frequency-penalty and --seed, bound to `p` (defaults as in `p`).
void add_sampling_options(CLI::App* sub, SamplingParams& p);

// The model argument, or the settings' pack_path / manifest_path when it is empty. Throws Error
// when there is none.
std::string model_path(const std::string& arg, const EngineSettings& s);

nlohmann::json backend_stats_json(const BackendStats& s);

// Says on stderr when the session runs with less context than an n_ctx asked for (other than
// the default) gives: the backend caps it at the model's trained context.
void warn_if_context_capped(const EngineSettings& s, const Session& session);
// Prints the tokenizer's load warnings that change what the model sees (an unknown pre-tokenizer,
// a special-token id outside the vocabulary replaced by llama.cpp's default) as "warning: ..."
// on stderr; the notes on tokens treated as control tokens (many, and harmless) are not printed.
void print_tokenizer_warnings(const Tokenizer& tokenizer);

}  // namespace moepack::cli
