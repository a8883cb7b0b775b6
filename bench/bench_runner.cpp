// The benchmark runner and report writing (bench_runner.h).
#include "bench/bench_runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>

#include "bench/machine_info.h"
#include "bench/report_csv.h"
#include "bench/report_html.h"
#include "bench/report_json.h"
#include "core/build_stamp.h"
#include "core/durable_io.h"
#include "core/error.h"
#include "core/model_source.h"
#include "core/session.h"

namespace moepack::bench {

namespace {

using nlohmann::json;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string num_or_dash(const json& v, const char* f) { return v.is_number() ? fmt(f, v.get<double>()) : "-"; }

void say(const BenchOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

void emit_event(const BenchOptions& o, const BenchEvent& e) {
  if (o.on_event) o.on_event(e);
}

bool cancelled(const BenchOptions& o) { return o.cancel && o.cancel->load(std::memory_order_relaxed); }

void throw_if_cancelled(const BenchOptions& o) {
  if (cancelled(o)) throw BenchCancelled();
}

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string request_label(const PromptSet& ps, size_t i) {
  return "[" + std::to_string(i + 1) + "/" + std::to_string(ps.requests.size()) + "] " + ps.requests[i].id;
}

}  // namespace

json run_bench(const BenchOptions& o) {
  if (o.max_tokens < 1) throw Error("bench: --max-tokens must be at least 1 (got " + std::to_string(o.max_tokens) + ")");
  const auto t_start = std::chrono::steady_clock::now();
  const PromptSet& ps = o.prompts;

  throw_if_cancelled(o);
  say(o, "loading " + o.model_path);
  std::unique_ptr<Session> session = Session::load(o.model_path, o.settings);
  throw_if_cancelled(o);
  BenchEvent ev;
  ev.systems = 1 + o.baselines.size();
  ev.requests = ps.requests.size();
  ev.system = kOursId;
  emit_event(o, ev);
  if (o.chat && !session->template_warning().empty()) say(o, "warning: " + session->template_warning());
  if (!session->backend_note().empty()) say(o, "note: running on the CPU: " + session->backend_note());

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
                      {"cache_slot_bytes", initial.cache_slot_bytes},
                      // The host-RAM tier as sized on this machine (cache_ram_mib "auto" depends on its RAM).
                      {"ram_tier_slots", initial.ram_tier_slots}};
  // Why `auto` passed over a GPU backend: a report of CPU numbers says so.
  if (!session->backend_note().empty()) report["engine"]["backend_note"] = session->backend_note();
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
  gen.cancel = o.cancel;
  Telemetry& tele = session->telemetry();
  for (size_t i = 0; i < ps.requests.size(); ++i) {
    throw_if_cancelled(o);
    const BenchRequest& rq = ps.requests[i];
    json entry = {{"index", i}, {"id", rq.id}, {"dataset", rq.dataset}, {"prompt_chars", rq.prompt.size()}};
    ev.kind = BenchEvent::Kind::RequestStarted;
    ev.request = i;
    ev.request_id = rq.id;
    ev.dataset = rq.dataset;
    ev.tokens = 0;
    emit_event(o, ev);
    json res;
    try {
      session->reset();  // fresh KV per request; the expert cache stays warm
      // Wall time per token, observed when the token's text arrives (the callback runs right
      // after the token was sampled and its TokenSample recorded, so the telemetry's token
      // counter numbers it).
      const uint64_t tokens_before = tele.counters().tokens.load(std::memory_order_relaxed);
      std::vector<double> stamps;
      const auto t_req = std::chrono::steady_clock::now();
      const TextCallback on_text = [&](std::string_view, int32_t) {
        const uint64_t n = tele.counters().tokens.load(std::memory_order_relaxed) - tokens_before;
        if (n == 0) return !cancelled(o);
        if (stamps.size() < n) stamps.resize(n, std::nan(""));
        if (std::isnan(stamps[n - 1])) {
          stamps[n - 1] = ms_between(t_req, std::chrono::steady_clock::now());
          if (o.on_event) {
            BenchEvent t = ev;
            t.kind = BenchEvent::Kind::Token;
            t.tokens = n;
            t.token_index = n - 1;
            t.token_t_ms = stamps[n - 1];
            const std::vector<TokenSample> last = tele.recent(1);
            if (!last.empty()) {
              t.token_forward_ms = last[0].io_wait_ms + last[0].compute_ms;
              t.token_read_bytes = last[0].read_bytes;
              t.token_misses = last[0].experts_missed;
            }
            o.on_event(t);
          }
        }
        return !cancelled(o);
      };
      const GenerateResult r = o.chat ? session->chat({{"user", rq.prompt}}, gen, on_text)
                                      : session->generate_text(rq.prompt, gen, on_text);
      throw_if_cancelled(o);
      res = engine_result_json(r);
      // The samples of this request's tokens (the ring may have kept fewer than generated).
      const uint64_t recorded = tele.counters().tokens.load(std::memory_order_relaxed) - tokens_before;
      std::vector<TokenSample> samples = tele.recent(static_cast<size_t>(std::min<uint64_t>(recorded, r.tokens.size())));
      const uint64_t first = r.tokens.size() - samples.size();
      std::vector<double> t_ms(samples.size(), std::nan(""));
      for (size_t k = 0; k < samples.size(); ++k) {
        if (first + k < stamps.size()) t_ms[k] = stamps[first + k];
      }
      res["timeline"] = timeline_json(samples, t_ms, first);
      own_prompt_tokens[i] = r.prompt_tokens.size();
      say(o, request_label(ps, i) + " moepack: " + std::to_string(r.prompt_tokens.size()) + " prompt + " +
                 std::to_string(r.tokens.size()) + " completion tokens, ttft " +
                 fmt("%.0f", r.time_to_first_token_ms) + " ms, prefill " + num_or_dash(res["prefill_tps"], "%.1f") +
                 " tok/s, decode " + num_or_dash(res["decode_tps"], "%.2f") + " tok/s, hit rate " +
                 num_or_dash(res["hit_rate"], "%.3f"));
    } catch (const BenchCancelled&) {
      throw;
    } catch (const std::exception& e) {
      throw_if_cancelled(o);
      res = failed_result_json(e.what());
      say(o, request_label(ps, i) + " moepack FAILED: " + e.what());
    }
    ev.kind = BenchEvent::Kind::RequestFinished;
    ev.tokens = res.value("completion_tokens", uint64_t{0});
    ev.result = &res;
    emit_event(o, ev);
    ev.result = nullptr;
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
    ev.system = id;
    ev.system_index = b + 1;
    for (size_t i = 0; i < ps.requests.size(); ++i) {
      throw_if_cancelled(o);
      ev.kind = BenchEvent::Kind::RequestStarted;
      ev.request = i;
      ev.request_id = ps.requests[i].id;
      ev.dataset = ps.requests[i].dataset;
      ev.tokens = 0;
      emit_event(o, ev);
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
      throw_if_cancelled(o);
      ev.kind = BenchEvent::Kind::RequestFinished;
      ev.tokens = res.value("completion_tokens", uint64_t{0});
      ev.result = &res;
      emit_event(o, ev);
      ev.result = nullptr;
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

void prepare_report_dir(const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw IoError(out_dir, "create_directories", ec.value());
  std::string probe = (std::filesystem::path(out_dir) / ".moepack-write-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());  // a name of its own: concurrent runs never collide
  if (fd < 0) throw IoError(out_dir, "create a file in", errno);
  ::close(fd);
  ::unlink(probe.c_str());
}

std::vector<std::string> write_reports(const json& report, const std::string& out_dir,
                                       const ReportFormats& formats) {
  namespace fs = std::filesystem;
  prepare_report_dir(out_dir);
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
