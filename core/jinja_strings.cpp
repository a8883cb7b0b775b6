// See jinja_strings.h.
#include "core/jinja_strings.h"

#include <algorithm>
#include <cstdio>
#include <cstdint>

#include "core/jinja_builtins.h"

namespace moepack::jinja {

void fail(const std::string& what) { throw TemplateError(what); }

bool py_isspace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string strip_impl(const std::string& s, const Value& chars, bool left, bool right) {
  const auto cps = to_codepoints(s);
  std::vector<uint32_t> set;
  const bool ws = chars.is_undefined() || chars.is_none();
  if (!ws) {
    if (!chars.is_string()) fail("strip arg must be None or str");
    set = to_codepoints(chars.s);
  }
  auto strip_it = [&](uint32_t c) { return ws ? py_isspace(c) : std::find(set.begin(), set.end(), c) != set.end(); };
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip_it(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(cps[e - 1])) --e;
  }
  return from_codepoints(cps, b, e);
}

List split_impl(const std::string& s, const Value& sep, int64_t maxsplit) {
  List out;
  if (sep.is_undefined() || sep.is_none()) {
    const auto cps = to_codepoints(s);
    size_t i = 0;
    int64_t splits = 0;
    while (true) {
      while (i < cps.size() && py_isspace(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && splits >= maxsplit) {
        size_t e = cps.size();
        while (e > i && py_isspace(cps[e - 1])) --e;
        out.push_back(Value::string(from_codepoints(cps, i, e)));
        break;
      }
      size_t j = i;
      while (j < cps.size() && !py_isspace(cps[j])) ++j;
      out.push_back(Value::string(from_codepoints(cps, i, j)));
      ++splits;
      i = j;
    }
    return out;
  }
  if (!sep.is_string()) fail("split: separator must be a string");
  if (sep.s.empty()) fail("empty separator");
  size_t pos = 0;
  int64_t splits = 0;
  while (true) {
    const size_t m = (maxsplit >= 0 && splits >= maxsplit) ? std::string::npos : s.find(sep.s, pos);
    if (m == std::string::npos) {
      out.push_back(Value::string(s.substr(pos)));
      break;
    }
    out.push_back(Value::string(s.substr(pos, m - pos)));
    pos = m + sep.s.size();
    ++splits;
  }
  return out;
}

static std::string ascii_map(std::string s, int (*f)(int)) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x80) c = static_cast<char>(f(static_cast<unsigned char>(c)));
  }
  return s;
}
std::string upper(const std::string& s) { return ascii_map(s, [](int c) { return std::toupper(c); }); }
std::string lower(const std::string& s) { return ascii_map(s, [](int c) { return std::tolower(c); }); }

std::string capitalize(const std::string& s) {
  std::string r = lower(s);
  if (!r.empty() && static_cast<unsigned char>(r[0]) < 0x80) r[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(r[0])));
  return r;
}

std::string title(const std::string& s) {  // Python str.title for ASCII letters
  std::string r = s;
  bool prev_cased = false;
  for (char& c : r) {
    const auto u = static_cast<unsigned char>(c);
    const bool alpha = u < 0x80 && std::isalpha(u);
    if (alpha) c = static_cast<char>(prev_cased ? std::tolower(u) : std::toupper(u));
    prev_cased = alpha;
  }
  return r;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) {  // Python inserts `to` between characters
    const auto cps = to_codepoints(s);
    std::string out;
    int64_t n = 0;
    for (size_t k = 0; k <= cps.size(); ++k) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
      }
      if (k < cps.size()) out += from_codepoints(cps, k, k + 1);
    }
    return out;
  }
  std::string out;
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t m = s.find(from, pos);
    if (m == std::string::npos) break;
    out.append(s, pos, m - pos);
    out += to;
    pos = m + from.size();
    ++n;
  }
  out.append(s, pos);
  return out;
}

Value tuple(List items) {
  Value v = Value::make_list(std::move(items));
  v.is_tuple = true;
  return v;
}

int64_t to_int(const Value& v) {
  if (v.kind == Value::Kind::Int) return v.i;
  if (v.kind == Value::Kind::Bool) return v.b ? 1 : 0;
  if (v.kind == Value::Kind::Float) return static_cast<int64_t>(v.f);
  fail("expected an integer, got " + v.repr());
}

bool starts_or_ends(const std::string& s, const Value& arg, bool start) {
  auto one = [&](const std::string& p) {
    if (p.size() > s.size()) return false;
    return start ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (arg.is_string()) return one(arg.s);
  if (arg.is_list()) {
    for (const Value& v : *arg.list) {
      if (v.is_string() && one(v.s)) return true;
    }
    return false;
  }
  fail("startswith/endswith: argument must be str or a tuple of str");
}

std::string py_format(const std::string& fmt, const Value& args) {  // printf-style `%`
  List items;
  if (args.is_list() && args.is_tuple) items = *args.list;
  else items.push_back(args);
  std::string out;
  size_t k = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) fail("incomplete format");
    const char c = fmt[i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (k >= items.size()) fail("not enough arguments for format string");
    const Value& v = items[k++];
    if (c == 's') out += v.str();
    else if (c == 'r') out += v.repr();
    else if (c == 'd' || c == 'i') out += std::to_string(to_int(v));
    else if (c == 'f') {
      char b[64];
      std::snprintf(b, sizeof b, "%f", v.as_double());
      out += b;
    } else fail(std::string("unsupported format character '") + c + "'");
  }
  return out;
}

std::string str_format(const std::string& fmt, CallArgs& a) {  // str.format with {} / {0} / {name}
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const size_t e = fmt.find('}', i);
      if (e == std::string::npos) fail("unmatched '{' in format string");
      const std::string field = fmt.substr(i + 1, e - i - 1);
      Value v;
      if (field.empty()) v = a.get(auto_idx++, "\x01");
      else if (std::isdigit(static_cast<unsigned char>(field[0]))) v = a.get(std::stoul(field), "\x01");
      else v = a.get(SIZE_MAX, field);
      out += v.str();
      i = e;
    } else {
      out += c;
    }
  }
  return out;
}


}  // namespace moepack::jinja
