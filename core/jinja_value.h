// Values of the Jinja interpreter (core/jinja_*.h), with Python's semantics where templates can
// see them: str() of None/True/1.0/lists/dicts, truthiness, ==, <, `in`, and json.dumps for the
// `tojson` filter (as Hugging Face transformers defines it: ensure_ascii=False, keys unsorted).
//
// Chat templates are written for Python jinja2 (https://jinja.palletsprojects.com/en/3.1.x/) as
// Hugging Face transformers runs them; Python is therefore the oracle the tests compare against.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace moepack::jinja {

// A template failed to parse or render; also what raise_exception() throws.
class TemplateError : public Error {
 public:
  explicit TemplateError(const std::string& what) : Error(what) {}
};

struct Value;
struct CallArgs;
using List = std::vector<Value>;
using Function = std::function<Value(CallArgs&)>;

// Insertion-ordered string-keyed map (Python dict semantics for what templates do).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(const std::string& key, Value v);
  bool erase(std::string_view key);
};

struct Value {
  enum class Kind { Undefined, None, Bool, Int, Float, String, Array, Object, Callable };
  Kind kind = Kind::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // String; for Undefined: the name that was looked up (for messages)
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;
  std::shared_ptr<Function> fn;
  bool is_namespace = false;  // a Dict made by namespace(): attribute assignment allowed
  bool is_tuple = false;      // a List from a tuple literal (repr uses parentheses)

  static Value undefined(std::string name = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  static Value make_list(List v = {});
  static Value make_dict(Dict v = {});
  static Value function(Function fn);
  static Value from_json(const nlohmann::json& j);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  bool is_list() const { return kind == Kind::Array; }
  bool is_dict() const { return kind == Kind::Object; }
  bool truthy() const;
  double as_double() const;

  // Python str(): what {{ value }} prints. Undefined prints as "".
  std::string str() const;
  // Python repr().
  std::string repr() const;
  // json.dumps(value, ensure_ascii=False, indent=indent (<0: none), separators defaults).
  std::string to_json(int indent = -1) const;
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // Positional `index` or keyword `name`, else `def`.
  Value get(size_t index, std::string_view name, Value def = Value::undefined()) const;
};

bool equals(const Value& a, const Value& b);  // Python ==
bool less(const Value& a, const Value& b);    // Python <; throws TemplateError for unorderable types
bool contains(const Value& container, const Value& item);  // Python `item in container`

// Python float repr (shortest round-trip: 1.0, 0.1, 1e+16, 1.5e-07, inf, nan).
std::string python_float_repr(double v);

// Unicode helpers on UTF-8 strings (Python indexes strings by code point).
std::vector<uint32_t> to_codepoints(const std::string& s);
std::string from_codepoints(const std::vector<uint32_t>& cps, size_t begin, size_t end);

}  // namespace moepack::jinja
