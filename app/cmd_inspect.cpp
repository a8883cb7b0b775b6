// `moepack inspect PATH|FIRST-SHARD|OLLAMA-NAME [--json] [--tensors]`
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "app/commands.h"
#include "core/context_memory.h"
#include "core/error.h"
#include "core/gguf_model.h"
#include "core/model_config.h"
#include "core/model_summary.h"
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
  sub->add_option("model", opt->model, "GGUF file, any shard of a split set, or an Ollama model name")->required();
  sub->add_flag("--json", opt->json, "Print one JSON object on stdout");
  sub->add_flag("--tensors", opt->tensors, "List every tensor (always included with --json)");
  return [opt]() {
    const GgufModel model = GgufModel::open(opt->model);
    const ModelSummary s = summarize(model);
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
      j["expert_pack"] = pack_plan_summary(model);  // what `moepack build` would write
      j["context_memory"] = ctx_json;
      std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::fputs(summary_to_text(s).c_str(), stderr);
      std::fputs(ctx_text.c_str(), stderr);
      std::fputs(pack_plan_summary_text(pack_plan_summary(model)).c_str(), stderr);
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
