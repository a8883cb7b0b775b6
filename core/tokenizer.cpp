// See tokenizer.h. Algorithms follow llama.cpp's llama-vocab.cpp; the code is our own.
#include "core/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <queue>
#include <set>

#include "core/error.h"
#include "core/unicode_utf8.h"

namespace moepack {

namespace {

const char* const kSpmSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's space

// Token texts llama.cpp promotes to control (end of turn, FIM markers, end of generation).
const std::set<std::string_view>& eot_texts() {
  static const std::set<std::string_view> s = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                               "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                               "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                                               "<end_of_utterance>"};
  return s;
}
const std::set<std::string_view>& fim_texts() {
  static const std::set<std::string_view> s = {
      "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
      "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
      "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>", "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>",
      "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
      "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
      "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>", "<|eom_id|>"};
  return s;
}
const std::set<std::string_view>& eog_texts() {
  static const std::set<std::string_view> s = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
                                               "<|flush|>", "<|calls|>", "<end_of_turn>", "<|endoftext|>",
                                               "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
                                               "<end_of_utterance>"};
  return s;
}
const std::set<std::string_view>& eog_fim_texts() {  // FIM pad/repo/file-sep also end generation
  static const std::set<std::string_view> s = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
                                               "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                               "<reponame>", "<|file_sep|>"};
  return s;
}

uint32_t attr_of_type(int64_t type) {
  switch (type) {
    case 1: return kAttrNormal;
    case 2: return kAttrUnknown;
    case 3: return kAttrControl;
    case 4: return kAttrUserDefined;
    case 5: return kAttrUnused;
    case 6: return kAttrByte;
    default: return kAttrUndefined;
  }
}

