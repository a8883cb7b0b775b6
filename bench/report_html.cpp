// HTML view of the benchmark report (report_html.h).
#include "bench/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "bench/report_json.h"

namespace moepack::bench {

namespace {

using nlohmann::json;

const char* const kPalette[] = {"#2f6fdf", "#e0703a", "#3aa35c", "#9b59b6", "#c0392b", "#7f8c8d", "#d4ac0d", "#16a085"};

std::string fmt(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string number(const json& v, int digits = 2) {
  if (v.is_number_unsigned() || v.is_number_integer()) return v.dump();
  if (v.is_number()) return fmt(v.get<double>(), digits);
  return "&ndash;";
}

std::string bytes(const json& v) {
  if (!v.is_number()) return "&ndash;";
  const double b = v.get<double>();
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double x = b;
  while (x >= 1024 && u < 4) {
    x /= 1024;
    ++u;
  }
  return fmt(x, u == 0 ? 0 : 2) + " " + units[u];
}

json get(const json& o, const std::string& k) {
  if (!o.is_object()) return nullptr;
  const auto it = o.find(k);
  return it == o.end() ? json(nullptr) : *it;
}

std::string str(const json& v) { return v.is_string() ? v.get<std::string>() : (v.is_null() ? "" : v.dump()); }

struct Series {
  std::string name;
  std::vector<std::optional<double>> values;  // per category
};

// A grouped bar chart: one group of bars per category, one bar per series.
std::string bar_chart(const std::string& id, const std::string& title, const std::string& unit,
                      const std::vector<std::string>& categories, const std::vector<Series>& series) {
  double max_v = 0;
  for (const Series& s : series) {
    for (const auto& v : s.values) {
      if (v) max_v = std::max(max_v, *v);
    }
  }
  if (max_v <= 0) max_v = 1;
  // A "nice" axis maximum: 1, 2 or 5 times a power of ten.
  const double mag = std::pow(10.0, std::floor(std::log10(max_v)));
  double top = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= max_v) {
      top = m * mag;
      break;
    }
  }
  const int ns = static_cast<int>(std::max<size_t>(series.size(), 1));
  const int bar = 12, gap = 14, left = 60, right = 20, plot_h = 220, top_pad = 30, label_h = 110;
  const int group_w = ns * bar + gap;
  const int width = std::max(480, left + right + group_w * static_cast<int>(categories.size()));
  const int legend_h = 18 * static_cast<int>(series.size()) + 10;
  const int height = top_pad + plot_h + label_h + legend_h;
  std::string s = "<svg class=\"chart\" id=\"" + id + "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                  std::to_string(width) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
                  std::to_string(width) + " " + std::to_string(height) + "\" role=\"img\" aria-label=\"" +
                  html_escape(title) + "\">\n";
  s += "<title>" + html_escape(title) + "</title>\n";
  s += "<text x=\"" + std::to_string(left) + "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" + html_escape(title) +
       " (" + html_escape(unit) + ")</text>\n";
  for (int t = 0; t <= 5; ++t) {
    const double v = top * t / 5;
    const int y = top_pad + plot_h - static_cast<int>(std::lround(plot_h * (v / top)));
    s += "<line x1=\"" + std::to_string(left) + "\" x2=\"" + std::to_string(width - right) + "\" y1=\"" +
         std::to_string(y) + "\" y2=\"" + std::to_string(y) + "\" stroke=\"#ddd\"/>";
    s += "<text x=\"" + std::to_string(left - 6) + "\" y=\"" + std::to_string(y + 4) +
         "\" font-size=\"11\" text-anchor=\"end\">" + fmt(v, top >= 10 ? 0 : 2) + "</text>\n";
  }
  for (size_t c = 0; c < categories.size(); ++c) {
    const int x0 = left + static_cast<int>(c) * group_w + gap / 2;
    for (size_t k = 0; k < series.size(); ++k) {
      const auto& v = c < series[k].values.size() ? series[k].values[c] : std::nullopt;
      if (!v) continue;
      const int h = static_cast<int>(std::lround(plot_h * std::min(1.0, *v / top)));
      s += "<rect class=\"bar\" x=\"" + std::to_string(x0 + static_cast<int>(k) * bar) + "\" y=\"" +
           std::to_string(top_pad + plot_h - h) + "\" width=\"" + std::to_string(bar - 1) + "\" height=\"" +
           std::to_string(h) + "\" fill=\"" + kPalette[k % 8] + "\"><title>" + html_escape(series[k].name) + ", " +
           html_escape(categories[c]) + ": " + fmt(*v, 3) + "</title></rect>";
    }
    const int lx = x0 + ns * bar / 2, ly = top_pad + plot_h + 8;
    s += "<text x=\"" + std::to_string(lx) + "\" y=\"" + std::to_string(ly) +
         "\" font-size=\"10\" text-anchor=\"end\" transform=\"rotate(-45 " + std::to_string(lx) + " " +
         std::to_string(ly) + ")\">" + html_escape(categories[c]) + "</text>\n";
  }
  s += "<line x1=\"" + std::to_string(left) + "\" x2=\"" + std::to_string(width - right) + "\" y1=\"" +
       std::to_string(top_pad + plot_h) + "\" y2=\"" + std::to_string(top_pad + plot_h) + "\" stroke=\"#333\"/>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const int y = top_pad + plot_h + label_h + 18 * static_cast<int>(k);
    s += "<rect x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(y) + "\" width=\"12\" height=\"12\" fill=\"" +
         kPalette[k % 8] + "\"/><text x=\"" + std::to_string(left + 18) + "\" y=\"" + std::to_string(y + 10) +
         "\" font-size=\"12\">" + html_escape(series[k].name) + "</text>\n";
  }
  return s + "</svg>\n";
}

