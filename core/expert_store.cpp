#include "core/expert_store.h"

#include <algorithm>
#include <exception>

#include "core/error.h"
#include "core/sha256.h"

namespace moepack {

ExpertStore::ExpertStore(const ExpertPack& pack, const ExpertStoreSettings& settings, uint32_t top_k)
    : pack_(pack),
      settings_(settings),
      top_k_(top_k),
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

ExpertStore::~ExpertStore() { reader_.drain(); }

std::vector<uint32_t> ExpertStore::pending_slots_except(uint32_t layer,
                                                        std::span<const uint32_t> experts) const {
  std::vector<uint32_t> slots;
  for (const auto& [tag, p] : pending_) {
    if (p.key.layer == layer && std::find(experts.begin(), experts.end(), p.key.expert) != experts.end())
      continue;
    slots.push_back(p.slot);
  }
  return slots;
}

void ExpertStore::wait_for(std::unordered_set<uint64_t> tags) {
  while (!tags.empty()) {
    const std::vector<uint64_t> done = reader_.wait_some();
    if (done.empty())
      throw Error("internal: " + pack_.experts_path() + ": a read waited for is not in flight");
    for (const uint64_t t : done) {
      pending_.erase(t);
      tags.erase(t);
    }
  }
}

namespace {

// A read that failed (IoError: the device; FormatError: the file ended early), as opposed to a
// broken reader or a bad request.
bool is_read_failure(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const IoError&) {
    return true;
  } catch (const FormatError&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

void ExpertStore::collect_landed() {
  if (pending_.empty()) return;
  try {
    for (const uint64_t t : reader_.poll()) pending_.erase(t);
  } catch (...) {
    abandon_reads();
    // A read ahead failed: it is forgotten (counted in io_errors); an acquire() that needs the
    // expert reads it again and reports a failure that persists.
    if (!is_read_failure(std::current_exception())) throw;
  }
}

void ExpertStore::abandon_reads() noexcept {
  reader_.drain();  // reads still in flight land before their slots are reused
  for (const auto& [tag, p] : pending_) cache_.invalidate(p.key);
  pending_.clear();
}

void ExpertStore::check_experts(uint32_t layer, std::span<const uint32_t> experts) const {
  if (layer >= pack_.layout().layers.size()) {
    throw Error(pack_.dir() + ": layer " + std::to_string(layer) + " is not a layer with routed experts");
  }
  const uint32_t n = pack_.layout().layers[layer].n_experts;
  for (const uint32_t e : experts) {
    if (e >= n) {
      throw Error(pack_.dir() + ": expert " + std::to_string(e) + " of layer " + std::to_string(layer) +
                  " does not exist (the layer has " + std::to_string(n) + " experts)");
    }
  }
}

std::vector<const uint8_t*> ExpertStore::acquire(uint32_t layer, std::span<const uint32_t> experts) {
  std::vector<const uint8_t*> out(experts.size());
  acquire_each(layer, experts, [&](size_t i, const uint8_t* block) { out[i] = block; });
  return out;
}

void ExpertStore::acquire_each(uint32_t layer, std::span<const uint32_t> experts, const Ready& ready,
                               const std::function<void()>& all_landed) {
  check_experts(layer, experts);
  in_use_.clear();
  collect_landed();
  const bool reads_ahead = !pending_.empty();
  std::vector<size_t> index(experts.size());
  for (size_t i = 0; i < index.size(); ++i) index[i] = i;
  std::vector<bool> handed(experts.size(), false);
  bool caller_threw = false;
  const Ready hand = [&](size_t i, const uint8_t* block) {
    handed[i] = true;
    try {
      ready(i, block);
    } catch (...) {
      caller_threw = true;
      throw;
    }
  };
  bool landed_called = false;
  const std::function<void()> landed = [&] {
    if (landed_called || !all_landed) return;
    landed_called = true;
    try {
      all_landed();
    } catch (...) {
      caller_threw = true;
      throw;
    }
  };
  try {
    acquire_now(layer, experts, index, hand, landed);
    return;
  } catch (...) {
    // With reads ahead in flight the failed read may have been one of theirs, which this call
    // does not need: once more with nothing else in flight (a failure of its own recurs), for
    // the experts not handed out yet, beside those that were.
    if (caller_threw || !reads_ahead || !is_read_failure(std::current_exception())) throw;
  }
  // Every expert not handed out was forgotten by the failed try (its slot is free, no read is in
  // flight), so these misses take free slots and evict none of those handed out; their views
  // stay in use, kept from a prefetch() made from `ready`.
  std::vector<uint32_t> rest, kept;
  index.clear();
  for (size_t i = 0; i < experts.size(); ++i) {
    if (handed[i]) {
      if (const auto slot = cache_.slot_of(ExpertKey{layer, experts[i]})) kept.push_back(*slot);
      continue;
    }
    rest.push_back(experts[i]);
    index.push_back(i);
  }
  in_use_ = kept;
  acquire_now(layer, rest, index, hand, landed);
}

void ExpertStore::acquire_now(uint32_t layer, std::span<const uint32_t> experts,
                              std::span<const size_t> index, const Ready& ready,
                              const std::function<void()>& all_landed) {
  const uint64_t stride = pack_.stride(layer);
  // A prefetch read in flight owns its slot; if this call's experts leave no room beside them,
  // they are finished first (then they are ordinary residents the policy may evict).
  std::vector<uint32_t> keep = pending_slots_except(layer, experts);
  if (!keep.empty() && experts.size() + keep.size() > cache_.slot_count()) {
    try {
      std::unordered_set<uint64_t> all;
      for (const auto& [tag, p] : pending_) all.insert(tag);
      wait_for(std::move(all));
    } catch (...) {
      abandon_reads();  // acquire() tries once more if a read ahead failed
      throw;
    }
    keep.clear();
  }
  const auto assignments = cache_.acquire(layer, experts, keep);
  // Their views are in use from the first one handed out: a prefetch() never evicts them.
  for (const SlotAssignment& a : assignments) in_use_.push_back(a.slot);
  // Until its bytes are in and checked, a miss (or an expert read ahead) must not stay in the
  // cache: the next acquire would take it for a hit and hand out whatever its slot holds.
  std::vector<bool> handed(assignments.size(), false);
  const auto unchecked = [](const SlotAssignment& a) { return !a.hit || a.prefetched; };
  const auto forget_unchecked = [&] {
    for (size_t k = 0; k < assignments.size(); ++k) {
      const SlotAssignment& a = assignments[k];
      if (!unchecked(a) || handed[k]) continue;
      cache_.invalidate(ExpertKey{layer, a.expert});
      verified_.erase(ExpertKey{layer, a.expert}.packed());
    }
  };
  std::unordered_map<uint64_t, size_t> waiting;  // reader tag -> assignment
  try {
    for (size_t k = 0; k < assignments.size(); ++k) {
      const SlotAssignment& a = assignments[k];
      if (a.hit) {
        // Read ahead and perhaps still in flight: wait for that read, not a new one.
        if (a.prefetched && pending_.count(kPrefetchTag | a.slot)) waiting[kPrefetchTag | a.slot] = k;
        continue;
      }
      const uint64_t tag = (static_cast<uint64_t>(a.expert) << 32) | a.slot;
      reader_.submit(
          {pack_.expert_offset(layer, a.expert), stride, slots_.data() + a.slot * slot_bytes_, tag});
      waiting[tag] = k;
    }
  } catch (...) {
    forget_unchecked();
    abandon_reads();
    throw;
  }
  const auto hand_out = [&](size_t k) {
    const SlotAssignment& a = assignments[k];
    const uint8_t* p = slots_.data() + a.slot * slot_bytes_;
    const uint64_t key = ExpertKey{layer, a.expert}.packed();
    if (settings_.verify_pack_sha256 && unchecked(a) && !verified_.count(key)) {
      const std::string got = to_hex(Sha256::of(p, stride));
      if (got != pack_.manifest().expert_sha256.at(layer).at(a.expert)) {
        throw Error(pack_.bad_block_message(layer, a.expert, got));
      }
      verified_.insert(key);
      ++verified_count_;
    }
    handed[k] = true;
    ready(index[k], p);
  };
  struct Waiting {  // reads_waited_for() while this call waits
    size_t& n;
    ~Waiting() { n = 0; }
  } guard{waiting_};
  waiting_ = waiting.size();
  try {
    if (waiting.empty()) all_landed();
    for (size_t k = 0; k < assignments.size(); ++k) {
      const SlotAssignment& a = assignments[k];
      if (!waiting.count(a.hit ? kPrefetchTag | a.slot : (static_cast<uint64_t>(a.expert) << 32) | a.slot)) {
        hand_out(k);
      }
    }
    while (!waiting.empty()) {
      const std::vector<uint64_t> done = reader_.wait_some();
      if (done.empty())
        throw Error("internal: " + pack_.experts_path() + ": a read waited for is not in flight");
      std::vector<size_t> landed;
      for (const uint64_t t : done) {
        pending_.erase(t);
        if (const auto it = waiting.find(t); it != waiting.end()) {
          landed.push_back(it->second);
          waiting.erase(it);
        }
      }
      waiting_ = waiting.size();
      if (waiting.empty()) all_landed();
      for (const size_t k : landed) hand_out(k);
    }
  } catch (...) {
    forget_unchecked();  // the failed one is never served, nor the others not handed out, unchecked
    abandon_reads();
    throw;
  }
}

uint32_t ExpertStore::prefetch(uint32_t layer, std::span<const uint32_t> experts) {
  check_experts(layer, experts);
  if (waiting_ > 0) {
    // collect_landed() would take the landed reads that acquire waits for.
    throw Error("internal: " + pack_.experts_path() + ": prefetch() while an acquire waits for " +
                std::to_string(waiting_) + " reads");
  }
  collect_landed();
  // Room: the next acquire needs slots for its experts (at least top-k, as many as the last
  // one's) beside the reads in flight, or it finishes them first and its misses evict the
  // unused prefetches.
  const size_t busy = std::max<size_t>(in_use_.size(), top_k_) + pending_.size();
  if (busy >= cache_.slot_count()) return 0;
  const size_t max_reads = std::min<size_t>(top_k_, cache_.slot_count() - busy);
  const size_t n = cache_.prefetch_prefix(layer, experts, max_reads);
  std::vector<uint32_t> keep = in_use_;  // their views are in use
  for (const auto& [tag, p] : pending_) keep.push_back(p.slot);
  const std::vector<SlotAssignment> placed = cache_.prefetch(layer, experts.first(n), keep);
  const uint64_t stride = pack_.stride(layer);
  try {
    for (const SlotAssignment& a : placed) {
      const uint64_t tag = kPrefetchTag | a.slot;
      pending_[tag] = {ExpertKey{layer, a.expert}, a.slot};
      reader_.submit(
          {pack_.expert_offset(layer, a.expert), stride, slots_.data() + a.slot * slot_bytes_, tag});
    }
  } catch (...) {
    for (const SlotAssignment& a : placed) cache_.invalidate(ExpertKey{layer, a.expert});
    abandon_reads();
    throw;
  }
  return static_cast<uint32_t>(placed.size());
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
