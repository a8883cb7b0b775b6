// `moepack bench-io PACK [--reads N] [--batch B] [--read-splits S] [--queue-depth Q] [--seed S]
//                        [--vram [--device N] [--rounds R]] [--json]`
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "core/error.h"
#include "core/io_bench.h"
#if MOEPACK_HAVE_CUDA
#include "gpu/vram_delivery_bench.h"
#endif

namespace moepack::cli {

std::function<int()> add_bench_io(CLI::App& app) {
  struct Options {
    std::string pack;
    IoBenchOptions bench;
    bool json = false;
    bool vram = false;
    int device = 0;
    uint64_t raw_max_mib = 0;  // 0: IoBenchOptions' default
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("bench-io", "Expert read throughput vs raw O_DIRECT and buffered reads of the same pack");
  sub->add_option("pack", opt->pack, "Expert Pack directory or its manifest.json")->required();
  sub->add_option("--reads", opt->bench.expert_reads, "Random expert blocks per measurement")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100000000}));
  sub->add_option("--batch", opt->bench.batch, "Blocks submitted together (one layer's misses)")
      ->check(CLI::Range(uint32_t{1}, uint32_t{4096}));
  // The reader's own bounds (core/direct_reader.cpp), refused as bad arguments before the pack opens.
  sub->add_option("--read-splits", opt->bench.reader.read_splits, "Parts per expert read (1..64)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--queue-depth", opt->bench.reader.queue_depth, "io_uring queue depth (1..4096)")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--seed", opt->bench.seed, "Seed of the random blocks' order (default 1)");
  sub->add_option("--raw-max-mib", opt->raw_max_mib, "Raw bytes to read at most (MiB, default 2048)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  sub->add_flag("--vram", opt->vram,
                "Also deliver the random experts into VRAM slots (SSD -> pinned -> GPU, CUDA builds)");
  CLI::Option* vram_flag = sub->get_option("--vram");
  sub->add_option("--device", opt->device, "CUDA device for --vram")->needs(vram_flag);
  sub->add_option("--rounds", opt->bench.rounds,
                  "With --vram: then R alternating rounds of raw reads, VRAM delivery of random and of "
                  "consecutive experts, "
                  "each on bytes of its own (the rounds' ratios: median, min, max)")
      ->check(CLI::Range(uint32_t{0}, static_cast<uint32_t>(kIoBenchMaxRounds)))
      ->needs(vram_flag);
  sub->add_flag("--json", opt->json, "Print one JSON object on stdout");
  return [opt]() {
    if (opt->raw_max_mib > 0) opt->bench.raw_max_bytes = opt->raw_max_mib << 20;
    VramDeliveryPhase vram;
    if (opt->vram) {
#if MOEPACK_HAVE_CUDA
      const int device = opt->device;
      vram = [device](const ExpertPack& p, const IoBenchOptions& o, const IoBenchPlan& plan) {
        return gpu::vram_delivery_phase(p, o, plan, device);
      };
#else
      throw Error("bench-io: --vram needs a build with MOEPACK_CUDA=ON (this one has no CUDA GPU support)");
#endif
    }
    const ExpertPack pack = ExpertPack::open(opt->pack);
    const IoBenchResult r = run_io_bench(pack, opt->bench, vram);
    const double gb = 1e9;
    std::fprintf(stderr, "raw O_DIRECT      %.3f GB/s (%llu bytes)\n", r.raw_direct.bytes_per_second() / gb,
                 static_cast<unsigned long long>(r.raw_direct.bytes));
    std::fprintf(stderr, "experts, direct   %.3f GB/s  ratio to raw %.3f\n", r.expert_direct.bytes_per_second() / gb,
                 r.expert_vs_raw_ratio);
    if (r.vram_delivery) {
      std::fprintf(stderr, "raw O_DIRECT into pinned memory %.3f GB/s\n", r.raw_direct_pinned->bytes_per_second() / gb);
      std::fprintf(stderr, "experts into VRAM %.3f GB/s  ratio to raw %.3f, to raw into pinned memory %.3f\n",
                   r.vram_delivery->bytes_per_second() / gb, r.vram_vs_raw_ratio, r.vram_vs_raw_pinned_ratio);
      std::fprintf(
          stderr,
          "experts into VRAM, read two acquires ahead %.3f GB/s  ratio to raw %.3f, to raw into pinned "
          "memory %.3f\n",
          r.vram_ahead->bytes_per_second() / gb, r.vram_ahead_vs_raw_ratio, r.vram_ahead_vs_raw_pinned_ratio);
      for (size_t k = 0; k < r.rounds.size(); ++k) {
        const auto& x = r.rounds[k];
        std::fprintf(stderr,
                     "round %zu: raw O_DIRECT %.3f GB/s, experts into VRAM %.3f GB/s (ratio %.3f), "
                     "consecutive experts "
                     "into VRAM %.3f GB/s (ratio %.3f)\n",
                     k + 1, x.raw_direct.bytes_per_second() / gb, x.vram_delivery.bytes_per_second() / gb,
                     x.vram_vs_raw_ratio, x.vram_sequential.bytes_per_second() / gb,
                     x.sequential_vs_raw_ratio);
      }
      if (!r.rounds.empty()) {
        const auto& a = r.rounds_vram_vs_raw;
        const auto& b = r.rounds_sequential_vs_raw;
        std::fprintf(stderr,
                     "rounds: experts into VRAM / raw O_DIRECT median %.3f (min %.3f, max %.3f); consecutive "
                     "experts %.3f (%.3f, %.3f)\n",
                     a.median, a.min, a.max, b.median, b.min, b.max);
      }
    }
    if (!r.disjoint) {
      std::fprintf(stderr, "note: the pack is too small for every phase to read different bytes (a cache below the page "
                           "cache may serve repeated reads): lower --raw-max-mib or --reads\n");
    }
    std::fprintf(stderr, "experts, buffered %.3f GB/s  direct/buffered %.3f (page cache %s)\n",
                 r.expert_buffered.bytes_per_second() / gb, r.direct_vs_buffered_ratio,
                 r.page_cache_dropped ? "dropped" : "NOT dropped");
    if (opt->json) std::printf("%s\n", io_bench_to_json(pack, opt->bench, r).dump(2).c_str());
    return 0;
  };
}

}  // namespace moepack::cli
