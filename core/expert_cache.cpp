#include "core/expert_cache.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "core/error.h"

namespace moepack {
namespace {

// Picks the unprotected occupied slot with the smallest rank tuple (ties -> lowest slot).
template <typename Rank>
uint32_t argmin_slot(std::span<const SlotState> slots, std::span<const bool> is_protected, Rank rank) {
  uint32_t best = std::numeric_limits<uint32_t>::max();
  for (uint32_t s = 0; s < slots.size(); ++s) {
    if (!slots[s].occupied || is_protected[s]) continue;
    if (best == std::numeric_limits<uint32_t>::max() || rank(slots[s]) < rank(slots[best])) best = s;
  }
  if (best == std::numeric_limits<uint32_t>::max()) throw Error("expert cache: no evictable slot");
  return best;
}

class LruPolicy final : public ReplacementPolicy {
 public:
  std::string_view name() const override { return "lru"; }
  uint32_t choose_victim(std::span<const SlotState> s, std::span<const bool> p) override {
    return argmin_slot(s, p, [](const SlotState& x) { return x.last_access; });
  }
};

class LfuPolicy final : public ReplacementPolicy {
 public:
  std::string_view name() const override { return "lfu"; }
  uint32_t choose_victim(std::span<const SlotState> s, std::span<const bool> p) override {
    return argmin_slot(s, p, [](const SlotState& x) { return x.uses; });
  }
};

class HybridPolicy final : public ReplacementPolicy {
 public:
  std::string_view name() const override { return "hybrid"; }
  uint32_t choose_victim(std::span<const SlotState> s, std::span<const bool> p) override {
    return argmin_slot(s, p, [](const SlotState& x) { return std::make_tuple(x.uses, x.last_access); });
  }
};

class BeladyPolicy final : public ReplacementPolicy {
 public:
  explicit BeladyPolicy(std::vector<ExpertKey> accesses) : accesses_(std::move(accesses)) {
    // next_use_[i] = position of the next access to the same key after i (or "never").
    next_use_.assign(accesses_.size(), kNever);
    std::unordered_map<uint64_t, uint64_t> later;
    for (uint64_t i = accesses_.size(); i-- > 0;) {
      const uint64_t k = accesses_[i].packed();
      auto it = later.find(k);
      next_use_[i] = it == later.end() ? kNever : it->second;
      later[k] = i;
    }
  }
  std::string_view name() const override { return "belady"; }
  void on_access(uint64_t position) override {
    if (position >= accesses_.size()) throw Error("belady policy: more accesses than the trace it was given");
    next_of_key_[accesses_[position].packed()] = next_use_[position];
  }
  uint32_t choose_victim(std::span<const SlotState> s, std::span<const bool> p) override {
    // Farthest next use first (never used again = farthest); ties -> lowest slot.
    return argmin_slot(s, p, [this](const SlotState& x) {
      auto it = next_of_key_.find(x.key.packed());
      const uint64_t next = it == next_of_key_.end() ? kNever : it->second;
      return kNever - next;
    });
  }

 private:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  std::vector<ExpertKey> accesses_;
  std::vector<uint64_t> next_use_;
  std::unordered_map<uint64_t, uint64_t> next_of_key_;
};

}  // namespace

std::unique_ptr<ReplacementPolicy> make_lru_policy() { return std::make_unique<LruPolicy>(); }
std::unique_ptr<ReplacementPolicy> make_lfu_policy() { return std::make_unique<LfuPolicy>(); }
std::unique_ptr<ReplacementPolicy> make_hybrid_policy() { return std::make_unique<HybridPolicy>(); }
std::unique_ptr<ReplacementPolicy> make_belady_policy(std::vector<ExpertKey> accesses) {
  return std::make_unique<BeladyPolicy>(std::move(accesses));
}
std::unique_ptr<ReplacementPolicy> make_policy(std::string_view name) {
  if (name == "lru") return make_lru_policy();
  if (name == "lfu") return make_lfu_policy();
  if (name == "hybrid") return make_hybrid_policy();
  throw Error("unknown cache policy \"" + std::string(name) + "\" (lru, lfu, hybrid)");
}

uint32_t cache_slots_for_budget(uint64_t requested_bytes, uint64_t free_bytes, uint64_t reserve_bytes,
                                uint64_t slot_bytes, uint32_t min_slots, uint64_t max_slots) {
  if (slot_bytes == 0) throw Error("expert cache: slot size is 0 bytes");
  const uint64_t available = free_bytes > reserve_bytes ? free_bytes - reserve_bytes : 0;
  const uint64_t usable = std::min(requested_bytes, available);
  const uint64_t slots = std::min<uint64_t>(usable / slot_bytes, std::numeric_limits<uint32_t>::max());
  if (slots < min_slots) {
    throw Error("expert cache: " + std::to_string(slots) + " slots of " + std::to_string(slot_bytes) +
                " bytes fit in min(requested " + std::to_string(requested_bytes) + ", free " +
                std::to_string(free_bytes) + " - reserve " + std::to_string(reserve_bytes) +
                ") bytes, but one layer's top-k working set needs " + std::to_string(min_slots) + " slots (" +
                std::to_string(static_cast<uint64_t>(min_slots) * slot_bytes) + " bytes)");
  }
  return static_cast<uint32_t>(std::min(slots, max_slots));
}

ExpertCache::ExpertCache(uint32_t slot_count, std::unique_ptr<ReplacementPolicy> policy)
    : slots_(slot_count), protected_(std::make_unique<bool[]>(slot_count)), policy_(std::move(policy)) {
  if (slot_count == 0) throw Error("expert cache: zero slots");
  if (!policy_) throw Error("expert cache: no replacement policy");
}

std::optional<uint32_t> ExpertCache::slot_of(ExpertKey key) const {
  auto it = where_.find(key.packed());
  if (it == where_.end()) return std::nullopt;
  return it->second;
}

void ExpertCache::check_request(const char* what, uint32_t layer, std::span<const uint32_t> experts,
                                size_t kept) const {
  if (experts.size() + kept > slots_.size()) {
    throw Error(std::string("expert cache: ") + what + "layer " + std::to_string(layer) + " needs " +
                std::to_string(experts.size()) + " experts at once" +
                (kept ? " beside " + std::to_string(kept) + " kept slots" : std::string()) + " but the cache has " +
                std::to_string(slots_.size()) + " slots");
  }
  for (size_t i = 0; i < experts.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (experts[j] == experts[i]) {
        throw Error("expert cache: expert " + std::to_string(experts[i]) + " requested twice for layer " +
                    std::to_string(layer));
      }
    }
  }
}

