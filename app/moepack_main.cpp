// moepack: the command-line interface over the MoePack engine.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "app/cli_checks.h"
#include "app/commands.h"
#include "core/error.h"
#if MOEPACK_HAVE_CUDA
#include "gpu/cuda_backend.h"
#endif

int main(int argc, char** argv) {
#if MOEPACK_HAVE_CUDA
  moepack::gpu::register_cuda_backend();  // `--backend cuda` / `auto` (core/backend_factory.h)
#endif
  CLI::App app{"MoePack: run Mixture-of-Experts models with experts streamed from SSD", "moepack"};
  app.set_version_flag("--version", std::string("moepack ") + MOEPACK_VERSION);
  app.require_subcommand(1);
  // Each add_* registers one subcommand (named as in docs/cli.md) and returns its runner.
  using Register = std::function<int()> (*)(CLI::App&);
  const std::pair<const char*, Register> table[] = {
      {"inspect", moepack::cli::add_inspect},     {"build", moepack::cli::add_build},
      {"verify", moepack::cli::add_verify},       {"devices", moepack::cli::add_devices},
      {"cache-sim", moepack::cli::add_cache_sim}, {"bench-io", moepack::cli::add_bench_io},
      {"tokenize", moepack::cli::add_tokenize},   {"template", moepack::cli::add_template},
      {"run", moepack::cli::add_run},             {"chat", moepack::cli::add_chat},
      {"bench", moepack::cli::add_bench},
      {"twin", moepack::cli::add_twin},           {"bench-twin", moepack::cli::add_bench_twin},
  };
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  for (const auto& [name, add] : table) {
    auto run = add(app);
    commands.emplace_back(app.get_subcommand(name), std::move(run));
  }
  // A first word that is neither an option nor a command: name it and the commands (CLI11 would
  // say only "A subcommand is required").
  std::string names;
  bool known = false;
  for (const auto& [name, add] : table) {
    names += std::string(names.empty() ? "" : ", ") + name;
    known = known || (argc > 1 && std::string(argv[1]) == name);
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr, "error: unknown command '%s' (commands: %s; see moepack --help)\n", argv[1], names.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every other parse error (an unknown option, a value out of
    // range, a missing argument) prints CLI11's message and exits 2 (docs/cli.md), not CLI11's
    // own codes (104-110).
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, run] : commands) {
      if (sub->parsed()) return run();
    }
  } catch (const moepack::cli::UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const moepack::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 1;
}
