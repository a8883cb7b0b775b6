#include "gpu/cuda_arch.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

#include "core/error.h"

namespace moepack::gpu {

std::vector<CudaArchEntry> parse_cuda_architectures(std::string_view list) {
  std::vector<CudaArchEntry> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t end = std::min(list.find_first_of(";,", pos), list.size());
    const std::string_view item = list.substr(pos, end - pos);
    const size_t at = pos;
    pos = end + 1;
    if (item.empty()) continue;
    const auto bad = [&](const std::string& why) {
      return Error("CUDA architectures \"" + std::string(list) + "\": entry \"" + std::string(item) +
                   "\" at character " + std::to_string(at) + ": " + why);
    };
    CudaArchEntry e;
    const char* first = item.data();
    const char* last = item.data() + item.size();
    const auto [p, ec] = std::from_chars(first, last, e.arch);
    if (ec != std::errc() || p == first || e.arch <= 0)
      throw bad("not an architecture number such as 90 or 120");
    std::string_view suffix(p, static_cast<size_t>(last - p));
    if (!suffix.empty() && (suffix.front() == 'a' || suffix.front() == 'f')) {
      e.variant = suffix.front();
      suffix.remove_prefix(1);
    }
    if (suffix == "-real") {
      e.ptx = false;
    } else if (suffix == "-virtual") {
      e.real = false;
    } else if (!suffix.empty()) {
      throw bad("\"" + std::string(suffix) + "\" after the number: only a or f, then -real or -virtual");
    }
    out.push_back(e);
  }
  if (out.empty()) throw Error("CUDA architectures \"" + std::string(list) + "\": no entry");
  return out;
}

bool cuda_architectures_resolved(std::string_view built) {
  std::string b(built);
  std::transform(b.begin(), b.end(), b.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const char* word :
       {"ALL", "ALL-MAJOR", "NATIVE", "OFF", "FALSE", "NO", "N", "0", "IGNORE", "NOTFOUND"}) {
    if (b == word) return false;
  }
  return !(b.size() >= 9 && b.compare(b.size() - 9, 9, "-NOTFOUND") == 0);
}

CudaCodeFit cuda_code_fit(int cc, const std::vector<CudaArchEntry>& built) {
  CudaCodeFit fit = CudaCodeFit::kNone;
  for (const CudaArchEntry& e : built) {
    const bool same_major = e.arch / 10 == cc / 10;
    bool real_runs = false, ptx_runs = false;
    if (e.variant == 'a') {
      real_runs = ptx_runs = e.arch == cc;
    } else if (e.variant == 'f') {
      real_runs = ptx_runs = same_major && e.arch <= cc;
    } else {
      real_runs = same_major && e.arch <= cc;
      ptx_runs = e.arch <= cc;
    }
    if (e.real && real_runs) return CudaCodeFit::kReal;
    if (e.ptx && ptx_runs) fit = CudaCodeFit::kPtx;
  }
  return fit;
}

CudaCodeFit cuda_build_fit(int cc, std::string_view built) {
  if (!cuda_architectures_resolved(built)) return CudaCodeFit::kReal;
  try {
    return cuda_code_fit(cc, parse_cuda_architectures(built));
  } catch (const Error&) {
    return CudaCodeFit::kReal;  // (CMake accepted it and built something: not checked)
  }
}

std::string cuda_device_unsupported(int index, std::string_view name, int cc, std::string_view built) {
  const std::string device = "GPU " + std::to_string(index) + " (" + std::string(name) +
                             ", compute capability " + std::to_string(cc / 10) + "." +
                             std::to_string(cc % 10) + ")";
  if (cc < kMinComputeCapability) {
    return device + ": MoePack's CUDA backend needs compute capability " +
           std::to_string(kMinComputeCapability / 10) + "." + std::to_string(kMinComputeCapability % 10) +
           " or later (H100, H200, RTX 50xx)";
  }
  if (cuda_build_fit(cc, built) == CudaCodeFit::kNone) {
    return device + ": this build holds CUDA code for \"" + std::string(built) +
           "\" only, none of which runs there; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" +
           std::to_string(cc) +
           " (or in a new build directory without it, or after cmake -U "
           "CMAKE_CUDA_ARCHITECTURES: the build then takes this machine's GPUs)";
  }
  return "";
}

std::string format_gpu_uuid(const unsigned char (&bytes)[16]) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

std::string cuda_first_device_unsupported(const std::vector<CudaDeviceSeen>& devices,
                                          std::string_view built) {
  if (devices.empty()) return "";
  const CudaDeviceSeen& first = devices.front();
  std::string why = cuda_device_unsupported(first.index, first.name, first.cc, built);
  if (why.empty()) return why;
  for (size_t i = 1; i < devices.size(); ++i) {
    const CudaDeviceSeen& d = devices[i];
    if (cuda_device_unsupported(d.index, d.name, d.cc, built).empty()) {
      why += "; GPU " + std::to_string(d.index) + " (" + d.name + ") is one it runs on: start MoePack with " +
             "CUDA_VISIBLE_DEVICES=" + (d.uuid.empty() ? std::to_string(d.index) : d.uuid) + " to use it";
      break;
    }
  }
  return why;
}

}  // namespace moepack::gpu
