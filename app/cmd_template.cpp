// `moepack template MODEL --messages FILE [--no-generation-prompt] [--json]`
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "app/commands.h"
#include "core/chat_template.h"
#include "core/error.h"
#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/tokenizer.h"

namespace moepack::cli {

std::function<int()> add_template(CLI::App& app) {
  struct Options {
    std::string model, messages;
    bool no_generation_prompt = false;
    bool no_fallback = false;
    bool json = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("template", "Render a conversation with the model's chat template");
  sub->add_option("model", opt->model,
                  "GGUF file, any shard of a split set, an Ollama model name, or an Expert Pack")
      ->required();
  sub->add_option("--messages", opt->messages,
                  "JSON file (or - for stdin): an array of {role, content[, reasoning_content]}")
      ->required();
  sub->add_flag("--no-generation-prompt", opt->no_generation_prompt, "Do not open an assistant turn at the end");
  sub->add_flag("--no-fallback", opt->no_fallback,
                "Fail if the model has no usable chat template instead of using ChatML");
  sub->add_flag("--json", opt->json, "Print {prompt, tokens, fallback, warning} as one JSON object");
  return [opt]() {
    std::string text;
    if (opt->messages == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), {});
    } else {
      std::ifstream f(opt->messages, std::ios::binary);
      if (!f) throw Error(opt->messages + ": cannot open the messages file");
      text.assign(std::istreambuf_iterator<char>(f), {});
    }
    nlohmann::json messages;
    try {
      messages = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error(opt->messages + ": not valid JSON: " + e.what());
    }
    if (!messages.is_array()) throw Error(opt->messages + ": expected a JSON array of messages");
    for (const auto& m : messages) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
        throw Error(opt->messages + ": every message needs a string \"role\"");
      }
    }
    const GgufModel model = GgufModel::open(metadata_gguf_of(opt->model));  // a pack: its dense.gguf
    const Tokenizer tok = Tokenizer::from_gguf(model.primary());
    const ChatTemplate tpl = ChatTemplate::for_model(model.primary());
    if (tpl.is_fallback()) {
      if (opt->no_fallback) {
        // The warning's "; using the ChatML fallback" is what --no-fallback refuses to do.
        std::string why = tpl.warning();
        const std::string fallback = "; using the ChatML fallback";
        if (why.ends_with(fallback)) why.resize(why.size() - fallback.size());
        throw Error(why + " (--no-fallback: no ChatML fallback)");
      }
      std::fprintf(stderr, "warning: %s\n", tpl.warning().c_str());
    }
    std::string prompt;
    try {
      prompt = tpl.render(messages, chat_options_for(tok, !opt->no_generation_prompt));
    } catch (const jinja::TemplateError& e) {
      throw Error(std::string("chat template of ") + opt->model + ": " + e.what());
    }
    if (opt->json) {
      nlohmann::json out = {{"prompt", prompt},
                            {"tokens", tokenize_chat_prompt(tok, prompt, messages)},
                            {"fallback", tpl.is_fallback()},
                            {"warning", tpl.warning()}};
      std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    }
    return 0;
  };
}

}  // namespace moepack::cli
