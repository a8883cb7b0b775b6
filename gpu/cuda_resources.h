// RAII owners of CUDA resources used by the backend: device memory, pinned host memory,
// streams and events. Every call is checked (cuda_check.h); destructors never throw (a failed
// free during unwinding is ignored: the context is being torn down anyway).
// Plain C++ (no kernels): usable from .cpp tests compiled by the host compiler.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "gpu/cuda_check.h"

namespace moepack::gpu {

// Device memory of `bytes` bytes. An allocation failure throws Error naming `what`, the bytes
// asked for and the device's free bytes at that moment.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, const std::string& what) { allocate(bytes, what); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void allocate(size_t bytes, const std::string& what) {
    reset();
    if (bytes == 0) return;
    const cudaError_t err = cudaMalloc(&ptr_, bytes);
    if (err != cudaSuccess) {
      ptr_ = nullptr;
      // A lost context reports its sticky error here too: that is not "out of VRAM".
      if (is_sticky_cuda_error(err)) throw_cuda_error(err, "cudaMalloc", __FILE__, __LINE__);
      cudaGetLastError();
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      throw Error("out of VRAM allocating " + what + ": needed " + std::to_string(bytes >> 20) + " MiB (" +
                  std::to_string(bytes) + " bytes), free " + std::to_string(free_b >> 20) + " MiB of " +
                  std::to_string(total_b >> 20) + " MiB (" + cudaGetErrorString(err) + ")");
    }
    bytes_ = bytes;
  }
  // Grows to at least `bytes` (the contents are lost when it grows). Returns true when it
  // allocated anew (the address changed).
  bool ensure(size_t bytes, const std::string& what) {
    if (bytes <= bytes_) return false;
    allocate(bytes, what);
    return true;
  }
  void reset() noexcept {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  uint8_t* bytes_ptr() const { return static_cast<uint8_t*>(ptr_); }
  size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory, 4096-aligned for O_DIRECT. cudaHostAlloc itself does not promise page
// alignment (on the H200 machine small allocations came back 512-aligned and O_DIRECT refused
// them), so 4096 extra bytes are allocated and the start is rounded up.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, const std::string& what) { allocate(bytes, what); }
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : raw_(std::exchange(o.raw_, nullptr)), ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      raw_ = std::exchange(o.raw_, nullptr);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void allocate(size_t bytes, const std::string& what) {
    reset();
    if (bytes == 0) return;
    constexpr size_t kAlign = 4096;
    const cudaError_t err = cudaHostAlloc(&raw_, bytes + kAlign, cudaHostAllocDefault);
    if (err != cudaSuccess) {
      raw_ = nullptr;
      if (is_sticky_cuda_error(err)) throw_cuda_error(err, "cudaHostAlloc", __FILE__, __LINE__);
      cudaGetLastError();
      throw Error("cannot pin " + std::to_string(bytes) + " bytes of host memory for " + what + ": " +
                  cudaGetErrorString(err));
    }
    const auto addr = reinterpret_cast<uintptr_t>(raw_);
    ptr_ = reinterpret_cast<void*>((addr + kAlign - 1) / kAlign * kAlign);
    bytes_ = bytes;
  }
  void reset() noexcept {
    if (raw_) cudaFreeHost(raw_);
    raw_ = nullptr;
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  uint8_t* bytes_ptr() const { return static_cast<uint8_t*>(ptr_); }
  size_t size() const { return bytes_; }

 private:
  void* raw_ = nullptr;  // what cudaHostAlloc returned
  void* ptr_ = nullptr;  // raw_ rounded up to 4096
  size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { MOEPACK_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { MOEPACK_CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace moepack::gpu