// Marks the slots in `keep` and the resident ones of `experts` protected (and fills the latter's
// hit / slot); the rest keep hit = false.
void ExpertCache::protect_resident(uint32_t layer, std::span<const uint32_t> experts, std::span<const uint32_t> keep,
                                   std::vector<SlotAssignment>& out) {
  std::fill(protected_.get(), protected_.get() + slots_.size(), false);
  for (const uint32_t s : keep) {
    if (s >= slots_.size()) throw Error("expert cache: kept slot " + std::to_string(s) + " does not exist");
    protected_[s] = true;
  }
  out.assign(experts.size(), SlotAssignment{});
  for (size_t i = 0; i < experts.size(); ++i) {
    out[i].expert = experts[i];
    auto it = where_.find(ExpertKey{layer, experts[i]}.packed());
    if (it != where_.end()) {
      out[i].hit = true;
      out[i].slot = it->second;
      protected_[it->second] = true;
    }
  }
}

// A slot for `key`: a free one, a never-used one, or the policy's victim among unprotected
// slots (recorded in *evicted). The slot is protected from the rest of the call.
uint32_t ExpertCache::place(ExpertKey key, uint64_t uses, bool prefetched, std::optional<ExpertKey>* evicted) {
  uint32_t slot;
  if (!free_list_.empty()) {
    slot = free_list_.back();
    free_list_.pop_back();
  } else if (next_free_ < slots_.size()) {
    slot = next_free_++;
  } else {
    slot = policy_->choose_victim(slots_, std::span<const bool>(protected_.get(), slots_.size()));
    *evicted = slots_[slot].key;
    where_.erase(slots_[slot].key.packed());
    counters_.cache_evictions++;
  }
  slots_[slot] = SlotState{true, key, uses, clock_, prefetched};
  where_[key.packed()] = slot;
  protected_[slot] = true;
  return slot;
}

std::vector<SlotAssignment> ExpertCache::acquire(uint32_t layer, std::span<const uint32_t> experts,
                                                 std::span<const uint32_t> keep) {
  check_request("", layer, experts, keep.size());
  std::vector<SlotAssignment> out;
  // First: hits, protected so a miss of this call cannot evict them.
  protect_resident(layer, experts, keep, out);
  for (size_t i = 0; i < experts.size(); ++i) {
    const ExpertKey key{layer, experts[i]};
    policy_->on_access(clock_);
    const bool first_in_step = seen_this_step_.insert(key.packed()).second;
    if (out[i].hit) {
      SlotState& s = slots_[out[i].slot];
      if (s.prefetched) {
        // Read ahead by prefetch(): no read now, but the cache itself did not hold it.
        s.prefetched = false;
        out[i].prefetched = true;
        counters_.prefetch_hits++;  // every prefetch used, even of a key seen earlier this step
        if (first_in_step) counters_.cache_misses++;
      } else if (first_in_step) {
        counters_.cache_hits++;
      }
      s.uses++;
      s.last_access = clock_;
    } else {
      if (first_in_step) counters_.cache_misses++;
      out[i].slot = place(key, 1, false, &out[i].evicted);
    }
    ++clock_;
  }
  return out;
}

std::vector<SlotAssignment> ExpertCache::prefetch(uint32_t layer, std::span<const uint32_t> experts,
                                                  std::span<const uint32_t> keep) {
  check_request("prefetch of ", layer, experts, 0);
  std::vector<SlotAssignment> all;
  protect_resident(layer, experts, keep, all);
  // Slots a placement may take: free, never used, or occupied and not protected.
  size_t room = free_list_.size() + (slots_.size() - next_free_);
  for (uint32_t s = 0; s < next_free_; ++s) room += slots_[s].occupied && !protected_[s];
  std::vector<SlotAssignment> out;
  for (SlotAssignment& a : all) {
    if (a.hit) continue;
    if (room-- == 0) break;
    a.slot = place(ExpertKey{layer, a.expert}, 0, true, &a.evicted);
    counters_.prefetches++;
    out.push_back(a);
  }
  return out;
}

size_t ExpertCache::prefetch_prefix(uint32_t layer, std::span<const uint32_t> experts,
                                    size_t max_reads) const {
  size_t n = 0, reads = 0;
  for (; n < experts.size() && n < slots_.size(); ++n) {
    if (where_.count(ExpertKey{layer, experts[n]}.packed())) continue;  // resident: no read
    if (reads == max_reads) break;
    ++reads;
  }
  return n;
}

void ExpertCache::end_step() { seen_this_step_.clear(); }

void ExpertCache::invalidate(ExpertKey key) {
  auto it = where_.find(key.packed());
  if (it == where_.end()) return;
  slots_[it->second] = SlotState{};
  free_list_.push_back(it->second);
  where_.erase(it);
}

}  // namespace moepack
