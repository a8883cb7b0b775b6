// The benchmark report's JSON document: the one model of a report; CSV (report_csv.h) and HTML
// (report_html.h) are views of it. Schema "moepack-bench-report", version kReportSchemaVersion,
// documented field by field in docs/benchmarks.md. Units are in the names: _ms milliseconds,
// _tps tokens per second, _bytes bytes; rates a system could not measure are null.
//
// Formulas (per request; the same for MoePack and baselines):
//   prefill_tps = prompt_tokens / (prefill_ms / 1000)
//   decode_tps  = (completion_tokens - 1) / (decode_ms / 1000)   (null below 2 tokens: the
//                 first token comes out of the prefill, so decode time covers n - 1 tokens)
//   hit_rate    = cache_hits / (cache_hits + cache_misses), counted on unique (layer, expert)
//                 keys per forward step (null without an expert cache: GGUF-resident experts)
//   read_bytes_per_token = pack_read_bytes / completion_tokens
// Aggregates are ratios of sums over the group's successful requests (token-weighted), not
// means of per-request rates. Ratios are ours / baseline (ttft_ms: lower is better).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/openai_client.h"
#include "core/session.h"

namespace moepack::bench {

inline constexpr const char* kReportSchema = "moepack-bench-report";
inline constexpr int kReportSchemaVersion = 1;
inline constexpr const char* kOursId = "moepack";

// One MoePack request's result object.
nlohmann::json engine_result_json(const GenerateResult& r);
// The per-token timeline of one MoePack request (columnar arrays, one entry per generated
// token, in generation order), from the engine's Telemetry samples (core/telemetry.h) and the
// wall-clock times the runner observed:
//   {first_token, tokens, t_ms[], forward_ms[], io_wait_ms[], read_bytes[], experts_missed[]}
// `t_ms[i]`: wall time from the request's start to when token i's text reached the runner
// (null for a token that produced no text: a control token or part of a UTF-8 character);
// `forward_ms[i]` = io_wait_ms[i] + compute ms of the forward pass that produced token i's
// logits (token 0: the prefill); `read_bytes[i]` SSD bytes read by that pass; `experts_missed[i]`
// its unique (layer, expert) misses. When the telemetry ring kept fewer samples than tokens
// (TelemetrySettings::history), the arrays hold the last ones and `first_token` > 0.
// `t_ms` must have one entry per sample (NaN = null); throws Error otherwise.
nlohmann::json timeline_json(const std::vector<TokenSample>& samples, const std::vector<double>& t_ms,
                             uint64_t first_token);
// A request that threw (the run continues with the next one).
nlohmann::json failed_result_json(const std::string& error);
// One baseline request's result object. `own_prompt_tokens` is MoePack's count of the same
// prompt, used (and marked prompt_tokens_source "moepack") when the server sent no usage.
nlohmann::json baseline_result_json(const StreamResult& r, uint64_t own_prompt_tokens);

// Aggregate over result objects (failed ones are counted, not summed).
nlohmann::json aggregate_results(const std::vector<nlohmann::json>& results);
// { prefill_tps, decode_tps, ttft_ms }: ours / baseline, null where either is missing or 0.
nlohmann::json ratio_json(const nlohmann::json& ours, const nlohmann::json& baseline);

// Fills report["aggregates"] (one per dataset in request order, then "all") and every
// request's and aggregate's "ratios" from report["systems"] and report["requests"], and the
// published figures of each dataset from report["published_results"].
void finish_report(nlohmann::json& report);

}  // namespace moepack::bench
