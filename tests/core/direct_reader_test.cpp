// DirectReader against real files on the test machine's file system (ext4 in CI): O_DIRECT
// through io_uring, splits, fixed buffers, and each failure the contract names.
#include <fcntl.h>
#include <sys/mount.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/direct_reader.h"
#include "core/error.h"

namespace fs = std::filesystem;
using namespace moepack;

namespace {

// Byte i of the test file is a function of i, so any misplaced byte is caught.
uint8_t pattern(uint64_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 13); }

class DirectReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moepack-reader-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "experts.bin").string();
    std::vector<uint8_t> bytes(kFileBytes);
    for (uint64_t i = 0; i < kFileBytes; ++i) bytes[i] = pattern(i);
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), kFileBytes);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void expect_pattern(const uint8_t* p, uint64_t offset, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(p[i], pattern(offset + i)) << "byte " << i << " of a read at " << offset;
    }
  }

  static constexpr uint64_t kFileBytes = 64 * 4096;  // 256 KiB
  fs::path dir_;
  std::string path_;
};

TEST_F(DirectReaderTest, ReadsAlignedBlocksWithSplitsAndSmallQueue) {
  ReaderSettings s;
  s.read_splits = 3;  // 3 parts per 5-page request: 8192 + 8192 + 4096 bytes
  s.queue_depth = 2;  // fewer SQEs than parts: the reader must queue
  DirectReader r(path_, s);
  EXPECT_GE(r.alignment(), 4096u);
  AlignedBuffer a(5 * 4096, 4096), b(5 * 4096, 4096), c(4096, 4096);
  std::vector<ReadRequest> reqs = {{4096 * 7, 5 * 4096, a.data(), 1},
                                   {4096 * 50, 5 * 4096, b.data(), 2},
                                   {0, 4096, c.data(), 3}};
  r.read_all(reqs);
  expect_pattern(a.data(), 4096 * 7, 5 * 4096);
  expect_pattern(b.data(), 4096 * 50, 5 * 4096);
  expect_pattern(c.data(), 0, 4096);
  EXPECT_EQ(r.counters().requests.load(), 3u);
  EXPECT_EQ(r.counters().pack_read_bytes.load(), 11u * 4096);
  EXPECT_EQ(r.counters().parts_submitted.load(), 3u + 3u + 1u);
  EXPECT_EQ(r.counters().fallback_count.load(), 0u);
  EXPECT_EQ(r.counters().io_errors.load(), 0u);
}

TEST_F(DirectReaderTest, AsynchronousTagsArriveOnce) {
  DirectReader r(path_, ReaderSettings{});
  std::vector<AlignedBuffer> bufs;
  for (int k = 0; k < 10; ++k) bufs.emplace_back(4096, 4096);
  for (uint64_t k = 0; k < 10; ++k) r.submit({k * 4096 * 6, 4096, bufs[k].data(), 100 + k});
  std::vector<uint64_t> seen;
  while (r.pending() != 0) {
    for (uint64_t t : r.wait_some()) seen.push_back(t);
  }
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 10u);
  for (uint64_t k = 0; k < 10; ++k) {
    EXPECT_EQ(seen[k], 100 + k);
    expect_pattern(bufs[k].data(), k * 4096 * 6, 4096);
  }
  EXPECT_TRUE(r.wait_some().empty());
}

// poll() never blocks: with 2 SQEs and 6 one-page requests it hands out what has landed and
// submits the queued rest as room frees up; polled until nothing is pending, every tag arrives
// once with its bytes. With nothing in flight it returns empty at once.
TEST_F(DirectReaderTest, PollCollectsLandedReadsWithoutWaiting) {
  ReaderSettings s;
  s.queue_depth = 2;
  DirectReader r(path_, s);
  EXPECT_TRUE(r.poll().empty());
  std::vector<AlignedBuffer> bufs;
  for (int k = 0; k < 6; ++k) bufs.emplace_back(4096, 4096);
  for (uint64_t k = 0; k < 6; ++k) r.submit({(5 + k * 7) * 4096, 4096, bufs[k].data(), 7 + k});
  std::vector<uint64_t> seen;
  for (int spins = 0; r.pending() != 0 && spins < 10000000; ++spins) {
    for (uint64_t t : r.poll()) seen.push_back(t);
  }
  ASSERT_EQ(r.pending(), 0u);
  for (uint64_t t : r.poll()) seen.push_back(t);
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen, (std::vector<uint64_t>{7, 8, 9, 10, 11, 12}));
  for (uint64_t k = 0; k < 6; ++k) expect_pattern(bufs[k].data(), (5 + k * 7) * 4096, 4096);
  EXPECT_EQ(r.counters().requests.load(), 6u);
}

