// dequantize_row and vec_dot on every tensor of every fixture that ships a *.dequant.json.
//
// Oracle: `*.dequant.json`, written by ggml's own to_float at llama.cpp 82bb485 (see
// ../shared/fixtures/README.md): per tensor, rows 0 and 1 (expert 0 for 3-D tensors) as F32
// and sum / sumsq / maxabs over the whole dequantized tensor. Tolerances from the README's
// "Suggested tolerances": first rows within 1e-6 relative, sum and sumsq within 1e-5
// relative (maxabs is held to 1e-6: it is one dequantized value). The split Q2_K model is
// opened as one GgufModel; each shard has its own dequant.json.
//
// vec_dot is checked on the same rows against the oracle's row dotted (in double) with a
// fixed pseudo-random x, within the worst-case bound of F32 summation in 8 lanes:
// (n / 8 + 4) * 2^-24 * sum |row[k] * x[k]|.
//
// The worst errors per type are printed at the end (they are expected to be 0: the
// arithmetic is ggml's).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/gguf_model.h"
#include "core/quants.h"

namespace moepack {
namespace {

using nlohmann::json;

const std::string kFixtures = std::string(MOEPACK_SHARED_DIR) + "/fixtures/";

json load_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return json::parse(in);
}

struct Worst {
  double first_rows = 0;  // max |ours - ref| / |ref| over the first rows (inf if ref = 0, ours != 0)
  double sum = 0, sumsq = 0, maxabs = 0;  // relative errors
  double dot = 0;                         // max |ours - ref| / bound
  uint64_t tensors = 0, values = 0, mismatched_bits = 0;
};

std::map<std::string, Worst>& worst_by_type() {
  static std::map<std::string, Worst> w;
  return w;
}

double rel(double ours, double ref) {
  if (ours == ref) return 0;
  return ref == 0 ? INFINITY : std::fabs(ours - ref) / std::fabs(ref);
}

struct Case {
  const char* label;
  const char* model;                 // path under fixtures/ given to GgufModel::open
  std::vector<const char*> dequant;  // one dequant.json per shard
};

class QuantsFixtures : public ::testing::TestWithParam<Case> {};

TEST_P(QuantsFixtures, EveryTensorMatchesGgml) {
  const Case& c = GetParam();
  const GgufModel model = GgufModel::open(kFixtures + c.model);
  size_t n_checked = 0;
  for (const char* dq : c.dequant) {
    const json ref_file = load_json(kFixtures + dq);
    ASSERT_EQ(ref_file.at("format"), "ggml-dequant-reference-v1");
    const std::string file = ref_file.at("file");
    for (const json& t : ref_file.at("tensors")) {
      const std::string name = t.at("name");
      const std::string type_name = t.at("type");
      SCOPED_TRACE(file + ": " + name + " (" + type_name + ")");
      const GgufTensorRef* ref = model.find_tensor(name);
      ASSERT_NE(ref, nullptr);
      const GgufFile& shard = model.shards()[ref->shard];
      ASSERT_TRUE(shard.path().ends_with("/" + file)) << shard.path();
      const GgufTensorInfo& info = *ref->info;
      ASSERT_EQ(ggml_type_name(info.type), type_name);
      ASSERT_TRUE(quant_supported(info.type));

      std::vector<uint8_t> bytes(info.nbytes);
      shard.read_tensor_data(info, 0, bytes.data(), bytes.size());
      const auto ne0 = static_cast<int64_t>(info.ne[0]);
      const uint64_t n_rows = info.ne[1] * info.ne[2] * info.ne[3];
      const uint64_t row_bytes = info.nbytes / n_rows;
      ASSERT_EQ(row_bytes * n_rows, info.nbytes);

      Worst& w = worst_by_type()[type_name];
      ++w.tensors;
      const json& first_rows = t.at("first_rows_f32");
      std::vector<float> row(static_cast<size_t>(ne0));
      double sum = 0, sumsq = 0, maxabs = 0;
      for (uint64_t r = 0; r < n_rows; ++r) {
        dequantize_row(info.type, bytes.data() + r * row_bytes, row.data(), ne0);
        for (float v : row) {
          sum += v;
          sumsq += static_cast<double>(v) * v;
          maxabs = std::max(maxabs, std::fabs(static_cast<double>(v)));
        }
        if (r >= first_rows.size()) continue;
        const json& expect = first_rows[r];
        ASSERT_EQ(expect.size(), row.size());
        double row_worst = 0;
        std::vector<float> x(row.size());
        double ref_dot = 0, abs_dot = 0;
        for (size_t k = 0; k < row.size(); ++k) {
          const auto e = static_cast<float>(expect[k].get<double>());
          const double err = rel(row[k], e);
          row_worst = std::max(row_worst, err);
          ++w.values;
          if (std::bit_cast<uint32_t>(row[k]) != std::bit_cast<uint32_t>(e)) ++w.mismatched_bits;
          // x in [-1, 1), fixed: a Weyl sequence.
          x[k] =
              static_cast<float>(std::fmod(0.6180339887 * static_cast<double>(k + 7 * r + 1), 1.0) * 2 - 1);
          ref_dot += static_cast<double>(e) * x[k];
          abs_dot += std::fabs(static_cast<double>(e) * x[k]);
        }
        w.first_rows = std::max(w.first_rows, row_worst);
        EXPECT_LE(row_worst, 1e-6) << "row " << r;
        const double got = vec_dot(info.type, bytes.data() + r * row_bytes, x.data(), ne0);
        const double bound = (static_cast<double>(ne0) / 8 + 4) * 0x1p-24 * abs_dot;
        const double dot_err = std::fabs(got - ref_dot);
        w.dot = std::max(w.dot, bound > 0 ? dot_err / bound : (dot_err == 0 ? 0 : INFINITY));
        EXPECT_LE(dot_err, bound) << "vec_dot row " << r << ": " << got << " vs " << ref_dot;
      }
      const double e_sum = rel(sum, t.at("sum").get<double>());
      const double e_sumsq = rel(sumsq, t.at("sumsq").get<double>());
      const double e_max = rel(maxabs, t.at("maxabs").get<double>());
      w.sum = std::max(w.sum, e_sum);
      w.sumsq = std::max(w.sumsq, e_sumsq);
      w.maxabs = std::max(w.maxabs, e_max);
      EXPECT_LE(e_sum, 1e-5) << sum << " vs " << t.at("sum");
      EXPECT_LE(e_sumsq, 1e-5) << sumsq << " vs " << t.at("sumsq");
      EXPECT_LE(e_max, 1e-6) << maxabs << " vs " << t.at("maxabs");
      ++n_checked;
    }
  }
  EXPECT_EQ(n_checked, model.tensors().size()) << "every tensor of the model has a reference";
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, QuantsFixtures,
    ::testing::Values(Case{"deepseek2_Q4_K_M",
                           "deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf",
                           {"deepseek2-tiny/deepseek2-tiny-Q4_K_M.dequant.json"}},
                      Case{"deepseek2_Q2_K_split",
                           "deepseek2-tiny/deepseek2-tiny-Q2_K-00001-of-00003.gguf",
                           {"deepseek2-tiny/deepseek2-tiny-Q2_K-00001-of-00003.dequant.json",
                            "deepseek2-tiny/deepseek2-tiny-Q2_K-00002-of-00003.dequant.json",
                            "deepseek2-tiny/deepseek2-tiny-Q2_K-00003-of-00003.dequant.json"}},
                      Case{"qwen3moe_MXFP4_MOE",
                           "qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf",
                           {"qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.dequant.json"}},
                      Case{"llama_moe_Q4_K_M",
                           "llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf",
                           {"llama-moe-tiny/llama-moe-tiny-Q4_K_M.dequant.json"}}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.label); });

// Prints the worst errors per type once every test has run.
class SummaryEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("%-6s %7s %9s %9s %10s %10s %10s %10s %10s\n", "type", "tensors", "values", "bit-diffs",
                "rows rel", "sum rel", "sumsq rel", "max rel", "dot/bound");
    for (const auto& [type, w] : worst_by_type()) {
      std::printf("%-6s %7llu %9llu %9llu %10.3g %10.3g %10.3g %10.3g %10.3g\n", type.c_str(),
                  static_cast<unsigned long long>(w.tensors), static_cast<unsigned long long>(w.values),
                  static_cast<unsigned long long>(w.mismatched_bits), w.first_rows, w.sum, w.sumsq, w.maxabs,
                  w.dot);
    }
  }
};

[[maybe_unused]] ::testing::Environment* const kSummary =
    ::testing::AddGlobalTestEnvironment(new SummaryEnvironment);

}  // namespace
}  // namespace moepack
