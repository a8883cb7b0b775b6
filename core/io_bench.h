// The I/O benchmark behind `moepack bench-io`: how fast the expert path delivers experts,
// as a ratio to what the same file system gives raw O_DIRECT reads in the same run.
//
// Three measurements (five with the VRAM phases below) over the pack's experts.bin, in one run (io_bench_plan
// says which bytes each reads: different bytes when the pack is large enough):
//   raw_direct      large sequential O_DIRECT reads (`raw_chunk_bytes`, `queue_depth` in flight)
//                   of the expert data: the ceiling for this file on this disk
//   expert_direct   distinct (layer, expert) blocks in random order, `batch` at a time (one
//                   layer's misses), each one O_DIRECT request split `read_splits` ways: what a
//                   cache miss costs
//   expert_buffered as many other random blocks with buffered reads after dropping the file's
//                   pages from the page cache (posix_fadvise DONTNEED), as a baseline
// Ratios: expert_vs_raw_ratio = expert_direct / raw_direct (target >= 0.9 on real NVMe with
// large experts), direct_vs_buffered_ratio = expert_direct / expert_buffered.
// Optionally (CUDA builds, `moepack bench-io --vram`), between expert_direct and
// expert_buffered:
//   raw_direct_pinned  as many raw bytes (the next region of the file) into page-locked
//                   (cudaHostAlloc) buffers: the memory the expert path reads into
//   vram_delivery   random distinct blocks made resident in VRAM slots by the expert path of
//                   the CUDA backend (gpu/vram_expert_pool.h: O_DIRECT into pinned staging,
//                   async copy to the slot; every acquire a miss), timed until the last copy
//                   has landed: vram_vs_raw_ratio = vram_delivery / raw_direct (issue 7:
//                   >= 0.9), vram_vs_raw_pinned_ratio = vram_delivery / raw_direct_pinned
//   vram_ahead      as many other blocks, in acquires of the same kind, through the pool's prefetch
//                   (the engine's next-layer prefetch with every prediction right): each
//                   acquire's reads submitted two acquires ahead, so the disk always has the
//                   next batch in flight while one is waited for and copied; the ratios
//                   vram_ahead_vs_raw_ratio and vram_ahead_vs_raw_pinned_ratio as above
//   rounds          (`rounds` > 0) after those, `rounds` alternating rounds of a raw_direct
//                   read (ordinary buffers, as raw_direct), a vram_delivery of as many random
//                   blocks as above, and a vram_sequential delivery of as many consecutive
//                   blocks (file order: acquires of neighbouring experts of one layer), each on
//                   bytes of its own, in that order in even rounds and reversed in odd ones. A
//                   disk whose rate drifts during the run (a virtual disk's host) moves a
//                   round's phases alike, and the reversed order keeps a drift within a
//                   round from favouring one phase. vram_sequential against vram_delivery
//                   compares file order with random order on this disk (a random set also
//                   leaves partial batches per layer: the phases' `acquires`)
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/direct_reader.h"
#include "core/expert_pack.h"

namespace moepack {

struct IoBenchOptions {
  uint64_t expert_reads = 512;            // random blocks per expert measurement
  uint32_t batch = 8;                     // blocks submitted together
  uint64_t raw_chunk_bytes = 16ull << 20;  // raw read size (rounded to 4096)
  uint64_t raw_max_bytes = 2ull << 30;     // raw bytes read at most
  ReaderSettings reader;                  // read_splits, queue_depth (direct_io is set per phase)
  uint64_t seed = 1;
  uint32_t rounds = 0;  // alternating raw / VRAM rounds (with a VRAM phase only)
};

struct IoBenchPhase {
  uint64_t bytes = 0;
  uint64_t reads = 0;
  double seconds = 0;
  uint64_t acquires = 0;  // VRAM deliveries: VramExpertPool::acquire calls (0: not counted)
  double bytes_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }
};

struct IoBenchResult {
  IoBenchPhase raw_direct, expert_direct, expert_buffered;
  double expert_vs_raw_ratio = 0;
  double direct_vs_buffered_ratio = 0;
  bool page_cache_dropped = false;  // posix_fadvise(DONTNEED) succeeded before the buffered phase
  bool disjoint = true;             // IoBenchPlan::disjoint
  // When run_io_bench was given a VRAM phase:
  std::optional<IoBenchPhase> raw_direct_pinned, vram_delivery, vram_ahead;
  double vram_vs_raw_ratio = 0, vram_vs_raw_pinned_ratio = 0;
  double vram_ahead_vs_raw_ratio = 0, vram_ahead_vs_raw_pinned_ratio = 0;
  // The alternating rounds (IoBenchOptions::rounds), in run order; ratios over raw_direct of
  // the same round. Median (the mean of the middle two for an even count), min and max of the
  // rounds' ratios; 0 without rounds.
  struct Round {
    IoBenchPhase raw_direct, vram_delivery, vram_sequential;
    double vram_vs_raw_ratio = 0, sequential_vs_raw_ratio = 0;
  };
  struct Spread {
    double median = 0, min = 0, max = 0;
  };
  std::vector<Round> rounds;
  Spread rounds_vram_vs_raw, rounds_sequential_vs_raw;
};