TEST_F(DirectReaderTest, RegisteredBuffersUseReadFixed) {
  DirectReader r(path_, ReaderSettings{});
  AlignedBuffer pool(8 * 4096, 4096);
  const std::pair<void*, size_t> regs[] = {{pool.data(), pool.size()}};
  r.register_buffers(regs);
  std::vector<ReadRequest> reqs = {{4096 * 3, 4 * 4096, pool.data(), 1}, {4096 * 40, 4 * 4096, pool.data() + 4 * 4096, 2}};
  r.read_all(reqs);
  expect_pattern(pool.data(), 4096 * 3, 4 * 4096);
  expect_pattern(pool.data() + 4 * 4096, 4096 * 40, 4 * 4096);
}

TEST_F(DirectReaderTest, MisalignedRequestsAreRejectedNamingTheRule) {
  DirectReader r(path_, ReaderSettings{});
  AlignedBuffer buf(3 * 4096, 4096);
  auto expect_rule = [&](ReadRequest q, const std::string& rule) {
    try {
      r.submit(q);
      FAIL() << "accepted a request violating the " << rule << " rule";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(path_), std::string::npos) << m;
      EXPECT_NE(m.find(rule), std::string::npos) << m;
      EXPECT_NE(m.find("4096"), std::string::npos) << m;
    }
  };
  expect_rule({512, 4096, buf.data(), 1}, "file offset");
  expect_rule({4096, 1000, buf.data(), 2}, "read length");
  expect_rule({4096, 4096, buf.data() + 512, 3}, "buffer address");
  EXPECT_EQ(r.pending(), 0u);
}

TEST_F(DirectReaderTest, ReadPastTheEndIsATruncatedPack) {
  DirectReader r(path_, ReaderSettings{});
  AlignedBuffer buf(2 * 4096, 4096);
  try {
    r.submit({kFileBytes - 4096, 2 * 4096, buf.data(), 1});
    FAIL() << "read past the end accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), path_);
    EXPECT_EQ(e.offset(), kFileBytes - 4096);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
  }
}

TEST_F(DirectReaderTest, FileThatShrinksWhileOpenIsReportedAsTruncated) {
  DirectReader r(path_, ReaderSettings{});
  ASSERT_EQ(::truncate(path_.c_str(), 8 * 4096), 0);  // the pack loses its tail after opening
  AlignedBuffer buf(4096, 4096);
  r.submit({40 * 4096, 4096, buf.data(), 9});
  try {
    r.wait_some();
    FAIL() << "a read of a vanished block succeeded";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.offset(), 40u * 4096);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
  }
  EXPECT_EQ(r.counters().io_errors.load(), 1u);
}

TEST_F(DirectReaderTest, InjectedEioIsCountedAndThrown) {
  DirectReader r(path_, ReaderSettings{});
  r.set_fault_injector([](uint64_t offset, uint64_t, int res) { return offset == 4096 * 9 ? -EIO : res; });
  AlignedBuffer a(4096, 4096), b(4096, 4096);
  r.submit({4096 * 2, 4096, a.data(), 1});
  r.submit({4096 * 9, 4096, b.data(), 2});
  try {
    while (r.pending() != 0) r.wait_some();
    FAIL() << "EIO swallowed";
  } catch (const IoError& e) {
    EXPECT_EQ(e.errno_value(), EIO);
    EXPECT_NE(std::string(e.what()).find("offset 36864"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r.counters().io_errors.load(), 1u);
}

// After a failed read the reader drops every request; the parts of those requests still in
// flight are ignored when they land (wait_some() returns no tag for them, and no tag that
// completed before the failure), so their tags can be submitted again once pending() is 0.
TEST_F(DirectReaderTest, AbandonedRequestsAreIgnoredAndTheirTagsReusable) {
  ReaderSettings s;
  s.read_splits = 4;
  DirectReader r(path_, s);
  r.set_fault_injector([](uint64_t offset, uint64_t, int res) { return offset == 4096 * 9 ? -EIO : res; });
  AlignedBuffer a(4 * 4096, 4096), b(4096, 4096), c(4 * 4096, 4096);
  r.submit({4096 * 2, 4 * 4096, a.data(), 0});
  r.submit({4096 * 9, 4096, b.data(), 1});
  r.submit({4096 * 20, 4 * 4096, c.data(), 2});
  EXPECT_THROW(
      {
        while (r.pending() != 0) r.wait_some();
      },
      IoError);
  while (r.pending() != 0) EXPECT_TRUE(r.wait_some().empty());  // orphans land, unreported
  EXPECT_TRUE(r.wait_some().empty());
  r.set_fault_injector(nullptr);
  AlignedBuffer d(4096, 4096), e(4 * 4096, 4096);
  r.submit({4096 * 30, 4096, d.data(), 0});
  r.submit({4096 * 40, 4 * 4096, e.data(), 2});
  std::vector<uint64_t> seen;
  while (r.pending() != 0) {
    for (const uint64_t t : r.wait_some()) seen.push_back(t);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 2}));
  expect_pattern(d.data(), 4096 * 30, 4096);
  expect_pattern(e.data(), 4096 * 40, 4 * 4096);
  EXPECT_EQ(r.counters().io_errors.load(), 1u);
}