struct Symbol {
  int prev, next;
  size_t start, n;  // byte range in the word
};

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::from_gguf(const GgufFile& gguf) {
  Tokenizer t;
  auto offset_of = [&](std::string_view key) -> uint64_t {
    const GgufKv* kv = gguf.find(key);
    return kv ? kv->value_offset : 0;
  };
  auto fail = [&](std::string_view key, const std::string& what) -> FormatError {
    return FormatError(gguf.path(), std::string(key), offset_of(key), what);
  };

  const auto model = gguf.get_string("tokenizer.ggml.model");
  if (!model) throw fail("tokenizer.ggml.model", "missing: the file has no tokenizer");
  t.model_ = *model;
  if (t.model_ == "gpt2") {
    t.kind_ = VocabKind::Bpe;
  } else if (t.model_ == "llama") {
    t.kind_ = VocabKind::Spm;
  } else {
    throw fail("tokenizer.ggml.model", "unsupported tokenizer model \"" + t.model_ +
                                           "\" (supported: gpt2 = byte-level BPE, llama = SentencePiece)");
  }
  t.pre_ = gguf.get_string("tokenizer.ggml.pre").value_or("default");

  // Vocabulary.
  const GgufArray* tok_arr = gguf.get_array("tokenizer.ggml.tokens");
  if (!tok_arr || tok_arr->elem_type != GgufValueType::STRING) {
    throw fail("tokenizer.ggml.tokens", "missing or not an array of strings");
  }
  if (tok_arr->count == 0 || tok_arr->count > (1u << 24)) {
    throw fail("tokenizer.ggml.tokens", "implausible vocabulary size " + std::to_string(tok_arr->count));
  }
  GgufArray tokens = gguf.load_array(*tok_arr);
  t.tokens_ = std::move(tokens.strings);
  const size_t n = t.tokens_.size();
  t.token_to_id_.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    if (t.tokens_[i].empty()) t.tokens_[i] = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp
    t.token_to_id_[t.tokens_[i]] = static_cast<TokenId>(i);
  }

  t.scores_.assign(n, 0.0f);
  if (const GgufArray* a = gguf.get_array("tokenizer.ggml.scores")) {
    if (a->elem_type != GgufValueType::FLOAT32) throw fail("tokenizer.ggml.scores", "not an array of float32");
    const GgufArray s = gguf.load_array(*a);
    for (size_t i = 0; i < n && i < s.count; ++i) {
      float f;
      std::memcpy(&f, s.raw.data() + 4 * i, 4);
      t.scores_[i] = f;
    }
  }
  t.attrs_.assign(n, kAttrNormal);
  if (const GgufArray* a = gguf.get_array("tokenizer.ggml.token_type")) {
    if (a->count != n) throw fail("tokenizer.ggml.token_type", "has " + std::to_string(a->count) + " entries for " +
                                                                   std::to_string(n) + " tokens");
    const GgufArray ty = gguf.load_array(*a);
    for (size_t i = 0; i < n; ++i) t.attrs_[i] = attr_of_type(ty.int_at(i));
  }

  // Kind-specific defaults (llama.cpp's).
  if (t.kind_ == VocabKind::Spm) {
    t.bos_ = 1;
    t.eos_ = 2;
    t.unk_ = 0;
    t.add_bos_ = true;
    t.add_space_prefix_ = true;
  } else {
    t.bos_ = 11;
    t.eos_ = 11;
    t.pretok_ = std::make_unique<PreTokenizer>(t.pre_);
    if (!t.pretok_->warning().empty()) t.warnings_.push_back(t.pretok_->warning());
    t.ignore_merges_ = t.pretok_->ignore_merges();
    t.add_bos_ = t.pretok_->add_bos_default();
    if (t.pre_ == "glm4" || t.pre_ == "chatglm-bpe") t.bos_ = kNoToken;
    if (t.pre_ == "jina-v1-en" || t.pre_ == "jina-v2-code" || t.pre_ == "roberta-bpe") t.add_sep_ = true;

    const GgufArray* m = gguf.get_array("tokenizer.ggml.merges");
    if (!m) {
      if (t.pre_ != "kimi-k2") throw fail("tokenizer.ggml.merges", "missing: a byte-level BPE vocabulary needs merges");
    } else {
      if (m->elem_type != GgufValueType::STRING) throw fail("tokenizer.ggml.merges", "not an array of strings");
      GgufArray merges = gguf.load_array(*m);
      t.merge_rank_.reserve(merges.strings.size() * 2);
      for (size_t i = 0; i < merges.strings.size(); ++i) {
        const std::string& w = merges.strings[i];
        const size_t pos = w.find(' ', 1);
        std::string key = pos == std::string::npos ? std::string("\xff")
                                                   : w.substr(0, pos) + '\xff' + w.substr(pos + 1);
        t.merge_rank_.emplace(std::move(key), static_cast<int>(i));  // first occurrence wins
      }
    }
  }
  if (auto v = gguf.get_bool("tokenizer.ggml.add_space_prefix")) t.add_space_prefix_ = *v;

  auto read_id = [&](std::string_view key, TokenId& id) {
    if (const GgufKv* kv = gguf.find(key)) {
      if (!kv->value.is_integer()) throw fail(key, "not an integer");
      const auto v = gguf.get_uint(key);
      if (!v || *v >= n) {
        t.warnings_.push_back(
            std::string(gguf.path()) + ": " + std::string(key) + " " +
            (v ? std::to_string(*v) : std::string("?")) + " is not a token of the " + std::to_string(n) +
            "-token vocabulary; using the default " +
            (t.valid(id) ? std::to_string(id) + " '" + t.token_text(id) + "'" : std::string("(none)")));
        return;
      }
      id = static_cast<TokenId>(*v);
    }
  };
  read_id("tokenizer.ggml.bos_token_id", t.bos_);
  read_id("tokenizer.ggml.eos_token_id", t.eos_);
  read_id("tokenizer.ggml.eot_token_id", t.eot_);
  read_id("tokenizer.ggml.eom_token_id", t.eom_);
  read_id("tokenizer.ggml.unknown_token_id", t.unk_);
  read_id("tokenizer.ggml.seperator_token_id", t.sep_);
  if (auto v = gguf.get_bool("tokenizer.ggml.add_bos_token")) t.add_bos_ = *v;
  if (auto v = gguf.get_bool("tokenizer.ggml.add_eos_token")) t.add_eos_ = *v;
  if (auto v = gguf.get_bool("tokenizer.ggml.add_sep_token")) t.add_sep_ = *v;
  if (t.add_bos_ && !t.valid(t.bos_)) throw fail("tokenizer.ggml.bos_token_id", "BOS is to be added but not defined");
  if (t.add_eos_ && !t.valid(t.eos_)) throw fail("tokenizer.ggml.eos_token_id", "EOS is to be added but not defined");

  t.finish_load();
  return t;
}