double nice_top(double max_v) {
  if (max_v <= 0) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(max_v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= max_v) return m * mag;
  }
  return 10 * mag;
}

// The per-token timeline of MoePack's requests (each request's result "timeline", report_json.h),
// the requests one after another along x (token number in the run, request boundaries dashed):
// forward-pass ms per token as a line (left axis) and SSD KB read per token as bars (right axis).
std::string timeline_chart(const json& report) {
  struct Token {
    double forward_ms;
    double read_kb;
  };
  std::vector<Token> tokens;
  std::vector<std::pair<size_t, std::string>> starts;  // first token of each request, request id
  for (const json& r : report["requests"]) {
    const json res = get(r["results"], kOursId);
    const json tl = get(res, "timeline");
    if (!tl.is_object()) continue;
    starts.emplace_back(tokens.size(), str(r["id"]));
    const json& f = tl["forward_ms"];
    const json& b = tl["read_bytes"];
    for (size_t i = 0; i < f.size(); ++i) {
      tokens.push_back({f[i].get<double>(), i < b.size() ? b[i].get<double>() / 1e3 : 0.0});
    }
  }
  const std::string title = "Per-token timeline (MoePack)";
  const int width = 960, left = 60, right = 70, top_pad = 30, plot_h = 220, bottom = 60;
  const int height = top_pad + plot_h + bottom;
  std::string s = "<svg class=\"chart\" id=\"chart-token-timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                  std::to_string(width) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
                  std::to_string(width) + " " + std::to_string(height) + "\" role=\"img\" aria-label=\"" + title +
                  "\">\n<title>" + title + "</title>\n";
  s += "<text x=\"" + std::to_string(left) + "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" + title +
       ": forward ms per token (line, left) and SSD KB read per token (bars, right)</text>\n";
  if (tokens.empty()) {
    s += "<text x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(top_pad + plot_h / 2) +
         "\" font-size=\"12\">no per-token data</text>\n";
    return s + "</svg>\n";
  }
  double max_ms = 0, max_kb = 0;
  for (const Token& t : tokens) {
    max_ms = std::max(max_ms, t.forward_ms);
    max_kb = std::max(max_kb, t.read_kb);
  }
  const double top_ms = nice_top(max_ms), top_kb = nice_top(max_kb);
  const double plot_w = width - left - right;
  const double step = plot_w / static_cast<double>(tokens.size());
  auto x_of = [&](size_t i) { return left + step * (static_cast<double>(i) + 0.5); };
  auto y_of = [&](double v, double top) { return top_pad + plot_h - plot_h * std::min(1.0, v / top); };
  for (int t = 0; t <= 5; ++t) {
    const double y = top_pad + plot_h - plot_h * t / 5.0;
    s += "<line x1=\"" + std::to_string(left) + "\" x2=\"" + std::to_string(width - right) + "\" y1=\"" + fmt(y, 1) +
         "\" y2=\"" + fmt(y, 1) + "\" stroke=\"#ddd\"/>";
    s += "<text x=\"" + std::to_string(left - 6) + "\" y=\"" + fmt(y + 4, 1) + "\" font-size=\"11\" text-anchor=\"end\">" +
         fmt(top_ms * t / 5, top_ms >= 10 ? 0 : 2) + "</text>";
    s += "<text x=\"" + std::to_string(width - right + 6) + "\" y=\"" + fmt(y + 4, 1) + "\" font-size=\"11\">" +
         fmt(top_kb * t / 5, top_kb >= 10 ? 0 : 2) + "</text>\n";
  }
  s += "<g class=\"read-bytes\" fill=\"#e0703a\" fill-opacity=\"0.45\">";
  const double bar_w = std::max(0.5, step * 0.8);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].read_kb <= 0) continue;
    const double y = y_of(tokens[i].read_kb, top_kb);
    s += "<rect x=\"" + fmt(x_of(i) - bar_w / 2, 2) + "\" y=\"" + fmt(y, 2) + "\" width=\"" + fmt(bar_w, 2) +
         "\" height=\"" + fmt(top_pad + plot_h - y, 2) + "\"/>";
  }
  s += "</g>\n<polyline class=\"forward-ms\" fill=\"none\" stroke=\"#2f6fdf\" stroke-width=\"1.2\" points=\"";
  for (size_t i = 0; i < tokens.size(); ++i) {
    s += (i ? " " : "") + fmt(x_of(i), 2) + "," + fmt(y_of(tokens[i].forward_ms, top_ms), 2);
  }
  s += "\"/>\n";
  for (const auto& [first, id] : starts) {
    const double x = left + step * static_cast<double>(first);
    s += "<line class=\"request-start\" x1=\"" + fmt(x, 2) + "\" x2=\"" + fmt(x, 2) + "\" y1=\"" +
         std::to_string(top_pad) + "\" y2=\"" + std::to_string(top_pad + plot_h) +
         "\" stroke=\"#555\" stroke-dasharray=\"3,3\"/><text x=\"" + fmt(x + 2, 2) + "\" y=\"" +
         std::to_string(top_pad + plot_h + 14) + "\" font-size=\"10\">" + html_escape(id) + "</text>\n";
  }
  s += "<line x1=\"" + std::to_string(left) + "\" x2=\"" + std::to_string(width - right) + "\" y1=\"" +
       std::to_string(top_pad + plot_h) + "\" y2=\"" + std::to_string(top_pad + plot_h) + "\" stroke=\"#333\"/>\n";
  s += "<text x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(height - 12) +
       "\" font-size=\"11\">token in the run (" + std::to_string(tokens.size()) +
       " tokens); line: forward ms (io wait + compute); bars: SSD KB (1 KB = 1000 bytes)</text>\n";
  return s + "</svg>\n";
}

