// The benchmark report as one self-contained HTML page: no scripts, fonts, images or style
// sheets from anywhere else (inline CSS and inline SVG only), so it can be mailed or attached.
// Sections (ids usable by tests and links): #summary (model, machine, build, run),
// #aggregates (per dataset and overall, every system, ratios ours/baseline), #published (the
// prompt set's published figures beside ours), #requests (every request and system),
// #charts (SVG bar charts: #chart-dataset-decode-tps and #chart-dataset-prefill-tps per data
// set; #chart-decode-tps, #chart-hit-rate and #chart-ssd-bytes-per-token per request; ours,
// baselines, and the published figures of each request's data set; #chart-token-timeline: MoePack's
// per-token forward ms and SSD KB across the run), #errors, #settings (engine settings).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace moepack::bench {

std::string report_html(const nlohmann::json& report);

// Text with & < > " ' escaped for HTML text and attribute values.
std::string html_escape(const std::string& s);

}  // namespace moepack::bench