void Tokenizer::finish_load() {
  const size_t n = tokens_.size();
  auto promote = [&](size_t i) {
    if (!(attrs_[i] & kAttrControl)) {
      warnings_.push_back("token " + std::to_string(i) + " '" + tokens_[i] + "' looks like a control token; treated as one");
      attrs_[i] |= kAttrControl;
    }
  };
  std::set<TokenId> eog;
  bool eot_from_text = eot_ == kNoToken;
  for (size_t i = 0; i < n; ++i) {
    const std::string& s = tokens_[i];
    if (eot_from_text && eot_texts().count(s)) {
      eot_ = static_cast<TokenId>(i);
      eot_from_text = false;
      promote(i);
    }
    if (fim_texts().count(s)) promote(i);
    if (eog_fim_texts().count(s)) eog.insert(static_cast<TokenId>(i));
    if (eog_texts().count(s)) {
      eog.insert(static_cast<TokenId>(i));
      promote(i);
    }
  }
  // gpt-oss (harmony): these markers are always rendered (llama.cpp makes them user-defined).
  for (const char* s : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    const TokenId id = find_token(s);
    if (id != kNoToken) attrs_[id] = kAttrUserDefined;
  }
  if (valid(eos_)) eog.insert(eos_);
  if (valid(eot_)) eog.insert(eot_);
  if (valid(eom_)) eog.insert(eom_);
  // harmony: <|end|> ends a message, not the generation, when <|return|> and <|call|> exist.
  const TokenId end_id = find_token("<|end|>");
  if (end_id != kNoToken && eog.count(end_id) &&
      ((find_token("<|return|>") != kNoToken && find_token("<|call|>") != kNoToken) ||
       (find_token("<|calls|>") != kNoToken && find_token("<|flush|>") != kNoToken))) {
    eog.erase(end_id);
    attrs_[end_id] = kAttrUserDefined;
  }
  eog_.assign(eog.begin(), eog.end());

  for (size_t i = 0; i < n; ++i) {
    if (attrs_[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) special_by_length_.push_back(static_cast<TokenId>(i));
  }
  std::stable_sort(special_by_length_.begin(), special_by_length_.end(),
                   [&](TokenId a, TokenId b) { return tokens_[a].size() > tokens_[b].size(); });

  if (kind_ == VocabKind::Spm) {
    byte_tokens_.assign(256, kNoToken);
    char buf[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      byte_tokens_[static_cast<size_t>(b)] = find_token(buf);
    }
  }
}

TokenId Tokenizer::find_token(std::string_view text) const {
  const auto it = token_to_id_.find(std::string(text));
  return it == token_to_id_.end() ? kNoToken : it->second;
}

const std::string& Tokenizer::token_text(TokenId id) const {
  static const std::string empty;
  return valid(id) ? tokens_[id] : empty;
}

bool Tokenizer::is_eog(TokenId id) const { return std::binary_search(eog_.begin(), eog_.end(), id); }

int Tokenizer::bpe_rank(std::string_view left, std::string_view right) const {
  std::string key;
  key.reserve(left.size() + right.size() + 1);
  key.append(left);
  key += '\xff';
  key.append(right);
  const auto it = merge_rank_.find(key);
  return it == merge_rank_.end() ? -1 : it->second;
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  return encode_impl(text, add_special, parse_special, nullptr);
}

std::vector<TokenId> Tokenizer::encode_with_plain_spans(std::string_view text, bool add_special,
                                                        const std::vector<std::pair<size_t, size_t>>& plain) const {
  return encode_impl(text, add_special, true, &plain);
}

std::vector<TokenId> Tokenizer::encode_impl(std::string_view text, bool add_special, bool parse_special,
                                            const std::vector<std::pair<size_t, size_t>>* plain) const {
  auto in_plain = [&](size_t b, size_t e) {
    if (!plain) return false;
    for (const auto& [pb, pe] : *plain) {
      if (b < pe && pb < e) return true;
    }
    return false;
  };
  // 1. Split out special tokens (llama.cpp's tokenizer_st_partition): for each special token,
  //    longest first, cut every remaining text fragment at each of its occurrences.
  struct Fragment {
    TokenId id;  // kNoToken for text
    size_t off, len;
  };
  std::vector<Fragment> frags;
  if (!text.empty()) frags.push_back({kNoToken, 0, text.size()});
  for (const TokenId sid : special_by_length_) {
    if (!parse_special && (attrs_[sid] & (kAttrControl | kAttrUnknown))) continue;
    const std::string& st = tokens_[sid];
    std::vector<Fragment> next;
    bool changed = false;
    for (const Fragment& f : frags) {
      if (f.id != kNoToken) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.off;
      const size_t end = f.off + f.len;
      while (true) {
        size_t m = text.substr(0, end).find(st, pos);
        while (m != std::string_view::npos && in_plain(m, m + st.size())) m = text.substr(0, end).find(st, m + 1);
        if (m == std::string_view::npos) break;
        changed = true;
        if (m > pos) next.push_back({kNoToken, pos, m - pos});
        next.push_back({sid, 0, 0});
        pos = m + st.size();
      }
      if (pos < end) next.push_back({kNoToken, pos, end - pos});
    }
    if (changed) frags = std::move(next);
  }

  // 2. Tokenize the text fragments.
  std::vector<TokenId> out;
  if (add_special && add_bos_) out.push_back(bos_);
  bool prev_special = true;  // SPM: a space is prefixed to text at the start and after a token
  for (const Fragment& f : frags) {
    if (f.id != kNoToken) {
      out.push_back(f.id);
      prev_special = true;
      continue;
    }
    const std::string_view piece = text.substr(f.off, f.len);
    if (kind_ == VocabKind::Spm) {
      std::string s;
      if (add_space_prefix_ && prev_special) s = " ";
      s.append(piece);
      std::string escaped;
      escaped.reserve(s.size() * 2);
      for (char c : s) {
        if (c == ' ') escaped += kSpmSpace;
        else escaped += c;
      }
      encode_spm(escaped, out);
    } else {
      encode_bpe(piece, out);
    }
    prev_special = false;
  }
  if (add_special && add_sep_ && valid(sep_)) out.push_back(sep_);
  if (add_special && add_eos_) out.push_back(eos_);
  return out;
}

void Tokenizer::encode_bpe(std::string_view text, std::vector<TokenId>& out) const {
  struct Bigram {
    int rank, left, right;
    size_t left_n, right_n;
  };
  struct Cmp {  // lowest rank first, then leftmost
    bool operator()(const Bigram& a, const Bigram& b) const {
      return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
  };
  std::vector<Symbol> sym;
  std::string word;
  for (const std::string& piece : pretok_->split(text)) {
    word.clear();
    for (unsigned char c : piece) word += utf8::byte_to_symbol(c);
    if (ignore_merges_) {
      const TokenId id = find_token(word);
      if (id != kNoToken) {
        out.push_back(id);
        continue;
      }
    }
    sym.clear();
    for (size_t off = 0; off < word.size();) {
      const size_t len = std::min(word.size() - off, utf8::lead_length(static_cast<unsigned char>(word[off])));
      const int idx = static_cast<int>(sym.size());
      sym.push_back({idx - 1, off + len == word.size() ? -1 : idx + 1, off, len});
      off += len;
    }
    std::priority_queue<Bigram, std::vector<Bigram>, Cmp> queue;
    auto add = [&](int l, int r) {
      if (l < 0 || r < 0) return;
      const std::string_view ws(word);
      const int rank = bpe_rank(ws.substr(sym[l].start, sym[l].n), ws.substr(sym[r].start, sym[r].n));
      if (rank >= 0) queue.push({rank, l, r, sym[l].n, sym[r].n});
    };
    for (int i = 1; i < static_cast<int>(sym.size()); ++i) add(i - 1, i);
    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Symbol& l = sym[b.left];
      Symbol& r = sym[b.right];
      if (l.n == 0 || r.n == 0 || l.n != b.left_n || r.n != b.right_n) continue;  // outdated
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = b.left;
      add(l.prev, b.left);
      add(b.left, l.next);
    }
    for (const Symbol& s : sym) {
      if (s.n == 0) continue;
      const std::string_view str = std::string_view(word).substr(s.start, s.n);
      const TokenId id = find_token(str);
      if (id != kNoToken) {
        out.push_back(id);
        continue;
      }
      // llama.cpp's fallback: look up every single byte of the symbol's spelling.
      for (char c : str) {
        const TokenId bid = find_token(std::string_view(&c, 1));
        if (bid != kNoToken) out.push_back(bid);
      }
    }
  }
}

void Tokenizer::encode_spm(std::string_view text, std::vector<TokenId>& out) const {
  struct Bigram {
    float score;
    int left, right;
    size_t size;
  };
  struct Cmp {  // highest score first, then leftmost
    bool operator()(const Bigram& a, const Bigram& b) const {
      return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
  };
  std::vector<Symbol> sym;
  for (size_t off = 0; off < text.size();) {
    // A valid sequence is one symbol (as in llama.cpp); an invalid byte is a symbol of its own
    // (llama.cpp would swallow the following bytes by the lead byte's announced length).
    uint32_t cp = 0;
    const size_t len = std::max<size_t>(1, utf8::decode_one(text, off, &cp));
    const int idx = static_cast<int>(sym.size());
    sym.push_back({idx - 1, off + len == text.size() ? -1 : idx + 1, off, len});
    off += len;
  }
  if (sym.empty()) return;
  std::priority_queue<Bigram, std::vector<Bigram>, Cmp> queue;
  auto add = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    const TokenId id = find_token(text.substr(sym[l].start, sym[l].n + sym[r].n));
    if (id == kNoToken) return;
    queue.push({scores_[id], l, r, sym[l].n + sym[r].n});
  };
  for (int i = 1; i < static_cast<int>(sym.size()); ++i) add(i - 1, i);
  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = sym[b.left];
    Symbol& r = sym[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    add(l.prev, b.left);
    add(b.left, l.next);
  }
  for (int i = 0; i != -1; i = sym[i].next) {
    const std::string_view s = text.substr(sym[i].start, sym[i].n);
    const TokenId id = find_token(s);
    if (id != kNoToken) {
      out.push_back(id);
      continue;
    }
    for (unsigned char c : s) {
      const TokenId bid = byte_tokens_[c];
      out.push_back(bid != kNoToken ? bid : unk_);
    }
  }
}

std::string Tokenizer::token_to_piece(TokenId id, bool render_special) const {
  if (!valid(id)) return {};
  const uint32_t a = attrs_[id];
  const std::string& text = tokens_[id];
  if (!render_special && (a & (kAttrControl | kAttrUnknown))) return {};
  if (a & (kAttrControl | kAttrUnknown | kAttrUserDefined)) return text;
  if (kind_ == VocabKind::Spm) {
    if (a & kAttrNormal) {
      std::string s;
      for (size_t i = 0; i < text.size();) {
        if (text.compare(i, 3, kSpmSpace) == 0) {
          s += ' ';
          i += 3;
        } else {
          s += text[i++];
        }
      }
      return s;
    }
    if (a & kAttrByte) {
      // "<0xXX>"
      if (text.size() == 6) return std::string(1, static_cast<char>(std::strtol(text.substr(3, 2).c_str(), nullptr, 16)));
      return {};
    }
    return {};
  }
  if (!(a & kAttrNormal)) return {};
  std::string s;
  uint32_t cp = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t k = utf8::decode_one(text, i, &cp);
    if (k == 0) {  // not UTF-8: pass the byte through
      s += text[i++];
      continue;
    }
    const int b = utf8::symbol_to_byte(cp);
    if (b >= 0) {
      s += static_cast<char>(b);
    } else {  // not in the byte alphabet: llama.cpp's marker
      char hex[4];
      s += "[UNK_BYTE_0x";
      for (size_t j = 0; j < k; ++j) {
        std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(text[i + j]));
        s += hex;
      }
      s.append(text, i, k);
      s += ']';
    }
    i += k;
  }
  return s;
}

