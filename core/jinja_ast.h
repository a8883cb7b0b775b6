// Abstract syntax tree of a Jinja template (internal to core/jinja_*.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/jinja_value.h"

namespace moepack::jinja {

struct Node;
using NodePtr = std::shared_ptr<Node>;

struct Node {
  enum class Kind {
    // expressions
    Literal, Name, ListLit, TupleLit, DictLit, GetAttr, GetItem, Slice, Call, Filter, Test, Neg, Pos, Not,
    Binary, Compare, And, Or, CondExpr, Concat,
    // statements
    Text, Print, Body, If, For, Set, SetBlock, Macro, Break, Continue, CallBlock, With, FilterBlock,
  };
  Kind kind;
  int line = 0;
  std::string name;       // Name, GetAttr attr, Filter/Test name, Binary/Compare op, Macro name, Text data
  Value value;            // Literal
  std::vector<NodePtr> a;  // children (operands, list items, call args, statement bodies...)
  std::vector<std::string> kw_names;  // Call/Filter/Test keyword argument names (their values at the end of `b`)
  std::vector<NodePtr> b;             // second child list (dict values, kw values, else body, ...)
  std::vector<std::string> targets;   // For/Set targets; Macro parameter names
  bool negated = false;               // Test: `is not`
  NodePtr x, y, z, w;                 // misc: object / condition / iterable / filter ...

  explicit Node(Kind k, int ln = 0) : kind(k), line(ln) {}
};

// Parses template source into a Body node. Options mirror jinja2.Environment's.
struct ParseOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};
NodePtr parse_template(const std::string& source, const ParseOptions& options);

}  // namespace moepack::jinja
