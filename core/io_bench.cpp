#include "core/io_bench.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

IoBenchPhase random_experts(const ExpertPack& pack, const IoBenchOptions& o, bool direct) {
  ReaderSettings rs = o.reader;
  rs.direct_io = direct;
  DirectReader reader(pack.experts_path(), rs);
  const PackLayout& L = pack.layout();
  const uint32_t batch = std::max<uint32_t>(1, o.batch);
  AlignedBuffer buf(static_cast<size_t>(L.max_stride) * batch, kPackAlignment);
  // Distinct blocks in random order (a shuffled permutation, repeated only when more reads are
  // asked than the pack has blocks), so that no read is served by the page cache of an
  // earlier one and the buffered baseline is as cold as the direct reads.
  const std::vector<std::pair<uint32_t, uint32_t>> blocks = io_bench_blocks(L, o.seed);
  IoBenchPhase p;
  const double t0 = now_s();
  std::vector<ReadRequest> reqs;
  while (p.reads < o.expert_reads) {
    reqs.clear();
    for (uint32_t k = 0; k < batch && p.reads < o.expert_reads; ++k, ++p.reads) {
      const auto [l, e] = blocks[p.reads % blocks.size()];
      reqs.push_back({L.offset(l, e), L.layers[l].stride, buf.data() + k * L.max_stride, k});
      p.bytes += L.layers[l].stride;
    }
    reader.read_all(reqs);
  }
  p.seconds = now_s() - t0;
  return p;
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

uint64_t raw_read_chunk(const IoBenchOptions& o) {
  return std::max<uint64_t>(kPackAlignment, o.raw_chunk_bytes / kPackAlignment * kPackAlignment);
}

uint32_t raw_read_depth(const IoBenchOptions& o) { return std::max<uint32_t>(1, std::min<uint32_t>(o.reader.queue_depth, 8)); }

IoBenchPhase raw_direct_reads(const ExpertPack& pack, const IoBenchOptions& o, uint8_t* buffers) {
  const PackLayout& L = pack.layout();
  ReaderSettings rs = o.reader;
  rs.direct_io = true;
  rs.read_splits = 1;
  DirectReader reader(pack.experts_path(), rs);
  const uint64_t chunk = raw_read_chunk(o);
  const uint32_t depth = raw_read_depth(o);
  const uint64_t end = std::min(L.data_end, L.data_start + o.raw_max_bytes);
  IoBenchPhase p;
  const double t0 = now_s();
  uint64_t off = L.data_start;
  std::vector<ReadRequest> reqs;
  while (off < end) {
    reqs.clear();
    for (uint32_t k = 0; k < depth && off < end; ++k) {
      const uint64_t len = std::min(chunk, end - off);  // data_end is 4096-aligned
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
  {  // raw: large sequential direct reads of the expert data
    AlignedBuffer buf(static_cast<size_t>(raw_read_chunk(o)) * raw_read_depth(o), kPackAlignment);
    r.raw_direct = raw_direct_reads(pack, o, buf.data());
  }
  r.expert_direct = random_experts(pack, o, true);
  if (vram) {
    const VramDeliveryResult v = vram(pack, o);
    r.raw_direct_pinned = v.raw_pinned;
    r.vram_delivery = v.delivery;
    if (v.raw_pinned.bytes_per_second() > 0) {
      r.vram_vs_raw_ratio = v.delivery.bytes_per_second() / v.raw_pinned.bytes_per_second();
    }
    if (r.raw_direct.bytes_per_second() > 0) {
      r.vram_vs_raw_pageable_ratio = v.delivery.bytes_per_second() / r.raw_direct.bytes_per_second();
    }
  }
  r.page_cache_dropped = drop_page_cache(pack.experts_path());
  r.expert_buffered = random_experts(pack, o, false);
  if (r.raw_direct.bytes_per_second() > 0) {
    r.expert_vs_raw_ratio = r.expert_direct.bytes_per_second() / r.raw_direct.bytes_per_second();
  }
  if (r.expert_buffered.bytes_per_second() > 0) {
    r.direct_vs_buffered_ratio = r.expert_direct.bytes_per_second() / r.expert_buffered.bytes_per_second();
  }
  return r;
}

nlohmann::json io_bench_to_json(const ExpertPack& pack, const IoBenchOptions& o, const IoBenchResult& r) {
  auto phase = [](const IoBenchPhase& p) {
    return nlohmann::json{{"bytes", p.bytes}, {"reads", p.reads}, {"seconds", p.seconds},
                          {"bytes_per_second", p.bytes_per_second()}};
  };
  nlohmann::json j{{"pack", pack.dir()},
                 {"experts_file_bytes", pack.layout().data_end},
                 {"max_stride", pack.layout().max_stride},
                 {"settings", {{"expert_reads", o.expert_reads}, {"batch", o.batch},
                               {"read_splits", o.reader.read_splits}, {"queue_depth", o.reader.queue_depth},
                               {"raw_chunk_bytes", o.raw_chunk_bytes}}},
                 {"raw_direct", phase(r.raw_direct)},
                 {"expert_direct", phase(r.expert_direct)},
                 {"expert_buffered", phase(r.expert_buffered)},
                 {"page_cache_dropped", r.page_cache_dropped},
                 {"expert_vs_raw_ratio", r.expert_vs_raw_ratio},
                 {"direct_vs_buffered_ratio", r.direct_vs_buffered_ratio}};
  if (r.vram_delivery) {
    j["raw_direct_pinned"] = phase(*r.raw_direct_pinned);
    j["vram_delivery"] = phase(*r.vram_delivery);
    j["vram_vs_raw_ratio"] = r.vram_vs_raw_ratio;
    j["vram_vs_raw_pageable_ratio"] = r.vram_vs_raw_pageable_ratio;
  }
  return j;
}

}  // namespace moepack
