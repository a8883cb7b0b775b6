// Every CUDA kernel against its CPU twin on random inputs (STYLE.md: a CPU reference beside
// every kernel, a parity test with a stated tolerance):
//   - dequantization: bit for bit equal to core's dequantize_row, every type;
//   - GEMV (decode, n_tok = 1), prefill tiles (n_tok = 11 crosses the 8-token tile; x staged in
//     shared memory and read from global memory, bit for bit the same) and the
//     grouped expert launch (pointer table, pairs, gathered x rows): |gpu - exact| <=
//     1e-6 * sum_k |w_k x_k|, where exact = the double dot product of core's dequantize_row and x
//     (kDotRel below says what the kernels may lose);
//   - RMSNorm, RoPE (NORM, NEOX, YaRN), SwiGLU, combine: within 1e-6 relative (expf vs
//     std::exp; double sums in another order);
//   - GQA and MLA attention vs gqa_attend / the arch_deepseek2 loop: within 1e-5 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "core/cpu_attention.h"
#include "core/cpu_ops.h"
#include "core/fp16.h"
#include "core/quants.h"
#include "core/thread_pool.h"
#include "gpu/cuda_resources.h"
#include "gpu/gemm_mma_layout.h"
#include "gpu/gemv_launch_cap.h"
#include "gpu/gemv_mma.h"
#include "gpu/gemv_tiled.h"
#include "gpu/kernels.h"
#include "gpu/tiled_experts.h"
#include "tests/gpu/gpu_test_main.h"
#include "tests/gpu/prefill_mma_scope.h"

// tests/gpu/static_smem_kernel.cu: a kernel of exactly 1,024 bytes of static shared memory.
const void* moepack_test_static_smem_kernel();

namespace moepack::gpu {
namespace {

// Q5_K's tensor-core decode and Q3_K's and Q6_K's tiled launches are switches
// (detail::kGemvQ5kTensorCoresDefault, kGemvQ3kTiledDefault, kGemvQ6kTiledDefault; on by default
// since the thirty-seventh session): this binary tests them, so they are on for every test here
// whatever the defaults (tests that switch one off put it back on).
class Q5kTensorCoresOn : public ::testing::Environment {
 public:
  void SetUp() override {
    detail::set_gemv_tensor_cores(GgmlType::Q5_K, true);
    detail::set_gemv_tiled_layout(GgmlType::Q3_K, true);
    detail::set_gemv_tiled_layout(GgmlType::Q6_K, true);
  }
};
::testing::Environment* const kQ5kTensorCoresOn = ::testing::AddGlobalTestEnvironment(new Q5kTensorCoresOn);

template <typename T>
DeviceBuffer to_device(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T), "test input");
  MOEPACK_CUDA_CHECK(cudaMemcpy(b.as<void>(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return b;
}

std::vector<float> to_host(const DeviceBuffer& b, size_t n) {
  MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> v(n);
  MOEPACK_CUDA_CHECK(cudaMemcpy(v.data(), b.as<void>(), n * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

// Random rows of `type` whose scale fields hold sane values (no inf/NaN).
std::vector<uint8_t> random_rows(GgmlType type, int64_t ne0, int64_t rows, std::mt19937& rng) {
  const uint64_t rb = *ggml_row_bytes(type, static_cast<uint64_t>(ne0));
  std::vector<uint8_t> data(rb * static_cast<uint64_t>(rows));
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng() & 0xFF);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  const auto half = [&](uint8_t* p) {
    const uint16_t h = fp32_to_fp16(scale(rng));
    std::memcpy(p, &h, 2);
  };
  const auto& tr = ggml_traits(type);
  const size_t bs = tr.type_size;
  for (size_t off = 0; off < data.size(); off += bs) {
    uint8_t* b = data.data() + off;
    switch (type) {
      case GgmlType::F32: {
        const float f = scale(rng) * ((rng() & 1) ? 1.0f : -1.0f) * 20.0f;
        std::memcpy(b, &f, 4);
        break;
      }
      case GgmlType::F16: {
        const uint16_t h = fp32_to_fp16(scale(rng) * ((rng() & 1) ? 20.0f : -20.0f));
        std::memcpy(b, &h, 2);
        break;
      }
      case GgmlType::BF16: {
        const float f = scale(rng) * ((rng() & 1) ? 20.0f : -20.0f);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        const uint16_t h = static_cast<uint16_t>(bits >> 16);
        std::memcpy(b, &h, 2);
        break;
      }
      case GgmlType::Q4_0:
      case GgmlType::Q5_0:
      case GgmlType::Q8_0:
        half(b);
        break;
      case GgmlType::Q4_1:
      case GgmlType::Q5_1:
      case GgmlType::Q4_K:  // d, dmin (m, d for Q4_1 / Q5_1) in the first four bytes
      case GgmlType::Q5_K:
        half(b);
        half(b + 2);
        break;
      case GgmlType::MXFP4:
        b[0] = static_cast<uint8_t>(118 + rng() % 12);
        break;
      case GgmlType::Q2_K:
        half(b + 80);
        half(b + 82);
        break;
      case GgmlType::Q3_K:
        half(b + 108);
        break;
      case GgmlType::Q6_K:
        half(b + 208);
        break;
      default:
        break;
    }
  }
  return data;
}

// n random matrices of [ne1][ne0] `type` ("experts"), each in a device buffer of its own, and the
// device table of their addresses.
struct ExpertMatrices {
  std::vector<std::vector<uint8_t>> mats;
  std::vector<DeviceBuffer> d_mats;
  DeviceBuffer d_table;
};
ExpertMatrices expert_matrices(GgmlType type, int64_t ne0, int64_t ne1, int n, std::mt19937& rng) {
  ExpertMatrices m;
  std::vector<const uint8_t*> table;
  for (int e = 0; e < n; ++e) {
    m.mats.push_back(random_rows(type, ne0, ne1, rng));
    m.d_mats.push_back(to_device(m.mats.back()));
    table.push_back(m.d_mats.back().bytes_ptr());
  }
  m.d_table = to_device(table);
  return m;
}

// n random matrices of [ne1][ne0] `type` back to back (`data`, on the device as d_w), the same
// bytes repacked into the tiled layout (d_t, synchronised: a tiled launch loads weights before
// it waits for the kernel before it), and the matrices' pointer tables for each (d_tab, d_tab_t).
// repack_tiled's every byte is checked against gpu/gemv_tiled.h's tiled_source (CPU-tested by
// gemv_tiled_layout_test against hand-worked entries).
struct TiledMatrices {
  std::vector<uint8_t> data;
  uint64_t rb, mat;  // bytes a row, a matrix
  DeviceBuffer d_w, d_t, d_tab, d_tab_t;
};
TiledMatrices tiled_matrices(GgmlType type, int64_t ne0, int64_t ne1, int n, std::mt19937& rng) {
  TiledMatrices m{random_rows(type, ne0, ne1 * n, rng), *ggml_row_bytes(type, ne0), 0, {}, {}, {}, {}};
  m.mat = m.rb * static_cast<uint64_t>(ne1);
  m.d_w = to_device(m.data);
  m.d_t = DeviceBuffer(m.data.size(), "tiled");
  MOEPACK_CUDA_CHECK(cudaMemset(m.d_t.as<void>(), 0, m.d_t.size()));
  repack_tiled(type, ne0, ne1, m.rb, m.d_w.bytes_ptr(), m.d_t.bytes_ptr(), n, nullptr);
  MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint8_t> tiled(m.data.size());
  MOEPACK_CUDA_CHECK(cudaMemcpy(tiled.data(), m.d_t.as<void>(), tiled.size(), cudaMemcpyDeviceToHost));
  const int chunk = tiled_chunk_bytes(type), unit = tiled_unit_bytes(type);
  const int64_t units = ne0 / 256;
  for (size_t i = 0; i < tiled.size(); ++i) {
    const uint64_t k = i / m.mat, in = i % m.mat;  // matrix k, byte `in` of its tiled layout
    const int64_t c = static_cast<int64_t>(in / static_cast<uint64_t>(chunk));
    const TiledSource src = tiled_source(type, static_cast<int>(in % static_cast<uint64_t>(chunk)));
    const uint64_t row = static_cast<uint64_t>(c / units * 16 + src.row);
    const uint64_t at = k * m.mat + row * m.rb + static_cast<uint64_t>(c % units * unit + src.byte);
    if (tiled[i] != m.data[at]) {
      ADD_FAILURE() << ggml_type_name(type) << " [" << ne1 << "][" << ne0 << "]: repack_tiled's byte " << i
                    << " is " << int{tiled[i]} << ", tiled_source's (matrix " << k << ", row " << row
                    << ", byte " << c % units * unit + src.byte << ") " << int{m.data[at]};
      break;
    }
  }
  std::vector<const uint8_t*> tab, tab_t;
  for (int k = 0; k < n; ++k) {
    tab.push_back(m.d_w.bytes_ptr() + m.mat * static_cast<uint64_t>(k));
    tab_t.push_back(m.d_t.bytes_ptr() + m.mat * static_cast<uint64_t>(k));
  }
  m.d_tab = to_device(tab);
  m.d_tab_t = to_device(tab_t);
  return m;
}

const GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,  GgmlType::Q4_1,
                           GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::MXFP4, GgmlType::Q2_K,
                           GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

class TypeParity : public ::testing::TestWithParam<GgmlType> {};

TEST_P(TypeParity, DequantRowsBitExact) {
  const GgmlType type = GetParam();
  std::mt19937 rng(1234);
  const int64_t ne0 = 512, rows = 5;
  const auto data = random_rows(type, ne0, rows, rng);
  const uint64_t rb = *ggml_row_bytes(type, ne0);
  auto d_w = to_device(data);
  const std::vector<int32_t> ids = {4, 0, 2, 2};
  auto d_ids = to_device(ids);
  DeviceBuffer d_out(ids.size() * ne0 * sizeof(float), "out");
  dequant_rows(type, d_w.bytes_ptr(), rb, ne0, d_ids.as<int32_t>(), static_cast<int32_t>(ids.size()),
               d_out.as<float>(), nullptr);
  const auto got = to_host(d_out, ids.size() * ne0);
  std::vector<float> want(static_cast<size_t>(ne0));
  for (size_t i = 0; i < ids.size(); ++i) {
    dequantize_row(type, data.data() + rb * static_cast<uint64_t>(ids[i]), want.data(), ne0);
    EXPECT_EQ(0, std::memcmp(want.data(), got.data() + i * ne0, ne0 * sizeof(float))) << "row " << ids[i];
  }
}

// GEMV tolerance: |gpu - exact| <= kDotRel * sum_k (|w_k - m_k| + |m_k|) |x_k|, exact = the dot
// product of the dequantized row (core's dequantize_row, bit-exact on the GPU too) and x in double.
// m_k is the row's minimum term where its type has one (Q4_K, Q5_K, Q2_K: w = d sc q - dmin m, m_k =
// -dmin m, the row dequantized with its quants zeroed), else 0 (the bound is then sum |w x|). What the
// kernels may lose: F32 sums of at most a few hundred terms each (2^-24 relative per add, a random
// walk in practice) and, on the tensor-core paths, x to 22 bits (f16 halves) or to 2^-27 of its
// super-block's maximum (integer slices). The types with a minimum are summed as ggml's own
// vec_dot_q*_K_q8_K does, d sum(sc q x) - dmin sum(m x): each part is rounded at its own magnitude,
// so where d sc q is close to dmin m for a large x the error is a fraction of those parts, not of |w x|
// (a CPU emulation of the tensor-core prefill, forty-ninth session: outliers 30-3000 times the rest
// gave up to 4.2e-6 of sum |w x| and 3.9e-7 of this bound). The largest ratio seen is printed at exit.
constexpr double kDotRel = 1e-6;
struct WorstDot {
  double ratio = 0;
  ~WorstDot() {
    std::fprintf(stderr, "gpu_ops_test: largest |gpu - exact| / bound magnitude = %.3g\n", ratio);
  }
} g_worst_dot;

// The bytes of a block of `type` that hold its quants (zeroed, the block dequantizes to its minimum
// term -dmin m), as {offset, length}; {0, 0} for types without a minimum.
std::pair<size_t, size_t> minimum_free_quants(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_K:
      return {16, 128};  // d, dmin, scales[12], qs[128]
    case GgmlType::Q5_K:
      return {16, 160};  // d, dmin, scales[12], qh[32], qs[128]
    case GgmlType::Q2_K:
      return {16, 64};  // scales[16], qs[64], d, dmin
    default:
      return {0, 0};
  }
}

void expect_close_dot(float got, const uint8_t* row, GgmlType type, const float* x, int64_t n,
                      const char* what) {
  std::vector<float> w(static_cast<size_t>(n)), m(static_cast<size_t>(n), 0.0f);
  dequantize_row(type, row, w.data(), n);
  if (const auto [at, len] = minimum_free_quants(type); len != 0) {
    const uint64_t bs = ggml_traits(type).type_size, rb = *ggml_row_bytes(type, n);
    std::vector<uint8_t> mins(row, row + rb);
    for (uint64_t o = 0; o < rb; o += bs) std::memset(mins.data() + o + at, 0, len);
    dequantize_row(type, mins.data(), m.data(), n);
  }
  double mag = 0, exact = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double wk = w[k], mk = m[k], xk = x[k];
    exact += wk * xk;
    mag += (std::fabs(wk - mk) + std::fabs(mk)) * std::fabs(xk);
  }
  const double err = std::fabs(static_cast<double>(got) - exact);
  if (mag > 0) g_worst_dot.ratio = std::max(g_worst_dot.ratio, err / mag);
  EXPECT_LE(err, kDotRel * mag) << what << ": gpu " << got << ", exact " << exact << ", bound magnitude "
                                << mag;
}

// The fields every GEMV launch below shares: rows of ne0 elements (rb bytes each), x rows of
// ne0 floats, y rows of ne1 floats.
GemvBatch rows_batch(GgmlType type, int64_t ne0, int64_t ne1, uint64_t rb, const float* x, float* y) {
  GemvBatch b;
  b.type = type;
  b.ne0 = ne0;
  b.ne1 = ne1;
  b.row_bytes = rb;
  b.x = x;
  b.x_stride = ne0;
  b.y = y;
  b.y_stride = ne1;
  return b;
}

TEST_P(TypeParity, GemvDecodeAndPrefill) {
  const GgmlType type = GetParam();
  std::mt19937 rng(99);
  const int64_t ne0 = 768, ne1 = 67;
  const auto data = random_rows(type, ne0, ne1, rng);
  const uint64_t rb = *ggml_row_bytes(type, ne0);
  auto d_w = to_device(data);
  for (const int32_t n_tok : {1, 11}) {
    const auto x = random_floats(static_cast<size_t>(n_tok * ne0), rng);
    auto d_x = to_device(x);
    DeviceBuffer d_y(static_cast<size_t>(n_tok * ne1) * sizeof(float), "y");
    GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), d_y.as<float>());
    b.w = d_w.bytes_ptr();
    b.n_tok = n_tok;
    gemv(b, nullptr);
    const auto y = to_host(d_y, static_cast<size_t>(n_tok * ne1));
    for (int32_t t = 0; t < n_tok; ++t) {
      for (int64_t r = 0; r < ne1; ++r) {
        expect_close_dot(y[t * ne1 + r], data.data() + rb * r, type, x.data() + t * ne0, ne0, "dense");
      }
    }
  }
}

// Three "experts" (matrices at arbitrary device addresses), 13 pairs gathered from 6 tokens.
TEST_P(TypeParity, GemvGroupedExperts) {
  const GgmlType type = GetParam();
  std::mt19937 rng(7);
  const int64_t ne0 = 256, ne1 = 40, n_tok = 6;
  const uint64_t rb = *ggml_row_bytes(type, ne0);
  const ExpertMatrices em = expert_matrices(type, ne0, ne1, 3, rng);
  const auto& mats = em.mats;
  const std::vector<int32_t> grp_off = {0, 2, 11, 13};
  const std::vector<int32_t> x_row = {5, 0, 0, 1, 2, 3, 4, 5, 1, 3, 2, 4, 4};
  const auto x = random_floats(static_cast<size_t>(n_tok * ne0), rng);
  auto d_x = to_device(x);
  auto d_off = to_device(grp_off);
  auto d_rows = to_device(x_row);
  DeviceBuffer d_y(13 * ne1 * sizeof(float), "y");
  gemv_experts(type, ne0, ne1, rb, em.d_table.as<const uint8_t* const>(), d_off.as<int32_t>(), 3, 9,
               d_rows.as<int32_t>(), d_x.as<float>(), ne0, d_y.as<float>(), ne1, nullptr);
  const auto y = to_host(d_y, 13 * ne1);
  for (int g = 0; g < 3; ++g) {
    for (int j = grp_off[g]; j < grp_off[g + 1]; ++j) {
      for (int64_t r = 0; r < ne1; ++r) {
        expect_close_dot(y[j * ne1 + r], mats[g].data() + rb * r, type, x.data() + x_row[j] * ne0, ne0,
                         "expert");
      }
    }
  }
}

// One expert launch of groups [first, first + n_groups) of grp_off (offsets rebased to the first),
// pair j's x row d_x + d_rows[j] * x_stride, y poisoned with NaN first so rows left unwritten show.
std::vector<float> expert_groups(GgmlType type, int64_t ne0, int64_t ne1, uint64_t rb,
                                 const ExpertMatrices& em, const std::vector<int32_t>& grp_off,
                                 const DeviceBuffer& d_rows, const DeviceBuffer& d_x, int64_t x_stride,
                                 int first, int n_groups, int max_pairs) {
  std::vector<int32_t> off;
  for (int g = first; g <= first + n_groups; ++g) off.push_back(grp_off[g] - grp_off[first]);
  auto d_off = to_device(off);
  const int pairs = off.back();
  DeviceBuffer d_y(static_cast<size_t>(pairs * ne1) * sizeof(float), "y");
  MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
  gemv_experts(type, ne0, ne1, rb, em.d_table.as<const uint8_t* const>() + first, d_off.as<int32_t>(),
               n_groups, max_pairs, d_rows.as<int32_t>() + grp_off[first], d_x.as<float>(), x_stride,
               d_y.as<float>(), ne1, nullptr);
  return to_host(d_y, static_cast<size_t>(pairs * ne1));
}

// One dense launch of matrix d_w ([ne1][ne0] of `type`) over the first n_tok rows of d_x (ne0
// floats each), y poisoned with NaN first so rows left unwritten show.
std::vector<float> dense_launch(GgmlType type, int64_t ne0, int64_t ne1, uint64_t rb, const DeviceBuffer& d_w,
                                const DeviceBuffer& d_x, int32_t n_tok) {
  DeviceBuffer d_y(static_cast<size_t>(n_tok * ne1) * sizeof(float), "y");
  MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
  GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), d_y.as<float>());
  b.w = d_w.bytes_ptr();
  b.n_tok = n_tok;
  gemv(b, nullptr);
  return to_host(d_y, static_cast<size_t>(n_tok * ne1));
}

// Every group of grp_off in one launch (max_pairs) against each group in a launch of its own:
// each pair's sums the same bit for bit, and each within the exact dot product's bound. Pair j's x
// is x row x_row[j] (x_stride floats apart).
void expect_batching_changes_no_sum(GgmlType type, int64_t ne0, int64_t ne1, uint64_t rb,
                                    const ExpertMatrices& em, const std::vector<int32_t>& grp_off,
                                    const std::vector<int32_t>& x_row, const std::vector<float>& x,
                                    int64_t x_stride, int max_pairs) {
  auto d_x = to_device(x);
  auto d_rows = to_device(x_row);
  const int n_groups = static_cast<int>(grp_off.size()) - 1;
  const auto all =
      expert_groups(type, ne0, ne1, rb, em, grp_off, d_rows, d_x, x_stride, 0, n_groups, max_pairs);
  for (int g = 0; g < n_groups; ++g) {
    const auto alone = expert_groups(type, ne0, ne1, rb, em, grp_off, d_rows, d_x, x_stride, g, 1,
                                     grp_off[g + 1] - grp_off[g]);
    for (int j = grp_off[g]; j < grp_off[g + 1]; ++j) {
      for (int64_t r = 0; r < ne1; ++r) {
        const float a = all[j * ne1 + r], o = alone[(j - grp_off[g]) * ne1 + r];
        ASSERT_EQ(0, std::memcmp(&a, &o, sizeof a)) << "group " << g << " pair " << j << " row " << r << ": "
                                                    << a << " in one launch, " << o << " alone";
        expect_close_dot(a, em.mats[g].data() + rb * r, type, x.data() + x_row[j] * x_stride, ne0, "batched");
      }
    }
  }
}

// How groups are batched into launches never changes a pair's sum (the pack path and the GGUF
// path batch experts differently and must agree bit for bit): groups of 1, 3, 1 and 2 pairs in
// one launch (max_pairs 3: single-pair groups go to the tensor-core path where it covers the
// type, the others to the prefill kernel) against each group in a launch of its own (a
// single-pair group alone is a decode launch). Bitwise, and each against the exact dot product.
TEST_P(TypeParity, GemvBatchingNeverChangesAPairsSum) {
  const GgmlType type = GetParam();
  std::mt19937 rng(11);
  const int64_t ne0 = 512, ne1 = 35, n_tok = 5;
  const uint64_t rb = *ggml_row_bytes(type, ne0);
  const ExpertMatrices em = expert_matrices(type, ne0, ne1, 4, rng);
  const std::vector<int32_t> grp_off = {0, 1, 4, 5, 7};
  const std::vector<int32_t> x_row = {3, 0, 2, 4, 1, 1, 3};
  const auto x = random_floats(static_cast<size_t>(n_tok * ne0), rng);
  expect_batching_changes_no_sum(type, ne0, ne1, rb, em, grp_off, x_row, x, ne0, 3);
}

// A process-wide switch of the benchmark's (gpu/kernels.h, detail) back off at scope exit (a
// failed ASSERT included).
struct SwitchOffAfterwards {
  void (*set)(bool);
  ~SwitchOffAfterwards() { set(false); }
};

// The F32 kernels' dequantization in registers (tile_chunk) gives core's dequantize_row values
// bit for bit: with x one-hot at column k_t, every other product is a signed zero and the sums
// add zeros, so y[t][r] is W[r][k_t] exactly. Decode (one token: the F32 decode kernel for the
// types the tensor cores do not take, Q3_K, Q5_K and Q6_K with theirs switched off; they take groups of
// one pair) and prefill (8 tokens, every
// type), rows off 16-byte alignment where the block size allows it (ne0 = 768: 330-byte Q3_K
// rows), 12 columns a token at different chunk positions. Then, for the six types it covers,
// the same launches on random x with the byte-wise dequantization (set_gemv_bytewise_dequant,
// the kernels before the twenty-fifth pass) give the same sums bit for bit.
TEST_P(TypeParity, GemvOneHotColumnsAreTheDequantizedWeightsBitForBit) {
  const SwitchOffAfterwards restore{detail::set_gemv_bytewise_dequant};
  // The F32 kernels at prefill (the tensor cores' prefill keeps W to 22 bits: tested below)
  const test::PrefillMmaScope restore_mma(false, 2);
  // Q3_K's, Q5_K's and Q6_K's decode in the F32 kernels here (their tensor cores are tested below)
  struct TensorCoresOnAfterwards {
    ~TensorCoresOnAfterwards() {
      detail::set_gemv_tensor_cores(GgmlType::Q3_K, true);
      detail::set_gemv_tensor_cores(GgmlType::Q5_K, true);
      detail::set_gemv_tensor_cores(GgmlType::Q6_K, true);
    }
  } tensor_cores_on;
  detail::set_gemv_tensor_cores(GgmlType::Q3_K, false);
  detail::set_gemv_tensor_cores(GgmlType::Q5_K, false);
  detail::set_gemv_tensor_cores(GgmlType::Q6_K, false);
  const GgmlType type = GetParam();
  std::mt19937 rng(2025);
  const int64_t ne0 = 768, ne1 = 21;
  const auto data = random_rows(type, ne0, ne1, rng);
  const uint64_t rb = *ggml_row_bytes(type, ne0);
  auto d_w = to_device(data);
  std::vector<float> deq(static_cast<size_t>(ne0 * ne1));
  for (int64_t r = 0; r < ne1; ++r) dequantize_row(type, data.data() + rb * r, deq.data() + r * ne0, ne0);
  const bool tensor_cores_decode = detail::gemv_mma_supported(type, ne0);
  const auto launch = [&](const std::vector<float>& x, int32_t n_tok) {
    auto d_x = to_device(x);
    DeviceBuffer d_y(static_cast<size_t>(n_tok * ne1) * sizeof(float), "y");
    GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), d_y.as<float>());
    b.w = d_w.bytes_ptr();
    b.n_tok = n_tok;
    gemv(b, nullptr);
    return to_host(d_y, static_cast<size_t>(n_tok * ne1));
  };
  int checked = 0;
  for (const int32_t n_tok : {1, 8}) {
    if (n_tok == 1 && tensor_cores_decode) continue;
    for (int round = 0; round < 12; ++round) {
      std::vector<float> x(static_cast<size_t>(n_tok * ne0), 0.0f);
      std::vector<int64_t> k(static_cast<size_t>(n_tok));
      for (int32_t t = 0; t < n_tok; ++t) {
        k[t] = (round * 67 + t * 31 + 5) % ne0;  // 67 and 31 are coprime to 32: every chunk position
        x[t * ne0 + k[t]] = 1.0f;
      }
      const auto y = launch(x, n_tok);
      for (int32_t t = 0; t < n_tok; ++t) {
        for (int64_t r = 0; r < ne1; ++r) {
          ASSERT_EQ(deq[r * ne0 + k[t]], y[t * ne1 + r])
              << "token " << t << " of " << n_tok << ", row " << r << ", column " << k[t];
          ++checked;
        }
      }
    }
    // (The switch covers these six types; for the others both launches are the same kernel.)
    if (type != GgmlType::Q3_K && type != GgmlType::Q5_K && type != GgmlType::Q4_0 &&
        type != GgmlType::Q4_1 && type != GgmlType::Q5_0 && type != GgmlType::Q5_1) {
      continue;
    }
    const auto x = random_floats(static_cast<size_t>(n_tok * ne0), rng);
    detail::set_gemv_bytewise_dequant(false);
    const auto reg = launch(x, n_tok);
    detail::set_gemv_bytewise_dequant(true);
    const auto bytewise = launch(x, n_tok);
    detail::set_gemv_bytewise_dequant(false);
    EXPECT_EQ(0, std::memcmp(reg.data(), bytewise.data(), reg.size() * sizeof(float))) << n_tok << " tokens";
  }
  EXPECT_GT(checked, 0);
}

