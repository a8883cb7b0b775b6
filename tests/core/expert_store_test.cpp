// ExpertStore on a real pack built from a llama.cpp fixture: every block it hands out equals
// the bytes of the GGUF tensor slices it came from, counts follow the cache contract, and a
// corrupted block is caught by verify_pack_sha256 naming the expert; with next-layer prefetch
// the same, whenever the reads ahead land.
#include "core/expert_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/cpu_moe.h"
#include "core/engine_settings.h"
#include "core/error.h"
#include "core/expert_pack.h"
#include "core/expert_provider.h"
#include "core/gguf_model.h"
#include "core/model_source.h"
#include "core/thread_pool.h"
#include "packbuilder/pack_builder.h"

namespace fs = std::filesystem;
using namespace moepack;

namespace {

const std::string kModel = std::string(MOEPACK_SHARED_DIR) + "/fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf";

class ExpertStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("moepack-store-" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    BuildOptions o;
    o.source = kModel;
    o.out_dir = (*dir_ / "pack").string();
    build_pack(o);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  // The bytes of role `r` of expert e in layer l, read from the GGUF directly.
  static std::vector<uint8_t> gguf_slice(const GgufModel& m, const PackRole& r, uint32_t e) {
    const GgufTensorRef* t = m.find_tensor(r.tensor);
    EXPECT_NE(t, nullptr) << r.tensor;
    std::vector<uint8_t> out(r.bytes);
    m.shards()[t->shard].read_tensor_data(*t->info, e * r.bytes, out.data(), out.size());
    return out;
  }
  // A copy of the pack, dir_/`name`, with byte `at` of each (layer, expert) block of `blocks`
  // xor-ed with `mask` (the structure stays valid; only the blocks' SHA-256 no longer match).
  static fs::path corrupted_copy(const std::string& name,
                                 std::initializer_list<std::pair<uint32_t, uint32_t>> blocks, uint64_t at,
                                 uint8_t mask) {
    const fs::path copy = pack_copy(name);
    const ExpertPack clean = ExpertPack::open(copy.string());
    std::fstream f(clean.experts_path(), std::ios::in | std::ios::out | std::ios::binary);
    for (const auto& [layer, expert] : blocks) {
      const auto off = static_cast<std::streamoff>(clean.expert_offset(layer, expert) + at);
      char b = 0;
      f.seekg(off);
      f.read(&b, 1);
      b = static_cast<char>(b ^ static_cast<char>(mask));
      f.seekp(off);
      f.write(&b, 1);
    }
    return copy;
  }
  // Store settings for a cache of exactly `slots` slots of `pack`'s largest stride.
  static ExpertStoreSettings with_slots(const ExpertPack& pack, uint64_t slots) {
    ExpertStoreSettings s;
    s.cache_bytes = slots * pack.layout().max_stride;
    return s;
  }
  // A copy of the pack, dir_/`name` (to cut short and restore under an open store).
  static fs::path pack_copy(const std::string& name) {
    const fs::path copy = *dir_ / name;
    fs::copy(*dir_ / "pack", copy, fs::copy_options::recursive);
    return copy;
  }
  // Puts the bytes of `pack`'s experts.bin from `cut` on back (from the original pack).
  static void restore_from(const ExpertPack& pack, uint64_t cut) {
    fs::resize_file(pack.experts_path(), cut);
    std::ifstream src(*dir_ / "pack" / "experts.bin", std::ios::binary);
    std::ofstream dst(pack.experts_path(), std::ios::binary | std::ios::app);
    src.seekg(static_cast<std::streamoff>(cut));
    dst << src.rdbuf();
  }
  static fs::path* dir_;
};
fs::path* ExpertStoreTest::dir_ = nullptr;

// A budget far above the pack (a user's cache_vram_mib of 16777216, 16 TiB) gives one slot per
// expert, not an allocation of the budget: deepseek2-tiny has 3 MoE blocks of 16 experts
// (fixtures README), so 48 slots; every expert then stays resident.
TEST_F(ExpertStoreTest, SlotsAreCappedAtThePacksExperts) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ASSERT_EQ(pack.layout().expert_count(), 48u);
  ExpertStoreSettings s;
  s.cache_bytes = 999999999999ull << 20;
  ExpertStore store(pack, s, 4);
  EXPECT_EQ(store.slot_count(), 48u);
  std::vector<uint32_t> all(16);
  for (uint32_t e = 0; e < 16; ++e) all[e] = e;
  for (uint32_t l = 0; l < 3; ++l) store.acquire(l, all);
  store.end_step();
  for (uint32_t l = 0; l < 3; ++l) store.acquire(l, all);
  const ExpertStoreCounters c = store.counters();
  EXPECT_EQ(c.cache.cache_misses, 48u);
  EXPECT_EQ(c.cache.cache_hits, 48u);
  EXPECT_EQ(c.cache.cache_evictions, 0u);
}

