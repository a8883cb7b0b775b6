// Benchmark (not a test): `moepack build` throughput as a ratio to copying the same bytes on
// the same disk in the same run. Prints one JSON object.
//
//   packbuilder_bench [--dir DIR] [--gib N]     (defaults: $TMPDIR or /tmp, 2 GiB)
//
// Steps: write a synthetic MoE GGUF of N GiB (tests/packbuilder/synthetic_moe.h) in DIR;
// copy it twice as baselines — buffered (read 8 MiB, write, fsync: what `cp && sync` does)
// and direct (read 8 MiB, O_DIRECT write, fsync: the builder's own write path) — then build a
// pack from it with default options (O_DIRECT, SHA-256 of every expert, of experts.bin and of
// the source). The source is in the page cache for all three runs (it was just written).
// ratio = copy_seconds / build_seconds over the same source bytes (target >= 0.8).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/durable_io.h"
#include "packbuilder/pack_builder.h"
#include "tests/packbuilder/synthetic_moe.h"

namespace {

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double copy_file(const std::string& src, const std::string& dst, bool direct) {
  const auto t0 = std::chrono::steady_clock::now();
  const int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  const int out =
      ::open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
  if (in < 0 || out < 0) throw std::runtime_error("copy: cannot open");
  moepack::AlignedBuffer buf(8u << 20);
  uint64_t off = 0;
  for (;;) {
    ssize_t n = ::pread(in, buf.data(), buf.size(), static_cast<off_t>(off));
    if (n < 0) throw std::runtime_error("copy: read failed");
    if (n == 0) break;
    size_t w = static_cast<size_t>(n);
    if (direct) w = (w + 4095) / 4096 * 4096;  // last block padded (the file is truncated back below)
    moepack::pwrite_all(out, buf.data(), w, off, dst);
    off += static_cast<uint64_t>(n);
  }
  if (direct && ::ftruncate(out, static_cast<off_t>(off)) != 0) throw std::runtime_error("copy: ftruncate");
  if (::fsync(out) != 0) throw std::runtime_error("copy: fsync");
  ::close(in);
  ::close(out);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp != nullptr && *tmp ? tmp : "/tmp";
  double gib = 2;
  for (int k = 1; k + 1 < argc; k += 2) {
    if (std::strcmp(argv[k], "--dir") == 0) dir = argv[k + 1];
    if (std::strcmp(argv[k], "--gib") == 0) gib = std::atof(argv[k + 1]);
  }
  const std::string work = dir + "/moepack-bench-" + std::to_string(::getpid());
  std::filesystem::create_directories(work);
  nlohmann::json j;
  try {
    const std::string src = work + "/synthetic-moe.gguf";
    const uint64_t bytes =
        moepack::test::write_synthetic_moe(src, static_cast<uint64_t>(gib * (1ull << 30)), 3);
    j["source_bytes"] = bytes;
    j["target_fs"] = moepack::fs_type_name(work);
    double c0 = cpu_seconds();
    const double cp_buf = copy_file(src, work + "/copy-buffered", false);
    j["copy_buffered_cpu_s"] = cpu_seconds() - c0;
    std::filesystem::remove(work + "/copy-buffered");
    c0 = cpu_seconds();
    const double cp_dir = copy_file(src, work + "/copy-direct", true);
    j["copy_direct_cpu_s"] = cpu_seconds() - c0;
    std::filesystem::remove(work + "/copy-direct");
    moepack::BuildOptions o;
    o.source = src;
    o.out_dir = work + "/pack";
    o.safety_margin_bytes = 0;
    // Without source hashing first (then removed), then the default build that is the result.
    o.hash_sources = false;
    c0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    moepack::build_pack(o);
    j["build_no_source_hash_s"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    j["build_no_source_hash_cpu_s"] = cpu_seconds() - c0;
    std::filesystem::remove_all(o.out_dir);
    o.hash_sources = true;
    c0 = cpu_seconds();
    t0 = std::chrono::steady_clock::now();
    const moepack::BuildResult r = moepack::build_pack(o);
    const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    j["build_cpu_s"] = cpu_seconds() - c0;
    j["checkpoint_bytes"] = o.checkpoint_bytes;
    // Side by side: the same build with the earlier default of a checkpoint (fdatasync + state
    // file) every 256 MiB.
    std::filesystem::remove_all(o.out_dir);
    o.checkpoint_bytes = 256ull << 20;
    t0 = std::chrono::steady_clock::now();
    moepack::build_pack(o);
    j["build_checkpoint_256mib_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    j["load_average_1min"] = [] {
      double l[1] = {0};
      return ::getloadavg(l, 1) == 1 ? l[0] : -1.0;
    }();
    const double mb = static_cast<double>(bytes) / 1e6;
    const double best_copy = std::min(cp_buf, cp_dir);
    j["copy_buffered_s"] = cp_buf;
    j["copy_buffered_MBps"] = mb / cp_buf;
    j["copy_direct_s"] = cp_dir;
    j["copy_direct_MBps"] = mb / cp_dir;
    j["build_s"] = build;
    j["build_MBps"] = mb / build;
    j["build_experts_phase_s"] = r.experts_seconds;
    j["pack_bytes"] = r.experts_bytes + r.dense_bytes;
    j["ratio_vs_faster_copy"] = best_copy / build;
    j["ratio_vs_direct_copy"] = cp_dir / build;
    j["ratio_no_source_hash_vs_faster_copy"] = best_copy / j["build_no_source_hash_s"].get<double>();
    j["ratio_checkpoint_256mib_vs_faster_copy"] = best_copy / j["build_checkpoint_256mib_s"].get<double>();
    j["target_ratio"] = 0.8;
    j["hashes"] = "per-expert + whole experts.bin + dense.gguf + source files (SHA-256)";
  } catch (const std::exception& e) {
    j["error"] = e.what();
  }
  std::filesystem::remove_all(work);
  std::printf("%s\n", j.dump(2).c_str());
  return j.contains("error") ? 1 : 0;
}
