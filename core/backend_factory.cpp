// make_backend: the one place that maps settings.backend (cpu | cuda | auto) to a backend.
// The CUDA backend (gpu/, MOEPACK_CUDA=ON) registers itself here when it lands: see the
// marked lines below; nothing else in the engine knows which backends exist.
#include "core/backend_factory.h"

#include "core/error.h"

namespace moepack {

std::unique_ptr<Backend> make_backend(std::shared_ptr<const ModelSource> model, const EngineSettings& settings) {
  const std::string& which = settings.backend;
  if (which == "cpu") return make_cpu_backend(std::move(model), settings);
  if (which == "cuda") {
    // CUDA backend: not yet part of the engine. When gpu/ provides it, create it here (and
    // in `auto` below when a usable device is present).
    throw Error("backend \"cuda\": this build has no CUDA backend yet (use --backend cpu or auto)");
  }
  if (which == "auto") {
    // CUDA backend: pick it here first when built and a device is usable; today: the CPU.
    return make_cpu_backend(std::move(model), settings);
  }
  throw Error("unknown backend \"" + which + "\" (expected cpu, cuda or auto)");
}

}  // namespace moepack
