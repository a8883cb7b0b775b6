#include "core/victim_tier.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace moepack {

namespace {

// The first unsigned number in file `path`; nullopt if absent or not a number (e.g. "max").
std::optional<uint64_t> read_number(const std::string& path) {
  std::ifstream f(path);
  uint64_t v = 0;
  if (!(f >> v)) return std::nullopt;
  return v;
}

// The value of `key` in a memory.stat file ("key value" lines); nullopt if absent.
std::optional<uint64_t> read_stat(const std::string& path, std::string_view key) {
  std::ifstream f(path);
  std::string k;
  uint64_t v = 0;
  while (f >> k >> v) {
    if (k == key) return v;
  }
  return std::nullopt;
}

}  // namespace

uint64_t cgroup_memory_left(const std::string& dir) {
  struct Files {
    const char* limit;
    const char* usage;
    const char* inactive_file;  // memory.stat's key
  };
  for (const Files& v : {Files{"memory.max", "memory.current", "inactive_file"},
                         Files{"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"}}) {
    const auto limit = read_number(dir + "/" + v.limit);
    auto usage = read_number(dir + "/" + v.usage);
    if (!limit || !usage) continue;
    // The usage counts the page cache; its inactive part is reclaimed before the limit bites.
    const uint64_t reclaimable = read_stat(dir + "/memory.stat", v.inactive_file).value_or(0);
    *usage -= std::min(*usage, reclaimable);
    return *limit > *usage ? *limit - *usage : 0;
  }
  return ~0ull;
}

uint64_t cgroup_memory_left_of(std::string_view proc_self_cgroup, const std::string& cgroup_root) {
  uint64_t left = ~0ull;
  // "0::/path" (v2) or "N:memory:/path" (v1, the memory controller alone or co-mounted): the
  // cgroup and its parents up to the root.
  size_t pos = 0;
  while (pos < proc_self_cgroup.size()) {
    size_t end = proc_self_cgroup.find('\n', pos);
    if (end == std::string_view::npos) end = proc_self_cgroup.size();
    const std::string line(proc_self_cgroup.substr(pos, end - pos));
    pos = end + 1;
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string root;
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      root = cgroup_root;
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      root = cgroup_root + "/memory";
    } else {
      continue;
    }
    for (std::string path = line.substr(b + 1);;) {
      left = std::min(left, cgroup_memory_left(root + path));
      if (path.empty() || path == "/") break;
      path = path.substr(0, path.find_last_of('/'));
    }
  }
  return left;
}

uint64_t available_ram_bytes() {
  uint64_t avail = ~0ull;
  {
    std::ifstream f("/proc/meminfo");
    std::string key, unit;
    uint64_t kib = 0;
    while (f >> key >> kib >> unit) {
      if (key == "MemAvailable:") {
        avail = kib * 1024;
        break;
      }
    }
  }
  std::ifstream cg("/proc/self/cgroup");
  const std::string text((std::istreambuf_iterator<char>(cg)), std::istreambuf_iterator<char>());
  return std::min(avail, cgroup_memory_left_of(text, "/sys/fs/cgroup"));
}

uint32_t ram_tier_slots(uint64_t requested_bytes, uint64_t available_bytes, uint64_t slot_bytes,
                        uint64_t max_slots) {
  if (slot_bytes == 0) return 0;
  const uint64_t usable =
      std::min(requested_bytes, available_bytes - std::min(available_bytes, kRamTierKeepFree));
  return static_cast<uint32_t>(std::min<uint64_t>({usable / slot_bytes, max_slots, UINT32_MAX}));
}

uint64_t auto_ram_tier_bytes(uint64_t available_bytes) {
  return available_bytes == ~0ull ? 0 : available_bytes / 2;
}

uint64_t auto_ram_tier_usable_bytes(uint64_t available_bytes) {
  return std::min(auto_ram_tier_bytes(available_bytes),
                  available_bytes - std::min(available_bytes, kRamTierKeepFree));
}

TierAdmission parse_tier_admission(std::string_view name, std::string_view what) {
  if (name == "all") return TierAdmission::kAll;
  if (name == "frequency") return TierAdmission::kFrequency;
  throw Error(std::string(what) + ": unknown RAM tier admission \"" + std::string(name) +
              "\" (all, frequency)");
}

std::string_view tier_admission_name(TierAdmission a) {
  return a == TierAdmission::kFrequency ? "frequency" : "all";
}

const TierPlan::Demotion* TierPlan::demotion_of(uint32_t slot) const {
  for (const Demotion& d : demotions) {
    if (d.upper_slot == slot) return &d;
  }
  return nullptr;
}

uint32_t TierPlan::promotions() const {
  return static_cast<uint32_t>(
      std::count_if(ram_slot.begin(), ram_slot.end(), [](const auto& s) { return s.has_value(); }));
}

VictimTier::VictimTier(uint32_t slot_count, TierAdmission admission, uint64_t window)
    : slots_(slot_count),
      admission_(admission),
      window_(window != 0 ? window : std::max<uint64_t>(1, slot_count * kTierWindowPerSlot)) {
  for (uint32_t s = 0; s < slot_count; ++s) free_.insert(free_.end(), s);
}