// The F32 kernels at prefill stage every pair's x in shared memory a slab at a time; reading it
// from global memory per lane (set_gemv_prefill_x_global, the kernels before the twenty-fifth
// pass) gives the same sums bit for bit: a dense launch of 11 tokens and an expert launch of
// groups of 1, 9 and 17 pairs (pair tiles of 8, a partial one; x rows gathered), 21 rows (a
// block's last warps past the last row still stage x), rows of 768 elements, or of 90 for the
// plain types (a partial last chunk, x rows off 16-byte alignment). Each sum also within the
// GEMV tolerance of the exact dot product.
TEST_P(TypeParity, GemvPrefillStagedXEqualsGlobalReadsBitForBit) {
  const SwitchOffAfterwards restore{detail::set_gemv_prefill_x_global};
  const test::PrefillMmaScope restore_mma(false,
                                          2);  // the F32 kernels' two ways (the tensor cores' prefill: below)
  const GgmlType type = GetParam();
  std::mt19937 rng(77);
  const int64_t ne0 = ggml_traits(type).block_size == 1 ? 90 : 768, ne1 = 21, n_tok = 11;
  const uint64_t rb = *ggml_row_bytes(type, ne0);
  const ExpertMatrices em = expert_matrices(type, ne0, ne1, 3, rng);
  const auto& mats = em.mats;
  const auto x = random_floats(static_cast<size_t>(n_tok * ne0), rng);
  auto d_x = to_device(x);
  const std::vector<int32_t> grp_off = {0, 1, 10, 27};
  std::vector<int32_t> x_row;
  for (int j = 0; j < 27; ++j) x_row.push_back((j * 5 + 3) % static_cast<int32_t>(n_tok));
  auto d_off = to_device(grp_off);
  auto d_rows = to_device(x_row);
  const auto dense = [&] {
    DeviceBuffer d_y(static_cast<size_t>(n_tok * ne1) * sizeof(float), "y");
    GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), d_y.as<float>());
    b.w = em.d_mats[0].bytes_ptr();
    b.n_tok = static_cast<int32_t>(n_tok);
    gemv(b, nullptr);
    return to_host(d_y, static_cast<size_t>(n_tok * ne1));
  };
  const auto experts = [&] {
    DeviceBuffer d_y(27 * ne1 * sizeof(float), "y");
    gemv_experts(type, ne0, ne1, rb, em.d_table.as<const uint8_t* const>(), d_off.as<int32_t>(), 3, 17,
                 d_rows.as<int32_t>(), d_x.as<float>(), ne0, d_y.as<float>(), ne1, nullptr);
    return to_host(d_y, 27 * ne1);
  };
  const auto staged_dense = dense();
  const auto staged_experts = experts();
  detail::set_gemv_prefill_x_global(true);
  const auto global_dense = dense();
  const auto global_experts = experts();
  detail::set_gemv_prefill_x_global(false);
  // (F32 has no staged variant: its tiles leave no room for the slab, so both are one kernel.)
  EXPECT_EQ(0, std::memcmp(staged_dense.data(), global_dense.data(), staged_dense.size() * sizeof(float)));
  EXPECT_EQ(0,
            std::memcmp(staged_experts.data(), global_experts.data(), staged_experts.size() * sizeof(float)));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < ne1; ++r) {
      expect_close_dot(staged_dense[t * ne1 + r], mats[0].data() + rb * r, type, x.data() + t * ne0, ne0,
                       "dense");
    }
  }
  for (int g = 0; g < 3; ++g) {
    for (int j = grp_off[g]; j < grp_off[g + 1]; ++j) {
      for (int64_t r = 0; r < ne1; ++r) {
        expect_close_dot(staged_experts[j * ne1 + r], mats[g].data() + rb * r, type,
                         x.data() + x_row[j] * ne0, ne0, "expert");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, TypeParity, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& p) {
                           return std::string(ggml_type_name(p.param));
                         });

// The tensor-core decode paths (gpu/gemv_mma.h), every layout (the benchmark compares them;
// the default last): single matrices with long rows (56 super-blocks, rows split over the
// block's warps; on the H200 the f16 ring layout's fragments no longer fit beside its rings
// and go to scratch, as do the integer path's for Q2_K and, since the tenth pass, for MXFP4's
// default (variant 22's stay), while Q4_K's stay in shared memory; and 72 super-blocks, where every
// layout's fragments go to scratch) and grouped launches of experts with one pair each
// (fragments in shared memory, 16-row tiles per warp, a partial last tile; 16, 5 and 1
// super-blocks a row, 2 to 4 blocks an expert; the 16-unit rows take the default's two-unit
// stages for Q4_K and MXFP4, the 44-unit rows its one-unit stages, as their fragments do not
// fit beside the two-unit rings), with activations far outside f16's range in both directions, an
// outlier channel 40 times the rest and an all-zero granule; once from aligned weights and once from weights
// 4 bytes off (the ring layouts then copy in 4-byte pieces instead of 16 or 8). Q3_K (its one
// layout, variant 26's four super-blocks a stage, 27's one and 28's other copy width) and Q6_K
// (its layout, 27, 28) also on rows of 6 and 2 super-blocks (their two-unit rings; 5 and 1 take the
// windowed rings), and of 45 and 67 (windowed rings with x's fragments in scratch).
// Puts the GEMV back on its default variant when a test that switches variants ends (also when
// an assertion throws).
// Prefill on the tensor cores (kernels_gemv.cu, "Prefill on the tensor cores": the block types;
// F32, F16 and BF16 stay in the F32 kernels, so for them both launches below are one kernel).
// Dense launches of 2, 5, 33 and 70 tokens (pair tiles of 32, partial ones) over 83 rows (a
// block's last warps past the last row), rows of three units (K-quants: 768 elements) or of 25
// chunks (the 32-element block types: 800, a partial last unit), x rows off 16-byte alignment
// (x_stride ne0 + 1): every sum within the exact dot product's bound, as the F32 kernels' (the
// switch off) are. A pair's sum is its own: tokens 67-69 of the 70-token launch (third
// pair tile, the last mma columns) equal bit for bit a 3-token launch of the same x rows. Expert
// launches: groups of 2, 1, 37 and 3 pairs (x rows gathered, max_pairs 37) equal bit for bit
// each group launched alone, within the bound.
TEST_P(TypeParity, GemvPrefillTensorCoresWithinTheBoundAndPerPair) {
  const test::PrefillMmaScope restore(true, 2);
  const GgmlType type = GetParam();
  const int64_t bs = ggml_traits(type).block_size;
  const int64_t ne0 = bs == 256 ? 768 : bs == 32 ? 800 : 90, ne1 = 83, n_max = 70, xs = ne0 + 1;
  std::mt19937 rng(4242);
  const auto data = random_rows(type, ne0, ne1, rng);
  const uint64_t rb = *ggml_row_bytes(type, ne0);
  auto d_w = to_device(data);
  const auto x = random_floats(static_cast<size_t>(n_max * xs), rng);
  auto d_x = to_device(x);
  const auto dense = [&](int32_t n_tok, int64_t first) {
    DeviceBuffer d_y(static_cast<size_t>(n_tok * ne1) * sizeof(float), "y");
    MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));  // NaN: rows left unwritten show
    GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>() + first * xs, d_y.as<float>());
    b.x_stride = xs;
    b.w = d_w.bytes_ptr();
    b.n_tok = n_tok;
    gemv(b, nullptr);
    return to_host(d_y, static_cast<size_t>(n_tok * ne1));
  };
  for (const int32_t n_tok : {2, 5, 33, 70}) {
    SCOPED_TRACE(std::to_string(n_tok) + " tokens");
    detail::set_gemv_prefill_mma(true);
    const auto mma = dense(n_tok, 0);
    detail::set_gemv_prefill_mma(false);
    const auto f32 = dense(n_tok, 0);
    detail::set_gemv_prefill_mma(true);
    for (int64_t t = 0; t < n_tok; ++t) {
      for (int64_t r = 0; r < ne1; ++r) {
        expect_close_dot(mma[t * ne1 + r], data.data() + rb * r, type, x.data() + t * xs, ne0,
                         "tensor cores");
        expect_close_dot(f32[t * ne1 + r], data.data() + rb * r, type, x.data() + t * xs, ne0, "F32 kernels");
      }
    }
  }
  const auto all = dense(70, 0), tail = dense(3, 67);
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t r = 0; r < ne1; ++r) {
      const float a = all[(67 + t) * ne1 + r], o = tail[t * ne1 + r];
      ASSERT_EQ(0, std::memcmp(&a, &o, sizeof a))
          << "token " << 67 + t << ", row " << r << ": " << a << " among 70, " << o << " among 3";
    }
  }
  // Expert launches
  const ExpertMatrices em = expert_matrices(type, ne0, ne1, 4, rng);
  std::vector<int32_t> x_row;
  for (int j = 0; j < 43; ++j) x_row.push_back((j * 13 + 5) % static_cast<int32_t>(n_max));
  expect_batching_changes_no_sum(type, ne0, ne1, rb, em, {0, 2, 3, 40, 43}, x_row, x, xs, 37);
}

// A minimum group size m (gpu/kernels.h set_gemv_prefill_mma_min_pairs; 2 by default on these
// small matrices) of 3, 8, 10 and 17: an expert launch of groups of 1, 2, m - 1, m, m + 1 and 20
// pairs gives each group the sums its size chooses, bit for bit: below m the F32 kernels' (the
// tensor cores' prefill off),
// from m on the tensor cores' (every group of two or more pairs on them; m - 1 of 9 and 16 needs
// the F32 launch's second pair tile). A launch whose groups all stay below m (max_pairs m - 1),
// and dense launches of m - 1 and m tokens, the same. F32, F16 and BF16 stay in the F32 kernels.
// The two ways differ somewhere both below and from m, so the test tells them apart. Minimums of
// 1 or below (but 0, each launch's default) are refused; a minimum set holds for every launch.
TEST_P(TypeParity, GemvPrefillTensorCoresTakeGroupsFromTheMinimum) {
  const test::PrefillMmaScope restore(true, 2);
  const GgmlType type = GetParam();
  std::mt19937 rng(77);
  const int64_t ne0 = 512, ne1 = 35;
  const int32_t n_x = 23;
  const uint64_t rb = *ggml_row_bytes(type, ne0);
  const ExpertMatrices em = expert_matrices(type, ne0, ne1, 6, rng);
  const auto x = random_floats(static_cast<size_t>(n_x * ne0), rng);
  auto d_x = to_device(x);
  const bool block_type = ggml_traits(type).block_size > 1;
  // Off, every group of two or more, minimum m: the three launches' sums.
  struct Three {
    std::vector<float> f32, every, own;
  };
  const auto three = [&](int m, const auto& launch) {
    Three t;
    detail::set_gemv_prefill_mma(false);
    t.f32 = launch();
    detail::set_gemv_prefill_mma(true);
    detail::set_gemv_prefill_mma_min_pairs(2);
    t.every = launch();
    detail::set_gemv_prefill_mma_min_pairs(m);
    t.own = launch();
    detail::set_gemv_prefill_mma_min_pairs(2);
    return t;
  };
  bool differ_below = false, differ_from = false;
  // Pair j of a launch of `sizes` (n pairs by ne1 rows), on the tensor cores or not.
  const auto expect_pairs = [&](const Three& t, int32_t first, int32_t n, bool on_tensor_cores,
                                const uint8_t* w, const std::vector<int32_t>& x_row,
                                const std::string& what) {
    const std::vector<float>& want = on_tensor_cores ? t.every : t.f32;
    for (int32_t j = first; j < first + n; ++j) {
      for (int64_t r = 0; r < ne1; ++r) {
        const size_t i = static_cast<size_t>(j * ne1 + r);
        ASSERT_EQ(0, std::memcmp(&t.own[i], &want[i], sizeof(float)))
            << what << ", pair " << j << ", row " << r << ": " << t.own[i] << ", want the "
            << (on_tensor_cores ? "tensor cores' " : "F32 kernels' ") << want[i];
        expect_close_dot(t.own[i], w + rb * static_cast<uint64_t>(r), type,
                         x.data() + x_row[static_cast<size_t>(j)] * ne0, ne0, what.c_str());
        const bool d = std::memcmp(&t.f32[i], &t.every[i], sizeof(float)) != 0;
        (on_tensor_cores ? differ_from : differ_below) |= d && n > 1;
      }
    }
  };
  for (const int m : {3, 8, 10, 17}) {
    SCOPED_TRACE("minimum " + std::to_string(m));
    for (const bool below_only : {false, true}) {
      const std::vector<int32_t> sizes =
          below_only ? std::vector<int32_t>{1, 2, m - 1} : std::vector<int32_t>{1, 2, m - 1, m, m + 1, 20};
      std::vector<int32_t> grp_off = {0};
      for (const int32_t n : sizes) grp_off.push_back(grp_off.back() + n);
      std::vector<int32_t> x_row;
      for (int32_t j = 0; j < grp_off.back(); ++j) x_row.push_back((j * 7 + 3) % n_x);
      auto d_rows = to_device(x_row);
      const int n_groups = static_cast<int>(sizes.size());
      const int max_pairs = *std::max_element(sizes.begin(), sizes.end());
      const Three t = three(m, [&] {
        return expert_groups(type, ne0, ne1, rb, em, grp_off, d_rows, d_x, ne0, 0, n_groups, max_pairs);
      });
      for (int g = 0; g < n_groups; ++g) {
        const int32_t n = sizes[static_cast<size_t>(g)];
        expect_pairs(t, grp_off[g], n, block_type && n >= m, em.mats[static_cast<size_t>(g)].data(), x_row,
                     "group " + std::to_string(g) + " of " + std::to_string(n) + " pairs");
      }
    }
    std::vector<int32_t> rows(static_cast<size_t>(n_x));
    for (int32_t k = 0; k < n_x; ++k) rows[static_cast<size_t>(k)] = k;
    for (const int32_t n_tok : {m - 1, m}) {
      const Three t = three(m, [&] { return dense_launch(type, ne0, ne1, rb, em.d_mats[0], d_x, n_tok); });
      expect_pairs(t, 0, n_tok, block_type && n_tok >= m, em.mats[0].data(), rows,
                   "a dense launch of " + std::to_string(n_tok) + " tokens");
    }
  }
  if (block_type) {
    EXPECT_TRUE(differ_below) << "below the minimum the F32 kernels and the tensor cores gave the same sums";
    EXPECT_TRUE(differ_from) << "from the minimum the F32 kernels and the tensor cores gave the same sums";
  }
  EXPECT_THROW(detail::set_gemv_prefill_mma_min_pairs(1), Error);
  EXPECT_THROW(detail::set_gemv_prefill_mma_min_pairs(-3), Error);
  // 0: each launch's own default (gpu/gemm_mma_layout.h, CPU-tested in gemm_mma_layout_test).
  detail::set_gemv_prefill_mma_min_pairs(0);
  EXPECT_EQ(detail::gemv_prefill_mma_min_pairs(type, ne0, ne1), 2);
  EXPECT_EQ(detail::gemv_prefill_mma_min_pairs(GgmlType::Q6_K, 4096, 2048), 4);  // A from the quants
  EXPECT_EQ(detail::gemv_prefill_mma_min_pairs(GgmlType::Q8_0, 4096, 2048), 8);
  detail::set_gemv_prefill_mma_min_pairs(5);
  EXPECT_EQ(detail::gemv_prefill_mma_min_pairs(GgmlType::Q6_K, 4096, 2048), 5);
}

// The default minimum group (set_gemv_prefill_mma_min_pairs(0): gpu/gemm_mma_layout.h
// prefill_mma_default_min_pairs with the type's A from the quants and the K split on, both defaults)
// through real launches on matrices of 4096 x 1024 elements, the first size the rule calls large
// (minimum 2, 4 for Q6_K; dense launches 3, 4 for Q6_K, split): a dense launch of md - 1 tokens gives the F32
// kernels' sums bit for bit (the tensor cores' prefill off), one of md tokens the tensor cores' (a
// minimum of 2); an expert launch of groups of 1, m - 1 and m pairs (1, 2 and 3 where m is 2) each
// group the same; on a small matrix (512 x 35, minimum 2) a dense launch of 2 tokens the tensor
// cores'; on ones the K split leaves whole, with rows of 512 (32,768 of them: dense minimum 2) 2 tokens the
// tensor cores', with rows of 4096 (16,960: 265 blocks, more than half of 132 x 4 or x 3; minimum 3) 2 tokens
// the F32 kernels' and 3 the tensor cores'; on a matrix under 2048 x 2048 elements with long rows (576 rows
// of 7168, MLA's kv_a; fifty-fifth session: split 14 ways, the split's dense minimum, 3 / 4 for Q6_K) 2 / 3
// tokens the F32 kernels' and 3 / 4 the tensor cores'; Q8_0 (no A from the quants: minimum 8, dense 12, 2 on
// the small matrix and the short rows, 8 on 4096 x 16,960, over 2^25 elements) the same way. Decode columns
// off (PrefillMmaScope's default), so every group reaches the prefill kernels.
TEST(GpuOps, GemvPrefillTensorCoresDefaultMinimumPerLaunch) {
  const test::PrefillMmaScope restore(true, 0);
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q8_0}) {
    // A split dense launch (1024 rows of 4096: 16 blocks), a small matrix, and one the K split leaves whole
    // (32,768 rows of 512, MLA's kv_b: rows of two units; fifty-second session).
    for (const auto& shape :
         {std::pair<int64_t, int64_t>{4096, 1024}, {512, 35}, {512, 32768}, {4096, 16960}, {7168, 576}}) {
      const int64_t ne0 = shape.first, ne1 = shape.second;
      const bool small = ne1 == 35, whole = ne1 == 32768, whole_long = ne1 == 16960, small_long = ne1 == 576;
      const int m = detail::gemv_prefill_mma_min_pairs(type, ne0, ne1);
      const int md = detail::gemv_prefill_mma_min_pairs(type, ne0, ne1, true);  // dense launches
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + std::to_string(ne0) + " x " +
                   std::to_string(ne1) + ", minimum " + std::to_string(m) + ", dense " + std::to_string(md));
      const bool plain = type == GgmlType::Q8_0;  // no A from the quants
      ASSERT_EQ(m, small || small_long ? 2 : plain ? 8 : (type == GgmlType::Q6_K ? 4 : 2));
      ASSERT_EQ(md, small || whole           ? 2
                    : plain                  ? (whole_long ? 8 : 12)
                    : whole_long             ? 3
                    : type == GgmlType::Q6_K ? 4
                                             : 3);
      std::mt19937 rng(123);
      const uint64_t rb = *ggml_row_bytes(type, ne0);
      const ExpertMatrices em = expert_matrices(type, ne0, ne1, 3, rng);
      const int32_t n_x = 2 * std::max(m, md) + 1;
      const auto x = random_floats(static_cast<size_t>(n_x * ne0), rng);
      auto d_x = to_device(x);
      // Each launch three ways: the default rule, the F32 kernels, every group of two or more on the
      // tensor cores.
      const auto three_ways = [&](const auto& launch) {
        std::array<std::vector<float>, 3> y;
        y[0] = launch();
        detail::set_gemv_prefill_mma(false);
        y[1] = launch();
        detail::set_gemv_prefill_mma(true);
        detail::set_gemv_prefill_mma_min_pairs(2);
        y[2] = launch();
        detail::set_gemv_prefill_mma_min_pairs(0);
        return y;
      };
      const auto expect_same = [&](const std::vector<float>& got, const std::vector<float>& want, size_t from,
                                   size_t n, const std::string& what) {
        ASSERT_EQ(0, std::memcmp(got.data() + from, want.data() + from, n * sizeof(float))) << what;
      };
      bool differ = false;  // the F32 kernels and the tensor cores tell apart somewhere
      for (const int32_t n_tok : {md - 1, md}) {
        if (n_tok < 2) continue;
        const auto y = three_ways([&] { return dense_launch(type, ne0, ne1, rb, em.d_mats[0], d_x, n_tok); });
        const size_t n = static_cast<size_t>(n_tok * ne1);
        expect_same(y[0], n_tok >= md ? y[2] : y[1], 0, n,
                    "a dense launch of " + std::to_string(n_tok) + " tokens");
        differ |= std::memcmp(y[1].data(), y[2].data(), n * sizeof(float)) != 0;
        for (int64_t r = 0; r < ne1; r += 97) {
          expect_close_dot(y[0][static_cast<size_t>(r)], em.mats[0].data() + rb * static_cast<uint64_t>(r),
                           type, x.data(), ne0, "dense, token 0");
        }
      }
      EXPECT_TRUE(differ) << "the F32 kernels and the tensor cores gave the same sums";
      if (small || whole || whole_long || small_long) continue;  // dense launches only
      const std::vector<int32_t> sizes = {1, std::max(m - 1, 2), std::max(m, 3)};
      const std::vector<int32_t> grp_off = {0, 1, 1 + sizes[1], 1 + sizes[1] + sizes[2]};
      std::vector<int32_t> x_row;
      for (int32_t j = 0; j < grp_off.back(); ++j) x_row.push_back(j % n_x);
      auto d_rows = to_device(x_row);
      const auto y = three_ways(
          [&] { return expert_groups(type, ne0, ne1, rb, em, grp_off, d_rows, d_x, ne0, 0, 3, sizes[2]); });
      for (int g = 1; g < 3; ++g) {
        const size_t from = static_cast<size_t>(grp_off[g] * ne1), n = static_cast<size_t>(sizes[g] * ne1);
        expect_same(y[0], sizes[g] >= m ? y[2] : y[1], from, n,
                    "group " + std::to_string(g) + " of " + std::to_string(sizes[g]) + " pairs");
      }
      // The single pair: whatever a launch of it alone gives, the same under every minimum.
      expect_same(y[0], y[2], 0, static_cast<size_t>(ne1), "the group of one pair");
    }
  }
}

// The sums of an expert launch on tiled weights (got) equal the same launch's on the GGUF bytes
// (want) bit for bit, each within the exact dot product's bound: group g's matrix at data + g mat,
// pair j's x at x row rows_of[j] (groups by off).
void expect_tiled_equals_gguf(const std::vector<float>& want, const std::vector<float>& got,
                              const std::vector<int32_t>& off, const std::vector<int32_t>& rows_of,
                              GgmlType type, int64_t ne0, int64_t ne1, const std::vector<uint8_t>& data,
                              uint64_t mat, uint64_t rb, const std::vector<float>& x, const char* what) {
  for (size_t g = 0; g + 1 < off.size(); ++g) {
    for (int32_t j = off[g]; j < off[g + 1]; ++j) {
      for (int64_t r = 0; r < ne1; ++r) {
        const size_t i = static_cast<size_t>(j) * static_cast<size_t>(ne1) + static_cast<size_t>(r);
        ASSERT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0)
            << "group " << g << ", pair " << j << ", row " << r << ": GGUF " << want[i] << ", tiled "
            << got[i];
        expect_close_dot(got[i], data.data() + mat * g + rb * static_cast<uint64_t>(r), type,
                         x.data() + rows_of[static_cast<size_t>(j)] * ne0, ne0, what);
      }
    }
  }
}

// An expert launch of groups `off` (offsets from 0) over n random matrices of [ne1][ne0] `type`
// (tiled_matrices, drawn from a generator seeded with `seed`, then n_tok x rows of values up to 2),
// pair j's x row rows_of[j]: its sums on the GGUF bytes (through the table) or on the tiled layout,
// y poisoned with NaN first so rows left unwritten show.
struct TiledExpertLaunch {
  GgmlType type;
  int64_t ne0, ne1;
  std::vector<int32_t> off, rows_of;
  TiledMatrices tm;
  std::vector<float> x;
  DeviceBuffer d_x, d_off, d_rows;
  TiledExpertLaunch(GgmlType t, int64_t cols, int64_t rows, int n, std::vector<int32_t> offsets,
                    std::vector<int32_t> x_rows, int64_t n_tok, unsigned seed)
      : type(t), ne0(cols), ne1(rows), off(std::move(offsets)), rows_of(std::move(x_rows)) {
    std::mt19937 rng(seed);
    tm = tiled_matrices(type, ne0, ne1, n, rng);
    x = random_floats(static_cast<size_t>(n_tok * ne0), rng, 2.0f);
    d_x = to_device(x);
    d_off = to_device(off);
    d_rows = to_device(rows_of);
  }
  int n_groups() const { return static_cast<int>(off.size()) - 1; }
  int max_pairs() const {
    int m = 0;
    for (size_t g = 0; g + 1 < off.size(); ++g) m = std::max(m, off[g + 1] - off[g]);
    return m;
  }
  size_t ny() const { return rows_of.size() * static_cast<size_t>(ne1); }
  // host_sizes: the launch carries the host's copy of the group offsets (GemvBatch::grp_off_host), as the
  // engine's do (the expert K split needs it).
  std::vector<float> sums(bool tiled, bool host_sizes = false) const {
    DeviceBuffer d_y(ny() * sizeof(float), "y");
    MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
    gemv_experts(type, ne0, ne1, tm.rb, (tiled ? tm.d_tab_t : tm.d_tab).as<const uint8_t*>(),
                 d_off.as<int32_t>(), n_groups(), max_pairs(), d_rows.as<int32_t>(), d_x.as<float>(), ne0,
                 d_y.as<float>(), ne1, nullptr, nullptr, 0, false, tiled, host_sizes ? off.data() : nullptr);
    return to_host(d_y, ny());
  }
  // sums(true) against sums(false) (expect_tiled_equals_gguf), given the GGUF side.
  void expect_tiled_equals(const std::vector<float>& gguf, const char* what, bool host_sizes = false) const {
    expect_tiled_equals_gguf(gguf, sums(true, host_sizes), off, rows_of, type, ne0, ne1, tm.data, tm.mat,
                             tm.rb, x, what);
  }
};

// The tensor cores' prefill on tiled weights (the layout the engine holds large routed experts
// in): expert launches of groups of 2, 1, 37 and 3 pairs on 96 rows of 768 elements equal the
// same launches on the GGUF bytes bit for bit, within the exact dot product's bound.
// The tiled prefill tests' launch: pairs of groups of 2, 1, 37 and 3 over 4 matrices of 96 rows of ne0
// elements, the 43 pairs reading x rows of 29 tokens out of order.
TiledExpertLaunch tiled_prefill_launch(GgmlType type, int64_t ne0, unsigned seed) {
  const int64_t n_tok = 29;
  std::vector<int32_t> rows_of;
  for (int j = 0; j < 43; ++j) rows_of.push_back((j * 7 + 2) % static_cast<int32_t>(n_tok));
  return TiledExpertLaunch(type, ne0, 96, 4, {0, 2, 3, 40, 43}, std::move(rows_of), n_tok, seed);
}
constexpr GgmlType kTiledPrefillTypes[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                                           GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::MXFP4};

TEST(GpuOps, GemvPrefillTensorCoresTiledEqualsGguf) {
  const test::PrefillMmaScope restore(true, 2);
  for (const GgmlType type : kTiledPrefillTypes) {
    SCOPED_TRACE(ggml_type_name(type));
    const TiledExpertLaunch l = tiled_prefill_launch(type, 768, 91);
    l.expect_tiled_equals(l.sums(false), "tiled prefill");
  }
}

// The tiled prefill's staging addresses computed anew each unit (set_gemv_prefill_tiled_recompute, the
// kernel's RC), kept across its loop, or as the per-type rule chooses (Q6_K recomputed): for each type with a
// tiled layout, rows of 768 and 2048 elements (3 and 8 units), x staged half a unit and the whole unit, and
// with the expert launches' K split (2 splits on every group: the KS instantiation), the tiled launch equals
// the GGUF layout's bit for bit (within the exact dot product's bound) every way, and the K split was taken.
TEST(GpuOps, GemvPrefillTiledRecomputeEqualsGguf) {
  const test::PrefillMmaScope restore(true, 2);
  for (const GgmlType type : kTiledPrefillTypes) {
    for (const int64_t ne0 : {768, 2048}) {
      SCOPED_TRACE(std::string(ggml_type_name(type)) + ", rows of " + std::to_string(ne0));
      const TiledExpertLaunch l = tiled_prefill_launch(type, ne0, 93);
      for (const int splits : {1, 2}) {
        detail::set_gemv_prefill_expert_k_split(splits);
        detail::set_gemv_prefill_tiled_recompute(false);
        const std::vector<float> gguf = l.sums(false, true);
        for (const int recompute : {0, 1, detail::kGemvPrefillTiledRecomputeRule}) {
          detail::set_gemv_prefill_tiled_recompute(recompute);
          for (const int half : {0, 1}) {
            detail::set_gemv_prefill_mma_half_x(half);
            if (splits > 1 && half == 1) continue;  // (the K split stages the whole unit)
            const uint64_t before = gemv_prefill_expert_k_split_launches();
            const std::string what = std::string("tiled prefill, ") +
                                     (recompute < 0 ? "the rule's"
                                      : recompute   ? "recomputed"
                                                    : "kept") +
                                     " addresses, " + (half ? "half" : "whole") + " unit, " +
                                     std::to_string(splits) + " splits";
            l.expect_tiled_equals(gguf, what.c_str(), true);
            if (splits > 1) {
              EXPECT_GT(gemv_prefill_expert_k_split_launches(), before) << what << ": no K split";
            }
          }
        }
      }
    }
  }
}

