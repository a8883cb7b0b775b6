// `moepack` subcommands. Each registers itself on the CLI11 app and runs when selected.
// Conventions (docs/cli.md): --json prints one JSON object on stdout; human text, progress
// and logs go to stderr; exit status 0 only on success.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace moepack::cli {

// Registers `inspect`; the returned function runs it and returns the exit status.
std::function<int()> add_inspect(CLI::App& app);
// Registers `build` (packbuilder/pack_builder.h) and `verify` (core/pack_verify.h).
std::function<int()> add_build(CLI::App& app);
std::function<int()> add_verify(CLI::App& app);
std::function<int()> add_devices(CLI::App& app);
std::function<int()> add_cache_sim(CLI::App& app);
std::function<int()> add_bench_io(CLI::App& app);

// Registers `tokenize` and `template` (core/tokenizer.h, core/chat_template.h).
std::function<int()> add_tokenize(CLI::App& app);
std::function<int()> add_template(CLI::App& app);

// Registers `run` and `chat` (core/session.h; shared options in app/engine_options.h).
std::function<int()> add_run(CLI::App& app);
std::function<int()> add_chat(CLI::App& app);

// Registers `bench` (bench/bench_runner.h; docs/benchmarks.md).
std::function<int()> add_bench(CLI::App& app);

// Registers `twin` and `bench-twin` (bench/twin_pack.h, bench/twin_bench.h; docs/twins.md).
std::function<int()> add_twin(CLI::App& app);
std::function<int()> add_bench_twin(CLI::App& app);

}  // namespace moepack::cli
