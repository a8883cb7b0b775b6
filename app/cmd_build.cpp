// `moepack build SOURCE -o OUTDIR [--safety-margin-gib N] [--progress auto|json|human|none]
//  [--overwrite] [--delete-source-after-verify] [--delete-source-shards] [--no-direct-io]
//  [--no-source-hash]`
// Exit status: 0 built (or already complete), 1 error, 130 cancelled (SIGINT/SIGTERM; resumable).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "app/cli_checks.h"
#include "app/commands.h"
#include "packbuilder/pack_builder.h"

namespace moepack::cli {
namespace {

std::atomic<bool> g_cancel{false};

extern "C" void on_signal(int) { g_cancel.store(true); }

std::string mib(double b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", b / (1 << 20));
  return s;
}

}  // namespace

std::function<int()> add_build(CLI::App& app) {
  struct Options {
    std::string source, out, progress = "auto";
    double margin_gib = 1.0;
    bool overwrite = false, delete_source = false, delete_shards = false, no_direct = false, no_source_hash = false;
    double batch_mib = 32;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("build", "Convert a GGUF model into an Expert Pack (resumable)");
  sub->add_option("source", opt->source, "GGUF file, any shard of a split set, or an Ollama model name")
      ->required();
  sub->add_option("-o,--output", opt->out, "Pack directory to create (or resume)")->required();
  sub->add_option("--safety-margin-gib", opt->margin_gib,
                  "Free space to leave on the target, GiB (default 1)")
      ->check(non_negative_number());
  sub->add_option("--progress", opt->progress,
                  "auto (human on a terminal), json (one object per line on stdout), human, none")
      ->check(CLI::IsMember({"auto", "json", "human", "none"}));
  sub->add_flag("--overwrite", opt->overwrite, "Replace a finished pack of another source in OUTDIR");
  sub->add_flag("--delete-source-after-verify", opt->delete_source,
                "After the pack passes a full verification, delete the source GGUF file(s)");
  sub->add_flag("--delete-source-shards", opt->delete_shards,
                "Shard-by-shard mode: delete each source shard as soon as its bytes are in the pack, durable "
                "and verified (for a disk with room for about the model plus its largest shard)");
  sub->add_flag("--no-direct-io", opt->no_direct,
                "Write without O_DIRECT (the runtime then needs direct_io=false)");
  sub->add_flag("--no-source-hash", opt->no_source_hash,
                "Do not SHA-256 the source files (manifest records zeros)");
  sub->add_option("--batch-mib", opt->batch_mib, "Bytes per write, MiB (default 32)")
      ->check(positive_number());
  return [opt]() {
    std::string mode = opt->progress;
    if (mode == "auto") mode = ::isatty(STDERR_FILENO) ? "human" : "none";
    BuildOptions bo;
    bo.source = opt->source;
    bo.out_dir = opt->out;
    bo.safety_margin_bytes = static_cast<uint64_t>(std::llround(opt->margin_gib * (1ull << 30)));
    bo.overwrite = opt->overwrite;
    bo.delete_source_after_verify = opt->delete_source;
    bo.delete_source_shards = opt->delete_shards;
    bo.direct_io = !opt->no_direct;
    bo.hash_sources = !opt->no_source_hash;
    bo.batch_bytes = static_cast<uint64_t>(std::llround(opt->batch_mib * (1 << 20)));
    bo.tool_version = std::string("moepack ") + MOEPACK_VERSION;
    bo.cancel = &g_cancel;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    // Human progress: a phase's message once on its own line (a repeated report of the same
    // phase and message is not printed again), byte counts rewritten in place on one line.
    struct HumanLine {
      std::string last;
      bool in_progress = false;  // the cursor is after a "\r" progress line
      void end_progress() {
        if (in_progress) std::fputc('\n', stderr);
        in_progress = false;
      }
    };
    const auto human = std::make_shared<HumanLine>();
    bo.on_progress = [mode, human](const BuildProgress& p) {
      if (mode == "json") {
        nlohmann::json j = {{"phase", p.phase},
                            {"bytes_done", p.bytes_done},
                            {"bytes_total", p.bytes_total},
                            {"rate_bytes_per_s", p.rate_bytes_per_s},
                            {"eta_s", p.eta_s},
                            {"message", p.message}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        std::fflush(stdout);
      } else if (mode == "human") {
        if (p.bytes_total > 0) {
          std::fprintf(stderr, "\r%-9s %5.1f%%  %s / %s  %s/s  ETA %.0f s   ", p.phase.c_str(),
                       100.0 * static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total),
                       mib(static_cast<double>(p.bytes_done)).c_str(),
                       mib(static_cast<double>(p.bytes_total)).c_str(), mib(p.rate_bytes_per_s).c_str(),
                       p.eta_s);
          human->in_progress = true;
        } else {
          const std::string line = p.phase + "\n" + p.message;
          if (line == human->last) return;
          human->last = line;
          human->end_progress();
          std::fprintf(stderr, "%-9s %s\n", p.phase.c_str(), p.message.c_str());
        }
      }
    };
    try {
      const BuildResult r = build_pack(bo);
      human->end_progress();
      if (mode == "json") {
        nlohmann::json j = {{"phase", "result"},
                            {"pack", r.pack_dir},
                            {"already_complete", r.already_complete},
                            {"resumed_experts", r.resumed_experts},
                            {"experts_bytes", r.experts_bytes},
                            {"dense_bytes", r.dense_bytes},
                            {"bytes_written", r.bytes_written},
                            {"seconds", r.seconds},
                            {"source_deleted", r.source_deleted},
                            {"shards_deleted", r.shards_deleted},
                            {"from_persisted_plan", r.from_persisted_plan}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      }
      if (r.already_complete) {
        std::fprintf(stderr, "%s: already complete (nothing to do)\n", r.pack_dir.c_str());
      } else {
        std::fprintf(
            stderr, "%s: built (%s experts + %s dense, %s written in %.1f s%s)%s\n", r.pack_dir.c_str(),
            mib(static_cast<double>(r.experts_bytes)).c_str(),
            mib(static_cast<double>(r.dense_bytes)).c_str(),
            mib(static_cast<double>(r.bytes_written)).c_str(), r.seconds,
            r.resumed ? (", resumed after " + std::to_string(r.resumed_experts) + " experts").c_str() : "",
            r.source_deleted ? (opt->delete_shards ? "; source shards deleted as they were verified"
                                                   : "; source deleted after verification")
                             : "");
      }
      return 0;
    } catch (const BuildCancelled& e) {
      human->end_progress();
      std::fprintf(stderr, "%s\n", e.what());
      return 130;
    } catch (...) {
      human->end_progress();  // the error's message starts on a line of its own
      throw;
    }
  };
}

}  // namespace moepack::cli