// The prefill with A made from the quants (set_gemv_prefill_quant_a, on by default; kernels_gemv.cu Qa<T>)
// for each type it covers (Q4_K, Q5_K, Q2_K, Q3_K, Q6_K, MXFP4): dense launches of 2, 7, 33 and 70
// tokens on 83 rows of 1024 elements (four super-blocks; pair tiles of 32, 32 and 6), x rows off 16-byte
// alignment, the weights 0, 4, 8 and 12 bytes past a 16-byte boundary (the staged words loaded aligned or
// funnel-shifted), with the switch on and off: every sum within the exact dot product's bound both ways,
// and the two ways differ somewhere (their rounding does: on takes its own path), but for MXFP4, whose
// two ways add the same exact products (below) and agree bit for bit. Rows 0-3 at the quants'
// extremes: every quant, scale and minimum bit set (Q4_K and Q5_K: q 15 / 31, sc and m 63; Q2_K: q 3, sc
// and m 15; Q3_K: q 3, sc 63; MXFP4: code 15, -12), Q6_K's quants at 31 with scales -128 ((q - 32) sc =
// -3968, not an f16 integer: its scales stay out of A). x with every 97th element 4096 times the rest and
// every 89th 2^-20 of them.
TEST(GpuOps, GemvPrefillQuantAWithinTheBound) {
  const test::PrefillMmaScope restore(true, 2);
  const int64_t ne0 = 1024, ne1 = 83, n_max = 70, xs = ne0 + 1;
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q6_K, GgmlType::MXFP4}) {
    SCOPED_TRACE(ggml_type_name(type));
    std::mt19937 rng(4848);
    auto data = random_rows(type, ne0, ne1, rng);
    const uint64_t rb = *ggml_row_bytes(type, ne0);
    const uint64_t bs = ggml_traits(type).type_size;
    for (uint64_t r = 0; r < 4; ++r) {
      for (uint64_t o = 0; o < rb; o += bs) {
        uint8_t* blk = data.data() + r * rb + o;
        switch (type) {
          case GgmlType::Q4_K:
          case GgmlType::Q5_K:
            std::memset(blk + 4, 0xFF, bs - 4);  // after d, dmin
            break;
          case GgmlType::Q2_K:
            std::memset(blk, 0xFF, 80);  // before d, dmin
            break;
          case GgmlType::Q3_K:
            std::memset(blk, 0xFF, 108);  // before d
            break;
          case GgmlType::Q6_K:
            std::memset(blk, 0xFF, 192);       // ql, qh
            std::memset(blk + 192, 0x80, 16);  // scales -128
            break;
          default:
            std::memset(blk + 1, 0xFF, bs - 1);  // MXFP4: after e
            break;
        }
      }
    }
    auto x = random_floats(static_cast<size_t>(n_max * xs), rng);
    for (size_t i = 0; i < x.size(); i += 97) x[i] *= 4096.0f;
    for (size_t i = 5; i < x.size(); i += 89) x[i] *= 0x1p-20f;
    auto d_x = to_device(x);
    bool differ = false;
    for (const size_t off : {0, 4, 8, 12}) {
      SCOPED_TRACE("weights " + std::to_string(off) + " bytes past 16-byte alignment");
      std::vector<uint8_t> shifted(off + data.size(), 0);
      std::memcpy(shifted.data() + off, data.data(), data.size());
      auto d_w = to_device(shifted);
      for (const int32_t n_tok : {2, 7, 33, 70}) {
        SCOPED_TRACE(std::to_string(n_tok) + " tokens");
        const auto launch = [&](bool quant_a) {
          detail::set_gemv_prefill_quant_a(quant_a);
          EXPECT_EQ(quant_a, detail::gemv_prefill_quant_a(type));
          const uint64_t before = gemv_prefill_quant_a_launches();
          DeviceBuffer d_y(static_cast<size_t>(n_tok * ne1) * sizeof(float), "y");
          MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
          GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), d_y.as<float>());
          b.x_stride = xs;
          b.w = d_w.bytes_ptr() + off;
          b.n_tok = n_tok;
          gemv(b, nullptr);
          // the launch took the path asked for (one tensor-core prefill launch; none with the switch off)
          EXPECT_EQ(quant_a ? before + 1 : before, gemv_prefill_quant_a_launches());
          return to_host(d_y, static_cast<size_t>(n_tok * ne1));
        };
        const auto on = launch(true), off_sums = launch(false);
        for (int64_t t = 0; t < n_tok; ++t) {
          for (int64_t r = 0; r < ne1; ++r) {
            const float a = on[t * ne1 + r], o = off_sums[t * ne1 + r];
            expect_close_dot(a, data.data() + rb * r, type, x.data() + t * xs, ne0, "A from the quants");
            expect_close_dot(o, data.data() + rb * r, type, x.data() + t * xs, ne0, "W's f16 halves");
            differ = differ || std::memcmp(&a, &o, sizeof a) != 0;
          }
        }
      }
    }
    if (type == GgmlType::MXFP4) {
      // MXFP4's weights are its doubled e2m1 values times a power of two, exact in f16 either way: both
      // paths add the same exact products in the same order, up to powers of two, so they agree bit for
      // bit (the forty-eighth session's run of this test: every sum equal) but where the 64-element x
      // scale leaves an element's halves subnormal where the chunk's kept them normal (an element below
      // ~2^-30 of its group's largest, far under a sum's last bit here).
      EXPECT_FALSE(differ) << "MXFP4: A from the quants changed a sum W's exact halves give";  // (it ran:
      // gemv_prefill_quant_a_launches above)
    } else {
      EXPECT_TRUE(differ) << "the switch changed no sum: the launches took one path both ways";
    }
  }
  EXPECT_FALSE(detail::gemv_prefill_quant_a(GgmlType::Q8_0));
}

// The K split of dense tensor-core prefill launches (set_gemv_prefill_k_split): the block types (the
// tensor cores' prefill covers every one), rows of 2,304 elements (9 super-blocks: uneven splits; 288 for the
// block types of 32, a partial last unit), 83 rows (a last block of 19), 2 to 70 tokens (three pair tiles),
// 2, 3, 8 and 16 splits (16: splits past the last unit, which add nothing) and the launch's own rule, y rows
// wider than ne1: every sum within the GEMV tolerance of the exact one, nothing written between y's rows, the
// split path taken (its counter), and each launch's sums the same when run again (the splits added in order,
// not as the blocks finish); then the rule on a matrix it splits (4096 x 1024).
TEST(GpuOps, GemvPrefillKSplitWithinTheBound) {
  const test::PrefillMmaScope restore(true, 2);
  const int64_t ne1 = 83, n_max = 70;
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q6_K,
                              GgmlType::MXFP4, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0}) {
    SCOPED_TRACE(ggml_type_name(type));
    std::mt19937 rng(4949);
    for (const int64_t ne0 : {int64_t{2304}, int64_t{288}}) {
      if (ne0 % ggml_traits(type).block_size != 0) continue;
      SCOPED_TRACE(std::to_string(ne0) + " elements a row");
      const int64_t xs = ne0 + 3;
      const auto data = random_rows(type, ne0, ne1, rng);
      const uint64_t rb = *ggml_row_bytes(type, ne0);
      const auto x = random_floats(static_cast<size_t>(n_max * xs), rng);
      auto d_x = to_device(x);
      auto d_w = to_device(data);
      for (const int splits : {2, 3, 8, 16, 0}) {
        SCOPED_TRACE(std::to_string(splits) + " splits (0: the rule)");
        detail::set_gemv_prefill_k_split(splits);
        for (const int32_t n_tok : {2, 7, 33, 70}) {
          SCOPED_TRACE(std::to_string(n_tok) + " tokens");
          const int64_t ys = ne1 + 5;  // y rows wider than ne1 (the sums' kernel writes with y_stride)
          const auto launch = [&] {
            DeviceBuffer d_y(static_cast<size_t>(n_tok * ys) * sizeof(float), "y");
            MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
            GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), d_y.as<float>());
            b.x_stride = xs;
            b.y_stride = ys;
            b.w = d_w.bytes_ptr();
            b.n_tok = n_tok;
            gemv(b, nullptr);
            return to_host(d_y, static_cast<size_t>(n_tok * ys));
          };
          const uint64_t before = gemv_prefill_k_split_launches();
          const auto first = launch();
          if (splits != 0) {
            EXPECT_EQ(before + 1, gemv_prefill_k_split_launches()) << "no split launch";
          }
          const auto again = launch();
          ASSERT_EQ(0, std::memcmp(first.data(), again.data(), first.size() * sizeof(float)))
              << "a launch's sums changed when run again";
          for (int64_t t = 0; t < n_tok; ++t) {
            for (int64_t r = 0; r < ne1; ++r) {
              expect_close_dot(first[t * ys + r], data.data() + rb * r, type, x.data() + t * xs, ne0,
                               "K split");
            }
            for (int64_t r = ne1; r < ys; ++r) {  // between rows: untouched (the 0xFF bytes)
              uint32_t bits = 0;
              std::memcpy(&bits, &first[t * ys + r], sizeof bits);
              ASSERT_EQ(bits, 0xFFFFFFFFu) << "token " << t << " wrote past its row, at " << r;
            }
          }
        }
      }
    }
  }
  // The rule (0) on a [rows][ne0] matrix it splits, at each of `tokens`: the split path taken, the sums of
  // every tok_step-th token and row_step-th row within the tolerance.
  detail::set_gemv_prefill_k_split(0);
  const auto rule_splits = [](GgmlType type, int64_t ne0, int64_t rows, unsigned seed,
                              std::initializer_list<int32_t> tokens, int64_t tok_step, int64_t row_step) {
    std::mt19937 rng(seed);
    const auto data = random_rows(type, ne0, rows, rng);
    const uint64_t rb = *ggml_row_bytes(type, ne0);
    const int32_t most = *std::max_element(tokens.begin(), tokens.end());
    const auto x = random_floats(static_cast<size_t>(most * ne0), rng);
    auto d_x = to_device(x);
    auto d_w = to_device(data);
    for (const int32_t n_tok : tokens) {
      DeviceBuffer d_y(static_cast<size_t>(n_tok * rows) * sizeof(float), "y");
      GemvBatch b = rows_batch(type, ne0, rows, rb, d_x.as<float>(), d_y.as<float>());
      b.w = d_w.bytes_ptr();
      b.n_tok = n_tok;
      const uint64_t before = gemv_prefill_k_split_launches();
      gemv(b, nullptr);
      EXPECT_EQ(before + 1, gemv_prefill_k_split_launches()) << n_tok << " tokens: the rule did not split";
      const auto y = to_host(d_y, static_cast<size_t>(n_tok * rows));
      for (int64_t t = 0; t < n_tok; t += tok_step) {
        for (int64_t r = 0; r < rows; r += row_step) {
          expect_close_dot(y[t * rows + r], data.data() + rb * r, type, x.data() + t * ne0, ne0,
                           "K split, the rule");
        }
      }
    }
  };
  // 4096 x 1024 (16 blocks a pair tile, 8 splits of 2 super-blocks), 8 and 40 tokens.
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q8_0}) {
    SCOPED_TRACE(std::string(ggml_type_name(type)) + ", 4096 x 1024, the rule");
    rule_splits(type, 4096, 1024, 4950, {8, 40}, 7, 61);
  }
  // Fifty-fifth session: the rule on rows of 4096 elements or more counts with the split kernel's occupancy
  // and splits MLA's kv_a (576 x 7168, under 2048 x 2048 elements: 9 blocks a pair tile) 14 ways (2 units a
  // split; any device holding 126 blocks at once), above its split minimum (Q4_K 3, Q6_K 4, Q8_0 12 tokens);
  // DeepSeek-V3's 18,432 x 7168 (288 blocks), which the first rule left whole, splits too.
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0}) {
    SCOPED_TRACE(std::string(ggml_type_name(type)) + ", 576 x 7168, the rule");
    const detail::DenseKSplit k = detail::gemv_prefill_dense_k_split(type, 7168, 576, 16);
    const int up = detail::gemv_prefill_dense_k_split(type, 7168, 18432, 16).splits;
    std::printf(
        "%s: the split kernel holds %d blocks a multiprocessor; 576 x 7168 splits %d ways, 18432 x "
        "7168 %d\n",
        std::string(ggml_type_name(type)).c_str(), k.blocks_per_sm, k.splits, up);
    EXPECT_GE(k.blocks_per_sm, 1);
    EXPECT_EQ(k.splits, 14);
    EXPECT_GT(up, 1);
    rule_splits(type, 7168, 576, 5555, {16, 40}, 5, 37);
  }
  EXPECT_THROW(detail::set_gemv_prefill_k_split(-1), Error);
  EXPECT_THROW(detail::set_gemv_prefill_k_split(detail::kGemvPrefillKSplitMax + 1), Error);
}

// Fifty-sixth session: sm_120's per-SM limits emulated (MOEPACK_GPU_LIMITS=sm_120, gpu/sm_limits.h; skipped
// without it). The whole suite is then run under them: every launch choice an RTX 50xx's 100 KiB of shared
// memory an SM makes. Here: the limits are in force where the rules read them. Q8_0's K split block (72.6 KB
// of shared memory, docs/cuda-backend.md, forty-third pass) fits once in 100 KiB (twice, with 1 KiB
// reserved each, would need 147,200 bytes; an H100 holds 2), so the rule counts 1 block a multiprocessor, and
// MLA's kv_a (9 blocks a pair tile) still splits 14 ways on a device of 126 or more SMs.
TEST(SmLimits, EmulatedSm120LimitsAreInForce) {
  const detail::SmLimits* lim = detail::emulated_sm_limits();
  if (lim == nullptr) GTEST_SKIP() << "MOEPACK_GPU_LIMITS is not set";
  ASSERT_STREQ(lim->name, "sm_120");
  const detail::DenseKSplit q8 = detail::gemv_prefill_dense_k_split(GgmlType::Q8_0, 7168, 576, 16);
  EXPECT_EQ(q8.blocks_per_sm, 1);
  if (detail::device_multiprocessors() >= 126) {
    EXPECT_EQ(q8.splits, 14);
  }
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0}) {
    const detail::DenseKSplit k = detail::gemv_prefill_dense_k_split(type, 7168, 18432, 16);
    std::printf(
        "%s under %s: the split kernel holds %d blocks a multiprocessor; 18432 x 7168 at 16 tokens "
        "splits %d ways\n",
        std::string(ggml_type_name(type)).c_str(), lim->name, k.blocks_per_sm, k.splits);
    EXPECT_GE(k.blocks_per_sm, 1);
  }
}

// The blocks a multiprocessor the half-unit rule and the short rows' K split count with
// (detail::gemv_prefill_staging_blocks_per_sm; fifty-seventh session), against the shared memory a block of
// each staging takes (kernels_gemv.cu PrefillUnit::kSmemBytes, worked by hand: x 34,176 bytes whole / 17,728
// half, each of 4 warps 16 staged rows plus 4,736 of A: Q4_K's rows of 176 bytes 64,384 / 47,936; Q8_0's of
// 304, 72,576 / 56,128; Q6_K's of 256, 69,504 / 53,056; MXFP4's of 192 (its tiled unit's 160), 65,408 /
// 48,960; each with 1,024 reserved, rounded to 128). An sm_90 device's 233,472 bytes an SM hold 3 / 4 of
// every one: the constants the rule was measured with. Under sm_120's 102,400 (MOEPACK_GPU_LIMITS=sm_120):
// the whole unit 1 of each; half a unit 2 of Q4_K (49,024) and MXFP4 (50,048), 1 of Q8_0 (57,216) and Q6_K
// (54,144), whose rule is then the whole unit at any size; a real card of 102,400 bytes an SM (an RTX 50xx or
// 40xx) is checked the same way. Another card: those bytes against its own shared memory an SM.
TEST(SmLimits, PrefillStagingBlocksCountTheDevicesSharedMemory) {
  const detail::SmLimits* lim = detail::emulated_sm_limits();
  int major = 0, smem = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0), cudaSuccess);
  struct Want {
    GgmlType type;
    int whole, half;
  };
  std::vector<Want> want;
  if (lim != nullptr || smem == 102400) {  // the emulation, or a card of 100 KiB an SM (sm_120, sm_89)
    if (lim != nullptr) {
      ASSERT_STREQ(lim->name, "sm_120");
    }
    want = {{GgmlType::Q4_K, 1, 2}, {GgmlType::MXFP4, 1, 2}, {GgmlType::Q8_0, 1, 1}, {GgmlType::Q6_K, 1, 1}};
  } else if (major == 9 && smem == 233472) {
    for (const GgmlType t : {GgmlType::Q4_K, GgmlType::MXFP4, GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::Q2_K,
                             GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::Q4_0}) {
      want.push_back({t, 3, 4});
    }
  } else {
    // Another card: the hand-worked bytes above against its own shared memory an SM and reserved bytes a
    // block (smem_blocks_per_sm, the CPU tests' formula), at most the constants 3 / 4.
    int reserved = 0;
    ASSERT_EQ(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0), cudaSuccess);
    const auto count = [&](int64_t bytes, int constant) {
      return static_cast<int>(std::min<int64_t>(constant, detail::smem_blocks_per_sm(smem, reserved, bytes)));
    };
    for (const auto& [t, whole, half] :
         {std::tuple{GgmlType::Q4_K, 64384, 47936}, std::tuple{GgmlType::MXFP4, 65408, 48960},
          std::tuple{GgmlType::Q8_0, 72576, 56128}, std::tuple{GgmlType::Q6_K, 69504, 53056}}) {
      want.push_back({t, count(whole, 3), count(half, 4)});
    }
  }
  const int sms = detail::device_multiprocessors();
  detail::set_gemv_prefill_mma_half_x(detail::kGemvPrefillMmaHalfXRule);  // (the default: the rule)
  for (const Want& w : want) {
    SCOPED_TRACE(ggml_type_name(w.type));
    const detail::PrefillStagingBlocks got = detail::gemv_prefill_staging_blocks_per_sm(w.type);
    EXPECT_EQ(got.whole, w.whole);
    EXPECT_EQ(got.half, w.half);
    // The rule in force: half a unit just past one round of the whole unit's blocks where it holds more.
    const int64_t past = static_cast<int64_t>(w.whole) * sms + 1;
    EXPECT_FALSE(detail::gemv_prefill_mma_half_x(w.type, false, past - 1, sms));
    EXPECT_EQ(detail::gemv_prefill_mma_half_x(w.type, true, past, sms), w.half > w.whole);
  }
  // The short rows' K split (rows under 4,096 elements) counts the whole unit's: Q8_0 under sm_120 1.
  if (lim != nullptr || smem == 102400) {
    EXPECT_EQ(detail::gemv_prefill_dense_k_split(GgmlType::Q8_0, 2048, 576, 16).blocks_per_sm, 1);
  }
  EXPECT_THROW(detail::gemv_prefill_staging_blocks_per_sm(static_cast<GgmlType>(250)), Error);
}

// detail::max_dynamic_smem (fifty-eighth session; the attention kernels opt in through it): a block's opt-in
// maximum less the kernel's static bytes, here a kernel of 256 floats (1,024 bytes) against the device's
// cudaDevAttrMaxSharedMemoryPerBlockOptin (232,448 on sm_90), under MOEPACK_GPU_LIMITS=sm_120 101,376 (an RTX
// 50xx's 99 KiB): 100,352. Under the limits a request of one byte more is refused; without them the largest
// is opted in and a launch with it runs.
TEST(SmLimits, MaxDynamicSmemIsTheOptInLessStaticBytes) {
  const void* kernel = moepack_test_static_smem_kernel();
  int optin = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), cudaSuccess);
  cudaFuncAttributes fa{};
  ASSERT_EQ(cudaFuncGetAttributes(&fa, kernel), cudaSuccess);
  ASSERT_EQ(fa.sharedSizeBytes, 1024u);
  const detail::SmLimits* lim = detail::emulated_sm_limits();
  if (lim != nullptr) {
    ASSERT_STREQ(lim->name, "sm_120");
    EXPECT_EQ(detail::max_dynamic_smem(kernel), size_t{101376 - 1024});
    EXPECT_THROW(detail::allow_dynamic_smem(kernel, detail::max_dynamic_smem(kernel) + 1), Error);
  } else {
    EXPECT_EQ(detail::max_dynamic_smem(kernel), static_cast<size_t>(optin) - 1024);
  }
  if (optin == 232448) {
    EXPECT_EQ(detail::max_dynamic_smem(kernel), lim != nullptr ? size_t{100352} : size_t{231424});
  }
  const size_t bytes = detail::max_dynamic_smem(kernel);
  EXPECT_NO_THROW(detail::allow_dynamic_smem(kernel, bytes));
  float* out = nullptr;
  ASSERT_EQ(cudaMalloc(&out, 256 * sizeof(float)), cudaSuccess);
  void* args[] = {&out};
  EXPECT_EQ(cudaLaunchKernel(kernel, dim3(1), dim3(256), args, bytes, nullptr), cudaSuccess);
  std::vector<float> host(256);
  ASSERT_EQ(cudaMemcpy(host.data(), out, 256 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[0], 255.0f);
  EXPECT_EQ(host[255], 0.0f);
  ASSERT_EQ(cudaFree(out), cudaSuccess);
}

// The K split of expert launches (set_gemv_prefill_expert_k_split; fiftieth session). An expert launch of
// `sizes`' groups over matrices of [ne1][ne0] `type` (GGUF, and tiled where the layout covers the type),
// every group of two or more pairs on the tensor cores, y rows 3 floats wider than ne1: split `splits` ways
// (0: the rule), a launch of all groups takes the split path (expert_split_launches more: 1, or 0), each
// pair's sums are within the exact dot product's bound, the bytes between y rows stay untouched, and each
// group launched alone gives its pairs' sums bit for bit (the split depends on the group alone).
void expect_expert_k_split(GgmlType type, int64_t ne0, int64_t ne1, const std::vector<int32_t>& sizes,
                           int splits, int expert_split_launches, int row_step, unsigned seed) {
  SCOPED_TRACE(std::string(ggml_type_name(type)) + " [" + std::to_string(ne1) + "][" + std::to_string(ne0) +
               "], " + std::to_string(splits) + " splits (0: the rule)");
  detail::set_gemv_prefill_expert_k_split(splits);
  std::mt19937 rng(seed);
  const int n_groups = static_cast<int>(sizes.size());
  std::vector<int32_t> grp_off = {0};
  for (const int32_t n : sizes) grp_off.push_back(grp_off.back() + n);
  const int32_t n_x = 29;
  std::vector<int32_t> x_row;
  for (int32_t j = 0; j < grp_off.back(); ++j) x_row.push_back((j * 7 + 2) % n_x);
  const uint64_t rb = *ggml_row_bytes(type, ne0), mat = rb * static_cast<uint64_t>(ne1);
  const bool tiled_too = tiled_layout_covers(type, ne0, ne1) && gemv_tiled_supported(type, ne0, ne1);
  std::vector<uint8_t> data;
  DeviceBuffer d_w, d_tab, d_tab_t;
  std::optional<TiledMatrices> tm;
  if (tiled_too) {
    tm.emplace(tiled_matrices(type, ne0, ne1, n_groups, rng));
    data = tm->data;
  } else {
    data = random_rows(type, ne0, ne1 * n_groups, rng);
    d_w = to_device(data);
    std::vector<const uint8_t*> tab;
    for (int g = 0; g < n_groups; ++g) tab.push_back(d_w.bytes_ptr() + mat * static_cast<uint64_t>(g));
    d_tab = to_device(tab);
  }
  const auto x = random_floats(static_cast<size_t>(n_x * ne0), rng, 2.0f);
  auto d_x = to_device(x);
  auto d_rows = to_device(x_row);
  const int64_t ys = ne1 + 3;
  // Groups [first, first + n) in one launch: their pairs' y rows.
  const auto launch = [&](const DeviceBuffer& table, bool tiled, int first, int n) {
    std::vector<int32_t> off;
    for (int g = first; g <= first + n; ++g) off.push_back(grp_off[g] - grp_off[first]);
    int32_t most = 0;
    for (int g = 0; g < n; ++g) most = std::max(most, off[g + 1] - off[g]);
    auto d_off = to_device(off);
    DeviceBuffer d_y(static_cast<size_t>(std::max<int32_t>(1, off.back()) * ys) * sizeof(float), "y");
    MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
    gemv_experts(type, ne0, ne1, rb, table.as<const uint8_t*>() + first, d_off.as<int32_t>(), n, most,
                 d_rows.as<int32_t>() + grp_off[first], d_x.as<float>(), ne0, d_y.as<float>(), ys, nullptr, nullptr,
                 0, false, tiled, off.data());
    return to_host(d_y, static_cast<size_t>(off.back() * ys));
  };
  for (const bool tiled : {false, true}) {
    if (tiled && !tiled_too) continue;
    SCOPED_TRACE(tiled ? "tiled" : "GGUF layout");
    const DeviceBuffer& table = tm ? (tiled ? tm->d_tab_t : tm->d_tab) : d_tab;
    const uint64_t before = gemv_prefill_expert_k_split_launches();
    const auto all = launch(table, tiled, 0, n_groups);
    EXPECT_EQ(before + static_cast<uint64_t>(expert_split_launches), gemv_prefill_expert_k_split_launches())
        << "split launches";
    for (int g = 0; g < n_groups; ++g) {
      if (sizes[g] == 0) continue;
      const auto alone = launch(table, tiled, g, 1);
      for (int32_t j = grp_off[g]; j < grp_off[g + 1]; ++j) {
        for (int64_t r = 0; r < ys; ++r) {
          const float a = all[j * ys + r], o = alone[(j - grp_off[g]) * ys + r];
          ASSERT_EQ(0, std::memcmp(&a, &o, sizeof a))
              << "group " << g << " pair " << j << " row " << r << ": " << a << " in one launch, " << o << " alone";
          if (r >= ne1) {
            uint32_t bits = 0;
            std::memcpy(&bits, &a, sizeof bits);
            ASSERT_EQ(bits, 0xFFFFFFFFu) << "pair " << j << " wrote past its row, at " << r;
          } else if (r % row_step == 0 || j == grp_off[g]) {
            expect_close_dot(a, data.data() + mat * static_cast<uint64_t>(g) + rb * static_cast<uint64_t>(r), type,
                             x.data() + x_row[j] * ne0, ne0, "expert K split");
          }
        }
      }
    }
  }
}

TEST(GpuOps, GemvPrefillExpertKSplitWithinTheBoundWhateverTheBatching) {
  const test::PrefillMmaScope restore(true, 2);  // (the expert split back to its default too)
  // Forced splits on every group (2, 3 and 8 over 9 units; a group of 40 pairs: two pair tiles), rows of 9
  // units (2304 elements; the tiled layout's rows a multiple of 16).
  const std::vector<int32_t> sizes = {2, 0, 5, 33, 1, 40, 3, 17, 32};
  unsigned seed = 5050;
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q6_K,
                              GgmlType::MXFP4, GgmlType::Q8_0, GgmlType::Q4_0}) {
    for (const int splits : {2, 3, 8}) expect_expert_k_split(type, 2304, 48, sizes, splits, 1, 1, ++seed);
    // The rule leaves matrices under 2048 x 2048 elements unsplit.
    expect_expert_k_split(type, 2304, 48, sizes, 0, 0, 1, ++seed);
  }
  // The rule on 2048 x 2048 (kPrefillExpertKSplitRule splits for groups of at most 32 pairs; the group of 40
  // unsplit), every 7th row checked against the bound.
  ASSERT_EQ(2, prefill_expert_k_splits_default(2048, 2048));
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::MXFP4, GgmlType::Q8_0}) {
    expect_expert_k_split(type, 2048, 2048, {8, 40, 1, 32, 2}, 0, 1, 7, ++seed);
  }
  EXPECT_THROW(detail::set_gemv_prefill_expert_k_split(-1), Error);
  EXPECT_THROW(detail::set_gemv_prefill_expert_k_split(detail::kGemvPrefillKSplitMax + 1), Error);
}

