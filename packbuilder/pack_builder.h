// `moepack build`: converts a GGUF model (one file, any shard of a split set, an Ollama name)
// into an Expert Pack (format: core/expert_pack.h; decisions: docs/expert-pack.md).
//
// Phases, in order (each name is also a progress phase and a fault-injection point):
//   plan       open the source, check and lay out every expert (packbuilder/pack_plan.h)
//   preflight  free space (statvfs) >= what is still to be written + safety margin;
//              O_DIRECT works on the target (unless direct_io = false)
//   dense      dense.gguf (metadata + non-expert tensors), buffered writes, fsync
//   experts    experts.bin: header, then blocks in address order. The calling thread reads
//              source slices (pread, large sequential runs) into 4096-aligned batch buffers;
//              a writer thread writes them with O_DIRECT; two hasher threads compute the
//              per-expert SHA-256 and the whole-file SHA-256 while I/O proceeds; a fourth
//              thread hashes the source files. Every `checkpoint_bytes` the data is fdatasync'ed
//              and build-state.json (temp + fsync + rename) records the experts done and
//              their digests.
//   finalize   sources re-checked unchanged (size, mtime), manifest.json written last
//              (temp, fsync, rename, fsync of the directory), build-state.json removed.
//
// Crash safety: until manifest.json exists the directory never opens as a pack. Running the
// same build again resumes: the experts recorded in build-state.json are re-read and
// re-hashed, and copying continues after the last one whose SHA-256 still matches. A
// finished pack of the same source is reported as already complete. A directory holding
// another finished pack is refused unless `overwrite` (then its manifest is removed first).
// The source is only ever opened read-only (delete_source_after_verify aside).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace moepack {

struct BuildProgress {
  std::string phase;         // plan, preflight, dense, experts, finalize, verify, done
  uint64_t bytes_done = 0;   // of this phase
  uint64_t bytes_total = 0;  // of this phase
  double rate_bytes_per_s = 0;
  double eta_s = 0;     // of this phase; 0 when unknown
  std::string message;  // human detail (resume point, file names)
};

// Test-only hooks. `at` runs at every named point ("plan", "preflight", "dense", "header",
// "data" after batch `index` was written, "checkpoint" after checkpoint `index` is durable,
// "experts", "sources", "manifest-temp" (temp manifest durable, not renamed), "manifest",
// "done"); it may throw or _exit() to simulate a crash. `io_error` may return an errno to
// fail an operation: "odirect" (the probe), "pwrite" (an experts.bin write at `offset`),
// "dense-write". `free_bytes` overrides statvfs when set.
struct BuildTestHooks {
  std::function<void(std::string_view point, uint64_t index)> at;
  std::function<int(std::string_view op, uint64_t offset)> io_error;
  std::function<uint64_t()> free_bytes;
};

struct BuildOptions {
  std::string source;   // GGUF path, any shard, or Ollama name
  std::string out_dir;  // the pack directory (created if missing)
  uint64_t safety_margin_bytes = 1ull << 30;
  bool direct_io = true;                     // write experts.bin with O_DIRECT; the probe must pass
  bool hash_sources = true;                  // SHA-256 of every source file into the manifest
  bool overwrite = false;                    // replace a finished pack of another source
  bool delete_source_after_verify = false;   // after a full verify passes, unlink the source files
  uint64_t batch_bytes = 32ull << 20;        // target bytes per write (>= one stride)
  uint32_t buffers = 4;                      // batch buffers in flight
  uint64_t checkpoint_bytes = 256ull << 20;  // durable progress record every this many bytes
  std::string tool_version = "moepack";
  std::function<void(const BuildProgress&)> on_progress;  // called on the calling thread
  const std::atomic<bool>* cancel = nullptr;              // set to stop; the build resumes later
  BuildTestHooks hooks;
};

struct BuildResult {
  std::string pack_dir;
  bool already_complete = false;
  bool resumed = false;
  uint64_t resumed_experts = 0;  // experts found intact and not copied again
  uint64_t experts_bytes = 0;    // size of experts.bin
  uint64_t dense_bytes = 0;      // size of dense.gguf
  uint64_t bytes_written = 0;    // by this run
  double seconds = 0;
  double experts_seconds = 0;  // of the experts phase alone
  bool source_deleted = false;
};

class BuildCancelled : public Error {
 public:
  BuildCancelled() : Error("build cancelled; run the same command again to resume") {}
};

// Throws Error (with the file and the reason) on any failure; BuildCancelled when cancelled.
BuildResult build_pack(const BuildOptions& options);

}  // namespace moepack
