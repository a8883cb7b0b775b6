// Jinja evaluator (internal): walks the AST of core/jinja_parser.cpp.
//
// Scoping as in jinja2: a for loop and a macro call open a new scope (assignments inside do not
// leak out); if-blocks do not. Macros resolve free names in the template's top-level scope.
#include <algorithm>
#include <unordered_map>

#include "core/jinja.h"
#include "core/jinja_builtins.h"

namespace moepack::jinja {

namespace {

struct Frame {
  std::unordered_map<std::string, Value> vars;
  Frame* parent = nullptr;
  Value lookup(const std::string& name) const {
    for (const Frame* f = this; f; f = f->parent) {
      const auto it = f->vars.find(name);
      if (it != f->vars.end()) return it->second;
    }
    return Value::undefined(name);
  }
};

enum class Flow { Normal, Break, Continue };

class Evaluator {
 public:
  explicit Evaluator(Frame& root) : root_(root) {}

  // Everything a template writes goes through here: a text (or a block's text: {% set %} blocks,
  // filter and call blocks) of more than kMaxRenderedBytes is an error, not all of the machine's memory.
  static constexpr size_t kMaxRenderedBytes = size_t{256} << 20;
  static void emit(const Node& n, std::string& out, const std::string& s) {
    if (s.size() > kMaxRenderedBytes - std::min(out.size(), kMaxRenderedBytes)) {
      throw TemplateError("line " + std::to_string(n.line) + ": the rendered text exceeds " +
                          std::to_string(kMaxRenderedBytes >> 20) + " MiB");
    }
    out += s;
  }

  Flow exec(const Node& n, Frame& f, std::string& out) {
    switch (n.kind) {
      case Node::Kind::Body:
        for (const NodePtr& c : n.a) {
          const Flow fl = exec(*c, f, out);
          if (fl != Flow::Normal) return fl;
        }
        return Flow::Normal;
      case Node::Kind::Text: emit(n, out, n.name); return Flow::Normal;
      case Node::Kind::Print: emit(n, out, eval(*n.x, f).str()); return Flow::Normal;
      case Node::Kind::If:
        for (size_t k = 0; k < n.a.size(); ++k) {
          if (eval(*n.a[k], f).truthy()) return exec(*n.b[k], f, out);
        }
        if (n.w) return exec(*n.w, f, out);
        return Flow::Normal;
      case Node::Kind::For: return exec_for(n, f, out);
      case Node::Kind::Set: assign(n, eval(*n.x, f), f); return Flow::Normal;
      case Node::Kind::SetBlock: {
        std::string s;
        exec(*n.x, f, s);
        assign(n, Value::string(s), f);
        return Flow::Normal;
      }
      case Node::Kind::Macro: f.vars[n.name] = make_macro(n); return Flow::Normal;
      case Node::Kind::With: {
        Frame wf;
        wf.parent = &f;
        for (size_t k = 0; k < n.targets.size(); ++k) wf.vars[n.targets[k]] = eval(*n.a[k], wf);
        return exec(*n.x, wf, out);
      }
      case Node::Kind::FilterBlock: {
        Frame ff;
        ff.parent = &f;
        std::string body;
        const Flow fl = exec(*n.x, f, body);
        ff.vars["\x01filter-body"] = Value::string(body);
        emit(n, out, eval(*n.y, ff).str());
        return fl;
      }
      case Node::Kind::Break: return Flow::Break;
      case Node::Kind::Continue: return Flow::Continue;
      case Node::Kind::CallBlock: {
        const Node& body = *n.y;
        Value caller = Value::function([this, &body, &f](CallArgs&) {
          std::string s;
          exec(body, f, s);
          return Value::string(s);
        });
        const Node& call = *n.x;
        if (call.kind != Node::Kind::Call) throw TemplateError("{% call %} needs a macro call");
        const Value fn = eval(*call.x, f);
        CallArgs args = eval_args(call, f);
        args.kw.emplace_back("caller", caller);
        emit(n, out, invoke(fn, args).str());
        return Flow::Normal;
      }
      default: throw TemplateError("line " + std::to_string(n.line) + ": expression used as a statement");
    }
  }

