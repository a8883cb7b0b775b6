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
//   raw_direct_pinned  raw_direct again, into page-locked (cudaHostAlloc) buffers: the memory
//                   the expert path reads into (on a virtual disk it reads faster than ordinary
//                   4 KiB-page buffers: fewer segments per request)
//   vram_delivery   random distinct blocks made resident in VRAM slots by the expert path of
//                   the CUDA backend (gpu/vram_expert_pool.h: O_DIRECT into pinned staging,
//                   async copy to the slot; every acquire a miss), timed until the last copy
//                   has landed: vram_vs_raw_ratio = vram_delivery / raw_direct_pinned (issue 7:
//                   >= 0.9), vram_vs_raw_pageable_ratio = vram_delivery / raw_direct
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
  // When run_io_bench was given a VRAM phase:
  std::optional<IoBenchPhase> raw_direct_pinned, vram_delivery;
  double vram_vs_raw_ratio = 0, vram_vs_raw_pageable_ratio = 0;
};

// raw_direct's reads: the expert data from its start, sequentially, in chunks of
// raw_chunk_bytes (rounded to 4096) with up to min(queue_depth, 8) in flight, at most
// raw_max_bytes. `buffers` holds raw_read_depth(o) chunks of raw_read_chunk(o) bytes,
// 4096-aligned (the caller's memory: ordinary or page-locked).
uint64_t raw_read_chunk(const IoBenchOptions& o);
uint32_t raw_read_depth(const IoBenchOptions& o);
IoBenchPhase raw_direct_reads(const ExpertPack& pack, const IoBenchOptions& o, uint8_t* buffers);

struct VramDeliveryResult {
  IoBenchPhase raw_pinned, delivery;
};

// Every (layer, expert) block of the pack once, in a random order fixed by `seed` (what the
// expert phases read, in turn, repeating the order when asked for more reads).
std::vector<std::pair<uint32_t, uint32_t>> io_bench_blocks(const PackLayout& layout, uint64_t seed);

// The VRAM phases (gpu/vram_delivery_bench.h): raw_direct_reads into pinned memory, then the
// delivery (bytes = bytes copied into VRAM slots).
using VramDeliveryPhase = std::function<VramDeliveryResult(const ExpertPack&, const IoBenchOptions&)>;

// Throws IoError / Error from the reads (and whatever `vram` throws).
IoBenchResult run_io_bench(const ExpertPack& pack, const IoBenchOptions& options,
                           const VramDeliveryPhase& vram = {});
nlohmann::json io_bench_to_json(const ExpertPack& pack, const IoBenchOptions& options, const IoBenchResult& r);

}  // namespace moepack
