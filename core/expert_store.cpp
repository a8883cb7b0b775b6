#include "core/expert_store.h"

#include "core/error.h"
#include "core/sha256.h"

namespace moepack {

ExpertStore::ExpertStore(const ExpertPack& pack, const ExpertStoreSettings& settings, uint32_t top_k)
    : pack_(pack),
      settings_(settings),
      slot_bytes_(pack.layout().max_stride),
      cache_(cache_slots_for_budget(settings.cache_bytes, settings.available_bytes, settings.reserve_bytes,
                                    pack.layout().max_stride, top_k, pack.layout().expert_count()),
             make_policy(settings.policy)),
      reader_(pack.experts_path(), settings.reader) {
  if (reader_.alignment() > kPackAlignment) {
    throw Error(pack.experts_path() + ": the file system needs O_DIRECT alignment " +
                std::to_string(reader_.alignment()) + " but the pack is aligned to " + std::to_string(kPackAlignment));
  }
  slots_ = AlignedBuffer(static_cast<size_t>(slot_bytes_) * cache_.slot_count(), kPackAlignment);
}

std::vector<const uint8_t*> ExpertStore::acquire(uint32_t layer, std::span<const uint32_t> experts) {
  if (layer >= pack_.layout().layers.size()) {
    throw Error(pack_.dir() + ": layer " + std::to_string(layer) + " is not a layer with routed experts");
  }
  const uint64_t stride = pack_.stride(layer);
  const auto assignments = cache_.acquire(layer, experts);
  std::vector<ReadRequest> reads;
  for (const SlotAssignment& a : assignments) {
    if (a.hit) continue;
    reads.push_back({pack_.expert_offset(layer, a.expert), stride, slots_.data() + a.slot * slot_bytes_,
                     (static_cast<uint64_t>(a.expert) << 32) | a.slot});
  }
  // Until its bytes are in and checked, a miss must not stay in the cache: the next acquire
  // would take it for a hit and hand out whatever its slot holds.
  const auto forget_misses = [&] {
    for (const SlotAssignment& a : assignments) {
      if (a.hit) continue;
      cache_.invalidate(ExpertKey{layer, a.expert});
      verified_.erase(ExpertKey{layer, a.expert}.packed());
    }
  };
  try {
    if (!reads.empty()) reader_.read_all(reads);
  } catch (...) {
    forget_misses();
    reader_.drain();  // reads of this call still in flight land before their slots are reused
    throw;
  }
  std::vector<const uint8_t*> out;
  out.reserve(assignments.size());
  for (const SlotAssignment& a : assignments) {
    const uint8_t* p = slots_.data() + a.slot * slot_bytes_;
    if (settings_.verify_pack_sha256 && !a.hit) {
      const uint64_t key = ExpertKey{layer, a.expert}.packed();
      if (verified_.insert(key).second) {
        const std::string got = to_hex(Sha256::of(p, stride));
        const std::string& want = pack_.manifest().expert_sha256.at(layer).at(a.expert);
        if (got != want) {
          forget_misses();  // this one is never served, nor the misses after it, unchecked
          throw Error(pack_.bad_block_message(layer, a.expert, got));
        }
        ++verified_count_;
      }
    }
    out.push_back(p);
  }
  return out;
}

ExpertStoreCounters ExpertStore::counters() const {
  ExpertStoreCounters c;
  c.cache = cache_.counters();
  c.pack_read_bytes = reader_.counters().pack_read_bytes.load(std::memory_order_relaxed);
  c.fallback_count = reader_.counters().fallback_count.load(std::memory_order_relaxed);
  c.io_errors = reader_.counters().io_errors.load(std::memory_order_relaxed);
  c.verified_experts = verified_count_;
  return c;
}

}  // namespace moepack