  Value eval(const Node& n, Frame& f) {
    switch (n.kind) {
      case Node::Kind::Literal: return n.value;
      case Node::Kind::Name: return f.lookup(n.name);
      case Node::Kind::ListLit:
      case Node::Kind::TupleLit: {
        List l;
        for (const NodePtr& c : n.a) l.push_back(eval(*c, f));
        Value v = Value::make_list(std::move(l));
        v.is_tuple = n.kind == Node::Kind::TupleLit;
        return v;
      }
      case Node::Kind::DictLit: {
        Dict d;
        for (size_t k = 0; k < n.a.size(); ++k) d.set(eval(*n.a[k], f).str(), eval(*n.b[k], f));
        return Value::make_dict(std::move(d));
      }
      case Node::Kind::GetAttr: return with_line(n, [&] { return get_attr(eval(*n.x, f), n.name); });
      case Node::Kind::GetItem: {
        const Value obj = eval(*n.x, f);
        const Value key = eval(*n.y, f);
        return with_line(n, [&] { return get_item(obj, key); });
      }
      case Node::Kind::Slice: {
        const Value obj = eval(*n.x, f);
        const Value a = n.y ? eval(*n.y, f) : Value::none();
        const Value b = n.z ? eval(*n.z, f) : Value::none();
        const Value c = n.w ? eval(*n.w, f) : Value::none();
        return with_line(n, [&] { return slice(obj, a, b, c); });
      }
      case Node::Kind::Call: {
        const Value fn = eval(*n.x, f);
        CallArgs args = eval_args(n, f);
        return with_line(n, [&] { return invoke(fn, args); });
      }
      case Node::Kind::Filter: {
        const Value v = eval(*n.x, f);
        CallArgs args = eval_args(n, f);
        return with_line(n, [&] { return apply_filter(n.name, v, args); });
      }
      case Node::Kind::Test: {
        const Value v = eval(*n.x, f);
        CallArgs args = eval_args(n, f);
        return with_line(n, [&] { return Value::boolean(apply_test(n.name, v, args) != n.negated); });
      }
      case Node::Kind::Neg: {
        const Value v = eval(*n.x, f);
        if (v.kind == Value::Kind::Int) return Value::integer(-v.i);
        if (v.kind == Value::Kind::Bool) return Value::integer(v.b ? -1 : 0);
        return with_line(n, [&] { return Value::number(-v.as_double()); });
      }
      case Node::Kind::Pos: return eval(*n.x, f);
      case Node::Kind::Not: return Value::boolean(!eval(*n.x, f).truthy());
      case Node::Kind::And: {
        Value l = eval(*n.x, f);
        return l.truthy() ? eval(*n.y, f) : l;
      }
      case Node::Kind::Or: {
        Value l = eval(*n.x, f);
        return l.truthy() ? l : eval(*n.y, f);
      }
      case Node::Kind::CondExpr:
        if (eval(*n.x, f).truthy()) return eval(*n.y, f);
        return n.z ? eval(*n.z, f) : Value::undefined();
      case Node::Kind::Concat: {
        std::string s;
        for (const NodePtr& c : n.a) s += eval(*c, f).str();
        return Value::string(s);
      }
      case Node::Kind::Binary: {
        const Value a = eval(*n.x, f);
        const Value b = eval(*n.y, f);
        return with_line(n, [&] { return arithmetic(n.name, a, b); });
      }
      case Node::Kind::Compare: {
        Value left = eval(*n.x, f);
        for (size_t k = 0; k < n.a.size(); ++k) {
          const Value right = eval(*n.a[k], f);
          const std::string& op = n.kw_names[k];
          const bool r = with_line(n, [&] {
            if (op == "==") return equals(left, right);
            if (op == "!=") return !equals(left, right);
            if (op == "<") return less(left, right);
            if (op == ">") return less(right, left);
            if (op == "<=") return !less(right, left);
            if (op == ">=") return !less(left, right);
            if (op == "in") return contains(right, left);
            return !contains(right, left);  // notin
          });
          if (!r) return Value::boolean(false);
          left = right;
        }
        return Value::boolean(true);
      }
      default: throw TemplateError("line " + std::to_string(n.line) + ": statement used as an expression");
    }
  }

 private:
  template <typename F>
  auto with_line(const Node& n, F&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const TemplateError& e) {
      const std::string w = e.what();
      if (w.rfind("line ", 0) == 0 || w.rfind("template", 0) == 0 || raised_) throw;
      throw TemplateError("line " + std::to_string(n.line) + ": " + w);
    }
  }

  CallArgs eval_args(const Node& n, Frame& f) {
    CallArgs args;
    for (const NodePtr& c : n.a) args.pos.push_back(eval(*c, f));
    for (size_t k = 0; k < n.kw_names.size(); ++k) args.kw.emplace_back(n.kw_names[k], eval(*n.b[k], f));
    return args;
  }

  Value invoke(const Value& fn, CallArgs& args) {
    if (fn.kind != Value::Kind::Callable) {
      if (fn.is_undefined()) throw TemplateError("'" + fn.s + "' is undefined");
      throw TemplateError(fn.repr() + " is not callable");
    }
    return (*fn.fn)(args);
  }

  void assign(const Node& n, const Value& v, Frame& f) {
    if (!n.name.empty()) {  // set ns.attr = v
      Value ns = f.lookup(n.targets[0]);
      if (!ns.is_dict() || !ns.is_namespace) throw TemplateError("line " + std::to_string(n.line) + ": cannot assign attribute on non-namespace object");
      ns.dict->set(n.name, v);
      return;
    }
    if (n.targets.size() == 1) {
      f.vars[n.targets[0]] = v;
      return;
    }
    const List items = iterate(v);
    if (items.size() != n.targets.size()) throw TemplateError("line " + std::to_string(n.line) + ": wrong number of values to unpack");
    for (size_t k = 0; k < items.size(); ++k) f.vars[n.targets[k]] = items[k];
  }

