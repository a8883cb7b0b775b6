#include "tests/support/arch_fixture.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "core/backend_factory.h"
#include "core/error.h"
#include "core/model_source.h"
#include "core/tokenizer.h"
#include "tests/support/backend_parity.h"
#include "tests/support/fixture_refs.h"
#include "tests/support/gguf_writer.h"

namespace moepack::test {

namespace {

// Token ids ordered by logit, highest first, ties to the lower id: the first n of them.
std::vector<int32_t> top_ids(const std::vector<float>& logits, size_t n) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(
      order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
      [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  order.resize(n);
  return order;
}

}  // namespace

std::string arch_case_name(const ::testing::TestParamInfo<ArchCase>& p) { return std::string(p.param.name); }

EngineSettings reference_settings() {
  EngineSettings s;
  s.threads = 2;
  s.n_ctx = 512;  // the references' n_ctx
  s.cache_ram_mib = 0;  // CUDA: every miss a pack read (no host-RAM tier), as the checks count
  return s;
}

void ArchFixture::SetUp() {
  if (skip_missing_ && !std::filesystem::exists(model_path())) {
    GTEST_SKIP() << model_path() << " not carried to this machine";
  }
}

std::unique_ptr<Backend> ArchFixture::open_cpu(const EngineSettings& s) const {
  return make_cpu_backend(ModelSource::open(model_path()), s);
}

int ArchFixture::expect_tokens_match_reference() const {
  const nlohmann::json ref = read_json(ref_path(".f32-dequant.json"));
  const auto src = ModelSource::open(model_path());
  const Tokenizer tok = Tokenizer::from_gguf(src->metadata());
  int i = 0;
  for (const auto& p : ref["prompts"]) {
    const std::string text = read_text(prompt_path(i++));
    EXPECT_EQ(text, p["prompt"].get<std::string>());
    const auto want = p["token_ids"].get<std::vector<int32_t>>();
    const auto got = tok.encode(text, true, false);
    EXPECT_EQ(std::vector<int32_t>(got.begin(), got.end()), want) << "prompt " << i - 1;
  }
  return i;
}

int ArchFixture::expect_matches_f32_dequant(Backend& be) const {
  const nlohmann::json ref = read_json(ref_path(".f32-dequant.json"));
  const size_t nv = be.config().n_vocab;
  EXPECT_EQ(nv, ref["n_vocab"].get<size_t>());
  if (nv != ref["n_vocab"].get<size_t>()) return 0;
  std::vector<float> logits(nv);
  float worst = 0;
  int prompts = 0;
  for (const auto& p : ref["prompts"]) {
    SCOPED_TRACE("prompt " + std::to_string(prompts));
    const auto tokens = p["token_ids"].get<std::vector<int32_t>>();
    be.truncate(0);
    if (p.contains("full_logits_bin")) {
      std::vector<float> all(tokens.size() * nv);
      be.forward(tokens, logits, all);
      const auto want = read_f32(ref_path(".f32-dequant.logits.bin"));
      EXPECT_EQ(want.size(), all.size());
      if (want.size() != all.size()) return prompts;
      float w = 0;
      for (size_t i = 0; i < all.size(); ++i) w = std::max(w, std::fabs(all[i] - want[i]));
      EXPECT_LT(w, 1e-3f) << "logits at every position of the prompt";
      worst = std::max(worst, w);
    } else {
      be.forward(tokens, logits);
    }
    const auto ids = p["top_logits_last_prompt_pos"]["ids"].get<std::vector<int32_t>>();
    const auto vals = p["top_logits_last_prompt_pos"]["values"].get<std::vector<float>>();
    for (size_t i = 0; i < ids.size(); ++i) {
      const float d = std::fabs(logits[static_cast<size_t>(ids[i])] - vals[i]);
      EXPECT_LT(d, 1e-3f) << "id " << ids[i];
      worst = std::max(worst, d);
    }
    // Same top-32 set, except where the 32nd / 33rd logits are within 1e-3.
    const std::vector<int32_t> order = top_ids(logits, 33);
    if (logits[order[31]] - logits[order[32]] > 1e-3f) {
      EXPECT_EQ(std::set<int32_t>(order.begin(), order.begin() + 32),
                std::set<int32_t>(ids.begin(), ids.end()));
    }
    const auto& g = p["greedy"];
    const auto greedy = g["ids"].get<std::vector<int32_t>>();
    std::vector<int32_t> ours;
    for (size_t i = 0; i < greedy.size(); ++i) {
      const auto& top8 = g["step_top8"][i];
      const auto tids = top8["ids"].get<std::vector<int32_t>>();
      const auto tvals = top8["values"].get<std::vector<float>>();
      for (size_t j = 0; j < tids.size(); ++j) {
        const float d = std::fabs(logits[static_cast<size_t>(tids[j])] - tvals[j]);
        EXPECT_LT(d, 1e-3f) << "greedy step " << i << " id " << tids[j];
        worst = std::max(worst, d);
      }
      const int32_t next = argmax(logits);
      ours.push_back(next);
      if (i + 1 < greedy.size()) be.forward(std::span<const int32_t>(&next, 1), logits);
    }
    EXPECT_EQ(ours, greedy);
    ++prompts;
  }
  ::testing::Test::RecordProperty("worst_abs_diff", std::to_string(worst));
  return prompts;
}

ArchFixture::RoutingCompared ArchFixture::expect_routing_matches_reference(Backend& be) const {
  const nlohmann::json rt = read_json(ref_path(".f32-dequant.routing.json"));
  std::map<std::pair<uint32_t, uint32_t>, std::map<int32_t, float>> seen;
  be.set_routing_observer(
      [&](uint32_t block, uint32_t pos, std::span<const int32_t> ex, std::span<const float> w) {
        auto& m = seen[{block, pos}];
        m.clear();
        for (size_t i = 0; i < ex.size(); ++i) m[ex[i]] = w[i];
      });
  RoutingCompared r;
  std::vector<float> logits(be.config().n_vocab);
  for (const auto& call : rt["calls"]) {
    const auto tokens = call["token_ids"].get<std::vector<int32_t>>();
    const uint32_t first = call["first_pos"].get<uint32_t>();
    EXPECT_EQ(first, be.n_past());
    if (first != be.n_past()) break;
    be.forward(tokens, logits);
    for (const auto& [layer, d] : call["layers"].items()) {
      const uint32_t block = static_cast<uint32_t>(std::stoul(layer));
      const bool hash = block < be.config().n_hash_layers;
      for (size_t t = 0; t < tokens.size(); ++t) {
        if (!hash && d["selection_margin"][t].get<float>() < 1e-4f) continue;
        const auto ids = d["ids"][t].get<std::vector<int32_t>>();
        const auto w = d["weights"][t].get<std::vector<float>>();
        const auto& got = seen[{block, first + static_cast<uint32_t>(t)}];
        std::set<int32_t> got_ids;
        for (const auto& [e, _] : got) got_ids.insert(e);
        EXPECT_EQ(got_ids, std::set<int32_t>(ids.begin(), ids.end()))
            << "blk." << block << " pos " << first + t;
        for (size_t j = 0; j < ids.size(); ++j) {
          if (got.count(ids[j])) {
            EXPECT_NEAR(got.at(ids[j]), w[j], 1e-4f) << "blk." << block << " expert " << ids[j];
          }
        }
        ++r.tokens;
        r.hash_tokens += hash;
      }
    }
  }
  be.set_routing_observer(nullptr);  // `seen` goes out of scope
  const BackendStats s = be.stats();
  EXPECT_EQ(s.expert_selections, s.experts_computed);
  return r;
}

ArchFixture::NativeCloseness ArchFixture::close_to_native_reference(Backend& be, int min_overlap) const {
  const nlohmann::json ref = read_json(ref_path(".json"));
  const size_t nv = be.config().n_vocab;
  std::vector<float> logits(nv);
  NativeCloseness c;
  for (const auto& p : ref["prompts"]) {
    const auto tokens = p["token_ids"].get<std::vector<int32_t>>();
    be.truncate(0);
    be.forward(tokens, logits);
    ++c.prompts;
    const auto ids = p["top_logits_last_prompt_pos"]["ids"].get<std::vector<int32_t>>();
    const auto vals = p["top_logits_last_prompt_pos"]["values"].get<std::vector<float>>();
    c.top1 += argmax(logits) == ids[0];
    const std::vector<int32_t> order = top_ids(logits, 32);
    const std::set<int32_t> mine(order.begin(), order.end());
    int overlap = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      overlap += mine.count(ids[i]) ? 1 : 0;
      c.worst_top32 = std::max(c.worst_top32, std::fabs(logits[static_cast<size_t>(ids[i])] - vals[i]));
    }
    EXPECT_GE(overlap, min_overlap) << "prompt " << c.prompts - 1;
    const auto greedy = p["greedy"]["ids"].get<std::vector<int32_t>>();
    for (size_t i = 0; i < greedy.size(); ++i) {
      const float gap = logits[static_cast<size_t>(argmax(logits))] - logits[static_cast<size_t>(greedy[i])];
      c.worst_teacher_forced_gap = std::max(c.worst_teacher_forced_gap, gap);
      if (i + 1 < greedy.size()) be.forward(std::span<const int32_t>(&greedy[i], 1), logits);
    }
  }
  ::testing::Test::RecordProperty("worst_top32", std::to_string(c.worst_top32));
  ::testing::Test::RecordProperty("worst_teacher_forced_gap", std::to_string(c.worst_teacher_forced_gap));
  return c;
}

void ArchFixture::expect_cpu_pack_matches_gguf(const char* tmp_prefix) const {
  const nlohmann::json ref = read_json(ref_path(".f32-dequant.json"));
  const auto tokens = ref["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  TempDir dir(tmp_prefix);
  EngineSettings pack = reference_settings();
  pack.cache_vram_reserve_mib = 0;
  expect_pack_matches_gguf(model_path(), dir, tokens, make_cpu_backend, reference_settings(), pack);
  // With next-layer prefetch: the same logits bit for bit; some experts read ahead and used.
  TempDir dir_ahead(std::string(tmp_prefix) + "-prefetch");
  pack.prefetch_experts = true;
  std::vector<BudgetRun> runs;
  expect_pack_matches_gguf(model_path(), dir_ahead, tokens, make_cpu_backend, reference_settings(), pack,
                           &runs);
  expect_cpu_prefetch_used(runs, GetParam().name);
}

void GpuArchFixture::expect_matches_cpu_and_reference() const {
  const nlohmann::json ref = read_json(ref_path());
  const auto src = ModelSource::open(model_path());
  auto cpu = make_backend(src, parity_settings("cpu"));
  auto gpu = make_gpu(src, parity_settings("cuda"));
  ASSERT_EQ(gpu->name(), "cuda");
  EXPECT_EQ(expect_backends_agree_on_prompts(*cpu, *gpu, ref, GetParam().name), 5);
}

void GpuArchFixture::expect_all_logits_and_routing_match_cpu(std::initializer_list<int> prompts) const {
  const nlohmann::json ref = read_json(ref_path());
  const auto src = ModelSource::open(model_path());
  auto cpu = make_backend(src, parity_settings("cpu"));
  auto gpu = make_gpu(src, parity_settings("cuda"));
  for (const int pi : prompts) {
    const auto tokens = ref["prompts"][static_cast<size_t>(pi)]["token_ids"].get<std::vector<int32_t>>();
    SCOPED_TRACE("prompt " + std::to_string(pi));
    expect_all_logits_and_routing_agree(*cpu, *gpu, tokens, std::to_string(pi));
  }
}

void GpuArchFixture::expect_pack_matches_gguf_at_every_budget(const char* tmp_prefix, bool prefetch,
                                                              uint64_t ram_tier_mib) const {
  const nlohmann::json ref = read_json(ref_path());
  const auto tokens = ref["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  TempDir dir(tmp_prefix);
  EngineSettings pack = parity_settings("cuda");
  pack.stage_slots = 3;
  pack.prefetch_experts = prefetch;
  pack.cache_ram_mib = ram_tier_mib;
  std::vector<BudgetRun> runs;
  expect_pack_matches_gguf(model_path(), dir, tokens, make_gpu_, parity_settings("cuda"), pack, &runs);
  if (ram_tier_mib > 0) {
    expect_ram_tier_used(runs, std::filesystem::file_size(dir.file("pack") + "/experts.bin"));
  } else if (prefetch) {
    expect_prefetch_delivered_and_used(runs);  // (h2d == pack reads: no copies up from RAM)
  }
}

void GpuArchFixture::expect_broken_tensors_named(const char* tmp_prefix,
                                                 std::initializer_list<const char*> renamed,
                                                 const std::string& halved, uint64_t ne0) const {
  const std::vector<uint8_t> bytes = read_file(model_path());
  const auto find = [&](const std::string& name) {
    const auto it = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
    return it == bytes.end() ? size_t{0} : static_cast<size_t>(it - bytes.begin());
  };
  TempDir dir(tmp_prefix);
  std::vector<std::pair<std::string, bool>> cases;  // (tensor, rename)
  for (const char* r : renamed) cases.emplace_back(r, true);
  cases.emplace_back(halved, false);
  for (const auto& [tensor, rename] : cases) {
    SCOPED_TRACE(tensor);
    const size_t at = find(tensor);
    ASSERT_GT(at, 0u) << tensor << " not found in " << model_path();
    std::vector<uint8_t> bad = bytes;
    if (rename) {
      bad[at + tensor.size() - 7] = 'X';  // ".weight" -> "Xweight": the tensor is gone
    } else {
      uint64_t v = 0;  // after the name: u32 n_dims, then u64 ne[0]: halve it
      std::memcpy(&v, bad.data() + at + tensor.size() + 4, 8);
      ASSERT_EQ(v, ne0);
      v = ne0 / 2;
      std::memcpy(bad.data() + at + tensor.size() + 4, &v, 8);
    }
    const std::string path = dir.file("bad.gguf");
    write_file(path, bad);
    try {
      make_gpu(ModelSource::open(path), parity_settings("cuda"));
      ADD_FAILURE() << "expected a FormatError";
    } catch (const FormatError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(tensor), std::string::npos) << msg;
      EXPECT_NE(msg.find("bad.gguf"), std::string::npos) << msg;
    }
  }
}

void GpuArchFixture::expect_out_of_vram_fails_with_numbers() const {
  EngineSettings s = parity_settings("cuda");
  s.cache_vram_reserve_mib = uint64_t{1} << 30;  // 1 PiB
  try {
    make_gpu(ModelSource::open(model_path()), s);
    ADD_FAILURE() << "expected an out-of-VRAM Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("not enough VRAM"), std::string::npos) << msg;
    EXPECT_NE(msg.find("MiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find(model_path()), std::string::npos) << msg;
  }
}

}  // namespace moepack::test