TEST_F(ExpertStoreTest, BlocksEqualGgufSlicesAndCountsFollowTheContract) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  const GgufModel model = GgufModel::open(kModel);
  ExpertStoreSettings s = with_slots(pack, 6);  // exactly 6 slots
  ExpertStore store(pack, s, 4);
  ASSERT_EQ(store.slot_count(), 6u);
  ASSERT_EQ(pack.layout().layers.size(), 3u);  // deepseek2-tiny: blocks 1-3 are MoE

  // Step 0: layer 0 {3, 7, 11, 15} -> 4 misses. Step 1: layer 1 {0, 1} -> 2 misses (slots full),
  // then layer 0 {7, 3} -> 2 hits. Step 2: layer 2 {5} -> miss, evicts the hybrid victim among
  // unprotected experts with 1 use, least recent: layer0/11 (L0/15 was used later).
  const std::vector<std::pair<uint32_t, std::vector<uint32_t>>> plan = {
      {0, {3, 7, 11, 15}}, {1, {0, 1}}, {0, {7, 3}}, {2, {5}}};
  const int step_of[] = {0, 1, 1, 2};
  int step = 0;
  for (size_t k = 0; k < plan.size(); ++k) {
    if (step_of[k] != step) {
      store.end_step();
      step = step_of[k];
    }
    const auto& [layer, ids] = plan[k];
    const auto ptrs = store.acquire(layer, ids);
    ASSERT_EQ(ptrs.size(), ids.size());
    const PackLayer& L = pack.layout().layers[layer];
    for (size_t i = 0; i < ids.size(); ++i) {
      for (const PackRole& r : L.roles) {
        const auto want = gguf_slice(model, r, ids[i]);
        ASSERT_EQ(0, std::memcmp(ptrs[i] + r.offset, want.data(), want.size()))
            << "layer " << layer << " expert " << ids[i] << " role " << r.role;
      }
    }
  }
  const auto c = store.counters();
  EXPECT_EQ(c.cache.cache_misses, 7u);
  EXPECT_EQ(c.cache.cache_hits, 2u);
  EXPECT_EQ(c.cache.cache_evictions, 1u);
  uint64_t want_bytes = 0;
  for (uint32_t l : {0u, 0u, 0u, 0u, 1u, 1u, 2u}) want_bytes += pack.stride(l);
  EXPECT_EQ(c.pack_read_bytes, want_bytes);
  EXPECT_EQ(c.fallback_count, 0u);
  EXPECT_FALSE(store.cache().slot_of(ExpertKey{0, 11}).has_value());
  EXPECT_TRUE(store.cache().slot_of(ExpertKey{0, 15}).has_value());
}

TEST_F(ExpertStoreTest, BudgetBelowTopKFailsWithNumbers) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStoreSettings s = with_slots(pack, 3);
  try {
    ExpertStore store(pack, s, 4);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 4 slots"), std::string::npos) << e.what();
  }
}

TEST_F(ExpertStoreTest, CorruptBlockIsCaughtOnFirstReadWhenVerifying) {
  const fs::path copy = corrupted_copy("corrupt", {{1, 9}}, 100, 0x5a);  // inside layer 1, expert 9
  const ExpertPack pack = ExpertPack::open(copy.string());  // structure is still fine
  ExpertStoreSettings s = with_slots(pack, 8);
  s.verify_pack_sha256 = true;
  ExpertStore store(pack, s, 4);
  const std::vector<uint32_t> good = {1, 2};
  EXPECT_NO_THROW(store.acquire(1, good));
  const std::vector<uint32_t> bad = {9};
  for (int attempt = 0; attempt < 2; ++attempt) {  // never served from the cache afterwards
    try {
      store.acquire(1, bad);
      FAIL() << "corrupt expert served";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("expert 9 of layer 1 (blk." + std::to_string(pack.layout().layers[1].block) +
                       ") at byte " + std::to_string(pack.expert_offset(1, 9))),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("SHA-256"), std::string::npos) << m;
      EXPECT_NE(m.find("moepack verify --full " + pack.dir()), std::string::npos) << m;
    }
  }
  EXPECT_EQ(store.counters().verified_experts, 2u);
}

// A read that fails (here: the pack cut short under an open store) leaves no expert resident
// that was not read: the next acquire reads again and fails again, rather than hand out the
// slot's zeros as a hit; once the file is whole again, the block is the GGUF's.
TEST_F(ExpertStoreTest, AFailedReadLeavesNothingResident) {
  const ExpertPack pack = ExpertPack::open(pack_copy("cut").string());
  ExpertStoreSettings s = with_slots(pack, 8);
  ExpertStore store(pack, s, 4);
  const uint32_t layer = 2, last = 15;
  const uint64_t whole = fs::file_size(pack.experts_path());
  const uint64_t cut = pack.expert_offset(layer, last);
  fs::resize_file(pack.experts_path(), cut);
  const std::vector<uint32_t> experts = {3, last};  // 3 reads fine, 15 lies past the end
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      store.acquire(layer, experts);
      FAIL() << "a read past the end of " << pack.experts_path() << " was served (attempt " << attempt << ")";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(store.counters().cache.cache_hits, 0u);
  // The original bytes back: both blocks read now and equal the GGUF's slices.
  restore_from(pack, cut);
  ASSERT_EQ(fs::file_size(pack.experts_path()), whole);
  const std::vector<const uint8_t*> blocks = store.acquire(layer, experts);
  const GgufModel model = GgufModel::open(kModel);
  const PackLayer& L = pack.layout().layers[layer];
  for (size_t i = 0; i < experts.size(); ++i) {
    for (const PackRole& r : L.roles) {
      const std::vector<uint8_t> want = gguf_slice(model, r, experts[i]);
      EXPECT_EQ(std::memcmp(blocks[i] + r.offset, want.data(), want.size()), 0) << r.tensor << " expert " << experts[i];
    }
  }
}

