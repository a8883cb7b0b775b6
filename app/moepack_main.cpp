// moepack: the command-line interface over the MoePack engine.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <functional>
#include <vector>

#include "app/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"MoePack: run Mixture-of-Experts models with experts streamed from SSD", "moepack"};
  app.set_version_flag("--version", std::string("moepack ") + MOEPACK_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  auto inspect = moepack::cli::add_inspect(app);
  commands.emplace_back(app.get_subcommand("inspect"), inspect);
  auto build = moepack::cli::add_build(app);
  commands.emplace_back(app.get_subcommand("build"), build);
  auto verify = moepack::cli::add_verify(app);
  commands.emplace_back(app.get_subcommand("verify"), verify);
  auto devices = moepack::cli::add_devices(app);
  commands.emplace_back(app.get_subcommand("devices"), devices);
  auto cache_sim = moepack::cli::add_cache_sim(app);
  commands.emplace_back(app.get_subcommand("cache-sim"), cache_sim);
  auto bench_io = moepack::cli::add_bench_io(app);
  commands.emplace_back(app.get_subcommand("bench-io"), bench_io);
  auto tokenize = moepack::cli::add_tokenize(app);
  commands.emplace_back(app.get_subcommand("tokenize"), tokenize);
  auto chat_template = moepack::cli::add_template(app);
  commands.emplace_back(app.get_subcommand("template"), chat_template);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : commands) {
      if (sub->parsed()) return run();
    }
  } catch (const moepack::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 1;
}
