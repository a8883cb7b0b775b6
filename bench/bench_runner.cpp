// The benchmark runner and report writing (bench_runner.h).
#include "bench/bench_runner.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>

#include "bench/machine_info.h"
#include "bench/report_csv.h"
#include "bench/report_html.h"
#include "bench/report_json.h"
#include "core/durable_io.h"
#include "core/error.h"
#include "core/model_source.h"
#include "core/session.h"

namespace moepack::bench {

namespace {

using nlohmann::json;

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string num_or_dash(const json& v, const char* f) { return v.is_number() ? fmt(f, v.get<double>()) : "-"; }

void say(const BenchOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

std::string request_label(const PromptSet& ps, size_t i) {
  return "[" + std::to_string(i + 1) + "/" + std::to_string(ps.requests.size()) + "] " + ps.requests[i].id;
}

}  // namespace

json run_bench(const BenchOptions& o) {
  if (o.max_tokens < 1) throw Error("bench: --max-tokens must be at least 1 (got " + std::to_string(o.max_tokens) + ")");
  const auto t_start = std::chrono::steady_clock::now();
  const PromptSet& ps = o.prompts;

  say(o, "loading " + o.model_path);
  std::unique_ptr<Session> session = Session::load(o.model_path, o.settings);
  if (o.chat && !session->template_warning().empty()) say(o, "warning: " + session->template_warning());

  json report;
  report["schema"] = kReportSchema;
  report["schema_version"] = kReportSchemaVersion;
  report["created_utc"] = utc_now();
  report["moepack"] = build_info();
  report["machine"] = machine_info(session->model().path());
  report["model"] = model_info(session->model());
  const BackendStats initial = session->backend().stats();
  report["engine"] = {{"backend", std::string(session->backend().name())},
                      {"settings", settings_to_json(o.settings)},
                      {"cache_slots", initial.cache_slots},
                      {"cache_slot_bytes", initial.cache_slot_bytes}};
  report["run"] = {{"max_tokens", o.max_tokens},
                   {"temperature", 0},
                   {"ignore_eos", o.ignore_eos},
                   {"mode", o.chat ? "chat" : "raw"},
                   {"concurrency", 1},
                   {"fresh_kv_per_request", true},
                   {"expert_cache_between_requests", "kept"},
                   {"order", "moepack, then each baseline; requests in file order, one at a time"}};
  report["prompt_set"] = {{"name", ps.name},
                          {"path", ps.path},
                          {"description", ps.description},
                          {"settings", ps.settings},
                          {"requests", ps.requests.size()}};
  report["published_results"] = ps.published_results;
  json systems = json::array({{{"id", kOursId},
                               {"kind", "moepack"},
                               {"label", "MoePack (" + std::string(session->backend().name()) + ")"}}});

  json requests = json::array();
  std::vector<uint64_t> own_prompt_tokens(ps.requests.size(), 0);
  GenerateOptions gen;
  gen.max_tokens = o.max_tokens;
  gen.ignore_eos = o.ignore_eos;
  gen.sampling.temperature = 0.0f;  // greedy
  for (size_t i = 0; i < ps.requests.size(); ++i) {
    const BenchRequest& rq = ps.requests[i];
    json entry = {{"index", i}, {"id", rq.id}, {"dataset", rq.dataset}, {"prompt_chars", rq.prompt.size()}};
    json res;
    try {
      session->reset();  // fresh KV per request; the expert cache stays warm
      const GenerateResult r = o.chat ? session->chat({{"user", rq.prompt}}, gen) : session->generate_text(rq.prompt, gen);
      res = engine_result_json(r);
      own_prompt_tokens[i] = r.prompt_tokens.size();
      say(o, request_label(ps, i) + " moepack: " + std::to_string(r.prompt_tokens.size()) + " prompt + " +
                 std::to_string(r.tokens.size()) + " completion tokens, ttft " +
                 fmt("%.0f", r.time_to_first_token_ms) + " ms, prefill " + num_or_dash(res["prefill_tps"], "%.1f") +
                 " tok/s, decode " + num_or_dash(res["decode_tps"], "%.2f") + " tok/s, hit rate " +
                 num_or_dash(res["hit_rate"], "%.3f"));
    } catch (const std::exception& e) {
      res = failed_result_json(e.what());
      say(o, request_label(ps, i) + " moepack FAILED: " + e.what());
    }
    entry["results"] = {{kOursId, res}};
    requests.push_back(entry);
  }

  for (size_t b = 0; b < o.baselines.size(); ++b) {
    const BaselineSpec& spec = o.baselines[b];
    const std::string id = "baseline" + std::to_string(b + 1);
    json sys = {{"id", id}, {"kind", "openai-compatible"}, {"url", spec.url}};
    std::unique_ptr<OpenAiClient> client;
    std::string setup_error;
    try {
      client = std::make_unique<OpenAiClient>(spec.url, o.client);
      sys["endpoint"] = client->endpoint(o.chat);
      std::string model = spec.model, err;
      if (model.empty()) {
        model = client->first_model_id(err);
        if (model.empty()) {
          model = "default";
          sys["model_lookup_error"] = err;
        }
      }
      sys["model"] = model;
      sys["label"] = model + " @ " + client->base_url();
    } catch (const std::exception& e) {
      setup_error = e.what();
      sys["label"] = spec.url;
    }
    systems.push_back(sys);
    for (size_t i = 0; i < ps.requests.size(); ++i) {
      json res;
      if (!client) {
        res = failed_result_json(setup_error);
      } else {
        CompletionRequest cr;
        cr.model = sys["model"].get<std::string>();
        cr.prompt = ps.requests[i].prompt;
        cr.chat = o.chat;
        cr.max_tokens = o.max_tokens;
        cr.ignore_eos = o.ignore_eos;
        res = baseline_result_json(client->complete(cr), own_prompt_tokens[i]);
      }
      if (res["ok"].get<bool>()) {
        say(o, request_label(ps, i) + " " + id + ": " + std::to_string(res["prompt_tokens"].get<uint64_t>()) +
                   " prompt + " + std::to_string(res["completion_tokens"].get<uint64_t>()) +
                   " completion tokens, ttft " + fmt("%.0f", res["ttft_ms"].get<double>()) + " ms, decode " +
                   num_or_dash(res["decode_tps"], "%.2f") + " tok/s");
      } else {
        say(o, request_label(ps, i) + " " + id + " FAILED: " + res["error"].get<std::string>());
      }
      requests[i]["results"][id] = res;
    }
  }

  report["systems"] = systems;
  report["requests"] = requests;
  report["notes"] = json::array(
      {"Rates are client-side wall-clock measurements: prefill_tps = prompt_tokens / prefill time (for baselines: "
       "time to first token, which includes connection set-up and the first sampled token), decode_tps = "
       "(completion_tokens - 1) / time from the first to the last token.",
       "Aggregates are ratios of sums over successful requests (token-weighted), not means of per-request rates.",
       "hit_rate counts unique (layer, expert) keys per forward step; ssd_gb_per_token uses 1 GB = 1e9 bytes, as the "
       "published figures.",
       std::string("ignore_eos = ") + (o.ignore_eos ? "true" : "false") +
           ": with true every request decodes exactly max_tokens tokens (the prompt set's own settings are recorded "
           "in prompt_set.settings)."});
  finish_report(report);
  report["duration_s"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return report;
}

ReportFormats parse_formats(const std::string& list) {
  ReportFormats f{false, false, false};
  size_t start = 0;
  bool any = false;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item == "json") f.json = true;
    else if (item == "csv") f.csv = true;
    else if (item == "html") f.html = true;
    else throw Error("--formats: unknown format \"" + item + "\" (expected json, csv, html)");
    any = true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (!any) throw Error("--formats: empty list");
  return f;
}

std::vector<std::string> write_reports(const json& report, const std::string& out_dir, const ReportFormats& formats) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw IoError(out_dir, "create_directories", ec.value());
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const std::string& text) {
    write_file_atomic(out_dir, name, text);
    written.push_back((fs::path(out_dir) / name).string());
  };
  if (formats.json) put("report.json", report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  if (formats.csv) put("report.csv", report_csv(report));
  if (formats.html) put("report.html", report_html(report));
  return written;
}

}  // namespace moepack::bench
