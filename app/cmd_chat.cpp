// `moepack chat MODEL_OR_PACK [--system TEXT] [-n N] [sampling] [--stop STR]... [--backend B]
//  [--set k=v]... [--config F]`
//
// Interactive chat in the terminal with the model's chat template. Reads one user message per
// line from stdin (a TTY or a pipe), streams each answer to stdout followed by a newline.
// Commands: /reset (forget the conversation), /stats (engine counters and telemetry, on
// stdout), /exit (or end of input). Each turn re-sends the whole conversation; the session
// re-uses the KV cache of the common prefix, so only the new turn is prefilled.
// Ctrl-C stops the answer being generated; a second Ctrl-C (before the next line is read)
// leaves as /exit does (routing trace and stats file closed complete) with exit status 130; a
// third ends the process at once.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/engine_options.h"
#include "core/error.h"
#include "core/session.h"

namespace moepack::cli {

namespace {

std::atomic<bool> g_interrupt{false};  // the answer's cancel flag: set by the first Ctrl-C
std::atomic<int> g_sigints{0};         // Ctrl-Cs since the last line was read
std::atomic<bool> g_leave{false};      // the second one: leave the chat

void on_sigint(int) {
  const int n = g_sigints.fetch_add(1) + 1;
  g_interrupt.store(true);
  if (n == 2) {
    // Leave through the loop's normal end: stdin becomes /dev/null, so the read waiting for the
    // next line (restarted after this handler, SA_RESTART) or the next one sees end of input.
    g_leave.store(true);
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::dup2(fd, STDIN_FILENO);
      ::close(fd);
    }
  } else if (n > 2) {
    _exit(130);  // the normal exit did not come in time
  }
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

void print_stats(Session& session) {
  nlohmann::json j = {{"backend", std::string(session.backend().name())},
                      {"n_ctx", session.backend().n_ctx()},
                      {"n_past", session.backend().n_past()},
                      {"stats", backend_stats_json(session.backend().stats())},
                      {"telemetry", session.telemetry().to_json(8)}};
  if (!session.backend_note().empty()) j["backend_note"] = session.backend_note();
  std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

}  // namespace

std::function<int()> add_chat(CLI::App& app) {
  struct Options {
    std::string model, system;
    EngineOptions engine;
    GenerateOptions gen;
  };
  auto opt = std::make_shared<Options>();
  opt->gen.max_tokens = -1;
  CLI::App* sub = app.add_subcommand("chat", "Chat with a model in the terminal (/reset, /stats, /exit)");
  sub->add_option("model", opt->model,
                  "GGUF file, any shard of a split set, an Ollama model name, or an Expert Pack "
                  "(directory or manifest.json)");
  sub->add_option("--system", opt->system, "A system message at the start of the conversation");
  sub->add_option("-n,--max-tokens", opt->gen.max_tokens,
                  "Tokens per answer at most; -1: until end of turn or the context is full")
      ->check(CLI::Range(int32_t{-1}, std::numeric_limits<int32_t>::max()))
      ->capture_default_str();
  add_sampling_options(sub, opt->gen.sampling);
  // One value an occurrence, so `--stop X MODEL` does not take MODEL as a second stop string.
  sub->add_option("--stop", opt->gen.stop, "Stop an answer when it contains this text (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);  // help shows `TEXT`, not `TEXT ...`
  add_engine_options(sub, opt->engine);

  return [opt]() {
    const EngineSettings settings = resolve_engine_settings(opt->engine);
    const std::string path = model_path(opt->model, settings);
    std::unique_ptr<Session> session = Session::load(path, settings);
    warn_if_context_capped(settings, *session);
    print_tokenizer_warnings(session->tokenizer());
    if (!session->template_warning().empty()) std::fprintf(stderr, "warning: %s\n", session->template_warning().c_str());
    const bool tty = ::isatty(STDIN_FILENO) != 0;
    if (tty) {
      std::fprintf(stderr, "moepack chat: %s on %s. /reset, /stats, /exit; Ctrl-C stops an answer.\n", path.c_str(),
                   std::string(session->backend().name()).c_str());
    }
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    struct sigaction old_sa {};
    sigaction(SIGINT, &sa, &old_sa);

    std::vector<ChatMessage> messages;
    if (!opt->system.empty()) messages.push_back({"system", opt->system});
    GenerateOptions gen = opt->gen;
    gen.cancel = &g_interrupt;
    std::string line;
    while (true) {
      if (tty) std::fprintf(stderr, "> ");
      if (!std::getline(std::cin, line) || g_leave) break;
      g_interrupt = false;
      g_sigints = 0;
      const std::string cmd = trim(line);
      if (cmd.empty()) continue;
      if (cmd == "/exit" || cmd == "/quit") break;
      if (cmd == "/reset") {
        messages.resize(opt->system.empty() ? 0 : 1);
        session->reset();
        std::fprintf(stderr, "(conversation reset)\n");
        continue;
      }
      if (cmd == "/stats") {
        print_stats(*session);
        continue;
      }
      if (cmd[0] == '/' && cmd.find(' ') == std::string::npos && cmd.size() < 16) {
        std::fprintf(stderr, "unknown command %s (commands: /reset, /stats, /exit)\n", cmd.c_str());
        continue;
      }
      messages.push_back({"user", line});
      GenerateResult r;
      try {
        r = session->chat(messages, gen, [](std::string_view text, int32_t) {
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
          return true;
        });
      } catch (const Error& e) {
        // The turn did not happen (e.g. the conversation no longer fits): keep the session usable.
        messages.pop_back();
        std::printf("\n");
        std::fflush(stdout);
        std::fprintf(stderr, "error: %s\n", e.what());
        continue;
      }
      std::printf("\n");
      std::fflush(stdout);
      messages.push_back({"assistant", r.text});
      if (r.stop_reason == StopReason::ContextFull) {
        std::fprintf(stderr, "(the context is full: /reset to start over)\n");
      } else if (r.stop_reason == StopReason::Cancelled) {
        std::fprintf(stderr, "(stopped)\n");
      } else if (tty) {
        std::fprintf(stderr, "[%zu tokens, %.1f tok/s]\n", r.tokens.size(), r.decode_tokens_per_s);
      }
    }
    session->close_trace();  // a trace that cannot be written fails the command (the destructor drops errors)
    session.reset();  // writes the stats file while Ctrl-C is still caught
    sigaction(SIGINT, &old_sa, nullptr);
    if (g_leave && tty) std::fputc('\n', stderr);  // after the "> " prompt
    return g_leave ? 130 : 0;
  };
}

}  // namespace moepack::cli
