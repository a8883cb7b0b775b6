// See chat_template.h.
#include "core/chat_template.h"

#include <algorithm>

namespace moepack {

namespace {

const char* const kChatML =
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

std::string strftime_local(std::time_t t, const std::string& fmt) {
  std::tm tm{};
  localtime_r(&t, &tm);
  std::string buf(256 + fmt.size() * 4, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
  buf.resize(n);
  return buf;
}

}  // namespace

ChatTemplate ChatTemplate::from_source(const std::string& source, const jinja::ParseOptions& options) {
  ChatTemplate t;
  t.source_ = source;
  t.tpl_ = jinja::Template::parse(source, options);
  return t;
}

ChatTemplate ChatTemplate::chatml() {
  ChatTemplate t = from_source(kChatML);
  t.fallback_ = true;
  return t;
}

ChatTemplate ChatTemplate::for_model(const GgufFile& gguf) {
  const auto src = gguf.get_string("tokenizer.chat_template");
  if (!src || src->empty()) {
    ChatTemplate t = chatml();
    t.warning_ = gguf.path() + ": no tokenizer.chat_template; using the ChatML fallback";
    return t;
  }
  try {
    return from_source(*src);
  } catch (const jinja::TemplateError& e) {
    ChatTemplate t = chatml();
    t.warning_ = gguf.path() + ": tokenizer.chat_template does not compile (" + e.what() + "); using the ChatML fallback";
    return t;
  }
}

std::string ChatTemplate::render(const nlohmann::json& messages, const ChatTemplateOptions& o) const {
  using jinja::Value;
  if (!messages.is_array()) throw jinja::TemplateError("messages must be a JSON array");
  jinja::Dict ctx;
  ctx.set("messages", Value::from_json(messages));
  ctx.set("add_generation_prompt", Value::boolean(o.add_generation_prompt));
  ctx.set("bos_token", Value::string(o.bos_token));
  ctx.set("eos_token", Value::string(o.eos_token));
  ctx.set("raise_exception", Value::function([](jinja::CallArgs& a) -> Value {
    throw jinja::TemplateError("template raised an exception: " + a.get(0, "message").str());
  }));
  const std::time_t now = o.now ? *o.now : std::time(nullptr);
  ctx.set("strftime_now", Value::function([now](jinja::CallArgs& a) {
    return Value::string(strftime_local(now, a.get(0, "format").str()));
  }));
  if (o.extra.is_object()) {
    for (auto it = o.extra.begin(); it != o.extra.end(); ++it) ctx.set(it.key(), Value::from_json(it.value()));
  }
  return tpl_.render(Value::make_dict(std::move(ctx)));
}

ChatTemplateOptions chat_options_for(const Tokenizer& tok, bool add_generation_prompt) {
  ChatTemplateOptions o;
  o.add_generation_prompt = add_generation_prompt;
  if (tok.bos() != kNoToken) o.bos_token = tok.token_text(tok.bos());
  if (tok.eos() != kNoToken) o.eos_token = tok.token_text(tok.eos());
  return o;
}

std::vector<TokenId> tokenize_chat_prompt(const Tokenizer& tok, const std::string& prompt, const nlohmann::json& messages) {
  // Locate message texts in order; a template may strip them, so also try the stripped text.
  std::vector<std::pair<size_t, size_t>> plain;
  size_t pos = 0;
  auto mark = [&](const std::string& s) {
    if (s.empty()) return;
    auto try_find = [&](const std::string& t) {
      if (t.empty()) return false;
      const size_t m = prompt.find(t, pos);
      if (m == std::string::npos) return false;
      plain.emplace_back(m, m + t.size());
      pos = m + t.size();
      return true;
    };
    if (try_find(s)) return;
    const size_t b = s.find_first_not_of(" \t\r\n");
    const size_t e = s.find_last_not_of(" \t\r\n");
    if (b != std::string::npos) try_find(s.substr(b, e - b + 1));
  };
  if (messages.is_array()) {
    for (const auto& m : messages) {
      if (!m.is_object()) continue;
      for (const char* key : {"reasoning_content", "content"}) {
        if (m.contains(key) && m[key].is_string()) mark(m[key].get<std::string>());
      }
    }
  }
  std::vector<TokenId> ids = tok.encode_with_plain_spans(prompt, /*add_special=*/false, plain);
  if (tok.add_bos() && tok.bos() != kNoToken && (ids.empty() || ids.front() != tok.bos())) ids.insert(ids.begin(), tok.bos());
  if (tok.add_eos() && tok.eos() != kNoToken) ids.push_back(tok.eos());
  return ids;
}

}  // namespace moepack
