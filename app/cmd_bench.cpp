// `moepack bench MODEL_OR_PACK [--prompts FILE] [-n N] --out DIR [--formats json,csv,html]
//  [--baseline URL]... [--baseline-model NAME]... [--ca-cert FILE] [--chat|--raw] [--eos]
//  [--set k=v]... [--config F] [--backend B]`
//
// Runs a benchmark prompt set through the engine (and OpenAI-compatible baselines) and writes
// the report (bench/bench_runner.h; docs/benchmarks.md). Progress on stderr; stdout gets the
// paths written, one per line. Exit status 0 when the report was written, even if requests
// failed (their errors are in the report); 1 when nothing could be run.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/cli_checks.h"
#include "app/commands.h"
#include "app/engine_options.h"
#include "bench/bench_runner.h"
#include "bench/openai_client.h"
#include "core/error.h"

namespace moepack::cli {

std::function<int()> add_bench(CLI::App& app) {
  struct Options {
    std::string model, prompts, out, formats = "json,csv,html", ca_cert;
    int32_t max_tokens = 200;
    bool raw = false, chat = false, eos = false;
    std::vector<std::string> baselines, baseline_models;
    EngineOptions engine;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("bench", "Benchmark a model on a prompt set (and baselines); write a report");
  sub->add_option("model", opt->model,
                  "GGUF file, any shard of a split set, an Ollama model name, or an Expert Pack");
  sub->add_option("--prompts", opt->prompts,
                  "Prompt set JSON (default: resources/benchmarks/published-10.json; docs/benchmarks.md)");
  sub->add_option("-n,--max-tokens", opt->max_tokens, "Completion tokens per request")
      ->capture_default_str()
      ->check(positive_number());
  sub->add_option("--out,-o", opt->out, "Directory for report.json / report.csv / report.html")->required();
  sub->add_option("--formats", opt->formats, "Comma-separated subset of json,csv,html")->capture_default_str();
  sub->add_option("--baseline", opt->baselines,
                  "OpenAI-compatible server to compare with, e.g. http://127.0.0.1:8080 (repeatable)");
  sub->add_option("--baseline-model", opt->baseline_models,
                  "The \"model\" field for the baseline of the same position (one value: for all; default: the "
                  "first of GET /v1/models)");
  sub->add_option("--ca-cert", opt->ca_cert, "PEM CA bundle for HTTPS baselines (default: the system's)");
  auto* chat = sub->add_flag("--chat", opt->chat, "Apply the chat template around each prompt (the default)");
  sub->add_flag("--raw", opt->raw, "Send the prompt text without a chat template (/v1/completions for baselines)")
      ->excludes(chat);
  sub->add_flag("--eos", opt->eos,
                "Stop a request at end-of-generation (default: ignore EOS, so every request decodes exactly -n tokens)");
  add_engine_options(sub, opt->engine);

  return [opt]() {
    bench::BenchOptions b;
    bench::ReportFormats formats;
    try {
      formats = bench::parse_formats(opt->formats);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
    // A baseline address the client cannot use is a bad argument, refused before anything is
    // opened (making a client parses the address; nothing is sent).
    for (const std::string& url : opt->baselines) {
      try {
        bench::OpenAiClient check(url);
      } catch (const Error& e) {
        throw UsageError(std::string("--baseline: ") + e.what());
      }
    }
    if (opt->baseline_models.size() > 1 && opt->baseline_models.size() != opt->baselines.size()) {
      throw UsageError("--baseline-model: give one (for all baselines) or one per --baseline");
    }
    b.settings = resolve_engine_settings(opt->engine);
    b.model_path = model_path(opt->model, b.settings);
    b.prompts = bench::load_prompt_set(opt->prompts.empty() ? bench::default_prompt_set_path() : opt->prompts);
    b.max_tokens = opt->max_tokens;
    b.chat = !opt->raw;
    b.ignore_eos = !opt->eos;
    for (size_t i = 0; i < opt->baselines.size(); ++i) {
      bench::BaselineSpec s{opt->baselines[i], ""};
      if (!opt->baseline_models.empty()) s.model = opt->baseline_models[opt->baseline_models.size() == 1 ? 0 : i];
      b.baselines.push_back(s);
    }
    b.client.ca_cert_file = opt->ca_cert;
    if (const char* key = std::getenv("MOEPACK_BASELINE_API_KEY")) b.client.api_key = key;

    b.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    std::fprintf(stderr, "prompt set %s: %zu requests, %d completion tokens each%s\n", b.prompts.path.c_str(),
                 b.prompts.requests.size(), b.max_tokens, b.ignore_eos ? " (EOS ignored)" : "");

    bench::prepare_report_dir(opt->out);  // before the run: a long benchmark never ends unwritable
    const nlohmann::json report = bench::run_bench(b);
    for (const std::string& p : bench::write_reports(report, opt->out, formats)) std::printf("%s\n", p.c_str());
    return 0;
  };
}

}  // namespace moepack::cli
