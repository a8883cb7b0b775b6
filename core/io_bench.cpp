#include "core/io_bench.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/aligned_buffer.h"
#include "core/error.h"

namespace moepack {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool drop_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return ok;
}

// Reads `blocks` (the plan's list for this phase), `batch` at a time.
IoBenchPhase random_experts(const ExpertPack& pack, const IoBenchOptions& o, bool direct,
                            const std::vector<std::pair<uint32_t, uint32_t>>& blocks) {
  ReaderSettings rs = o.reader;
  rs.direct_io = direct;
  DirectReader reader(pack.experts_path(), rs);
  const PackLayout& L = pack.layout();
  const uint32_t batch = std::max<uint32_t>(1, o.batch);
  AlignedBuffer buf(static_cast<size_t>(L.max_stride) * batch, kPackAlignment);
  IoBenchPhase p;
  const double t0 = now_s();
  std::vector<ReadRequest> reqs;
  while (p.reads < blocks.size()) {
    reqs.clear();
    for (uint32_t k = 0; k < batch && p.reads < blocks.size(); ++k, ++p.reads) {
      const auto [l, e] = blocks[p.reads];
      reqs.push_back({L.offset(l, e), L.layers[l].stride, buf.data() + k * L.max_stride, k});
      p.bytes += L.layers[l].stride;
    }
    reader.read_all(reqs);
  }
  p.seconds = now_s() - t0;
  return p;
}

