// Heap memory aligned for O_DIRECT (and, on GPU builds, registered as pinned by gpu/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace moepack {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // `bytes` rounded up to `alignment` (a power of two >= sizeof(void*)); zero-filled.
  explicit AlignedBuffer(size_t bytes, size_t alignment = 4096);
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

inline AlignedBuffer::AlignedBuffer(size_t bytes, size_t alignment) {
  const size_t rounded = (bytes + alignment - 1) & ~(alignment - 1);
  void* p = nullptr;
  if (rounded != 0 && ::posix_memalign(&p, alignment, rounded) != 0) throw std::bad_alloc();
  data_ = static_cast<uint8_t*>(p);
  size_ = rounded;
  if (data_ != nullptr) __builtin_memset(data_, 0, rounded);
}

}  // namespace moepack
