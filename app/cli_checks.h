// Readable numeric checks for CLI options. CLI11's PositiveNumber / NonNegativeNumber report
// "Value 0 not in range 0.000000 to 1797693134862315...", the largest double written out in
// full; these say what the option needs and what was given ("--batch-mib: must be greater
// than 0 (got 0)"). A value that is not a number, or is NaN or infinite, is refused by each.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <functional>
#include <string>

#include "core/error.h"

namespace moepack::cli {

// A bad argument found after parsing (a --set key or value, a --config file's settings, a missing
// choice between two options, an unknown name in a list): main() prints it and exits 2, as it
// does for CLI11's parse errors (docs/cli.md), before any model is opened.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

// A check that `ok(value)` holds for the option's value parsed as a double; otherwise the
// message "<need> (got <text>)".
inline CLI::Validator number_check(const std::string& desc, std::function<bool(double)> ok,
                                   const std::string& need) {
  return CLI::Validator(
      [ok = std::move(ok), need](std::string& text) -> std::string {
        double v = 0.0;
        if (!CLI::detail::lexical_cast(text, v)) return "expected a number (got '" + text + "')";
        if (!std::isfinite(v)) return "must be a finite number (got " + text + ")";
        if (!ok(v)) return need + " (got " + text + ")";
        return {};
      },
      desc);
}

inline CLI::Validator finite_number() {
  return number_check(
      "NUMBER", [](double) { return true; }, "");
}
inline CLI::Validator positive_number() {
  return number_check(
      "POSITIVE", [](double v) { return v > 0.0; }, "must be greater than 0");
}
inline CLI::Validator non_negative_number() {
  return number_check(
      "NONNEGATIVE", [](double v) { return v >= 0.0; }, "must be 0 or more");
}
inline CLI::Validator unit_interval() {
  return number_check(
      "0..1", [](double v) { return v >= 0.0 && v <= 1.0; }, "must be between 0 and 1");
}

}  // namespace moepack::cli