// The tensor cores' prefill staging x half a unit at a time (set_gemv_prefill_mma_half_x, the default)
// gives the sums of the whole unit's staging bit for bit: expert launches of groups of 0 to 40 pairs
// (one and two pair tiles, counts short of a whole mma) on rows of 768 elements (three units; block
// types of 32 elements also 288: a last unit of one chunk, where the second half has no chunk), and
// dense launches of 13 and 45 tokens; the tiled layout too, for the types it covers.
TEST_P(TypeParity, GemvPrefillTensorCoresHalfXEqualsWholeUnit) {
  const test::PrefillMmaScope restore(true, 2);
  const GgmlType type = GetParam();
  std::mt19937 rng(4711);
  const int64_t ne1 = 35;
  const int32_t n_x = 47;
  const std::vector<int32_t> sizes = {1, 2, 3, 5, 0, 33, 40, 17, 6};
  std::vector<int32_t> grp_off = {0};
  for (const int32_t n : sizes) grp_off.push_back(grp_off.back() + n);
  std::vector<int32_t> x_row;
  for (int32_t j = 0; j < grp_off.back(); ++j) x_row.push_back((j * 11 + 5) % n_x);
  auto d_rows = to_device(x_row);
  const int n_groups = static_cast<int>(sizes.size());
  const int max_pairs = *std::max_element(sizes.begin(), sizes.end());
  std::vector<int64_t> widths = {768};
  if (ggml_traits(type).block_size == 32) widths.push_back(288);
  const auto expect_same = [](const std::vector<float>& half, const std::vector<float>& whole,
                              const std::string& what) {
    ASSERT_EQ(half.size(), whole.size());
    for (size_t i = 0; i < half.size(); ++i) {
      ASSERT_EQ(0, std::memcmp(&half[i], &whole[i], sizeof(float)))
          << what << ", value " << i << ": " << half[i] << " staging half a unit, " << whole[i]
          << " the whole unit";
    }
  };
  // launch() with the half-unit staging and with the whole unit.
  const auto both = [&](const auto& launch, const std::string& what) {
    detail::set_gemv_prefill_mma_half_x(true);
    const std::vector<float> half = launch();
    detail::set_gemv_prefill_mma_half_x(false);
    const std::vector<float> whole = launch();
    expect_same(half, whole, what);
  };
  for (const int64_t ne0 : widths) {
    SCOPED_TRACE(std::to_string(ne0) + " elements a row");
    const uint64_t rb = *ggml_row_bytes(type, ne0);
    const ExpertMatrices em = expert_matrices(type, ne0, ne1, n_groups, rng);
    const auto x = random_floats(static_cast<size_t>(n_x * ne0), rng);
    auto d_x = to_device(x);
    both(
        [&] {
          return expert_groups(type, ne0, ne1, rb, em, grp_off, d_rows, d_x, ne0, 0, n_groups, max_pairs);
        },
        "expert launch");
    for (const int32_t n_tok : {13, 45}) {
      both([&] { return dense_launch(type, ne0, ne1, rb, em.d_mats[0], d_x, n_tok); },
           "dense launch of " + std::to_string(n_tok) + " tokens");
    }
  }
  if (tiled_layout_covers(type, 768, 48) && gemv_tiled_supported(type, 768, 48)) {
    const TiledExpertLaunch l(type, 768, 48, n_groups, grp_off, x_row, n_x, 4712);
    both([&] { return l.sums(true); }, "tiled expert launch");
  }
  EXPECT_THROW(detail::set_gemv_prefill_mma_half_x(2), Error);
  EXPECT_THROW(detail::set_gemv_prefill_mma_half_x(-2), Error);
}

// Decode columns at prefill (set_gemv_prefill_columns, gpu/prefill_columns.h), C = 4: an expert
// launch of groups of 2, 1, 4, 0, 3, 5 and 9 pairs gives every pair of the groups of 1..4 pairs
// the sums of a launch of that pair alone (a decode launch) bit for bit, and the groups of 5 and 9
// those of the same launch without columns (the tensor cores' prefill here, a minimum of 2); a
// launch whose groups all fit (max_pairs 4) the same; a dense launch of 3 tokens each token's
// decode launch, one of 6 tokens the launch without columns. Types the tensor-core decode does not
// cover are unchanged throughout. Every sum within the exact dot product's bound, and the columns
// differ from the prefill kernels somewhere, so the test tells the two apart.
TEST_P(TypeParity, GemvPrefillColumnsAreSinglePairLaunches) {
  const test::PrefillMmaScope restore(true, 2);  // columns back to their default too
  const GgmlType type = GetParam();
  std::mt19937 rng(2026);
  const int64_t ne0 = 512, ne1 = 35;
  const int32_t n_x = 11;
  const int C = 4;
  const uint64_t rb = *ggml_row_bytes(type, ne0);
  const bool columns = detail::gemv_mma_supported(type, ne0);
  const std::vector<int32_t> sizes = {2, 1, 4, 0, 3, 5, 9};
  const int n_groups = static_cast<int>(sizes.size());
  const ExpertMatrices em = expert_matrices(type, ne0, ne1, n_groups, rng);
  const auto x = random_floats(static_cast<size_t>(n_x * ne0), rng);
  auto d_x = to_device(x);
  std::vector<int32_t> grp_off = {0};
  for (const int32_t n : sizes) grp_off.push_back(grp_off.back() + n);
  std::vector<int32_t> x_row;
  for (int32_t j = 0; j < grp_off.back(); ++j) x_row.push_back((j * 5 + 2) % n_x);
  auto d_rows = to_device(x_row);
  const auto experts = [&](int c, int groups, int max_pairs) {
    detail::set_gemv_prefill_columns(c);
    auto y = expert_groups(type, ne0, ne1, rb, em, grp_off, d_rows, d_x, ne0, 0, groups, max_pairs);
    detail::set_gemv_prefill_columns(detail::kGemvPrefillColumnsOff);
    return y;
  };
  // Pair j of group g in a launch of its own.
  const auto single_pair = [&](int g, int32_t j) {
    auto d_off1 = to_device(std::vector<int32_t>{0, 1});
    auto d_row1 = to_device(std::vector<int32_t>{x_row[static_cast<size_t>(j)]});
    DeviceBuffer d_y(static_cast<size_t>(ne1) * sizeof(float), "y");
    MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
    gemv_experts(type, ne0, ne1, rb, em.d_table.as<const uint8_t* const>() + g, d_off1.as<int32_t>(), 1, 1,
                 d_row1.as<int32_t>(), d_x.as<float>(), ne0, d_y.as<float>(), ne1, nullptr);
    return to_host(d_y, static_cast<size_t>(ne1));
  };
  const auto with = experts(C, n_groups, 9), without = experts(detail::kGemvPrefillColumnsOff, n_groups, 9),
             fit = experts(C, 3, 4);
  bool differ = false;
  for (int g = 0; g < n_groups; ++g) {
    const int32_t n = sizes[static_cast<size_t>(g)];
    for (int32_t j = grp_off[g]; j < grp_off[g + 1]; ++j) {
      const std::string what =
          "group " + std::to_string(g) + " of " + std::to_string(n) + " pairs, pair " + std::to_string(j);
      const size_t at = static_cast<size_t>(j * ne1);
      const bool as_columns = columns && n <= C;
      const std::vector<float> alone = as_columns ? single_pair(g, j) : std::vector<float>{};
      for (int64_t r = 0; r < ne1; ++r) {
        const float got = with[at + static_cast<size_t>(r)];
        const float want = as_columns ? alone[static_cast<size_t>(r)] : without[at + static_cast<size_t>(r)];
        ASSERT_EQ(0, std::memcmp(&got, &want, sizeof got))
            << what << ", row " << r << ": " << got << ", want " << want
            << (as_columns ? " (alone)" : " (no columns)");
        if (g < 3) {
          ASSERT_EQ(0, std::memcmp(&got, &fit[at + static_cast<size_t>(r)], sizeof got))
              << what << ", row " << r << " in the launch whose groups all fit";
        }
        differ |= n > 1 && std::memcmp(&got, &without[at + static_cast<size_t>(r)], sizeof got) != 0;
        expect_close_dot(got, em.mats[static_cast<size_t>(g)].data() + rb * static_cast<uint64_t>(r), type,
                         x.data() + x_row[static_cast<size_t>(j)] * ne0, ne0, what.c_str());
      }
    }
  }
  // With a minimum of 8 for the tensor cores' prefill, the group of 5 pairs (between C + 1 and the
  // minimum) takes the F32 kernels and the group of 9 the tensor cores; with 10 (above every group:
  // the launch's F32 kernels for all from C + 1) both take the F32 kernels; each as without columns,
  // the columns' groups as before.
  for (const int m : {8, 10}) {
    detail::set_gemv_prefill_mma_min_pairs(m);
    const auto with_m = experts(C, n_groups, 9),
               without_m = experts(detail::kGemvPrefillColumnsOff, n_groups, 9);
    detail::set_gemv_prefill_mma_min_pairs(2);
    for (int g = 0; g < n_groups; ++g) {
      const int32_t n = sizes[static_cast<size_t>(g)];
      const size_t from = static_cast<size_t>(grp_off[g] * ne1), count = static_cast<size_t>(n * ne1);
      const std::vector<float>& want = columns && n <= C ? with : without_m;
      ASSERT_EQ(0, std::memcmp(with_m.data() + from, want.data() + from, count * sizeof(float)))
          << "minimum " << m << ": group " << g << " of " << n << " pairs";
    }
  }
  // Dense launches of matrix 0: token t alone is a decode launch over x row t.
  const auto dense = [&](int c, int32_t n_tok) {
    detail::set_gemv_prefill_columns(c);
    auto y = dense_launch(type, ne0, ne1, rb, em.d_mats[0], d_x, n_tok);
    detail::set_gemv_prefill_columns(detail::kGemvPrefillColumnsOff);
    return y;
  };
  for (const int32_t n_tok : {3, 6}) {
    const auto y = dense(C, n_tok), y0 = dense(detail::kGemvPrefillColumnsOff, n_tok);
    for (int32_t t = 0; t < n_tok; ++t) {
      const bool as_columns = columns && n_tok <= C;
      std::vector<float> want(y0.begin() + t * ne1, y0.begin() + (t + 1) * ne1);
      if (as_columns) {
        DeviceBuffer d_y(static_cast<size_t>(ne1) * sizeof(float), "y");
        GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>() + t * ne0, d_y.as<float>());
        b.w = em.d_mats[0].bytes_ptr();
        b.n_tok = 1;
        gemv(b, nullptr);
        want = to_host(d_y, static_cast<size_t>(ne1));
      }
      ASSERT_EQ(0, std::memcmp(y.data() + t * ne1, want.data(), static_cast<size_t>(ne1) * sizeof(float)))
          << "a dense launch of " << n_tok << " tokens, token " << t
          << (as_columns ? " (alone)" : " (no columns)");
      differ |=
          std::memcmp(y.data() + t * ne1, y0.data() + t * ne1, static_cast<size_t>(ne1) * sizeof(float)) != 0;
      for (int64_t r = 0; r < ne1; r += 7) {
        expect_close_dot(y[static_cast<size_t>(t * ne1 + r)],
                         em.mats[0].data() + rb * static_cast<uint64_t>(r), type, x.data() + t * ne0, ne0,
                         "dense");
      }
    }
  }
  if (columns) {
    EXPECT_TRUE(differ) << "the columns gave the prefill kernels' sums everywhere";
  }
  EXPECT_THROW(detail::set_gemv_prefill_columns(-1), Error);
  EXPECT_THROW(detail::set_gemv_prefill_columns(detail::kGemvPrefillColumnsMax + 1), Error);
  // 0: each launch's default (gpu/prefill_columns.h, CPU-tested in prefill_columns_test); c >= 1 for all.
  detail::set_gemv_prefill_columns(0);
  EXPECT_EQ(detail::gemv_prefill_columns(type, ne0, ne1, false, false), 1);  // small matrices: none
  // (the types whose prefill takes A from the quants, on by default, have the forty-ninth session's rule)
  const bool light = type == GgmlType::MXFP4 || type == GgmlType::Q3_K;
  EXPECT_EQ(detail::gemv_prefill_columns(type, 4096, 2048, false, false), !detail::gemv_prefill_quant_a(type)
                                                                              ? 12
                                                                          : light ? 2
                                                                                  : 4);
  EXPECT_EQ(detail::gemv_prefill_columns(GgmlType::Q4_K, 4096, 2048, true, false), 4);
  EXPECT_EQ(detail::gemv_prefill_columns(GgmlType::Q6_K, 4096, 2048, true, false), 16);
  EXPECT_EQ(detail::gemv_prefill_columns(GgmlType::Q2_K, 4096, 2048, true, false), 8);
  detail::set_gemv_prefill_quant_a(false);  // the rule before it
  EXPECT_EQ(detail::gemv_prefill_columns(GgmlType::Q4_K, 4096, 2048, true, false), 16);
  EXPECT_EQ(detail::gemv_prefill_columns(GgmlType::Q6_K, 4096, 2048, true, false), 32);
  detail::set_gemv_prefill_quant_a(detail::kGemvPrefillQuantADefault);
  // A dense 4096 x 4096 launch is split along its rows (K split) on the H100 and H200: with A from
  // the quants its columns stop below the tensor cores' dense minimum of 3 tokens (Q6_K 4; fiftieth
  // session, GemvPrefillTensorCoresDefaultMinimumPerLaunch); the F32-prefill types keep 4.
  EXPECT_EQ(detail::gemv_prefill_columns(type, 4096, 4096, false, true),
            !detail::gemv_prefill_quant_a(type) ? 4 : type == GgmlType::Q6_K ? 3 : 2);
  // Dense launches the K split leaves whole (fifty-second session): 2 tokens on rows of 7168, none on rows
  // of 512.
  EXPECT_EQ(detail::gemv_prefill_columns(type, 7168, 18432, false, true), !detail::gemv_prefill_quant_a(type) ? 4 : 2);
  EXPECT_EQ(detail::gemv_prefill_columns(type, 512, 32768, false, true), !detail::gemv_prefill_quant_a(type) ? 4 : 1);
  EXPECT_EQ(detail::gemv_prefill_columns(type, 2048, 1024, false, true), 4);  // under 2048 x 2048: as before
  detail::set_gemv_prefill_columns(7);
  EXPECT_EQ(detail::gemv_prefill_columns(type, ne0, ne1, false, false), 7);
}

// The decode columns' GPU tests' expert launch: Q4_K matrices of 512 x 35, each group its own (one
// buffer, also as a table of pointers), groups of `sizes` pairs, pair j reading x row (5 j + 3) mod 13.
struct ColumnsLaunch {
  static constexpr GgmlType kType = GgmlType::Q4_K;
  static constexpr int64_t kNe0 = 512, kNe1 = 35;
  static constexpr int kNx = 13;
  uint64_t rb = *ggml_row_bytes(kType, kNe0), mat = rb * static_cast<uint64_t>(kNe1);
  int n_groups;
  std::vector<uint8_t> data;
  std::vector<int32_t> grp_off = {0}, x_row;
  std::vector<float> x;
  DeviceBuffer d_w, d_table, d_x, d_off, d_rows;
  ColumnsLaunch(const std::vector<int32_t>& sizes, std::mt19937& rng)
      : n_groups(static_cast<int>(sizes.size())), data(random_rows(kType, kNe0, kNe1 * n_groups, rng)) {
    d_w = to_device(data);
    std::vector<const uint8_t*> table;
    for (int g = 0; g < n_groups; ++g) table.push_back(d_w.bytes_ptr() + mat * static_cast<uint64_t>(g));
    d_table = to_device(table);
    for (const int32_t n : sizes) grp_off.push_back(grp_off.back() + n);
    for (int32_t j = 0; j < grp_off.back(); ++j) x_row.push_back((j * 5 + 3) % kNx);
    x = random_floats(static_cast<size_t>(kNx * kNe0), rng);
    d_x = to_device(x);
    d_off = to_device(grp_off);
    d_rows = to_device(x_row);
  }
  size_t ny() const { return static_cast<size_t>(grp_off.back()) * static_cast<size_t>(kNe1); }
  // The launch's batch writing y: the matrices through the table or as w + g w_gstride.
  GemvBatch batch(float* y, bool with_table, int32_t max_pairs) const {
    GemvBatch b = rows_batch(kType, kNe0, kNe1, rb, d_x.as<float>(), y);
    if (with_table) {
      b.w_table = d_table.as<const uint8_t* const>();
    } else {
      b.w = d_w.bytes_ptr();
      b.w_gstride = mat;
    }
    b.grp_off = d_off.as<int32_t>();
    b.x_row = d_rows.as<int32_t>();
    b.n_groups = n_groups;
    b.max_pairs = max_pairs;
    return b;
  }
  // The launch's sums (y poisoned with NaN first); host: with the host's copy of grp_off. `slots`: the
  // decode columns' slots it must launch (gemv_prefill_column_slots), unless negative.
  std::vector<float> sums(bool with_table, int32_t max_pairs, bool host = false, int64_t slots = -1) const {
    DeviceBuffer d_y(ny() * sizeof(float), "y");
    MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
    GemvBatch b = batch(d_y.as<float>(), with_table, max_pairs);
    if (host) b.grp_off_host = grp_off.data();
    const uint64_t before = gemv_prefill_column_slots();
    gemv(b, nullptr);
    if (slots >= 0) {
      EXPECT_EQ(static_cast<uint64_t>(slots), gemv_prefill_column_slots() - before)
          << (host ? "with" : "without") << " the host copy";
    }
    return to_host(d_y, ny());
  }
  // got against want bit for bit (what: how each was launched).
  static void expect_same(const std::vector<float>& want, const std::vector<float>& got,
                          const std::string& what) {
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(0, std::memcmp(&want[i], &got[i], sizeof(float)))
          << what << ": pair " << i / static_cast<size_t>(kNe1) << ", row " << i % static_cast<size_t>(kNe1)
          << ": " << got[i] << " against " << want[i];
    }
  }
  // A sample of y (every g_step-th group, every j_step-th pair, every 11th row) within the exact dot
  // product's bound.
  void expect_close(const std::vector<float>& y, int g_step, int j_step, const char* what) const {
    for (int g = 0; g < n_groups; g += g_step) {
      for (int32_t j = grp_off[g]; j < grp_off[g + 1]; j += j_step) {
        for (int64_t r = 0; r < kNe1; r += 11) {
          expect_close_dot(y[static_cast<size_t>(j * kNe1 + r)],
                           data.data() + mat * g + rb * static_cast<uint64_t>(r), kType,
                           x.data() + x_row[static_cast<size_t>(j)] * kNe0, kNe0, what);
        }
      }
    }
  }
};

// Decode columns on launches of more slots than one grid holds (65,535): 1,100 groups of 0-3 pairs
// (Q4_K, 512 x 35, each matrix its own) with columns of 64 take two slot launches (1,023 groups
// each at most), with columns of 4 one; both give every pair its decode sums, so the two launches
// agree bit for bit, through a table and as w + g w_gstride, every row written (y poisoned with NaN),
// a sample within the exact dot product's bound. Weights without a table off the 4-byte alignment
// the decode GEMV needs are refused before any slot is launched.
TEST(GpuOps, GemvPrefillColumnsSplitIntoSlotLaunches) {
  const test::PrefillMmaScope restore(true, 0);
  std::vector<int32_t> sizes;
  for (int g = 0; g < 1100; ++g) sizes.push_back((g * 7 + 1) % 4);
  std::mt19937 rng(4242);
  const ColumnsLaunch l(sizes, rng);
  const int32_t max_pairs = detail::kGemvPrefillColumnsMax;  // an upper bound (the groups hold 0-3)
  detail::set_gemv_prefill_columns(4);
  const auto one = l.sums(true, max_pairs);
  detail::set_gemv_prefill_columns(detail::kGemvPrefillColumnsMax);
  for (const bool with_table : {true, false}) {
    ASSERT_NO_FATAL_FAILURE(ColumnsLaunch::expect_same(
        one, l.sums(with_table, max_pairs),
        std::string(with_table ? "table" : "w + g w_gstride") + ", two slot launches against one"));
  }
  l.expect_close(one, 97, 1, "split slots");
  // Misaligned weights (w two bytes in) are refused, not launched.
  detail::set_gemv_prefill_columns(4);
  DeviceBuffer d_y(l.ny() * sizeof(float), "y");
  GemvBatch b = l.batch(d_y.as<float>(), false, 4);
  b.w = l.d_w.bytes_ptr() + 2;
  b.n_groups = 8;
  EXPECT_THROW(gemv(b, nullptr), Error);
  MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());  // nothing was launched on the misaligned weights
}

// The host's copy of the group sizes (GemvBatch::grp_off_host, forty-seventh session): the same sums
// bit for bit as the launch without it, for groups of 0, 1, 2..C and C + 1 pairs and beyond the tensor
// cores' minimum (8: the F32 kernels take 5..7), with the matrices in a table and as w + g w_gstride;
// the columns' slots (gemv_prefill_column_slots) are the compact layout's, C + 1 a group of 1..C pairs,
// where other groups share the launch, n_groups C where every group is that small, none where none is;
// 1,300 groups with C = 64 (1,170 small ones) take two compact launches. Without the copy every launch
// has n_groups C slots. Launches whose copy rules a range out: no group of 5..7 (the F32 kernels' range
// between C + 1 and the minimum), columns off with and without single pairs, and max_pairs far above
// every group (the tensor cores' range and, where all groups are small, everything after the columns).
TEST(GpuOps, GemvPrefillColumnsHostSizes) {
  const test::PrefillMmaScope restore(true, 8);
  std::vector<int32_t> many;
  for (int g = 0; g < 1300; ++g) many.push_back(g % 10 == 0 ? 70 : 1 + g % 3);
  struct Case {
    const char* what;
    int C;  // 1: columns off
    std::vector<int32_t> sizes;
    uint64_t host_slots;
    int32_t max_pairs = 0;  // 0: the largest group
  };
  const std::vector<Case> cases = {
      {"mixed", 4, {0, 1, 4, 5, 7, 9, 2, 0, 12, 3, 6, 20, 4, 1}, 6 * 5},
      {"all small", 4, {1, 2, 3, 4, 2, 1}, 6 * 4},
      {"none small", 4, {5, 9, 0, 6, 20}, 0},
      {"many", 64, many, 1170 * 65},
      {"no F32 range", 4, {1, 2, 9, 0}, 2 * 5},
      {"columns off, singles", 1, {1, 1, 3, 0, 9}, 0},
      {"columns off, no singles", 1, {3, 9, 0, 2}, 0},
      {"loose max_pairs", 4, {1, 3, 6, 2}, 3 * 5, 64},
      {"loose max_pairs, all small", 4, {1, 3, 2, 4}, 4 * 4, 64},
  };
  std::mt19937 rng(4747);
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    const ColumnsLaunch l(k.sizes, rng);
    detail::set_gemv_prefill_columns(k.C);
    const int32_t max_pairs =
        k.max_pairs > 0 ? k.max_pairs : *std::max_element(k.sizes.begin(), k.sizes.end());
    const int64_t plain_slots = k.C >= 2 ? int64_t{l.n_groups} * std::min(k.C, max_pairs) : 0;
    const auto plain = l.sums(true, max_pairs, false, plain_slots);
    for (const bool with_table : {true, false}) {
      ASSERT_NO_FATAL_FAILURE(ColumnsLaunch::expect_same(
          plain, l.sums(with_table, max_pairs, true, static_cast<int64_t>(k.host_slots)),
          std::string(with_table ? "table" : "w + g w_gstride") + ", with the host copy against without"));
    }
    l.expect_close(plain, 1 + l.n_groups / 16, 3, "host sizes");
  }
}

// Decode columns on tiled weights (the layout the engine holds large routed experts in): an expert
// launch of groups of 2, 1, 4, 3 and 6 pairs on 48 rows of 512 elements with C = 4 gives the same
// sums as the launch on the GGUF bytes bit for bit (the columns' pairs each a single pair of the
// tensor cores' tiled launch, the group of 6 on the tensor cores' prefill), within the exact dot
// product's bound; so does the GGUF launch with its matrices as w + g w_gstride (no table), and the
// columns' groups differ from the launch without columns somewhere (so they ran).
TEST(GpuOps, GemvPrefillColumnsTiledEqualsGguf) {
  const test::PrefillMmaScope restore(true, 2, 4);
  const int64_t ne0 = 512, ne1 = 48, n_tok = 9;
  const std::vector<int32_t> off = {0, 2, 3, 7, 10, 16};
  std::vector<int32_t> rows_of;
  for (int j = 0; j < off.back(); ++j) rows_of.push_back((j * 4 + 1) % static_cast<int32_t>(n_tok));
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    SCOPED_TRACE(ggml_type_name(type));
    ASSERT_TRUE(gemv_tiled_supported(type, ne0, ne1));
    const TiledExpertLaunch l(type, ne0, ne1, 5, off, rows_of, n_tok, 93);
    const size_t ny = l.ny();
    const auto gguf = l.sums(false);
    l.expect_tiled_equals(gguf, "tiled columns");
    // The same launch without a table: group g's matrix at d_w + g mat.
    DeviceBuffer d_y(ny * sizeof(float), "y");
    MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
    GemvBatch b = rows_batch(type, ne0, ne1, l.tm.rb, l.d_x.as<float>(), d_y.as<float>());
    b.w = l.tm.d_w.bytes_ptr();
    b.w_gstride = l.tm.mat;
    b.grp_off = l.d_off.as<int32_t>();
    b.x_row = l.d_rows.as<int32_t>();
    b.n_groups = l.n_groups();
    b.max_pairs = l.max_pairs();
    gemv(b, nullptr);
    const auto strided = to_host(d_y, ny);
    ASSERT_EQ(0, std::memcmp(strided.data(), gguf.data(), ny * sizeof(float)))
        << "w + g w_gstride against the table";
    detail::set_gemv_prefill_columns(detail::kGemvPrefillColumnsOff);
    const auto none = l.sums(false);
    detail::set_gemv_prefill_columns(4);
    const size_t small = static_cast<size_t>(off[4]) * static_cast<size_t>(ne1);  // groups of 2, 1, 4, 3
    EXPECT_NE(0, std::memcmp(gguf.data(), none.data(), small * sizeof(float))) << "the columns did not run";
  }
}

// An infinite activation makes its pair's sums non-finite (NaN here, where the exact sum is
// +inf: 0 x inf in the halves' cross products; kernels_gemv.cu split_halves), never a finite
// number, and leaves the other pairs alone: Q8_0 rows of ones (d = 1, every q = 1), token 0's x
// with one +inf among 0.5s, token 1's all 0.5 (sum 128, exact).
TEST(GpuOps, GemvPrefillTensorCoresInfiniteActivationStaysNonFinite) {
  const test::PrefillMmaScope restore(true, 2);
  const int64_t ne0 = 256, ne1 = 16;
  std::vector<uint8_t> rows;
  for (int64_t b = 0; b < ne0 / 32 * ne1; ++b) {
    rows.push_back(0x00);  // f16 1.0 = 0x3C00, little-endian
    rows.push_back(0x3C);
    for (int k = 0; k < 32; ++k) rows.push_back(1);
  }
  const uint64_t rb = *ggml_row_bytes(GgmlType::Q8_0, ne0);
  ASSERT_EQ(rows.size(), rb * ne1);
  auto d_w = to_device(rows);
  std::vector<float> x(static_cast<size_t>(2 * ne0), 0.5f);
  x[37] = std::numeric_limits<float>::infinity();
  auto d_x = to_device(x);
  DeviceBuffer d_y(static_cast<size_t>(2 * ne1) * sizeof(float), "y");
  GemvBatch b = rows_batch(GgmlType::Q8_0, ne0, ne1, rb, d_x.as<float>(), d_y.as<float>());
  b.w = d_w.bytes_ptr();
  b.n_tok = 2;
  gemv(b, nullptr);
  const auto y = to_host(d_y, static_cast<size_t>(2 * ne1));
  for (int64_t r = 0; r < ne1; ++r) {
    EXPECT_FALSE(std::isfinite(y[r])) << "row " << r << ": " << y[r];
    EXPECT_EQ(y[ne1 + r], 128.0f) << "row " << r;
  }
}

struct DefaultVariantAfterwards {
  ~DefaultVariantAfterwards() { detail::set_gemv_mma_variant(0); }
};
// The tiled launch's knobs back to their defaults at scope exit (a failed ASSERT included).
struct TiledKnobsAfterwards {
  ~TiledKnobsAfterwards() {
    detail::set_gemv_tiled_depth(0);
    detail::set_gemv_tiled_split(1);
    detail::set_gemv_tiled_warps(0);
    detail::set_gemv_tiled_runs(0);
  }
};

