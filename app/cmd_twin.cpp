// `moepack twin --shape NAME [--layers N] [--experts M] [--seed S] -o DIR [--overwrite]
//  [--safety-margin-gib G] [--progress auto|json|human|none] [--no-direct-io]`
// `moepack bench-twin DIR (--trace FILE | --zipf S) --budget-mib M [--tokens N] [--warmup W]
//  [--serial] [--no-lookahead] [--policy P] [--threads T] [--seed S] [--backend cpu|cuda]
//  [--tiled-experts auto|on|off] [--json]`
// (bench/twin_pack.h, bench/twin_bench.h, docs/twins.md). Exit status 0 only on success.
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
#include "bench/twin_bench.h"
#include "bench/twin_pack.h"
#include "core/error.h"
#if MOEPACK_HAVE_CUDA
#include "gpu/twin_gpu.h"
#endif

namespace moepack::cli {
namespace {

std::atomic<bool> g_twin_cancel{false};
extern "C" void on_twin_signal(int) { g_twin_cancel.store(true); }

}  // namespace

std::function<int()> add_twin(CLI::App& app) {
  struct Options {
    std::string shape, out, progress = "auto";
    uint32_t layers = 0, experts = 0;
    uint64_t seed = 1;
    double margin_gib = 1.0;
    bool overwrite = false, no_direct = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "twin", "Write a shape-faithful twin: a synthetic Expert Pack with a target model's expert shapes (not a model)");
  sub->add_option("--shape", opt->shape, "deepseek-v4-flash, kimi-k3 or deepseek-v3")
      ->required()
      ->check(CLI::IsMember({"deepseek-v4-flash", "kimi-k3", "deepseek-v3"}));
  sub->add_option("--layers", opt->layers, "MoE layers to write (default: the model's)")
      ->check(positive_number());
  sub->add_option("--experts", opt->experts, "Routed experts per layer (default: the model's; >= top-k)")
      ->check(positive_number());
  sub->add_option("--seed", opt->seed, "Seed of the random contents (default 1)");
  sub->add_option("-o,--output", opt->out, "Pack directory to create")->required();
  sub->add_flag("--overwrite", opt->overwrite, "Replace a finished pack, or discard an unfinished build, in DIR");
  sub->add_option("--safety-margin-gib", opt->margin_gib,
                  "Free space to leave on the target, GiB (default 1)")
      ->check(non_negative_number());
  sub->add_option("--progress", opt->progress,
                  "auto (human on a terminal), json (one object per line on stdout), human, none")
      ->check(CLI::IsMember({"auto", "json", "human", "none"}));
  sub->add_flag("--no-direct-io", opt->no_direct, "Write without O_DIRECT");
  return [opt]() {
    std::string mode = opt->progress;
    if (mode == "auto") mode = ::isatty(STDERR_FILENO) ? "human" : "none";
    bench::TwinOptions o;
    o.shape = opt->shape;
    o.layers = opt->layers;
    o.experts = opt->experts;
    o.seed = opt->seed;
    o.out_dir = opt->out;
    o.overwrite = opt->overwrite;
    o.direct_io = !opt->no_direct;
    o.safety_margin_bytes = static_cast<uint64_t>(std::llround(opt->margin_gib * (1ull << 30)));
    o.tool_version = std::string("moepack ") + MOEPACK_VERSION;
    o.cancel = &g_twin_cancel;
    struct sigaction sa {};
    sa.sa_handler = on_twin_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    o.on_progress = [mode](const bench::TwinProgress& p) {
      if (mode == "json") {
        const nlohmann::json j = {{"phase", p.phase},         {"bytes_done", p.bytes_done},
                                  {"bytes_total", p.bytes_total}, {"rate_bytes_per_s", p.rate_bytes_per_s},
                                  {"eta_s", p.eta_s},         {"message", p.message}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        std::fflush(stdout);
      } else if (mode == "human") {
        if (p.bytes_total > 0) {
          std::fprintf(stderr, "\r%-9s %5.1f%%  %.1f / %.1f MiB  %.1f MiB/s   ", p.phase.c_str(),
                       100.0 * static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total),
                       static_cast<double>(p.bytes_done) / 1048576.0, static_cast<double>(p.bytes_total) / 1048576.0,
                       p.rate_bytes_per_s / 1048576.0);
        } else {
          std::fprintf(stderr, "\n%-9s %s", p.phase.c_str(), p.message.c_str());
        }
      }
    };
    const bench::TwinResult r = bench::write_twin_pack(o);
    if (mode == "human") std::fputc('\n', stderr);
    if (mode == "json") {
      const nlohmann::json j = {{"phase", "result"},          {"pack", r.pack_dir},
                                {"experts", r.expert_count},   {"experts_bytes", r.experts_bytes},
                                {"dense_bytes", r.dense_bytes}, {"seconds", r.seconds}};
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    std::fprintf(stderr, "%s: twin of %s written (%llu experts, %.1f MiB, %.1f s); a synthetic pack, not a model\n",
                 r.pack_dir.c_str(), opt->shape.c_str(), static_cast<unsigned long long>(r.expert_count),
                 static_cast<double>(r.experts_bytes) / 1048576.0, r.seconds);
    return 0;
  };
}

std::function<int()> add_bench_twin(CLI::App& app) {
  struct Options {
    bench::TwinBenchOptions b;
    double budget_mib = 0, ram_budget_mib = 0;
    bool no_lookahead = false, json = false, no_direct = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "bench-twin", "Synthetic expert-path benchmark on a twin pack (real reads, cache and expert kernels; not a model)");
  sub->add_option("pack", opt->b.pack_dir, "Twin pack directory (moepack twin)")->required();
  auto* trace = sub->add_option("--trace", opt->b.trace_path, "Routing trace to replay (mapped: docs/twins.md)");
  auto* zipf = sub->add_option("--zipf", opt->b.zipf_s, "Zipf(S) synthetic router, S >= 0")
                   ->check(non_negative_number());
  trace->excludes(zipf);
  sub->add_option("--budget-mib", opt->budget_mib, "Expert cache budget, MiB")
      ->required()
      ->check(number_check(
          "MIB", [](double v) { return v > 0.0 && v <= 16777216.0; },
          "must be greater than 0 and at most 16777216 (16 TiB)"));
  auto* ram =
      sub->add_option("--ram-budget-mib", opt->ram_budget_mib,
                      "cuda: host-RAM tier behind the VRAM cache, MiB (EngineSettings::cache_ram_mib)")
          ->check(number_check(
              "MIB", [](double v) { return v > 0.0 && v <= 16777216.0; },
              "must be greater than 0 and at most 16777216 (16 TiB)"));
  auto* admission = sub->add_option("--ram-admission", opt->b.ram_tier_admission,
                                    "cuda: which evictions enter the RAM tier: frequency (default) or all")
                        ->check(CLI::IsMember({"frequency", "all"}));
  admission->needs(ram);
  sub->add_option("--tokens", opt->b.tokens, "Decode steps (default: the trace's decode steps; 64 with --zipf)");
  sub->add_option("--warmup", opt->b.warmup, "Steps left out of the after_warmup figures (default 0)");
  sub->add_flag("--serial", opt->b.serial, "Published schedule: every miss of a layer read before it computes");
  sub->add_flag("--no-lookahead", opt->no_lookahead, "Overlapped schedule without next-layer reads");
  sub->add_option("--policy", opt->b.policy, "Cache policy: hybrid (default), lru, lfu")
      ->check(CLI::IsMember({"hybrid", "lru", "lfu"}));
  sub->add_option("--threads", opt->b.threads, "CPU compute threads, at most 4096 as the engine's (default 0: all cores)")
      ->check(CLI::Range(0u, 4096u));
  sub->add_option("--seed", opt->b.seed, "Seed of the Zipf router and the hidden vector (default 1)");
  sub->add_option("--read-splits", opt->b.reader.read_splits, "Parts per expert read (default 1)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--queue-depth", opt->b.reader.queue_depth, "io_uring reads in flight (default 64)")
      ->check(CLI::Range(1, 4096));
  sub->add_flag("--no-direct-io", opt->no_direct, "Buffered reads (counted as fallbacks; not the real path)");
  sub->add_option("--backend", opt->b.backend, "cpu (default) or cuda (CUDA builds)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--tiled-experts", opt->b.tiled_experts,
                  "cuda: experts in the decode GEMV's tiled layout: auto (default: those of at least 2048 x "
                  "2048 elements), "
                  "on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  sub->add_flag("--json", opt->json, "Print the report as one JSON object on stdout");
  return [opt, trace, zipf, ram]() {
    bench::TwinBenchOptions o = opt->b;
    if (ram->count() != 0 && o.backend != "cuda")
      throw UsageError("--ram-budget-mib: the host-RAM tier sits behind the VRAM cache (--backend cuda)");
    o.ram_tier_bytes = static_cast<uint64_t>(std::floor(opt->ram_budget_mib * 1048576.0));
    if (trace->count() == 0 && zipf->count() == 0) throw Error("bench-twin: give --trace FILE or --zipf S");
    if (zipf->count() == 0) o.zipf_s = -1;
    o.budget_bytes = static_cast<uint64_t>(std::floor(opt->budget_mib * 1048576.0));
    o.lookahead = !opt->no_lookahead;
    o.reader.direct_io = !opt->no_direct;
    bench::TwinBenchSetup setup = bench::prepare_twin_bench(o);
    bench::TwinRunResult r;
    if (o.backend == "cuda") {
#if MOEPACK_HAVE_CUDA
      r = gpu::run_twin_bench_cuda(o, setup);
#else
      throw Error("bench-twin: --backend cuda needs a build with MOEPACK_CUDA=ON (this one has no CUDA GPU support)");
#endif
    } else {
      r = bench::run_twin_bench_cpu(o, setup);
    }
    const nlohmann::json j = bench::twin_report_json(o, setup, r);
    std::fputs(bench::twin_report_text(j).c_str(), stderr);
    if (opt->json) std::printf("%s\n", j.dump(2).c_str());
    return 0;
  };
}

}  // namespace moepack::cli
