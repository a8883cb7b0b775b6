#include "gpu/cuda_arch.h"

#include <charconv>

#include "core/error.h"

namespace moepack::gpu {

std::vector<CudaArchEntry> parse_cuda_architectures(std::string_view list) {
  std::vector<CudaArchEntry> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t end = std::min(list.find_first_of(";,", pos), list.size());
    const std::string_view item = list.substr(pos, end - pos);
    const auto bad = [&](const std::string& why) {
      return Error("CUDA architectures \"" + std::string(list) + "\": entry \"" + std::string(item) +
                   "\" at character " + std::to_string(pos) + ": " + why);
    };
    CudaArchEntry e;
    const char* first = item.data();
    const char* last = item.data() + item.size();
    const auto [p, ec] = std::from_chars(first, last, e.arch);
    if (ec != std::errc() || p == first || e.arch <= 0)
      throw bad("not an architecture number such as 90 or 120");
    const std::string_view suffix(p, static_cast<size_t>(last - p));
    if (suffix == "-real") {
      e.ptx = false;
    } else if (suffix == "-virtual") {
      e.real = false;
    } else if (!suffix.empty()) {
      throw bad("\"" + std::string(suffix) + "\" after the number: only -real or -virtual");
    }
    out.push_back(e);
    pos = end + 1;
  }
  return out;
}

bool cuda_architectures_resolved(std::string_view built) {
  return built != "all" && built != "all-major" && built != "native";
}

CudaCodeFit cuda_code_fit(int cc, const std::vector<CudaArchEntry>& built) {
  CudaCodeFit fit = CudaCodeFit::kNone;
  for (const CudaArchEntry& e : built) {
    if (e.real && e.arch / 10 == cc / 10 && e.arch <= cc) return CudaCodeFit::kReal;
    if (e.ptx && e.arch <= cc) fit = CudaCodeFit::kPtx;
  }
  return fit;
}

std::string cuda_device_unsupported(int index, std::string_view name, int cc, std::string_view built) {
  const std::string device = "GPU " + std::to_string(index) + " (" + std::string(name) +
                             ", compute capability " + std::to_string(cc / 10) + "." +
                             std::to_string(cc % 10) + ")";
  if (cc < kMinComputeCapability) {
    return device + ": MoePack's CUDA backend needs compute capability " +
           std::to_string(kMinComputeCapability / 10) + "." + std::to_string(kMinComputeCapability % 10) +
           " or later (H100, H200, RTX 50xx); use the CPU backend (--backend cpu)";
  }
  if (!cuda_architectures_resolved(built)) return "";  // ("all", "all-major", "native": CMake chose)
  if (cuda_code_fit(cc, parse_cuda_architectures(built)) == CudaCodeFit::kNone) {
    return device + ": this build holds CUDA code for \"" + std::string(built) +
           "\" only, none of which runs there; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" +
           std::to_string(cc) + " (or leave it unset: packaging/setup.sh builds for this machine's GPUs)";
  }
  return "";
}

}  // namespace moepack::gpu
