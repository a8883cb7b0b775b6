// Python methods of str / dict / list values and jinja2's attribute, item and slice lookup.
#include <algorithm>

#include "core/jinja_builtins.h"
#include "core/jinja_strings.h"

namespace moepack::jinja {

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


}  // namespace moepack::jinja
