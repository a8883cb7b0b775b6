// Chat prompt formatting: renders a model's `tokenizer.chat_template` (Jinja, core/jinja.h) the
// way Hugging Face transformers' apply_chat_template does, and tokenizes the result so that only
// the template's own markers become special tokens.
//
// Variables given to the template (transformers' convention): `messages` (the conversation as
// given: role, content, optional reasoning_content / tool_calls / ...), `add_generation_prompt`,
// `bos_token`, `eos_token` (the vocabulary's BOS/EOS text), any `extra` variables (tools,
// enable_thinking, ...), and the functions raise_exception(msg) and strftime_now(format).
//
// Missing or broken template (documented in docs/cli.md): ChatTemplate::for_model() falls back to
// ChatML (`<|im_start|>role\ncontent<|im_end|>\n`, the most common convention) and says so in
// `warning()`; callers show that warning to the user. A template that fails while rendering
// (syntax the interpreter lacks, raise_exception) throws jinja::TemplateError naming the line.
#pragma once

#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/gguf.h"
#include "core/jinja.h"
#include "core/tokenizer.h"

namespace moepack {

struct ChatTemplateOptions {
  bool add_generation_prompt = true;
  std::string bos_token;  // text of the BOS token ("" if none)
  std::string eos_token;  // text of the EOS token
  nlohmann::json extra = nlohmann::json::object();  // more template variables (tools, enable_thinking...)
  std::optional<std::time_t> now;  // strftime_now's clock (local time); default: the current time
};

class ChatTemplate {
 public:
  // Whitespace options as transformers sets them (trim_blocks, lstrip_blocks on).
  static jinja::ParseOptions hf_options() { return {true, true, false}; }

  // Compiles `source`; throws jinja::TemplateError on a syntax error.
  static ChatTemplate from_source(const std::string& source, const jinja::ParseOptions& options = hf_options());

  // The template of a model (`tokenizer.chat_template` of its primary GGUF file). If the file has
  // none, or it does not compile, returns the ChatML fallback with warning() explaining why.
  static ChatTemplate for_model(const GgufFile& gguf);

  // The ChatML fallback.
  static ChatTemplate chatml();

  // Renders `messages` (a JSON array of message objects). Throws jinja::TemplateError.
  std::string render(const nlohmann::json& messages, const ChatTemplateOptions& options) const;

  const std::string& source() const { return source_; }
  bool is_fallback() const { return fallback_; }
  const std::string& warning() const { return warning_; }

 private:
  std::string source_;
  jinja::Template tpl_;
  bool fallback_ = false;
  std::string warning_;
};

// Options filled from the tokenizer (BOS/EOS text).
ChatTemplateOptions chat_options_for(const Tokenizer& tok, bool add_generation_prompt);

// Tokenizes a rendered prompt: the template's markers are parsed as special tokens, but the text
// of each message's content / reasoning_content found in `prompt` stays plain text. BOS is added
// as the vocabulary says unless the prompt already starts with it, so the result holds exactly
// one BOS at position 0 when the vocabulary adds BOS.
std::vector<TokenId> tokenize_chat_prompt(const Tokenizer& tok, const std::string& prompt, const nlohmann::json& messages);

}  // namespace moepack
