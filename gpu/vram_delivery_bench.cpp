#include "gpu/vram_delivery_bench.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/aligned_buffer.h"
#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/vram_expert_pool.h"

namespace moepack::gpu {

VramDeliveryResult vram_delivery_phase(const ExpertPack& pack, const IoBenchOptions& o, const IoBenchPlan& plan,
                                       int device) {
  int n_devices = 0;
  if (cudaGetDeviceCount(&n_devices) != cudaSuccess || device < 0 || device >= n_devices) {
    cudaGetLastError();
    throw Error("bench-io --vram: no CUDA device " + std::to_string(device) + " (" + std::to_string(n_devices) +
                " found)");
  }
  MOEPACK_CUDA_CHECK(cudaSetDevice(device));
  VramDeliveryResult r;
  {
    const PinnedBuffer raw(static_cast<size_t>(raw_read_chunk(o)) * raw_read_depth(o), "bench-io raw reads");
    r.raw_pinned = raw_direct_reads(pack, o, plan.raw_pinned_begin, plan.raw_bytes, raw.bytes_ptr());
  }
  const PackLayout& L = pack.layout();
  uint32_t batch = std::max<uint32_t>(1, o.batch);
  for (const auto& layer : L.layers) batch = std::min(batch, std::max<uint32_t>(1, layer.n_experts));
  VramPoolSettings ps;
  ps.cache_bytes = static_cast<uint64_t>(batch) * L.max_stride;
  ps.reserve_bytes = 0;
  ps.stage_slots = batch;
  ps.reader = o.reader;
  ps.reader.direct_io = true;
  ps.policy = "lru";
  Stream compute;
  double io_wait_ms = 0;
  // `blocks` delivered in io_bench_acquires' batches through a pool of `batch` slots (every acquire
  // a miss), timed until the compute stream has waited for every copy.
  const auto deliver = [&, ps](const std::vector<std::pair<uint32_t, uint32_t>>& blocks) {
    const auto acquires = io_bench_acquires(blocks, batch);
    IoBenchPhase d;
    VramExpertPool pool(pack, ps, batch);
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& [layer, ids] : acquires) {
      pool.acquire(layer, ids, compute.get(), &io_wait_ms);
      pool.release(compute.get());
      pool.end_step();
    }
    MOEPACK_CUDA_CHECK(cudaStreamSynchronize(compute.get()));
    d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Only misses travel (a plan that is not disjoint may repeat a block, which may then hit).
    const VramPoolCounters c = pool.counters();
    d.bytes = c.h2d_bytes;
    d.reads = c.cache.cache_misses;
    d.acquires = acquires.size();
    return d;
  };
  r.delivery = deliver(plan.vram);
  {  // its own pool, freed before the rounds
    // Acquires of the same kind over other blocks, through prefetch(), two acquires ahead: slots for the
    // acquire and both rounds in flight, `batch` reads a round.
    const auto ahead = io_bench_acquires(plan.vram_ahead, batch);
    ps.cache_bytes = 3ull * batch * L.max_stride;
    ps.prefetch_slots = batch;
    VramExpertPool pool(pack, ps, batch);
    const auto keys = [&](size_t i) {
      std::vector<ExpertKey> k;
      if (i < ahead.size()) {
        for (const uint32_t e : ahead[i].second) k.push_back(ExpertKey{ahead[i].first, e});
      }
      return k;
    };
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < 2 && i < ahead.size(); ++i) {
      pool.prefetch(ahead[i].first, ahead[i].second, keys(0), &io_wait_ms);
    }
    for (size_t i = 0; i < ahead.size(); ++i) {
      pool.acquire(ahead[i].first, ahead[i].second, compute.get(), &io_wait_ms);
      pool.release(compute.get());
      pool.end_step();
      if (i + 2 < ahead.size()) {
        pool.prefetch(ahead[i + 2].first, ahead[i + 2].second, keys(i + 1), &io_wait_ms);
      }
    }
    MOEPACK_CUDA_CHECK(cudaStreamSynchronize(compute.get()));
    r.ahead.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Blocks read: the prefetches, and the acquires' own misses that no prefetch served (none
    // while every prefetch finds room, pool.prefetch's rule; ExpertCache counts a used prefetch as
    // a miss and a prefetch hit).
    const VramPoolCounters c = pool.counters();
    r.ahead.bytes = c.h2d_bytes;
    r.ahead.reads = c.cache.prefetches + (c.cache.cache_misses - c.cache.prefetch_hits);
  }
  // The alternating rounds: raw reads into ordinary buffers (raw_direct's), the random blocks'
  // delivery, the consecutive blocks' delivery (each through a pool as `delivery`'s); in odd
  // rounds the other way round, so that a drift within a round favours no phase.
  if (!plan.rounds.empty()) {
    AlignedBuffer raw(static_cast<size_t>(raw_read_chunk(o)) * raw_read_depth(o), kPackAlignment);
    for (size_t i = 0; i < plan.rounds.size(); ++i) {
      const IoBenchPlan::Round& round = plan.rounds[i];
      VramDeliveryResult::Round k;
      if (i % 2 == 0) {
        k.raw_direct = raw_direct_reads(pack, o, round.raw_begin, plan.raw_bytes, raw.data());
        k.delivery = deliver(round.vram);
        k.sequential = deliver(round.sequential);
      } else {
        k.sequential = deliver(round.sequential);
        k.delivery = deliver(round.vram);
        k.raw_direct = raw_direct_reads(pack, o, round.raw_begin, plan.raw_bytes, raw.data());
      }
      r.rounds.push_back(k);
    }
  }
  return r;
}

}  // namespace moepack::gpu