IoBenchResult::Spread spread_of(const std::vector<double>& v) {
  if (v.empty()) return {};
  return {io_bench_median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

// a's bytes/s over b's; 0 when b has none.
double rate_ratio(const IoBenchPhase& a, const IoBenchPhase& b) {
  return b.bytes_per_second() > 0 ? a.bytes_per_second() / b.bytes_per_second() : 0.0;
}

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> io_bench_blocks(const PackLayout& L, uint64_t seed) {
  std::vector<std::pair<uint32_t, uint32_t>> blocks;
  for (uint32_t l = 0; l < L.layers.size(); ++l) {
    for (uint32_t e = 0; e < L.layers[l].n_experts; ++e) blocks.emplace_back(l, e);
  }
  std::mt19937_64 rng(seed);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  return blocks;
}

double io_bench_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

IoBenchPlan io_bench_plan(const PackLayout& L, const IoBenchOptions& o, bool with_vram) {
  IoBenchPlan plan;
  const uint64_t data = L.data_end > L.data_start ? L.data_end - L.data_start : 0;
  plan.raw_begin = plan.raw_pinned_begin = L.data_start;
  plan.raw_bytes = std::min(std::max<uint64_t>(kPackAlignment, o.raw_max_bytes / kPackAlignment * kPackAlignment),
                            data);  // data is a multiple of 4096
  const uint64_t rounds = with_vram ? o.rounds : 0;
  const uint64_t n_random = with_vram ? 4 : 2;
  const uint64_t mib = 1ull << 20;
  if (rounds > 0) {
    if (rounds > kIoBenchMaxRounds) {
      throw Error("bench-io: --rounds " + std::to_string(rounds) + " is more than " +
                  std::to_string(kIoBenchMaxRounds));
    }
    if (o.expert_reads == 0)
      throw Error("bench-io --rounds: --reads must be at least 1 (each round delivers that many)");
    // 2 + rounds raw regions (raw, pinned, one a round), compared by division: no overflow.
    if (plan.raw_bytes > data / (2 + rounds)) {
      // The largest region that leaves room for the blocks too (and one block cut at the edge).
      const uint64_t sets = n_random + 2 * rounds, stride = std::max<uint64_t>(1, L.max_stride);
      const uint64_t blocks =
          o.expert_reads <= data / stride / sets ? (sets * o.expert_reads + 1) * stride : data;
      const uint64_t fit = (data - std::min(blocks, data)) / (2 + rounds) / mib;
      const auto in_mib = [](uint64_t bytes) {
        char t[32];
        std::snprintf(t, sizeof t, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
        return std::string(t);
      };
      throw Error("bench-io --rounds " + std::to_string(rounds) + ": the expert data (" + in_mib(data) +
                  ") cannot hold " + std::to_string(2 + rounds) + " raw regions of " +
                  in_mib(plan.raw_bytes) +
                  (fit > 0 ? ": use --raw-max-mib " + std::to_string(fit) + " or less"
                           : ": the pack is too small for this many rounds"));
    }
  }
  uint64_t raw_end = L.data_start + plan.raw_bytes;
  if (with_vram) {
    if (2 * plan.raw_bytes <= data) {
      plan.raw_pinned_begin = raw_end;
      raw_end += plan.raw_bytes;
    } else {
      plan.disjoint = false;
    }
  }
  for (uint64_t k = 0; k < rounds; ++k) {
    plan.rounds.push_back({raw_end, {}, {}});
    raw_end += plan.raw_bytes;
  }
  if (rounds > 0) {
    // The rounds' consecutive blocks: the first rounds x expert_reads blocks in file order from
    // raw_end, a run a round; the random blocks below all lie after them.
    std::vector<std::pair<uint64_t, std::pair<uint32_t, uint32_t>>> in_order;
    for (uint32_t l = 0; l < L.layers.size(); ++l) {
      for (uint32_t e = 0; e < L.layers[l].n_experts; ++e) {
        if (L.offset(l, e) >= raw_end) in_order.push_back({L.offset(l, e), {l, e}});
      }
    }
    std::sort(in_order.begin(), in_order.end());
    // n_random + 2 rounds sets of expert_reads blocks (compared by division: no overflow).
    const uint64_t sets = n_random + 2 * rounds;
    if (o.expert_reads > in_order.size() / sets) {
      const uint64_t fit = in_order.size() / sets;
      throw Error("bench-io --rounds " + std::to_string(rounds) + ": " + std::to_string(in_order.size()) +
                  " expert blocks lie after the raw regions, not " + std::to_string(sets) + " sets of " +
                  std::to_string(o.expert_reads) +
                  (fit > 0 ? ": use --reads " + std::to_string(fit) + " or less, or a smaller --raw-max-mib"
                           : ": use a smaller --raw-max-mib or fewer rounds"));
    }
    const uint64_t need = rounds * o.expert_reads;
    for (uint64_t i = 0; i < need; ++i)
      plan.rounds[i / o.expert_reads].sequential.push_back(in_order[i].second);
    raw_end = need > 0 ? in_order[need].first : raw_end;  // the first block after the runs
  }
  // Blocks wholly after the raw regions (and the rounds' runs), shuffled; each random phase its
  // own slice.
  std::vector<std::pair<uint32_t, uint32_t>> pool;
  for (const auto& b : io_bench_blocks(L, o.seed)) {
    if (L.offset(b.first, b.second) >= raw_end) pool.push_back(b);
  }
  if (rounds > 0) {
    // The rounds' random blocks from the end of the shuffle, the phases' below from its start.
    for (uint64_t k = 0; k < rounds; ++k) {
      for (uint64_t i = 0; i < o.expert_reads; ++i) {
        plan.rounds[k].vram.push_back(pool.back());
        pool.pop_back();
      }
    }
  }
  if (!plan.disjoint || o.expert_reads > pool.size() / n_random) {  // by division: no overflow
    plan.disjoint = false;
    pool = io_bench_blocks(L, o.seed);
  }
  std::vector<std::pair<uint32_t, uint32_t>>* lists[4] = {
      &plan.direct, with_vram ? &plan.vram : &plan.buffered, &plan.vram_ahead, &plan.buffered};
  if (pool.empty()) return plan;
  uint64_t at = 0;
  for (uint64_t ph = 0; ph < n_random; ++ph) {
    for (uint64_t i = 0; i < o.expert_reads; ++i) lists[ph]->push_back(pool[at++ % pool.size()]);
  }
  return plan;
}

std::vector<std::pair<uint32_t, std::vector<uint32_t>>> io_bench_acquires(
    const std::vector<std::pair<uint32_t, uint32_t>>& blocks, uint32_t batch) {
  batch = std::max<uint32_t>(1, batch);
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> out;
  std::map<uint32_t, std::vector<uint32_t>> bucket;
  for (const auto& [l, e] : blocks) {
    std::vector<uint32_t>& b = bucket[l];
    if (std::find(b.begin(), b.end(), e) != b.end()) {  // one acquire takes distinct experts
      out.emplace_back(l, std::move(b));
      b.clear();
    }
    b.push_back(e);
    if (b.size() == batch) {
      out.emplace_back(l, std::move(b));
      b.clear();
    }
  }
  for (auto& [l, b] : bucket) {
    if (!b.empty()) out.emplace_back(l, std::move(b));
  }
  return out;
}

uint64_t raw_read_chunk(const IoBenchOptions& o) {
  return std::max<uint64_t>(kPackAlignment, o.raw_chunk_bytes / kPackAlignment * kPackAlignment);
}

uint32_t raw_read_depth(const IoBenchOptions& o) {
  return std::max<uint32_t>(1, std::min<uint32_t>(o.reader.queue_depth, 8));
}

IoBenchPhase raw_direct_reads(const ExpertPack& pack, const IoBenchOptions& o, uint64_t begin, uint64_t bytes,
                              uint8_t* buffers) {
  ReaderSettings rs = o.reader;
  rs.direct_io = true;
  rs.read_splits = 1;
  DirectReader reader(pack.experts_path(), rs);
  const uint64_t chunk = raw_read_chunk(o);
  const uint32_t depth = raw_read_depth(o);
  const uint64_t end = begin + bytes;
  IoBenchPhase p;
  const double t0 = now_s();
  uint64_t off = begin;
  std::vector<ReadRequest> reqs;
  while (off < end) {
    reqs.clear();
    for (uint32_t k = 0; k < depth && off < end; ++k) {
      const uint64_t len = std::min(chunk, end - off);  // multiples of 4096
      reqs.push_back({off, len, buffers + k * chunk, k});
      p.bytes += len;
      p.reads++;
      off += len;
    }
    reader.read_all(reqs);
  }
  p.seconds = now_s() - t0;
  return p;
}

IoBenchResult run_io_bench(const ExpertPack& pack, const IoBenchOptions& o, const VramDeliveryPhase& vram) {
  IoBenchResult r;
  const IoBenchPlan plan = io_bench_plan(pack.layout(), o, static_cast<bool>(vram));
  r.disjoint = plan.disjoint;
  {  // raw: large sequential direct reads of the expert data
    AlignedBuffer buf(static_cast<size_t>(raw_read_chunk(o)) * raw_read_depth(o), kPackAlignment);
    r.raw_direct = raw_direct_reads(pack, o, plan.raw_begin, plan.raw_bytes, buf.data());
  }
  r.expert_direct = random_experts(pack, o, true, plan.direct);
  if (vram) {
    const VramDeliveryResult v = vram(pack, o, plan);
    r.raw_direct_pinned = v.raw_pinned;
    r.vram_delivery = v.delivery;
    r.vram_ahead = v.ahead;
    r.vram_vs_raw_ratio = rate_ratio(v.delivery, r.raw_direct);
    r.vram_vs_raw_pinned_ratio = rate_ratio(v.delivery, v.raw_pinned);
    r.vram_ahead_vs_raw_ratio = rate_ratio(v.ahead, r.raw_direct);
    r.vram_ahead_vs_raw_pinned_ratio = rate_ratio(v.ahead, v.raw_pinned);
    std::vector<double> random, sequential;
    for (const auto& k : v.rounds) {
      r.rounds.push_back({k.raw_direct, k.delivery, k.sequential, rate_ratio(k.delivery, k.raw_direct),
                          rate_ratio(k.sequential, k.raw_direct)});
      random.push_back(r.rounds.back().vram_vs_raw_ratio);
      sequential.push_back(r.rounds.back().sequential_vs_raw_ratio);
    }
    r.rounds_vram_vs_raw = spread_of(random);
    r.rounds_sequential_vs_raw = spread_of(sequential);
  }
  r.page_cache_dropped = drop_page_cache(pack.experts_path());
  r.expert_buffered = random_experts(pack, o, false, plan.buffered);
  r.expert_vs_raw_ratio = rate_ratio(r.expert_direct, r.raw_direct);
  r.direct_vs_buffered_ratio = rate_ratio(r.expert_direct, r.expert_buffered);
  return r;
}

nlohmann::json io_bench_to_json(const ExpertPack& pack, const IoBenchOptions& o, const IoBenchResult& r) {
  auto phase = [](const IoBenchPhase& p) {
    nlohmann::json j{{"bytes", p.bytes},
                     {"reads", p.reads},
                     {"seconds", p.seconds},
                     {"bytes_per_second", p.bytes_per_second()}};
    if (p.acquires > 0) j["acquires"] = p.acquires;
    return j;
  };
  nlohmann::json j{{"pack", pack.dir()},
                   {"experts_file_bytes", pack.layout().data_end},
                   {"max_stride", pack.layout().max_stride},
                   {"settings",
                    {{"expert_reads", o.expert_reads},
                     {"batch", o.batch},
                     {"read_splits", o.reader.read_splits},
                     {"queue_depth", o.reader.queue_depth},
                     {"raw_chunk_bytes", o.raw_chunk_bytes},
                     {"raw_max_bytes", o.raw_max_bytes},
                     {"seed", o.seed},
                     {"rounds", o.rounds}}},
                   {"raw_direct", phase(r.raw_direct)},
                   {"expert_direct", phase(r.expert_direct)},
                   {"expert_buffered", phase(r.expert_buffered)},
                   {"page_cache_dropped", r.page_cache_dropped},
                   {"phases_read_different_bytes", r.disjoint},
                   {"expert_vs_raw_ratio", r.expert_vs_raw_ratio},
                   {"direct_vs_buffered_ratio", r.direct_vs_buffered_ratio}};
  if (r.vram_delivery) {
    j["raw_direct_pinned"] = phase(*r.raw_direct_pinned);
    j["vram_delivery"] = phase(*r.vram_delivery);
    j["vram_vs_raw_ratio"] = r.vram_vs_raw_ratio;
    j["vram_vs_raw_pinned_ratio"] = r.vram_vs_raw_pinned_ratio;
    j["vram_ahead"] = phase(*r.vram_ahead);
    j["vram_ahead_vs_raw_ratio"] = r.vram_ahead_vs_raw_ratio;
    j["vram_ahead_vs_raw_pinned_ratio"] = r.vram_ahead_vs_raw_pinned_ratio;
    if (!r.rounds.empty()) {
      nlohmann::json rounds = nlohmann::json::array();
      for (const auto& k : r.rounds) {
        rounds.push_back({{"raw_direct", phase(k.raw_direct)},
                          {"vram_delivery", phase(k.vram_delivery)},
                          {"vram_sequential", phase(k.vram_sequential)},
                          {"vram_vs_raw_ratio", k.vram_vs_raw_ratio},
                          {"sequential_vs_raw_ratio", k.sequential_vs_raw_ratio}});
      }
      const auto spread = [](const IoBenchResult::Spread& x) {
        return nlohmann::json{{"median", x.median}, {"min", x.min}, {"max", x.max}};
      };
      j["rounds"] = rounds;
      j["rounds_vram_vs_raw_ratio"] = spread(r.rounds_vram_vs_raw);
      j["rounds_sequential_vs_raw_ratio"] = spread(r.rounds_sequential_vs_raw);
    }
  }
  return j;
}

}  // namespace moepack
