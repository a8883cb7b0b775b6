// bench_engine: prefill and decode tokens/s of the CPU engine on the demo model, GGUF path and
// Expert Pack path (all experts cached / a quarter cached), side by side in one run; then, at a
// quarter cached, next-layer prefetch off and on in alternating rounds (off, on, on, off, ...;
// `--rounds N` pairs, default 3), with each side's median. Prints one JSON object (a benchmark,
// not a test). Usage: bench_engine [MODEL.gguf] [--threads N] [--rounds N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "core/model_source.h"
#include "core/session.h"
#include "packbuilder/pack_builder.h"
#include "tests/support/gguf_writer.h"

using namespace moepack;

namespace {

nlohmann::json run(const std::string& path, const EngineSettings& st, const std::vector<int32_t>& prompt, int n_decode) {
  auto s = Session::load(path, st);
  GenerateOptions o;
  o.max_tokens = n_decode;
  o.ignore_eos = true;
  o.sampling.temperature = 0.0f;
  // Warm-up (page cache, allocations), then the measured run on a fresh KV cache.
  s->generate(prompt, o);
  s->reset();
  const GenerateResult r = s->generate(prompt, o);
  const BackendStats& b = r.stats;
  const double hits = static_cast<double>(b.cache_hits), misses = static_cast<double>(b.cache_misses);
  return {{"prompt_tokens", r.prompt_tokens.size()},
          {"completion_tokens", r.tokens.size()},
          {"prefill_tokens_per_s", r.prefill_tokens_per_s},
          {"decode_tokens_per_s", r.decode_tokens_per_s},
          {"io_wait_ms", b.io_wait_ms},
          {"prefetch_reads", b.prefetch_reads},
          {"prefetch_hits", b.prefetch_hits},
          {"pack_read_bytes", b.pack_read_bytes},
          {"compute_ms", b.compute_ms},
          {"cache_slots", b.cache_slots},
          {"hit_rate", hits + misses > 0 ? hits / (hits + misses) : 1.0},
          {"pack_read_bytes_per_token", r.tokens.empty() ? 0.0 : static_cast<double>(b.pack_read_bytes) / static_cast<double>(r.tokens.size())}};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = std::string(MOEPACK_SOURCE_DIR) + "/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";
  uint32_t threads = std::max(1u, std::thread::hardware_concurrency());
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = static_cast<uint32_t>(std::stoul(argv[++i]));
    } else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::max(1, std::stoi(argv[++i]));
    } else {
      model = argv[i];
    }
  }
  try {
    test::TempDir dir("moepack-bench-engine");
    BuildOptions bo;
    bo.source = model;
    bo.out_dir = dir.file("pack");
    bo.safety_margin_bytes = 0;
    build_pack(bo);
    EngineSettings st;
    st.backend = "cpu";
    st.threads = threads;
    st.cache_vram_reserve_mib = 0;
    auto probe = Session::load(model, st);
    std::vector<int32_t> prompt;
    const std::string text =
        "The salmon is a fish that lives in the ocean and swims up rivers to spawn in fresh water. ";
    while (prompt.size() < 200) {
      const auto t = probe->tokenize(text);
      prompt.insert(prompt.end(), t.begin(), t.end());
    }
    prompt.resize(200);
    probe.reset();
    const auto src = ModelSource::open(bo.out_dir);
    const uint64_t slot = src->pack()->layout().max_stride;
    const uint64_t experts = src->pack()->layout().expert_count();
    nlohmann::json out;
    out["model"] = model;
    out["threads"] = threads;
    out["gguf"] = run(model, st, prompt, 64);
    EngineSettings all = st;
    all.cache_bytes = experts * slot;
    out["pack_all_cached"] = run(bo.out_dir, all, prompt, 64);
    EngineSettings quarter = st;
    quarter.cache_bytes = experts / 4 * slot;
    out["pack_quarter_cached"] = run(bo.out_dir, quarter, prompt, 64);
    out["pack_vs_gguf_decode_ratio"] = out["pack_all_cached"]["decode_tokens_per_s"].get<double>() /
                                       out["gguf"]["decode_tokens_per_s"].get<double>();
    out["pack_quarter_vs_gguf_decode_ratio"] = out["pack_quarter_cached"]["decode_tokens_per_s"].get<double>() /
                                               out["gguf"]["decode_tokens_per_s"].get<double>();
    // Prefetch off / on at a quarter cached, alternating so drift in the machine's load or the
    // disk's rate falls on both sides alike.
    nlohmann::json pf = nlohmann::json::array();
    std::vector<double> decode[2], prefill[2], io_wait[2];
    for (int r = 0; r < 2 * rounds; ++r) {
      const bool on = (r % 4 == 1 || r % 4 == 2);
      EngineSettings q = quarter;
      q.prefetch_experts = on;
      nlohmann::json row = run(bo.out_dir, q, prompt, 64);
      row["prefetch_experts"] = on;
      decode[on].push_back(row["decode_tokens_per_s"].get<double>());
      prefill[on].push_back(row["prefill_tokens_per_s"].get<double>());
      io_wait[on].push_back(row["io_wait_ms"].get<double>());
      pf.push_back(std::move(row));
    }
    out["prefetch_quarter_cached"] = {
        {"rounds", pf},
        {"decode_tokens_per_s_median", {{"off", median(decode[0])}, {"on", median(decode[1])}}},
        {"prefill_tokens_per_s_median", {{"off", median(prefill[0])}, {"on", median(prefill[1])}}},
        {"io_wait_ms_median", {{"off", median(io_wait[0])}, {"on", median(io_wait[1])}}},
        {"decode_on_vs_off", median(decode[1]) / median(decode[0])}};
    std::printf("%s\n", out.dump(2).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_engine: %s\n", e.what());
    return 1;
  }
  return 0;
}
