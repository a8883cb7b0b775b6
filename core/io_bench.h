// The I/O benchmark behind `moepack bench-io`: how fast the expert path delivers experts,
// as a ratio to what the same file system gives raw O_DIRECT reads in the same run.
//
// Three measurements over the pack's experts.bin, in one run:
//   raw_direct      large sequential O_DIRECT reads (`raw_chunk_bytes`, `queue_depth` in flight)
//                   of the expert data: the ceiling for this file on this disk
//   expert_direct   distinct (layer, expert) blocks in random order, `batch` at a time (one
//                   layer's misses), each
//                   one O_DIRECT request split `read_splits` ways: what a cache miss costs
//   expert_buffered the same blocks with buffered reads after dropping the file's pages
//                   from the page cache (posix_fadvise DONTNEED), as a baseline
// Ratios: expert_vs_raw_ratio = expert_direct / raw_direct (target >= 0.9 on real NVMe with
// large experts), direct_vs_buffered_ratio = expert_direct / expert_buffered.
// Optionally (CUDA builds, `moepack bench-io --vram`), between expert_direct and
// expert_buffered:
//   vram_delivery   random distinct blocks made resident in VRAM slots by the expert path of
//                   the CUDA backend (gpu/vram_expert_pool.h: O_DIRECT into pinned staging,
//                   async copy to the slot; every acquire a miss), timed until the last copy
//                   has landed: vram_vs_raw_ratio = vram_delivery / raw_direct (issue 7: >= 0.9)
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
};

struct IoBenchPhase {
  uint64_t bytes = 0;
  uint64_t reads = 0;
  double seconds = 0;
  double bytes_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }
};

struct IoBenchResult {
  IoBenchPhase raw_direct, expert_direct, expert_buffered;
  double expert_vs_raw_ratio = 0;
  double direct_vs_buffered_ratio = 0;
  bool page_cache_dropped = false;  // posix_fadvise(DONTNEED) succeeded before the buffered phase
  std::optional<IoBenchPhase> vram_delivery;  // when run_io_bench was given a VRAM phase
  double vram_vs_raw_ratio = 0;
};

// Every (layer, expert) block of the pack once, in a random order fixed by `seed` (what the
// expert phases read, in turn, repeating the order when asked for more reads).
std::vector<std::pair<uint32_t, uint32_t>> io_bench_blocks(const PackLayout& layout, uint64_t seed);

// The VRAM phase (gpu/vram_delivery_bench.h); bytes = bytes copied into VRAM slots.
using VramDeliveryPhase = std::function<IoBenchPhase(const ExpertPack&, const IoBenchOptions&)>;

// Throws IoError / Error from the reads (and whatever `vram` throws).
IoBenchResult run_io_bench(const ExpertPack& pack, const IoBenchOptions& options,
                           const VramDeliveryPhase& vram = {});
nlohmann::json io_bench_to_json(const ExpertPack& pack, const IoBenchOptions& options, const IoBenchResult& r);

}  // namespace moepack
