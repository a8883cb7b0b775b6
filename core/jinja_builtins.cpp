// See jinja_builtins.h. Behaviour follows Python 3 / jinja2 3.1 for the cases chat templates use.
#include "core/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/unicode_utf8.h"

namespace moepack::jinja {

namespace {

[[noreturn]] void fail(const std::string& what) { throw TemplateError(what); }

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

std::string ascii_map(std::string s, int (*f)(int)) {
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

Value method(const Value& self, const std::string& name) {
  if (self.is_string()) {
    const std::string s = self.s;
    auto fn = [](auto f) { return Value::function(f); };
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      const bool l = name != "rstrip", r = name != "lstrip";
      return fn([s, l, r](CallArgs& a) { return Value::string(strip_impl(s, a.get(0, "chars"), l, r)); });
    }
    if (name == "split") return fn([s](CallArgs& a) {
      const Value m = a.get(1, "maxsplit");
      return Value::make_list(split_impl(s, a.get(0, "sep"), m.is_undefined() ? -1 : to_int(m)));
    });
    if (name == "rsplit") return fn([s](CallArgs& a) {
      // rsplit without maxsplit equals split
      const Value m = a.get(1, "maxsplit");
      if (!m.is_undefined() && to_int(m) >= 0) {
        const Value sep = a.get(0, "sep");
        if (!sep.is_string()) fail("rsplit with maxsplit needs a separator");
        List parts = split_impl(s, sep, -1);
        int64_t keep = static_cast<int64_t>(parts.size()) - to_int(m);
        if (keep <= 1) return Value::make_list(parts);
        std::string head;
        for (int64_t k = 0; k < keep; ++k) head += (k ? sep.s : "") + parts[static_cast<size_t>(k)].s;
        List out{Value::string(head)};
        out.insert(out.end(), parts.begin() + keep, parts.end());
        return Value::make_list(out);
      }
      return Value::make_list(split_impl(s, a.get(0, "sep"), -1));
    });
    if (name == "splitlines") return fn([s](CallArgs&) {
      List out;
      size_t pos = 0;
      while (pos < s.size()) {
        size_t e = s.find_first_of("\r\n", pos);
        if (e == std::string::npos) {
          out.push_back(Value::string(s.substr(pos)));
          break;
        }
        out.push_back(Value::string(s.substr(pos, e - pos)));
        pos = e + ((s[e] == '\r' && e + 1 < s.size() && s[e + 1] == '\n') ? 2 : 1);
      }
      return Value::make_list(out);
    });
    if (name == "startswith") return fn([s](CallArgs& a) { return Value::boolean(starts_or_ends(s, a.get(0, "prefix"), true)); });
    if (name == "endswith") return fn([s](CallArgs& a) { return Value::boolean(starts_or_ends(s, a.get(0, "suffix"), false)); });
    if (name == "replace") return fn([s](CallArgs& a) {
      const Value c = a.get(2, "count");
      return Value::string(replace_all(s, a.get(0, "old").str(), a.get(1, "new").str(), c.is_undefined() ? -1 : to_int(c)));
    });
    if (name == "upper") return fn([s](CallArgs&) { return Value::string(upper(s)); });
    if (name == "lower") return fn([s](CallArgs&) { return Value::string(lower(s)); });
    if (name == "title") return fn([s](CallArgs&) { return Value::string(title(s)); });
    if (name == "capitalize") return fn([s](CallArgs&) { return Value::string(capitalize(s)); });
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex") return fn([s, name](CallArgs& a) {
      const std::string sub = a.get(0, "sub").str();
      const size_t m = (name[0] == 'r') ? s.rfind(sub) : s.find(sub);
      if (m == std::string::npos) {
        if (name == "index" || name == "rindex") fail("substring not found");
        return Value::integer(-1);
      }
      return Value::integer(static_cast<int64_t>(to_codepoints(s.substr(0, m)).size()));
    });
    if (name == "count") return fn([s](CallArgs& a) {
      const std::string sub = a.get(0, "sub").str();
      if (sub.empty()) return Value::integer(static_cast<int64_t>(to_codepoints(s).size()) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value::integer(n);
    });
    if (name == "join") return fn([s](CallArgs& a) {
      std::string out;
      bool first = true;
      for (const Value& v : iterate(a.get(0, "iterable"))) {
        if (!v.is_string()) fail("sequence item: expected str instance, " + v.repr() + " found");
        if (!first) out += s;
        first = false;
        out += v.s;
      }
      return Value::string(out);
    });
    if (name == "format") return fn([s](CallArgs& a) { return Value::string(str_format(s, a)); });
    auto pred = [&](bool (*p)(uint32_t)) {
      return fn([s, p](CallArgs&) {
        const auto cps = to_codepoints(s);
        if (cps.empty()) return Value::boolean(false);
        for (uint32_t c : cps) {
          if (!p(c)) return Value::boolean(false);
        }
        return Value::boolean(true);
      });
    };
    if (name == "isdigit") return pred([](uint32_t c) { return c >= '0' && c <= '9'; });
    if (name == "isspace") return pred([](uint32_t c) { return py_isspace(c); });
    if (name == "isalpha") return pred([](uint32_t c) { return c < 0x80 ? std::isalpha(static_cast<int>(c)) != 0 : c > 0x7F; });
    if (name == "isalnum") return pred([](uint32_t c) { return c < 0x80 ? std::isalnum(static_cast<int>(c)) != 0 : c > 0x7F; });
    if (name == "isupper") return fn([s](CallArgs&) { return Value::boolean(upper(s) == s && lower(s) != s); });
    if (name == "islower") return fn([s](CallArgs&) { return Value::boolean(lower(s) == s && upper(s) != s); });
    return Value::undefined(name);
  }
  if (self.is_dict() && !self.is_namespace) {
    const std::shared_ptr<Dict> d = self.dict;
    auto fn = [](auto f) { return Value::function(f); };
    if (name == "get") return fn([d](CallArgs& a) {
      const Value k = a.get(0, "key");
      const Value* v = k.is_string() ? d->find(k.s) : nullptr;
      return v ? *v : a.get(1, "default", Value::none());
    });
    if (name == "items") return fn([d](CallArgs&) {
      List out;
      for (const auto& [k, v] : d->items) out.push_back(tuple({Value::string(k), v}));
      return Value::make_list(out);
    });
    if (name == "keys") return fn([d](CallArgs&) {
      List out;
      for (const auto& kv : d->items) out.push_back(Value::string(kv.first));
      return Value::make_list(out);
    });
    if (name == "values") return fn([d](CallArgs&) {
      List out;
      for (const auto& kv : d->items) out.push_back(kv.second);
      return Value::make_list(out);
    });
    if (name == "pop") return fn([d](CallArgs& a) {
      const std::string k = a.get(0, "key").str();
      if (const Value* v = d->find(k)) {
        Value r = *v;
        d->erase(k);
        return r;
      }
      const Value def = a.get(1, "default");
      if (def.is_undefined()) fail("KeyError: " + k);
      return def;
    });
    if (name == "copy") return fn([d](CallArgs&) { return Value::make_dict(*d); });
    if (name == "update") return fn([d](CallArgs& a) {
      const Value o = a.get(0, "other");
      if (o.is_dict()) {
        for (const auto& [k, v] : o.dict->items) d->set(k, v);
      }
      for (const auto& [k, v] : a.kw) d->set(k, v);
      return Value::none();
    });
    return Value::undefined(name);
  }
  if (self.is_list()) {
    const std::shared_ptr<List> l = self.list;
    auto fn = [](auto f) { return Value::function(f); };
    if (name == "append") return fn([l](CallArgs& a) {
      l->push_back(a.get(0, "object"));
      return Value::none();
    });
    if (name == "extend") return fn([l](CallArgs& a) {
      for (const Value& v : iterate(a.get(0, "iterable"))) l->push_back(v);
      return Value::none();
    });
    if (name == "insert") return fn([l](CallArgs& a) {
      int64_t i = to_int(a.get(0, "index"));
      const auto n = static_cast<int64_t>(l->size());
      if (i < 0) i = std::max<int64_t>(0, i + n);
      i = std::min(i, n);
      l->insert(l->begin() + i, a.get(1, "object"));
      return Value::none();
    });
    if (name == "pop") return fn([l](CallArgs& a) {
      if (l->empty()) fail("pop from empty list");
      const Value iv = a.get(0, "index");
      int64_t i = iv.is_undefined() ? -1 : to_int(iv);
      const auto n = static_cast<int64_t>(l->size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) fail("pop index out of range");
      Value r = (*l)[static_cast<size_t>(i)];
      l->erase(l->begin() + i);
      return r;
    });
    if (name == "index") return fn([l](CallArgs& a) {
      const Value x = a.get(0, "value");
      for (size_t k = 0; k < l->size(); ++k) {
        if (equals((*l)[k], x)) return Value::integer(static_cast<int64_t>(k));
      }
      fail(x.repr() + " is not in list");
    });
    if (name == "count") return fn([l](CallArgs& a) {
      const Value x = a.get(0, "value");
      return Value::integer(std::count_if(l->begin(), l->end(), [&](const Value& v) { return equals(v, x); }));
    });
    if (name == "copy") return fn([l](CallArgs&) { return Value::make_list(*l); });
    return Value::undefined(name);
  }
  return Value::undefined(name);
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// attribute="a.b" lookup as jinja2's make_attrgetter (getitem semantics, dots for nesting).
Value attr_path(const Value& item, const Value& attribute) {
  if (attribute.kind == Value::Kind::Int) return get_item(item, attribute);
  Value v = item;
  const std::string path = attribute.str();
  size_t pos = 0;
  while (true) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    v = get_item(v, digits ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return v;
}

CallArgs rest_args(const CallArgs& a, size_t from) {
  CallArgs r;
  for (size_t k = from; k < a.pos.size(); ++k) r.pos.push_back(a.pos[k]);
  r.kw = a.kw;
  return r;
}

Value select_like(const Value& input, CallArgs& a, bool by_attr, bool keep) {
  List out;
  const Value attribute = by_attr ? a.get(0, "attribute") : Value();
  const size_t test_pos = by_attr ? 1 : 0;
  const bool has_test = a.pos.size() > test_pos;
  const std::string test = has_test ? a.pos[test_pos].str() : "";
  CallArgs targs = rest_args(a, test_pos + 1);
  targs.kw.clear();
  for (const Value& item : iterate(input)) {
    const Value v = by_attr ? attr_path(item, attribute) : item;
    const bool r = has_test ? apply_test(test, v, targs) : v.truthy();
    if (r == keep) out.push_back(item);
  }
  return Value::make_list(out);
}

}  // namespace

List iterate(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Array: return *v.list;
    case Value::Kind::Object: {
      List out;
      for (const auto& kv : v.dict->items) out.push_back(Value::string(kv.first));
      return out;
    }
    case Value::Kind::String: {
      List out;
      const auto cps = to_codepoints(v.s);
      for (size_t k = 0; k < cps.size(); ++k) out.push_back(Value::string(from_codepoints(cps, k, k + 1)));
      return out;
    }
    case Value::Kind::Undefined: return {};
    default: fail(v.repr() + " is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Array: return static_cast<int64_t>(v.list->size());
    case Value::Kind::Object: return static_cast<int64_t>(v.dict->items.size());
    case Value::Kind::String: return static_cast<int64_t>(to_codepoints(v.s).size());
    case Value::Kind::Undefined: return 0;
    default: fail("object of type " + v.repr() + " has no len()");
  }
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) {
    fail(obj.s.empty() ? "'" + name + "' of an undefined value is undefined" : "'" + obj.s + "' is undefined");
  }
  if (obj.is_dict()) {
    if (!obj.is_namespace) {
      Value m = method(obj, name);
      if (!m.is_undefined()) return m;
    }
    if (const Value* v = obj.dict->find(name)) return *v;
    return Value::undefined(name);
  }
  return method(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail("'" + obj.s + "' is undefined");
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.dict->find(key.s)) return *v;
      if (!obj.is_namespace) return method(obj, key.s);
    }
    return Value::undefined(key.str());
  }
  if ((obj.is_list() || obj.is_string()) && (key.kind == Value::Kind::Int || key.kind == Value::Kind::Bool)) {
    int64_t i = to_int(key);
    if (obj.is_list()) {
      const auto n = static_cast<int64_t>(obj.list->size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined("[" + key.str() + "]");
      return (*obj.list)[static_cast<size_t>(i)];
    }
    const auto cps = to_codepoints(obj.s);
    const auto n = static_cast<int64_t>(cps.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined("[" + key.str() + "]");
    return Value::string(from_codepoints(cps, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
  }
  if (key.is_string()) return method(obj, key.s);
  return Value::undefined(key.str());
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  const bool is_str = obj.is_string();
  if (!is_str && !obj.is_list()) {
    if (obj.is_undefined()) fail("'" + obj.s + "' is undefined");
    fail("object " + obj.repr() + " is not subscriptable");
  }
  std::vector<uint32_t> cps;
  if (is_str) cps = to_codepoints(obj.s);
  const auto n = static_cast<int64_t>(is_str ? cps.size() : obj.list->size());
  const int64_t st = (step.is_undefined() || step.is_none()) ? 1 : to_int(step);
  if (st == 0) fail("slice step cannot be zero");
  auto norm = [&](const Value& v, int64_t def) {
    if (v.is_undefined() || v.is_none()) return def;
    int64_t x = to_int(v);
    if (x < 0) x += n;
    if (st > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t b = norm(start, st > 0 ? 0 : n - 1);
  const int64_t e = norm(stop, st > 0 ? n : -1);
  List items;
  std::string s;
  for (int64_t k = b; st > 0 ? k < e : k > e; k += st) {
    if (is_str) s += from_codepoints(cps, static_cast<size_t>(k), static_cast<size_t>(k) + 1);
    else items.push_back((*obj.list)[static_cast<size_t>(k)]);
  }
  if (is_str) return Value::string(s);
  Value r = Value::make_list(std::move(items));
  r.is_tuple = obj.is_tuple;
  return r;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  using K = Value::Kind;
  const bool nums = a.is_number() && b.is_number();
  const bool ints = nums && a.kind != K::Float && b.kind != K::Float;
  auto bad = [&]() -> Value { fail("unsupported operand types for " + op + ": " + a.repr() + " and " + b.repr()); };
  if (op == "+") {
    if (ints) return Value::integer(to_int(a) + to_int(b));
    if (nums) return Value::number(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) return Value::string(a.s + b.s);
    if (a.is_list() && b.is_list()) {
      List l = *a.list;
      l.insert(l.end(), b.list->begin(), b.list->end());
      return Value::make_list(l);
    }
    return bad();
  }
  if (op == "-") {
    if (ints) return Value::integer(to_int(a) - to_int(b));
    if (nums) return Value::number(a.as_double() - b.as_double());
    return bad();
  }
  if (op == "*") {
    if (ints) return Value::integer(to_int(a) * to_int(b));
    if (nums) return Value::number(a.as_double() * b.as_double());
    const Value& seq = a.is_number() ? b : a;
    const Value& cnt = a.is_number() ? a : b;
    if (cnt.kind == K::Int || cnt.kind == K::Bool) {
      const int64_t n = std::max<int64_t>(0, to_int(cnt));
      if (seq.is_string()) {
        std::string r;
        for (int64_t k = 0; k < n; ++k) r += seq.s;
        return Value::string(r);
      }
      if (seq.is_list()) {
        List r;
        for (int64_t k = 0; k < n; ++k) r.insert(r.end(), seq.list->begin(), seq.list->end());
        return Value::make_list(r);
      }
    }
    return bad();
  }
  if (op == "/") {
    if (!nums) return bad();
    if (b.as_double() == 0) fail("division by zero");
    return Value::number(a.as_double() / b.as_double());
  }
  if (op == "//") {
    if (!nums) return bad();
    if (b.as_double() == 0) fail("integer division or modulo by zero");
    if (ints) {
      const int64_t x = to_int(a), y = to_int(b);
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      return Value::integer(q);
    }
    return Value::number(std::floor(a.as_double() / b.as_double()));
  }
  if (op == "%") {
    if (a.is_string()) return Value::string(py_format(a.s, b));
    if (!nums) return bad();
    if (b.as_double() == 0) fail("integer division or modulo by zero");
    if (ints) {
      const int64_t x = to_int(a), y = to_int(b);
      int64_t r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value::integer(r);
    }
    double r = std::fmod(a.as_double(), b.as_double());
    if (r != 0 && ((r < 0) != (b.as_double() < 0))) r += b.as_double();
    return Value::number(r);
  }
  if (op == "**") {
    if (ints && to_int(b) >= 0) {
      int64_t r = 1;
      for (int64_t k = 0; k < to_int(b); ++k) r *= to_int(a);
      return Value::integer(r);
    }
    if (nums) return Value::number(std::pow(a.as_double(), b.as_double()));
    return bad();
  }
  return bad();
}

bool apply_test(const std::string& name, const Value& v, CallArgs& a) {
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == K::Int;
  if (name == "float") return v.kind == K::Float;
  if (name == "boolean") return v.kind == K::Bool;
  if (name == "true") return v.kind == K::Bool && v.b;
  if (name == "false") return v.kind == K::Bool && !v.b;
  if (name == "mapping") return v.is_dict() && !v.is_namespace;
  if (name == "iterable") return v.is_list() || v.is_string() || (v.is_dict() && !v.is_namespace) || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_string() || (v.is_dict() && !v.is_namespace) || v.is_undefined();
  if (name == "callable") return v.kind == K::Callable;
  if (name == "odd") return to_int(v) % 2 != 0;
  if (name == "even") return to_int(v) % 2 == 0;
  if (name == "divisibleby") return to_int(v) % to_int(a.get(0, "num")) == 0;
  if (name == "lower") return v.is_string() && lower(v.s) == v.s;
  if (name == "upper") return v.is_string() && upper(v.s) == v.s;
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, a.get(0, "other"));
  if (name == "ne" || name == "!=") return !equals(v, a.get(0, "other"));
  if (name == "lt" || name == "lessthan" || name == "<") return less(v, a.get(0, "other"));
  if (name == "gt" || name == "greaterthan" || name == ">") return less(a.get(0, "other"), v);
  if (name == "le" || name == "<=") return !less(a.get(0, "other"), v);
  if (name == "ge" || name == ">=") return !less(v, a.get(0, "other"));
  if (name == "in") return contains(a.get(0, "seq"), v);
  if (name == "sameas") {
    const Value o = a.get(0, "other");
    if (v.kind != o.kind) return false;
    if (v.is_list()) return v.list == o.list;
    if (v.is_dict()) return v.dict == o.dict;
    return equals(v, o);
  }
  fail("no test named '" + name + "'");
}

Value apply_filter(const std::string& name, const Value& v, CallArgs& a) {
  using K = Value::Kind;
  if (name == "safe") return v;
  if (name == "string") return Value::string(v.str());
  if (name == "trim") return Value::string(strip_impl(v.str(), a.get(0, "chars"), true, true));
  if (name == "length" || name == "count") return Value::integer(length(v));
  if (name == "upper") return Value::string(upper(v.str()));
  if (name == "lower") return Value::string(lower(v.str()));
  if (name == "capitalize") return Value::string(capitalize(v.str()));
  if (name == "title") return Value::string(title(v.str()));
  if (name == "escape" || name == "e" || name == "forceescape") return Value::string(html_escape(v.str()));
  if (name == "tojson") {
    const Value ind = a.get(0, "indent");
    const Value sort = a.get(99, "sort_keys");
    if (sort.truthy() && v.is_dict()) {
      // only the top level is sorted here; nested dicts keep their order
      Value c = Value::make_dict(*v.dict);
      std::sort(c.dict->items.begin(), c.dict->items.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      return Value::string(c.to_json(ind.is_undefined() || ind.is_none() ? -1 : static_cast<int>(to_int(ind))));
    }
    return Value::string(v.to_json(ind.is_undefined() || ind.is_none() ? -1 : static_cast<int>(to_int(ind))));
  }
  if (name == "default" || name == "d") {
    const bool boolean = a.get(1, "boolean").truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return a.get(0, "default_value", Value::string(""));
    return v;
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::make_list();
    if (!v.is_dict()) fail("items filter: not a mapping");
    return method(v, "items").fn->operator()(a);
  }
  if (name == "list") return Value::make_list(iterate(v));
  if (name == "first") {
    const List l = iterate(v);
    return l.empty() ? Value::undefined("first") : l.front();
  }
  if (name == "last") {
    const List l = iterate(v);
    return l.empty() ? Value::undefined("last") : l.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      auto cps = to_codepoints(v.s);
      std::reverse(cps.begin(), cps.end());
      return Value::string(from_codepoints(cps, 0, cps.size()));
    }
    List l = iterate(v);
    std::reverse(l.begin(), l.end());
    return Value::make_list(l);
  }
  if (name == "join") {
    const Value sep = a.get(0, "d", Value::string(""));
    const Value attribute = a.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& x : iterate(v)) {
      if (!first) out += sep.str();
      first = false;
      out += (attribute.is_undefined() ? x : attr_path(x, attribute)).str();
    }
    return Value::string(out);
  }
  if (name == "map") {
    List out;
    const Value attribute = a.get(SIZE_MAX, "attribute");
    if (!attribute.is_undefined()) {
      const Value def = a.get(SIZE_MAX, "default");
      for (const Value& x : iterate(v)) {
        Value r = attr_path(x, attribute);
        out.push_back(r.is_undefined() && !def.is_undefined() ? def : r);
      }
      return Value::make_list(out);
    }
    if (a.pos.empty()) fail("map: no filter or attribute given");
    const std::string f = a.pos[0].str();
    CallArgs fa = rest_args(a, 1);
    for (const Value& x : iterate(v)) out.push_back(apply_filter(f, x, fa));
    return Value::make_list(out);
  }
  if (name == "select") return select_like(v, a, false, true);
  if (name == "reject") return select_like(v, a, false, false);
  if (name == "selectattr") return select_like(v, a, true, true);
  if (name == "rejectattr") return select_like(v, a, true, false);
  if (name == "unique") {
    List out;
    for (const Value& x : iterate(v)) {
      if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return equals(x, y); })) out.push_back(x);
    }
    return Value::make_list(out);
  }
  if (name == "sort") {
    List l = iterate(v);
    const bool rev = a.get(0, "reverse").truthy();
    const bool cs = a.get(1, "case_sensitive").truthy();
    const Value attribute = a.get(2, "attribute");
    auto key = [&](const Value& x) {
      Value k = attribute.is_undefined() ? x : attr_path(x, attribute);
      if (!cs && k.is_string()) k = Value::string(lower(k.s));
      return k;
    };
    std::stable_sort(l.begin(), l.end(), [&](const Value& x, const Value& y) { return rev ? less(key(y), key(x)) : less(key(x), key(y)); });
    return Value::make_list(l);
  }
  if (name == "sum") {
    const Value attribute = a.get(0, "attribute");
    Value acc = a.get(1, "start", Value::integer(0));
    for (const Value& x : iterate(v)) acc = arithmetic("+", acc, attribute.is_undefined() ? x : attr_path(x, attribute));
    return acc;
  }
  if (name == "min" || name == "max") {
    const List l = iterate(v);
    if (l.empty()) return Value::undefined(name);
    Value best = l.front();
    for (const Value& x : l) {
      if (name == "min" ? less(x, best) : less(best, x)) best = x;
    }
    return best;
  }
  if (name == "int") {
    if (v.kind == K::Int) return v;
    if (v.kind == K::Bool) return Value::integer(v.b ? 1 : 0);
    if (v.kind == K::Float) return Value::integer(static_cast<int64_t>(v.f));
    if (v.is_string()) {
      char* end = nullptr;
      const std::string t = strip_impl(v.s, Value(), true, true);
      const long long x = std::strtoll(t.c_str(), &end, 10);
      if (end && *end == '\0' && !t.empty()) return Value::integer(x);
      const double d = std::strtod(t.c_str(), &end);
      if (end && *end == '\0' && !t.empty()) return Value::integer(static_cast<int64_t>(d));
    }
    return a.get(0, "default", Value::integer(0));
  }
  if (name == "float") {
    if (v.is_number()) return Value::number(v.as_double());
    if (v.is_string()) {
      char* end = nullptr;
      const double d = std::strtod(v.s.c_str(), &end);
      if (end && *end == '\0' && !v.s.empty()) return Value::number(d);
    }
    return a.get(0, "default", Value::number(0));
  }
  if (name == "abs") {
    if (v.kind == K::Int) return Value::integer(v.i < 0 ? -v.i : v.i);
    return Value::number(std::fabs(v.as_double()));
  }
  if (name == "round") {
    const int64_t prec = to_int(a.get(0, "precision", Value::integer(0)));
    const std::string m = a.get(1, "method", Value::string("common")).str();
    const double p = std::pow(10.0, static_cast<double>(prec));
    const double x = v.as_double() * p;
    double r = m == "ceil" ? std::ceil(x) : m == "floor" ? std::floor(x) : std::round(x);
    return Value::number(r / p);
  }
  if (name == "replace") {
    const Value c = a.get(2, "count");
    return Value::string(replace_all(v.str(), a.get(0, "old").str(), a.get(1, "new").str(),
                                     c.is_undefined() || c.is_none() ? -1 : to_int(c)));
  }
  if (name == "indent") {
    const Value w = a.get(0, "width", Value::integer(4));
    const std::string ind = w.is_string() ? w.s : std::string(static_cast<size_t>(to_int(w)), ' ');
    const bool first = a.get(1, "first").truthy();
    const bool blank = a.get(2, "blank").truthy();
    std::vector<std::string> lines;
    const std::string s = v.str() + "\n";
    size_t pos = 0;
    while (pos < s.size()) {
      const size_t e = s.find('\n', pos);
      lines.push_back(s.substr(pos, e - pos));
      pos = e + 1;
    }
    std::string out = lines.empty() ? "" : lines[0];
    for (size_t k = 1; k < lines.size(); ++k) {
      out += "\n";
      if (blank || !lines[k].empty()) out += ind;
      out += lines[k];
    }
    return Value::string(first ? ind + out : out);
  }
  if (name == "wordcount") return Value::integer(static_cast<int64_t>(split_impl(v.str(), Value(), -1).size()));
  if (name == "format") {
    List items = a.pos;
    return Value::string(py_format(v.str(), tuple(items)));
  }
  if (name == "attr") return get_attr(v, a.get(0, "name").str());
  if (name == "dictsort") {
    if (!v.is_dict()) fail("dictsort: not a mapping");
    List l = method(v, "items").fn->operator()(a).list ? *method(v, "items").fn->operator()(a).list : List{};
    const bool by_value = a.get(1, "by").str() == "value";
    std::stable_sort(l.begin(), l.end(), [&](const Value& x, const Value& y) {
      return less((*x.list)[by_value ? 1 : 0], (*y.list)[by_value ? 1 : 0]);
    });
    return Value::make_list(l);
  }
  fail("no filter named '" + name + "'");
}

