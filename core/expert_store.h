// ExpertStore: routed experts on demand from an Expert Pack, through the expert cache.
//
// The host-RAM tier (the CPU backend's slots; the GPU backend puts VRAM slots behind the same
// ExpertCache and DirectReader). acquire(layer, experts) returns one pointer per expert to its
// whole block (all roles, `stride(layer)` bytes, roles at the manifest's offsets). Misses of
// one layer are read together, each as one O_DIRECT request (split into `read_splits` parts)
// straight into its 4096-aligned slot, so they proceed in parallel. A slot is handed out only
// after its read completed (and, with verify_pack_sha256, after the expert's SHA-256 matched the
// manifest on its first read). Pointers stay valid until the next acquire() or end_step().
//
// Prefetch (the CPU backend's next-layer prefetch, EngineSettings::prefetch_experts):
// prefetch(layer, experts) places predicted experts in the cache (ExpertCache::prefetch) and
// submits their reads straight into their slots, returning at once; the reads land while the
// caller computes. A read in flight owns its slot (no acquire() or prefetch() evicts it), and
// so do the slots the last acquire() handed out (their views are in use). acquire() reads its
// misses beside the reads in flight and waits only for those and for the prefetch reads of
// experts it uses; the others stay in flight. If its experts and the reads in flight need more
// slots than the cache has, it finishes the reads first. A prefetched expert is checked
// (verify_pack_sha256) by the acquire() that uses it, as a miss is. After any read error every
// read in flight is drained and its expert forgotten, so the next call starts clean. A read
// ahead that fails fails no acquire() by itself: the expert is forgotten (the reader counts the
// error in io_errors) and an acquire() that needs it reads it again, reporting the error if it
// persists. (An acquire() that meets a read failure while reads ahead are in flight cannot tell
// whose it was, so it tries once more with none in flight: a transient failure of its own read
// may then pass, where without prefetch it would have been reported; a persistent one is
// reported either way. Its counts stay as counted, a prefetch hit of an expert forgotten with
// the failure included.) Only when reads happen changes: every block handed out holds the
// pack's bytes.
//
// Settings use the seed system's names (ARCHITECTURE.md): cache budget in bytes
// (`cache_vram_mib` on GPU builds), `read_splits`, `direct_io`, `verify_pack_sha256`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
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
  // Lets the reads in flight land before the slots they write to are freed.
  ~ExpertStore();
  ExpertStore(const ExpertStore&) = delete;
  ExpertStore& operator=(const ExpertStore&) = delete;

  // Blocks until every expert of `experts` (distinct ids) of pack layer `layer` is resident.
  // Throws Error (a layer or id that does not exist, checked before anything else; with
  // verification, naming the expert whose hash does not match) / IoError / FormatError (a
  // read of its own failed; with reads ahead in flight it tries once more with none before it
  // says so). After a throw none of this call's misses or experts read ahead is resident
  // unchecked (a retry reads them again); after a read failure no read is still in flight.
  std::vector<const uint8_t*> acquire(uint32_t layer, std::span<const uint32_t> experts);
  // acquire() that hands each expert out as soon as it is usable: `ready(i, block)` is called
  // once for each experts[i], first for the resident ones (in order), then for the misses and
  // experts read ahead as their reads land (each checked first, as acquire() checks it), so
  // the caller computes while the other reads are in flight. Returns when every expert was
  // handed out; the blocks stay valid as acquire()'s do. `all_landed`, if set, is called once,
  // as soon as this call waits for no read: before the first expert when nothing is read,
  // otherwise before the experts whose reads landed last are handed out (next-layer prefetch
  // starts there: prefetch() may be called from it, and from `ready` only once
  // reads_waited_for() is 0). Throws as acquire() does (with several bad blocks, verification
  // names the first whose read lands), and what `ready` or `all_landed` throws (then without
  // the retry); after a throw the experts handed out stay resident and checked, the others are
  // not resident unchecked.
  using Ready = std::function<void(size_t index, const uint8_t* block)>;
  void acquire_each(uint32_t layer, std::span<const uint32_t> experts, const Ready& ready,
                    const std::function<void()>& all_landed = {});
  // Reads the acquire_each() in progress still waits for (0 outside one).
  size_t reads_waited_for() const { return waiting_; }
  // Starts reading the experts of `experts` (distinct ids of pack layer `layer`, most likely
  // first) that are not resident, in that order, without waiting: at most
  // min(top_k, slot_count - max(top_k, the last acquire's experts) - reads in flight), so the
  // next acquire() of top_k experts fits beside the reads still in flight. The resident ones of
  // the list before the first expert it has no room to read are protected from this call's
  // evictions (ExpertCache::prefetch_prefix). Returns the
  // number of reads started (counted in counters().cache.prefetches). Throws Error (a layer
  // or id that does not exist) or what submitting a read throws; then nothing of this call or
  // earlier calls is left in flight or resident unread.
  uint32_t prefetch(uint32_t layer, std::span<const uint32_t> experts);
  // Prefetch reads submitted and not yet collected (landed ones are collected by the next
  // acquire() or prefetch(), or by an acquire() waiting for anything).
  size_t reads_in_flight() const { return pending_.size(); }
  // Test hook: DirectReader::set_fault_injector on the store's reader.
  void set_fault_injector(DirectReader::FaultInjector injector) {
    reader_.set_fault_injector(std::move(injector));
  }
  // Ends a step (decode token or prefill batch) for the unique-key hit/miss counting.
  void end_step() {
    cache_.end_step();
    in_use_.clear();
  }

  uint32_t slot_count() const { return cache_.slot_count(); }
  uint64_t slot_bytes() const { return slot_bytes_; }
  ExpertStoreCounters counters() const;
  const ExpertCache& cache() const { return cache_; }

 private:
  struct PendingRead {
    ExpertKey key;
    uint32_t slot = 0;
  };
  // Tags of prefetch reads: kPrefetchTag | slot (an acquire's own reads: expert << 32 | slot).
  static constexpr uint64_t kPrefetchTag = 1ull << 63;
  std::vector<uint32_t> pending_slots_except(uint32_t layer, std::span<const uint32_t> experts) const;
  // Waits until none of `tags` is in flight; prefetch reads that land meanwhile stop being
  // pending. Throws what the reader throws.
  void wait_for(std::unordered_set<uint64_t> tags);
  // Prefetch reads that have landed stop being pending (no waiting). A failed read ahead is
  // forgotten with every other read in flight (abandon_reads; the reader counts it in
  // io_errors); any other reader error is thrown after abandon_reads().
  void collect_landed();
  // Throws Error naming the pack if `layer` or an id of `experts` does not exist.
  void check_experts(uint32_t layer, std::span<const uint32_t> experts) const;
  // acquire_each() once, with whatever reads ahead are in flight: experts[k] is handed out as
  // index[k].
  void acquire_now(uint32_t layer, std::span<const uint32_t> experts, std::span<const size_t> index,
                   const Ready& ready, const std::function<void()>& all_landed);
  // After a failure: lets every read in flight land, forgets the prefetched experts not yet
  // landed. noexcept: used on the way out of a throw.
  void abandon_reads() noexcept;

  const ExpertPack& pack_;
  ExpertStoreSettings settings_;
  uint32_t top_k_;
  uint64_t slot_bytes_;
  ExpertCache cache_;
  DirectReader reader_;
  AlignedBuffer slots_;
  std::unordered_set<uint64_t> verified_;
  uint64_t verified_count_ = 0;
  std::unordered_map<uint64_t, PendingRead> pending_;  // tag -> prefetch read in flight
  std::vector<uint32_t> in_use_;                       // slots the last acquire() handed out
  size_t waiting_ = 0;                                 // reads the acquire in progress waits for
};

}  // namespace moepack