// Verification stops at the first bad block of a call, and the misses after it, read but not
// yet checked, are not served unchecked by the next call either.
TEST_F(ExpertStoreTest, EveryMissOfAFailedCheckIsCheckedWhenAskedAgain) {
  const fs::path copy = corrupted_copy("two-corrupt", {{0, 3}, {0, 7}}, 64, 0x21);
  const ExpertPack pack = ExpertPack::open(copy.string());
  ExpertStoreSettings s = with_slots(pack, 8);
  s.verify_pack_sha256 = true;
  ExpertStore store(pack, s, 4);
  const auto fails_naming = [&](std::vector<uint32_t> experts, const std::string& name) {
    try {
      store.acquire(0, experts);
      ADD_FAILURE() << "corrupt expert served";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  fails_naming({3, 7}, "of layer 0");  // the first of the two to land (acquire_each)
  fails_naming({3}, "expert 3 of layer 0");
  fails_naming({7}, "expert 7 of layer 0");
  EXPECT_NO_THROW(store.acquire(0, std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(store.counters().verified_experts, 2u);
}

// The bytes of every role of `experts` in `blocks` (one acquire()'s result) equal the GGUF's.
void expect_blocks_are_the_ggufs(const ExpertPack& pack, uint32_t layer, const std::vector<uint32_t>& experts,
                                 const std::vector<const uint8_t*>& blocks) {
  const GgufModel model = GgufModel::open(kModel);
  ASSERT_EQ(blocks.size(), experts.size());
  for (size_t i = 0; i < experts.size(); ++i) {
    for (const PackRole& r : pack.layout().layers[layer].roles) {
      const GgufTensorRef* t = model.find_tensor(r.tensor);
      ASSERT_NE(t, nullptr) << r.tensor;
      std::vector<uint8_t> want(r.bytes);
      model.shards()[t->shard].read_tensor_data(*t->info, experts[i] * r.bytes, want.data(), want.size());
      EXPECT_EQ(std::memcmp(blocks[i] + r.offset, want.data(), want.size()), 0)
          << "layer " << layer << " expert " << experts[i] << " role " << r.role;
    }
  }
}

// Prefetch by hand, 8 slots, top-k 4, SHA-256 on. acquire(0, {0, 1}) uses 2 slots; prefetch(1,
// {3, 4, 5, 6, 7}) considers top-k = 4 of the list and has room for 8 - max(2, 4) - 0 = 4, so
// it reads 3, 4, 5, 6 into the 6 free slots' first four. acquire(1, {3, 4, 9}): 3 and 4 are
// prefetch hits (no new read; counted as misses), 9 a miss in a free slot; acquire(1, {5, 6})
// two more prefetch hits. Totals: 7 misses (2 + 3 + 2), no hits, no evictions, 4 prefetches,
// all 4 used, 7 experts checked, bytes 2 blocks of layer 0 and 5 of layer 1; every block the
// GGUF's, whenever its read landed.
TEST_F(ExpertStoreTest, PrefetchedExpertsArriveIntactAndCountAsPrefetchHits) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStoreSettings s = with_slots(pack, 8);
  s.verify_pack_sha256 = true;
  ExpertStore store(pack, s, 4);
  ASSERT_EQ(store.slot_count(), 8u);
  expect_blocks_are_the_ggufs(pack, 0, {0, 1}, store.acquire(0, std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(store.prefetch(1, std::vector<uint32_t>{3, 4, 5, 6, 7}), 4u);
  EXPECT_LE(store.reads_in_flight(), 4u);
  for (const uint32_t e : {3u, 4u, 5u, 6u}) EXPECT_TRUE(store.cache().slot_of(ExpertKey{1, e})) << e;
  EXPECT_FALSE(store.cache().slot_of(ExpertKey{1, 7}));
  const std::vector<uint32_t> first = {3, 4, 9}, second = {5, 6};
  expect_blocks_are_the_ggufs(pack, 1, first, store.acquire(1, first));
  expect_blocks_are_the_ggufs(pack, 1, second, store.acquire(1, second));
  EXPECT_EQ(store.reads_in_flight(), 0u);
  const ExpertStoreCounters c = store.counters();
  EXPECT_EQ(c.cache.cache_misses, 7u);
  EXPECT_EQ(c.cache.cache_hits, 0u);
  EXPECT_EQ(c.cache.cache_evictions, 0u);
  EXPECT_EQ(c.cache.prefetches, 4u);
  EXPECT_EQ(c.cache.prefetch_hits, 4u);
  EXPECT_EQ(c.verified_experts, 7u);
  EXPECT_EQ(c.pack_read_bytes, 2 * pack.stride(0) + 5 * pack.stride(1));
}

// Room, 6 slots, top-k 4: after an acquire of 4 experts a prefetch may place 6 - 4 = 2 (the
// first two of the list); with the last acquire's 4 slots in use and top-k kept free, an empty
// cache of top-k slots reads nothing ahead. An acquire of 6 experts needs every slot: the reads
// in flight are finished first, then it evicts the 4 of layer 0 and the 2 read ahead.
TEST_F(ExpertStoreTest, PrefetchLeavesRoomForTheNextAcquire) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStoreSettings s = with_slots(pack, 6);
  ExpertStore store(pack, s, 4);
  ASSERT_EQ(store.slot_count(), 6u);
  store.acquire(0, std::vector<uint32_t>{0, 1, 2, 3});
  EXPECT_EQ(store.prefetch(1, std::vector<uint32_t>{8, 9, 10, 11}), 2u);
  EXPECT_TRUE(store.cache().slot_of(ExpertKey{1, 8}));
  EXPECT_TRUE(store.cache().slot_of(ExpertKey{1, 9}));
  EXPECT_FALSE(store.cache().slot_of(ExpertKey{1, 10}));
  for (const uint32_t e : {0u, 1u, 2u, 3u})
    EXPECT_TRUE(store.cache().slot_of(ExpertKey{0, e})) << "in use: " << e;
  const std::vector<uint32_t> six = {0, 1, 2, 3, 4, 5};
  expect_blocks_are_the_ggufs(pack, 2, six, store.acquire(2, six));
  EXPECT_EQ(store.reads_in_flight(), 0u);
  const ExpertStoreCounters c = store.counters();
  EXPECT_EQ(c.cache.prefetches, 2u);
  EXPECT_EQ(c.cache.prefetch_hits, 0u);
  EXPECT_EQ(c.cache.cache_evictions, 6u);
  EXPECT_EQ(c.pack_read_bytes, 4 * pack.stride(0) + 2 * pack.stride(1) + 6 * pack.stride(2));

  s.cache_bytes = 4 * pack.layout().max_stride;
  ExpertStore tight(pack, s, 4);
  tight.acquire(0, std::vector<uint32_t>{0});
  EXPECT_EQ(tight.prefetch(1, std::vector<uint32_t>{1, 2}), 0u);
  EXPECT_EQ(tight.counters().cache.prefetches, 0u);
}

// A corrupted block read ahead is reported by the acquire that uses it (SHA-256 on), and again
// by the next one (read again, never served from the cache); good blocks still arrive.
TEST_F(ExpertStoreTest, ACorruptBlockReadAheadIsReportedOnUse) {
  const fs::path copy = corrupted_copy("corrupt-ahead", {{1, 9}}, 200, 0x44);
  const ExpertPack pack = ExpertPack::open(copy.string());
  ExpertStoreSettings s = with_slots(pack, 8);
  s.verify_pack_sha256 = true;
  ExpertStore store(pack, s, 4);
  store.acquire(0, std::vector<uint32_t>{0});
  ASSERT_EQ(store.prefetch(1, std::vector<uint32_t>{9, 2}), 2u);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      store.acquire(1, std::vector<uint32_t>{2, 9});
      ADD_FAILURE() << "a corrupt block read ahead was served (attempt " << attempt << ")";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("expert 9 of layer 1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("SHA-256"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(store.cache().slot_of(ExpertKey{1, 9}));
  }
  const std::vector<uint32_t> good = {2, 3};
  EXPECT_NO_THROW(expect_blocks_are_the_ggufs(pack, 1, good, store.acquire(1, good)));
  EXPECT_EQ(store.reads_in_flight(), 0u);
}

// A read ahead that fails (the pack cut short under an open store) fails no acquire that does
// not need it: layer 0's experts and layer 2's expert 3 (whole on disk) arrive, whenever the
// failure is met; the reader counts it in io_errors. The acquire that needs expert 15 reads it
// again and reports it; nothing is left in flight or resident unread; with the file whole
// again, both blocks arrive.
TEST_F(ExpertStoreTest, AFailedReadAheadFailsOnlyTheAcquireThatNeedsIt) {
  const ExpertPack pack = ExpertPack::open(pack_copy("cut-ahead").string());
  ExpertStoreSettings s = with_slots(pack, 8);
  ExpertStore store(pack, s, 4);
  const uint32_t layer = 2, last = 15;
  const uint64_t whole = fs::file_size(pack.experts_path());
  const uint64_t cut = pack.expert_offset(layer, last);
  store.acquire(1, std::vector<uint32_t>{0});
  fs::resize_file(pack.experts_path(), cut);
  ASSERT_EQ(store.prefetch(layer, std::vector<uint32_t>{3, last}), 2u);
  const std::vector<uint32_t> other = {1, 2}, three = {3};
  expect_blocks_are_the_ggufs(pack, 0, other, store.acquire(0, other));
  expect_blocks_are_the_ggufs(pack, layer, three, store.acquire(layer, three));
  try {
    store.acquire(layer, std::vector<uint32_t>{last});
    ADD_FAILURE() << "a read past the end of " << pack.experts_path() << " was served";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  EXPECT_EQ(store.reads_in_flight(), 0u);
  EXPECT_FALSE(store.cache().slot_of(ExpertKey{layer, last}));
  EXPECT_EQ(store.counters().io_errors, 2u);  // the read ahead's, and the acquire's own
  restore_from(pack, cut);
  ASSERT_EQ(fs::file_size(pack.experts_path()), whole);
  const std::vector<uint32_t> both = {3, last};
  expect_blocks_are_the_ggufs(pack, layer, both, store.acquire(layer, both));
}

// A read ahead that fails while an acquire waits for its own read (the order forced by the
// fault injector: the acquire's read is refused with EAGAIN until the read ahead has failed,
// which it does with EIO once the acquire's read was seen) does not fail that acquire: it tries
// once more with nothing in flight, and its block arrives; the expert read ahead is forgotten;
// one I/O error counted.
TEST_F(ExpertStoreTest, AReadAheadFailingWhileAnAcquireWaitsDoesNotFailIt) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStore store(pack, with_slots(pack, 8), 4);
  const uint64_t own = pack.expert_offset(0, 1), ahead = pack.expert_offset(2, 15);
  bool own_seen = false, ahead_failed = false;
  store.set_fault_injector([&](uint64_t offset, uint64_t, int result) {
    if (offset == own && !ahead_failed) {
      own_seen = true;
      return -EAGAIN;
    }
    if (offset == ahead && !ahead_failed) {
      if (!own_seen) return -EAGAIN;
      ahead_failed = true;
      return -EIO;
    }
    return result;
  });
  store.acquire(1, std::vector<uint32_t>{0});
  ASSERT_EQ(store.prefetch(2, std::vector<uint32_t>{15}), 1u);
  const std::vector<uint32_t> one = {1};
  expect_blocks_are_the_ggufs(pack, 0, one, store.acquire(0, one));
  EXPECT_TRUE(ahead_failed);
  EXPECT_EQ(store.reads_in_flight(), 0u);
  EXPECT_FALSE(store.cache().slot_of(ExpertKey{2, 15}));
  EXPECT_EQ(store.counters().io_errors, 1u);
  const std::vector<uint32_t> fifteen = {15};
  expect_blocks_are_the_ggufs(pack, 2, fifteen, store.acquire(2, fifteen));
}

// A read ahead still in flight owns its slot (held there by an injected EAGAIN, which the
// reader resubmits until released): 5 slots, top-k 4; L0/0 acquired, L1/1 read ahead (room
// 5 - 4 = 1). An acquire of four layer-2 experts fits beside it (4 + 1 kept = 5): three free
// slots and L0/0's; the read ahead (uses 0, hybrid's first victim) is neither evicted nor read
// into. Released (after 100 more refusals), the acquire that uses it waits for it: it lands and
// is the GGUF's.
TEST_F(ExpertStoreTest, AReadAheadInFlightKeepsItsSlot) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStoreSettings s = with_slots(pack, 5);
  ExpertStore store(pack, s, 4);
  ASSERT_EQ(store.slot_count(), 5u);
  std::atomic<bool> hold{true};
  std::atomic<int> after_release{100};  // resubmissions still refused once released
  const uint64_t held = pack.expert_offset(1, 1);
  store.set_fault_injector([&](uint64_t offset, uint64_t, int result) {
    if (offset != held) return result;
    return hold.load() || after_release.fetch_sub(1) > 0 ? -EAGAIN : result;
  });
  store.acquire(0, std::vector<uint32_t>{0});
  ASSERT_EQ(store.prefetch(1, std::vector<uint32_t>{1}), 1u);
  const std::vector<uint32_t> four = {0, 1, 2, 3};
  expect_blocks_are_the_ggufs(pack, 2, four, store.acquire(2, four));
  EXPECT_EQ(store.reads_in_flight(), 1u);
  EXPECT_TRUE(store.cache().slot_of(ExpertKey{1, 1}));
  EXPECT_FALSE(store.cache().slot_of(ExpertKey{0, 0}));
  hold = false;
  const std::vector<uint32_t> one = {1};
  expect_blocks_are_the_ggufs(pack, 1, one, store.acquire(1, one));
  EXPECT_EQ(store.counters().cache.prefetch_hits, 1u);
  EXPECT_EQ(store.reads_in_flight(), 0u);
}

// The views the last acquire handed out keep their slots while reads ahead land: 6 slots,
// top-k 2, lfu. L0/2-5 acquired three times (3 uses each), then L0/6, L0/7 (1 use each, the
// views in use) in the 2 free slots; prefetch(1, {0, 1}) (room 6 - 2 = 4) must evict two of
// L0/2-5, not the fewer-used experts in use. After the reads land, the views still hold their
// experts' bytes.
TEST_F(ExpertStoreTest, ViewsInUseKeepTheirSlotsWhileReadsAheadLand) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStoreSettings s = with_slots(pack, 6);
  s.policy = "lfu";
  ExpertStore store(pack, s, 2);
  for (int i = 0; i < 3; ++i) store.acquire(0, std::vector<uint32_t>{2, 3, 4, 5});
  const std::vector<uint32_t> used = {6, 7};
  const std::vector<const uint8_t*> views = store.acquire(0, used);
  ASSERT_EQ(store.prefetch(1, std::vector<uint32_t>{0, 1}), 2u);
  EXPECT_TRUE(store.cache().slot_of(ExpertKey{0, 6}));
  EXPECT_TRUE(store.cache().slot_of(ExpertKey{0, 7}));
  EXPECT_EQ(store.counters().cache.cache_evictions, 2u);
  const std::vector<uint32_t> ahead = {0, 1};
  expect_blocks_are_the_ggufs(pack, 1, ahead, store.acquire(1, ahead));  // waits for both reads
  expect_blocks_are_the_ggufs(pack, 0, used, views);                     // hits above: nothing moved since
}

// Predictions already resident need no read and do not use up the room: 6 slots, top-k 4;
// L1/0, L1/1 resident, L0/2 in use; room 6 - max(1, 4) = 2 reads. prefetch(1, {0, 1, 5, 6})
// reads 5 and 6 and keeps 0 and 1.
TEST_F(ExpertStoreTest, ResidentPredictionsDoNotUseUpTheRoom) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStoreSettings s = with_slots(pack, 6);
  ExpertStore store(pack, s, 4);
  store.acquire(1, std::vector<uint32_t>{0, 1});
  store.acquire(0, std::vector<uint32_t>{2});
  EXPECT_EQ(store.prefetch(1, std::vector<uint32_t>{0, 1, 5, 6}), 2u);
  for (const uint32_t e : {0u, 1u, 5u, 6u}) EXPECT_TRUE(store.cache().slot_of(ExpertKey{1, e})) << e;
  const std::vector<uint32_t> all = {0, 1, 5, 6};
  expect_blocks_are_the_ggufs(pack, 1, all, store.acquire(1, all));
  EXPECT_EQ(store.counters().cache.prefetch_hits, 2u);
}

// An id or layer that does not exist is an error naming it, raised before anything changes:
// after acquire(1, {5, 7, 999}) the read ahead of L1/5 is still the cache's, L1/7 was not
// placed; both then arrive checked (SHA-256 on: 0, 5 and 7 verified).
TEST_F(ExpertStoreTest, IdsThatDoNotExistAreRejectedBeforeAnythingChanges) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStoreSettings s = with_slots(pack, 8);
  s.verify_pack_sha256 = true;
  ExpertStore store(pack, s, 4);
  store.acquire(0, std::vector<uint32_t>{0});
  ASSERT_EQ(store.prefetch(1, std::vector<uint32_t>{5}), 1u);
  const auto fails_naming = [](const std::function<void()>& f, const std::string& what) {
    try {
      f();
      ADD_FAILURE() << "no error for " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails_naming(
      [&] {
        store.acquire(1, std::vector<uint32_t>{5, 7, 999});
      },
      "expert 999 of layer 1 does not exist (the layer has 16 experts)");
  fails_naming([&] { store.prefetch(2, std::vector<uint32_t>{16}); }, "expert 16 of layer 2 does not exist");
  fails_naming([&] { store.acquire(3, std::vector<uint32_t>{0}); },
               "layer 3 is not a layer with routed experts");
  EXPECT_TRUE(store.cache().slot_of(ExpertKey{1, 5}));
  EXPECT_FALSE(store.cache().slot_of(ExpertKey{1, 7}));
  const std::vector<uint32_t> both = {5, 7};
  expect_blocks_are_the_ggufs(pack, 1, both, store.acquire(1, both));
  EXPECT_EQ(store.counters().verified_experts, 3u);
  EXPECT_EQ(store.counters().cache.prefetch_hits, 1u);
}

// acquire_each hands out resident experts before any read lands, then each miss as its read
// lands: expert 2's read is held in flight (EAGAIN) until expert 1 has been handed out, so the
// order is forced: 0 (resident; both reads still waited for), 1, 2. prefetch() is refused
// while reads are waited for (it would take their completions) and works from the last one.
TEST_F(ExpertStoreTest, AcquireEachHandsOutExpertsAsTheyArrive) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStore store(pack, with_slots(pack, 6), 4);
  store.acquire(0, std::vector<uint32_t>{0});
  std::atomic<bool> hold{true};
  const uint64_t held = pack.expert_offset(0, 2);
  store.set_fault_injector([&](uint64_t offset, uint64_t, int result) {
    return offset == held && hold.load() ? -EAGAIN : result;
  });
  const std::vector<uint32_t> ids = {0, 1, 2};
  std::vector<size_t> order, waited;
  std::vector<const uint8_t*> blocks(ids.size());
  bool refused = false;
  uint32_t prefetched = 0;
  store.acquire_each(0, ids, [&](size_t i, const uint8_t* b) {
    order.push_back(i);
    waited.push_back(store.reads_waited_for());
    blocks[i] = b;
    if (i == 0) {
      try {
        store.prefetch(1, std::vector<uint32_t>{5});
      } catch (const Error& e) {
        refused =
            std::string(e.what()).find("prefetch() while an acquire waits for 2 reads") != std::string::npos;
      }
    }
    if (i == 1) hold = false;
    if (order.size() == ids.size()) prefetched = store.prefetch(1, std::vector<uint32_t>{5});
  });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(waited, (std::vector<size_t>{2, 1, 0}));
  EXPECT_TRUE(refused);
  EXPECT_EQ(prefetched, 1u);
  expect_blocks_are_the_ggufs(pack, 0, ids, blocks);
  EXPECT_EQ(store.reads_waited_for(), 0u);
  // The views stay valid after the read ahead lands.
  const std::vector<uint32_t> five = {5};
  expect_blocks_are_the_ggufs(pack, 1, five, store.acquire(1, five));
  expect_blocks_are_the_ggufs(pack, 0, ids, blocks);
  EXPECT_EQ(store.counters().cache.prefetch_hits, 1u);
}

// What the caller's `ready` throws comes out of acquire_each as it is, without a retry and with
// no read left in flight; the experts handed out stay resident, the one never handed out is
// forgotten and read again by the next acquire.
TEST_F(ExpertStoreTest, AcquireEachPassesOnWhatReadyThrows) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStoreSettings s = with_slots(pack, 6);
  s.verify_pack_sha256 = true;
  ExpertStore store(pack, s, 4);
  const std::vector<uint32_t> ids = {3, 4, 5};
  std::vector<size_t> order;
  try {
    store.acquire_each(0, ids, [&](size_t i, const uint8_t*) {
      order.push_back(i);
      if (order.size() == 2) throw std::runtime_error("the caller's own failure");
    });
    ADD_FAILURE() << "expected the caller's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the caller's own failure");
  }
  ASSERT_EQ(order.size(), 2u);  // no retry
  EXPECT_EQ(store.reads_waited_for(), 0u);
  EXPECT_EQ(store.reads_in_flight(), 0u);
  size_t never = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (std::find(order.begin(), order.end(), i) == order.end()) never = i;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(store.cache().slot_of(ExpertKey{0, ids[i]}).has_value(), i != never) << "expert " << ids[i];
  }
  EXPECT_EQ(store.counters().verified_experts, 2u);
  // All three reads were submitted; the third may still have been in flight when `ready` threw
  // (then it was drained, and bytes are counted only for reads that land while waited for).
  const uint64_t read_before = store.counters().pack_read_bytes;
  EXPECT_GE(read_before, 2 * pack.stride(0));
  EXPECT_LE(read_before, 3 * pack.stride(0));
  expect_blocks_are_the_ggufs(pack, 0, ids, store.acquire(0, ids));
  // The one never handed out is read again, and only it.
  EXPECT_EQ(store.counters().pack_read_bytes - read_before, pack.stride(0));
  EXPECT_EQ(store.counters().verified_experts, 3u);
}

