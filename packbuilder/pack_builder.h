// `moepack build`: converts a GGUF model (one file, any shard of a split set, an Ollama name)
// into an Expert Pack (format: core/expert_pack.h; decisions: docs/expert-pack.md).
//
// Phases, in order (each name is also a progress phase and a fault-injection point):
//   plan       open the source, check and lay out every expert (packbuilder/pack_plan.h)
//   preflight  free space (statvfs) >= what is still to be written + safety margin;
//              O_DIRECT works on the target (unless direct_io = false)
//   dense      dense.gguf (metadata + non-expert tensors), buffered writes, fsync
//   experts    experts.bin: header, then blocks in address order. The calling thread hands
//              batches to `read_threads` readers (pread, large sequential runs, several
//              batches in flight) filling 4096-aligned batch buffers; a writer thread writes
//              them with O_DIRECT; `hash_threads` workers compute the per-expert SHA-256 (each
//              batch hashed once, by one worker) and one thread the whole-file SHA-256 (in
//              address order) while I/O proceeds; up to two more threads hash the source files
//              (one shard each at a time). Every `checkpoint_bytes` the data is fdatasync'ed
//              and build-state.json (temp + fsync + rename) records the experts done and
//              their digests.
//   finalize   sources re-checked unchanged (size, mtime), manifest.json written last
//              (temp, fsync, rename, fsync of the directory), build-state.json removed.
//
// Pre-flight also queries statx(STATX_DIOALIGN) (Linux >= 6.1) on a probe file in the target:
// a file system whose O_DIRECT offset or memory alignment exceeds the pack's 4096-byte block
// alignment is refused with both numbers (the builder does not handle it: every block offset
// and stride is a multiple of 4096 only). Where the kernel or file system does not report it,
// 4096 is assumed (the O_DIRECT probe still writes a real 4096-byte aligned block).
//
// Shard-by-shard mode (delete_source_shards, `--delete-source-shards`), for a split set whose
// shards live on the target's file system: each source shard is deleted as soon as everything
// the pack needs from it is durable and verified, so a model converts on a disk with room for
// about its size plus its largest shard. Order of work: dense.gguf first (all shards' dense
// tensors, so no shard waits for them), then experts in address order; shard k becomes
// deletable after the last expert (address order) that has a slice in it, `ready_k` = bytes of
// the pack written at that point (dense.gguf + experts.bin up to the end of that expert; a
// shard without experts is ready after dense.gguf). Batches are cut at every ready point and a
// checkpoint is taken there. Before shard k is unlinked: (1) build-state.json already holds the
// whole build plan (sources with size/mtime, the layout, every slice's (shard, offset), the
// model description, dense.gguf's size and SHA-256), written durably before the dense phase;
// (2) dense.gguf and every expert up to the ready point are fdatasync'ed, their page cache
// dropped, re-read and SHA-256 checked against the digests computed from the bytes as they
// were read from the source; (3) the shard's own SHA-256 (when sources are hashed) and its
// size and mtime are checked and recorded in the state file; then unlink + fsync of its
// directory. A resumed build whose shards are partly gone continues from the persisted plan
// and never needs a deleted shard again (the experts already copied are re-checked against
// their digests; if one of them is damaged and its shard is gone, the build stops with an
// error naming both). No persisted plan and a shard missing is an error naming the shard.
// The opened source model (whose GGUF readers hold an fd on every shard) is closed right after
// dense.gguf is written; from then on each shard is read through one fd, closed right after
// its unlink, so the space of a deleted shard is free at once.
//
// Refusals (shard mode, before anything is written or deleted; Error naming every such shard
// and its reason): a source shard that is a symbolic link (lstat), has more than one hard
// link (st_nlink > 1: deleting a name frees nothing, and the data may be another model's), is
// on another file system than the output directory (st_dev), or comes from the Ollama store
// (an Ollama name or manifest, or a ".../blobs/sha256-..." path: content-addressed blobs may
// be shared by several models). A resumed build checks the shards still present again.
//
// Space (pre-flight, both modes; S_j = size of source shard j when the shard mode may delete
// it (present and not refused above), else 0 (a shard that stays takes the same space before
// and after); A = bytes the pack's files already occupy; M = manifest + state estimate,
// M = 2 * (100 E + 8192 L + 65536) + (n_shards > 1 ? 128 E + 65536 : 0) bytes for E experts in
// L MoE layers (the last term: the persisted plan)):
//   normal mode:       needed = dense + experts.bin + M - A
//   shard mode:        peak   = max( A + sum_j S_j,  max_k ( max(A, ready_k) + sum_{j: ready_j >= ready_k} S_j ),
//                                   dense + experts.bin )      (max_k over deletable shards)
//                      needed = peak + M - (A + sum_j S_j)          (shards already deleted count 0)
// i.e. roughly the pack size plus the largest shard still present at its deletion point,
// minus the space the shards already take. Each is refused (with needed, margin and free
// bytes) when free < needed + safety margin; a refused normal build names the shard mode's
// number when that mode would need less.
//
// Crash safety: until manifest.json exists the directory never opens as a pack. Running the
// same build again resumes: the experts recorded in build-state.json are re-read and
// re-hashed, and copying continues after the last one whose SHA-256 still matches. A
// finished pack of the same source is reported as already complete. A directory holding
// another finished pack is refused unless `overwrite` (then its manifest is removed once the
// pre-flight passes, before the first write: a refused build leaves the old pack loadable).
// The source is only ever opened read-only (delete_source_after_verify and
// delete_source_shards aside). To keep it so, before the first write into OUTDIR (also when
// resuming, overwriting or continuing a shard-mode build) the build refuses (Error naming each
// path and why; nothing written) when a path it writes, truncates, renames over or removes
// there (dense.gguf, experts.bin, manifest.json, build-state.json, their .tmp files, the
// pre-flight's probe files) is a symbolic link, or is the same file (st_dev + st_ino: a hard
// link too) as a source shard still present. dense.gguf and experts.bin are also opened with
// O_NOFOLLOW.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace moepack {

