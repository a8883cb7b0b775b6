// Jinja lexer (internal): template source -> tokens, applying jinja2's whitespace rules
// (`-`/`+` modifiers, trim_blocks, lstrip_blocks, the dropped trailing newline). Comments are
// removed; {% raw %} blocks become text.
#pragma once

#include <string>
#include <vector>

#include "core/jinja_ast.h"

namespace moepack::jinja {

struct Tok {
  enum T { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
  T t;
  std::string s;
  int line = 1;
};

std::vector<Tok> lex_template(const std::string& source, const ParseOptions& options);

}  // namespace moepack::jinja
