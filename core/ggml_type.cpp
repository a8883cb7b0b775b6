#include "core/ggml_type.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "core/checked.h"

namespace moepack {
namespace {

struct Row {
  uint32_t id;
  GgmlTypeTraits traits;
};

// Block sizes and bytes per block from ggml-common.h; QK_K = 256.
constexpr std::array<Row, 36> kTable{{
    {0, {"f32", 1, 4, false}},
    {1, {"f16", 1, 2, false}},
    {2, {"q4_0", 32, 18, true}},     // half d; u8 qs[16]
    {3, {"q4_1", 32, 20, true}},     // half d, m; u8 qs[16]
    {6, {"q5_0", 32, 22, true}},     // half d; u8 qh[4]; u8 qs[16]
    {7, {"q5_1", 32, 24, true}},     // half d, m; u8 qh[4]; u8 qs[16]
    {8, {"q8_0", 32, 34, true}},     // half d; i8 qs[32]
    {9, {"q8_1", 32, 36, true}},     // half d, s; i8 qs[32]
    {10, {"q2_K", 256, 84, true}},   // u8 scales[16]; u8 qs[64]; half d, dmin
    {11, {"q3_K", 256, 110, true}},  // u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d
    {12, {"q4_K", 256, 144, true}},  // half d, dmin; u8 scales[12]; u8 qs[128]
    {13, {"q5_K", 256, 176, true}},  // half d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
    {14, {"q6_K", 256, 210, true}},  // u8 ql[128]; u8 qh[64]; i8 scales[16]; half d
    {15, {"q8_K", 256, 292, true}},  // float d; i8 qs[256]; i16 bsums[16]
    {16, {"iq2_xxs", 256, 66, true}},
    {17, {"iq2_xs", 256, 74, true}},
    {18, {"iq3_xxs", 256, 98, true}},
    {19, {"iq1_s", 256, 50, true}},
    {20, {"iq4_nl", 32, 18, true}},
    {21, {"iq3_s", 256, 110, true}},
    {22, {"iq2_s", 256, 82, true}},
    {23, {"iq4_xs", 256, 136, true}},
    {24, {"i8", 1, 1, false}},
    {25, {"i16", 1, 2, false}},
    {26, {"i32", 1, 4, false}},
    {27, {"i64", 1, 8, false}},
    {28, {"f64", 1, 8, false}},
    {29, {"iq1_m", 256, 56, true}},
    {30, {"bf16", 1, 2, false}},
    {34, {"tq1_0", 256, 54, true}},  // u8 qs[48]; u8 qh[4]; half d
    {35, {"tq2_0", 256, 66, true}},  // u8 qs[64]; half d
    {39, {"mxfp4", 32, 17, true}},   // u8 e (E8M0); u8 qs[16]
    {40, {"nvfp4", 64, 36, true}},   // u8 d[4] (UE4M3); u8 qs[32]
    {41, {"q1_0", 128, 18, true}},   // half d; u8 qs[16]
    // Sentinels keep the array size honest; never matched (ids >= kGgmlTypeIdEnd).
    {0xFFFFFFFE, {"", 0, 0, false}},
    {0xFFFFFFFF, {"", 0, 0, false}},
}};

static_assert(kTable[33].id == static_cast<uint32_t>(GgmlType::Q1_0), "table out of order");
static_assert(kTable[31].id == static_cast<uint32_t>(GgmlType::MXFP4), "table out of order");

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  if (type_id >= kGgmlTypeIdEnd) return std::nullopt;
  for (const Row& r : kTable) {
    if (r.id == type_id) return r.traits;
  }
  return std::nullopt;
}

const GgmlTypeTraits& ggml_traits(GgmlType type) {
  for (const Row& r : kTable) {
    if (r.id == static_cast<uint32_t>(type)) return r.traits;
  }
  return kTable.back().traits;  // unreachable for valid enum values
}

std::string_view ggml_type_name(GgmlType type) { return ggml_traits(type).name; }

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  for (const Row& r : kTable) {
    if (r.id >= kGgmlTypeIdEnd) continue;
    const std::string_view n = r.traits.name;
    if (n.size() == name.size() &&
        std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return static_cast<GgmlType>(r.id);
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> ggml_row_bytes(GgmlType type, uint64_t n_elements) {
  const GgmlTypeTraits& t = ggml_traits(type);
  if (t.block_size == 0 || n_elements % t.block_size != 0) return std::nullopt;
  return checked_mul(n_elements / t.block_size, t.type_size);
}

}  // namespace moepack
