// UploadArena: small host -> device tables of one forward() (token ids, expert pointer
// tables, pair lists), bump-allocated in a pinned host buffer and copied on the given stream to
// the same offset of a device buffer. Call reset() at the start of each forward(), after the
// previous one ended with a stream sync. Growing moves on to a larger pair of buffers; the old
// ones stay alive until the next reset(), because tables handed out earlier in this forward()
// are still read by queued kernels and copies. Tables may be staged (stage()) and copied
// together by one flush(): one cudaMemcpyAsync instead of one per table (two when the buffers
// grow in between); reset() drops what was staged and not flushed. Throws Error (out of pinned
// memory / VRAM, with the numbers; the arena stays as it was).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"

namespace moepack::gpu {

class UploadArena {
 public:
  void reset() {
    used_ = flushed_ = 0;
    retired_host_.clear();
    retired_dev_.clear();
  }
  // Copies count values to the device (asynchronously, on s) and returns their device address,
  // 256-byte aligned, with everything staged before it. `data` may be reused by the caller as
  // soon as put() returns.
  template <typename T>
  const T* put(const T* data, size_t count, cudaStream_t s) {
    const T* d = stage(data, count, s);
    flush(s);
    return d;
  }
  // Copies count values into the pinned buffer and returns the device address they will have,
  // 256-byte aligned; the copy to the device is issued by the next flush() (or put()) on s, which
  // must come before any launch that reads them. `data` may be reused at once. s is used only
  // when the buffers grow: what was staged in the old ones is flushed first, on s.
  template <typename T>
  const T* stage(const T* data, size_t count, cudaStream_t s) {
    const size_t bytes = count * sizeof(T);
    const size_t at = (used_ + 255) / 256 * 256;
    if (at + bytes > host_.size()) {
      const size_t cap = std::max<size_t>(2 * host_.size(), std::max<size_t>(bytes + 256, 1 << 20));
      PinnedBuffer host(cap, "the upload arena");  // both first: a failure leaves the arena as it was
      DeviceBuffer dev(cap, "the upload arena");
      flush(s);
      if (host_.size()) {
        retired_host_.push_back(std::move(host_));
        retired_dev_.push_back(std::move(dev_));
      }
      host_ = std::move(host);
      dev_ = std::move(dev);
      used_ = flushed_ = 0;
      return stage(data, count, s);
    }
    if (bytes) std::memcpy(host_.bytes_ptr() + at, data, bytes);
    used_ = at + bytes;
    return reinterpret_cast<const T*>(dev_.bytes_ptr() + at);
  }
  // One copy, on s, of everything staged since the last flush.
  void flush(cudaStream_t s) {
    if (used_ > flushed_) {
      MOEPACK_CUDA_CHECK(cudaMemcpyAsync(dev_.bytes_ptr() + flushed_, host_.bytes_ptr() + flushed_,
                                         used_ - flushed_, cudaMemcpyHostToDevice, s));
    }
    flushed_ = used_;
  }

 private:
  PinnedBuffer host_;
  DeviceBuffer dev_;
  std::vector<PinnedBuffer> retired_host_;
  std::vector<DeviceBuffer> retired_dev_;
  size_t used_ = 0;     // bytes handed out (host_ and dev_)
  size_t flushed_ = 0;  // of which the copy to dev_ is issued
};

}  // namespace moepack::gpu
