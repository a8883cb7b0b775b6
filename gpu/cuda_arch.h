// Which GPUs a build of the CUDA backend can run on: the architectures it was compiled for
// (CMAKE_CUDA_ARCHITECTURES, e.g. "90;120"; cmake/MoepackCudaArchitectures.cmake chooses them from the
// building machine's GPUs) against a device's compute capability. Plain C++, host arithmetic only (CPU
// tests: tests/gpu/cuda_arch_test.cpp).
//
// Compatibility (CUDA C++ Programming Guide, "Binary Compatibility" and "PTX Compatibility"): real code
// for sm_XY runs on devices of compute capability X.Z with Z >= Y (same major version); PTX for compute_XY
// is compiled by the driver for any device of compute capability X.Y or later, at the first use of each
// kernel (then kept in the driver's cache). CMake's entry "90" is both (sm_90 and compute_90), "90-real"
// real code only, "90-virtual" PTX only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace moepack::gpu {

// The CUDA backend's kernels need compute capability 9.0 or later (major * 10 + minor), as
// cmake/MoepackCudaArchitectures.cmake builds them: sm_90 (H100, H200) and sm_120 (RTX 50xx) are compiled
// and run; their tensor-core mma, cp.async rings and programmatic dependent launches are sm_90's.
inline constexpr int kMinComputeCapability = 90;

struct CudaArchEntry {
  int arch = 0;      // e.g. 120
  bool real = true;  // sm_<arch> real code
  bool ptx = true;   // compute_<arch> PTX
  // 'a' ("90a"): architecture-specific code, runs on compute capability `arch` alone (real and PTX); 'f'
  // ("100f"): family code, runs within `arch`'s major version at an equal or higher minor (real and PTX);
  // '\0': the plain rules above.
  char variant = '\0';
};

// The entries of `list` ("90;120", "90-real,120-virtual", "90a", "100f-real": ';' or ',' between entries,
// empty entries skipped as CMake's lists allow). Throws Error naming the entry and its position for
// anything else (no entry at all, "sm_90", "90x").
std::vector<CudaArchEntry> parse_cuda_architectures(std::string_view list);

// False for CMake's keywords "all", "all-major" and "native" (resolved by gpu/CMakeLists.txt where it can)
// and for CMake's false values ("OFF": nvcc's own default architecture): the build is taken to run on the
// device; true for anything else.
bool cuda_architectures_resolved(std::string_view built);

enum class CudaCodeFit {
  kReal,  // real code for the device's architecture (or a lower minor of its major version)
  kPtx,   // only PTX of a lower architecture: the driver compiles it at first use (slow first start)
  kNone,  // nothing that runs there
};

// How a build of `built` (parse_cuda_architectures) runs on a device of compute capability `cc`
// (major * 10 + minor, e.g. 120).
CudaCodeFit cuda_code_fit(int cc, const std::vector<CudaArchEntry>& built);

// cuda_code_fit of the list `built` (CMAKE_CUDA_ARCHITECTURES' text), where it can be checked; kReal (taken
// to run) for CMake's keywords (cuda_architectures_resolved) and for a list that does not parse (CMake built
// something from it). Never throws.
CudaCodeFit cuda_build_fit(int cc, std::string_view built);

// Why the CUDA backend cannot run on device `index` (`name`, compute capability `cc`) with a build of
// `built` (CMAKE_CUDA_ARCHITECTURES' text), or "" where it can: below kMinComputeCapability, or no code of
// the build runs there (CudaCodeFit::kNone; not checked for CMake's keywords, cuda_architectures_resolved,
// nor for a list that does not parse: CMake built something from it). The message names the device, both
// numbers and, for a build without code for it, the rebuild. Never throws.
std::string cuda_device_unsupported(int index, std::string_view name, int cc, std::string_view built);

// A GPU's UUID (cudaDeviceProp::uuid, 16 bytes) as nvidia-smi -L prints it and CUDA_VISIBLE_DEVICES takes it:
// "GPU-" and the bytes in lower-case hex, grouped 8-4-4-4-12.
// (For a MIG instance the runtime's bytes are the instance's, which nvidia-smi -L prints as "MIG-…": not
// told apart here; MoePack's product cards have no MIG.)
std::string format_gpu_uuid(const unsigned char (&bytes)[16]);

// A CUDA device as the runtime lists it (CUDA's order; CUDA_VISIBLE_DEVICES selects and orders them).
struct CudaDeviceSeen {
  int index = 0;
  std::string name;
  int cc = 0;        // compute capability, major * 10 + minor
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (as nvidia-smi -L prints it), or ""
};

// Why the CUDA backend cannot run on the device it opens, the first of `devices` (the engine's CUDA calls
// run on the current device of several threads, all CUDA's default device 0), with a build of `built`:
// cuda_device_unsupported of the first, followed, where a later device is one the build runs on, by how to
// run there ("CUDA_VISIBLE_DEVICES=<uuid>", the index where the uuid is unknown). "" where the first device
// is supported or there is none. Never throws.
std::string cuda_first_device_unsupported(const std::vector<CudaDeviceSeen>& devices, std::string_view built);

}  // namespace moepack::gpu
