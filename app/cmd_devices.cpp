// `moepack devices [--self-test] [--json]`: the CUDA devices MoePack can use and their free VRAM.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#ifdef MOEPACK_HAVE_CUDA
#include "gpu/device_info.h"
#endif

namespace moepack::cli {

std::function<int()> add_devices(CLI::App& app) {
  struct Options {
    bool json = false;
    bool self_test = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("devices", "List CUDA devices with their memory (VRAM for the expert cache)");
  sub->add_flag("--json", opt->json, "Print one JSON object on stdout");
  sub->add_flag("--self-test", opt->self_test, "Run a small kernel on each device and check its result");
  return [opt]() {
    nlohmann::json j;
#ifdef MOEPACK_HAVE_CUDA
    const gpu::DeviceQuery q = gpu::query_devices();
    j["cuda_built"] = true;
    j["runtime_version"] = q.runtime_version;
    j["driver_version"] = q.driver_version;
    j["error"] = q.error;
    j["cuda_architectures"] = gpu::built_cuda_architectures();
    j["devices"] = nlohmann::json::array();
    bool ok = true;
    for (const gpu::DeviceInfo& d : q.devices) {
      nlohmann::json dj{
          {"index", d.index},
          {"name", d.name},
          {"compute_capability", std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor)},
          {"total_bytes", d.total_bytes},
          {"free_bytes", d.free_bytes},
          {"multiprocessors", d.multiprocessors},
          {"uuid", d.uuid}};
      // Whether the CUDA backend runs there with this build ("" where it does; gpu/cuda_arch.h).
      const std::string unsupported = gpu::device_unsupported(d);
      dj["supported"] = unsupported.empty();
      if (!unsupported.empty()) {
        dj["unsupported"] = unsupported;
        std::fprintf(stderr, "%s\n", unsupported.c_str());
      }
      if (opt->self_test) {
        const bool pass = unsupported.empty() && gpu::self_test(d.index);
        dj["self_test"] = pass;
        ok = ok && pass;
      }
      j["devices"].push_back(dj);
      std::fprintf(stderr, "GPU %d: %s, sm_%d%d, %.1f GiB total, %.1f GiB free\n", d.index, d.name.c_str(),
                   d.compute_major, d.compute_minor, static_cast<double>(d.total_bytes) / (1ull << 30),
                   static_cast<double>(d.free_bytes) / (1ull << 30));
    }
    if (q.devices.empty()) std::fprintf(stderr, "no usable CUDA device: %s\n", q.error.c_str());
    // The CUDA backend opens the first device (gpu/device_info.h open_cuda_device): why it cannot, with the
    // later device it would run on.
    if (const std::string why = gpu::first_device_unsupported(q); !why.empty()) {
      j["backend_unsupported"] = why;
      std::fprintf(stderr, "the CUDA backend cannot run here: %s\n", why.c_str());
    }
    std::fprintf(stderr, "CUDA code built for: %s\n", j["cuda_architectures"].get<std::string>().c_str());
#else
    j["cuda_built"] = false;
    j["devices"] = nlohmann::json::array();
    j["error"] = "this moepack was built without CUDA (MOEPACK_CUDA=OFF)";
    std::fprintf(stderr, "this moepack was built without CUDA (MOEPACK_CUDA=OFF)\n");
    const bool ok = true;
#endif
    if (opt->json) std::printf("%s\n", j.dump(2).c_str());
    return ok ? 0 : 1;
  };
}

}  // namespace moepack::cli
