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

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/openai_client.h"
#include "bench/prompt_set.h"
#include "core/engine_settings.h"
#include "core/error.h"

namespace moepack::bench {

struct BaselineSpec {
  std::string url;
  std::string model;  // "" : the first id of GET {url}/v1/models, else "default"
};

// Structured progress for a GUI (the studio's Benchmarks page), called on the thread running
// run_bench(). Order for each system: RequestStarted, Token... (MoePack only), RequestFinished,
// for requests 0..n-1 in file order; MoePack first, then each baseline. `tokens` never
// decreases within a request.
struct BenchEvent {
  enum class Kind {
    Loaded,           // the model is open (before the first request)
    RequestStarted,   // `request` of `requests` begins for `system`
    Token,            // MoePack generated a token that produced text (see token_* fields)
    RequestFinished,  // `result` is the request's result object (report_json.h)
  };
  Kind kind = Kind::Loaded;
  std::string system;        // "moepack", "baseline1", ...
  size_t system_index = 0;   // 0 = MoePack
  size_t systems = 1;        // 1 + number of baselines
  size_t request = 0;        // 0-based index into the prompt set
  size_t requests = 0;       // prompt set size
  std::string request_id, dataset;  // of `request` (RequestStarted, Token, RequestFinished)
  uint64_t tokens = 0;       // completion tokens so far in this request (Token, RequestFinished)
  // Token: the sample of the token just generated (0-based index in the request, wall time
  // since the request was started in ms, the forward pass that produced its logits: io wait +
  // compute ms, SSD bytes read and unique (layer, expert) misses).
  uint64_t token_index = 0;
  double token_t_ms = 0, token_forward_ms = 0;
  uint64_t token_read_bytes = 0;
  uint32_t token_misses = 0;
  const nlohmann::json* result = nullptr;  // RequestFinished only; valid during the call
};

// Thrown by run_bench() when BenchOptions::cancel was set; no report exists then.
class BenchCancelled : public Error {
 public:
  BenchCancelled() : Error("bench: cancelled") {}
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
  // Structured progress (optional), see BenchEvent.
  std::function<void(const BenchEvent&)> on_event;
  // When set (any thread) the run stops within one forward pass (MoePack) or after the current
  // baseline request and run_bench() throws BenchCancelled.
  const std::atomic<bool>* cancel = nullptr;
};

// Runs the benchmark. Throws Error (IoError / FormatError) when the model cannot be loaded or
// max_tokens < 1, BenchCancelled when cancelled; request-level failures are recorded in the
// report instead. MoePack's results carry a per-token `timeline` (report_json.h:
// timeline_json).
nlohmann::json run_bench(const BenchOptions& options);

// Formats a report can be written in.
struct ReportFormats {
  bool json = true, csv = true, html = true;
};
// Parses "json,csv,html" (any non-empty subset, any order). Throws Error naming the bad item.
ReportFormats parse_formats(const std::string& list);

// Creates `out_dir` if missing and checks that a file can be created in it (a probe file, removed
// at once), so a run that would end unable to write its report fails before it starts. Throws
// IoError naming the directory.
void prepare_report_dir(const std::string& out_dir);

// Writes report.json / report.csv / report.html into `out_dir` (created if missing), each
// atomically (core/durable_io.h: temp file, fsync, rename). Returns the paths written.
std::vector<std::string> write_reports(const nlohmann::json& report, const std::string& out_dir,
                                       const ReportFormats& formats);

}  // namespace moepack::bench
