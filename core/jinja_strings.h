// String and number helpers with Python semantics for the Jinja interpreter (internal).
#pragma once

#include <string>

#include "core/jinja_value.h"

namespace moepack::jinja {

[[noreturn]] void fail(const std::string& what);
bool py_isspace(uint32_t c);  // Python str.isspace() for one code point
std::string strip_impl(const std::string& s, const Value& chars, bool left, bool right);
List split_impl(const std::string& s, const Value& sep, int64_t maxsplit);
std::string upper(const std::string& s);  // ASCII letters only
std::string lower(const std::string& s);
std::string capitalize(const std::string& s);
std::string title(const std::string& s);
std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count);
Value tuple(List items);
int64_t to_int(const Value& v);
bool starts_or_ends(const std::string& s, const Value& arg, bool start);
std::string py_format(const std::string& fmt, const Value& args);  // printf-style `%`
std::string str_format(const std::string& fmt, CallArgs& a);       // str.format

}  // namespace moepack::jinja
