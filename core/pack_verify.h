// `moepack verify`: checks that an Expert Pack is complete and intact.
//
// Always (fast, reads only headers): manifest schema and layout formula (pack_manifest.h),
// experts.bin header against the manifest (expert_pack.h), file sizes, dense.gguf parses as
// GGUF with the manifest's tensor count, build id and no routed-expert tensor in it.
// With `full`: SHA-256 of every expert block (stride bytes, padding included), of the whole
// experts.bin and of dense.gguf, against the manifest. Stops at the first problem, whose
// message names the expert (layer index, blk.N, expert index, byte offset).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace moepack {

struct VerifyOptions {
  bool full = false;
  // Called from the verifying thread with bytes hashed so far and the total (full mode only).
  std::function<void(uint64_t done, uint64_t total)> progress;
  // When set and true, the full verify stops before its next read (8 MiB of dense.gguf, or a
  // batch of one layer's experts: 8 MiB, or one block where a block is larger): the result is
  // not ok, with `cancelled` set.
  const std::atomic<bool>* cancel = nullptr;
};

struct VerifyResult {
  bool ok = false;
  std::string message;     // the first problem, or a one-line summary when ok
  int64_t bad_layer = -1;  // first bad expert, when the problem is one
  int64_t bad_expert = -1;
  uint64_t experts_checked = 0;  // blocks whose SHA-256 matched (full mode)
  uint64_t bytes_hashed = 0;
  double seconds = 0;
  bool cancelled = false;  // stopped by VerifyOptions::cancel, nothing found wrong before that
};

// Never throws for a bad pack (the problem is in the result); throws only std::bad_alloc.
VerifyResult verify_pack(const std::string& path, const VerifyOptions& options = {});

}  // namespace moepack
