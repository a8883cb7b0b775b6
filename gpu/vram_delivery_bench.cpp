#include "gpu/vram_delivery_bench.h"

#include <algorithm>
#include <chrono>
#include <string>

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
  const auto acquires = io_bench_acquires(plan.vram, batch);
  VramPoolSettings ps;
  ps.cache_bytes = static_cast<uint64_t>(batch) * L.max_stride;
  ps.reserve_bytes = 0;
  ps.stage_slots = batch;
  ps.reader = o.reader;
  ps.reader.direct_io = true;
  ps.policy = "lru";
  VramExpertPool pool(pack, ps, batch);
  Stream compute;
  double io_wait_ms = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [layer, ids] : acquires) {
    pool.acquire(layer, ids, compute.get(), &io_wait_ms);
    pool.release(compute.get());
    pool.end_step();
  }
  MOEPACK_CUDA_CHECK(cudaStreamSynchronize(compute.get()));
  r.delivery.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Only misses travel (a plan that is not disjoint may repeat a block, which may then hit).
  const VramPoolCounters c = pool.counters();
  r.delivery.bytes = c.h2d_bytes;
  r.delivery.reads = c.cache.cache_misses;
  return r;
}

}  // namespace moepack::gpu
