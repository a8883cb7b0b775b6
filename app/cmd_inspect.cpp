// `moepack inspect PATH|FIRST-SHARD|OLLAMA-NAME|PACK-DIR [--json] [--tensors]`
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "app/commands.h"
#include "core/context_memory.h"
#include "core/error.h"
#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/model_config.h"
#include "core/model_summary.h"
#include "core/pack_manifest.h"
#include "packbuilder/pack_plan.h"

namespace moepack::cli {

std::function<int()> add_inspect(CLI::App& app) {
  struct Options {
    std::string model;
    bool json = false;
    bool tensors = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("inspect", "Show a GGUF model's architecture, tokenizer, tensors and MoE structure");
  sub->add_option(
         "model", opt->model,
         "GGUF file, any shard of a split set, an Ollama model name, or an Expert Pack (its directory "
         "or manifest.json)")
      ->required();
  sub->add_flag("--json", opt->json, "Print one JSON object on stdout");
  sub->add_flag("--tensors", opt->tensors, "List every tensor (always included with --json)");
  return [opt]() {
    // An Expert Pack reads as its source (core's summarize_pack): dense.gguf's metadata and
    // tensors, the routed experts from the manifest.
    const bool is_pack = is_pack_path(opt->model);
    const std::string pack_dir = is_pack ? expert_pack_dir(opt->model) : std::string();  // "pack/" is "pack"
    const GgufModel model = GgufModel::open(is_pack ? pack_dir + "/" + kPackDenseName : opt->model);
    std::optional<PackManifest> manifest;
    if (is_pack) manifest = read_manifest(pack_dir + "/" + kPackManifestName);
    const ModelSummary s = is_pack ? summarize_pack(pack_dir, model, *manifest) : summarize(model);
    nlohmann::json pack_json;
    std::string pack_text;
    if (is_pack) {
      const PackManifest& m = *manifest;
      pack_json = {{"pack_dir", pack_dir},
                   {"build_id", m.build_id},
                   {"experts", m.layout.expert_count()},
                   {"slot_bytes", m.layout.max_stride},
                   {"dense_bytes", m.dense.bytes},
                   {"experts_bin_bytes", m.experts.bytes}};
      pack_text = "expert pack:  " + pack_dir + ": " + std::to_string(m.layout.expert_count()) +
                  " experts in slots of " + std::to_string(m.layout.max_stride) + " bytes, build " +
                  m.build_id + " (`moepack verify " + pack_dir + " --full` checks every expert's SHA-256)\n";
    }
    // KV / state memory per token and per sequence, for architectures the engine runs.
    nlohmann::json ctx_json = nullptr;
    std::string ctx_text;
    try {
      const ModelConfig cfg = read_model_config(model.primary());
      const ContextMemory cm = context_memory(cfg);
      ctx_json = context_memory_json(cfg, cm);
      ctx_text = context_memory_text(cfg, cm);
    } catch (const Error& e) {
      ctx_json = {{"error", e.what()}};
      ctx_text = std::string("context:      unknown (") + e.what() + ")\n";
    }
    if (opt->json) {
      nlohmann::json j = summary_to_json(s, model, true);
      // A pack: the pack itself; a GGUF: what `moepack build` would write.
      j["expert_pack"] = is_pack ? pack_json : pack_plan_summary(model);
      j["context_memory"] = ctx_json;
      std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::fputs(summary_to_text(s).c_str(), stderr);
      std::fputs(ctx_text.c_str(), stderr);
      std::fputs(is_pack ? pack_text.c_str() : pack_plan_summary_text(pack_plan_summary(model)).c_str(),
                 stderr);
      if (opt->tensors) {
        for (const GgufTensorRef& r : model.tensors()) {
          const GgufTensorInfo& t = *r.info;
          std::fprintf(stderr, "  %-40s %-6s [%llu, %llu, %llu, %llu] %llu bytes @ %llu (shard %u)\n", t.name.c_str(),
                       std::string(ggml_type_name(t.type)).c_str(), (unsigned long long)t.ne[0],
                       (unsigned long long)t.ne[1], (unsigned long long)t.ne[2], (unsigned long long)t.ne[3],
                       (unsigned long long)t.nbytes, (unsigned long long)t.file_offset, r.shard + 1);
        }
      }
    }
    return 0;
  };
}

}  // namespace moepack::cli
