// Picks and creates a backend for an opened model: settings.backend = cpu | cuda | auto.
// `auto` takes CUDA when the build has it and a usable device is present, else the CPU.
//
// Other backends plug in through register_backend(): core never depends on gpu/. The CUDA
// backend provides moepack::gpu::register_cuda_backend() (gpu/cuda_backend.h); every executable
// built with CUDA calls it once at startup, before the first make_backend(). Explicit, no
// static-initialisation tricks.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/engine_settings.h"

namespace moepack {

class ModelSource;

using BackendMaker =
    std::function<std::unique_ptr<Backend>(std::shared_ptr<const ModelSource>, const EngineSettings&)>;

// Whether a backend can run `model` on this machine (a device is present, the architecture is
// one it implements). May throw Error saying why not (a device it cannot run on): an explicit request
// for the backend then fails with that message, `auto` notes it on stderr and takes the next backend.
using BackendUsable = std::function<bool(const ModelSource& model)>;

// Registers (or replaces) the backend `name` ("cuda"). `auto` picks the first registered
// backend usable for the model, else the CPU. Not thread-safe: call at startup.
void register_backend(std::string name, BackendMaker make, BackendUsable usable);

// True when a backend of this name was registered (the CPU backend always exists).
bool backend_registered(const std::string& name);

// Throws Error when `cuda` is asked for and not available (saying why). Where `auto` passed over a backend
// that said why it cannot run here (BackendUsable threw), the reasons ("; " between them) are noted on stderr
// and, if `passed_over` is given, stored there (else it is cleared): the studio shows why the CPU runs.
// (Two overloads, not a default argument: tests pass make_backend where a two-argument factory is expected.)
std::unique_ptr<Backend> make_backend(std::shared_ptr<const ModelSource> model,
                                      const EngineSettings& settings, std::string* passed_over);
std::unique_ptr<Backend> make_backend(std::shared_ptr<const ModelSource> model,
                                      const EngineSettings& settings);

// The CPU reference backend (core/cpu_backend.cpp).
std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const ModelSource> model, const EngineSettings& settings);

}  // namespace moepack