TEST(GpuOps, GemvMmaDecodeLongRowsAndExtremeActivations) {
  const DefaultVariantAfterwards restore;
  struct Shape {
    int64_t ne0, ne1;
    int experts;  // 0: a single matrix (no groups)
  };
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    std::vector<Shape> shapes = {Shape{14336, 37, 0}, Shape{18432, 21, 0}, Shape{4096, 70, 3},
                                 Shape{11264, 40, 2}, Shape{1280, 200, 2}, Shape{256, 130, 2}};
    if (type == GgmlType::Q3_K || type == GgmlType::Q6_K) {
      shapes.push_back(Shape{1536, 200, 2});  // two super-blocks a ring stage
      shapes.push_back(Shape{512, 130, 2});
      // windowed rings with x's fragments in scratch (Q6_K from 45 super-blocks, Q3_K from 67)
      shapes.push_back(Shape{11520, 40, 2});
      shapes.push_back(Shape{17152, 21, 0});
    }
    for (const Shape shape : shapes) {
      std::mt19937 rng(5);
      const int64_t ne0 = shape.ne0, ne1 = shape.ne1;
      const int n_mat = std::max(shape.experts, 1);
      const uint64_t rb = *ggml_row_bytes(type, ne0);
      ASSERT_TRUE(detail::gemv_mma_supported(type, ne0)) << ggml_type_name(type) << " rows of " << ne0;
      const auto data = random_rows(type, ne0, ne1 * n_mat, rng);  // the matrices back to back
      std::vector<uint8_t> shifted(data.size() + 32);
      std::memcpy(shifted.data() + 4, data.data(), data.size());
      auto d_w = to_device(shifted);
      for (const int variant :
           {1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 24, 26, 27, 28, 0}) {
        // Q3_K: the default's layout, four super-blocks a stage (26), one (27), the other copy
        // width (28); Q6_K: the default's, 27 and 28
        const bool two_aligned = type == GgmlType::Q3_K || type == GgmlType::Q6_K;
        if (two_aligned && variant != 0 && variant != 27 && variant != 28 &&
            (variant != 26 || type != GgmlType::Q3_K)) {
          continue;
        }
        if (!two_aligned && (variant == 27 || variant == 28)) continue;  // the default for them
        // Q5_K: the default's layout, one unit a stage (20), fragments prepared once (24)
        if (type == GgmlType::Q5_K && variant != 0 && variant != 20 && variant != 24) continue;
        detail::set_gemv_mma_variant(variant);
        for (const int off : {0, 4}) {
          const auto& src = off == 0 ? data : shifted;
          MOEPACK_CUDA_CHECK(cudaMemcpy(d_w.bytes_ptr(), src.data(), src.size(), cudaMemcpyHostToDevice));
          for (const float scale : {1.0f, 3.0e5f, 2.0e-7f}) {
            SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + std::to_string(ne1) + "x" +
                         std::to_string(ne0) + " x" + std::to_string(n_mat) + ", variant " +
                         std::to_string(variant) + ", weights at +" + std::to_string(off) +
                         ", activations scaled by " + std::to_string(scale));
            auto x = random_floats(static_cast<size_t>(ne0 * n_mat), rng, scale);
            for (int m = 0; m < n_mat; ++m) {
              x[static_cast<size_t>(m * ne0 + 17)] = 40.0f * scale;  // an outlier channel
              for (int i = 32; i < 48; ++i)
                x[static_cast<size_t>(m * ne0 + i)] = 0.0f;  // an all-zero granule
            }
            auto d_x = to_device(x);
            DeviceBuffer d_y(static_cast<size_t>(ne1 * n_mat) * sizeof(float), "y");
            std::vector<int32_t> off_tab(static_cast<size_t>(n_mat) + 1);
            for (int m = 0; m <= n_mat; ++m) off_tab[static_cast<size_t>(m)] = m;
            auto d_off = to_device(off_tab);
            GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), d_y.as<float>());
            b.w = d_w.bytes_ptr() + off;
            b.w_gstride = rb * static_cast<uint64_t>(ne1);
            b.n_groups = n_mat;
            if (shape.experts > 0) {
              b.grp_off = d_off.as<int32_t>();
              b.max_pairs = 1;
            } else {
              b.n_tok = 1;
            }
            gemv(b, nullptr);
            const auto y = to_host(d_y, static_cast<size_t>(ne1 * n_mat));
            for (int m = 0; m < n_mat; ++m) {
              for (int64_t r = 0; r < ne1; ++r) {
                expect_close_dot(y[static_cast<size_t>(m * ne1 + r)], data.data() + rb * (m * ne1 + r), type,
                                 x.data() + m * ne0, ne0, "decode");
              }
            }
          }
        }
      }
    }
  }
}

// One grouped launch under the current variant: n_mat matrices of ne1 rows back to back in d_w
// from byte w_off, one pair each with the x of matrix m at d_x + m ne0; the rows of every matrix
// in order. x_frag, x_frag_stride: GemvBatch's (x's fragments ready).
std::vector<float> gemv_one_pair_per_group(GgmlType type, int64_t ne0, int64_t ne1, uint64_t rb,
                                           const DeviceBuffer& d_w, const DeviceBuffer& d_x, int n_mat,
                                           const uint8_t* x_frag = nullptr, int64_t x_frag_stride = 0,
                                           uint64_t w_off = 0) {
  std::vector<int32_t> off_tab(static_cast<size_t>(n_mat) + 1);
  for (int m = 0; m <= n_mat; ++m) off_tab[static_cast<size_t>(m)] = m;
  auto d_off = to_device(off_tab);
  DeviceBuffer d_y(static_cast<size_t>(ne1 * n_mat) * sizeof(float), "y");
  GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), d_y.as<float>());
  b.w = d_w.bytes_ptr() + w_off;
  b.w_gstride = rb * static_cast<uint64_t>(ne1);
  b.n_groups = n_mat;
  b.grp_off = d_off.as<int32_t>();
  b.max_pairs = 1;
  b.x_frag = x_frag;
  b.x_frag_stride = x_frag_stride;
  gemv(b, nullptr);
  return to_host(d_y, static_cast<size_t>(ne1 * n_mat));
}

// A NaN activation makes every row of its pair NaN, as on the CPU (NaN times any weight is
// NaN), in every tensor-core layout: the integer paths cut x into integer slices, where a NaN
// is sliced as 0, so they carry it through the super-block's 2^-s (and the F32 min terms of
// Q4_K and Q2_K, where those exist). The other pairs of the launch stay exact.
TEST(GpuOps, GemvMmaNanActivationMakesItsPairNan) {
  const DefaultVariantAfterwards restore;
  const int64_t ne0 = 4096, ne1 = 70;
  const int n_mat = 3;
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    std::mt19937 rng(9);
    const uint64_t rb = *ggml_row_bytes(type, ne0);
    const auto data = random_rows(type, ne0, ne1 * n_mat, rng);
    auto d_w = to_device(data);
    auto x = random_floats(static_cast<size_t>(ne0 * n_mat), rng, 1.0f);
    x[static_cast<size_t>(ne0 + 300)] = std::numeric_limits<float>::quiet_NaN();  // pair 1 only
    auto d_x = to_device(x);
    for (const int variant : {1, 2, 3, 8, 11, 17, 18, 19, 20, 21, 22, 24, 0}) {
      // Q3_K, Q6_K: the default's layout only; Q5_K: it, 20 and 24
      if ((type == GgmlType::Q3_K || type == GgmlType::Q6_K) && variant != 0) continue;
      if (type == GgmlType::Q5_K && variant != 0 && variant != 20 && variant != 24) continue;
      SCOPED_TRACE(std::string(ggml_type_name(type)) + ", variant " + std::to_string(variant));
      detail::set_gemv_mma_variant(variant);
      {  // a single matrix (the launch without groups) with the NaN pair's x
        DeviceBuffer d_y1(static_cast<size_t>(ne1) * sizeof(float), "y");
        GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>() + ne0, d_y1.as<float>());
        b.w = d_w.bytes_ptr() + rb * static_cast<uint64_t>(ne1);
        b.n_tok = 1;
        gemv(b, nullptr);
        const auto y1 = to_host(d_y1, static_cast<size_t>(ne1));
        for (int64_t r = 0; r < ne1; ++r) {
          EXPECT_TRUE(std::isnan(y1[static_cast<size_t>(r)]))
              << "single matrix, row " << r << ": " << y1[static_cast<size_t>(r)];
        }
      }
      const auto y = gemv_one_pair_per_group(type, ne0, ne1, rb, d_w, d_x, n_mat);
      for (int m = 0; m < n_mat; ++m) {
        for (int64_t r = 0; r < ne1; ++r) {
          const float got = y[static_cast<size_t>(m * ne1 + r)];
          if (m == 1) {
            EXPECT_TRUE(std::isnan(got)) << "row " << r << " of the pair with the NaN: " << got;
          } else {
            expect_close_dot(got, data.data() + rb * (m * ne1 + r), type, x.data() + m * ne0, ne0, "decode");
          }
        }
      }
    }
  }
}

// MXFP4 with a block scale near E8M0's top (2^120) in a super-block of x whose largest element is
// 2^20: there x's power-of-two scale 2^-s is 2^15, so the block scale times 2^-s alone is 2^128
// (inf), and lanes whose own sums are 0 (every lane t >= 2 of the ninth pass's column layout,
// variant 22; since the tenth pass those lanes add the odd blocks, block 9 among them) made the
// whole row NaN when the two were multiplied first. Every row is finite and within the tolerance of
// the exact sum (~2^124), in every layout, as a single matrix and in a grouped launch.
TEST(GpuOps, GemvMmaMxfp4LargeScaleBesideLargeXStaysFinite) {
  const DefaultVariantAfterwards restore;
  const GgmlType type = GgmlType::MXFP4;
  const int64_t ne0 = 512, ne1 = 37;
  const int n_mat = 3;
  const uint64_t rb = *ggml_row_bytes(type, ne0);  // 16 blocks of 17 bytes
  std::mt19937 rng(11);
  std::vector<uint8_t> data(rb * static_cast<uint64_t>(ne1 * n_mat));
  for (int64_t r = 0; r < ne1 * n_mat; ++r) {
    for (int blk = 0; blk < 16; ++blk) {
      uint8_t* p = data.data() + rb * static_cast<uint64_t>(r) + 17 * blk;
      p[0] = blk == 9 ? 248 : 127;  // block 9: 2^(248 - 128) with ggml's halved scale
      for (int i = 1; i < 17; ++i) {
        // block 9: codes 0 and 1 only (values 0 and 1), so its row sum stays below F32's range
        p[i] = static_cast<uint8_t>(blk == 9 ? (rng() & 0x11u) : (rng() & 0xFFu));
      }
    }
  }
  std::vector<float> x(static_cast<size_t>(ne0 * n_mat), 0.0f);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int m = 0; m < n_mat; ++m) {
    float* xm = x.data() + m * ne0;
    for (int i = 0; i < 256; ++i) xm[i] = u(rng);  // super-block 0: ordinary x
    xm[256 + 3] = 1048576.0f;                        // super-block 1: block 8's 2^20 ...
    for (int i = 288; i < 320; ++i) xm[i] = 1.0f;    // ... beside block 9's ones
  }
  auto d_w = to_device(data);
  auto d_x = to_device(x);
  for (const int variant : {2, 11, 17, 22, 24, 0}) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    detail::set_gemv_mma_variant(variant);
    {  // a single matrix (the launch without groups)
      DeviceBuffer d_y1(static_cast<size_t>(ne1) * sizeof(float), "y");
      GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), d_y1.as<float>());
      b.w = d_w.bytes_ptr();
      b.n_tok = 1;
      gemv(b, nullptr);
      const auto y1 = to_host(d_y1, static_cast<size_t>(ne1));
      for (int64_t r = 0; r < ne1; ++r) {
        ASSERT_TRUE(std::isfinite(y1[static_cast<size_t>(r)])) << "single matrix, row " << r;
        expect_close_dot(y1[static_cast<size_t>(r)], data.data() + rb * r, type, x.data(), ne0, "single");
      }
    }
    const auto y = gemv_one_pair_per_group(type, ne0, ne1, rb, d_w, d_x, n_mat);
    for (int m = 0; m < n_mat; ++m) {
      for (int64_t r = 0; r < ne1; ++r) {
        const float got = y[static_cast<size_t>(m * ne1 + r)];
        ASSERT_TRUE(std::isfinite(got)) << "expert " << m << ", row " << r;
        expect_close_dot(got, data.data() + rb * (m * ne1 + r), type, x.data() + m * ne0, ne0, "grouped");
      }
    }
  }
}

// The integer path at the edges of its stated bounds (gemv_mma.h, kernels_gemv_mma.cu):
//   - Q3_K: every q = -4 with sc - 32 = -32 (the largest |product|: Q3kColPath's sums reach
//     their bound 2^24 with x = +-1.99) and every q = 3 with sc - 32 = 31, d of both signs;
//   - Q6_K: every q - 32 = -32 with sc = -128 (the largest |product|: each field's sums reach
//     2^24 with x = +-1.99, Q6kColPath's T 2^27) and every q - 32 = 31 with sc = 127, d of both
//     signs; and rows of q - 32 = -31 with sc = -127 (every fourth from row 2) against x of 1.9
//     to 1.99 (matrix 7): T near 2^27 with its odd part past 2^24, where the I2F rounds;
//   - every quant and scale at its largest (Q2_K: q = 3, sc = m = 15; Q4_K: q = 15, 6-bit sc =
//     m = 63; Q5_K: q = 31, sc = m = 63; MXFP4: codes 7 and 15, +-12 doubled) against x whose every slice-0
//     value is +-64 (x = +-1.99: the super-block's largest sums, Q2_K's minimum sums S = +-1024, the 128 hi +
//     lo split at hi = +-8) or +-60 (x = +-1.875: S = +-960, lo = -64 both ways);
//   - MXFP4's E8M0 scale at both ends: e = 0, 1, 2 (2^-128 .. 2^-126, subnormal for e < 2) with
//     ordinary x, and e = 253, 254, 255 (up to 2^127) with codes of value 0 or +-1 and x near
//     2^-30, so the rows stay finite.
// Every row against the exact dot product of core's dequantize_row, in every arithmetic of the
// tensor-core launches, as expert launches and as single matrices.
TEST(GpuOps, GemvMmaAtTheBoundsOfTheIntegerPath) {
  const DefaultVariantAfterwards restore;
  const int64_t ne0 = 512, ne1 = 37;
  // Matrix m's x: 0 +1.99, 1 -1.99, 2 +1.875, 3 -1.875, 4 alternating +-1.99 a sub-block,
  // 5 ordinary (E8M0 0..2), 6 near 2^-30 (E8M0 253..255), 7 from 1.9 to 1.99.
  const int n_mat = 8;
  std::mt19937 rng(13);
  std::vector<float> x(static_cast<size_t>(ne0 * n_mat));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < ne0; ++i) {
    const size_t k = static_cast<size_t>(i);
    x[k] = 1.99f;
    x[static_cast<size_t>(ne0) + k] = -1.99f;
    x[static_cast<size_t>(2 * ne0) + k] = 1.875f;
    x[static_cast<size_t>(3 * ne0) + k] = -1.875f;
    x[static_cast<size_t>(4 * ne0) + k] = (i / 16) % 2 ? -1.99f : 1.99f;
    x[static_cast<size_t>(5 * ne0) + k] = u(rng);
    x[static_cast<size_t>(6 * ne0) + k] = u(rng) * 0x1p-30f;
    x[static_cast<size_t>(7 * ne0) + k] = 1.945f + 0.045f * u(rng);
  }
  auto d_x = to_device(x);
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    const uint64_t rb = *ggml_row_bytes(type, ne0);
    std::vector<uint8_t> data(rb * static_cast<uint64_t>(ne1 * n_mat));
    for (int m = 0; m < n_mat; ++m) {
      for (int64_t r = 0; r < ne1; ++r) {
        uint8_t* row = data.data() + rb * static_cast<uint64_t>(m * ne1 + r);
        const bool neg = r % 2 == 1;  // MXFP4: odd rows take the negative codes
        if (type == GgmlType::Q6_K) {
          for (int sb = 0; sb < ne0 / 256; ++sb) {
            uint8_t* p = row + 210 * sb;
            // even rows: every q - 32 = -32 (ql, qh 0) with sc = -128; odd rows: every q - 32 =
            // 31 (every bit set) with sc = 127; every fourth from row 2: q - 32 = -31 (nibbles 1,
            // qh 0) with sc = -127
            const bool odd_part = r % 4 == 2;
            std::memset(p, odd_part ? 0x11 : neg ? 0xFF : 0x00, 128);
            std::memset(p + 128, neg ? 0xFF : 0x00, 64);
            std::memset(p + 192, odd_part ? 0x81 : neg ? 0x7F : 0x80, 16);
            const uint16_t d = fp32_to_fp16(r % 3 == 0 ? -0.002f : 0.002f);
            std::memcpy(p + 208, &d, 2);
          }
        } else if (type == GgmlType::Q3_K) {
          for (int sb = 0; sb < ne0 / 256; ++sb) {
            uint8_t* p = row + 110 * sb;
            // even rows: every q = -4 (no bit set) with sc - 32 = -32 (6-bit 0), the largest
            // |q (sc - 32)| = 128, so x = +-1.99 brings |4 te + to| to 2^24 (Q3kColPath's bound);
            // odd rows: every q = 3, sc - 32 = 31 (every bit set)
            std::memset(p, neg ? 0xFF : 0x00, 108);
            const uint16_t d = fp32_to_fp16(r % 3 == 0 ? -0.05f : 0.05f);
            std::memcpy(p + 108, &d, 2);
          }
        } else if (type == GgmlType::Q2_K) {
          for (int sb = 0; sb < ne0 / 256; ++sb) {
            uint8_t* p = row + 84 * sb;
            std::memset(p, 0xFF, 80);  // sc = m = 15, every q = 3
            const uint16_t d = fp32_to_fp16(0.05f), dmin = fp32_to_fp16(r % 3 == 0 ? 0.0f : 0.03f);
            std::memcpy(p + 80, &d, 2);
            std::memcpy(p + 82, &dmin, 2);
          }
        } else if (type == GgmlType::Q4_K || type == GgmlType::Q5_K) {
          const int sb_bytes = type == GgmlType::Q4_K ? 144 : 176;
          for (int sb = 0; sb < ne0 / 256; ++sb) {
            uint8_t* p = row + sb_bytes * sb;
            const uint16_t d = fp32_to_fp16(0.01f), dmin = fp32_to_fp16(r % 3 == 0 ? 0.0f : 0.02f);
            std::memcpy(p, &d, 2);
            std::memcpy(p + 2, &dmin, 2);
            // 6-bit sc = m = 63, every q = 15 (Q4_K) or 31 (Q5_K: every fifth bit set too)
            std::memset(p + 4, 0xFF, static_cast<size_t>(sb_bytes - 4));
          }
        } else {
          for (int blk = 0; blk < ne0 / 32; ++blk) {
            uint8_t* p = row + 17 * blk;
            if (m == 5) {
              p[0] = static_cast<uint8_t>((blk + r) % 3);  // 2^-128, 2^-127, 2^-126
              for (int i = 1; i < 17; ++i) p[i] = static_cast<uint8_t>(rng() & 0xFF);
            } else if (m == 6) {
              p[0] = static_cast<uint8_t>(253 + (blk + r) % 3);  // up to 2^127
              for (int i = 1; i < 17; ++i) p[i] = static_cast<uint8_t>(rng() & 0x99u);  // codes 0, 1, 8, 9
            } else {
              p[0] = 127;
              std::memset(p + 1, neg ? 0xFF : 0x77, 16);  // codes 15 (-12) or 7 (+12) throughout
            }
          }
        }
      }
    }
    auto d_w = to_device(data);
    for (const int variant : {3, 8, 11, 17, 20, 22, 24, 0}) {
      // Q3_K, Q6_K: the default's layout only; Q5_K: it, 20 and 24
      if ((type == GgmlType::Q3_K || type == GgmlType::Q6_K) && variant != 0) continue;
      if (type == GgmlType::Q5_K && variant != 0 && variant != 20 && variant != 24) continue;
      SCOPED_TRACE(std::string(ggml_type_name(type)) + ", variant " + std::to_string(variant));
      detail::set_gemv_mma_variant(variant);
      const auto y = gemv_one_pair_per_group(type, ne0, ne1, rb, d_w, d_x, n_mat);
      for (int m = 0; m < n_mat; ++m) {
        for (int64_t r = 0; r < ne1; ++r) {
          const float got = y[static_cast<size_t>(m * ne1 + r)];
          ASSERT_TRUE(std::isfinite(got)) << "matrix " << m << ", row " << r;
          expect_close_dot(got, data.data() + rb * static_cast<uint64_t>(m * ne1 + r), type, x.data() + m * ne0,
                           ne0, ("expert launch, matrix " + std::to_string(m)).c_str());
        }
        // The same matrix alone (the launch without groups: rows split over the block's warps).
        DeviceBuffer d_y1(static_cast<size_t>(ne1) * sizeof(float), "y");
        GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>() + m * ne0, d_y1.as<float>());
        b.w = d_w.bytes_ptr() + rb * static_cast<uint64_t>(m * ne1);
        b.n_tok = 1;
        gemv(b, nullptr);
        const auto y1 = to_host(d_y1, static_cast<size_t>(ne1));
        for (int64_t r = 0; r < ne1; ++r) {
          expect_close_dot(y1[static_cast<size_t>(r)], data.data() + rb * static_cast<uint64_t>(m * ne1 + r), type,
                           x.data() + m * ne0, ne0, ("single matrix " + std::to_string(m)).c_str());
        }
      }
    }
  }
}

// One-hot columns of `type` at rows of each of ne0s (the tests below): x of matrix m one-hot at
// column (67 i + 5) mod ne0 with value value[(round + m) % 3]; every row bit for bit the
// dequantized weight times that value (float(double(w) v)).
void expect_one_hot_columns_bit_for_bit(GgmlType type, std::initializer_list<int64_t> ne0s,
                                        const float (&value)[3]) {
  SCOPED_TRACE(ggml_type_name(type));
  const int64_t ne1 = 37;
  const int n_mat = 4;
  for (const int64_t ne0 : ne0s) {
    ASSERT_TRUE(detail::gemv_mma_supported(type, ne0));
    std::mt19937 rng(31);
    const uint64_t rb = *ggml_row_bytes(type, ne0);
    const auto data = random_rows(type, ne0, ne1 * n_mat, rng);
    std::vector<float> deq(static_cast<size_t>(ne0 * ne1 * n_mat));
    for (int64_t r = 0; r < ne1 * n_mat; ++r)
      dequantize_row(type, data.data() + rb * r, deq.data() + r * ne0, ne0);
    for (const int shift : {0, 4}) {
      std::vector<uint8_t> shifted(data.size() + 8, 0);
      std::memcpy(shifted.data() + shift, data.data(), data.size());
      auto d_w = to_device(shifted);
      int checked = 0;
      for (int round = 0; round < 128; ++round) {
        std::vector<float> x(static_cast<size_t>(ne0 * n_mat), 0.0f);
        std::vector<int64_t> col(static_cast<size_t>(n_mat));
        for (int m = 0; m < n_mat; ++m) {
          // i = 0 .. 511; 67 i + 5 takes every value mod 512 once: every position in a pair
          // (mod 256 twice, mod 768 512 of them)
          const int64_t i = round * n_mat + m;
          col[static_cast<size_t>(m)] = (i * 67 + 5) % ne0;
          x[static_cast<size_t>(m * ne0 + col[static_cast<size_t>(m)])] = value[(round + m) % 3];
        }
        auto d_x = to_device(x);
        const auto y = gemv_one_pair_per_group(type, ne0, ne1, rb, d_w, d_x, n_mat, nullptr, 0, shift);
        // matrix `alone` by itself (the launch without groups: each row split over the block's
        // warps), a different one each round so that its columns fall at every byte of a word
        const int alone = round % n_mat;
        DeviceBuffer d_y1(static_cast<size_t>(ne1) * sizeof(float), "y");
        GemvBatch b1 = rows_batch(type, ne0, ne1, rb, d_x.as<float>() + alone * ne0, d_y1.as<float>());
        b1.w = d_w.bytes_ptr() + shift + rb * static_cast<uint64_t>(alone * ne1);
        b1.n_tok = 1;
        gemv(b1, nullptr);
        const auto y1 = to_host(d_y1, static_cast<size_t>(ne1));
        for (int m = 0; m < n_mat; ++m) {
          const int64_t k = col[static_cast<size_t>(m)];
          const double v = value[(round + m) % 3];
          for (int64_t r = 0; r < ne1; ++r) {
            const float want = static_cast<float>(deq[static_cast<size_t>((m * ne1 + r) * ne0 + k)] * v);
            ASSERT_EQ(want, y[static_cast<size_t>(m * ne1 + r)])
                << "rows of " << ne0 << ", weights +" << shift << ", matrix " << m << ", row " << r
                << ", column " << k;
            if (m == alone) {
              ASSERT_EQ(want, y1[static_cast<size_t>(r)])
                  << "single matrix " << m << ", rows of " << ne0 << ", weights +" << shift << ", row " << r
                  << ", column " << k;
            }
            ++checked;
          }
        }
      }
      EXPECT_EQ(checked, 128 * n_mat * ne1);
    }
  }
}

// Q3_K and Q6_K on the tensor cores (Q3kColPath, Q6kColPath) with x one-hot: at v = 1, x's
// slice 0 is 32 at one element and every other slice value 0, so every integer sum is exact and
// a row's sum is w = d (sc - 32) q (Q3_K) or d sc (q - 32) (Q6_K) of that element, which is what
// core's dequantize_row gives: Q3_K's d (sc - 32) is exact in F32, and so is its product with q
// in [-4, 3]; Q6_K's d sc is exact (19 bits), its product with q - 32 rounded once on both sides
// (the GPU's one FMA of d and the exact integer sc (q - 32)). So every row is the dequantized
// weight bit for bit. At v = 1 + 2^-13 (slices 32, 0, 64, 0) and v = -(1 + 2^-20) (-32, 0, 0,
// -64) the lanes of slices 2 and 3 add that w times v - 1 exactly too (a power of two), so the
// row is w v rounded once: float(double(w) double(v)) (w has at most 24 significant bits, v 21:
// the double product is exact). Rows of 2, 6 and 28 super-blocks (Kimi-K3's down projection has
// 6), 512 columns a shape, one at every position of a super-block pair (the aligned and the 2
// mod 4 super-block of a ring stage, every sub-block, field, hmask or qh bit and nibble), as expert
// launches (4 matrices of 37 rows: a partial tile) and as a single matrix (another each round),
// weights aligned and 4 bytes off; and rows of 1, 3 and 5 super-blocks (the windowed rings: rows alternately
// 4-aligned and 2 mod 4, and so the units of a row; at 5 the ring of 4 stages wraps).
TEST(GpuOps, GemvMmaQ3kQ6kOneHotColumnsAreTheDequantizedWeightsBitForBit) {
  const DefaultVariantAfterwards restore;
  detail::set_gemv_mma_variant(0);
  const float value[3] = {1.0f, 1.0f + 0x1p-13f, -(1.0f + 0x1p-20f)};
  for (const GgmlType type : {GgmlType::Q3_K, GgmlType::Q6_K}) {
    expect_one_hot_columns_bit_for_bit(type, {512, 1536, 7168, 256, 768, 1280}, value);
  }
}

// Q4_K and Q5_K (Q4kColPath, Q5kColPath) likewise, at values that are powers of two (1, -2, 0.5:
// slice 0 is +-32, every other slice value 0): a row's sum is d (sc q v) - dmin (m v), each
// product exact (d sc q has at most 11 + 6 + 5 bits, dmin m 17), their difference rounded
// once where the lanes' partials meet; core's dequantize_row computes d sc q - dmin m with the
// same single rounding, and the power of two scales it exactly. So every row is the dequantized
// weight times v bit for bit, for every position of a super-block (every nibble, qh bit and
// scale). Rows of 2, 16 (Q4_K's and Q5_K's two-unit rings), 5 and 44 super-blocks (one unit a
// stage: at 44 x's fragments do not fit beside the two-unit rings), as expert launches and as a
// single matrix, weights aligned and 4 bytes off; under variant 20 (one unit a stage always) too.
TEST(GpuOps, GemvMmaQ4kQ5kOneHotColumnsAreTheDequantizedWeightsBitForBit) {
  const DefaultVariantAfterwards restore;
  const float value[3] = {1.0f, -2.0f, 0.5f};
  for (const int variant : {0, 20}) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    detail::set_gemv_mma_variant(variant);
    for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K}) {
      expect_one_hot_columns_bit_for_bit(type, {512, 4096, 1280, 11264}, value);
    }
  }
}