  Flow exec_for(const Node& n, Frame& f, std::string& out) {
    const Value seq = eval(*n.x, f);
    List items = with_line(n, [&] { return iterate(seq); });
    Frame loop_frame;
    loop_frame.parent = &f;
    auto bind = [&](Frame& fr, const Value& item) {
      if (n.targets.size() == 1) {
        fr.vars[n.targets[0]] = item;
        return;
      }
      const List parts = iterate(item);
      if (parts.size() != n.targets.size()) throw TemplateError("line " + std::to_string(n.line) + ": wrong number of values to unpack in for loop");
      for (size_t k = 0; k < parts.size(); ++k) fr.vars[n.targets[k]] = parts[k];
    };
    if (n.y) {  // {% for x in xs if cond %}: filter first, loop.* counts the kept items
      List kept;
      for (const Value& item : items) {
        Frame tmp;
        tmp.parent = &f;
        bind(tmp, item);
        if (eval(*n.y, tmp).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (n.w) return exec(*n.w, f, out);
      return Flow::Normal;
    }
    const auto len = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < len; ++k) {
      const Value& item = items[static_cast<size_t>(k)];
      bind(loop_frame, item);
      Dict loop;
      loop.set("index", Value::integer(k + 1));
      loop.set("index0", Value::integer(k));
      loop.set("revindex", Value::integer(len - k));
      loop.set("revindex0", Value::integer(len - k - 1));
      loop.set("first", Value::boolean(k == 0));
      loop.set("last", Value::boolean(k == len - 1));
      loop.set("length", Value::integer(len));
      loop.set("depth", Value::integer(1));
      loop.set("depth0", Value::integer(0));
      loop.set("previtem", k > 0 ? items[static_cast<size_t>(k - 1)] : Value::undefined("previtem"));
      loop.set("nextitem", k + 1 < len ? items[static_cast<size_t>(k + 1)] : Value::undefined("nextitem"));
      loop.set("cycle", Value::function([k](CallArgs& a) {
        if (a.pos.empty()) throw TemplateError("no items for cycling given");
        return a.pos[static_cast<size_t>(k) % a.pos.size()];
      }));
      Value lv = Value::make_dict(std::move(loop));
      lv.is_namespace = true;  // attribute access only, no dict methods
      loop_frame.vars["loop"] = lv;
      const Flow fl = exec(*n.z, loop_frame, out);
      if (fl == Flow::Break) break;
    }
    return Flow::Normal;
  }

  Value make_macro(const Node& n) {
    const Node* def = &n;
    return Value::function([this, def](CallArgs& args) {
      struct CallDepth {
        int& d;
        explicit CallDepth(int& depth) : d(depth) {
          if (++d > kMaxCallDepth) {
            --d;
            throw TemplateError("macro calls nested more than " + std::to_string(kMaxCallDepth) + " deep (runaway recursion?)");
          }
        }
        ~CallDepth() { --d; }
      } guard(call_depth_);
      Frame mf;
      mf.parent = &root_;
      size_t k = 0;
      for (; k < def->targets.size(); ++k) {
        const std::string& p = def->targets[k];
        Value v = Value::undefined(p);
        bool found = false;
        for (const auto& [kn, kv] : args.kw) {
          if (kn == p) {
            v = kv;
            found = true;
          }
        }
        if (!found && k < args.pos.size()) {
          v = args.pos[k];
          found = true;
        }
        if (!found && def->b[k]) v = eval(*def->b[k], mf);
        mf.vars[p] = v;
      }
      List extra;
      for (size_t e = def->targets.size(); e < args.pos.size(); ++e) extra.push_back(args.pos[e]);
      mf.vars["varargs"] = Value::make_list(extra);
      for (const auto& [kn, kv] : args.kw) {
        if (kn == "caller") mf.vars["caller"] = kv;
      }
      std::string s;
      exec(*def->x, mf, s);
      return Value::string(s);
    });
  }

  static constexpr int kMaxCallDepth = 64;
  Frame& root_;
  bool raised_ = false;
  int call_depth_ = 0;
};

}  // namespace

Template Template::parse(const std::string& source, const ParseOptions& options) {
  Template t;
  t.root_ = parse_template(source, options);
  return t;
}

std::string Template::render(const Value& context) const {
  Frame root;
  Dict globals;
  add_builtin_globals(globals);
  for (auto& [k, v] : globals.items) root.vars[k] = v;
  if (context.is_dict()) {
    for (const auto& [k, v] : context.dict->items) root.vars[k] = v;
  }
  Evaluator ev(root);
  std::string out;
  ev.exec(*root_, root, out);
  return out;
}

}  // namespace moepack::jinja
