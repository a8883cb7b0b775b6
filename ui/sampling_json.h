// Per-conversation generation settings as a JSON object (stored in conversations.sampling_json
// and in QSettings as defaults). Keys follow llama.cpp's CLI names:
//   temperature, top_k, top_p, min_p, repeat_penalty, max_tokens, seed (-1: random).
// Missing keys take `defaults`; values are clamped to the ranges below.
#pragma once

#include <QJsonObject>
#include <cstdint>

#include "core/sampler.h"

namespace moepack::ui {

struct GenerationSettings {
  SamplingParams sampling;  // temperature [0, 5], top_k [0, 1000], top_p (0, 1], min_p [0, 1],
                            // repeat_penalty [0.5, 3]
  int32_t max_tokens = 256;  // [1, 32768]
};

GenerationSettings generation_from_json(const QJsonObject& o, const GenerationSettings& defaults = {});
QJsonObject generation_to_json(const GenerationSettings& g);

}  // namespace moepack::ui
