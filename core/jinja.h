// A small Jinja interpreter for chat templates (`tokenizer.chat_template`).
//
// Scope: what published chat templates use (../shared/templates: DeepSeek V3.x/V4, Kimi-K2, Qwen3,
// Llama 3, gpt-oss, Mistral, GLM, MiniMax): text, {{ }}, {% if/elif/else %}, {% for %} with
// loop.*, else and inline `if`, {% set %} (also block form and namespace attributes),
// {% macro %}, break/continue, {% generation %}, {% raw %}, comments, whitespace control, and
// Python-flavoured expressions, filters, tests and str/dict/list methods (core/jinja_builtins.cpp).
// Not supported: template inheritance/includes, recursive loops, autoescaping, sandbox checks.
//
// Semantics follow Python jinja2 3.1 as Hugging Face transformers configures it
// (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True), loopcontrols; `tojson`
// = json.dumps(ensure_ascii=False)). Unsupported syntax or a failing template throws
// TemplateError with the line number; raise_exception(msg) throws TemplateError(msg).
#pragma once

#include <string>
#include <string_view>

#include "core/jinja_ast.h"
#include "core/jinja_value.h"

namespace moepack::jinja {

class Template {
 public:
  // Throws TemplateError on a syntax error.
  static Template parse(const std::string& source, const ParseOptions& options = {});
  // `context` must be a Dict; its entries are the template's globals.
  std::string render(const Value& context) const;

 private:
  NodePtr root_;
};

}  // namespace moepack::jinja