// The input of run_routed_experts on the demo pack's first MoE block: n tokens of N(0,1) x,
// |N(0,1)| weights and top-k distinct random experts each (seeded), and a pack provider of
// `slots` slots to run it with.
struct RoutedInput {
  std::shared_ptr<const ModelSource> src;
  int64_t E = 0, K = 0, n = 0, n_ff = 0;
  uint32_t block = 0;
  std::vector<float> x, w;
  std::vector<int32_t> ids;

  RoutedInput(const fs::path& pack_dir, int64_t tokens, uint32_t seed)
      : src(ModelSource::open(pack_dir.string())) {
    const ModelConfig& cfg = src->config();
    E = cfg.n_embd;
    K = cfg.n_expert_used;
    n = tokens;
    n_ff = cfg.n_ff_exp ? cfg.n_ff_exp : cfg.n_ff;
    block = cfg.n_layer_dense_lead;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    x.resize(static_cast<size_t>(n * E));
    w.resize(static_cast<size_t>(n * K));
    for (float& v : x) v = normal(rng);
    for (float& v : w) v = std::abs(normal(rng));
    ids.resize(static_cast<size_t>(n * K));
    for (int64_t t = 0; t < n; ++t) {
      std::vector<int32_t> all(cfg.n_expert);
      for (uint32_t e = 0; e < cfg.n_expert; ++e) all[e] = static_cast<int32_t>(e);
      std::shuffle(all.begin(), all.end(), rng);
      std::copy(all.begin(), all.begin() + K, ids.begin() + t * K);
    }
  }
  std::unique_ptr<ExpertProvider> pack(uint64_t slots) const {
    EngineSettings st;
    st.cache_bytes = slots * src->pack()->layout().max_stride;
    st.cache_vram_reserve_mib = 0;
    return make_pack_experts(*src, st, n_ff);
  }
  // run_routed_experts into a fresh output; checks it evaluated n * K expert FFNs.
  std::vector<float> run(ThreadPool& pool, ExpertProvider& p, const std::function<void()>& resident) const {
    std::vector<float> out(x.size(), 0.0f);
    double io_wait = 0;
    EXPECT_EQ(run_routed_experts(pool, p, block, x.data(), n, E, K, ids.data(), w.data(), 0.0f, out.data(),
                                 &io_wait, resident),
              static_cast<uint64_t>(n * K));
    return out;
  }
};

