// `moepack run MODEL_OR_PACK --prompt TEXT [--chat] [-n N] [sampling] [--stop STR]...
//  [--ignore-eos] [--backend B] [--json] [--logits-out FILE] [--set k=v]... [--config F] [--system T]`
//
// One generation through core/session.h: streams the completion to stdout, or with --json
// prints one object at the end. Defaults follow llama.cpp's llama-cli (docs/cli.md).
// Ctrl-C (SIGINT) once the model is loaded stops the generation at the next token (the
// session's cancel flag): the run ends as usual with stop reason "cancelled" (summary or JSON
// printed, routing trace and stats file closed complete) and exit status 130. A second Ctrl-C
// ends the process at once (exit 130, nothing flushed; the routing trace's path keeps what it had,
// its records left in PATH.tmp: core/routing_trace.h).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/cli_checks.h"
#include "app/commands.h"
#include "app/engine_options.h"
#include "core/durable_io.h"
#include "core/error.h"
#include "core/session.h"

namespace moepack::cli {

namespace {

std::atomic<bool> g_cancel{false};

extern "C" void on_sigint(int) {
  if (g_cancel.exchange(true)) _exit(130);  // the second Ctrl-C: the generation did not stop in time
}

// Installs on_sigint for SIGINT while alive; the previous disposition comes back after.
class SigintCancels {
 public:
  SigintCancels() {
    g_cancel = false;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &sa, &old_);
  }
  ~SigintCancels() { ::sigaction(SIGINT, &old_, nullptr); }
  SigintCancels(const SigintCancels&) = delete;
  SigintCancels& operator=(const SigintCancels&) = delete;

 private:
  struct sigaction old_ {};
};

// n floats as little-endian float32 bytes.
std::string float32_le(const std::vector<float>& v) {
  std::string out(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u = std::bit_cast<uint32_t>(v[i]);
    if constexpr (std::endian::native == std::endian::big) u = __builtin_bswap32(u);
    std::memcpy(out.data() + i * 4, &u, 4);
  }
  return out;
}

// --logits-out's directory and name, checked before the model runs (a long generation never
// ends unable to write). Throws UsageError (exit 2) for a directory, a name ending in '/' or a
// missing directory, IoError for a directory the user cannot write into.
std::pair<std::string, std::string> logits_target(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  std::error_code ec;
  if (p.filename().empty() || fs::is_directory(p, ec))
    throw UsageError("--logits-out " + path + ": a directory; give a file name");
  const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
  if (!fs::is_directory(dir, ec)) throw UsageError("--logits-out " + path + ": there is no directory " + dir);
  if (::access(dir.c_str(), W_OK) != 0) throw IoError(dir, "write the --logits-out file into", errno);
  return {dir, p.filename().string()};
}

}  // namespace

