// VramExpertPool: the GPU tier of the Expert Pack path. Routed experts live in a pool of VRAM
// slots; the ExpertCache (core/expert_cache.h) decides which (layer, expert) sits in which
// slot; a miss is read by the DirectReader (O_DIRECT, io_uring) into one of `stage_slots`
// pinned, 4096-aligned staging buffers (cudaHostAlloc), then copied to its slot with
// cudaMemcpyAsync on the pool's copy stream.
//
// Synchronisation (no device-wide sync anywhere):
//   - slot_ready[s]: recorded on the copy stream after slot s's copy; the compute stream waits
//     on it (cudaStreamWaitEvent) before the kernels that read the slot.
//   - stage_free[i]: recorded after the copy out of staging buffer i; the host waits on it
//     (cudaEventSynchronize, that one copy only) before the reader overwrites the buffer.
//   - released: recorded on the compute stream by release() after the kernels that read the
//     slots handed out so far; the copy stream waits on it before it overwrites any slot, so an
//     evicted expert is never overwritten while a queued kernel may still read it.
//
// Prefetch (settings.prefetch_slots > 0): prefetch(layer, experts, protect) places the
// predicted experts of a layer about to run in the cache (ExpertCache::prefetch; the experts in
// `protect`, e.g. those of the layer being acquired next, and the slots of reads still in
// flight are not evicted for them) and submits their reads into pinned buffers of their own
// (two sets of prefetch_slots: rounds alternate, so two rounds may be in flight; the round
// before last is finished first), then returns. While they are in flight, acquire() keeps
// their slots from eviction,
// reads its own misses beside them, waits only for those and for the prefetch reads of experts
// it uses, and delivers every prefetch read that lands meanwhile; the others stay in flight.
// Delivery: SHA-256 checked when asked (a block that fails is forgotten, so a later acquire()
// reads it again and reports it; an acquire() that needs that very read reports it at once),
// then copied into its slot on the copy stream after `released` (the slot may have held an
// expert a queued kernel still reads). An acquire() that uses a prefetched expert makes
// `compute` wait on its slot_ready event. An acquire() whose experts and the reads in flight
// together exceed the slots first finishes them all (finish_prefetch). After any failure the
// reads in flight are drained and forgotten.
//
// Host-RAM tier (settings.ram_tier_bytes > 0; core/victim_tier.h): pinned host slots behind the
// VRAM slots, exclusive of them. Every expert an acquire() or prefetch() evicts from VRAM that
// the tier admits (settings.ram_tier_admission) is copied down into it (device to host on the copy stream,
// queued before anything overwrites the slot); a miss found there is copied up from it (host to device, after
// `released`) instead of being read from the pack, and leaves it. The bytes move in the VRAM slot's layout
// (tiled or not), so a copy up is one cudaMemcpyAsync. A prefetch() of an expert held there copies it up at
// once (no read in flight).
//
// Sizing (ARCHITECTURE.md "Cache sizing"): slot_bytes = the pack's largest expert stride;
// slot_count = floor(min(cache_bytes, free VRAM - reserve) / slot_bytes); fewer slots than
// one layer's top-k is an initialisation error with the numbers. RAM tier: ram_tier_slots()
// (core/victim_tier.h) of ram_tier_bytes (kRamTierAuto: auto_ram_tier_bytes()) against the RAM
// available. An explicit size the OS refuses to pin is an error naming the bytes; an automatic
// one is halved until it pins (to none at worst), with a line on stderr.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/direct_reader.h"
#include "core/expert_cache.h"
#include "core/expert_pack.h"
#include "core/victim_tier.h"
#include "gpu/cuda_resources.h"