// An ExpertProvider forwarding everything but acquire_each to `inner` (the test decorators'
// common part).
class ForwardingExperts : public ExpertProvider {
 public:
  explicit ForwardingExperts(ExpertProvider& inner) : inner_(inner) {}
  uint32_t max_batch() const override { return inner_.max_batch(); }
  std::vector<ExpertFfn> acquire(uint32_t block, std::span<const uint32_t> experts,
                                 double* io_wait_ms) override {
    return inner_.acquire(block, experts, io_wait_ms);
  }
  void end_step() override { inner_.end_step(); }
  void fill_stats(BackendStats& s) const override { inner_.fill_stats(s); }

 protected:
  ExpertProvider& inner_;
};

// An ExpertProvider that hands the experts of an acquire out in reverse order (as reads landing
// in the other order would), or in order through the interface's default acquire_each.
class ReorderedExperts final : public ForwardingExperts {
 public:
  ReorderedExperts(ExpertProvider& inner, bool reverse) : ForwardingExperts(inner), reverse_(reverse) {}
  void acquire_each(uint32_t block, std::span<const uint32_t> experts, double* io_wait_ms,
                    const ExpertReady& ready, const std::function<void()>& all_landed) override {
    if (!reverse_) return ExpertProvider::acquire_each(block, experts, io_wait_ms, ready, all_landed);
    const std::vector<ExpertFfn> ffns = inner_.acquire(block, experts, io_wait_ms);
    if (all_landed) all_landed();
    for (size_t i = ffns.size(); i-- > 0;) ready(i, ffns[i]);
  }

