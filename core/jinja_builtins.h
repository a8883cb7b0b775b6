// Filters, tests, globals and Python methods of the Jinja interpreter (internal).
#pragma once

#include <string>
#include <string_view>

#include "core/jinja_value.h"

namespace moepack::jinja {

// The bound method `name` of a str / dict / list value, or Undefined.
Value method(const Value& self, const std::string& name);

// jinja2's environment.getattr / getitem: `obj.name` (methods first, then keys) and `obj[key]`
// (keys first). A missing key gives Undefined; any lookup on Undefined throws.
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Applies filter `name`. Throws TemplateError for an unknown filter.
Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
// Applies test `name` (`x is name(args)`).
bool apply_test(const std::string& name, const Value& input, CallArgs& args);
// Iteration order of a value in `for`: list items, dict keys, string characters; Undefined is empty.
List iterate(const Value& v);
// Python len().
int64_t length(const Value& v);
// Binary arithmetic (+ - * / // % **).
Value arithmetic(const std::string& op, const Value& a, const Value& b);

// Globals every render gets: range, dict, namespace.
void add_builtin_globals(Dict& globals);

}  // namespace moepack::jinja
