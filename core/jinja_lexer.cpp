// See jinja_lexer.h. Follows jinja2 3.1's lexer.py behaviour (not its code).
#include "core/jinja_lexer.h"

#include <cstring>

#include "core/unicode_utf8.h"

namespace moepack::jinja {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Python str.splitlines() + "\n".join(): normalises line ends, drops one trailing newline.
std::string normalize_newlines(const std::string& src, bool keep_trailing) {
  std::string out;
  out.reserve(src.size());
  bool ended_with_newline = false;
  for (size_t i = 0; i < src.size(); ++i) {
    const char c = src[i];
    size_t brk = 0;  // bytes of a line break at i
    if (c == '\r') brk = (i + 1 < src.size() && src[i + 1] == '\n') ? 2 : 1;
    else if (c == '\n' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e') brk = 1;
    else if (static_cast<unsigned char>(c) == 0xC2 && i + 1 < src.size() && static_cast<unsigned char>(src[i + 1]) == 0x85) brk = 2;
    else if (static_cast<unsigned char>(c) == 0xE2 && i + 2 < src.size() && static_cast<unsigned char>(src[i + 1]) == 0x80 &&
             (static_cast<unsigned char>(src[i + 2]) == 0xA8 || static_cast<unsigned char>(src[i + 2]) == 0xA9)) brk = 3;
    if (brk) {
      out += '\n';
      i += brk - 1;
      ended_with_newline = true;
    } else {
      out += c;
      ended_with_newline = false;
    }
  }
  if (ended_with_newline && !keep_trailing) out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(const std::string& src, const ParseOptions& opt) : s_(normalize_newlines(src, opt.keep_trailing_newline)), opt_(opt) {}

  std::vector<Tok> run() {
    bool line_starting = true;
    while (pos_ < s_.size()) {
      const size_t start = find_tag(pos_);
      std::string text = s_.substr(pos_, (start == std::string::npos ? s_.size() : start) - pos_);
      if (start == std::string::npos) {
        emit_text(text);
        pos_ = s_.size();
        break;
      }
      const char kind = s_[start + 1];  // '{', '%', '#'
      const char sign = start + 2 < s_.size() ? s_[start + 2] : '\0';
      if (sign == '-') {
        size_t e = text.size();
        while (e > 0 && is_ws(text[e - 1])) --e;
        text.resize(e);
      } else if (sign != '+' && opt_.lstrip_blocks && kind != '{') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if (l_pos > 0 || line_starting) {
          bool all_ws = l_pos < text.size();
          for (size_t k = l_pos; k < text.size(); ++k) all_ws = all_ws && is_ws(text[k]);
          if (all_ws) text.resize(l_pos);
        }
      }
      // Raw blocks: {% raw %} ... {% endraw %}
      if (kind == '%' && is_raw(start)) {
        emit_text(text);
        line_starting = lex_raw(start);
        continue;
      }
      emit_text(text);
      pos_ = start + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        line_starting = lex_comment();
      } else {
        line_starting = lex_tag(kind == '{');
      }
    }
    toks_.push_back({Tok::Eof, "", line_});
    return std::move(toks_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < s_.size(); ++i) {
      if (s_[i] == '{' && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void emit_text(const std::string& t) {
    if (!t.empty()) toks_.push_back({Tok::Text, t, line_});
    for (char c : t) line_ += c == '\n';
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw TemplateError("template syntax error at line " + std::to_string(line_) + ": " + what);
  }

  // After a closing delimiter at `end` (index of the first char after it): apply `-` / trim_blocks.
  // Returns line_starting for the next text.
  bool finish_tag(size_t after, char sign, bool block_like) {
    pos_ = after;
    const size_t begin = pos_;
    if (sign == '-') {
      while (pos_ < s_.size() && is_ws(s_[pos_])) ++pos_;
    } else if (sign != '+' && block_like && opt_.trim_blocks && pos_ < s_.size() && s_[pos_] == '\n') {
      ++pos_;
    }
    for (size_t k = begin; k < pos_; ++k) line_ += s_[k] == '\n';
    if (pos_ > begin) return s_[pos_ - 1] == '\n';
    return false;
  }

  bool lex_comment() {
    const size_t e = s_.find("#}", pos_);
    if (e == std::string::npos) fail("unterminated comment");
    for (size_t k = pos_; k < e; ++k) line_ += s_[k] == '\n';
    const char sign = e > pos_ && (s_[e - 1] == '-' || s_[e - 1] == '+') ? s_[e - 1] : '\0';
    return finish_tag(e + 2, sign, true);
  }

  bool is_raw(size_t start) const {
    size_t p = start + 2;
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
    while (p < s_.size() && is_ws(s_[p])) ++p;
    if (s_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < s_.size() && is_ws(s_[p])) ++p;
    if (p < s_.size() && s_[p] == '-') ++p;
    return s_.compare(p, 2, "%}") == 0;
  }

  bool lex_raw(size_t start) {
    size_t p = s_.find("%}", start) + 2;
    const char open_sign = s_[s_.find("%}", start) - 1];
    if (open_sign == '-') {
      while (p < s_.size() && is_ws(s_[p])) ++p;
    }
    // find {%-? endraw -?%}
    size_t q = p;
    while (true) {
      q = s_.find("{%", q);
      if (q == std::string::npos) fail("missing endraw");
      size_t r = q + 2;
      const bool strip_before = r < s_.size() && s_[r] == '-';
      if (strip_before || (r < s_.size() && s_[r] == '+')) ++r;
      while (r < s_.size() && is_ws(s_[r])) ++r;
      if (s_.compare(r, 6, "endraw") == 0) {
        r += 6;
        while (r < s_.size() && is_ws(s_[r])) ++r;
        char sign = '\0';
        if (r < s_.size() && (s_[r] == '-' || s_[r] == '+')) sign = s_[r++];
        if (s_.compare(r, 2, "%}") == 0) {
          std::string body = s_.substr(p, q - p);
          if (strip_before) {
            size_t e = body.size();
            while (e > 0 && is_ws(body[e - 1])) --e;
            body.resize(e);
          }
          emit_text(body);
          return finish_tag(r + 2, sign, true);
        }
      }
      q += 2;
    }
  }

  bool lex_tag(bool variable) {
    toks_.push_back({variable ? Tok::VarBegin : Tok::BlockBegin, "", line_});
    const char* close = variable ? "}}" : "%}";
    while (true) {
      while (pos_ < s_.size() && is_ws(s_[pos_])) {
        line_ += s_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= s_.size()) fail(std::string("missing '") + close + "'");
      // closing delimiter, optionally with a sign
      if ((s_[pos_] == '-' || s_[pos_] == '+') && s_.compare(pos_ + 1, 2, close) == 0) {
        const char sign = s_[pos_];
        toks_.push_back({variable ? Tok::VarEnd : Tok::BlockEnd, "", line_});
        return finish_tag(pos_ + 3, sign, !variable);
      }
      if (s_.compare(pos_, 2, close) == 0) {
        toks_.push_back({variable ? Tok::VarEnd : Tok::BlockEnd, "", line_});
        return finish_tag(pos_ + 2, '\0', !variable);
      }
      lex_expr_token();
    }
  }

  void lex_expr_token() {
    const char c = s_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = pos_;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
      toks_.push_back({Tok::Name, s_.substr(pos_, e - pos_), line_});
      pos_ = e;
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t e = pos_;
      while (e < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
      bool is_float = false;
      if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
        is_float = true;
        ++e;
        while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) ++e;
      }
      if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
        size_t k = e + 1;
        if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
        if (k < s_.size() && std::isdigit(static_cast<unsigned char>(s_[k]))) {
          is_float = true;
          e = k;
          while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) ++e;
        }
      }
      std::string num;
      for (size_t k = pos_; k < e; ++k) {
        if (s_[k] != '_') num += s_[k];
      }
      toks_.push_back({is_float ? Tok::Float : Tok::Int, num, line_});
      pos_ = e;
      return;
    }
    if (c == '\'' || c == '"') {
      lex_string(c);
      return;
    }
    static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : two) {
      if (s_.compare(pos_, 2, op) == 0) {
        toks_.push_back({Tok::Op, op, line_});
        pos_ += 2;
        return;
      }
    }
    if (std::strchr("+-*/%~<>=.,:|()[]{}", c)) {
      toks_.push_back({Tok::Op, std::string(1, c), line_});
      ++pos_;
      return;
    }
    fail(std::string("unexpected character '") + c + "'");
  }

  void lex_string(char q) {
    std::string out;
    size_t p = pos_ + 1;
    while (true) {
      if (p >= s_.size()) fail("unterminated string");
      const char c = s_[p];
      if (c == q) break;
      if (c == '\n') ++line_;
      if (c != '\\' || p + 1 >= s_.size()) {
        out += c;
        ++p;
        continue;
      }
      const char e = s_[p + 1];
      p += 2;
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '0': out += '\0'; break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (p + n > s_.size()) fail("truncated escape in string");
          const uint32_t cp = static_cast<uint32_t>(std::stoul(s_.substr(p, n), nullptr, 16));
          utf8::append(out, cp);
          p += n;
          break;
        }
        default:  // unknown escapes keep the backslash (Python)
          out += '\\';
          out += e;
      }
    }
    toks_.push_back({Tok::String, out, line_});
    pos_ = p + 1;
  }

  std::string s_;
  ParseOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Tok> toks_;
};

}  // namespace

std::vector<Tok> lex_template(const std::string& source, const ParseOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace moepack::jinja
