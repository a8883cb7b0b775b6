#include "ui/sampling_json.h"

#include <algorithm>
#include <cmath>

namespace moepack::ui {
namespace {
constexpr uint64_t kRandomSeed = 0xFFFFFFFFull;  // LLAMA_DEFAULT_SEED

float clampf(double v, double lo, double hi) { return static_cast<float>(std::clamp(v, lo, hi)); }
// float -> double for display and JSON: 0.95f is 0.949999988..., show it as 0.95.
double dec(float v) { return std::round(static_cast<double>(v) * 1e6) / 1e6; }
}  // namespace

GenerationSettings generation_from_json(const QJsonObject& o, const GenerationSettings& d) {
  GenerationSettings g = d;
  // A missing, non-numeric or non-finite value keeps the default (NaN would pass std::clamp).
  auto num = [&](const char* key, double def) {
    const double v = o.value(QLatin1String(key)).toDouble(def);
    return std::isfinite(v) ? v : def;
  };
  g.sampling.temperature = clampf(num("temperature", d.sampling.temperature), 0.0, 5.0);
  g.sampling.top_k = static_cast<int32_t>(std::clamp(num("top_k", d.sampling.top_k), 0.0, 1000.0));
  g.sampling.top_p = clampf(num("top_p", d.sampling.top_p), 0.01, 1.0);
  g.sampling.min_p = clampf(num("min_p", d.sampling.min_p), 0.0, 1.0);
  g.sampling.repeat_penalty = clampf(num("repeat_penalty", d.sampling.repeat_penalty), 0.5, 3.0);
  g.max_tokens = static_cast<int32_t>(std::clamp(num("max_tokens", d.max_tokens), 1.0, 32768.0));
  const double defSeed = d.sampling.seed == kRandomSeed ? -1.0 : static_cast<double>(d.sampling.seed);
  const double seed = num("seed", defSeed);
  g.sampling.seed = seed < 0 ? kRandomSeed : static_cast<uint64_t>(std::min(seed, 4294967294.0));
  return g;
}

QJsonObject generation_to_json(const GenerationSettings& g) {
  return QJsonObject{
      {"temperature", dec(g.sampling.temperature)},
      {"top_k", g.sampling.top_k},
      {"top_p", dec(g.sampling.top_p)},
      {"min_p", dec(g.sampling.min_p)},
      {"repeat_penalty", dec(g.sampling.repeat_penalty)},
      {"max_tokens", g.max_tokens},
      {"seed", g.sampling.seed == kRandomSeed ? -1.0 : static_cast<double>(g.sampling.seed)},
  };
}

}  // namespace moepack::ui