class GgufModel;

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
// "dense-write". `free_bytes` overrides statvfs when set. Shard mode adds the points
// "plan-saved" (the plan is durable in build-state.json), "shard-verified" (shard `index`'s
// bytes in the pack are re-read and checked, shard not yet unlinked) and "shard-deleted"
// (unlinked, directory fsync'ed). `dio_align` replaces the statx(STATX_DIOALIGN) answer.
struct DioAlignment {
  bool reported = false;        // false: kernel/file system did not report; 4096 assumed
  uint32_t mem_align = 4096;    // stx_dio_mem_align, bytes
  uint32_t offset_align = 4096; // stx_dio_offset_align, bytes (0: no O_DIRECT on this file)
};
struct BuildTestHooks {
  std::function<void(std::string_view point, uint64_t index)> at;
  std::function<int(std::string_view op, uint64_t offset)> io_error;
  std::function<uint64_t()> free_bytes;
  std::function<DioAlignment()> dio_align;
  std::function<uint64_t(const std::string& shard_path)> source_dev;  // replaces a shard's st_dev
};

// statx(STATX_DIOALIGN) of a probe file created (and removed) in `dir`; {reported = false}
// where the kernel (< 6.1) or the file system does not say. Throws IoError naming the probe.
DioAlignment query_dio_alignment(const std::string& dir);

struct BuildOptions {
  std::string source;   // GGUF path, any shard, or Ollama name
  std::string out_dir;  // the pack directory (created if missing)
  uint64_t safety_margin_bytes = 1ull << 30;
  bool direct_io = true;                     // write experts.bin with O_DIRECT; the probe must pass
  bool hash_sources = true;                  // SHA-256 of every source file into the manifest
  bool overwrite = false;                    // replace a finished pack of another source
  // Refuse (PackDirBuildingOther) a directory holding another source's interrupted build,
  // instead of starting from scratch over it (the studio, choosing a folder name for a model).
  bool keep_other_builds = false;
  bool delete_source_after_verify = false;   // after a full verify passes, unlink the source files
  bool delete_source_shards = false;         // shard-by-shard mode (see above)
  uint32_t hash_threads = 2;                 // per-expert SHA-256 workers
  uint32_t read_threads = 2;                 // source readers (batches in flight)
  uint64_t batch_bytes = 32ull << 20;        // target bytes per write (>= one stride)
  uint32_t buffers = 6;                      // batch buffers in flight
  // Durable progress record (fdatasync + state file) every this many bytes: at most this much
  // is copied again after a crash (~1 s at SSD speed). The earlier 256 MiB spent measurable
  // time in fsyncs; tests/packbuilder/pack_bench.cpp measures both side by side.
  uint64_t checkpoint_bytes = 1ull << 30;
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
  std::vector<std::string> shards_deleted;  // by this run, in deletion order (shard mode)
  bool from_persisted_plan = false;         // resumed with source shards already deleted
};

// Free space a build of `model` into `out_dir` needs, by the formulas above (A = what the
// pack's files in out_dir already occupy). Reads metadata only.
struct BuildSpace {
  uint64_t pack_bytes = 0;         // dense.gguf + experts.bin + M
  uint64_t normal_needed = 0;      // bytes that must be free for a normal build (margin excluded)
  uint64_t shard_mode_needed = 0;  // the same for the shard-by-shard mode
  uint64_t shard_mode_peak = 0;    // peak of pack + remaining shards on the target's file system
  uint64_t source_bytes_on_target_fs = 0;  // sum of S_j (deletable shards only)
  bool shard_mode_helps = false;   // shard mode allowed (no refusal) and needs less than normal
  std::string shard_mode_refused;  // why the shard mode would be refused, naming each shard; "" = allowed
};
BuildSpace estimate_build_space(const GgufModel& model, const std::string& out_dir);