std::function<int()> add_run(CLI::App& app) {
  struct Options {
    std::string model, prompt, system, logits_out;
    bool chat = false, json = false;
    EngineOptions engine;
    GenerateOptions gen;
  };
  auto opt = std::make_shared<Options>();
  opt->gen.max_tokens = -1;  // llama-cli's n_predict default: until end of generation or n_ctx
  CLI::App* sub = app.add_subcommand("run", "Generate a completion for one prompt");
  sub->add_option("model", opt->model,
                  "GGUF file, any shard of a split set, an Ollama model name, or an Expert Pack "
                  "(directory or manifest.json)");
  sub->add_option("--prompt,-p", opt->prompt, "The prompt text")->required();
  sub->add_flag("--chat", opt->chat, "Apply the model's chat template to the prompt (one user message)");
  sub->add_option("--system", opt->system, "With --chat: a system message before the prompt");
  sub->add_option("-n,--max-tokens", opt->gen.max_tokens,
                  "Tokens to generate; -1: until EOS or the context is full")
      ->check(CLI::Range(int32_t{-1}, std::numeric_limits<int32_t>::max()))
      ->capture_default_str();
  add_sampling_options(sub, opt->gen.sampling);
  // One value an occurrence, so `--stop X MODEL` does not take MODEL as a second stop string.
  sub->add_option("--stop", opt->gen.stop,
                  "Stop when the completion contains this text (repeatable; not printed)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);  // help shows `TEXT`, not `TEXT ...`
  sub->add_flag("--ignore-eos", opt->gen.ignore_eos, "Keep generating past end-of-generation tokens");
  sub->add_flag("--json", opt->json, "Print one JSON object at the end instead of streaming text");
  sub->add_option("--logits-out", opt->logits_out,
                  "Write the logits after the last prompt token (n_vocab little-endian float32) to FILE");
  add_engine_options(sub, opt->engine);

  return [opt]() {
    if (!opt->system.empty() && !opt->chat) throw UsageError("--system needs --chat");
    for (const std::string& s : opt->gen.stop)
      if (s.empty()) throw UsageError("--stop: an empty stop string would end every completion at once");
    std::pair<std::string, std::string> logits_file;
    if (!opt->logits_out.empty()) logits_file = logits_target(opt->logits_out);
    const EngineSettings settings = resolve_engine_settings(opt->engine);
    const std::string path = model_path(opt->model, settings);
    std::unique_ptr<Session> session = Session::load(path, settings);
    warn_if_context_capped(settings, *session);
    print_tokenizer_warnings(session->tokenizer());
    if (opt->chat && !session->template_warning().empty()) {
      std::fprintf(stderr, "warning: %s\n", session->template_warning().c_str());
    }

    std::vector<float> prompt_logits;
    GenerateOptions gen = opt->gen;
    const SigintCancels sigint;
    gen.cancel = &g_cancel;
    if (!opt->logits_out.empty()) gen.prompt_logits = &prompt_logits;
    TextCallback stream;
    bool line_open = false;  // streamed text not yet ended by a newline
    if (!opt->json) {
      stream = [&line_open](std::string_view text, int32_t) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        if (!text.empty()) line_open = text.back() != '\n';
        return true;
      };
    }
    GenerateResult r;
    try {
      if (opt->chat) {
        std::vector<ChatMessage> messages;
        if (!opt->system.empty()) messages.push_back({"system", opt->system});
        messages.push_back({"user", opt->prompt});
        r = session->chat(messages, gen, stream);
      } else {
        r = session->generate_text(opt->prompt, gen, stream);
      }
      // Cancelled before the prompt was evaluated: there are no logits to write.
      if (!opt->logits_out.empty() && !(r.stop_reason == StopReason::Cancelled && prompt_logits.empty()))
        write_file_atomic(logits_file.first, logits_file.second, float32_le(prompt_logits));
    } catch (...) {
      if (line_open) std::printf("\n");  // the error message starts on a line of its own
      std::fflush(stdout);
      throw;
    }

    if (opt->json) {
      nlohmann::json out = {
          {"model", path},
          {"backend", std::string(session->backend().name())},
          {"prompt_tokens", r.prompt_tokens},
          {"tokens", r.tokens},
          {"text", r.text},
          {"stop_reason", stop_reason_name(r.stop_reason)},
          {"n_prompt_tokens", r.prompt_tokens.size()},
          {"n_tokens", r.tokens.size()},
          {"timings",
           {{"prefill_ms", r.prefill_ms},
            {"decode_ms", r.decode_ms},
            {"time_to_first_token_ms", r.time_to_first_token_ms},
            {"prefill_tokens_per_s", r.prefill_tokens_per_s},
            {"decode_tokens_per_s", r.decode_tokens_per_s}}},
          {"stats", backend_stats_json(r.stats)},
          {"settings", settings_to_json(settings)},
          {"n_ctx", session->backend().n_ctx()}};  // what ran: settings' n_ctx capped at the trained context
      // Why `auto` passed over a GPU backend (core/session.h backend_note).
      if (!session->backend_note().empty()) out["backend_note"] = session->backend_note();
      std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::printf("\n");
      std::fprintf(stderr,
                   "[%zu prompt tokens, %zu generated, stop: %s | prefill %.1f ms (%.1f tok/s), decode %.1f ms "
                   "(%.1f tok/s), backend %s]\n",
                   r.prompt_tokens.size(), r.tokens.size(), stop_reason_name(r.stop_reason), r.prefill_ms,
                   r.prefill_tokens_per_s, r.decode_ms, r.decode_tokens_per_s,
                   std::string(session->backend().name()).c_str());
    }
    std::fflush(stdout);
    session->close_trace();  // a trace that cannot be written fails the command (the destructor drops errors)
    session.reset();  // writes the stats file while Ctrl-C still only cancels
    return r.stop_reason == StopReason::Cancelled ? 130 : 0;  // the shell's status for Ctrl-C
  };
}

}  // namespace moepack::cli
