// ggml tensor types as stored in GGUF files: ids, names, block sizes and bytes per block.
//
// Source: ggml/include/ggml.h (enum ggml_type) and ggml/src/ggml-common.h (block structs) of
// llama.cpp at the fixtures' commit 82bb485 (2026-08-07). The table covers every type id a
// GGUF may carry, including those MoePack cannot compute yet (IQ*, TQ*, NVFP4...), so tensor
// sizes and offsets are always right. Ids 4, 5, 31-33 and 36-38 were removed from ggml and
// are rejected as unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace moepack {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3,
  Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41,
};

// One past the largest id in the table.
inline constexpr uint32_t kGgmlTypeIdEnd = 42;

struct GgmlTypeTraits {
  std::string_view name;  // ggml's lower-case name, e.g. "q4_K", "mxfp4"
  uint32_t block_size;    // elements per block (1 for plain types)
  uint32_t type_size;     // bytes per block
  bool quantized;
};

// Traits for a raw type id read from a file; nullopt for ids not in ggml (or removed).
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);

// Traits of a known type (never fails).
const GgmlTypeTraits& ggml_traits(GgmlType type);

std::string_view ggml_type_name(GgmlType type);

// Parses ggml's name ("q4_K", "F16" and "f16" accepted); nullopt if unknown.
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

// Bytes of one row of `n_elements` elements; nullopt if n_elements is not a multiple of the
// block size or the size overflows.
std::optional<uint64_t> ggml_row_bytes(GgmlType type, uint64_t n_elements);

}  // namespace moepack
