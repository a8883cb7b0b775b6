#include "gpu/vram_delivery_bench.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/vram_expert_pool.h"

namespace moepack::gpu {

VramDeliveryResult vram_delivery_phase(const ExpertPack& pack, const IoBenchOptions& o, int device) {
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
    r.raw_pinned = raw_direct_reads(pack, o, raw.bytes_ptr());
  }
  const PackLayout& L = pack.layout();
  uint32_t batch = std::max<uint32_t>(1, o.batch);
  for (const auto& layer : L.layers) batch = std::min(batch, layer.n_experts);
  if (L.layers.empty() || batch == 0) throw Error(pack.dir() + ": the pack has a layer without experts");
  // The blocks of io_bench_blocks' order from position expert_reads on (after those the
  // expert_direct phase read: with at least 2 x expert_reads blocks in the pack no block is read
  // twice in one run, which a virtual disk's host cache would serve), queued per layer; each
  // acquire takes the next `batch` of one layer, layers in turn (with two layers or more, two
  // acquires in a row never share a block).
  const std::vector<std::pair<uint32_t, uint32_t>> blocks = io_bench_blocks(L, o.seed);
  std::map<uint32_t, std::vector<uint32_t>> queued;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto& [l, e] = blocks[(o.expert_reads + i) % blocks.size()];
    queued[l].push_back(e);
  }
  VramPoolSettings ps;
  ps.cache_bytes = static_cast<uint64_t>(batch) * L.max_stride;
  ps.reserve_bytes = 0;
  ps.stage_slots = batch;
  ps.reader = o.reader;
  ps.reader.direct_io = true;
  ps.policy = "lru";
  VramExpertPool pool(pack, ps, batch);
  Stream compute;
  std::vector<size_t> next(L.layers.size(), 0);
  std::vector<uint32_t> ids;
  IoBenchPhase& p = r.delivery;
  uint64_t asked = 0;
  double io_wait_ms = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t turn = 0; asked < o.expert_reads; ++turn) {
    const uint32_t l = turn % static_cast<uint32_t>(L.layers.size());
    const std::vector<uint32_t>& q = queued[l];
    ids.clear();
    for (uint32_t k = 0; k < batch && asked < o.expert_reads; ++k, ++asked) {
      ids.push_back(q[next[l] % q.size()]);
      ++next[l];
    }
    pool.acquire(l, ids, compute.get(), &io_wait_ms);
    pool.release(compute.get());
    pool.end_step();
  }
  MOEPACK_CUDA_CHECK(cudaStreamSynchronize(compute.get()));
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Only misses travel (a pack of one layer with fewer than 2 x batch experts repeats a block
  // in two acquires in a row, which then hits).
  const VramPoolCounters c = pool.counters();
  p.bytes = c.h2d_bytes;
  p.reads = c.cache.cache_misses;
  return r;
}

}  // namespace moepack::gpu
