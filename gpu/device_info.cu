#include <atomic>
#include <cstdio>
#include <vector>

#include "core/error.h"
#include "gpu/cuda_arch.h"
#include "gpu/cuda_check.h"
#include "gpu/device_info.h"

namespace moepack::gpu {
namespace {

__global__ void affine_fill(float* out, int n, float a, float b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * static_cast<float>(i) + b;
}

}  // namespace

DeviceQuery query_devices() {
  DeviceQuery q;
  cudaRuntimeGetVersion(&q.runtime_version);
  cudaDriverGetVersion(&q.driver_version);
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    q.error = cudaGetErrorString(err);
    cudaGetLastError();  // clear the non-sticky error
    return q;
  }
  // cudaMemGetInfo reports on the current device, so each device is made current in turn; the
  // caller's current device is restored afterwards (on a multi-GPU host the last one would
  // otherwise stay current for every later allocation and launch of this thread).
  int current = 0;
  const bool had_current = cudaGetDevice(&current) == cudaSuccess;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    DeviceInfo info;
    info.index = d;
    info.name = p.name;
    info.compute_major = p.major;
    info.compute_minor = p.minor;
    info.total_bytes = p.totalGlobalMem;
    info.multiprocessors = p.multiProcessorCount;
    unsigned char uuid[16];
    for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>(p.uuid.bytes[i]);
    info.uuid = format_gpu_uuid(uuid);
    size_t free_b = 0;
    size_t total_b = 0;
    if (cudaSetDevice(d) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
      info.free_bytes = free_b;
    }
    q.devices.push_back(info);
  }
  if (had_current && count > 0) cudaSetDevice(current);
  cudaGetLastError();  // leave no non-sticky error of the queries behind
  if (q.devices.empty()) q.error = "no CUDA device found";
  return q;
}

std::string device_unsupported(const DeviceInfo& d) {
  return cuda_device_unsupported(d.index, d.name, d.compute_major * 10 + d.compute_minor,
                                 built_cuda_architectures());
}

std::string first_device_unsupported(const DeviceQuery& q) {
  std::vector<CudaDeviceSeen> seen;
  for (const DeviceInfo& d : q.devices) {
    seen.push_back({d.index, d.name, d.compute_major * 10 + d.compute_minor, d.uuid});
  }
  return cuda_first_device_unsupported(seen, built_cuda_architectures());
}

void open_cuda_device() {
  const DeviceQuery q = query_devices();
  if (q.devices.empty()) throw Error("backend \"cuda\": no usable CUDA device (" + q.error + ")");
  if (const std::string why = first_device_unsupported(q); !why.empty())
    throw Error("backend \"cuda\": " + why);
  const DeviceInfo& d = q.devices.front();
  const std::string built = built_cuda_architectures();
  if (cuda_build_fit(d.compute_major * 10 + d.compute_minor, built) == CudaCodeFit::kPtx) {
    static std::atomic<bool> noted{false};
    if (!noted.exchange(true)) {
      std::fprintf(
          stderr,
          "moepack: GPU %d (%s, compute capability %d.%d) runs this build's PTX (built for %s), which "
          "the driver compiles at first use: the first start takes minutes; a build configured on this "
          "machine without CMAKE_CUDA_ARCHITECTURES (packaging/setup.sh) has real code where MoePack "
          "builds any for this GPU (sm_90, sm_120)\n",
          d.index, d.name.c_str(), d.compute_major, d.compute_minor, built.c_str());
    }
  }
  MOEPACK_CUDA_CHECK(cudaSetDevice(d.index));
}

bool self_test(int device) {
  constexpr int n = 1 << 16;
  MOEPACK_CUDA_CHECK(cudaSetDevice(device));
  float* d_out = nullptr;
  MOEPACK_CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  affine_fill<<<(n + 255) / 256, 256>>>(d_out, n, 0.5f, 3.0f);
  const cudaError_t launch = cudaGetLastError();
  std::vector<float> host(n);
  const cudaError_t copy = cudaMemcpy(host.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(d_out);
  MOEPACK_CUDA_CHECK(launch);
  MOEPACK_CUDA_CHECK(copy);
  for (int i = 0; i < n; ++i) {
    if (host[i] != 0.5f * static_cast<float>(i) + 3.0f) return false;
  }
  return true;
}

}  // namespace moepack::gpu