// n_mat matrices of ne1 rows (rb bytes each, back to back from `data`), matrix m against x row m
// (ne0 floats from x): every row of `got` bit for bit `want`'s, and within the tolerance of the
// exact dot product.
void expect_same_and_close(const std::vector<float>& want, const std::vector<float>& got, const uint8_t* data,
                           uint64_t rb, GgmlType type, const float* x, int64_t ne0, int64_t ne1, int n_mat,
                           const char* what) {
  for (int m = 0; m < n_mat; ++m) {
    for (int64_t r = 0; r < ne1; ++r) {
      const size_t i = static_cast<size_t>(m * ne1 + r);
      EXPECT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0)
          << what << ", matrix " << m << ", row " << r << ": " << want[i] << " against " << got[i];
      expect_close_dot(got[i], data + rb * i, type, x + m * ne0, ne0, what);
    }
  }
}

// Variant 24 prepares x's fragments once per group in a separate kernel and has every block
// copy them; the fragments are the ones each block prepares itself in the default (one warp a
// super-block either way), so every sum is bit for bit the default's, and within the tolerance
// of the exact dot product. Expert launches of 3 matrices and single matrices, rows of 2, 16,
// 28 and 56 super-blocks (odd and even counts: one- and two-super-block Q2_K rings, MXFP4's
// and Q4_K's two-unit rings from 16 units on; Q6_K's two-unit rings and, at 9, its phased
// rings). Q3_K instead: variant 26's four super-blocks a ring stage (rows of 16 and 28
// super-blocks; a warp adds the same units in the same order) against the default's two, bit for
// bit.
TEST(GpuOps, GemvMmaFragmentsPreparedOnceEqualTheBlocksOwn) {
  const DefaultVariantAfterwards restore;
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    // Q3_K: variant 26 (four super-blocks a ring stage, rows of a multiple of 1024) instead
    const int other = type == GgmlType::Q3_K ? 26 : 24;
    for (const int64_t ne0 : {512, 4096, 7168, 2304}) {
      std::mt19937 rng(17);
      const int64_t ne1 = 70;
      const int n_mat = 3;
      const uint64_t rb = *ggml_row_bytes(type, ne0);
      const auto data = random_rows(type, ne0, ne1 * n_mat, rng);
      auto d_w = to_device(data);
      auto x = random_floats(static_cast<size_t>(ne0 * n_mat), rng, 1.0f);
      x[5] = 300.0f;  // an outlier channel in matrix 0
      auto d_x = to_device(x);
      std::vector<float> y[2], y1[2];
      for (const int variant : {0, other}) {
        detail::set_gemv_mma_variant(variant);
        const int v = variant == 0 ? 0 : 1;
        y[v] = gemv_one_pair_per_group(type, ne0, ne1, rb, d_w, d_x, n_mat);
        DeviceBuffer d_y1(static_cast<size_t>(ne1) * sizeof(float), "y");
        GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>() + ne0, d_y1.as<float>());
        b.w = d_w.bytes_ptr() + rb * static_cast<uint64_t>(ne1);
        b.n_tok = 1;
        gemv(b, nullptr);
        y1[v] = to_host(d_y1, static_cast<size_t>(ne1));
      }
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " rows of " + std::to_string(ne0));
      const std::string what = "variant " + std::to_string(other);
      expect_same_and_close(y[0], y[1], data.data(), rb, type, x.data(), ne0, ne1, n_mat, what.c_str());
      expect_same_and_close(y1[0], y1[1], data.data() + rb * static_cast<uint64_t>(ne1), rb, type,
                            x.data() + ne0, ne0, ne1, 1, (what + ", single matrix").c_str());
    }
  }
}

// Q3_K's and Q6_K's ring layouts (kernels_gemv_mma.cu, launch_two_aligned): one super-block a
// stage for every row (variant 27) and the other copy width (28: 8-byte pieces of the rows'
// windows where the default copies 4-byte pieces) compute the same units in the same order, so
// every sum is bit for bit the default's, and within the tolerance of the exact dot product. A
// single matrix splits each row over the block's 4 warps by stages (k_splits), so under 27 its
// sums are the default's bit for bit only where the splits fall on the same units (rows of 28
// super-blocks in Q3_K's two-unit stages: 6, 8, 6, 8 units against 7 each); elsewhere within the
// tolerance. Rows of 1, 2, 5, 16 and 28 super-blocks (Q6_K's 28 take one unit a stage by
// default), weights aligned and 4 bytes off, 37 rows a matrix (an odd count: with an odd number of
// super-blocks the groups lie 2 mod 4 apart), expert launches of 3 matrices and a single matrix
// (matrix 1: 2 mod 4 there too).
TEST(GpuOps, GemvMmaQ3kQ6kRingLayoutsEqualTheDefaultBitForBit) {
  const DefaultVariantAfterwards restore;
  for (const GgmlType type : {GgmlType::Q3_K, GgmlType::Q6_K}) {
    for (const int64_t ne0 : {256, 512, 1280, 4096, 7168}) {
      for (const int shift : {0, 4}) {
        std::mt19937 rng(19);
        const int64_t ne1 = 37;
        const int n_mat = 3;
        const uint64_t rb = *ggml_row_bytes(type, ne0);
        const auto data = random_rows(type, ne0, ne1 * n_mat, rng);
        std::vector<uint8_t> shifted(data.size() + 8, 0);
        std::memcpy(shifted.data() + shift, data.data(), data.size());
        auto d_w = to_device(shifted);
        auto x = random_floats(static_cast<size_t>(ne0 * n_mat), rng, 1.0f);
        x[7] = 250.0f;  // an outlier channel in matrix 0
        auto d_x = to_device(x);
        std::vector<float> y[3], y1[3];
        const int variants[3] = {0, 27, 28};
        for (int v = 0; v < 3; ++v) {
          detail::set_gemv_mma_variant(variants[v]);
          y[v] = gemv_one_pair_per_group(type, ne0, ne1, rb, d_w, d_x, n_mat, nullptr, 0, shift);
          DeviceBuffer d_y1(static_cast<size_t>(ne1) * sizeof(float), "y");
          GemvBatch b1 = rows_batch(type, ne0, ne1, rb, d_x.as<float>() + ne0, d_y1.as<float>());
          b1.w = d_w.bytes_ptr() + shift + rb * static_cast<uint64_t>(ne1);
          b1.n_tok = 1;
          gemv(b1, nullptr);
          y1[v] = to_host(d_y1, static_cast<size_t>(ne1));
        }
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " rows of " + std::to_string(ne0) + ", weights +" +
                     std::to_string(shift));
        // A single matrix's split of a row into 4 warps' units (k_splits over its stages of
        // `per` units): the same for one and two units a stage?
        const auto split = [](int64_t units, int64_t per) {
          const int64_t stages = units / per, k = stages < 4 ? 1 : 4;
          std::vector<int64_t> at;
          for (int64_t i = 0; i <= k; ++i) at.push_back(stages * i / k * per);
          return at;
        };
        const int64_t units = ne0 / 256;
        const bool default_two = units % 2 == 0 && !(type == GgmlType::Q6_K && ne0 == 7168);
        const bool same_split = !default_two || split(units, 1) == split(units, 2);
        for (int v = 1; v < 3; ++v) {
          const std::string what = "variant " + std::to_string(variants[v]);
          expect_same_and_close(y[0], y[v], data.data(), rb, type, x.data(), ne0, ne1, n_mat, what.c_str());
          const uint8_t* w1 = data.data() + rb * static_cast<uint64_t>(ne1);
          if (variants[v] == 28 || same_split) {
            expect_same_and_close(y1[0], y1[v], w1, rb, type, x.data() + ne0, ne0, ne1, 1,
                                  (what + ", single matrix").c_str());
          } else {
            for (int64_t r = 0; r < ne1; ++r) {
              expect_close_dot(y1[v][static_cast<size_t>(r)], w1 + rb * static_cast<uint64_t>(r), type,
                               x.data() + ne0, ne0, (what + ", single matrix, another split").c_str());
            }
          }
        }
      }
    }
  }
}

void expect_rel(const std::vector<float>& got, const std::vector<float>& want, float rel, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0f, std::fabs(want[i]))) << what << " [" << i << "]";
  }
}

TEST(GpuOps, RmsNormRows) {
  std::mt19937 rng(1);
  const int64_t n = 300, rows = 4;
  const auto x = random_floats(static_cast<size_t>(n * rows), rng, 3.0f);
  const auto w = random_floats(static_cast<size_t>(n), rng);
  auto dx = to_device(x);
  auto dw = to_device(w);
  DeviceBuffer dy(x.size() * sizeof(float), "y");
  rms_norm(dx.as<float>(), n, dw.as<float>(), n, 1e-6f, dy.as<float>(), n, rows, nullptr);
  std::vector<float> want(x.size());
  for (int64_t r = 0; r < rows; ++r)
    moepack::rms_norm(x.data() + r * n, w.data(), n, 1e-6f, want.data() + r * n);
  expect_rel(to_host(dy, x.size()), want, 1e-6f, "rms_norm");
}

// add_rms_norm: the residual add (one or two addends) and the RMSNorm after it in one launch,
// bit for bit the values of add_inplace then rms_norm, and x updated as add_inplace leaves it;
// the values against the CPU's rms_norm of the hand-added rows.
TEST(GpuOps, AddRmsNormEqualsAddThenNorm) {
  std::mt19937 rng(4);
  for (const int64_t n : {int64_t{256}, int64_t{300}, int64_t{7168}}) {
    for (const bool two : {false, true}) {
      for (const bool with_w : {true, false}) {
        SCOPED_TRACE("n " + std::to_string(n) + (two ? ", two addends" : "") + (with_w ? "" : ", no weight"));
        const int64_t rows = 3;
        const auto x = random_floats(static_cast<size_t>(n * rows), rng, 3.0f);
        const auto y = random_floats(x.size(), rng, 2.0f), y2 = random_floats(x.size(), rng, 1.0f);
        const auto w = random_floats(static_cast<size_t>(n), rng);
        auto dy = to_device(y), dy2 = to_device(y2), dw = to_device(w);
        const float* wp = with_w ? dw.as<float>() : nullptr;
        // Separate launches.
        auto dx_a = to_device(x), dy_a = to_device(y);
        DeviceBuffer out_a(x.size() * sizeof(float), "out");
        if (two) add_inplace(dy_a.as<float>(), dy2.as<float>(), n * rows, nullptr);
        add_inplace(dx_a.as<float>(), dy_a.as<float>(), n * rows, nullptr);
        rms_norm(dx_a.as<float>(), n, wp, n, 1e-6f, out_a.as<float>(), n, rows, nullptr);
        // One launch.
        auto dx_b = to_device(x);
        DeviceBuffer out_b(x.size() * sizeof(float), "out");
        add_rms_norm(dx_b.as<float>(), dy.as<float>(), two ? dy2.as<float>() : nullptr, wp, n, 1e-6f,
                     out_b.as<float>(), rows, nullptr);
        const auto xa = to_host(dx_a, x.size()), xb = to_host(dx_b, x.size());
        const auto oa = to_host(out_a, x.size()), ob = to_host(out_b, x.size());
        EXPECT_EQ(std::memcmp(xa.data(), xb.data(), xa.size() * sizeof(float)), 0) << "x after the add";
        EXPECT_EQ(std::memcmp(oa.data(), ob.data(), oa.size() * sizeof(float)), 0) << "the normed rows";
        EXPECT_EQ(to_host(dy, y.size()), y) << "y is not written";
        std::vector<float> added(x.size()), want(x.size());
        for (size_t i = 0; i < x.size(); ++i) added[i] = x[i] + (two ? y[i] + y2[i] : y[i]);
        for (int64_t r = 0; r < rows; ++r) {
          moepack::rms_norm(added.data() + r * n, with_w ? w.data() : nullptr, n, 1e-6f, want.data() + r * n);
        }
        expect_rel(xb, added, 0.0f, "x");
        expect_rel(ob, want, 1e-6f, "add_rms_norm");
      }
    }
  }
}

TEST(GpuOps, SwigluAndAdd) {
  std::mt19937 rng(2);
  const auto g = random_floats(1000, rng, 8.0f), u = random_floats(1000, rng, 2.0f);
  auto dg = to_device(g);
  auto du = to_device(u);
  DeviceBuffer dy(g.size() * sizeof(float), "y");
  swiglu(dg.as<float>(), du.as<float>(), 1000, dy.as<float>(), nullptr);
  std::vector<float> want(1000);
  moepack::swiglu(g.data(), u.data(), 1000, want.data());
  expect_rel(to_host(dy, 1000), want, 1e-6f, "swiglu");
  add_inplace(dy.as<float>(), du.as<float>(), 1000, nullptr);
  for (size_t i = 0; i < 1000; ++i) want[i] += u[i];
  expect_rel(to_host(dy, 1000), want, 1e-6f, "add");
}

// swiglu_clamped_fragments (a down projection's x with its fragments ready): its SwiGLU
// rows are bit for bit swiglu_clamped's (clamped and not), and a grouped GEMV of each row
// through an expert of the down type that copies those fragments (GemvBatch::x_frag) gives bit
// for bit the sums of the same launch preparing its own, within the tolerance of the exact dot
// product; the ready launch gets an x of NaNs, so it must take the fragments. Also the
// refusals: a type without ready fragments, a stride below a row's bytes or not a multiple of
// 16, fragments not 16-byte aligned.
TEST(GpuOps, SwigluFragmentsFeedTheDownGemv) {
  const DefaultVariantAfterwards restore;
  detail::set_gemv_mma_variant(0);
  EXPECT_EQ(gemv_x_fragments_bytes(GgmlType::Q8_0, 2048), 0);
  EXPECT_EQ(gemv_x_fragments_bytes(GgmlType::Q4_K, 300), 0);
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    // Q3_K, Q6_K: also rows of an even number of super-blocks (their two-unit rings)
    std::vector<int64_t> ffs = {256, 2048, 2816};
    if (type == GgmlType::Q3_K || type == GgmlType::Q6_K) ffs.insert(ffs.end(), {512, 3072});
    for (const int64_t ff : ffs) {
      for (const float limit : {0.0f, 7.0f}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " rows of " + std::to_string(ff) + ", limit " +
                     std::to_string(limit));
        std::mt19937 rng(21);
        const int n_mat = 5;  // pairs: one SwiGLU row and one down matrix each
        const int64_t ne1 = 70;
        const int64_t fb = gemv_x_fragments_bytes(type, ff);
        ASSERT_GT(fb, 0);
        ASSERT_EQ(fb % 16, 0);
        const auto g = random_floats(static_cast<size_t>(n_mat * ff), rng, 8.0f);
        const auto u = random_floats(static_cast<size_t>(n_mat * ff), rng, 9.0f);
        auto dg = to_device(g);
        auto du = to_device(u);
        DeviceBuffer want(g.size() * sizeof(float), "swiglu"), got(g.size() * sizeof(float), "swiglu + fragments");
        DeviceBuffer frag(static_cast<size_t>(n_mat * (fb + 32)), "fragments");
        swiglu_clamped(dg.as<float>(), du.as<float>(), n_mat * ff, limit, want.as<float>(), nullptr);
        // Into the gate rows themselves (out aliases gate, as in the engine), on a copy.
        MOEPACK_CUDA_CHECK(cudaMemcpy(got.as<void>(), dg.as<void>(), got.size(), cudaMemcpyDeviceToDevice));
        swiglu_clamped_fragments(got.as<float>(), du.as<float>(), n_mat, ff, limit, got.as<float>(), type,
                                 frag.bytes_ptr(), fb + 32, nullptr);
        const auto w_h = to_host(want, g.size()), g_h = to_host(got, g.size());
        ASSERT_EQ(std::memcmp(w_h.data(), g_h.data(), g.size() * sizeof(float)), 0) << "SwiGLU values differ";
        // The down GEMV of every row, with and without the fragments.
        const uint64_t rb = *ggml_row_bytes(type, ff);
        const auto data = random_rows(type, ff, ne1 * n_mat, rng);
        auto d_w = to_device(data);
        // The ready launch gets an x of NaNs: its sums are finite only if it copies the fragments
        // rather than preparing its own from x.
        auto nan_x = to_device(std::vector<float>(g.size(), std::numeric_limits<float>::quiet_NaN()));
        const std::vector<float> y[2] = {
            gemv_one_pair_per_group(type, ff, ne1, rb, d_w, got, n_mat),
            gemv_one_pair_per_group(type, ff, ne1, rb, d_w, nan_x, n_mat, frag.bytes_ptr(), fb + 32)};
        // Fragments the GEMV cannot copy in 16-byte pieces are refused before any launch.
        EXPECT_THROW(gemv_one_pair_per_group(type, ff, ne1, rb, d_w, got, n_mat, frag.bytes_ptr() + 8, fb + 32),
                     Error);
        EXPECT_THROW(gemv_one_pair_per_group(type, ff, ne1, rb, d_w, got, n_mat, frag.bytes_ptr(), fb + 8), Error);
        expect_same_and_close(y[0], y[1], data.data(), rb, type, g_h.data(), ff, ne1, n_mat, "ready fragments");
      }
    }
  }
  DeviceBuffer small(4096, "fragments");
  EXPECT_THROW(swiglu_clamped_fragments(nullptr, nullptr, 1, 2048, 0.0f, nullptr, GgmlType::Q8_0, small.bytes_ptr(),
                                        4096, nullptr),
               Error);
  EXPECT_THROW(swiglu_clamped_fragments(nullptr, nullptr, 1, 2048, 0.0f, nullptr, GgmlType::Q4_K, small.bytes_ptr(),
                                        gemv_x_fragments_bytes(GgmlType::Q4_K, 2048) - 16, nullptr),
               Error);
}

// SwiGLU as the gate + up launch's epilogue (GemvBatch::swiglu_epilogue, what the engine runs
// at decode) against the launch of all 2 n gate and up matrices then swiglu_clamped: the same
// values bit for bit. The gate and up products themselves are checked against the exact dot
// product here too, so the chain is anchored: gate, up (exact within 1e-6 sum |w x|), then
// gpu/swiglu.cuh's expression (GpuOps.Swiglu* against the CPU). Expert launches of 5 experts
// whose pairs read x rows 2, 0, 1, 2, 1; rows of 1, 8, 11, 16 and 64 super-blocks (one- and
// two-super-block Q2_K rings, Q4_K's and MXFP4's two-unit rings at 16 units, x's fragments in
// scratch for every type at 64); 70, 50, 33, 37 and 16 rows (a partial first or second tile, a
// block's second tile empty); clamped and plain.
TEST(GpuOps, GemvSwigluEpilogueEqualsGateUpThenSwiglu) {
  const DefaultVariantAfterwards restore;
  detail::set_gemv_mma_variant(0);
  struct Shape {
    int64_t ne0, ne1;
  };
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    ASSERT_TRUE(gemv_swiglu_fusable(type, 2048));
    std::vector<Shape> shapes = {Shape{256, 70}, Shape{2048, 33}, Shape{2816, 50}, Shape{4096, 16},
                                 Shape{16384, 37}};
    if (type == GgmlType::Q3_K || type == GgmlType::Q6_K) {  // and their two-unit rings at 2 and 12
      shapes.push_back(Shape{512, 70});
      shapes.push_back(Shape{3072, 50});
    }
    for (const Shape shape : shapes) {
      for (const float limit : {0.0f, 7.0f}) {
        const int64_t ne0 = shape.ne0, ne1 = shape.ne1;
        const int n_exp = 5;
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + std::to_string(ne1) + "x" + std::to_string(ne0) +
                     ", limit " + std::to_string(limit));
        std::mt19937 rng(23);
        const uint64_t rb = *ggml_row_bytes(type, ne0);
        // Gate of expert e is matrix e, its up matrix n_exp + e, back to back.
        const auto data = random_rows(type, ne0, ne1 * 2 * n_exp, rng);
        auto d_w = to_device(data);
        std::vector<const uint8_t*> tab;
        for (int m = 0; m < 2 * n_exp; ++m) tab.push_back(d_w.bytes_ptr() + rb * static_cast<uint64_t>(m * ne1));
        auto d_tab = to_device(tab);
        const auto x = random_floats(static_cast<size_t>(3 * ne0), rng, 2.0f);  // 3 token rows
        auto d_x = to_device(x);
        const std::vector<int32_t> rows_of = {2, 0, 1, 2, 1, 2, 0, 1, 2, 1};  // pair j (and n_exp + j)
        auto d_rows = to_device(rows_of);
        std::vector<int32_t> off_tab(static_cast<size_t>(2 * n_exp) + 1);
        for (int m = 0; m <= 2 * n_exp; ++m) off_tab[static_cast<size_t>(m)] = m;
        auto d_off = to_device(off_tab);
        // Both matrices of every expert in one launch, then SwiGLU, as without the epilogue.
        DeviceBuffer d_gu(static_cast<size_t>(2 * n_exp * ne1) * sizeof(float), "gate, up");
        gemv_experts(type, ne0, ne1, rb, d_tab.as<const uint8_t*>(), d_off.as<int32_t>(), 2 * n_exp, 1,
                     d_rows.as<int32_t>(), d_x.as<float>(), ne0, d_gu.as<float>(), ne1, nullptr);
        const auto gu = to_host(d_gu, static_cast<size_t>(2 * n_exp * ne1));
        for (int m = 0; m < 2 * n_exp; ++m) {
          for (int64_t r = 0; r < ne1; ++r) {
            expect_close_dot(gu[static_cast<size_t>(m * ne1 + r)], data.data() + rb * (m * ne1 + r), type,
                             x.data() + rows_of[static_cast<size_t>(m)] * ne0, ne0, "gate or up");
          }
        }
        DeviceBuffer d_want(static_cast<size_t>(n_exp * ne1) * sizeof(float), "swiglu");
        swiglu_clamped(d_gu.as<float>(), d_gu.as<float>() + n_exp * ne1, n_exp * ne1, limit, d_want.as<float>(),
                       nullptr);
        const auto want = to_host(d_want, static_cast<size_t>(n_exp * ne1));
        // The epilogue's launch, into rows of ne1 + 3 floats (a stride apart from the rows').
        const int64_t ys = ne1 + 3;
        DeviceBuffer d_got(static_cast<size_t>(n_exp * ys) * sizeof(float), "epilogue");
        MOEPACK_CUDA_CHECK(cudaMemset(d_got.as<void>(), 0xFF, d_got.size()));  // NaN: rows left unwritten show
        gemv_experts_swiglu(type, ne0, ne1, rb, d_tab.as<const uint8_t*>(), d_off.as<int32_t>(), n_exp, 1,
                            d_rows.as<int32_t>(), d_x.as<float>(), ne0, limit, d_got.as<float>(), ys, nullptr);
        const auto got = to_host(d_got, static_cast<size_t>(n_exp * ys));
        for (int e = 0; e < n_exp; ++e) {
          for (int64_t r = 0; r < ne1; ++r) {
            const float w = want[static_cast<size_t>(e * ne1 + r)], g = got[static_cast<size_t>(e * ys + r)];
            EXPECT_EQ(std::memcmp(&w, &g, sizeof(float)), 0) << "expert " << e << ", row " << r << ": " << w
                                                             << " against " << g;
          }
          for (int64_t r = ne1; r < ys; ++r) {  // past the rows: untouched
            EXPECT_TRUE(std::isnan(got[static_cast<size_t>(e * ys + r)])) << "expert " << e << ", slot " << r;
          }
        }
      }
    }
  }
}

// Tiled weights (gpu/gemv_tiled.h): repack_tiled's permutation, then the tiled expert launch,
// give every row the default launch's sum on the GGUF bytes bit for bit (the same arithmetic on
// the same words), at every depth, with and without the SwiGLU epilogue; and each sum is within
// kDotRel of the exact dot product of core's dequantize_row, also with two warps a tile (halves
// of each row summed in another order).
TEST(GpuOps, GemvTiledWeightsEqualTheDefaultBitForBit) {
  const DefaultVariantAfterwards restore;
  const TiledKnobsAfterwards restore_tiled;
  detail::set_gemv_mma_variant(0);
  struct Shape {
    int64_t ne0, ne1;
  };
  // Row counts below, between and above the blocks' 64, 128, 192 and 256 rows (8 NW with the
  // epilogue); odd and even counts of units a row (depth 2 takes them in pairs); 32 tiles a
  // matrix for runs of 4 tiles a warp.
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    for (const Shape shape : {Shape{256, 48}, Shape{2048, 64}, Shape{4096, 32}, Shape{7168, 16},
                              Shape{1280, 208}, Shape{3328, 144}, Shape{2048, 512}}) {
      const int64_t ne0 = shape.ne0, ne1 = shape.ne1;
      const int n_exp = 5;
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + std::to_string(ne1) + "x" + std::to_string(ne0));
      ASSERT_TRUE(gemv_tiled_supported(type, ne0, ne1));
      std::mt19937 rng(31);
      // Gate of expert e is matrix e, its up matrix n_exp + e, back to back.
      const TiledMatrices tm = tiled_matrices(type, ne0, ne1, 2 * n_exp, rng);
      const auto& [data, rb, mat, d_w, d_t, d_tab, d_tab_t] = tm;
      const auto x = random_floats(static_cast<size_t>(3 * ne0), rng, 2.0f);  // 3 token rows
      auto d_x = to_device(x);
      const std::vector<int32_t> rows_of = {2, 0, 1, 2, 1, 2, 0, 1, 2, 1};
      auto d_rows = to_device(rows_of);
      std::vector<int32_t> off(static_cast<size_t>(2 * n_exp) + 1);
      for (int m = 0; m <= 2 * n_exp; ++m) off[static_cast<size_t>(m)] = m;
      auto d_off = to_device(off);
      const size_t ny = static_cast<size_t>(2 * n_exp * ne1);
      const auto batch = [&](const DeviceBuffer& table, float* y, int32_t groups) {
        GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), y);
        b.w_table = table.as<const uint8_t* const>();
        b.grp_off = d_off.as<int32_t>();
        b.x_row = d_rows.as<int32_t>();
        b.n_groups = groups;
        b.max_pairs = 1;
        return b;
      };
      DeviceBuffer d_want(ny * sizeof(float), "default"), d_got(ny * sizeof(float), "tiled");
      gemv(batch(d_tab, d_want.as<float>(), 2 * n_exp), nullptr);
      const auto want = to_host(d_want, ny);
      // Gate and up with SwiGLU as the epilogue, the default's on the GGUF bytes.
      DeviceBuffer d_glu_want(static_cast<size_t>(n_exp * ne1) * sizeof(float), "default epilogue"),
          d_glu_got(static_cast<size_t>(n_exp * ne1) * sizeof(float), "tiled epilogue");
      GemvBatch glu = batch(d_tab, d_glu_want.as<float>(), n_exp);
      glu.swiglu_epilogue = true;
      glu.swiglu_limit = 7.0f;
      gemv(glu, nullptr);
      const auto glu_want = to_host(d_glu_want, static_cast<size_t>(n_exp * ne1));
      // The tiled launch of every matrix, into y rows pre-filled with NaN (rows left unwritten show).
      const auto tiled_sums = [&] {
        MOEPACK_CUDA_CHECK(cudaMemset(d_got.as<void>(), 0xFF, d_got.size()));
        GemvBatch b = batch(d_tab_t, d_got.as<float>(), 2 * n_exp);
        b.w_tiled = true;
        gemv(b, nullptr);
        return to_host(d_got, ny);
      };
      // (0, 0): the launch's own choice (tiled_default_depth by type and row length,
      // tiled_block_warps).
      for (const auto& [depth, warps] :
           {std::pair{0, 0}, {1, 4}, {2, 4}, {1, 8}, {2, 8}, {1, 12}, {2, 12}, {1, 16}, {2, 16}}) {
        SCOPED_TRACE("depth " + std::to_string(depth) + ", " + std::to_string(warps) + " warps a block");
        detail::set_gemv_tiled_depth(depth);
        detail::set_gemv_tiled_warps(warps);
        const auto got = tiled_sums();
        for (int m = 0; m < 2 * n_exp; ++m) {
          for (int64_t r = 0; r < ne1; ++r) {
            const size_t i = static_cast<size_t>(m * ne1 + r);
            ASSERT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0)
                << "matrix " << m << ", row " << r << ": default " << want[i] << ", tiled " << got[i];
            if (depth == 1 && warps == 4) {
              expect_close_dot(got[i],
                               data.data() + mat * static_cast<uint64_t>(m) + rb * static_cast<uint64_t>(r),
                               type, x.data() + rows_of[static_cast<size_t>(m)] * ne0, ne0, "tiled");
            }
          }
        }
        MOEPACK_CUDA_CHECK(cudaMemset(d_glu_got.as<void>(), 0xFF, d_glu_got.size()));
        GemvBatch bg = batch(d_tab_t, d_glu_got.as<float>(), n_exp);
        bg.w_tiled = true;
        bg.swiglu_epilogue = true;
        bg.swiglu_limit = 7.0f;
        gemv(bg, nullptr);
        const auto glu_got = to_host(d_glu_got, static_cast<size_t>(n_exp * ne1));
        for (size_t i = 0; i < glu_got.size(); ++i) {
          ASSERT_EQ(std::memcmp(&glu_want[i], &glu_got[i], sizeof(float)), 0)
              << "SwiGLU row " << i << ": default " << glu_want[i] << ", tiled " << glu_got[i];
        }
      }
      // Runs of tiles a warp (plain launches): blocks of 1, 3, 17 and 40 tiles at 8 and 16 warps,
      // so warps with no tile, one, and several in a row; depth 2 on rows of an odd number of
      // units takes depth 1. Every sum bit for bit the default's, every row written.
      for (const int tiles_per_block : {1, 3, 17, 40}) {
        for (const auto& [depth, warps] : {std::pair{1, 8}, {2, 8}, {1, 16}, {2, 16}}) {
          SCOPED_TRACE("runs of " + std::to_string(tiles_per_block) + " tiles a block, depth " +
                       std::to_string(depth) + ", " + std::to_string(warps) + " warps a block");
          detail::set_gemv_tiled_runs(tiles_per_block);
          detail::set_gemv_tiled_depth(depth);
          detail::set_gemv_tiled_warps(warps);
          const auto got = tiled_sums();
          for (size_t i = 0; i < ny; ++i) {
            ASSERT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0)
                << "matrix " << i / static_cast<size_t>(ne1) << ", row " << i % static_cast<size_t>(ne1)
                << ": default " << want[i] << ", tiled runs " << got[i];
          }
        }
      }
      detail::set_gemv_tiled_runs(0);
      detail::set_gemv_tiled_depth(0);
      detail::set_gemv_tiled_warps(0);
      // Two warps a tile: each row's two halves summed in another order, within the same bound.
      detail::set_gemv_tiled_split(2);
      for (const auto& [depth, warps] :
           {std::pair{1, 4}, {1, 8}, {2, 8}, {1, 12}, {2, 12}, {1, 16}, {2, 16}, {0, 0}}) {
        detail::set_gemv_tiled_depth(depth);
        detail::set_gemv_tiled_warps(warps);
        const auto got = tiled_sums();
        const std::string what = "tiled, two warps a tile, depth " + std::to_string(depth) + ", " +
                                 std::to_string(warps) + " warps a block";
        for (int m = 0; m < 2 * n_exp; ++m) {
          for (int64_t r = 0; r < ne1; ++r) {
            expect_close_dot(got[static_cast<size_t>(m * ne1 + r)],
                             data.data() + mat * static_cast<uint64_t>(m) + rb * static_cast<uint64_t>(r),
                             type, x.data() + rows_of[static_cast<size_t>(m)] * ne0, ne0, what.c_str());
          }
        }
      }
      detail::set_gemv_tiled_split(1);
      detail::set_gemv_tiled_depth(0);
      detail::set_gemv_tiled_warps(0);
    }
  }
}

