// bench_quants: throughput of dequantize_row and vec_dot per type (Google Benchmark).
//
// Not a test: a timing loop for the CPU reference kernels in core/quants.h. Each benchmark
// runs over 64 rows of 4096 elements (a 4096 x 64 weight slice, 64 KiB to 1 MiB depending on
// the type, so it stays in L2) filled with random blocks whose scales are sane halves.
// Reported per benchmark: items_per_second (elements) and bytes_per_second (bytes of
// quantized input read). Prints JSON unless another --benchmark_format is given:
//   bench_quants [--benchmark_filter=q4_K] [--benchmark_format=console]
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/ggml_type.h"
#include "core/quants.h"

namespace moepack {
namespace {

constexpr int64_t kRowElems = 4096;
constexpr int64_t kRows = 64;

const GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                           GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_K, GgmlType::MXFP4};

// Writes a random half in [2^-10, 2^-5) at p.
void put_scale(uint8_t* p, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0x1p-10f, 0x1p-5f);
  const uint16_t h = fp32_to_fp16(u(rng));
  std::memcpy(p, &h, 2);
}

// kRows rows of random `type` data with finite, moderate scales.
std::vector<uint8_t> make_rows(GgmlType type) {
  const GgmlTypeTraits& t = ggml_traits(type);
  const uint64_t n_blocks = kRowElems * kRows / t.block_size;
  std::vector<uint8_t> data(n_blocks * t.type_size);
  std::mt19937 rng(42);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (uint64_t i = 0; i < n_blocks; ++i) {
    uint8_t* b = data.data() + i * t.type_size;
    switch (type) {
      case GgmlType::F32: {
        const float f = normal(rng);
        std::memcpy(b, &f, 4);
        break;
      }
      case GgmlType::F16: {
        const uint16_t h = fp32_to_fp16(normal(rng));
        std::memcpy(b, &h, 2);
        break;
      }
      case GgmlType::BF16: {
        const uint16_t h = fp32_to_bf16(normal(rng));
        std::memcpy(b, &h, 2);
        break;
      }
      case GgmlType::Q4_0:
      case GgmlType::Q5_0:
      case GgmlType::Q8_0:
        put_scale(b, rng);
        break;
      case GgmlType::Q4_1:
      case GgmlType::Q5_1:
        put_scale(b, rng);
        put_scale(b + 2, rng);
        break;
      case GgmlType::Q4_K:
      case GgmlType::Q5_K:
        put_scale(b, rng);
        put_scale(b + 2, rng);
        break;
      case GgmlType::Q2_K:
        put_scale(b + offsetof(BlockQ2_K, d), rng);
        put_scale(b + offsetof(BlockQ2_K, dmin), rng);
        break;
      case GgmlType::Q3_K:
        put_scale(b + offsetof(BlockQ3_K, d), rng);
        break;
      case GgmlType::Q6_K:
        put_scale(b + offsetof(BlockQ6_K, d), rng);
        break;
      case GgmlType::Q8_K: {
        const float d = 0x1p-8f;
        std::memcpy(b, &d, 4);
        break;
      }
      case GgmlType::MXFP4:
        b[0] = static_cast<uint8_t>(118 + rng() % 8);
        break;
      default:
        break;
    }
  }
  return data;
}

void bm_dequantize(benchmark::State& state, GgmlType type) {
  const std::vector<uint8_t> data = make_rows(type);
  const uint64_t row_bytes = data.size() / kRows;
  std::vector<float> out(kRowElems);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r) {
      dequantize_row(type, data.data() + r * row_bytes, out.data(), kRowElems);
      benchmark::DoNotOptimize(out.data());
      benchmark::ClobberMemory();
    }
  }
  state.SetItemsProcessed(state.iterations() * kRowElems * kRows);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.size()));
}

void bm_vec_dot(benchmark::State& state, GgmlType type) {
  const std::vector<uint8_t> data = make_rows(type);
  const uint64_t row_bytes = data.size() / kRows;
  std::vector<float> x(kRowElems);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  for (auto _ : state) {
    float sum = 0;
    for (int64_t r = 0; r < kRows; ++r)
      sum += vec_dot(type, data.data() + r * row_bytes, x.data(), kRowElems);
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kRowElems * kRows);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.size()));
}

}  // namespace
}  // namespace moepack

int main(int argc, char** argv) {
  using namespace moepack;
  for (GgmlType t : kTypes) {
    const std::string name(ggml_type_name(t));
    benchmark::RegisterBenchmark(("dequantize/" + name).c_str(), bm_dequantize, t);
    benchmark::RegisterBenchmark(("vec_dot/" + name).c_str(), bm_vec_dot, t);
  }
  // JSON by default.
  std::vector<char*> args(argv, argv + argc);
  bool has_format = false;
  for (int i = 1; i < argc; ++i) has_format |= std::strncmp(argv[i], "--benchmark_format", 18) == 0;
  static char json_flag[] = "--benchmark_format=json";
  if (!has_format) args.push_back(json_flag);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
