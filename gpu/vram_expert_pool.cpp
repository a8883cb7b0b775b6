#include "gpu/vram_expert_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <unordered_map>

#include "core/error.h"
#include "core/pack_layout.h"
#include "core/sha256.h"
#include "gpu/cuda_check.h"

namespace moepack::gpu {

namespace {

// Reader tags of prefetch reads (acquire's own reads use their miss index).
constexpr uint64_t kPrefetchTag = uint64_t{1} << 62;

// *ms (if given) += milliseconds since t0.
void add_ms_since(std::chrono::steady_clock::time_point t0, double* ms) {
  if (ms) *ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t free_vram_bytes() {
  size_t free_b = 0, total_b = 0;
  MOEPACK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

}  // namespace

VramExpertPool::VramExpertPool(const ExpertPack& pack, const VramPoolSettings& settings, uint32_t top_k)
    : pack_(pack),
      settings_(settings),
      top_k_(top_k),
      slot_bytes_(pack.layout().max_stride),
      cache_(cache_slots_for_budget(settings.cache_bytes, free_vram_bytes(), settings.reserve_bytes,
                                    pack.layout().max_stride, top_k, pack.layout().expert_count()),
             make_policy(settings.policy)),
      reader_(pack.experts_path(), settings.reader) {
  if (reader_.alignment() > kPackAlignment) {
    throw Error(pack.experts_path() + ": the file system needs O_DIRECT alignment " +
                std::to_string(reader_.alignment()) + " but the pack is aligned to " + std::to_string(kPackAlignment));
  }
  if (settings_.stage_slots == 0) throw Error("stage_slots must be at least 1");
  slots_.allocate(static_cast<size_t>(slot_bytes_) * cache_.slot_count(),
                  "the expert cache (" + std::to_string(cache_.slot_count()) + " slots of " +
                      std::to_string(slot_bytes_) + " bytes)");
  stage_.allocate(static_cast<size_t>(slot_bytes_) * settings_.stage_slots, "the expert staging ring");
  slot_ready_.resize(cache_.slot_count());
  stage_free_.resize(settings_.stage_slots);
  stage_used_.assign(settings_.stage_slots, false);
  settings_.prefetch_slots = std::min(settings_.prefetch_slots, cache_.slot_count());
  if (settings_.prefetch_slots > 0) {
    // Two sets: rounds alternate (prefetch()).
    prefetch_stage_.allocate(static_cast<size_t>(slot_bytes_) * 2 * settings_.prefetch_slots,
                             "the expert prefetch buffers");
    prefetch_stage_free_.resize(2 * settings_.prefetch_slots);
    prefetch_stage_used_.assign(2 * settings_.prefetch_slots, false);
  }
  if (settings_.ram_tier_bytes > 0) {
    const uint64_t experts = pack.layout().expert_count();
    const uint64_t available = available_ram_bytes();
    const bool automatic = settings_.ram_tier_bytes == kRamTierAuto;
    const uint64_t asked = automatic ? auto_ram_tier_bytes(available) : settings_.ram_tier_bytes;
    uint32_t n = moepack::ram_tier_slots(asked, available, slot_bytes_, experts);
    for (;;) {
      const std::string what = "the host-RAM expert tier (" + std::to_string(n) + " slots of " +
                               std::to_string(slot_bytes_) + " bytes)";
      try {
        ram_.allocate(static_cast<size_t>(slot_bytes_) * n, what);
        break;
      } catch (const DeviceLostError&) {
        throw;  // sticky: the context is gone
      } catch (const Error& e) {
        if (!automatic) throw;
        std::fprintf(stderr, "moepack: %s; trying %u slots\n", e.what(), n / 2);
        n /= 2;
      }
    }
    ram_tier_ = VictimTier(n, settings_.ram_tier_admission);
  }
}

VramExpertPool::~VramExpertPool() { drain_reader(); }

void VramExpertPool::drain_reader() noexcept {
  // Reads still in flight (a prefetch never finished, or reads abandoned by a failure) write
  // into the pinned buffers; let them land, so the buffers can be freed or reused and their
  // tags submitted again.
  reader_.drain();
}

std::string VramExpertPool::check_sha256(uint32_t layer, uint32_t expert, const uint8_t* src, uint64_t bytes) {
  if (!settings_.verify_pack_sha256) return {};
  const uint64_t key = ExpertKey{layer, expert}.packed();
  if (verified_.count(key)) return {};
  const std::string got = to_hex(Sha256::of(src, bytes));
  const std::string& want = pack_.manifest().expert_sha256.at(layer).at(expert);
  if (got != want) {
    return pack_.bad_block_message(layer, expert, got);
  }
  verified_.insert(key);
  ++verified_count_;
  return {};
}

void VramExpertPool::demote(const TierPlan& plan) {
  size_t queued = 0;
  try {
    for (const TierPlan::Demotion& d : plan.demotions) {
      const uint64_t bytes = pack_.stride(d.key.layer);
      MOEPACK_CUDA_CHECK(cudaMemcpyAsync(ram_.bytes_ptr() + static_cast<size_t>(d.ram_slot) * slot_bytes_,
                                         slots_.bytes_ptr() + static_cast<size_t>(d.upper_slot) * slot_bytes_,
                                         bytes, cudaMemcpyDeviceToHost, copy_.get()));
      d2h_bytes_ += bytes;
      ++queued;
    }
  } catch (...) {
    // The tier counts these as held: the ones never copied down must not be copied up.
    for (size_t k = queued; k < plan.demotions.size(); ++k) ram_tier_.invalidate(plan.demotions[k].key);
    throw;
  }
}

void VramExpertPool::promote(uint32_t layer, uint32_t ram_slot, uint32_t slot) {
  const uint64_t bytes = pack_.stride(layer);
  MOEPACK_CUDA_CHECK(cudaMemcpyAsync(slots_.bytes_ptr() + static_cast<size_t>(slot) * slot_bytes_,
                                     ram_.bytes_ptr() + static_cast<size_t>(ram_slot) * slot_bytes_, bytes,
                                     cudaMemcpyHostToDevice, copy_.get()));
  MOEPACK_CUDA_CHECK(cudaEventRecord(slot_ready_[slot].get(), copy_.get()));
  h2d_bytes_ += bytes;
}

uint32_t VramExpertPool::prefetch(uint32_t layer, std::span<const uint32_t> experts, std::span<const ExpertKey> protect,
                                  double* io_wait_ms) {
  if (settings_.prefetch_slots == 0) return 0;
  if (layer >= pack_.layout().layers.size()) {
    throw Error(pack_.dir() + ": layer " + std::to_string(layer) + " is not a layer with routed experts");
  }
  // Rounds alternate between two sets of buffers, so the last round's reads may still be in
  // flight; the round before it, which used this set, is finished (normally landed long ago).
  const uint32_t P = settings_.prefetch_slots;
  const uint32_t base = (prefetch_round_++ % 2) * P;
  finish_prefetch_stages(io_wait_ms, base, base + P);
  // Room: the next acquire needs slots for its experts (the protected ones, at least top-k)
  // beside the reads in flight, or it finishes them first and its misses evict the unused
  // prefetches.
  const size_t busy = std::max<size_t>(protect.size(), top_k_) + pending_.size();
  if (busy >= cache_.slot_count()) return 0;
  const size_t n = cache_.prefetch_prefix(layer, experts, std::min<size_t>(P, cache_.slot_count() - busy));
  std::vector<uint32_t> keep = pending_slots();  // a read in flight owns its slot
  for (const ExpertKey& k : protect) {
    if (const auto slot = cache_.slot_of(k)) keep.push_back(*slot);
  }
  const std::vector<SlotAssignment> placed = cache_.prefetch(layer, experts.first(n), keep);
  const uint64_t stride = pack_.stride(layer);
  uint32_t started = 0;
  try {
    // The experts these slots held go down to the RAM tier before anything overwrites them;
    // those the tier holds come up from it at once, after the kernels released so far.
    // A prefetch's placements are predictions, not uses (kFrequency counts acquires only).
    const TierPlan plan = ram_tier_.plan(layer, placed, /*accesses=*/false);
    demote(plan);
    if (plan.promotions() > 0 && released_recorded_) {
      MOEPACK_CUDA_CHECK(cudaStreamWaitEvent(copy_.get(), released_.get(), 0));
    }
    for (uint32_t i = 0; i < placed.size(); ++i) {
      if (plan.ram_slot[i]) {
        promote(layer, *plan.ram_slot[i], placed[i].slot);
        continue;
      }
      const uint32_t stage = base + started++;
      if (prefetch_stage_used_[stage]) {
        const auto t0 = std::chrono::steady_clock::now();
        MOEPACK_CUDA_CHECK(cudaEventSynchronize(prefetch_stage_free_[stage].get()));
        add_ms_since(t0, io_wait_ms);
      }
      const uint64_t tag = kPrefetchTag + stage;
      pending_[tag] = {ExpertKey{layer, placed[i].expert}, placed[i].slot, stage};
      reader_.submit({pack_.expert_offset(layer, placed[i].expert), stride,
                      prefetch_stage_.bytes_ptr() + static_cast<size_t>(stage) * slot_bytes_, tag});
    }
  } catch (...) {
    for (const SlotAssignment& p : placed) cache_.invalidate(ExpertKey{layer, p.expert});
    forget_undelivered();  // what was submitted lands unused
    throw;
  }
  return static_cast<uint32_t>(placed.size());
}

void VramExpertPool::copy_to_slot(uint32_t layer, uint8_t* slot, const uint8_t* pinned, uint64_t bytes) {
  if (delivery_) {
    delivery_(layer, slot, pinned, bytes, copy_.get());
  } else {
    MOEPACK_CUDA_CHECK(cudaMemcpyAsync(slot, pinned, bytes, cudaMemcpyHostToDevice, copy_.get()));
  }
}

const uint8_t* VramExpertPool::prefetch_src(const PendingRead& p) const {
  return prefetch_stage_.bytes_ptr() + static_cast<size_t>(p.stage) * slot_bytes_;
}

bool VramExpertPool::deliver_prefetched(const PendingRead& p) {
  const uint8_t* src = prefetch_src(p);
  const uint64_t stride = pack_.stride(p.key.layer);
  if (!check_sha256(p.key.layer, p.key.expert, src, stride).empty()) {
    // Forgotten: an acquire() that needs it later reads it again and reports the mismatch.
    cache_.invalidate(p.key);
    return false;
  }
  uint8_t* dst = slots_.bytes_ptr() + static_cast<size_t>(p.slot) * slot_bytes_;
  copy_to_slot(p.key.layer, dst, src, stride);
  MOEPACK_CUDA_CHECK(cudaEventRecord(prefetch_stage_free_[p.stage].get(), copy_.get()));
  MOEPACK_CUDA_CHECK(cudaEventRecord(slot_ready_[p.slot].get(), copy_.get()));
  prefetch_stage_used_[p.stage] = true;
  h2d_bytes_ += stride;
  return true;
}

VramExpertPool::PendingRead VramExpertPool::land_prefetch(uint64_t tag, bool* delivered) {
  const auto it = pending_.find(tag);
  if (it == pending_.end()) throw Error("internal: read " + std::to_string(tag) + " is not a prefetch read");
  const PendingRead p = it->second;
  const bool ok = deliver_prefetched(p);  // a throw leaves it pending: forgotten by the caller's catch
  pending_.erase(it);
  if (delivered) *delivered = ok;
  return p;
}

std::vector<uint32_t> VramExpertPool::pending_slots() const {
  std::vector<uint32_t> slots;
  for (const auto& [tag, p] : pending_) slots.push_back(p.slot);
  return slots;
}

void VramExpertPool::forget_undelivered() {
  // The cache counts them resident: forget them, so a later acquire reads them again.
  for (const auto& [tag, p] : pending_) cache_.invalidate(p.key);
  pending_.clear();
  drain_reader();
}

std::vector<uint64_t> VramExpertPool::wait_reads() {
  std::vector<uint64_t> tags = reader_.wait_some();
  if (tags.empty()) throw Error("internal: " + pack_.experts_path() + ": waiting for reads that were never submitted");
  return tags;
}

void VramExpertPool::finish_prefetch_stages(double* io_wait_ms, uint32_t first_stage, uint32_t end_stage) {
  const auto waited_for = [&] {
    size_t n = 0;
    for (const auto& [tag, p] : pending_) n += p.stage >= first_stage && p.stage < end_stage;
    return n;
  };
  if (waited_for() == 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    // The slots may hold experts that kernels queued before release() still read.
    if (released_recorded_) MOEPACK_CUDA_CHECK(cudaStreamWaitEvent(copy_.get(), released_.get(), 0));
    while (waited_for() > 0) {
      // Every read that lands is delivered, whichever set it belongs to.
      for (const uint64_t tag : wait_reads()) land_prefetch(tag, nullptr);
    }
  } catch (...) {
    forget_undelivered();
    throw;
  }
  add_ms_since(t0, io_wait_ms);
}

std::vector<const uint8_t*> VramExpertPool::acquire(uint32_t layer, std::span<const uint32_t> experts,
                                                    cudaStream_t compute, double* io_wait_ms) {
  if (layer >= pack_.layout().layers.size()) {
    throw Error(pack_.dir() + ": layer " + std::to_string(layer) + " is not a layer with routed experts");
  }
  const uint64_t stride = pack_.stride(layer);
  // Prefetch reads still in flight keep their slots through this acquire; only when the cache
  // cannot hold both are they finished first.
  if (!pending_.empty() && experts.size() + pending_.size() > cache_.slot_count()) {
    finish_prefetch_stages(io_wait_ms, 0, UINT32_MAX);
  }
  const std::vector<uint32_t> keep = pending_slots();
  size_t needed_prefetch = 0;  // reads in flight of experts this acquire uses: waited for
  const auto used_now = [&](const ExpertKey& k) {
    return k.layer == layer && std::find(experts.begin(), experts.end(), k.expert) != experts.end();
  };
  for (const auto& [tag, p] : pending_) needed_prefetch += used_now(p.key);
  const std::vector<SlotAssignment> assignments = cache_.acquire(layer, experts, keep);
  std::vector<const SlotAssignment*> misses;                         // read from the pack
  std::vector<std::pair<const SlotAssignment*, uint32_t>> promoted;  // (miss, RAM slot)
  TierPlan plan;
  try {
    // What the misses' slots held goes down to the RAM tier first (copies queued on the copy
    // stream before any copy into those slots); misses the tier holds come up from it.
    plan = ram_tier_.plan(layer, assignments);
    demote(plan);
  } catch (...) {
    for (const SlotAssignment& a : assignments) {
      if (!a.hit || a.prefetched) cache_.invalidate(ExpertKey{layer, a.expert});
    }
    forget_undelivered();
    throw;
  }
  for (size_t i = 0; i < assignments.size(); ++i) {
    const SlotAssignment& a = assignments[i];
    if (a.hit) continue;
    if (plan.ram_slot[i]) {
      promoted.emplace_back(&a, *plan.ram_slot[i]);
    } else {
      misses.push_back(&a);
    }
  }
  if (!misses.empty() || needed_prefetch > 0 || !promoted.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      // Slots about to be overwritten may still be read by kernels queued before release().
      if (released_recorded_) MOEPACK_CUDA_CHECK(cudaStreamWaitEvent(copy_.get(), released_.get(), 0));
      for (const auto& [a, ram_slot] : promoted) promote(layer, ram_slot, a->slot);
      std::deque<uint32_t> free_stages;
      for (uint32_t i = 0; i < settings_.stage_slots; ++i) free_stages.push_back(i);
      std::unordered_map<uint64_t, uint32_t> stage_of;  // tag (miss index) -> staging buffer
      size_t next = 0, done = 0;
      while (done < misses.size() || needed_prefetch > 0) {
        while (next < misses.size() && !free_stages.empty()) {
          const uint32_t st = free_stages.front();
          free_stages.pop_front();
          if (stage_used_[st]) MOEPACK_CUDA_CHECK(cudaEventSynchronize(stage_free_[st].get()));
          reader_.submit({pack_.expert_offset(layer, misses[next]->expert), stride,
                          stage_.bytes_ptr() + static_cast<size_t>(st) * slot_bytes_, next});
          stage_of[next] = st;
          ++next;
        }
        for (const uint64_t tag : wait_reads()) {
          if (tag >= kPrefetchTag) {
            // A prefetch read: delivered as it lands, whoever needs it.
            bool delivered = false;
            const PendingRead p = land_prefetch(tag, &delivered);
            if (used_now(p.key)) {
              --needed_prefetch;
              // This acquire needs it: report as an ordinary read would.
              if (!delivered) throw Error(check_sha256(p.key.layer, p.key.expert, prefetch_src(p), pack_.stride(p.key.layer)));
            }
            continue;
          }
          const SlotAssignment& a = *misses.at(tag);
          const uint32_t st = stage_of.at(tag);
          const uint8_t* src = stage_.bytes_ptr() + static_cast<size_t>(st) * slot_bytes_;
          if (std::string err = check_sha256(layer, a.expert, src, stride); !err.empty()) throw Error(err);
          uint8_t* dst = slots_.bytes_ptr() + static_cast<size_t>(a.slot) * slot_bytes_;
          copy_to_slot(layer, dst, src, stride);
          MOEPACK_CUDA_CHECK(cudaEventRecord(stage_free_[st].get(), copy_.get()));
          MOEPACK_CUDA_CHECK(cudaEventRecord(slot_ready_[a.slot].get(), copy_.get()));
          stage_used_[st] = true;
          h2d_bytes_ += stride;
          free_stages.push_back(st);
          ++done;
        }
      }
    } catch (...) {
      // The cache already counts these experts as resident: forget them, so a retry reads again.
      for (const SlotAssignment* a : misses) cache_.invalidate(ExpertKey{layer, a->expert});
      for (const auto& [a, ram_slot] : promoted) cache_.invalidate(ExpertKey{layer, a->expert});
      for (const SlotAssignment& a : assignments) {
        if (a.prefetched) cache_.invalidate(ExpertKey{layer, a.expert});
      }
      forget_undelivered();
      throw;
    }
    add_ms_since(t0, io_wait_ms);
  }
  for (const SlotAssignment& a : assignments) {
    // Misses, and prefetched experts (copied here or earlier): wait for the copy.
    if (!a.hit || a.prefetched) MOEPACK_CUDA_CHECK(cudaStreamWaitEvent(compute, slot_ready_[a.slot].get(), 0));
  }
  std::vector<const uint8_t*> out;
  out.reserve(assignments.size());
  for (const SlotAssignment& a : assignments) out.push_back(slots_.bytes_ptr() + static_cast<size_t>(a.slot) * slot_bytes_);
  return out;
}

void VramExpertPool::release(cudaStream_t compute) {
  MOEPACK_CUDA_CHECK(cudaEventRecord(released_.get(), compute));
  released_recorded_ = true;
}

const uint8_t* VramExpertPool::resident_block(uint32_t layer, uint32_t expert) const {
  const std::optional<uint32_t> slot = cache_.slot_of(ExpertKey{layer, expert});
  return slot ? slots_.bytes_ptr() + static_cast<size_t>(*slot) * slot_bytes_ : nullptr;
}

VramPoolCounters VramExpertPool::counters() const {
  VramPoolCounters c;
  c.cache = cache_.counters();
  c.pack_read_bytes = reader_.counters().pack_read_bytes.load(std::memory_order_relaxed);
  c.fallback_count = reader_.counters().fallback_count.load(std::memory_order_relaxed);
  c.io_errors = reader_.counters().io_errors.load(std::memory_order_relaxed);
  c.h2d_bytes = h2d_bytes_;
  c.verified_experts = verified_count_;
  c.ram = ram_tier_.counters();
  c.ram_slots = ram_tier_.slot_count();
  c.d2h_bytes = d2h_bytes_;
  return c;
}

}  // namespace moepack::gpu
