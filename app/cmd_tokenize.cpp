// `moepack tokenize MODEL --text TEXT [--parse-special] [--json]`
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "app/commands.h"
#include "app/engine_options.h"
#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/tokenizer.h"
#include "core/unicode_utf8.h"

namespace moepack::cli {

namespace {

// A piece for humans: valid UTF-8 with control characters escaped.
std::string printable(const std::string& piece) {
  std::string out;
  for (char c : utf8::sanitize(piece)) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned char>(c));
          out += b;
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace

std::function<int()> add_tokenize(CLI::App& app) {
  struct Options {
    std::string model, text;
    bool parse_special = false;
    bool json = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("tokenize", "Tokenize text with a model's vocabulary (as llama.cpp does)");
  sub->add_option("model", opt->model,
                  "GGUF file, any shard of a split set, an Ollama model name, or an Expert Pack")
      ->required();
  sub->add_option("--text", opt->text, "The text to tokenize")->required();
  sub->add_flag("--parse-special", opt->parse_special,
                "Turn special-token text such as <|im_end|> into special tokens (default: plain text)");
  sub->add_flag("--json", opt->json, "Print the token ids as one JSON array on stdout");
  return [opt]() {
    const GgufModel model = GgufModel::open(metadata_gguf_of(opt->model));  // a pack: its dense.gguf
    const Tokenizer tok = Tokenizer::from_gguf(model.primary());
    print_tokenizer_warnings(tok);
    const std::vector<TokenId> ids = tok.encode(opt->text, /*add_special=*/true, opt->parse_special);
    if (opt->json) {
      std::printf("%s\n", nlohmann::json(ids).dump().c_str());
      return 0;
    }
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
    std::printf("\n");
    for (TokenId id : ids) {
      std::fprintf(stderr, "%8d  '%s'%s\n", id, printable(tok.token_to_piece(id, true)).c_str(),
                   tok.is_control(id) ? "  (control)" : "");
    }
    std::fprintf(stderr, "%zu tokens (vocabulary: %s, pre-tokenizer: %s, add_bos=%d, add_eos=%d)\n", ids.size(),
                 tok.model_name().c_str(), tok.pre_name().c_str(), tok.add_bos() ? 1 : 0, tok.add_eos() ? 1 : 0);
    return 0;
  };
}

}  // namespace moepack::cli
