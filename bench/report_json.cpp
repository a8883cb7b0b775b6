// Result objects, aggregates and ratios of the benchmark report (report_json.h).
#include "bench/report_json.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace moepack::bench {

namespace {

using nlohmann::json;

json per_second(double count, double ms) { return ms > 0 ? json(count * 1000.0 / ms) : json(nullptr); }

json quotient(double num, double den) { return den > 0 ? json(num / den) : json(nullptr); }

double num(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

uint64_t u64(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

json rates(uint64_t prompt_tokens, uint64_t completion_tokens, double prefill_ms, double decode_ms) {
  return {{"prefill_tps", per_second(static_cast<double>(prompt_tokens), prefill_ms)},
          {"decode_tps", completion_tokens >= 2 ? per_second(static_cast<double>(completion_tokens - 1), decode_ms)
                                                : json(nullptr)}};
}

}  // namespace

json engine_result_json(const GenerateResult& r) {
  const BackendStats& s = r.stats;
  const uint64_t p = r.prompt_tokens.size(), c = r.tokens.size();
  json j = {{"ok", true},
            {"error", nullptr},
            {"prompt_tokens", p},
            {"completion_tokens", c},
            {"stop_reason", stop_reason_name(r.stop_reason)},
            {"ttft_ms", r.time_to_first_token_ms},
            {"prefill_ms", r.prefill_ms},
            {"decode_ms", r.decode_ms}};
  j.update(rates(p, c, r.prefill_ms, r.decode_ms));
  const bool has_cache = s.cache_hits + s.cache_misses > 0;
  j.update({{"cache_hits", s.cache_hits},
            {"cache_misses", s.cache_misses},
            {"hit_rate", has_cache ? quotient(static_cast<double>(s.cache_hits), static_cast<double>(s.cache_hits + s.cache_misses))
                                   : json(nullptr)},
            {"cache_evictions", s.cache_evictions},
            {"pack_read_bytes", s.pack_read_bytes},
            {"read_bytes_per_token", quotient(static_cast<double>(s.pack_read_bytes), static_cast<double>(c))},
            {"h2d_bytes", s.h2d_bytes},
            {"io_wait_ms", s.io_wait_ms},
            {"compute_ms", s.compute_ms},
            {"io_errors", s.io_errors},
            {"fallback_count", s.fallback_count},
            {"text", r.text}});
  return j;
}

json timeline_json(const std::vector<TokenSample>& samples, const std::vector<double>& t_ms, uint64_t first_token) {
  if (t_ms.size() != samples.size()) {
    throw Error("timeline_json: " + std::to_string(t_ms.size()) + " times for " + std::to_string(samples.size()) +
                " token samples");
  }
  json t = json::array(), fwd = json::array(), io = json::array(), rd = json::array(), miss = json::array();
  for (size_t i = 0; i < samples.size(); ++i) {
    t.push_back(std::isnan(t_ms[i]) ? json(nullptr) : json(t_ms[i]));
    fwd.push_back(samples[i].io_wait_ms + samples[i].compute_ms);
    io.push_back(samples[i].io_wait_ms);
    rd.push_back(samples[i].read_bytes);
    miss.push_back(samples[i].experts_missed);
  }
  return {{"first_token", first_token}, {"tokens", samples.size()}, {"t_ms", t},         {"forward_ms", fwd},
          {"io_wait_ms", io},           {"read_bytes", rd},         {"experts_missed", miss}};
}

json failed_result_json(const std::string& error) { return {{"ok", false}, {"error", error}}; }

json baseline_result_json(const StreamResult& r, uint64_t own_prompt_tokens) {
  if (!r.error.empty()) {
    json j = failed_result_json(r.error);
    j["http_status"] = r.http_status;
    return j;
  }
  const bool have_prompt = r.usage_reported && r.prompt_tokens > 0;
  const uint64_t p = have_prompt ? r.prompt_tokens : own_prompt_tokens;
  const uint64_t c = r.completion_tokens;
  // Client side: the prefill is everything up to the first token.
  json j = {{"ok", true},
            {"error", nullptr},
            {"prompt_tokens", p},
            {"prompt_tokens_source", have_prompt ? "usage" : "moepack"},
            {"completion_tokens", c},
            {"completion_tokens_source", r.usage_reported ? "usage" : "chunks"},
            {"stop_reason", r.finish_reason.empty() ? json(nullptr) : json(r.finish_reason)},
            {"ttft_ms", r.ttft_ms},
            {"prefill_ms", r.ttft_ms},
            {"decode_ms", r.decode_ms}};
  j.update(rates(p, c, r.ttft_ms, r.decode_ms));
  j.update({{"http_status", r.http_status}, {"text_chunks", r.text_chunks}, {"total_ms", r.total_ms}, {"text", r.text}});
  return j;
}

json aggregate_results(const std::vector<json>& results) {
  uint64_t ok = 0, p = 0, c = 0, decoded = 0, hits = 0, misses = 0, evictions = 0, read = 0, h2d = 0;
  double prefill_ms = 0, decode_ms = 0, ttft_ms = 0, io_ms = 0, compute_ms = 0;
  bool engine = false;
  for (const json& r : results) {
    if (!r.value("ok", false)) continue;
    ++ok;
    p += u64(r, "prompt_tokens");
    const uint64_t rc = u64(r, "completion_tokens");
    c += rc;
    if (rc >= 2) {  // decode time covers rc - 1 tokens
      decoded += rc - 1;
      decode_ms += num(r, "decode_ms");
    }
    prefill_ms += num(r, "prefill_ms");
    ttft_ms += num(r, "ttft_ms");
    if (r.contains("cache_hits")) {
      engine = true;
      hits += u64(r, "cache_hits");
      misses += u64(r, "cache_misses");
      evictions += u64(r, "cache_evictions");
      read += u64(r, "pack_read_bytes");
      h2d += u64(r, "h2d_bytes");
      io_ms += num(r, "io_wait_ms");
      compute_ms += num(r, "compute_ms");
    }
  }
  json a = {{"requests", results.size()},
            {"ok", ok},
            {"failed", results.size() - ok},
            {"prompt_tokens", p},
            {"completion_tokens", c},
            {"ttft_ms_mean", ok ? json(ttft_ms / static_cast<double>(ok)) : json(nullptr)},
            {"prefill_ms", prefill_ms},
            {"decode_ms", decode_ms},
            {"prefill_tps", per_second(static_cast<double>(p), prefill_ms)},
            {"decode_tps", per_second(static_cast<double>(decoded), decode_ms)}};
  if (engine) {
    const json bpt = quotient(static_cast<double>(read), static_cast<double>(c));
    a.update({{"cache_hits", hits},
              {"cache_misses", misses},
              {"hit_rate", quotient(static_cast<double>(hits), static_cast<double>(hits + misses))},
              {"cache_evictions", evictions},
              {"pack_read_bytes", read},
              {"read_bytes_per_token", bpt},
              {"ssd_gb_per_token", bpt.is_null() ? json(nullptr) : json(bpt.get<double>() / 1e9)},
              {"h2d_bytes", h2d},
              {"io_wait_ms", io_ms},
              {"compute_ms", compute_ms},
              {"io_wait_share", quotient(io_ms, io_ms + compute_ms)}});
  }
  return a;
}

json ratio_json(const json& ours, const json& baseline) {
  json out;
  for (const char* key : {"prefill_tps", "decode_tps", "ttft_ms"}) {
    const auto a = ours.find(key), b = baseline.find(key);
    const bool ok = a != ours.end() && b != baseline.end() && a->is_number() && b->is_number() &&
                    b->get<double>() > 0 && a->get<double>() > 0;
    out[key] = ok ? json(a->get<double>() / b->get<double>()) : json(nullptr);
  }
  if (ours.contains("ttft_ms_mean")) {  // an aggregate
    const auto a = ours.find("ttft_ms_mean"), b = baseline.find("ttft_ms_mean");
    const bool ok = b != baseline.end() && a->is_number() && b->is_number() && b->get<double>() > 0;
    out["ttft_ms"] = ok ? json(a->get<double>() / b->get<double>()) : json(nullptr);
  }
  return out;
}

void finish_report(json& report) {
  std::vector<std::string> baselines;
  for (const json& s : report["systems"]) {
    if (s["id"] != kOursId) baselines.push_back(s["id"].get<std::string>());
  }
  std::vector<std::string> groups;
  for (json& r : report["requests"]) {
    const std::string d = r["dataset"].get<std::string>();
    bool seen = false;
    for (const std::string& g : groups) seen = seen || g == d;
    if (!seen) groups.push_back(d);
    json ratios = json::object();
    for (const std::string& b : baselines) {
      if (r["results"].contains(kOursId) && r["results"].contains(b)) {
        ratios[b] = ratio_json(r["results"][kOursId], r["results"][b]);
      }
    }
    r["ratios"] = ratios;
  }
  groups.push_back("all");
  const json& published = report.value("published_results", json::object());
  json aggregates = json::array();
  for (const std::string& g : groups) {
    json agg = {{"group", g}, {"results", json::object()}};
    size_t n = 0;
    for (const json& s : report["systems"]) {
      const std::string id = s["id"].get<std::string>();
      std::vector<json> rs;
      for (const json& r : report["requests"]) {
        if ((g == "all" || r["dataset"] == g) && r["results"].contains(id)) rs.push_back(r["results"][id]);
      }
      n = std::max(n, rs.size());
      agg["results"][id] = aggregate_results(rs);
    }
    agg["requests"] = n;
    json ratios = json::object();
    for (const std::string& b : baselines) ratios[b] = ratio_json(agg["results"][kOursId], agg["results"][b]);
    agg["ratios"] = ratios;
    // Published figures of this dataset: CONFIG -> {FIELD: number}, and CONFIG/baseline_X for
    // the baselines the publication measured.
    json pub = json::object();
    if (published.is_object()) {
      for (const auto& [config, body] : published.items()) {
        if (!body.is_object()) continue;
        if (body.contains(g) && body[g].is_object()) {
          json p = body[g];
          if (body.contains("cache_vram_mib")) p["cache_vram_mib"] = body["cache_vram_mib"];
          pub[config] = p;
        }
        for (const auto& [key, sub] : body.items()) {
          if (key.rfind("baseline_", 0) == 0 && sub.is_object() && sub.contains(g)) pub[config + "/" + key] = sub[g];
        }
      }
    }
    agg["published"] = pub;
    aggregates.push_back(agg);
  }
  report["aggregates"] = aggregates;
}

}  // namespace moepack::bench
