// See jinja_builtins.h: filters, tests, arithmetic and globals. Behaviour follows Python 3 /
// jinja2 3.1 for the cases chat templates use.
#include "core/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/jinja_strings.h"

namespace moepack::jinja {

namespace {

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


// Integer results that do not fit in 64 bits (Python's integers would grow) are a template error, never
// a wrapped value or a trap (INT64_MIN // -1 raised SIGFPE before the sixtieth session).
// (A function of its own, not an argument beside the result: the order arguments are evaluated in is
// unspecified.)
void check_overflow(bool overflowed, const std::string& op) {
  if (overflowed) fail("integer overflow in " + op + " (the result does not fit in 64 bits)");
}
int64_t checked_add(int64_t a, int64_t b, const std::string& op) {
  int64_t r = 0;
  check_overflow(__builtin_add_overflow(a, b, &r), op);
  return r;
}
int64_t checked_sub(int64_t a, int64_t b, const std::string& op) {
  int64_t r = 0;
  check_overflow(__builtin_sub_overflow(a, b, &r), op);
  return r;
}
int64_t checked_mul(int64_t a, int64_t b, const std::string& op) {
  int64_t r = 0;
  check_overflow(__builtin_mul_overflow(a, b, &r), op);
  return r;
}

// a ** b for b >= 0 by squaring, overflow a template error.
int64_t int_power(int64_t a, int64_t b) {
  if (a == 0) return b == 0 ? 1 : 0;
  if (a == 1) return 1;
  if (a == -1) return b % 2 == 0 ? 1 : -1;
  int64_t r = 1;
  while (true) {
    if (b & 1) r = checked_mul(r, a, "**");
    b >>= 1;
    if (b == 0) return r;
    a = checked_mul(a, a, "**");
  }
}

// What `seq * n` may hold: a chat template repeats a separator or an indent, never megabytes (an
// unbounded repetition let a model's template take all of the machine's memory).
constexpr size_t kMaxRepeatedBytes = size_t{64} << 20;
constexpr size_t kMaxRepeatedItems = 10000000;  // as range()'s

}  // namespace

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  using K = Value::Kind;
  const bool nums = a.is_number() && b.is_number();
  const bool ints = nums && a.kind != K::Float && b.kind != K::Float;
  auto bad = [&]() -> Value { fail("unsupported operand types for " + op + ": " + a.repr() + " and " + b.repr()); };
  if (op == "+") {
    if (ints) return Value::integer(checked_add(to_int(a), to_int(b), op));
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
    if (ints) return Value::integer(checked_sub(to_int(a), to_int(b), op));
    if (nums) return Value::number(a.as_double() - b.as_double());
    return bad();
  }
  if (op == "*") {
    if (ints) return Value::integer(checked_mul(to_int(a), to_int(b), op));
    if (nums) return Value::number(a.as_double() * b.as_double());
    const Value& seq = a.is_number() ? b : a;
    const Value& cnt = a.is_number() ? a : b;
    if (cnt.kind == K::Int || cnt.kind == K::Bool) {
      const int64_t n = std::max<int64_t>(0, to_int(cnt));
      const size_t unit = seq.is_string() ? seq.s.size() : seq.is_list() ? seq.list->size() : 0;
      const size_t limit = seq.is_string() ? kMaxRepeatedBytes : kMaxRepeatedItems;
      if (unit > 0 && static_cast<uint64_t>(n) > limit / unit) {
        fail("repetition too large: " + std::to_string(unit) + (seq.is_string() ? " bytes" : " items") + " * " +
             std::to_string(n) + " exceeds " + std::to_string(limit) + (seq.is_string() ? " bytes" : " items"));
      }
      if (seq.is_string()) {
        if (unit == 0) return Value::string("");
        std::string r;
        r.reserve(unit * static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) r += seq.s;
        return Value::string(r);
      }
      if (seq.is_list()) {
        if (unit == 0) return Value::make_list(List{});
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
      if (y == -1) return Value::integer(checked_sub(0, x, op));  // x / -1 traps for INT64_MIN
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
      if (y == -1) return Value::integer(0);  // x % -1 traps for INT64_MIN
      int64_t r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value::integer(r);
    }
    double r = std::fmod(a.as_double(), b.as_double());
    if (r != 0 && ((r < 0) != (b.as_double() < 0))) r += b.as_double();
    return Value::number(r);
  }
  if (op == "**") {
    if (ints && to_int(b) >= 0) return Value::integer(int_power(to_int(a), to_int(b)));
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
    for (int64_t k = start; step > 0 ? k < stop : k > stop;) {
      out.push_back(Value::integer(k));
      if (out.size() > 10000000) fail("range too large");
      if (__builtin_add_overflow(k, step, &k)) break;  // past INT64_MAX / MIN: past stop too
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