// read_all refuses its second request (past the end) after the first was submitted: the first
// is still in flight under its tag. drain() lets it land and forgets it, so the same tag reads
// again; the first read's bytes never reach the buffer afterwards.
TEST_F(DirectReaderTest, DrainAfterAFailedReadAllFreesTagsAndBuffers) {
  ReaderSettings s;
  s.read_splits = 4;
  DirectReader r(path_, s);
  AlignedBuffer a(8 * 4096, 4096), b(4096, 4096);
  const std::vector<ReadRequest> reqs = {{4096 * 4, 8 * 4096, a.data(), 7}, {kFileBytes, 4096, b.data(), 8}};
  EXPECT_THROW(r.read_all(reqs), FormatError);
  EXPECT_THROW(r.submit(reqs[0]), Error);  // tag 7 is still in flight
  r.drain();
  EXPECT_EQ(r.pending(), 0u);
  EXPECT_TRUE(r.wait_some().empty());  // nothing reported for the dropped request
  std::fill_n(a.data(), 8 * 4096, uint8_t{0});
  const std::vector<ReadRequest> again = {{4096 * 40, 8 * 4096, a.data(), 7}};
  r.read_all(again);
  expect_pattern(a.data(), 4096 * 40, 8 * 4096);
  r.drain();  // nothing in flight: returns at once
  EXPECT_EQ(r.pending(), 0u);
}

TEST_F(DirectReaderTest, ShortReadsAndEintrAreResubmitted) {
  ReaderSettings s;
  s.read_splits = 1;
  DirectReader r(path_, s);
  int calls = 0;
  // First completion: only 4096 of 16384 bytes; second: EINTR; then the kernel's real results.
  r.set_fault_injector([&](uint64_t, uint64_t, int res) {
    ++calls;
    if (calls == 1) return res > 4096 ? 4096 : res;
    if (calls == 2) return -EINTR;
    return res;
  });
  AlignedBuffer buf(4 * 4096, 4096);
  std::vector<ReadRequest> reqs = {{4096 * 20, 4 * 4096, buf.data(), 5}};
  r.read_all(reqs);
  expect_pattern(buf.data(), 4096 * 20, 4 * 4096);
  EXPECT_EQ(r.counters().short_reads.load(), 1u);
  EXPECT_EQ(r.counters().retries.load(), 1u);
  EXPECT_EQ(r.counters().parts_submitted.load(), 3u);  // original + rest after short read + after EINTR
  EXPECT_EQ(r.counters().pack_read_bytes.load(), 4u * 4096);
  EXPECT_EQ(r.counters().requests.load(), 1u);
}

TEST_F(DirectReaderTest, BufferedModeCountsFallbacksAndAllowsAnyAlignment) {
  ReaderSettings s;
  s.direct_io = false;
  DirectReader r(path_, s);
  EXPECT_EQ(r.alignment(), 1u);
  std::vector<uint8_t> buf(1000);
  std::vector<ReadRequest> reqs = {{12345, 1000, buf.data(), 1}};
  r.read_all(reqs);
  expect_pattern(buf.data(), 12345, 1000);
  EXPECT_EQ(r.counters().fallback_count.load(), 1u);
}

// ramfs has no O_DIRECT: opening a pack there must fail at initialisation, naming the file and
// the way out (direct_io=false), which then works and counts every read as a fallback.
TEST_F(DirectReaderTest, FileSystemWithoutODirectIsAnInitialisationError) {
  const fs::path mnt = dir_ / "ram";
  fs::create_directories(mnt);
  const bool mounted = ::mount("moepack-test", mnt.c_str(), "ramfs", 0, "") == 0;
  if (::geteuid() == 0) {
    ASSERT_TRUE(mounted) << "root could not mount ramfs";
  }
  const std::string path = (mounted ? mnt : dir_) / "experts.bin";
  if (mounted) fs::copy_file(path_, path);
  if (mounted) {
    try {
      DirectReader r(path, ReaderSettings{});
      FAIL() << "O_DIRECT accepted on ramfs";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(path), std::string::npos) << m;
      EXPECT_NE(m.find("O_DIRECT"), std::string::npos) << m;
      EXPECT_NE(m.find("direct_io=false"), std::string::npos) << m;
    }
  }
  ReaderSettings buffered;
  buffered.direct_io = false;
  DirectReader r(path, buffered);
  AlignedBuffer buf(4096, 4096);
  std::vector<ReadRequest> reqs = {{4096 * 5, 4096, buf.data(), 1}};
  r.read_all(reqs);
  expect_pattern(buf.data(), 4096 * 5, 4096);
  EXPECT_EQ(r.counters().fallback_count.load(), 1u);
  if (mounted) ::umount2(mnt.c_str(), MNT_DETACH);
}

TEST_F(DirectReaderTest, MissingFileAndBadSettingsAreErrors) {
  EXPECT_THROW(DirectReader((dir_ / "nope.bin").string(), ReaderSettings{}), IoError);
  ReaderSettings s;
  s.read_splits = 0;
  EXPECT_THROW(DirectReader(path_, s), Error);
  s.read_splits = 1;
  s.queue_depth = 0;
  EXPECT_THROW(DirectReader(path_, s), Error);
}

}  // namespace