namespace moepack::gpu {

struct VramPoolSettings {
  uint64_t cache_bytes = 1ull << 30;   // requested slot budget, bytes
  uint64_t reserve_bytes = 512ull << 20;  // VRAM kept free, bytes
  uint32_t stage_slots = 8;            // pinned staging buffers (reads in flight)
  ReaderSettings reader;
  std::string policy = "hybrid";
  bool verify_pack_sha256 = false;     // checked in the staging buffer before the upload
  uint32_t prefetch_slots = 0;         // experts read ahead at most per prefetch(); 0: off
  uint64_t ram_tier_bytes = 0;         // pinned host RAM for the tier behind VRAM, bytes; 0: off
  TierAdmission ram_tier_admission = TierAdmission::kFrequency;  // which evictions it keeps
};

// VramPoolSettings::ram_tier_bytes asking for the automatic size (EngineSettings' "auto").
constexpr uint64_t kRamTierAuto = ~uint64_t{0};

struct VramPoolCounters {
  CacheCounters cache;
  uint64_t pack_read_bytes = 0, h2d_bytes = 0, fallback_count = 0, io_errors = 0, verified_experts = 0;
  VictimTierCounters ram;  // the host-RAM tier (zeros when off)
  uint32_t ram_slots = 0;
  uint64_t d2h_bytes = 0;  // copied down into the RAM tier
};

class VramExpertPool {
 public:
  // Throws Error (budget below top-k slots, with the numbers; O_DIRECT alignment), IoError.
  VramExpertPool(const ExpertPack& pack, const VramPoolSettings& settings, uint32_t top_k);
  // Waits for reads still in flight (they write into this pool's pinned buffers).
  ~VramExpertPool();
  VramExpertPool(const VramExpertPool&) = delete;
  VramExpertPool& operator=(const VramExpertPool&) = delete;

  // Makes `experts` (distinct ids) of pack layer `layer` resident and returns each one's
  // block in VRAM (all roles, at the manifest's offsets). Misses are read and copied
  // asynchronously; `compute` is made to wait for them (no host wait for the copies). Adds
  // the host time spent waiting for reads to *io_wait_ms. Throws IoError / FormatError /
  // Error (hash mismatch); the failed experts are forgotten by the cache.
  std::vector<const uint8_t*> acquire(uint32_t layer, std::span<const uint32_t> experts, cudaStream_t compute,
                                      double* io_wait_ms);
  // Call after enqueuing on `compute` the kernels that read the slots acquire() returned.
  void release(cudaStream_t compute);
  // Starts reading, in order, the experts of `experts` (distinct ids of pack layer `layer`, most
  // wanted first) that are not resident, at most n = min(prefetch_slots, slot_count -
  // max(|protect|, top_k) - reads in flight) of them (resident ones do not count against n:
  // ExpertCache::prefetch_prefix), as far as slots outside `protect` (distinct keys) allow; returns the
  // number of experts placed: reads started without waiting for them, and copies up from the RAM
  // tier (0 when prefetch is off or there is no room). Call when
  // the kernels queued so far are release()d. Adds the waits for the previous round's reads and buffers to
  // *io_wait_ms. Throws Error (bad layer / ids), IoError from the submission, and what finishing reads still
  // in flight from an earlier prefetch() throws.
  uint32_t prefetch(uint32_t layer, std::span<const uint32_t> experts, std::span<const ExpertKey> protect = {},
                    double* io_wait_ms = nullptr);
  // Waits for every prefetch read in flight and delivers it (what the next acquire() or
  // prefetch() would otherwise do when it needs them). Adds the wait to *io_wait_ms.
  void finish_prefetch(double* io_wait_ms = nullptr) { finish_prefetch_stages(io_wait_ms, 0, UINT32_MAX); }
  void end_step() { cache_.end_step(); }

  // Where expert `expert` of pack layer `layer` lies in VRAM while it stays resident (its
  // block, all roles), or null when it is not resident. Counts nothing. The slot's copy may
  // still be queued: the caller orders its reads after the acquire() that placed it.
  const uint8_t* resident_block(uint32_t layer, uint32_t expert) const;

