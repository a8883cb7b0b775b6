// See pretokenizer.h. The regex lists mirror llama.cpp's per pre-type lists (where llama.cpp
// rewrote a Hugging Face regex for std::regex, we follow llama.cpp's rewrite, because llama.cpp is
// our oracle); they are compiled with PCRE2.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/pretokenizer.h"

#include <pcre2.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "core/error.h"
#include "core/unicode_utf8.h"

namespace moepack {

namespace {

// --- regex sources -------------------------------------------------------------------------

constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr const char* kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// DeepSeek-LLM: letters are an explicit list of ranges (from the model's tokenizer.json).
constexpr const char* kDeepseekLlmLetters =
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+";

constexpr const char* kDeepseek3Main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// llama.cpp's std::regex-compatible rewrite of the o200k / tekken letter classes.
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Kimi-K2 (tiktoken pattern of moonshotai/Kimi-K2; llama.cpp implements it by hand). PCRE2 has no
// class intersection, so `[X&&[^\p{Han}]]` is written `(?:(?!\p{sc:Han})[X])`; `sc:` asks PCRE2 for
// the Script property (as Rust's regex, tiktoken and llama.cpp use), not Script_Extensions, which
// would also count common CJK punctuation such as U+3002 as Han.
constexpr const char* kKimiK2 =
    R"([\p{sc:Han}]+|[^\r\n\p{L}\p{N}]?(?:(?!\p{sc:Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])*(?:(?!\p{sc:Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?(?:(?!\p{sc:Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])+(?:(?!\p{sc:Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreType {
  std::vector<std::string> names;
  std::vector<std::string> regexes;
  bool ignore_merges = false;  // a piece that is a whole token is emitted without BPE
  bool add_bos = false;        // default of add_bos when the GGUF does not say
};

const std::vector<PreType>& pre_types() {
  static const std::vector<PreType> types = {
      {{"default"},
       {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
       {kLlama3}, true, true},
      {{"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"}, {kLlama3}},
      {{"deepseek-llm"},
       {"[\r\n]", kDeepseekLlmLetters, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+",
        R"(\p{N}+)"}},
      {{"deepseek-v3", "hunyuan-dense", "joyai-llm"}, {R"(\p{N}{1,3})", "[一-龥぀-ゟ゠-ヿ]+", kDeepseek3Main}},
      {{"deepseek-coder"}, {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[一-龥ࠀ-一가-퟿]+", R"(\p{N})"}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}, {R"(\p{N})", kGpt2}},
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
        "modern-bert", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4", "jina-v1-en",
        "jina-v2-code", "roberta-bpe"},
       {kGpt2}},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "stablelm2", "hunyuan", "solar-open", "megrez", "grok-2"}, {kQwen2}},
      {{"qwen35"}, {kQwen35}},
      {{"gpt-4o", "llama4", "minimax-m2"}, {kGpt4o}},
      {{"tekken"}, {kTekken}, true, true},
      {{"kimi-k2"}, {kKimiK2}},
      {{"seed-coder"},
       {R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {{"bailingmoe", "bailingmoe2", "llada-moe"},
       {R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)"}},
      {{"viking"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)", R"(\p{N})"}},
  };
  return types;
}

// llama.cpp's whitespace set includes U+0085 (NEL), which PCRE2's \s leaves out: widen \s / \S.
std::string widen_whitespace(const std::string& re) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '\\' && i + 1 < re.size()) {
      const char n = re[i + 1];
      if (n == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (n == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else {
        out += c;
        out += n;
      }
      ++i;
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // a ']' right after '[' or '[^' is a literal
      if (i + 1 < re.size() && re[i + 1] == '^') out += re[++i];
      if (i + 1 < re.size() && re[i + 1] == ']') out += re[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

struct Regex {
  pcre2_code* code = nullptr;
  pcre2_match_data* md = nullptr;
  Regex() = default;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  Regex(Regex&& o) noexcept : code(std::exchange(o.code, nullptr)), md(std::exchange(o.md, nullptr)) {}
  ~Regex() {
    if (md) pcre2_match_data_free(md);
    if (code) pcre2_code_free(code);
  }
};

}  // namespace

struct PreTokenizer::Impl {
  std::vector<Regex> regexes;
};

PreTokenizer::PreTokenizer(const std::string& pre) : impl_(std::make_unique<Impl>()) {
  const PreType* type = nullptr;
  for (const PreType& t : pre_types()) {
    if (std::find(t.names.begin(), t.names.end(), pre) != t.names.end()) type = &t;
  }
  if (!type) {
    warning_ = "unknown pre-tokenizer \"" + pre + "\", using llama.cpp's \"default\" regexes";
    type = &pre_types().front();
  }
  name_ = pre;
  ignore_merges_ = type->ignore_merges;
  add_bos_default_ = type->add_bos;
  sources_ = type->regexes;
  for (const std::string& src : type->regexes) {
    const std::string pattern = widen_whitespace(src);
    int err = 0;
    PCRE2_SIZE err_off = 0;
    Regex r;
    r.code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                           PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_off, nullptr);
    if (!r.code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw Error("pre-tokenizer \"" + pre + "\": PCRE2 rejected regex at offset " + std::to_string(err_off) +
                  ": " + reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(r.code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back to the interpreter
    r.md = pcre2_match_data_create_from_pattern(r.code, nullptr);
    impl_->regexes.push_back(std::move(r));
  }
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

std::vector<std::string> PreTokenizer::known_types() {
  std::vector<std::string> out;
  for (const PreType& t : pre_types()) out.insert(out.end(), t.names.begin(), t.names.end());
  return out;
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  // Build the subject PCRE2 sees: valid UTF-8 where each invalid byte became U+FFFD (3 bytes).
  // unit_src[k] / unit_dst[k]: where unit k (a code point or one invalid byte) starts in `text`
  // and in `subject`; one extra entry marks the ends.
  std::string subject;
  std::vector<size_t> unit_src, unit_dst;
  subject.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unit_src.push_back(i);
    unit_dst.push_back(subject.size());
    uint32_t cp = 0;
    const size_t n = utf8::decode_one(text, i, &cp);
    if (n > 0) {
      subject.append(text.substr(i, n));
      i += n;
    } else {
      utf8::append(subject, utf8::kReplacement);
      i += 1;
    }
  }
  unit_src.push_back(text.size());
  unit_dst.push_back(subject.size());
  const size_t n_units = unit_dst.size() - 1;
  auto unit_at = [&](size_t dst_offset) {
    return static_cast<size_t>(std::lower_bound(unit_dst.begin(), unit_dst.end(), dst_offset) - unit_dst.begin());
  };

  // Pieces as unit ranges [begin, end).
  std::vector<std::pair<size_t, size_t>> pieces;
  if (n_units > 0) pieces.emplace_back(0, n_units);
  for (const Regex& re : impl_->regexes) {
    std::vector<std::pair<size_t, size_t>> next;
    next.reserve(pieces.size() * 2);
    for (const auto& [ub, ue] : pieces) {
      const size_t base = unit_dst[ub];
      const size_t len = unit_dst[ue] - base;
      const auto* subj = reinterpret_cast<PCRE2_SPTR>(subject.data() + base);
      size_t start = 0, prev_end = 0;
      while (start <= len) {
        const int rc = pcre2_match(re.code, subj, len, start, PCRE2_NO_UTF_CHECK, re.md, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) throw Error("pre-tokenizer \"" + name_ + "\": PCRE2 match error " + std::to_string(rc));
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(re.md);
        const size_t ms = ov[0], me = ov[1];
        if (me == ms) {  // empty match: split nowhere, move on by one code point
          if (ms >= len) break;
          start = unit_dst[unit_at(base + ms) + 1] - base;
          continue;
        }
        if (ms > prev_end) next.emplace_back(unit_at(base + prev_end), unit_at(base + ms));
        next.emplace_back(unit_at(base + ms), unit_at(base + me));
        prev_end = start = me;
      }
      if (prev_end < len) next.emplace_back(unit_at(base + prev_end), ue);
    }
    pieces = std::move(next);
  }

  std::vector<std::string> out;
  out.reserve(pieces.size());
  for (const auto& [ub, ue] : pieces) out.emplace_back(text.substr(unit_src[ub], unit_src[ue] - unit_src[ub]));
  return out;
}

}  // namespace moepack