void add_builtin_globals(Dict& g) {
  g.set("range", Value::function([](CallArgs& a) {
    int64_t start = 0, stop = 0, step = 1;
    if (a.pos.size() == 1) {
      stop = to_int(a.pos[0]);
    } else if (a.pos.size() >= 2) {
      start = to_int(a.pos[0]);
      stop = to_int(a.pos[1]);
      if (a.pos.size() >= 3) step = to_int(a.pos[2]);
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    List out;
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
      out.push_back(Value::integer(k));
      if (out.size() > 10000000) fail("range too large");
    }
    return Value::make_list(out);
  }));
  g.set("dict", Value::function([](CallArgs& a) {
    Dict d;
    if (!a.pos.empty() && a.pos[0].is_dict()) d = *a.pos[0].dict;
    for (const auto& [k, v] : a.kw) d.set(k, v);
    return Value::make_dict(d);
  }));
  g.set("namespace", Value::function([](CallArgs& a) {
    Dict d;
    if (!a.pos.empty() && a.pos[0].is_dict()) d = *a.pos[0].dict;
    for (const auto& [k, v] : a.kw) d.set(k, v);
    Value ns = Value::make_dict(d);
    ns.is_namespace = true;
    return ns;
  }));
}

}  // namespace moepack::jinja
