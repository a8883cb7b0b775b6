// Shared engine and sampling options of `moepack run` and `moepack chat` (engine_options.h).
#include "app/engine_options.h"

#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "app/cli_checks.h"
#include "core/error.h"

namespace moepack::cli {

void add_engine_options(CLI::App* sub, EngineOptions& o) {
  sub->add_option("--config", o.config, "Engine settings from a JSON object file (keys as for --set)");
  // One key=value an occurrence (`--set k=v MODEL` leaves MODEL the positional argument).
  sub->add_option("--set", o.sets,
                  "Engine setting key=value (repeatable; e.g. cache_vram_mib=2048, n_ctx=2048, threads=4)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);  // help shows `TEXT`, not `TEXT ...`
  sub->add_option("--backend", o.backend, "Compute backend: cpu, cuda or auto (default: the settings', auto)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
}

EngineSettings resolve_engine_settings(const EngineOptions& o) {
  EngineSettings s;
  // Every refusal here is a bad argument (exit 2); a config file that cannot be read stays an
  // I/O error (exit 1).
  if (!o.config.empty()) {
    try {
      apply_settings_file(s, o.config);
    } catch (const IoError&) {
      throw;
    } catch (const Error& e) {
      throw UsageError(std::string("--config: ") + e.what());
    }
  }
  for (const std::string& kv : o.sets) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--set " + kv + ": expected key=value");
    try {
      apply_setting(s, kv.substr(0, eq), kv.substr(eq + 1));
    } catch (const Error& e) {
      throw UsageError(std::string("--set: ") + e.what());
    }
  }
  if (!o.backend.empty()) {
    try {
      apply_setting(s, "backend", o.backend);
    } catch (const Error& e) {
      throw UsageError(std::string("--backend: ") + e.what());
    }
  }
  return s;
}

void add_sampling_options(CLI::App* sub, SamplingParams& p) {
  sub->add_option("--temperature,--temp", p.temperature, "Sampling temperature; <= 0: greedy (argmax)")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--top-k", p.top_k, "Keep the k most likely tokens; <= 0: off")->capture_default_str();
  sub->add_option("--top-p", p.top_p, "Nucleus sampling mass, 0..1; 1: off")
      ->check(unit_interval())
      ->capture_default_str();
  sub->add_option("--min-p", p.min_p, "Drop tokens below min_p x the best probability, 0..1; 0: off")
      ->check(unit_interval())
      ->capture_default_str();
  sub->add_option("--repeat-penalty", p.repeat_penalty, "Repetition penalty, > 0; 1: off")
      ->check(positive_number())
      ->capture_default_str();
  sub->add_option("--repeat-last-n", p.repeat_last_n, "Tokens the penalties look back at; -1: all; 0: off")
      ->check(CLI::Range(int32_t{-1}, std::numeric_limits<int32_t>::max()))
      ->capture_default_str();
  sub->add_option("--presence-penalty", p.presence_penalty, "Subtracted once from tokens seen; 0: off")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--frequency-penalty", p.frequency_penalty, "Subtracted per occurrence; 0: off")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--seed", p.seed, "Random seed (0 to 4294967295; 4294967295: a random seed)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{0xFFFFFFFF}))
      ->capture_default_str();
}

std::string model_path(const std::string& arg, const EngineSettings& s) {
  if (!arg.empty()) return arg;
  if (!s.pack_path.empty()) return s.pack_path;
  if (!s.manifest_path.empty()) return s.manifest_path;
  throw Error("no model given (pass MODEL_OR_PACK, or set pack_path / manifest_path)");
}

nlohmann::json backend_stats_json(const BackendStats& s) {
  return {{"forward_calls", s.forward_calls},
          {"tokens_evaluated", s.tokens_evaluated},
          {"expert_selections", s.expert_selections},
          {"experts_computed", s.experts_computed},
          {"compute_ms", s.compute_ms},
          {"io_wait_ms", s.io_wait_ms},
          {"cache_hits", s.cache_hits},
          {"cache_misses", s.cache_misses},
          {"cache_evictions", s.cache_evictions},
          {"prefetch_reads", s.prefetch_reads},
          {"prefetch_hits", s.prefetch_hits},
          {"pack_read_bytes", s.pack_read_bytes},
          {"h2d_bytes", s.h2d_bytes},
          {"ram_tier_hits", s.ram_tier_hits},
          {"ram_tier_demotions", s.ram_tier_demotions},
          {"d2h_bytes", s.d2h_bytes},
          {"ram_tier_slots", s.ram_tier_slots},
          {"fallback_count", s.fallback_count},
          {"io_errors", s.io_errors},
          {"cache_slots", s.cache_slots},
          {"cache_slot_bytes", s.cache_slot_bytes}};
}

void warn_if_context_capped(const EngineSettings& s, const Session& session) {
  const uint32_t got = session.backend().n_ctx();
  if (s.n_ctx > got && s.n_ctx != EngineSettings{}.n_ctx) {  // asked for, not the default
    std::fprintf(
        stderr, "warning: n_ctx %u is above the model's trained context; running with %u tokens of context\n",
        s.n_ctx, got);
  }
}

void print_tokenizer_warnings(const Tokenizer& tokenizer) {
  for (const std::string& w : tokenizer.warnings()) {
    if (w.find("looks like a control token") == std::string::npos)
      std::fprintf(stderr, "warning: %s\n", w.c_str());
  }
}

}  // namespace moepack::cli