  // How a block read into pinned memory reaches its slot: enqueued on the copy stream `copy`
  // (no host wait), before the slot's ready event and the staging buffer's free event are
  // recorded. The default is one cudaMemcpyAsync of the block's `bytes`. CudaRoutedExperts
  // sets one that also permutes experts into the tiled layout of the decode GEMV. Set it before
  // the first acquire() or prefetch(); it must enqueue everything on `copy` and may throw (the
  // acquire() then fails as for a failed read).
  using Delivery = std::function<void(uint32_t layer, uint8_t* slot, const uint8_t* pinned, uint64_t bytes,
                                      cudaStream_t copy)>;
  void set_delivery(Delivery d) { delivery_ = std::move(d); }

  uint32_t slot_count() const { return cache_.slot_count(); }
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint32_t prefetch_slots() const { return settings_.prefetch_slots; }
  uint32_t ram_tier_slots() const { return ram_tier_.slot_count(); }
  VramPoolCounters counters() const;

 private:
  struct PendingRead {
    ExpertKey key;
    uint32_t slot = 0;
    uint32_t stage = 0;  // prefetch buffer
  };
  // Waits for the prefetch reads in flight into buffers [first_stage, end_stage) and delivers
  // them (and any other read that lands meanwhile); adds the wait to *io_wait_ms.
  void finish_prefetch_stages(double* io_wait_ms, uint32_t first_stage, uint32_t end_stage);
  // A prefetch read has arrived: checks it and copies it into its slot (true), or forgets it
  // (false: its SHA-256 does not match).
  bool deliver_prefetched(const PendingRead& p);
  const uint8_t* prefetch_src(const PendingRead& p) const;
  // The prefetch read `tag` has landed: delivers it (*delivered: false when its SHA-256 failed)
  // and removes it from pending_. Throws an internal Error for a tag that is not pending.
  PendingRead land_prefetch(uint64_t tag, bool* delivered);
  std::vector<uint32_t> pending_slots() const;  // the slots owned by reads in flight
  // After a failure: forgets the reads in flight (pending_), drains the reader.
  void forget_undelivered();
  // reader_.wait_some(), an internal Error when nothing was in flight.
  std::vector<uint64_t> wait_reads();
  void drain_reader() noexcept;
  // "" when SHA-256 checks are off, the block was checked before, or it matches the manifest
  // (then it is remembered); otherwise the error message naming the block.
  std::string check_sha256(uint32_t layer, uint32_t expert, const uint8_t* src, uint64_t bytes);
  // Queues the plan's copies down (VRAM slot -> RAM slot) on the copy stream.
  void demote(const TierPlan& plan);
  // Queues the copy up of an expert of `layer` from RAM slot `ram_slot` into VRAM slot
  // `slot` and records the slot's ready event (the copy stream already waits for `released`).
  void promote(uint32_t layer, uint32_t ram_slot, uint32_t slot);

  const ExpertPack& pack_;
  VramPoolSettings settings_;
  uint32_t top_k_;
  uint64_t slot_bytes_;
  ExpertCache cache_;
  DirectReader reader_;
  DeviceBuffer slots_;
  PinnedBuffer stage_;
  Stream copy_;
  Delivery delivery_;
  void copy_to_slot(uint32_t layer, uint8_t* slot, const uint8_t* pinned, uint64_t bytes);
  std::vector<Event> slot_ready_;
  std::vector<Event> stage_free_;
  std::vector<bool> stage_used_;
  Event released_;
  bool released_recorded_ = false;
  PinnedBuffer prefetch_stage_;        // 2 x prefetch_slots buffers of slot_bytes
  std::vector<Event> prefetch_stage_free_;
  std::vector<bool> prefetch_stage_used_;
  std::map<uint64_t, PendingRead> pending_;  // reader tag -> prefetch read in flight
  uint64_t prefetch_round_ = 0;
  std::unordered_set<uint64_t> verified_;
  uint64_t verified_count_ = 0;
  uint64_t h2d_bytes_ = 0;
  VictimTier ram_tier_{0};
  PinnedBuffer ram_;  // ram_tier_.slot_count() slots of slot_bytes_
  uint64_t d2h_bytes_ = 0;
};

}  // namespace moepack::gpu
