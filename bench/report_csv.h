// The benchmark report as CSV (RFC 4180: comma separated, CRLF line ends, fields with a comma,
// quote or line break quoted, quotes doubled). One header row, then one row per (request,
// system) in request order, then one row per (aggregate group, system). Ratio columns hold
// ours / that baseline on baseline rows and are empty elsewhere; unknown values are empty.
// Columns: docs/benchmarks.md, "CSV".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace moepack::bench {

const std::vector<std::string>& csv_columns();
std::string report_csv(const nlohmann::json& report);

}  // namespace moepack::bench
