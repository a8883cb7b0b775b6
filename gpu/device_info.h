// CUDA device discovery for MoePack: which GPUs are present and how much VRAM is free.
// The expert cache is sized from these numbers (ARCHITECTURE.md, "Cache sizing":
// usable = min(cache_vram_mib, free_vram - cache_vram_reserve_mib)).
// This header is plain C++ so the CLI can include it without nvcc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moepack::gpu {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int compute_major = 0;   // compute capability, e.g. 9.0 for H200, 12.0 for RTX 50xx
  int compute_minor = 0;
  uint64_t total_bytes = 0;  // device memory, bytes
  uint64_t free_bytes = 0;   // free device memory at query time, bytes (cudaMemGetInfo)
  int multiprocessors = 0;
  std::string
      uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (cudaDeviceProp::uuid as nvidia-smi -L prints it)
};

struct DeviceQuery {
  int runtime_version = 0;   // cudaRuntimeGetVersion, e.g. 13000
  int driver_version = 0;    // cudaDriverGetVersion; 0 when no driver is installed
  std::vector<DeviceInfo> devices;
  std::string error;         // why no device is usable ("" when devices is non-empty)
};

// Never throws: a machine without a GPU or driver yields no devices and a reason in `error`.
DeviceQuery query_devices();

// The CUDA architectures this build was compiled for: CMAKE_CUDA_ARCHITECTURES as configured, entries
// separated by ';' (e.g. "90;120"; gpu/cuda_arch.h reads it).
std::string built_cuda_architectures();

// Why the CUDA backend cannot run on `d` with this build (gpu/cuda_arch.h cuda_device_unsupported: compute
// capability below 9.0, or no code of the build runs there), or "" where it can.
std::string device_unsupported(const DeviceInfo& d);

// Why the CUDA backend cannot run on the device it opens (the first of q.devices) with this build
// (gpu/cuda_arch.h cuda_first_device_unsupported: device_unsupported's message, and which later device it
// would run on), or "" where it can or there is no device.
std::string first_device_unsupported(const DeviceQuery& q);

// Makes device 0 current for a CUDA backend. Throws Error (prefixed 'backend "cuda": ') where there is no
// device or the build cannot run on it (first_device_unsupported's message). Where only PTX of the build runs
// there (gpu/cuda_arch.h CudaCodeFit::kPtx), notes once on stderr that the driver compiles it at first use.
void open_cuda_device();

// Runs a small kernel on `device` (fills a buffer with a * i + b and copies it back) and
// returns true if every value is right: proof that the toolkit, driver and device work.
// Throws moepack::Error with file and line on any CUDA error.
bool self_test(int device);

}  // namespace moepack::gpu
