// Regex pre-tokenization for byte-level BPE vocabularies (`tokenizer.ggml.pre`).
//
// Reference: llama.cpp's llm_tokenizer_bpe (src/llama-vocab.cpp) and unicode_regex_split
// (src/unicode.cpp) at the commit our fixtures were made with. Each pre-tokenizer type is an
// ordered list of regexes. Splitting starts with the whole text as one piece; every regex in turn
// splits every current piece into its matches and the unmatched gaps between them (both kept),
// matching inside the piece only (so `$` and `(?!\S)` see the piece's end). The regexes are the
// ones llama.cpp uses, compiled with PCRE2 in UTF + Unicode-property mode (\s, \p{L}, \p{N}...
// follow Unicode; `$` only matches at the very end, as in ECMAScript).
//
// Invalid UTF-8: llama.cpp turns each invalid byte into U+FFFD before matching. We classify an
// invalid byte the same way (as U+FFFD) but keep the original byte in the piece, so byte-level
// BPE round-trips arbitrary bytes. For valid UTF-8 the pieces are identical.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace moepack {

class PreTokenizer {
 public:
  // `pre` is the GGUF `tokenizer.ggml.pre` value ("gpt-2", "deepseek-llm", "llama-bpe", ...).
  // Unknown or empty names use llama.cpp's "default" regex set (as llama.cpp does, with a warning
  // recorded in `warning()`).
  explicit PreTokenizer(const std::string& pre);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Splits `text` (any bytes) into pieces whose concatenation is `text`.
  std::vector<std::string> split(std::string_view text) const;

  const std::string& name() const { return name_; }
  // llama.cpp's per-type flags: a piece that already is a token skips the merges (llama3,
  // tekken); whether BOS is added when the GGUF has no `add_bos_token` key.
  bool ignore_merges() const { return ignore_merges_; }
  bool add_bos_default() const { return add_bos_default_; }
  // Non-empty if the type was not recognised.
  const std::string& warning() const { return warning_; }

  // The regexes in use, in order, as written (before PCRE2-specific rewriting).
  const std::vector<std::string>& regexes() const { return sources_; }

  // The names this class recognises (for docs and error messages).
  static std::vector<std::string> known_types();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_;
  std::string warning_;
  bool ignore_merges_ = false;
  bool add_bos_default_ = false;
  std::vector<std::string> sources_;
};

}  // namespace moepack
