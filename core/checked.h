// Overflow-checked 64-bit arithmetic for sizes and offsets read from untrusted files.
// Pattern from ggml's gguf.cpp (`offs + n < offs || offs + n > size`), expressed with the
// compiler's overflow builtins so that no size computation can wrap silently.
#pragma once

#include <cstdint>
#include <optional>

namespace moepack {

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Rounds `v` up to a multiple of `align` (a nonzero power of two); nullopt on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t v, uint64_t align) {
  auto s = checked_add(v, align - 1);
  if (!s) return std::nullopt;
  return *s & ~(align - 1);
}

inline bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// True when [offset, offset + length) lies inside [0, size) without wrapping.
inline bool range_inside(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

}  // namespace moepack
