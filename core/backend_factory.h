// Picks and creates a backend for an opened model: settings.backend = cpu | cuda | auto.
// `auto` takes CUDA when the build has it and a usable device is present, else the CPU.
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/engine_settings.h"

namespace moepack {

class ModelSource;

// Throws Error when `cuda` is asked for and not available (saying why).
std::unique_ptr<Backend> make_backend(std::shared_ptr<const ModelSource> model, const EngineSettings& settings);

// The CPU reference backend (core/cpu_backend.cpp).
std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const ModelSource> model, const EngineSettings& settings);

}  // namespace moepack