// The median of `v` (the mean of the middle two for an even count); 0 for none.
double io_bench_median(std::vector<double> v);

// Every (layer, expert) block of the pack once, in a random order fixed by `seed`.
std::vector<std::pair<uint32_t, uint32_t>> io_bench_blocks(const PackLayout& layout, uint64_t seed);

// Which bytes each phase reads. The raw phases read consecutive regions from the start of the
// expert data; the random phases draw distinct blocks from the rest of the file (seeded shuffle),
// each phase its own expert_reads of them. So when the pack is large enough no two phases read
// the same bytes, and no cache below the page cache (a virtual disk's host, a drive's own)
// serves one phase from another's reads (measured on the GPU machine: a repeated read ran up
// to 1.8x faster, docs/cuda-backend.md). When it is not, `disjoint` is false and the phases
// share bytes: raw_direct_pinned re-reads raw_direct's region and the random phases take their
// blocks cyclically from a shuffle of the whole pack.
struct IoBenchPlan {
  uint64_t raw_begin = 0, raw_bytes = 0;  // raw_direct: [raw_begin, raw_begin + raw_bytes)
  uint64_t raw_pinned_begin = 0;          // raw_direct_pinned (with a VRAM phase): raw_bytes from here
  // (layer, expert), read order; vram and vram_ahead only with a VRAM phase
  std::vector<std::pair<uint32_t, uint32_t>> direct, vram, vram_ahead, buffered;
  bool disjoint = true;
  // With a VRAM phase and options.rounds > 0: round k reads raw_bytes from raw_begin (the raw
  // regions after raw_direct_pinned's, one a round), delivers `vram` (expert_reads random
  // blocks) and `sequential` (expert_reads consecutive blocks in file order: the rounds' runs
  // back to back right after the raw regions, the random blocks all after them). No block is
  // read by two phases or rounds.
  struct Round {
    uint64_t raw_begin = 0;
    std::vector<std::pair<uint32_t, uint32_t>> vram, sequential;
  };
  std::vector<Round> rounds;
};
// At most this many alternating rounds (IoBenchOptions::rounds).
inline constexpr uint64_t kIoBenchMaxRounds = 1000;
// raw_bytes = min(raw_max_bytes rounded down to 4096 (at least 4096), the expert data).
// Rounds only on bytes of their own: throws Error (naming the sizes and the largest value that
// fits) when the expert data cannot hold 2 + rounds raw regions and 4 + 2 rounds sets of
// expert_reads blocks after them; also for more than kIoBenchMaxRounds rounds or expert_reads 0.
IoBenchPlan io_bench_plan(const PackLayout& layout, const IoBenchOptions& options, bool with_vram);

// raw_direct's reads: `bytes` from `begin` of experts.bin, sequentially, in chunks of
// raw_read_chunk(o) bytes with up to raw_read_depth(o) (min(queue_depth, 8)) in flight.
// `buffers` holds raw_read_depth(o) chunks, 4096-aligned (ordinary or page-locked memory).
uint64_t raw_read_chunk(const IoBenchOptions& o);
uint32_t raw_read_depth(const IoBenchOptions& o);
IoBenchPhase raw_direct_reads(const ExpertPack& pack, const IoBenchOptions& o, uint64_t begin, uint64_t bytes,
                              uint8_t* buffers);

// The VRAM phase's acquires: `blocks` walked in order into one bucket per layer; a bucket is
// issued when it holds `batch` experts (or before it would hold one twice), the partial ones at
// the end in layer order. So every acquire but the last of each layer has `batch` experts.
std::vector<std::pair<uint32_t, std::vector<uint32_t>>> io_bench_acquires(
    const std::vector<std::pair<uint32_t, uint32_t>>& blocks, uint32_t batch);

struct VramDeliveryResult {
  IoBenchPhase raw_pinned, delivery, ahead;
  struct Round {
    IoBenchPhase raw_direct, delivery, sequential;
  };
  std::vector<Round> rounds;  // one a plan round, in its order
};

// The VRAM phases (gpu/vram_delivery_bench.h): the plan's raw_direct_pinned region into pinned
// memory, then the plan's vram blocks delivered into VRAM (bytes = bytes copied into slots),
// then its vram_ahead blocks, read two acquires ahead, then the plan's rounds in order (each:
// its raw region into ordinary buffers, then its random and its consecutive blocks delivered
// as `delivery`).
using VramDeliveryPhase =
    std::function<VramDeliveryResult(const ExpertPack&, const IoBenchOptions&, const IoBenchPlan&)>;

// Throws IoError / Error from the reads (and whatever `vram` throws).
IoBenchResult run_io_bench(const ExpertPack& pack, const IoBenchOptions& options,
                           const VramDeliveryPhase& vram = {});
nlohmann::json io_bench_to_json(const ExpertPack& pack, const IoBenchOptions& options, const IoBenchResult& r);

}  // namespace moepack