// The tiled launch as the engine issues it at decode on a matrix large enough for the launch's
// own choice to take runs of tiles a warp: 8 experts of 7168 x 2048 (DeepSeek-V3 / Kimi-K2's
// down), tiled_runs 0 (on the H200's 132 SMs: 28 tiles a block). Every sum bit for bit the
// default's on the GGUF bytes, every row written, and the same with the matrices found as w +
// g w_gstride instead of a table (the one-tile kernel and the runs kernel both read either).
TEST(GpuOps, GemvTiledLaunchesOwnChoiceOfRunsAndMatricesWithoutATable) {
  const DefaultVariantAfterwards restore;
  const TiledKnobsAfterwards restore_tiled;
  detail::set_gemv_mma_variant(0);
  int dev = 0, sms = 0;
  MOEPACK_CUDA_CHECK(cudaGetDevice(&dev));
  MOEPACK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int64_t ne0 = 2048, ne1 = 7168;
  const int n_exp = 8;
  // The choice this device's launch makes (gemv_launch_cap.h): on 132 SMs 28 tiles a block. On a
  // device where it takes none, runs are still forced below.
  const int64_t chosen = detail::tiled_runs_tiles(ne1, n_exp, sms);
  std::printf("[ runs ] %d SMs: the launch's own choice is %lld tiles a block\n", sms,
              static_cast<long long>(chosen));
  if (sms == 132) {
    EXPECT_EQ(chosen, 28);
  }
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    SCOPED_TRACE(ggml_type_name(type));
    ASSERT_TRUE(gemv_tiled_supported(type, ne0, ne1));
    std::mt19937 rng(73);
    const TiledMatrices tm = tiled_matrices(type, ne0, ne1, n_exp, rng);
    const auto& [data, rb, mat, d_w, d_t, d_tab, d_tab_t] = tm;
    const auto x = random_floats(static_cast<size_t>(2 * ne0), rng, 2.0f);  // 2 token rows
    auto d_x = to_device(x);
    const std::vector<int32_t> rows_of = {1, 0, 0, 1, 1, 0, 1, 0};
    auto d_rows = to_device(rows_of);
    std::vector<int32_t> off(static_cast<size_t>(n_exp) + 1);
    for (int m = 0; m <= n_exp; ++m) off[static_cast<size_t>(m)] = m;
    auto d_off = to_device(off);
    const size_t ny = static_cast<size_t>(n_exp * ne1);
    const auto launch = [&](const DeviceBuffer* table, const DeviceBuffer& w, bool tiled) {
      DeviceBuffer d_y(ny * sizeof(float), "y");
      MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));  // NaN: rows left unwritten show
      GemvBatch b = rows_batch(type, ne0, ne1, rb, d_x.as<float>(), d_y.as<float>());
      if (table) {
        b.w_table = table->as<const uint8_t* const>();
      } else {
        b.w = w.bytes_ptr();
        b.w_gstride = mat;
      }
      b.grp_off = d_off.as<int32_t>();
      b.x_row = d_rows.as<int32_t>();
      b.n_groups = n_exp;
      b.max_pairs = 1;
      b.w_tiled = tiled;
      gemv(b, nullptr);
      return to_host(d_y, ny);
    };
    const auto want = launch(&d_tab, d_w, false);
    for (size_t i = 0; i < ny; ++i)
      ASSERT_FALSE(std::isnan(want[i])) << "default row " << i << " left unwritten";
    // A sample of rows against the exact dot product (the default's own bound).
    for (int m = 0; m < n_exp; ++m) {
      for (const int64_t r : {int64_t{0}, int64_t{4111}, ne1 - 1}) {
        expect_close_dot(want[static_cast<size_t>(m * ne1 + r)],
                         data.data() + mat * static_cast<uint64_t>(m) + rb * static_cast<uint64_t>(r), type,
                         x.data() + rows_of[static_cast<size_t>(m)] * ne0, ne0, "default");
      }
    }
    struct Case {
      int runs;  // set_gemv_tiled_runs
      bool table;
      const char* what;
    };
    for (const Case c :
         {Case{0, true, "the launch's own choice, table"},
          Case{0, false, "the launch's own choice, w + g w_gstride"},
          Case{-1, false, "one tile a warp, w + g w_gstride"},
          Case{30, false, "runs of 30 forced (448 tiles a matrix: a partial last block), w + g w_gstride"}}) {
      SCOPED_TRACE(c.what);
      detail::set_gemv_tiled_runs(c.runs);
      const auto got = launch(c.table ? &d_tab_t : nullptr, d_t, true);
      for (size_t i = 0; i < ny; ++i) {
        ASSERT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0)
            << "matrix " << i / static_cast<size_t>(ne1) << ", row " << i % static_cast<size_t>(ne1)
            << ": default " << want[i] << ", tiled " << got[i];
      }
    }
    detail::set_gemv_tiled_runs(0);
  }
}

// The knobs of the one-launch expert FFN back to their defaults at scope exit.
struct FfnKnobsAfterwards {
  ~FfnKnobsAfterwards() {
    detail::set_gemv_ffn_warps(0);
    detail::set_gemv_ffn_fusion(false);
  }
};

// A token's expert FFN in one launch (gemv_experts_ffn, tiled layout) against the two launches
// the default makes on the GGUF bytes (gate + up with the SwiGLU epilogue, then down): gate +
// up's SwiGLU rows and down's rows bit for bit, at the launch's own block size and at 8, 12 and
// 16 warps, for Q4_K, Q2_K and MXFP4 at DeepSeek-V4-Flash's top-6 shape and two smaller ones (one
// of rows of 3 units: down's runs one chunk ahead); pairs reading two token rows, and a group of
// no pair (both skip it: its rows stay unwritten). The default's down rows are checked against
// the exact dot product of its own SwiGLU rows; the counters are 0 again after every launch;
// and a CUDA graph of the launch, replayed twice, gives the same rows.
TEST(GpuOps, GemvExpertsFfnInOneLaunchEqualsTheTwoLaunchesBitForBit) {
  const DefaultVariantAfterwards restore;
  const TiledKnobsAfterwards restore_tiled;
  const FfnKnobsAfterwards restore_ffn;
  detail::set_gemv_mma_variant(0);
  detail::set_gemv_ffn_fusion(true);  // off by default in the engine
  struct Shape {
    int64_t hidden, ff;
    int k;
    float limit;
  };
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    for (const Shape sh :
         {Shape{4096, 2048, 6, 0.0f}, Shape{1536, 768, 8, 7.0f}, Shape{2048, 1536, 9, 0.0f}}) {
      const int64_t hidden = sh.hidden, ff = sh.ff;
      const int K = sh.k;
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " hidden " + std::to_string(hidden) + ", ff " +
                   std::to_string(ff) + ", " + std::to_string(K) + " experts");
      ASSERT_TRUE(gemv_experts_ffn_fusable(type, hidden, ff));
      std::mt19937 rng(91);
      const TiledMatrices gu = tiled_matrices(type, hidden, ff, 2 * K, rng);  // gates, then ups
      const TiledMatrices dn = tiled_matrices(type, ff, hidden, K, rng);
      const auto x = random_floats(static_cast<size_t>(2 * hidden), rng, 2.0f);  // 2 token rows
      auto d_x = to_device(x);
      // Group 1 has no pair: K - 1 pairs, pair j of group g >= 2 is j = g - 1.
      std::vector<int32_t> off(static_cast<size_t>(K) + 1), rows_of(static_cast<size_t>(K) - 1);
      for (int g = 0; g <= K; ++g) off[static_cast<size_t>(g)] = g < 2 ? g : g - 1;
      for (int j = 0; j < K - 1; ++j) rows_of[static_cast<size_t>(j)] = (j * 5 + 1) % 2;
      auto d_off = to_device(off);
      auto d_rows = to_device(rows_of);
      const size_t nh = static_cast<size_t>(K) * static_cast<size_t>(ff),
                   ny = static_cast<size_t>(K) * static_cast<size_t>(hidden);
      DeviceBuffer d_h(nh * sizeof(float), "SwiGLU rows"), d_y(ny * sizeof(float), "down rows");
      DeviceBuffer d_sync(static_cast<size_t>(gemv_ffn_sync_ints(K)) * sizeof(int32_t), "counters");
      MOEPACK_CUDA_CHECK(cudaMemset(d_sync.as<void>(), 0, d_sync.size()));
      const auto batches = [&](bool tiled) {
        GemvBatch a = rows_batch(type, hidden, ff, gu.rb, d_x.as<float>(), d_h.as<float>());
        a.w_table = (tiled ? gu.d_tab_t : gu.d_tab).as<const uint8_t* const>();
        a.grp_off = d_off.as<int32_t>();
        a.x_row = d_rows.as<int32_t>();
        a.n_groups = K;
        a.max_pairs = 1;
        a.swiglu_epilogue = true;
        a.swiglu_limit = sh.limit;
        a.w_tiled = tiled;
        GemvBatch d = rows_batch(type, ff, hidden, dn.rb, d_h.as<float>(), d_y.as<float>());
        d.w_table = (tiled ? dn.d_tab_t : dn.d_tab).as<const uint8_t* const>();
        d.grp_off = d_off.as<int32_t>();
        d.n_groups = K;
        d.max_pairs = 1;
        d.w_tiled = tiled;
        return std::pair{a, d};
      };
      const auto nan_fill = [&] {  // NaN: rows left unwritten show
        MOEPACK_CUDA_CHECK(cudaMemset(d_h.as<void>(), 0xFF, d_h.size()));
        MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
      };
      nan_fill();
      {
        const auto [a, d] = batches(false);
        gemv(a, nullptr);
        gemv(d, nullptr);
      }
      const auto want_h = to_host(d_h, nh), want_y = to_host(d_y, ny);
      for (int j = 0; j < K - 1; ++j) {
        for (int64_t r = 0; r < hidden; ++r) {
          ASSERT_FALSE(std::isnan(want_y[static_cast<size_t>(j * hidden + r)]))
              << "pair " << j << ", row " << r;
        }
        for (const int64_t r : {int64_t{0}, hidden / 2 + 3, hidden - 1}) {
          const int g = j == 0 ? 0 : j + 1;
          expect_close_dot(
              want_y[static_cast<size_t>(j * hidden + r)],
              dn.data.data() + dn.mat * static_cast<uint64_t>(g) + dn.rb * static_cast<uint64_t>(r), type,
              want_h.data() + static_cast<size_t>(j) * static_cast<size_t>(ff), ff, "default down");
        }
      }
      const auto expect_same = [&](const char* what) {
        const auto h = to_host(d_h, nh), y = to_host(d_y, ny);
        for (size_t i = 0; i < nh; ++i) {
          ASSERT_EQ(std::memcmp(&want_h[i], &h[i], sizeof(float)), 0)
              << what << ": SwiGLU pair " << i / static_cast<size_t>(ff) << ", row "
              << i % static_cast<size_t>(ff) << ": " << want_h[i] << " against " << h[i];
        }
        for (size_t i = 0; i < ny; ++i) {
          ASSERT_EQ(std::memcmp(&want_y[i], &y[i], sizeof(float)), 0)
              << what << ": down pair " << i / static_cast<size_t>(hidden) << ", row "
              << i % static_cast<size_t>(hidden) << ": " << want_y[i] << " against " << y[i];
        }
        std::vector<int32_t> sync(static_cast<size_t>(gemv_ffn_sync_ints(K)));
        MOEPACK_CUDA_CHECK(cudaMemcpy(sync.data(), d_sync.as<void>(), d_sync.size(), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < sync.size(); ++i)
          ASSERT_EQ(sync[i], 0) << what << ": counter " << i << " left";
      };
      const auto [a, d] = batches(true);
      const uint64_t launches = gemv_ffn_launches();
      for (const int warps : {0, 8, 12, 16}) {
        SCOPED_TRACE("warps " + std::to_string(warps));
        detail::set_gemv_ffn_warps(warps);
        for (int rep = 0; rep < 2; ++rep) {  // twice: the counters serve the next launch
          nan_fill();
          gemv_experts_ffn(a, d, d_sync.as<int32_t>(), nullptr);
          MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
          expect_same("one launch");
        }
      }
      EXPECT_EQ(gemv_ffn_launches() - launches, 8u);
      detail::set_gemv_ffn_warps(0);
      // Three launches back to back with nothing between them (each a programmatic dependent of
      // the one before: the counters' zeros and the rows of one launch against the next one's
      // start), down's matrices found as w + g w_gstride instead of a table.
      {
        GemvBatch d2 = d;
        d2.w_table = nullptr;
        d2.w = dn.d_t.bytes_ptr();
        d2.w_gstride = dn.mat;
        nan_fill();
        for (int rep = 0; rep < 3; ++rep) gemv_experts_ffn(a, d2, d_sync.as<int32_t>(), nullptr);
        MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
        expect_same("back to back, w + g w_gstride");
      }
      Stream stream;
      cudaGraph_t g = nullptr;
      MOEPACK_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
      gemv_experts_ffn(a, d, d_sync.as<int32_t>(), stream.get());
      MOEPACK_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &g));
      cudaGraphExec_t exec = nullptr;
      MOEPACK_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
      MOEPACK_CUDA_CHECK(cudaGraphDestroy(g));
      for (int rep = 0; rep < 2; ++rep) {
        nan_fill();
        MOEPACK_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
        MOEPACK_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        expect_same("graph replay");
      }
      MOEPACK_CUDA_CHECK(cudaGraphExecDestroy(exec));
    }
  }
}

// gemv_experts_ffn refuses, naming the field, every batch pair it cannot run as one launch.
TEST(GpuOps, GemvExpertsFfnRefusesWhatItCannotFuse) {
  const DefaultVariantAfterwards restore;
  const FfnKnobsAfterwards restore_ffn;
  detail::set_gemv_mma_variant(0);
  detail::set_gemv_ffn_fusion(true);
  const GgmlType type = GgmlType::Q4_K;
  const int64_t hidden = 512, ff = 256;
  const int K = 2;
  std::mt19937 rng(5);
  const TiledMatrices gu = tiled_matrices(type, hidden, ff, 2 * K, rng);
  const TiledMatrices dn = tiled_matrices(type, ff, hidden, K, rng);
  auto d_x = to_device(random_floats(static_cast<size_t>(hidden), rng));
  auto d_off = to_device(std::vector<int32_t>{0, 1, 2});
  DeviceBuffer d_h(static_cast<size_t>(K * ff) * sizeof(float), "h"),
      d_y(static_cast<size_t>(K * hidden) * 4, "y");
  DeviceBuffer d_sync(static_cast<size_t>(gemv_ffn_sync_ints(K)) * sizeof(int32_t), "counters");
  MOEPACK_CUDA_CHECK(cudaMemset(d_sync.as<void>(), 0, d_sync.size()));
  GemvBatch a = rows_batch(type, hidden, ff, gu.rb, d_x.as<float>(), d_h.as<float>());
  a.w_table = gu.d_tab_t.as<const uint8_t* const>();
  a.grp_off = d_off.as<int32_t>();
  a.n_groups = K;
  a.max_pairs = 1;
  a.swiglu_epilogue = true;
  a.w_tiled = true;
  GemvBatch d = rows_batch(type, ff, hidden, dn.rb, d_h.as<float>(), d_y.as<float>());
  d.w_table = dn.d_tab_t.as<const uint8_t* const>();
  d.grp_off = d_off.as<int32_t>();
  d.n_groups = K;
  d.max_pairs = 1;
  d.w_tiled = true;
  gemv_experts_ffn(a, d, d_sync.as<int32_t>(), nullptr);  // as it should be: runs
  MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
  const auto refused = [&](GemvBatch ba, GemvBatch bd, int32_t* sync, const char* field) {
    try {
      gemv_experts_ffn(ba, bd, sync, nullptr);
      ADD_FAILURE() << "accepted a batch pair without " << field;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  GemvBatch b = d;
  b.type = GgmlType::Q2_K;
  refused(a, b, d_sync.as<int32_t>(), "type");
  b = d;
  b.x = d_x.as<float>();
  refused(a, b, d_sync.as<int32_t>(), "gate_up's y");
  b = d;
  b.w_tiled = false;
  refused(a, b, d_sync.as<int32_t>(), "w_tiled");
  b = d;
  b.max_pairs = 2;
  refused(a, b, d_sync.as<int32_t>(), "max_pairs");
  b = d;
  b.swiglu_epilogue = true;
  refused(a, b, d_sync.as<int32_t>(), "swiglu_epilogue");
  b = d;
  b.tables_from_kernel = true;
  refused(a, b, d_sync.as<int32_t>(), "tables_from_kernel");
  b = d;
  b.grp_off = nullptr;
  refused(a, b, d_sync.as<int32_t>(), "grp_off");
  b = d;
  b.n_groups = K - 1;
  refused(a, b, d_sync.as<int32_t>(), "n_groups");
  b = d;
  b.ne1 = hidden - 256;
  refused(a, b, d_sync.as<int32_t>(), "down must be");
  b = d;
  b.y_stride = hidden - 1;
  refused(a, b, d_sync.as<int32_t>(), "y_stride");
  GemvBatch c = a;
  c.swiglu_epilogue = false;
  refused(c, d, d_sync.as<int32_t>(), "swiglu_epilogue");
  c = a;
  c.w_table = nullptr;
  c.w = gu.d_t.bytes_ptr();
  refused(c, d, d_sync.as<int32_t>(), "w_table");
  refused(a, d, nullptr, "sync");
  refused(a, d, reinterpret_cast<int32_t*>(d_sync.bytes_ptr() + 2), "sync");
  // Q5_K's, Q6_K's and Q3_K's tiled layouts (twenty-ninth pass; switched on in this binary) have no
  // one-launch FFN: not fusable with the switch on, and such a pair is refused, never launched.
  for (const GgmlType q5 : {GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K}) {
    SCOPED_TRACE(ggml_type_name(q5));
    const TiledMatrices gu5 = tiled_matrices(q5, hidden, ff, 2 * K, rng);
    const TiledMatrices dn5 = tiled_matrices(q5, ff, hidden, K, rng);
    ASSERT_TRUE(gemv_tiled_supported(q5, hidden, ff) && gemv_tiled_supported(q5, ff, hidden));
    ASSERT_TRUE(gemv_swiglu_fusable(q5, hidden, ff, true));
    EXPECT_FALSE(gemv_experts_ffn_fusable(q5, hidden, ff));
    GemvBatch a5 = a, d5 = d;
    a5.type = d5.type = q5;
    a5.row_bytes = gu5.rb;
    a5.w_table = gu5.d_tab_t.as<const uint8_t* const>();
    d5.row_bytes = dn5.rb;
    d5.w_table = dn5.d_tab_t.as<const uint8_t* const>();
    refused(a5, d5, d_sync.as<int32_t>(), "gemv_experts_ffn_fusable");
  }
  detail::set_gemv_ffn_fusion(false);
  EXPECT_FALSE(gemv_experts_ffn_fusable(type, hidden, ff));
  refused(a, d, d_sync.as<int32_t>(), "gemv_experts_ffn_fusable");
}

// Tiled weights in every launch the engine makes: groups of several pairs (prefill, the F32
// kernels gathering each row's units from the tiles) beside groups of one (the tensor cores'
// tiled launch), and everything with the tensor cores switched off (the F32 decode and prefill
// kernels): each sum bit for bit the same launch's on the GGUF bytes, and within the exact dot
// product's bound. Rows of 4,352 elements (17 units) end in a partial tile of the F32 kernels.
TEST(GpuOps, GemvTiledPrefillAndF32KernelsEqualTheGgufLayout) {
  const DefaultVariantAfterwards restore;
  const TiledKnobsAfterwards restore_tiled;
  struct Shape {
    int64_t ne0, ne1;
  };
  for (const GgmlType type :
       {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    for (const Shape shape : {Shape{256, 48}, Shape{2048, 32}, Shape{4352, 16}}) {
      const int64_t ne0 = shape.ne0, ne1 = shape.ne1;
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + std::to_string(ne1) + "x" + std::to_string(ne0));
      std::mt19937 rng(57);
      const int n_exp = 4, n_tok = 5;
      const TiledMatrices tm = tiled_matrices(type, ne0, ne1, n_exp, rng);
      const auto& [data, rb, mat, d_w, d_t, d_tab, d_tab_t] = tm;
      const auto x = random_floats(static_cast<size_t>(n_tok * ne0), rng, 2.0f);
      auto d_x = to_device(x);
      // Groups of 1, 3, 9 and 2 pairs (9: two tiles of the F32 prefill kernel's 8 pairs).
      const std::vector<int32_t> off = {0, 1, 4, 13, 15};
      std::vector<int32_t> rows_of(15);
      for (size_t j = 0; j < rows_of.size(); ++j) rows_of[j] = static_cast<int32_t>((j * 3 + 1) % n_tok);
      auto d_off = to_device(off);
      auto d_rows = to_device(rows_of);
      const size_t ny = rows_of.size() * static_cast<size_t>(ne1);
      const auto sums = [&](const DeviceBuffer& table, bool tiled, int32_t max_pairs) {
        DeviceBuffer d_y(ny * sizeof(float), "y");
        MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));  // NaN: rows left unwritten show
        gemv_experts(type, ne0, ne1, rb, table.as<const uint8_t*>(), d_off.as<int32_t>(), n_exp, max_pairs,
                     d_rows.as<int32_t>(), d_x.as<float>(), ne0, d_y.as<float>(), ne1, nullptr, nullptr, 0,
                     false, tiled);
        return to_host(d_y, ny);
      };
      // Variant 0 with the tiled launch's own choice, then with runs of 1 and 3 tiles a block
      // forced (the runs kernel's blocks of groups of several pairs return at once; the F32
      // kernels take those groups); variant -1: the tensor cores off.
      for (const auto& [variant, runs] : {std::pair{0, 0}, {0, 1}, {0, 3}, {-1, 0}}) {
        SCOPED_TRACE("variant " + std::to_string(variant) + ", tiled runs " + std::to_string(runs));
        detail::set_gemv_mma_variant(variant);
        detail::set_gemv_tiled_runs(runs);
        const auto want = sums(d_tab, false, 9);
        const auto got = sums(d_tab_t, true, 9);
        detail::set_gemv_tiled_runs(0);
        expect_tiled_equals_gguf(want, got, off, rows_of, type, ne0, ne1, data, mat, rb, x, "tiled");
        if (::testing::Test::HasFatalFailure()) return;
        if (variant == -1) {
          // Decode with the tensor cores off: the F32 decode kernel (two rows a warp) on the
          // tiles, a group of one pair each (the first pairs of the groups above).
          const std::vector<int32_t> off1 = {0, 1, 2, 3, 4};
          auto d_off1 = to_device(off1);
          const auto decode = [&](const DeviceBuffer& table, bool tiled) {
            DeviceBuffer d_y(static_cast<size_t>(n_exp * ne1) * sizeof(float), "y");
            MOEPACK_CUDA_CHECK(cudaMemset(d_y.as<void>(), 0xFF, d_y.size()));
            gemv_experts(type, ne0, ne1, rb, table.as<const uint8_t*>(), d_off1.as<int32_t>(), n_exp, 1,
                         d_rows.as<int32_t>(), d_x.as<float>(), ne0, d_y.as<float>(), ne1, nullptr, nullptr,
                         0, false, tiled);
            return to_host(d_y, static_cast<size_t>(n_exp * ne1));
          };
          const auto dw = decode(d_tab, false), dg = decode(d_tab_t, true);
          for (size_t i = 0; i < dw.size(); ++i) {
            ASSERT_EQ(std::memcmp(&dw[i], &dg[i], sizeof(float)), 0)
                << "decode row " << i << ": GGUF " << dw[i] << ", tiled " << dg[i];
          }
        }
      }
    }
  }
}