class BuildCancelled : public Error {
 public:
  BuildCancelled() : Error("build cancelled; run the same command again to resume") {}
};

// The output directory already holds a finished pack of another plan (another model, or the
// same file changed since) and `overwrite` is off. Nothing was written.
class PackDirOccupied : public Error {
 public:
  PackDirOccupied(std::string dir, std::string other_source)
      : Error(holding(dir, other_source) + "; choose another output directory or pass --overwrite"),
        dir_(std::move(dir)),
        other_source_(std::move(other_source)) {}
  const std::string& dir() const { return dir_; }
  const std::string& other_source() const { return other_source_; }  // "" when unreadable
  // "DIR already holds a finished Expert Pack[ of SOURCE]", without the CLI's advice.
  std::string holding() const { return holding(dir_, other_source_); }

 private:
  static std::string holding(const std::string& dir, const std::string& other_source) {
    return dir + " already holds a finished Expert Pack" +
           (other_source.empty() ? "" : " of " + other_source);
  }
  std::string dir_;
  std::string other_source_;
};

// keep_other_builds: the output directory holds an interrupted build of another source (its
// build-state.json names another plan and no manifest is there). Nothing was written.
class PackDirBuildingOther : public Error {
 public:
  explicit PackDirBuildingOther(const std::string& dir)
      : Error(dir + " holds an interrupted build of another source") {}
};

// An output path of the build (dense.gguf, experts.bin, the manifest, the state file, their
// temporary files, the probes) is the source itself or one of its shards (the same file), or a
// symbolic link: the build would overwrite the source or write through the link. Found by the
// pre-flight before the first write; nothing was written. reasons(): each such path and why,
// without the CLI's advice (the studio gives its own).
class PackOutputUnsafe : public Error {
 public:
  PackOutputUnsafe(std::string dir, std::string reasons)
      : Error("refusing to build into " + dir + ": " + reasons +
              ". Nothing was written; choose another output directory (or move the file away)"),
        dir_(std::move(dir)),
        reasons_(std::move(reasons)) {}
  const std::string& dir() const { return dir_; }
  const std::string& reasons() const { return reasons_; }

 private:
  std::string dir_;
  std::string reasons_;
};

// Another build is writing the output directory right now (it holds the directory's flock).
// Nothing was written.
class PackDirBusy : public Error {
 public:
  explicit PackDirBusy(const std::string& dir)
      : Error(dir + ": another build is writing this directory right now (the moepack CLI or the studio); wait "
                    "for it to end or cancel it") {}
};

// Throws Error (with the file and the reason) on any failure; BuildCancelled when cancelled;
// PackDirOccupied (above) for a directory holding another finished pack; PackOutputUnsafe when
// an output path is the source or a symbolic link; PackDirBusy while
// another build writes the directory. A finished pack of the same source whose data files are
// missing or of another size is built again. The build holds an exclusive flock() on the
// output directory from before its first write to its end.
BuildResult build_pack(const BuildOptions& options);

// True for a file in Ollama's content-addressed store (".../blobs/sha256-<hex>"), which no build
// deletes: the store's models may share it, and `ollama rm` removes it.
bool is_ollama_blob(const std::string& path);

// True when `a` and `b` name one file: the same absolute, lexically normalised path, or the same
// file through a symbolic link (both must exist for that). Never throws.
bool same_source_file(const std::string& a, const std::string& b);

// A finished Expert Pack directly inside `packs_folder` whose manifest lists exactly the files
// GgufModel::open(`source`) reads (every shard of a split set, an Ollama model's blob), by
// absolute, lexically normalised path or as the same file (a path through a symbolic link), and
// with their present sizes (the first such directory in
// name order), else nullopt. So a pack keeps serving its source whatever its folder is called
// (an earlier build's naming, a folder the user renamed). A directory with a build in progress
// (build-state.json) is not finished. Reads headers and manifests only; never throws (an
// unreadable source, folder or manifest is no match). build_pack of `source` (the manifest's own
// spelling of the source, which its plan id hashes) into `dir` then confirms it
// (already_complete), or refuses without writing (PackDirOccupied) when the source changed.
struct FinishedPack {
  std::string dir;
  std::string source;  // the manifest's first source file, as the build spelled it
};
std::optional<FinishedPack> find_finished_pack(const std::string& packs_folder, const std::string& source);

}  // namespace moepack
