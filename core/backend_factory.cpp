// make_backend: the one place that maps settings.backend (cpu | cuda | auto) to a backend.
// Backends other than the CPU reference are registered at startup (register_backend); nothing
// else in the engine knows which backends exist.
#include "core/backend_factory.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/model_source.h"

namespace moepack {

namespace {

struct Registered {
  std::string name;
  BackendMaker make;
  BackendUsable usable;
};

std::vector<Registered>& registry() {
  static std::vector<Registered> r;  // filled explicitly by register_backend()
  return r;
}

const Registered* find(const std::string& name) {
  for (const Registered& r : registry()) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

void register_backend(std::string name, BackendMaker make, BackendUsable usable) {
  if (name == "cpu" || name == "auto") throw Error("register_backend: \"" + name + "\" is reserved");
  for (Registered& r : registry()) {
    if (r.name == name) {
      r.make = std::move(make);
      r.usable = std::move(usable);
      return;
    }
  }
  registry().push_back({std::move(name), std::move(make), std::move(usable)});
}

bool backend_registered(const std::string& name) { return name == "cpu" || find(name) != nullptr; }

std::unique_ptr<Backend> make_backend(std::shared_ptr<const ModelSource> model,
                                      const EngineSettings& settings) {
  return make_backend(std::move(model), settings, nullptr);
}

std::unique_ptr<Backend> make_backend(std::shared_ptr<const ModelSource> model,
                                      const EngineSettings& settings, std::string* passed_over_out) {
  if (passed_over_out) passed_over_out->clear();
  const std::string& which = settings.backend;
  if (which == "cpu") return make_cpu_backend(std::move(model), settings);
  if (which == "auto") {
    std::string passed_over;  // why backends that said so cannot run here
    for (const Registered& r : registry()) {
      if (!model || !r.usable) continue;
      bool usable = false;
      try {
        usable = r.usable(*model);
      } catch (const Error& e) {  // (the backend says why it cannot run here, naming itself)
        passed_over += std::string(passed_over.empty() ? "" : "; ") + e.what();
      }
      if (usable) return r.make(std::move(model), settings);
    }
    if (!passed_over.empty()) {
      std::fprintf(stderr, "moepack: --backend auto runs on the CPU: %s\n", passed_over.c_str());
    }
    if (passed_over_out) *passed_over_out = passed_over;
    return make_cpu_backend(std::move(model), settings);
  }
  if (const Registered* r = find(which)) {
    bool usable = true;
    if (model && r->usable) {
      try {
        usable = r->usable(*model);
      } catch (const Error& e) {
        throw Error(std::string(e.what()) + "; use --backend cpu or auto");
      }
    }
    if (!usable) {
      const std::string device = which == "cuda" ? "CUDA GPU" : which + " device";
      throw Error("backend \"" + which + "\" cannot run " + model->path() + " here: no usable " + device +
                  " was found, or the backend does not implement architecture " + model->config().arch +
                  "; use --backend cpu or auto");
    }
    return r->make(std::move(model), settings);
  }
  if (which == "cuda") {
    throw Error("backend \"cuda\": this build has no CUDA backend (use --backend cpu or auto)");
  }
  throw Error("unknown backend \"" + which + "\" (expected cpu, cuda or auto)");
}

}  // namespace moepack