std::string Tokenizer::text_piece(TokenId id, bool render_special) const { return token_to_piece(id, render_special); }

bool Tokenizer::covers_all_bytes() const {
  for (int b = 0; b < 256; ++b) {
    TokenId id = kNoToken;
    if (kind_ == VocabKind::Spm) {
      id = byte_tokens_[static_cast<size_t>(b)];
    } else {
      id = find_token(utf8::byte_to_symbol(static_cast<uint8_t>(b)));
      if (id != kNoToken && !(attrs_[id] & kAttrNormal)) id = kNoToken;
    }
    if (id == kNoToken) return false;
  }
  return true;
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids, bool render_special) const {
  std::string raw;
  // Byte-exact (no U+FFFD substitution): concatenate pieces with the same space rule.
  bool at_start = true;
  for (TokenId id : ids) {
    std::string p = text_piece(id, render_special);
    if (valid(id) && (attrs_[id] & (kAttrControl | kAttrUnknown))) {
      at_start = true;
      raw += p;
      continue;
    }
    if (!p.empty()) {  // only the first piece loses the space the encoder added
      if (at_start && kind_ == VocabKind::Spm && add_space_prefix_ && p[0] == ' ') p.erase(0, 1);
      at_start = false;
    }
    raw += p;
  }
  return raw;
}

std::string StreamDecoder::push(TokenId id) {
  std::string p = tok_.text_piece(id, render_special_);
  if (tok_.attr(id) & (kAttrControl | kAttrUnknown)) {
    first_ = true;
  } else {
    if (!p.empty()) {
      if (first_ && tok_.kind() == VocabKind::Spm && tok_.add_space_prefix() && p[0] == ' ') p.erase(0, 1);
      first_ = false;
    }
  }
  return push_bytes(p);
}

std::string StreamDecoder::push_bytes(std::string_view bytes) {
  pending_.append(bytes);
  const size_t hold = utf8::incomplete_tail(pending_);
  std::string out = utf8::sanitize(std::string_view(pending_).substr(0, pending_.size() - hold));
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = utf8::sanitize(pending_);
  pending_.clear();
  return out;
}

}  // namespace moepack
