// `moepack bench-io --vram`: the expert path's delivery into VRAM, as core/io_bench.h's
// vram_delivery phase (compared there with raw O_DIRECT reads of the same file, same run).
#pragma once

#include "core/expert_pack.h"
#include "core/io_bench.h"

namespace moepack::gpu {

// First the plan's raw_direct_pinned region (core/io_bench.h raw_direct_reads) into page-locked
// memory (cudaHostAlloc, as the pool's staging): the like-for-like ceiling. Then the delivery:
// the plan's vram blocks made resident in io_bench_acquires' batches (options.batch experts
// of one layer per VramExpertPool::acquire: the misses of one layer of one token), through a
// pool of exactly `batch` slots with the LRU policy, so every acquire misses: O_DIRECT reads
// (options.reader, direct) into pinned staging, async copies into the slots. Timed from the
// first acquire until the last copy has landed (the compute stream waits on every slot's
// event). delivery: bytes = bytes copied into VRAM, reads = blocks delivered (cache misses: all
// of them unless the plan is not disjoint and repeats a block), seconds. ahead: the plan's
// vram_ahead blocks in the same kind of acquires through a pool of 3 batch slots that reads
// each acquire's experts two acquires ahead (VramExpertPool::prefetch, batch a round, the
// next acquire's experts protected), so one round is always in flight while the acquire waits
// for and copies the other; timed from the first prefetch until the last copy has landed;
// reads = prefetch reads + misses. Then the plan's rounds in order: each its raw region read as
// raw_direct reads it (ordinary buffers), then its random blocks and its consecutive blocks
// delivered as `delivery` (a fresh pool of the same settings each; acquires counted); odd
// rounds in the reverse order.
// Runs on CUDA device
// `device`. Throws Error (no device, VRAM, the pack's alignment), IoError.
VramDeliveryResult vram_delivery_phase(const ExpertPack& pack, const IoBenchOptions& options, const IoBenchPlan& plan,
                                       int device);

}  // namespace moepack::gpu
