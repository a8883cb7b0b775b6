// Jinja parser (internal): tokens -> AST. Operator precedence follows jinja2's parser.py:
// condexpr < or < and < not < compare < + - < ~ < * / // % < ** < unary - + < postfix (. [] ())
// and filters / tests (| name, is name), which bind tighter than any binary operator.
#include <cstdlib>

#include "core/jinja_ast.h"
#include "core/jinja_lexer.h"

namespace moepack::jinja {

namespace {

class Parser {
 public:
  explicit Parser(std::vector<Tok> toks) : t_(std::move(toks)) {}

  NodePtr parse_all() {
    auto body = std::make_shared<Node>(Node::Kind::Body, 1);
    std::string end;
    parse_body(*body, {}, end);
    if (peek().t != Tok::Eof) fail("unexpected tokens after the end of the template");
    return body;
  }

 private:
  const Tok& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  Tok next() { return t_[std::min(i_++, t_.size() - 1)]; }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).t == Tok::Op && peek(k).s == op; }
  bool is_name(const char* n, size_t k = 0) const { return peek(k).t == Tok::Name && peek(k).s == n; }
  [[noreturn]] void fail(const std::string& what) const {  // NOLINT
    throw TemplateError("template syntax error at line " + std::to_string(peek().line) + ": " + what +
                        (peek().s.empty() ? "" : " (near '" + peek().s + "')"));
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "'");
    ++i_;
  }
  std::string expect_name() {
    if (peek().t != Tok::Name) fail("expected a name");
    return next().s;
  }
  void expect_block_end() {
    if (peek().t != Tok::BlockEnd) fail("expected '%}'");
    ++i_;
  }
  NodePtr node(Node::Kind k) { return std::make_shared<Node>(k, peek().line); }

  // Parses statements into `body` until a block tag whose keyword is in `stops`; that keyword is
  // returned in `stopped` (the tag's remaining tokens are left for the caller).
  void parse_body(Node& body, const std::vector<std::string>& stops, std::string& stopped) {
    while (true) {
      const Tok& tk = peek();
      if (tk.t == Tok::Eof) {
        if (!stops.empty()) fail("unexpected end of template, expected '" + stops.front() + "'");
        return;
      }
      if (tk.t == Tok::Text) {
        auto n = node(Node::Kind::Text);
        n->name = next().s;
        body.a.push_back(n);
      } else if (tk.t == Tok::VarBegin) {
        ++i_;
        auto n = node(Node::Kind::Print);
        n->x = parse_tuple_or_expr();
        if (peek().t != Tok::VarEnd) fail("expected '}}'");
        ++i_;
        body.a.push_back(n);
      } else if (tk.t == Tok::BlockBegin) {
        const std::string kw = peek(1).t == Tok::Name ? peek(1).s : "";
        for (const std::string& s : stops) {
          if (kw == s) {
            i_ += 2;
            stopped = kw;
            return;
          }
        }
        ++i_;
        body.a.push_back(parse_statement());
      } else {
        fail("unexpected token");
      }
    }
  }

  NodePtr parse_statement() {
    DepthGuard guard(depth_, *this);
    const std::string kw = expect_name();
    if (kw == "if") return parse_if();
    if (kw == "for") return parse_for();
    if (kw == "set") return parse_set();
    if (kw == "macro") return parse_macro();
    if (kw == "break" || kw == "continue") {
      auto n = node(kw == "break" ? Node::Kind::Break : Node::Kind::Continue);
      expect_block_end();
      return n;
    }
    if (kw == "generation") {  // transformers' AssistantTracker: renders its body unchanged
      expect_block_end();
      auto n = node(Node::Kind::Body);
      std::string stopped;
      parse_body(*n, {"endgeneration"}, stopped);
      expect_block_end();
      return n;
    }
    if (kw == "call") return parse_call_block();
    if (kw == "with") return parse_with();
    if (kw == "filter") return parse_filter_block();
    fail("unknown tag '" + kw + "'");
  }

  NodePtr parse_if() {
    auto n = node(Node::Kind::If);
    // a: conditions, b: bodies; w: else body
    while (true) {
      n->a.push_back(parse_tuple_or_expr());
      expect_block_end();
      auto body = node(Node::Kind::Body);
      std::string stopped;
      parse_body(*body, {"elif", "else", "endif"}, stopped);
      n->b.push_back(body);
      if (stopped == "elif") continue;
      if (stopped == "else") {
        expect_block_end();
        auto eb = node(Node::Kind::Body);
        parse_body(*eb, {"endif"}, stopped);
        n->w = eb;
      }
      expect_block_end();
      return n;
    }
  }

  void parse_targets(std::vector<std::string>& out) {
    const bool paren = is_op("(");
    if (paren) ++i_;
    out.push_back(expect_name());
    while (is_op(",")) {
      ++i_;
      if (peek().t != Tok::Name) break;
      out.push_back(expect_name());
    }
    if (paren) expect_op(")");
  }

  NodePtr parse_for() {
    auto n = node(Node::Kind::For);
    parse_targets(n->targets);
    if (!is_name("in")) fail("expected 'in'");
    ++i_;
    n->x = parse_tuple_or_expr(/*no_condexpr=*/true);
    if (is_name("if")) {
      ++i_;
      n->y = parse_expr();
    }
    if (is_name("recursive")) fail("recursive loops are not supported");
    expect_block_end();
    auto body = node(Node::Kind::Body);
    std::string stopped;
    parse_body(*body, {"else", "endfor"}, stopped);
    n->z = body;
    if (stopped == "else") {
      expect_block_end();
      auto eb = node(Node::Kind::Body);
      parse_body(*eb, {"endfor"}, stopped);
      n->w = eb;
    }
    expect_block_end();
    return n;
  }

  NodePtr parse_set() {
    // set a = x | set a, b = x | set ns.attr = x | set a %}...{% endset
    std::vector<std::string> targets;
    std::string attr;
    targets.push_back(expect_name());
    if (is_op(".")) {
      ++i_;
      attr = expect_name();
    }
    while (is_op(",")) {
      ++i_;
      targets.push_back(expect_name());
    }
    if (peek().t == Tok::BlockEnd) {
      ++i_;
      auto n = node(Node::Kind::SetBlock);
      n->targets = targets;
      n->name = attr;
      auto body = node(Node::Kind::Body);
      std::string stopped;
      parse_body(*body, {"endset"}, stopped);
      expect_block_end();
      n->x = body;
      return n;
    }
    expect_op("=");
    auto n = node(Node::Kind::Set);
    n->targets = targets;
    n->name = attr;
    n->x = parse_tuple_or_expr();
    expect_block_end();
    return n;
  }

  NodePtr parse_macro() {
    auto n = node(Node::Kind::Macro);
    n->name = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      n->targets.push_back(expect_name());
      if (is_op("=")) {
        ++i_;
        n->b.push_back(parse_expr());
      } else {
        n->b.push_back(nullptr);
      }
      if (!is_op(",")) break;
      ++i_;
    }
    expect_op(")");
    expect_block_end();
    auto body = node(Node::Kind::Body);
    std::string stopped;
    parse_body(*body, {"endmacro"}, stopped);
    if (peek().t == Tok::Name) ++i_;  // {% endmacro name %}
    expect_block_end();
    n->x = body;
    return n;
  }

  // {% with a = x, b = y %}...{% endwith %}: a Body in its own scope, assignments first.
  NodePtr parse_with() {
    auto n = node(Node::Kind::With);
    while (peek().t == Tok::Name) {
      n->targets.push_back(expect_name());
      expect_op("=");
      n->a.push_back(parse_expr());
      if (!is_op(",")) break;
      ++i_;
    }
    expect_block_end();
    auto body = node(Node::Kind::Body);
    std::string stopped;
    parse_body(*body, {"endwith"}, stopped);
    expect_block_end();
    n->x = body;
    return n;
  }

  // {% filter name(args) | other %}...{% endfilter %}: the body's output goes through the filters.
  NodePtr parse_filter_block() {
    auto n = node(Node::Kind::FilterBlock);
    auto placeholder = node(Node::Kind::Name);
    placeholder->name = "\x01filter-body";
    auto f = node(Node::Kind::Filter);
    f->x = placeholder;
    f->name = expect_name();
    if (is_op("(")) parse_call_args(*f);
    NodePtr chain = parse_filter_expr(f);
    expect_block_end();
    auto body = node(Node::Kind::Body);
    std::string stopped;
    parse_body(*body, {"endfilter"}, stopped);
    expect_block_end();
    n->x = body;
    n->y = chain;
    return n;
  }

  NodePtr parse_call_block() {
    auto n = node(Node::Kind::CallBlock);
    n->x = parse_expr();  // the call
    expect_block_end();
    auto body = node(Node::Kind::Body);
    std::string stopped;
    parse_body(*body, {"endcall"}, stopped);
    expect_block_end();
    n->y = body;
    return n;
  }

  // ---- expressions ----
  NodePtr parse_tuple_or_expr(bool no_condexpr = false) {
    NodePtr first = no_condexpr ? parse_or() : parse_expr();
    if (!is_op(",")) return first;
    auto t = node(Node::Kind::TupleLit);
    t->a.push_back(first);
    while (is_op(",")) {
      ++i_;
      if (peek().t == Tok::BlockEnd || peek().t == Tok::VarEnd || is_op(")")) break;
      t->a.push_back(no_condexpr ? parse_or() : parse_expr());
    }
    return t;
  }

  NodePtr parse_expr() {
    NodePtr e = parse_or();
    while (is_name("if")) {
      ++i_;
      auto c = node(Node::Kind::CondExpr);
      c->x = parse_or();  // condition
      c->y = e;           // then
      if (is_name("else")) {
        ++i_;
        c->z = parse_expr();
      }
      e = c;
    }
    return e;
  }

  NodePtr parse_or() {
    NodePtr l = parse_and();
    while (is_name("or")) {
      ++i_;
      auto n = node(Node::Kind::Or);
      n->x = l;
      n->y = parse_and();
      l = n;
    }
    return l;
  }

  NodePtr parse_and() {
    NodePtr l = parse_not();
    while (is_name("and")) {
      ++i_;
      auto n = node(Node::Kind::And);
      n->x = l;
      n->y = parse_not();
      l = n;
    }
    return l;
  }

  NodePtr parse_not() {
    if (is_name("not")) {
      ++i_;
      auto n = node(Node::Kind::Not);
      n->x = parse_not();
      return n;
    }
    return parse_compare();
  }

  NodePtr parse_compare() {
    NodePtr first = parse_math1();
    NodePtr cmp;
    while (true) {
      std::string op;
      if (peek().t == Tok::Op && (peek().s == "==" || peek().s == "!=" || peek().s == "<" || peek().s == ">" ||
                                  peek().s == "<=" || peek().s == ">=")) {
        op = next().s;
      } else if (is_name("in")) {
        ++i_;
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        i_ += 2;
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Node::Kind::Compare);
        cmp->x = first;
      }
      cmp->kw_names.push_back(op);
      cmp->a.push_back(parse_math1());
    }
    return cmp ? cmp : first;
  }

  NodePtr binary(const std::string& op, NodePtr l, NodePtr r) {
    auto n = node(Node::Kind::Binary);
    n->name = op;
    n->x = std::move(l);
    n->y = std::move(r);
    return n;
  }

  NodePtr parse_math1() {
    NodePtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = next().s;
      l = binary(op, l, parse_concat());
    }
    return l;
  }

  NodePtr parse_concat() {
    NodePtr l = parse_math2();
    if (!is_op("~")) return l;
    auto n = node(Node::Kind::Concat);
    n->a.push_back(l);
    while (is_op("~")) {
      ++i_;
      n->a.push_back(parse_math2());
    }
    return n;
  }

  NodePtr parse_math2() {
    NodePtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = next().s;
      l = binary(op, l, parse_pow());
    }
    return l;
  }

  NodePtr parse_pow() {
    NodePtr l = parse_unary();
    while (is_op("**")) {
      ++i_;
      l = binary("**", l, parse_unary());
    }
    return l;
  }

  // Guards against input that nests without bound (stack exhaustion); real templates stay < 20.
  struct DepthGuard {
    int& d;
    explicit DepthGuard(int& depth, const Parser& p) : d(depth) {
      if (++d > kMaxDepth) p.fail("expressions or blocks nested more than " + std::to_string(kMaxDepth) + " deep");
    }
    ~DepthGuard() { --d; }
  };
  static constexpr int kMaxDepth = 200;
  int depth_ = 0;

  NodePtr parse_unary(bool with_filter = true) {
    DepthGuard guard(depth_, *this);
    NodePtr n;
    if (is_op("-") || is_op("+")) {
      const bool neg = next().s == "-";
      n = node(neg ? Node::Kind::Neg : Node::Kind::Pos);
      n->x = parse_unary(false);
    } else {
      n = parse_primary();
    }
    n = parse_postfix(n);
    if (with_filter) n = parse_filter_expr(n);
    return n;
  }

  NodePtr parse_primary() {
    const Tok tk = peek();
    if (tk.t == Tok::Name) {
      ++i_;
      auto n = node(Node::Kind::Literal);
      if (tk.s == "true" || tk.s == "True") n->value = Value::boolean(true);
      else if (tk.s == "false" || tk.s == "False") n->value = Value::boolean(false);
      else if (tk.s == "none" || tk.s == "None") n->value = Value::none();
      else {
        n->kind = Node::Kind::Name;
        n->name = tk.s;
      }
      return n;
    }
    if (tk.t == Tok::String) {
      ++i_;
      std::string s = tk.s;
      while (peek().t == Tok::String) s += next().s;  // adjacent literals concatenate
      auto n = node(Node::Kind::Literal);
      n->value = Value::string(s);
      return n;
    }
    if (tk.t == Tok::Int || tk.t == Tok::Float) {
      ++i_;
      auto n = node(Node::Kind::Literal);
      n->value = tk.t == Tok::Int ? Value::integer(std::strtoll(tk.s.c_str(), nullptr, 10))
                                  : Value::number(std::strtod(tk.s.c_str(), nullptr));
      return n;
    }
    if (is_op("(")) {
      ++i_;
      if (is_op(")")) {
        ++i_;
        return node(Node::Kind::TupleLit);
      }
      NodePtr e = parse_expr();
      if (is_op(",")) {
        auto t = node(Node::Kind::TupleLit);
        t->a.push_back(e);
        while (is_op(",")) {
          ++i_;
          if (is_op(")")) break;
          t->a.push_back(parse_expr());
        }
        e = t;
      }
      expect_op(")");
      return e;
    }
    if (is_op("[")) {
      ++i_;
      auto n = node(Node::Kind::ListLit);
      while (!is_op("]")) {
        n->a.push_back(parse_expr());
        if (!is_op(",")) break;
        ++i_;
      }
      expect_op("]");
      return n;
    }
    if (is_op("{")) {
      ++i_;
      auto n = node(Node::Kind::DictLit);
      while (!is_op("}")) {
        n->a.push_back(parse_expr());
        expect_op(":");
        n->b.push_back(parse_expr());
        if (!is_op(",")) break;
        ++i_;
      }
      expect_op("}");
      return n;
    }
    fail("unexpected token in expression");
  }

  void parse_call_args(Node& n) {
    expect_op("(");
    std::vector<NodePtr> kwv;
    while (!is_op(")")) {
      if (peek().t == Tok::Name && is_op("=", 1)) {
        n.kw_names.push_back(next().s);
        ++i_;
        kwv.push_back(parse_expr());
      } else {
        if (!n.kw_names.empty()) fail("positional argument after keyword argument");
        n.a.push_back(parse_expr());
      }
      if (!is_op(",")) break;
      ++i_;
    }
    expect_op(")");
    for (auto& k : kwv) n.b.push_back(k);
  }

  NodePtr parse_postfix(NodePtr n) {
    while (true) {
      if (is_op(".")) {
        ++i_;
        auto g = node(Node::Kind::GetAttr);
        g->x = n;
        if (peek().t == Tok::Int) {  // x.0 -> x[0]
          g->kind = Node::Kind::GetItem;
          auto lit = node(Node::Kind::Literal);
          lit->value = Value::integer(std::strtoll(next().s.c_str(), nullptr, 10));
          g->y = lit;
        } else {
          g->name = expect_name();
        }
        n = g;
      } else if (is_op("[")) {
        ++i_;
        n = parse_subscript(n);
      } else if (is_op("(")) {
        auto c = node(Node::Kind::Call);
        c->x = n;
        parse_call_args(*c);
        n = c;
      } else {
        return n;
      }
    }
  }

  NodePtr parse_subscript(NodePtr obj) {
    NodePtr start, stop, step;
    bool is_slice = false;
    if (!is_op(":")) start = parse_expr();
    if (is_op(":")) {
      is_slice = true;
      ++i_;
      if (!is_op(":") && !is_op("]")) stop = parse_expr();
      if (is_op(":")) {
        ++i_;
        if (!is_op("]")) step = parse_expr();
      }
    }
    expect_op("]");
    if (!is_slice) {
      auto g = node(Node::Kind::GetItem);
      g->x = obj;
      g->y = start;
      return g;
    }
    auto s = node(Node::Kind::Slice);
    s->x = obj;
    s->y = start;
    s->z = stop;
    s->w = step;
    return s;
  }

  NodePtr parse_filter_expr(NodePtr n) {
    while (true) {
      if (is_op("|")) {
        ++i_;
        auto f = node(Node::Kind::Filter);
        f->x = n;
        f->name = expect_name();
        while (is_op(".")) {
          ++i_;
          f->name += "." + expect_name();
        }
        if (is_op("(")) parse_call_args(*f);
        n = f;
      } else if (is_name("is")) {
        ++i_;
        auto t = node(Node::Kind::Test);
        t->x = n;
        if (is_name("not")) {
          ++i_;
          t->negated = true;
        }
        t->name = expect_name();
        if (is_op("(")) {
          parse_call_args(*t);
        } else if ((peek().t == Tok::Name && peek().s != "else" && peek().s != "or" && peek().s != "and" &&
                    peek().s != "if" && peek().s != "in" && peek().s != "not" && peek().s != "is") ||
                   peek().t == Tok::String || peek().t == Tok::Int || peek().t == Tok::Float || is_op("[") ||
                   is_op("{")) {
          NodePtr arg = parse_primary();
          arg = parse_postfix(arg);
          t->a.push_back(arg);
        }
        n = t;
      } else {
        return n;
      }
    }
  }

  std::vector<Tok> t_;
  size_t i_ = 0;
};

}  // namespace

NodePtr parse_template(const std::string& source, const ParseOptions& options) {
  return Parser(lex_template(source, options)).parse_all();
}

}  // namespace moepack::jinja