// What the tiled layout does not cover is refused with the shape named, never computed.
TEST(GpuOps, GemvTiledRefusesWhatItDoesNotCover) {
  const DefaultVariantAfterwards restore;
  detail::set_gemv_mma_variant(0);
  EXPECT_FALSE(gemv_tiled_supported(GgmlType::Q2_K, 2048, 40));  // rows not whole tiles
  EXPECT_FALSE(gemv_tiled_supported(GgmlType::Q8_0, 2048, 64));
  EXPECT_FALSE(gemv_tiled_supported(GgmlType::MXFP4, 1 << 20, 64));  // x's fragments beyond shared memory
  const uint64_t rb = *ggml_row_bytes(GgmlType::Q2_K, 2048);
  DeviceBuffer d_w(rb * 64, "w"), d_t(rb * 64, "tiled");
  EXPECT_THROW(repack_tiled(GgmlType::Q2_K, 2048, 40, rb, d_w.bytes_ptr(), d_t.bytes_ptr(), 1, nullptr),
               Error);
  EXPECT_THROW(repack_tiled(GgmlType::Q2_K, 2048, 64, rb + 1, d_w.bytes_ptr(), d_t.bytes_ptr(), 1, nullptr),
               Error);
  EXPECT_THROW(repack_tiled(GgmlType::Q2_K, 2048, 64, rb, d_w.bytes_ptr(), d_w.bytes_ptr(), 1, nullptr),
               Error);
  const std::vector<const uint8_t*> tab = {d_t.bytes_ptr()};
  auto d_tab = to_device(tab);
  const std::vector<int32_t> off = {0, 2};
  auto d_off = to_device(off);
  DeviceBuffer d_x(2 * 2048 * sizeof(float), "x"), d_y(2 * 64 * sizeof(float), "y");
  // One group (its matrix at table[0], offsets `groups`) of tiled weights, one pair.
  const auto tiled_group = [](GgmlType type, int64_t ne0, int64_t ne1, uint64_t row_bytes,
                              const DeviceBuffer& table, const DeviceBuffer& groups, DeviceBuffer& x,
                              DeviceBuffer& y) {
    GemvBatch g = rows_batch(type, ne0, ne1, row_bytes, x.as<float>(), y.as<float>());
    g.w_table = table.as<const uint8_t* const>();
    g.grp_off = groups.as<int32_t>();
    g.n_groups = 1;
    g.max_pairs = 1;
    g.w_tiled = true;
    return g;
  };
  GemvBatch b = tiled_group(GgmlType::Q2_K, 2048, 64, rb, d_tab, d_off, d_x, d_y);
  b.ne1 = 40;
  EXPECT_THROW(gemv(b, nullptr), Error);
  b.ne1 = 64;
  b.row_bytes = rb + 16;  // not the type's
  EXPECT_THROW(gemv(b, nullptr), Error);
  b.row_bytes = rb;
  b.x_frag = d_t.bytes_ptr();  // ready fragments
  b.x_frag_stride = 4096 * 16;
  EXPECT_THROW(gemv(b, nullptr), Error);
  b.x_frag = nullptr;
  b.x_frag_stride = 0;
  b.type = GgmlType::Q8_0;  // a type without the layout
  b.row_bytes = *ggml_row_bytes(GgmlType::Q8_0, 2048);
  EXPECT_THROW(gemv(b, nullptr), Error);
  b.type = GgmlType::Q2_K;
  b.row_bytes = rb;
  detail::set_gemv_mma_variant(-1);  // the tensor cores switched off: the F32 kernels take it,
  EXPECT_FALSE(gemv_tiled_supported(GgmlType::Q2_K, 2048, 64));
  EXPECT_FALSE(gemv_swiglu_fusable(GgmlType::Q2_K, 2048, 64, true));
  b.swiglu_epilogue = true;  // but not with the epilogue
  EXPECT_THROW(gemv(b, nullptr), Error);
  b.swiglu_epilogue = false;
  detail::set_gemv_mma_variant(0);
  EXPECT_TRUE(gemv_swiglu_fusable(GgmlType::Q2_K, 2048, 64, true));
  EXPECT_FALSE(gemv_swiglu_fusable(GgmlType::Q2_K, 2048, 40, true));
  // Rows whose x fragments exceed a block's shared memory (Q4_K beyond 23,808 elements): the
  // tiled tensor-core launch cannot take them, so the engine leaves them untiled (tiled_expert),
  // and the epilogue on them is refused by check_tiled itself.
  const uint64_t rb_long = *ggml_row_bytes(GgmlType::Q4_K, 24064);
  EXPECT_FALSE(gemv_tiled_supported(GgmlType::Q4_K, 24064, 16));
  EXPECT_FALSE(tiled_expert("on", GgmlType::Q4_K, 24064, 16, rb_long, 0));
  DeviceBuffer d_long(rb_long * 32, "long rows");
  const std::vector<const uint8_t*> tab_long = {d_long.bytes_ptr(), d_long.bytes_ptr() + rb_long * 16};
  auto d_tab_long = to_device(tab_long);
  const std::vector<int32_t> off1 = {0, 1};
  auto d_off1 = to_device(off1);
  DeviceBuffer d_x_long(24064 * sizeof(float), "x"), d_y_long(16 * sizeof(float), "y");
  GemvBatch bl = tiled_group(GgmlType::Q4_K, 24064, 16, rb_long, d_tab_long, d_off1, d_x_long, d_y_long);
  bl.swiglu_epilogue = true;
  ASSERT_TRUE(gemv_swiglu_fusable(GgmlType::Q4_K, 24064));  // so check_tiled is what refuses
  EXPECT_THROW(gemv(bl, nullptr), Error);
  // The engine's choice (gpu/tiled_experts.h): "auto" takes matrices of at least 2048 x 2048
  // elements (Kimi-K3's 7168 x 1536 Q2_K gate too), "on" any covered one, "off" none; never a
  // misaligned one or another type; an unknown mode throws.
  const uint64_t rb_q2 = *ggml_row_bytes(GgmlType::Q2_K, 7168), rb_q4 = *ggml_row_bytes(GgmlType::Q4_K, 256);
  EXPECT_TRUE(tiled_expert("auto", GgmlType::Q2_K, 7168, 1536, rb_q2, 4096));
  EXPECT_FALSE(tiled_expert("off", GgmlType::Q2_K, 7168, 1536, rb_q2, 4096));
  EXPECT_FALSE(tiled_expert("auto", GgmlType::Q4_K, 256, 256, rb_q4, 0));
  EXPECT_TRUE(tiled_expert("on", GgmlType::Q4_K, 256, 256, rb_q4, 0));
  EXPECT_FALSE(tiled_expert("on", GgmlType::Q4_K, 256, 256, rb_q4, 8));
  EXPECT_FALSE(tiled_expert("on", GgmlType::Q8_0, 256, 256, *ggml_row_bytes(GgmlType::Q8_0, 256), 0));
  EXPECT_THROW(tiled_expert("yes", GgmlType::Q4_K, 256, 256, rb_q4, 0), Error);
  // Q5_K, Q6_K and Q3_K only while their tiled tensor-core launch runs (Q5_K's tensor cores on,
  // Q6_K's and Q3_K's tiled launches on: switches, kGemvQ5kTensorCoresDefault,
  // kGemvQ6kTiledDefault, kGemvQ3kTiledDefault): never into the F32 kernels' gather alone.
  {
    const uint64_t rb_q5 = *ggml_row_bytes(GgmlType::Q5_K, 4096),
                   rb_q6 = *ggml_row_bytes(GgmlType::Q6_K, 4096);
    struct BackOn {  // this binary's settings (Q5kTensorCoresOn), also when an assertion throws
      ~BackOn() {
        detail::set_gemv_tensor_cores(GgmlType::Q5_K, true);
        detail::set_gemv_tiled_layout(GgmlType::Q3_K, true);
        detail::set_gemv_tiled_layout(GgmlType::Q6_K, true);
      }
    } back_on;
    EXPECT_TRUE(tiled_expert("auto", GgmlType::Q5_K, 4096, 2048, rb_q5, 4096));
    EXPECT_TRUE(tiled_expert("auto", GgmlType::Q6_K, 4096, 2048, rb_q6, 4096));
    EXPECT_TRUE(
        tiled_expert("auto", GgmlType::Q3_K, 2048, 7168, *ggml_row_bytes(GgmlType::Q3_K, 2048), 4096));
    detail::set_gemv_tensor_cores(GgmlType::Q5_K, false);
    detail::set_gemv_tiled_layout(GgmlType::Q6_K, false);
    detail::set_gemv_tiled_layout(GgmlType::Q3_K, false);
    EXPECT_FALSE(tiled_expert("on", GgmlType::Q3_K, 2048, 7168, *ggml_row_bytes(GgmlType::Q3_K, 2048), 4096));
    EXPECT_TRUE(detail::gemv_mma_supported(GgmlType::Q3_K, 2048));  // its ring launch stays on
    EXPECT_THROW(detail::set_gemv_tiled_layout(GgmlType::Q4_K, false), Error);
    EXPECT_FALSE(tiled_expert("on", GgmlType::Q5_K, 4096, 2048, rb_q5, 4096));
    EXPECT_FALSE(gemv_tiled_supported(GgmlType::Q5_K, 4096, 2048));
    EXPECT_FALSE(tiled_expert("on", GgmlType::Q6_K, 4096, 2048, rb_q6, 4096));
    EXPECT_FALSE(gemv_tiled_supported(GgmlType::Q6_K, 4096, 2048));
    EXPECT_TRUE(detail::gemv_mma_supported(GgmlType::Q6_K, 4096));  // its ring launch stays on
  }
  b.w_table = nullptr;  // matrices at w + g w_gstride, misaligned
  b.w = d_t.bytes_ptr() + 4;
  b.w_gstride = rb * 64;
  EXPECT_THROW(gemv(b, nullptr), Error);
  b.w = d_t.bytes_ptr();
  b.w_table = d_tab.as<const uint8_t* const>();
  b.grp_off = nullptr;  // a dense launch
  b.n_tok = 1;
  EXPECT_THROW(gemv(b, nullptr), Error);
  EXPECT_THROW(
      repack_tiled(GgmlType::Q2_K, 2048, 16, rb, d_w.bytes_ptr(), d_w.bytes_ptr() + rb * 8, 1, nullptr),
      Error);  // overlapping
  EXPECT_THROW(repack_tiled(GgmlType::Q2_K, 2048, 16, rb, d_w.bytes_ptr(), d_t.bytes_ptr() + 4, 1, nullptr),
               Error);  // dst misaligned
  MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
}

// Where SwiGLU cannot be the launch's epilogue, gemv() says so instead of computing something else.
TEST(GpuOps, GemvSwigluEpilogueRefusesWhatItCannotFuse) {
  const DefaultVariantAfterwards restore;
  struct FusionAfterwards {  // also when an assertion throws
    ~FusionAfterwards() { detail::set_gemv_swiglu_fusion(true); }
  } restore_fusion;
  detail::set_gemv_mma_variant(0);
  std::mt19937 rng(24);
  const int64_t ne0 = 512, ne1 = 16;
  auto d_x = to_device(random_floats(static_cast<size_t>(ne0), rng));
  DeviceBuffer d_y(static_cast<size_t>(2 * ne1) * sizeof(float), "y");
  DeviceBuffer d_w(static_cast<size_t>(*ggml_row_bytes(GgmlType::Q8_0, ne0) * ne1 * 2), "w");
  MOEPACK_CUDA_CHECK(cudaMemset(d_w.as<void>(), 0, d_w.size()));
  const std::vector<const uint8_t*> tab = {d_w.bytes_ptr(), d_w.bytes_ptr() + d_w.size() / 2};
  auto d_tab = to_device(tab);
  const std::vector<int32_t> off1 = {0, 1}, off2 = {0, 2}, rows = {0, 0};
  auto d_off1 = to_device(off1);
  auto d_off2 = to_device(off2);
  auto d_rows = to_device(rows);
  const auto launch = [&](GgmlType type, const DeviceBuffer& off, int32_t max_pairs) {
    gemv_experts_swiglu(type, ne0, ne1, *ggml_row_bytes(type, ne0), d_tab.as<const uint8_t*>(), off.as<int32_t>(), 1,
                        max_pairs, d_rows.as<int32_t>(), d_x.as<float>(), ne0, 0.0f, d_y.as<float>(), ne1, nullptr);
  };
  EXPECT_FALSE(gemv_swiglu_fusable(GgmlType::Q8_0, ne0));  // no tensor-core GEMV for Q8_0
  EXPECT_THROW(launch(GgmlType::Q8_0, d_off1, 1), Error);
  EXPECT_THROW(launch(GgmlType::Q4_K, d_off2, 2), Error);  // two pairs: the prefill kernels
  EXPECT_FALSE(gemv_swiglu_fusable(GgmlType::Q4_K, 300));
  {
    GemvBatch b = rows_batch(GgmlType::Q4_K, ne0, ne1, *ggml_row_bytes(GgmlType::Q4_K, ne0), d_x.as<float>(),
                             d_y.as<float>());
    b.w = d_w.bytes_ptr();
    b.n_tok = 1;
    b.swiglu_epilogue = true;  // a single matrix: no groups, no table
    EXPECT_THROW(gemv(b, nullptr), Error);
    DeviceBuffer frag(static_cast<size_t>(gemv_x_fragments_bytes(GgmlType::Q4_K, ne0)), "fragments");
    b.w = nullptr;
    b.n_tok = 0;
    b.w_table = d_tab.as<const uint8_t*>();
    b.grp_off = d_off1.as<int32_t>();
    b.x_row = d_rows.as<int32_t>();
    b.max_pairs = 1;
    b.x_frag = frag.bytes_ptr();
    b.x_frag_stride = static_cast<int64_t>(frag.size());
    EXPECT_THROW(gemv(b, nullptr), Error);  // ready fragments and the epilogue exclude each other
  }
  detail::set_gemv_mma_variant(3);  // a side-by-side variant: the default's layout only
  EXPECT_FALSE(gemv_swiglu_fusable(GgmlType::Q4_K, ne0));
  EXPECT_THROW(launch(GgmlType::Q4_K, d_off1, 1), Error);
  detail::set_gemv_mma_variant(0);
  detail::set_gemv_swiglu_fusion(false);  // the benchmark's switch
  EXPECT_FALSE(gemv_swiglu_fusable(GgmlType::Q4_K, ne0));
  EXPECT_THROW(launch(GgmlType::Q4_K, d_off1, 1), Error);
  detail::set_gemv_swiglu_fusion(true);
  EXPECT_TRUE(gemv_swiglu_fusable(GgmlType::Q4_K, ne0));
  EXPECT_NO_THROW(launch(GgmlType::Q4_K, d_off1, 1));  // (its values: the test above)
  MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(GpuOps, CombineExperts) {
  std::mt19937 rng(3);
  const int32_t n_tok = 3, K = 2;
  const int64_t E = 70;
  const auto y = random_floats(static_cast<size_t>(n_tok * K * E), rng);
  const std::vector<int32_t> pair_of = {4, 0, 1, 5, 3, 2};
  const auto w = random_floats(6, rng);
  auto dy = to_device(y);
  auto dp = to_device(pair_of);
  auto dw = to_device(w);
  DeviceBuffer dout(static_cast<size_t>(n_tok * E) * sizeof(float), "out");
  combine_experts(dy.as<float>(), dp.as<int32_t>(), dw.as<float>(), n_tok, K, E, dout.as<float>(), nullptr);
  std::vector<float> want(static_cast<size_t>(n_tok * E), 0.0f);
  for (int t = 0; t < n_tok; ++t)
    for (int k = 0; k < K; ++k)
      for (int64_t e = 0; e < E; ++e) want[t * E + e] += w[t * K + k] * y[pair_of[t * K + k] * E + e];
  expect_rel(to_host(dout, want.size()), want, 1e-6f, "combine");
}

TEST(GpuOps, RopeNormNeoxYarn) {
  std::mt19937 rng(4);
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    RopeParams p;
    p.n_dims = 32;
    p.neox = variant == 1;
    if (variant == 2) {
      p.freq_scale = 0.25f;
      p.ext_factor = 1.0f;
      p.n_ctx_orig = 64;
      p.attn_factor = 0.9f;
    }
    const int64_t n_ctx = 40, n_tok = 5, pos0 = 30, heads = 3, head_dim = 48;
    std::vector<float> table(static_cast<size_t>(n_ctx * p.n_dims));
    for (int64_t pos = 0; pos < n_ctx; ++pos) rope_table(p, pos, table.data() + pos * p.n_dims);
    auto x = random_floats(static_cast<size_t>(n_tok * heads * head_dim), rng);
    auto dx = to_device(x);
    auto dt = to_device(table);
    rope(dx.as<float>(), n_tok, heads * head_dim, heads, head_dim, dt.as<float>(), pos0, p.n_dims, p.neox,
         nullptr);
    for (int64_t t = 0; t < n_tok; ++t) {
      rope_apply(p, table.data() + (pos0 + t) * p.n_dims, x.data() + t * heads * head_dim, heads, head_dim);
    }
    expect_rel(to_host(dx, x.size()), x, 1e-6f, "rope");
  }
}

TEST(GpuOps, GqaAttention) {
  std::mt19937 rng(5);
  const int64_t n_head = 8, n_kv = 2, hk = 40, hv = 24, W = n_kv * (hk + hv), pos0 = 17, n_tok = 6;
  const auto q = random_floats(static_cast<size_t>(n_tok * n_head * hk), rng);
  const auto kv = random_floats(static_cast<size_t>((pos0 + n_tok) * W), rng);
  auto dq = to_device(q);
  auto dkv = to_device(kv);
  DeviceBuffer dout(static_cast<size_t>(n_tok * n_head * hv) * sizeof(float), "out");
  gqa_attend(dq.as<float>(), n_tok, pos0, dkv.as<float>(), W, n_head, n_kv, hk, hv, 0.3f, dout.as<float>(),
             nullptr);
  std::vector<float> want(static_cast<size_t>(n_tok * n_head * hv));
  ThreadPool pool(1);
  moepack::gqa_attend(pool, q.data(), n_tok, pos0, kv.data(), W, n_head, n_kv, hk, hv, 0.3f, want.data());
  expect_rel(to_host(dout, want.size()), want, 1e-5f, "gqa");
}

// Contexts beyond one shared-memory range of 4096 positions are split and the softmax partials
// combined (kernels_attention.cu): a context across the first boundary (tokens seeing 4095 to
// 4099 positions: one split empty for the first token) and one of 70,000 positions, beyond
// the 57k the unsplit kernel could hold on an H200.
TEST(GpuOps, GqaAttentionLongContextSplits) {
  for (const int64_t pos0 : {int64_t{4094}, int64_t{70000}}) {
    SCOPED_TRACE("pos0 " + std::to_string(pos0));
    std::mt19937 rng(15);
    const int64_t n_head = 4, n_kv = 2, hk = 32, hv = 16, W = n_kv * (hk + hv), n_tok = 5;
    const auto q = random_floats(static_cast<size_t>(n_tok * n_head * hk), rng);
    const auto kv = random_floats(static_cast<size_t>((pos0 + n_tok) * W), rng);
    auto dq = to_device(q);
    auto dkv = to_device(kv);
    DeviceBuffer dout(static_cast<size_t>(n_tok * n_head * hv) * sizeof(float), "out");
    gqa_attend(dq.as<float>(), n_tok, pos0, dkv.as<float>(), W, n_head, n_kv, hk, hv, 0.3f, dout.as<float>(),
               nullptr);
    std::vector<float> want(static_cast<size_t>(n_tok * n_head * hv));
    ThreadPool pool(1);
    moepack::gqa_attend(pool, q.data(), n_tok, pos0, kv.data(), W, n_head, n_kv, hk, hv, 0.3f, want.data());
    expect_rel(to_host(dout, want.size()), want, 1e-5f, "gqa long");
  }
}

TEST(GpuOps, MlaAttentionLongContextSplits) {
  std::mt19937 rng(16);
  const int64_t H = 2, R = 64, P = 16, D = 48, pos0 = 70000, n_tok = 3, W = R + P;
  const auto q_abs = random_floats(static_cast<size_t>(n_tok * H * R), rng);
  const auto q = random_floats(static_cast<size_t>(n_tok * H * D), rng);
  const auto kv = random_floats(static_cast<size_t>((pos0 + n_tok) * W), rng);
  auto da = to_device(q_abs);
  auto dq = to_device(q);
  auto dkv = to_device(kv);
  DeviceBuffer dout(static_cast<size_t>(n_tok * H * R) * sizeof(float), "out");
  mla_attend(da.as<float>(), dq.as<float>(), n_tok, pos0, dkv.as<float>(), H, R, D, P, 0.2f, dout.as<float>(),
             nullptr);
  std::vector<float> want(static_cast<size_t>(n_tok * H * R), 0.0f);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t nk = pos0 + t + 1;
      std::vector<float> sc(static_cast<size_t>(nk));
      for (int64_t s = 0; s < nk; ++s) {
        sc[s] = (dot_f32(q_abs.data() + (t * H + h) * R, kv.data() + s * W, R) +
                 dot_f32(q.data() + (t * H + h) * D + (D - P), kv.data() + s * W + R, P)) *
                0.2f;
      }
      softmax_inplace(sc.data(), nk);
      for (int64_t s = 0; s < nk; ++s)
        for (int64_t d = 0; d < R; ++d) want[(t * H + h) * R + d] += sc[s] * kv[s * W + d];
    }
  }
  expect_rel(to_host(dout, want.size()), want, 1e-5f, "mla long");
}

// A launch that reads its position from device memory (pos_dev), captured once in a CUDA graph
// as a decode step captures it, serves every position below max_kv: on both sides of the
// 4096-position range split, in any order, each replay gives what a direct launch at that
// position gives, bit for bit (GQA and MLA; max_kv 9,000 with the split launches in the graph,
// and 4,096 without them). Two tokens or no max_kv at a device position are refused.
TEST(GpuOps, AttentionAtADevicePositionInAGraphEqualsDirectLaunches) {
  std::mt19937 rng(17);
  const int64_t n_head = 4, n_kv = 2, hk = 32, hv = 16, GW = n_kv * (hk + hv);  // GQA
  const int64_t H = 2, R = 64, P = 16, D = 48, MW = R + P;                      // MLA
  const int64_t max_pos = 9000;
  auto dq = to_device(random_floats(static_cast<size_t>(n_head * hk), rng));
  auto dgkv = to_device(random_floats(static_cast<size_t>(max_pos * GW), rng));
  auto dqa = to_device(random_floats(static_cast<size_t>(H * R), rng));
  auto dqm = to_device(random_floats(static_cast<size_t>(H * D), rng));
  auto dmkv = to_device(random_floats(static_cast<size_t>(max_pos * MW), rng));
  const size_t gn = static_cast<size_t>(n_head * hv), mn = static_cast<size_t>(H * R);
  DeviceBuffer gout(gn * sizeof(float), "out"), mout(mn * sizeof(float), "out");
  DeviceBuffer pos_dev(sizeof(int32_t), "position");
  PinnedBuffer pos_host(sizeof(int32_t), "position");
  Stream stream;
  cudaStream_t st = stream.get();
  for (const int64_t max_kv : {max_pos, int64_t{4096}}) {
    SCOPED_TRACE("max_kv " + std::to_string(max_kv));
    cudaGraph_t g = nullptr;
    MOEPACK_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    MOEPACK_CUDA_CHECK(cudaMemcpyAsync(pos_dev.as<void>(), pos_host.as<void>(), sizeof(int32_t),
                                       cudaMemcpyHostToDevice, st));
    gqa_attend(dq.as<float>(), 1, 0, dgkv.as<float>(), GW, n_head, n_kv, hk, hv, 0.3f, gout.as<float>(), st,
               pos_dev.as<int32_t>(), max_kv);
    mla_attend(dqa.as<float>(), dqm.as<float>(), 1, 0, dmkv.as<float>(), H, R, D, P, 0.2f, mout.as<float>(),
               st, pos_dev.as<int32_t>(), max_kv);
    MOEPACK_CUDA_CHECK(cudaStreamEndCapture(st, &g));
    cudaGraphExec_t exec = nullptr;
    MOEPACK_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    MOEPACK_CUDA_CHECK(cudaGraphDestroy(g));
    // Ascending, then descending: a replay that read another position's partials would show.
    for (const int64_t pos :
         {0, 1, 4094, 4095, 4096, 5000, 8191, 8192, 8999, 8998, 5000, 4097, 4096, 4095, 100}) {
      if (pos >= max_kv) continue;
      SCOPED_TRACE("position " + std::to_string(pos));
      *pos_host.as<int32_t>() = static_cast<int32_t>(pos);
      MOEPACK_CUDA_CHECK(cudaGraphLaunch(exec, st));
      MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
      const auto got_g = to_host(gout, gn);
      const auto got_m = to_host(mout, mn);
      gqa_attend(dq.as<float>(), 1, pos, dgkv.as<float>(), GW, n_head, n_kv, hk, hv, 0.3f, gout.as<float>(),
                 st);
      mla_attend(dqa.as<float>(), dqm.as<float>(), 1, pos, dmkv.as<float>(), H, R, D, P, 0.2f,
                 mout.as<float>(), st);
      MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
      const auto want_g = to_host(gout, gn);
      const auto want_m = to_host(mout, mn);
      EXPECT_EQ(std::memcmp(got_g.data(), want_g.data(), gn * sizeof(float)), 0) << "gqa";
      EXPECT_EQ(std::memcmp(got_m.data(), want_m.data(), mn * sizeof(float)), 0) << "mla";
      MOEPACK_CUDA_CHECK(
          cudaMemsetAsync(gout.as<void>(), 0xFF, gn * sizeof(float), st));  // NaN: stale output shows
      MOEPACK_CUDA_CHECK(cudaMemsetAsync(mout.as<void>(), 0xFF, mn * sizeof(float), st));
    }
    MOEPACK_CUDA_CHECK(cudaGraphExecDestroy(exec));
  }
  EXPECT_THROW(gqa_attend(dq.as<float>(), 2, 0, dgkv.as<float>(), GW, n_head, n_kv, hk, hv, 0.3f,
                          gout.as<float>(), st, pos_dev.as<int32_t>(), max_pos),
               Error);
  EXPECT_THROW(gqa_attend(dq.as<float>(), 1, 0, dgkv.as<float>(), GW, n_head, n_kv, hk, hv, 0.3f,
                          gout.as<float>(), st, pos_dev.as<int32_t>(), 0),
               Error);
  EXPECT_THROW(mla_attend(dqa.as<float>(), dqm.as<float>(), 2, 0, dmkv.as<float>(), H, R, D, P, 0.2f,
                          mout.as<float>(), st, pos_dev.as<int32_t>(), max_pos),
               Error);
  EXPECT_THROW(mla_attend(dqa.as<float>(), dqm.as<float>(), 1, 0, dmkv.as<float>(), H, R, D, P, 0.2f,
                          mout.as<float>(), st, pos_dev.as<int32_t>(), 0),
               Error);
}

TEST(GpuOps, MlaAttention) {
  std::mt19937 rng(6);
  const int64_t H = 4, R = 64, P = 16, D = 48, pos0 = 9, n_tok = 4, W = R + P;
  const auto q_abs = random_floats(static_cast<size_t>(n_tok * H * R), rng);
  const auto q = random_floats(static_cast<size_t>(n_tok * H * D), rng);
  const auto kv = random_floats(static_cast<size_t>((pos0 + n_tok) * W), rng);
  auto da = to_device(q_abs);
  auto dq = to_device(q);
  auto dkv = to_device(kv);
  DeviceBuffer dout(static_cast<size_t>(n_tok * H * R) * sizeof(float), "out");
  mla_attend(da.as<float>(), dq.as<float>(), n_tok, pos0, dkv.as<float>(), H, R, D, P, 0.2f, dout.as<float>(),
             nullptr);
  std::vector<float> want(static_cast<size_t>(n_tok * H * R), 0.0f);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t nk = pos0 + t + 1;
      std::vector<float> sc(static_cast<size_t>(nk));
      for (int64_t s = 0; s < nk; ++s) {
        sc[s] = (dot_f32(q_abs.data() + (t * H + h) * R, kv.data() + s * W, R) +
                 dot_f32(q.data() + (t * H + h) * D + (D - P), kv.data() + s * W + R, P)) *
                0.2f;
      }
      softmax_inplace(sc.data(), nk);
      for (int64_t s = 0; s < nk; ++s)
        for (int64_t d = 0; d < R; ++d) want[(t * H + h) * R + d] += sc[s] * kv[s * W + d];
    }
  }
  expect_rel(to_host(dout, want.size()), want, 1e-5f, "mla");
}

}  // namespace
}  // namespace moepack::gpu

MOEPACK_GPU_TEST_MAIN()