 private:
  bool reverse_;
};

// run_routed_experts computes each expert as it is handed out and adds the outputs in ascending
// id order: the same bits whatever order the experts arrive in (in order, reversed, as the
// pack's reads land), with every expert cached or in batches of top-k (a cache of top-k slots),
// and `resident` (next-layer prefetch) called once.
TEST_F(ExpertStoreTest, RoutedExpertsGiveTheSameBitsInAnyArrivalOrder) {
  const RoutedInput in(*dir_ / "pack", 6, 11);
  ASSERT_TRUE(in.src->config().is_moe_layer(in.block));
  const int64_t K = in.K;
  ThreadPool pool(2);
  const auto run = [&](uint64_t slots, int order, int* resident_calls) {
    const auto pack = in.pack(slots);
    ReorderedExperts reordered(*pack, order == 2);
    ExpertProvider& p = order == 0 ? *pack : static_cast<ExpertProvider&>(reordered);
    return in.run(pool, p, [&] { ++*resident_calls; });
  };
  int calls = 0;
  const std::vector<float> want = run(64, 1, &calls);  // every expert cached, handed out in order
  EXPECT_EQ(calls, 1);
  bool nonzero = false;
  for (float v : want) nonzero = nonzero || v != 0.0f;
  EXPECT_TRUE(nonzero);
  for (const uint64_t slots : {uint64_t{64}, static_cast<uint64_t>(K)}) {
    for (const int order : {0, 1, 2}) {
      calls = 0;
      const std::vector<float> got = run(slots, order, &calls);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
          << slots << " slots, order " << order;
      EXPECT_EQ(calls, 1) << slots << " slots, order " << order;
    }
  }
}

