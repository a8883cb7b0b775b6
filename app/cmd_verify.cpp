// `moepack verify PACK [--full] [--json]`: structure always; SHA-256 of every expert, the
// whole experts.bin and dense.gguf with --full. Exit status 0 only when the pack is intact.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "app/commands.h"
#include "core/pack_verify.h"

namespace moepack::cli {

std::function<int()> add_verify(CLI::App& app) {
  struct Options {
    std::string pack;
    bool full = false;
    bool json = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub =
      app.add_subcommand("verify", "Check an Expert Pack: structure, and every SHA-256 with --full");
  sub->add_option("pack", opt->pack, "Pack directory or its manifest.json")->required();
  sub->add_flag("--full", opt->full, "Hash every expert block, experts.bin and dense.gguf");
  sub->add_flag("--json", opt->json, "Print one JSON object on stdout");
  return [opt]() {
    VerifyOptions vo;
    vo.full = opt->full;
    const VerifyResult r = verify_pack(opt->pack, vo);
    if (opt->json) {
      nlohmann::json j = {
          {"ok", r.ok},
          {"message", r.message},
          {"full", opt->full},
          {"bad_layer", r.bad_layer >= 0 ? nlohmann::json(r.bad_layer) : nlohmann::json(nullptr)},
          {"bad_expert", r.bad_expert >= 0 ? nlohmann::json(r.bad_expert) : nlohmann::json(nullptr)},
          {"experts_checked", r.experts_checked},
          {"bytes_hashed", r.bytes_hashed},
          {"seconds", r.seconds}};
      std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    std::fprintf(stderr, "%s%s\n", r.ok ? "" : "error: ", r.message.c_str());
    return r.ok ? 0 : 1;
  };
}

}  // namespace moepack::cli