std::string th(const std::vector<std::string>& cells) {
  std::string s = "<tr>";
  for (const auto& c : cells) s += "<th>" + c + "</th>";
  return s + "</tr>\n";
}

std::string td(const std::vector<std::string>& cells) {
  std::string s = "<tr>";
  for (const auto& c : cells) s += "<td>" + c + "</td>";
  return s + "</tr>\n";
}

std::string system_label(const json& report, const std::string& id) {
  for (const json& s : report["systems"]) {
    if (s["id"] == id) return id == kOursId ? str(s["label"]) : id + ": " + str(get(s, "label"));
  }
  return id;
}

}  // namespace

std::string html_escape(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string report_html(const json& report) {
  std::vector<std::string> systems;
  for (const json& s : report["systems"]) systems.push_back(s["id"].get<std::string>());
  const json& model = report["model"];
  const json& machine = report["machine"];
  const json& run = report["run"];
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>MoePack benchmark: " + html_escape(str(get(model, "name"))) + " / " +
       html_escape(str(report["prompt_set"]["name"])) + "</title>\n";
  h += "<style>\nbody{font-family:system-ui,sans-serif;margin:2em;color:#222}"
       "table{border-collapse:collapse;margin:1em 0;font-size:13px}"
       "th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}"
       "th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}"
       ".err{color:#b00}dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}"
       "dt{font-weight:bold}pre{background:#f7f7f7;padding:8px;overflow:auto}\n</style>\n</head>\n<body>\n";
  h += "<h1>MoePack benchmark report</h1>\n";

  // Summary.
  h += "<section id=\"summary\"><h2>Summary</h2><dl>\n";
  auto dd = [&](const std::string& k, const std::string& v) { h += "<dt>" + k + "</dt><dd>" + v + "</dd>\n"; };
  dd("Created (UTC)", html_escape(str(report["created_utc"])));
  dd("Model", html_escape(str(get(model, "path"))) + " (" + html_escape(str(get(model, "format"))) + ", " +
                  html_escape(str(get(model, "architecture"))) + ")");
  dd("Model identity", html_escape(str(get(get(model, "identity"), "kind"))) + " " +
                           html_escape(str(get(get(model, "identity"), "sha256"))));
  dd("Prompt set", html_escape(str(report["prompt_set"]["name"])) + " (" + number(report["prompt_set"]["requests"]) +
                       " requests)");
  dd("Run", "mode " + html_escape(str(run["mode"])) + ", temperature 0, " + number(run["max_tokens"]) +
                " completion tokens per request, ignore_eos " + str(run["ignore_eos"]) +
                ", fresh KV per request, expert cache kept between requests");
  const json ram_slots = get(report["engine"], "ram_tier_slots");  // absent in reports before it
  dd("Backend", html_escape(str(report["engine"]["backend"])) + ", " +
                    number(report["engine"]["cache_slots"]) + " expert cache slots of " +
                    bytes(report["engine"]["cache_slot_bytes"]) +
                    (ram_slots.is_number() && ram_slots.get<uint64_t>() > 0
                         ? ", " + number(ram_slots) + " host-RAM tier slots"
                         : std::string()));
  if (const json& note = get(report["engine"], "backend_note"); note.is_string()) {
    dd("Not on the GPU", html_escape(note.get<std::string>()));
  }
  std::string gpus;
  for (const json& g : get(machine, "gpus")) gpus += (gpus.empty() ? "" : "; ") + str(get(g, "name")) + " (" + str(get(g, "driver")) + ")";
  dd("Machine", html_escape(str(get(machine, "cpu_model"))) + ", " + number(get(machine, "logical_cores")) +
                    " logical cores, " + bytes(get(machine, "ram_bytes")) + " RAM, GPU: " +
                    html_escape(gpus.empty() ? "none" : gpus));
  dd("Storage", html_escape(str(get(get(machine, "storage"), "device_model"))) + " " +
                    html_escape(str(get(get(machine, "storage"), "device"))) + ", " +
                    html_escape(str(get(get(machine, "storage"), "filesystem"))));
  dd("OS", html_escape(str(get(machine, "os"))) + ", " + html_escape(str(get(machine, "kernel"))));
  dd("MoePack", html_escape(str(report["moepack"]["version"])) + " (" + html_escape(str(report["moepack"]["git_describe"])) +
                    ", " + html_escape(str(report["moepack"]["git_commit"])) + ")");
  for (const std::string& id : systems) {
    if (id != kOursId) dd(html_escape(id), html_escape(system_label(report, id)));
  }
  h += "</dl></section>\n";

  // Aggregates.
  h += "<section id=\"aggregates\"><h2>Aggregates per data set</h2>\n<table>\n";
  h += th({"group", "system", "requests", "failed", "prompt tok", "completion tok", "TTFT mean ms", "prefill tok/s",
           "decode tok/s", "hit rate", "SSD bytes/token", "evictions", "H2D", "I/O wait ms", "compute ms",
           "prefill ratio", "decode ratio", "TTFT ratio"});
  for (const json& a : report["aggregates"]) {
    for (const std::string& id : systems) {
      const json r = get(a["results"], id);
      const json q = get(a["ratios"], id);
      h += td({html_escape(str(a["group"])), html_escape(system_label(report, id)), number(get(r, "requests")),
               number(get(r, "failed")), number(get(r, "prompt_tokens")), number(get(r, "completion_tokens")),
               number(get(r, "ttft_ms_mean"), 1), number(get(r, "prefill_tps")), number(get(r, "decode_tps")),
               number(get(r, "hit_rate"), 3), bytes(get(r, "read_bytes_per_token")), number(get(r, "cache_evictions")),
               bytes(get(r, "h2d_bytes")), number(get(r, "io_wait_ms"), 1), number(get(r, "compute_ms"), 1),
               number(get(q, "prefill_tps"), 3), number(get(q, "decode_tps"), 3), number(get(q, "ttft_ms"), 3)});
    }
  }
  h += "</table>\n<p>Aggregates are ratios of sums over successful requests; ratios are MoePack / that baseline "
       "(TTFT: lower is better).</p></section>\n";

  // Published figures beside ours.
  h += "<section id=\"published\"><h2>Published figures beside ours</h2>\n<table>\n";
  h += th({"group", "source", "prefill tok/s", "decode tok/s", "hit rate", "SSD GB/token", "other"});
  for (const json& a : report["aggregates"]) {
    const json ours = get(a["results"], kOursId);
    h += td({html_escape(str(a["group"])), "MoePack (this run)", number(get(ours, "prefill_tps"), 3),
             number(get(ours, "decode_tps"), 3), number(get(ours, "hit_rate"), 3), number(get(ours, "ssd_gb_per_token"), 4),
             ""});
    for (const auto& [config, p] : a["published"].items()) {
      std::string other;
      for (const auto& [k, v] : p.items()) {
        if (k != "prefill_tok_s" && k != "decode_tok_s" && k != "hit_rate" && k != "ssd_gb_per_token") {
          other += (other.empty() ? "" : ", ") + html_escape(k) + " " + number(v, 3);
        }
      }
      h += td({html_escape(str(a["group"])), "published: " + html_escape(config), number(get(p, "prefill_tok_s"), 3),
               number(get(p, "decode_tok_s"), 3), number(get(p, "hit_rate"), 3), number(get(p, "ssd_gb_per_token"), 2),
               other});
    }
  }
  h += "</table>\n<p>Published figures come from the prompt set file (other models and machines: they are context, "
       "not a like-for-like comparison unless the same model and machine were used).</p></section>\n";

  // Per request.
  h += "<section id=\"requests\"><h2>Requests</h2>\n<table>\n";
  h += th({"request", "data set", "system", "prompt tok", "completion tok", "TTFT ms", "prefill tok/s", "decode tok/s",
           "hit rate", "SSD bytes/token", "evictions", "H2D", "I/O wait ms", "compute ms", "decode ratio"});
  for (const json& r : report["requests"]) {
    for (const std::string& id : systems) {
      const json x = get(r["results"], id);
      if (x.is_null()) continue;
      if (!x.value("ok", false)) {
        h += "<tr><td>" + html_escape(str(r["id"])) + "</td><td>" + html_escape(str(r["dataset"])) + "</td><td>" +
             html_escape(system_label(report, id)) + "</td><td class=\"err\" colspan=\"12\">error: " +
             html_escape(str(get(x, "error"))) + "</td></tr>\n";
        continue;
      }
      h += td({html_escape(str(r["id"])), html_escape(str(r["dataset"])), html_escape(system_label(report, id)),
               number(get(x, "prompt_tokens")), number(get(x, "completion_tokens")), number(get(x, "ttft_ms"), 1),
               number(get(x, "prefill_tps")), number(get(x, "decode_tps")), number(get(x, "hit_rate"), 3),
               bytes(get(x, "read_bytes_per_token")), number(get(x, "cache_evictions")), bytes(get(x, "h2d_bytes")),
               number(get(x, "io_wait_ms"), 1), number(get(x, "compute_ms"), 1),
               number(get(get(r["ratios"], id), "decode_tps"), 3)});
    }
  }
  h += "</table></section>\n";

  // Charts.
  std::vector<std::string> cats;
  for (const json& r : report["requests"]) cats.push_back(str(r["id"]));
  auto per_request = [&](const std::string& id, const char* key) {
    Series s{system_label(report, id), {}};
    for (const json& r : report["requests"]) {
      const json v = get(get(r["results"], id), key);
      s.values.push_back(v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt);
    }
    return s;
  };
  // Published per-dataset figures drawn at every request of that dataset.
  auto published = [&](const char* key) {
    std::vector<Series> out;
    std::vector<std::string> configs;
    for (const json& a : report["aggregates"]) {
      for (const auto& [config, p] : a["published"].items()) {
        if (get(p, key).is_number() && std::find(configs.begin(), configs.end(), config) == configs.end()) {
          configs.push_back(config);
        }
      }
    }
    for (const std::string& config : configs) {
      Series s{"published: " + config, {}};
      for (const json& r : report["requests"]) {
        std::optional<double> v;
        for (const json& a : report["aggregates"]) {
          if (a["group"] == r["dataset"]) {
            const json x = get(get(a["published"], config), key);
            if (x.is_number()) v = x.get<double>();
          }
        }
        s.values.push_back(v);
      }
      out.push_back(s);
    }
    return out;
  };
  std::vector<Series> decode;
  for (const std::string& id : systems) decode.push_back(per_request(id, "decode_tps"));
  for (Series& s : published("decode_tok_s")) decode.push_back(std::move(s));
  std::vector<Series> hit = {per_request(kOursId, "hit_rate")};
  for (Series& s : published("hit_rate")) hit.push_back(std::move(s));
  // SSD bytes per generated token, in MB (1e6 bytes; published figures are GB/token).
  std::vector<Series> ssd = {per_request(kOursId, "read_bytes_per_token")};
  for (auto& v : ssd[0].values) {
    if (v) *v /= 1e6;
  }
  for (Series& s : published("ssd_gb_per_token")) {
    for (auto& v : s.values) {
      if (v) *v *= 1e3;
    }
    ssd.push_back(std::move(s));
  }
  // Rates per data set: every system's aggregate, then the published figures of that data set.
  std::vector<std::string> groups;
  for (const json& a : report["aggregates"]) groups.push_back(str(a["group"]));
  auto per_group = [&](const char* ours_key, const char* published_key) {
    std::vector<Series> out;
    for (const std::string& id : systems) {
      Series s{system_label(report, id), {}};
      for (const json& a : report["aggregates"]) {
        const json v = get(get(a["results"], id), ours_key);
        s.values.push_back(v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt);
      }
      out.push_back(s);
    }
    std::vector<std::string> configs;
    for (const json& a : report["aggregates"]) {
      for (const auto& [config, p] : a["published"].items()) {
        if (get(p, published_key).is_number() && std::find(configs.begin(), configs.end(), config) == configs.end()) {
          configs.push_back(config);
        }
      }
    }
    for (const std::string& config : configs) {
      Series s{"published: " + config, {}};
      for (const json& a : report["aggregates"]) {
        const json v = get(get(a["published"], config), published_key);
        s.values.push_back(v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt);
      }
      out.push_back(s);
    }
    return out;
  };
  h += "<section id=\"charts\"><h2>Charts</h2>\n";
  h += bar_chart("chart-dataset-decode-tps", "Decode tokens/s per data set", "tokens/s", groups,
                 per_group("decode_tps", "decode_tok_s"));
  h += bar_chart("chart-dataset-prefill-tps", "Prefill tokens/s per data set", "tokens/s", groups,
                 per_group("prefill_tps", "prefill_tok_s"));
  h += bar_chart("chart-decode-tps", "Decode tokens/s per request", "tokens/s", cats, decode);
  h += bar_chart("chart-hit-rate", "Expert cache hit rate per request", "unique (layer, expert) keys per step", cats, hit);
  h += bar_chart("chart-ssd-bytes-per-token", "SSD bytes per generated token per request", "MB/token", cats, ssd);
  h += timeline_chart(report);
  h += "</section>\n";

  // Errors.
  h += "<section id=\"errors\"><h2>Errors</h2>\n<ul>\n";
  size_t errors = 0;
  for (const json& r : report["requests"]) {
    for (const std::string& id : systems) {
      const json x = get(r["results"], id);
      if (x.is_object() && !x.value("ok", true)) {
        ++errors;
        h += "<li class=\"err\">" + html_escape(str(r["id"])) + " / " + html_escape(id) + ": " +
             html_escape(str(get(x, "error"))) + "</li>\n";
      }
    }
  }
  if (errors == 0) h += "<li>none</li>\n";
  h += "</ul></section>\n";

  h += "<section id=\"settings\"><h2>Engine settings</h2>\n<pre>" +
       html_escape(report["engine"].dump(2, ' ', false, json::error_handler_t::replace)) + "</pre></section>\n";
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace moepack::bench