// With two corrupt blocks in one call, the one named is the first whose read lands (each expert
// is checked as it lands). Here expert 3's read is held (EAGAIN) until expert 7's completion was
// seen, so 7 is named, although 3 comes first in the call (a reviewer's test, made to say so).
TEST_F(ExpertStoreTest, WithTwoBadBlocksTheFirstToLandIsNamed) {
  const fs::path copy = corrupted_copy("two-corrupt-ordered", {{0, 3}, {0, 7}}, 64, 0x21);
  const ExpertPack pack = ExpertPack::open(copy.string());
  ExpertStoreSettings s = with_slots(pack, 8);
  s.verify_pack_sha256 = true;
  ExpertStore store(pack, s, 4);
  const uint64_t three = pack.expert_offset(0, 3), seven = pack.expert_offset(0, 7);
  bool seven_seen = false;
  store.set_fault_injector([&](uint64_t offset, uint64_t, int result) {
    if (offset == seven) seven_seen = true;
    return offset == three && !seven_seen ? -EAGAIN : result;
  });
  try {
    store.acquire(0, std::vector<uint32_t>{3, 7});
    ADD_FAILURE() << "corrupt expert served";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expert 7 of layer 0"), std::string::npos) << e.what();
  }
}

// The retry path with an expert already handed out. 6 slots, top-k 2,
// lfu. L1/0 has 3 uses, L0/1 is resident (1 use), L2/15 is read ahead (held until the acquire's
// own reads were seen, then fails with EIO). acquire_each(0, {1, 2, 3, 4}) hands out L0/1 at
// once, meets the read ahead's failure, retries for 2, 3, 4 only (each index handed out exactly
// once), keeping L0/1's slot. From the last expert's callback prefetch(1, {5, 6}) may read 2
// (room 6 - 4): one free slot and one victim, which must be L1/0, not L0/1 (fewer uses, but its
// view is in use). L0/1's view still holds its bytes after the reads ahead land.
TEST_F(ExpertStoreTest, ARetryKeepsTheExpertsHandedOutAndTheirViews) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStoreSettings s = with_slots(pack, 6);
  s.policy = "lfu";
  ExpertStore store(pack, s, 2);
  ASSERT_EQ(store.slot_count(), 6u);
  const uint64_t ahead = pack.expert_offset(2, 15);
  const std::vector<uint64_t> own = {pack.expert_offset(0, 2), pack.expert_offset(0, 3),
                                     pack.expert_offset(0, 4)};
  bool armed = false, own_seen = false, ahead_failed = false;
  store.set_fault_injector([&](uint64_t offset, uint64_t, int result) {
    if (!armed || ahead_failed) return result;
    if (std::find(own.begin(), own.end(), offset) != own.end()) {
      own_seen = true;
      return -EAGAIN;
    }
    if (offset == ahead) {
      if (!own_seen) return -EAGAIN;
      ahead_failed = true;
      return -EIO;
    }
    return result;
  });
  for (int i = 0; i < 3; ++i) store.acquire(1, std::vector<uint32_t>{0});
  store.acquire(0, std::vector<uint32_t>{1});
  armed = true;
  ASSERT_EQ(store.prefetch(2, std::vector<uint32_t>{15}), 1u);
  const std::vector<uint32_t> ids = {1, 2, 3, 4};
  std::vector<size_t> order;
  std::vector<const uint8_t*> blocks(ids.size());
  uint32_t prefetched = 99;
  store.acquire_each(0, ids, [&](size_t i, const uint8_t* b) {
    order.push_back(i);
    blocks[i] = b;
    if (order.size() == ids.size()) {
      EXPECT_EQ(store.reads_waited_for(), 0u);
      prefetched = store.prefetch(1, std::vector<uint32_t>{5, 6});
    }
  });
  EXPECT_TRUE(ahead_failed);
  ASSERT_EQ(order.size(), ids.size());
  EXPECT_EQ(order[0], 0u);  // the resident one, before the failure
  std::vector<size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(store.counters().io_errors, 1u);
  EXPECT_EQ(prefetched, 2u);
  EXPECT_TRUE(store.cache().slot_of(ExpertKey{0, 1}));
  const std::vector<uint32_t> next = {5, 6};
  expect_blocks_are_the_ggufs(pack, 1, next, store.acquire(1, next));  // waits for both reads ahead
  expect_blocks_are_the_ggufs(pack, 0, ids, blocks);
  EXPECT_FALSE(store.cache().slot_of(ExpertKey{1, 0}));  // the victim
}

