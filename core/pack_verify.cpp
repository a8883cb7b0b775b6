#include "core/pack_verify.h"

#include <chrono>
#include <cstring>
#include <future>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/expert_pack.h"
#include "core/gguf.h"
#include "core/sha256.h"

namespace moepack {
namespace {

void check_dense(const ExpertPack& pack) {
  const PackManifest& m = pack.manifest();
  const GgufFile dense = GgufFile::open(pack.dense_path());
  if (dense.tensors().size() != m.dense_tensors) {
    throw FormatError(pack.dense_path(), "n_tensors", 8,
                      std::to_string(dense.tensors().size()) + " tensors, the manifest says " +
                          std::to_string(m.dense_tensors));
  }
  const auto id = dense.get_string(kPackDenseBuildIdKey);
  if (!id || *id != m.build_id) {
    throw FormatError(pack.dense_path(), std::string("key \"") + kPackDenseBuildIdKey + "\"", 0,
                      "missing or not this pack's build id " + m.build_id);
  }
  std::set<std::string> expert_tensors;
  for (const PackLayer& L : m.layout.layers) {
    for (const PackRole& r : L.roles) expert_tensors.insert(r.tensor);
  }
  for (const GgufTensorInfo& t : dense.tensors()) {
    if (expert_tensors.count(t.name)) {
      throw FormatError(pack.dense_path(), "tensor \"" + t.name + "\"", t.info_offset,
                        "is a routed-expert tensor; it belongs in experts.bin");
    }
  }
}

}  // namespace

VerifyResult verify_pack(const std::string& path, const VerifyOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  VerifyResult res;
  auto done = [&](bool ok, std::string msg) {
    res.ok = ok;
    res.message = std::move(msg);
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  };
  try {
    const ExpertPack pack = ExpertPack::open(path);
    check_dense(pack);
    const PackManifest& m = pack.manifest();
    const PackLayout& L = m.layout;
    if (!options.full) {
      return done(true, pack.dir() + ": structure OK (" + std::to_string(L.layers.size()) + " layers, " +
                            std::to_string(L.expert_count()) + " experts, " + std::to_string(L.data_end) +
                            " bytes of experts); hashes not checked (use --full)");
    }
    const uint64_t total = L.data_end + m.dense.bytes;
    const std::shared_ptr<ByteSource> src = open_file_source(pack.experts_path());
    Sha256 whole;
    std::vector<uint8_t> header(static_cast<size_t>(L.data_start));
    src->read(0, header.data(), header.size(), "experts header");
    whole.update(header.data(), header.size());
    res.bytes_hashed = header.size();
    // Batches of consecutive experts of one layer (>= 8 MiB); the whole-file hash runs on a
    // second thread over the batch just read while this thread hashes its blocks.
    const uint64_t batch_target = 8ull << 20;
    std::vector<uint8_t> buf[2];
    std::future<void> whole_job;
    int cur = 0;
    for (uint32_t l = 0; l < L.layers.size(); ++l) {
      const PackLayer& ly = L.layers[l];
      const uint32_t per_batch = static_cast<uint32_t>(std::max<uint64_t>(1, batch_target / ly.stride));
      for (uint32_t e0 = 0; e0 < ly.n_experts; e0 += per_batch) {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
          if (whole_job.valid()) whole_job.get();
          res.cancelled = true;
          return done(false, pack.dir() + ": verification cancelled after " +
                                 std::to_string(res.bytes_hashed) + " bytes (" +
                                 std::to_string(res.experts_checked) + " experts matched)");
        }
        const uint32_t e1 = std::min(ly.n_experts, e0 + per_batch);
        const size_t n = static_cast<size_t>((e1 - e0) * ly.stride);
        std::vector<uint8_t>& b = buf[cur];
        b.resize(n);
        src->read(L.offset(l, e0), b.data(), n, "expert blocks");
        if (whole_job.valid()) whole_job.get();
        whole_job = std::async(std::launch::async, [&whole, &b, n] { whole.update(b.data(), n); });
        for (uint32_t e = e0; e < e1; ++e) {
          const Sha256Digest d = Sha256::of(b.data() + (e - e0) * ly.stride, static_cast<size_t>(ly.stride));
          res.bytes_hashed += ly.stride;  // per expert: a failure reports what was hashed up to it
          if (to_hex(d) != m.expert_sha256[l][e]) {
            whole_job.get();
            res.bad_layer = l;
            res.bad_expert = e;
            return done(false, pack.experts_path() + ": expert " + std::to_string(e) + " of layer " +
                                   std::to_string(l) + " (blk." + std::to_string(ly.block) + ") at byte " +
                                   std::to_string(L.offset(l, e)) + " (" + std::to_string(ly.stride) +
                                   " bytes): SHA-256 " + to_hex(d) + " does not match the manifest's " +
                                   m.expert_sha256[l][e]);
          }
          res.experts_checked++;
        }
        if (options.progress) options.progress(res.bytes_hashed, total);
        cur ^= 1;
      }
    }
    if (whole_job.valid()) whole_job.get();
    const std::string got = to_hex(whole.finish());
    if (got != m.experts.sha256) {
      return done(false, pack.experts_path() + ": whole-file SHA-256 " + got +
                             " does not match the manifest's " + m.experts.sha256);
    }
    // dense.gguf in 8 MiB pieces, with the same cancel check and progress as the experts.
    Sha256 dense_hash;
    {
      const std::shared_ptr<ByteSource> dsrc = open_file_source(pack.dense_path());
      std::vector<uint8_t>& b = buf[0];
      b.resize(static_cast<size_t>(batch_target));
      for (uint64_t off = 0; off < m.dense.bytes;) {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
          res.cancelled = true;
          return done(false, pack.dir() + ": verification cancelled after " +
                                 std::to_string(res.bytes_hashed) + " bytes (" +
                                 std::to_string(res.experts_checked) + " experts matched)");
        }
        const size_t n = static_cast<size_t>(std::min<uint64_t>(batch_target, m.dense.bytes - off));
        dsrc->read(off, b.data(), n, "dense weights");
        dense_hash.update(b.data(), n);
        off += n;
        res.bytes_hashed += n;
        if (options.progress) options.progress(res.bytes_hashed, total);
      }
    }
    const std::string dgot = to_hex(dense_hash.finish());
    if (dgot != m.dense.sha256) {
      return done(false, pack.dense_path() + ": SHA-256 " + dgot + " does not match the manifest's " +
                             m.dense.sha256);
    }
    return done(true, pack.dir() + ": OK (" + std::to_string(L.layers.size()) + " layers, " +
                          std::to_string(res.experts_checked) + " experts and " +
                          std::to_string(res.bytes_hashed) + " bytes verified by SHA-256)");
  } catch (const Error& e) {
    return done(false, e.what());
  } catch (const std::exception& e) {
    return done(false, std::string("unexpected error: ") + e.what());
  }
}

}  // namespace moepack