uint32_t VictimTier::uses(ExpertKey key) const {
  const auto it = uses_.find(key.packed());
  return it == uses_.end() ? 0 : it->second;
}

void VictimTier::count_use(ExpertKey key) {
  ++uses_[key.packed()];
  if (++counted_ < window_) return;
  // TinyLFU's reset: halve every count, so old popularity fades.
  counted_ = 0;
  for (auto it = uses_.begin(); it != uses_.end();) {
    it->second /= 2;
    it = it->second == 0 ? uses_.erase(it) : std::next(it);
  }
}

std::optional<uint32_t> VictimTier::slot_of(ExpertKey key) const {
  const auto it = where_.find(key.packed());
  if (it == where_.end()) return std::nullopt;
  return it->second;
}

void VictimTier::remove(uint32_t slot) {
  Entry& e = slots_[slot];
  where_.erase(e.key.packed());
  lru_.erase({e.demoted_at, slot});
  e = Entry{};
}

void VictimTier::occupy(uint32_t slot, ExpertKey key, bool next_to_drop) {
  const uint64_t at = next_to_drop ? --low_clock_ : ++clock_;
  slots_[slot] = Entry{true, key, at};
  where_[key.packed()] = slot;
  lru_.insert({at, slot});
}

void VictimTier::invalidate(ExpertKey key) {
  if (const auto s = slot_of(key)) {
    remove(*s);
    free_.insert(*s);
  }
}

bool VictimTier::loses_to_next_drop(ExpertKey candidate) const {
  return admission_ == TierAdmission::kFrequency && !lru_.empty() &&
         uses(candidate) <= uses(slots_[lru_.begin()->second].key);
}

bool VictimTier::goes_first_in_line(ExpertKey candidate) const {
  // Once the tier was full, an eviction that loses the test takes a slot it did not win (one a
  // promotion left free, or its own when refreshed) as the next to drop itself: it holds the slot
  // until a more used eviction needs one, instead of pushing that expert out first.
  return filled_ && loses_to_next_drop(candidate);
}

std::optional<uint32_t> VictimTier::slot_for_demotion(ExpertKey candidate, bool* next_to_drop) {
  *next_to_drop = false;
  if (!free_.empty()) {
    const uint32_t s = *free_.begin();
    free_.erase(free_.begin());
    *next_to_drop = goes_first_in_line(candidate);
    if (free_.empty()) filled_ = true;
    return s;
  }
  // A slot promoted from in this plan is neither free nor in lru_ until the plan ends.
  if (lru_.empty()) {
    ++counters_.refused;
    return std::nullopt;
  }
  if (loses_to_next_drop(candidate)) {
    ++counters_.not_admitted;
    return std::nullopt;
  }
  const uint32_t victim = lru_.begin()->second;
  remove(victim);
  ++counters_.drops;
  return victim;
}

TierPlan VictimTier::plan(uint32_t layer, std::span<const SlotAssignment> assignments, bool accesses) {
  TierPlan p;
  p.ram_slot.resize(assignments.size());
  if (slots_.empty()) return p;
  if (accesses && admission_ == TierAdmission::kFrequency) {
    for (const SlotAssignment& a : assignments) count_use(ExpertKey{layer, a.expert});
  }
  // Promotions first: their slots leave this tier but stay busy for the rest of this plan (the
  // copies up read them after this plan's demotions are queued).
  std::vector<uint32_t> busy;
  for (size_t i = 0; i < assignments.size(); ++i) {
    const SlotAssignment& a = assignments[i];
    if (a.hit) continue;
    ++counters_.lookups;
    const ExpertKey key{layer, a.expert};
    const auto s = slot_of(key);
    if (!s) continue;
    ++counters_.hits;
    p.ram_slot[i] = *s;
    busy.push_back(*s);
    remove(*s);
  }
  for (const SlotAssignment& a : assignments) {
    if (!a.evicted) continue;
    const ExpertKey key = *a.evicted;
    if (const auto s = slot_of(key)) {
      // Already here: the same bytes, no copy. It takes its place in line as an eviction into a
      // freed slot would (its own slot).
      remove(*s);
      occupy(*s, key, goes_first_in_line(key));
      continue;
    }
    bool next_to_drop = false;
    const auto s = slot_for_demotion(key, &next_to_drop);
    if (!s) continue;
    // A slot this plan already demoted into (its expert was dropped again just now, e.g. one
    // placed first in line): that copy down would be overwritten before anything read it, so it
    // is not queued at all, and counted neither as a demotion nor as a drop.
    const auto same = std::find_if(p.demotions.begin(), p.demotions.end(),
                                   [&](const TierPlan::Demotion& d) { return d.ram_slot == *s; });
    if (same != p.demotions.end()) {
      p.demotions.erase(same);
      --counters_.demotions;
      --counters_.drops;
    }
    occupy(*s, key, next_to_drop);
    ++counters_.demotions;
    p.demotions.push_back({key, a.slot, *s});
  }
  // The promoted slots are free for later plans.
  for (const uint32_t s : busy) free_.insert(s);
  return p;
}

}  // namespace moepack