// What `ready` throws is passed on without the retry even when it is a read failure
// (IoError) and reads ahead are in flight; no read is waited for afterwards (the guard), and
// prefetch() works again.
TEST_F(ExpertStoreTest, AnIoErrorFromReadyIsNotRetried) {
  const ExpertPack pack = ExpertPack::open((*dir_ / "pack").string());
  ExpertStore store(pack, with_slots(pack, 8), 4);
  std::atomic<bool> hold{true};
  const uint64_t ahead = pack.expert_offset(2, 15), own = pack.expert_offset(0, 2);
  store.set_fault_injector([&](uint64_t offset, uint64_t, int result) {
    return (offset == ahead || offset == own) && hold.load() ? -EAGAIN : result;
  });
  store.acquire(0, std::vector<uint32_t>{1});
  ASSERT_EQ(store.prefetch(2, std::vector<uint32_t>{15}), 1u);
  int calls = 0;
  size_t waited = 99;
  try {
    store.acquire_each(0, std::vector<uint32_t>{1, 2}, [&](size_t, const uint8_t*) {
      ++calls;
      waited = store.reads_waited_for();
      hold = false;
      if (calls == 1) throw IoError("ready", "the caller's read", EIO);
    });
    ADD_FAILURE() << "expected the caller's IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("the caller's read"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(waited, 1u);  // expert 2's read was in flight when L0/1 was handed out
  EXPECT_EQ(store.reads_waited_for(), 0u);
  EXPECT_EQ(store.reads_in_flight(), 0u);
  EXPECT_EQ(store.prefetch(1, std::vector<uint32_t>{3}), 1u);
}

// Forwards to an ExpertProvider, counting acquire_each calls and the experts handed out
// in the current one.
class CountingExperts final : public ForwardingExperts {
 public:
  explicit CountingExperts(ExpertProvider& inner) : ForwardingExperts(inner) {}
  void acquire_each(uint32_t block, std::span<const uint32_t> experts, double* io_wait_ms,
                    const ExpertReady& ready, const std::function<void()>& all_landed) override {
    ++calls;
    handed = 0;
    asked = experts.size();
    inner_.acquire_each(
        block, experts, io_wait_ms,
        [&](size_t i, const ExpertFfn& f) {
          ++handed;
          ready(i, f);
        },
        all_landed);
  }
  int calls = 0;
  size_t handed = 0, asked = 0;
};

// `resident` (next-layer prefetch) is called once, during the block's last acquire_each (with a
// cache of top-k slots: several batches), when that batch waits for no read.
TEST_F(ExpertStoreTest, ResidentIsCalledOnceInTheLastBatch) {
  const RoutedInput in(*dir_ / "pack", 6, 5);
  ThreadPool pool(2);
  const auto pack = in.pack(static_cast<uint64_t>(in.K));
  CountingExperts counting(*pack);
  int resident_calls = 0, at_call = -1;
  size_t handed_then = 0, asked_then = 0;
  in.run(pool, counting, [&] {
    ++resident_calls;
    at_call = counting.calls;
    handed_then = counting.handed;
    asked_then = counting.asked;
  });
  ASSERT_GT(counting.calls, 1);  // several batches
  EXPECT_EQ(resident_calls, 1);
  EXPECT_EQ(at_call, counting.calls);
  EXPECT_LE(handed_then, asked_then);
}

// With every expert of the block resident the store waits for no read from the start, so the
// next-layer prefetch starts before any expert computes (a reviewer's test: a version that
// started it in the last expert's callback let m - 1 experts compute first).
TEST_F(ExpertStoreTest, AllResidentBlockPrefetchesBeforeComputing) {
  const RoutedInput in(*dir_ / "pack", 2, 3);
  ThreadPool pool(2);
  const auto pack = in.pack(64);
  CountingExperts counting(*pack);
  in.run(pool, counting, {});  // every expert now resident
  size_t handed_then = 99, asked_then = 0;
  in.run(pool, counting, [&] {
    handed_then = counting.handed;
    asked_then = counting.asked;
  });
  ASSERT_GT(asked_then, 1u);
  EXPECT_EQ(handed_then, 0u) << "prefetch started after " << handed_then << " of " << asked_then
                             << " resident experts were computed";
}

}  // namespace
