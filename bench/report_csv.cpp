// CSV view of the benchmark report (report_csv.h).
#include "bench/report_csv.h"

#include <cstdio>

#include "bench/report_json.h"

namespace moepack::bench {

namespace {

using nlohmann::json;

// Result/aggregate fields copied into same-named columns.
const std::vector<std::string> kValueColumns = {
    "prompt_tokens", "completion_tokens", "ttft_ms",      "prefill_ms",     "decode_ms",
    "prefill_tps",   "decode_tps",        "hit_rate",     "cache_hits",     "cache_misses",
    "cache_evictions", "pack_read_bytes", "read_bytes_per_token", "h2d_bytes", "io_wait_ms",
    "compute_ms"};

std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v.get<double>());
    return buf;
  }
  return v.dump();
}

json get(const json& obj, const std::string& key) {
  const auto it = obj.find(key);
  return it == obj.end() ? json(nullptr) : *it;
}

void row(std::string& out, const std::vector<std::string>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i) out += ',';
    out += quote(cells[i]);
  }
  out += "\r\n";
}

}  // namespace

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = [] {
    std::vector<std::string> c = {"row_type", "group", "request_id", "system", "ok", "error"};
    c.insert(c.end(), kValueColumns.begin(), kValueColumns.end());
    c.insert(c.end(), {"ratio_prefill_tps", "ratio_decode_tps", "ratio_ttft_ms"});
    return c;
  }();
  return cols;
}

std::string report_csv(const json& report) {
  std::string out;
  row(out, csv_columns());
  auto emit = [&](const char* type, const std::string& group, const std::string& id, const std::string& system,
                  const json& res, const json& ratios, bool aggregate) {
    std::vector<std::string> c = {type, group, id, system};
    if (aggregate) {
      c.push_back(get(res, "failed") == json(0) ? "true" : "false");
      c.push_back(get(res, "failed").is_number() && get(res, "failed").get<uint64_t>() > 0
                      ? std::to_string(get(res, "failed").get<uint64_t>()) + " failed"
                      : "");
    } else {
      c.push_back(cell(get(res, "ok")));
      c.push_back(cell(get(res, "error")));
    }
    for (const std::string& k : kValueColumns) {
      c.push_back(cell(aggregate && k == "ttft_ms" ? get(res, "ttft_ms_mean") : get(res, k)));
    }
    const json r = ratios.is_object() && ratios.contains(system) ? ratios[system] : json::object();
    for (const char* k : {"prefill_tps", "decode_tps", "ttft_ms"}) c.push_back(cell(get(r, k)));
    row(out, c);
  };
  std::vector<std::string> systems;  // in the report's order: MoePack, then the baselines
  for (const json& s : report["systems"]) systems.push_back(s["id"].get<std::string>());
  for (const json& r : report["requests"]) {
    for (const std::string& s : systems) {
      if (!r["results"].contains(s)) continue;
      emit("request", r["dataset"].get<std::string>(), r["id"].get<std::string>(), s, r["results"][s],
           r.value("ratios", json()), false);
    }
  }
  for (const json& a : report["aggregates"]) {
    for (const std::string& s : systems) {
      if (!a["results"].contains(s)) continue;
      emit("aggregate", a["group"].get<std::string>(), "", s, a["results"][s], a.value("ratios", json()), true);
    }
  }
  return out;
}

}  // namespace moepack::bench
