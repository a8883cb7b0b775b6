// ExpertStore: routed experts on demand from an Expert Pack, through the expert cache.
//
// The host-RAM tier (the CPU backend's slots; the GPU backend puts VRAM slots behind the same
// ExpertCache and DirectReader). acquire(layer, experts) returns one pointer per expert to its
// whole block (all roles, `stride(layer)` bytes, roles at the manifest's offsets). Misses of
// one layer are read together, each as one O_DIRECT request (split into `read_splits` parts)
// straight into its 4096-aligned slot, so they proceed in parallel. A slot is handed out only
// after its read completed (and, with verify_pack_sha256, after the expert's SHA-256 matched the
// manifest on its first read). Pointers stay valid until the next acquire().
//
// Settings use the seed system's names (ARCHITECTURE.md): cache budget in bytes
// (`cache_vram_mib` on GPU builds), `read_splits`, `direct_io`, `verify_pack_sha256`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/direct_reader.h"
#include "core/expert_cache.h"
#include "core/expert_pack.h"

namespace moepack {

struct ExpertStoreSettings {
  uint64_t cache_bytes = 1ull << 30;  // byte budget for slots
  uint64_t reserve_bytes = 0;         // kept free out of `available_bytes`
  uint64_t available_bytes = ~0ull;   // memory the slots may come from (free RAM / VRAM)
  ReaderSettings reader;
  std::string policy = "hybrid";      // lru | lfu | hybrid
  bool verify_pack_sha256 = false;    // check each expert's hash on its first read
};

struct ExpertStoreCounters {
  CacheCounters cache;
  uint64_t pack_read_bytes = 0;
  uint64_t fallback_count = 0;
  uint64_t io_errors = 0;
  uint64_t verified_experts = 0;
};

class ExpertStore {
 public:
  // `top_k`: experts one layer needs at once (the model's expert_used_count); initialisation
  // fails if the budget cannot hold that many slots. Throws Error naming the numbers.
  ExpertStore(const ExpertPack& pack, const ExpertStoreSettings& settings, uint32_t top_k);

  // Blocks until every expert of `experts` (distinct ids) of pack layer `layer` is resident.
  // Throws Error / IoError / FormatError (and, with verification, Error naming the expert
  // whose hash does not match). After a throw none of this call's misses is resident (a
  // retry reads them again) and no read of it is still in flight.
  std::vector<const uint8_t*> acquire(uint32_t layer, std::span<const uint32_t> experts);
  // Ends a step (decode token or prefill batch) for the unique-key hit/miss counting.
  void end_step() { cache_.end_step(); }

  uint32_t slot_count() const { return cache_.slot_count(); }
  uint64_t slot_bytes() const { return slot_bytes_; }
  ExpertStoreCounters counters() const;
  const ExpertCache& cache() const { return cache_; }

 private:
  const ExpertPack& pack_;
  ExpertStoreSettings settings_;
  uint64_t slot_bytes_;
  ExpertCache cache_;
  DirectReader reader_;
  AlignedBuffer slots_;
  std::unordered_set<uint64_t> verified_;
  uint64_t verified_count_ = 0;
};

}  // namespace moepack
