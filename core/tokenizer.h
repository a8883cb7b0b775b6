// Tokenizer built from a GGUF's `tokenizer.*` metadata, token-for-token identical to llama.cpp.
//
// Reference: llama.cpp src/llama-vocab.cpp (llama_vocab::impl::load, tokenize, token_to_piece) at
// the commit our fixtures were made with (../shared/fixtures/README.md). Supported:
//   - byte-level BPE (`tokenizer.ggml.model = gpt2`), regex pre-tokenizer per `tokenizer.ggml.pre`
//     (core/pretokenizer.h), merges ranked by their order in `tokenizer.ggml.merges`;
//   - SentencePiece BPE (`tokenizer.ggml.model = llama`): score-driven merges, "▁" for spaces,
//     a space prefix (`tokenizer.ggml.add_space_prefix`, default on), byte fallback `<0xXX>`.
//
// Special tokens: control, user-defined and unknown tokens are found in the text before regex
// splitting, longest first. Control and unknown tokens only when the caller asks for it
// (`parse_special`); user-defined ones always (llama.cpp and HF tokenizers both do this). A user's
// message must therefore be encoded with parse_special = false: `<|im_end|>` typed by a user stays
// text. Tokens whose text marks them as end-of-turn / FIM markers are promoted to control the way
// llama.cpp does, even if the GGUF typed them as normal.
//
// Invalid UTF-8 input never throws. BPE keeps every input byte (so decode(encode(x)) == x for any
// bytes); llama.cpp instead replaces each invalid byte by U+FFFD — identical results on valid
// UTF-8, which is all the oracle covers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/gguf.h"
#include "core/pretokenizer.h"

namespace moepack {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// GGUF `tokenizer.ggml.token_type` values.
enum class TokenType : int32_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// Token attributes (bit set), as llama.cpp derives them from the token type.
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
};

enum class VocabKind { Bpe, Spm };

class Tokenizer {
 public:
  // Reads `tokenizer.*` from `gguf` (the model's primary file). Throws FormatError naming the key
  // if the vocabulary is missing, malformed or of an unsupported kind.
  static Tokenizer from_gguf(const GgufFile& gguf);

  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Tokenizes `text` exactly like llama_tokenize(text, add_special, parse_special):
  // add_special adds BOS/EOS as the vocabulary's add_bos/add_eos say.
  std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const;

  // Like encode(text, add_special, parse_special = true), except that special-token text inside
  // the byte ranges `plain` ([begin, end) offsets into `text`) stays plain text. Used for rendered
  // chat prompts: the template's own markers become special tokens, user-supplied message text
  // never does. Without special-token text inside `plain`, the result equals encode(text, ., true).
  std::vector<TokenId> encode_with_plain_spans(std::string_view text, bool add_special,
                                               const std::vector<std::pair<size_t, size_t>>& plain) const;

  // The bytes of one token, like llama_token_to_piece(lstrip = 0): control/unknown tokens give
  // their text only when `render_special`; byte tokens give their byte; may be invalid UTF-8.
  std::string token_to_piece(TokenId id, bool render_special) const;

  // The bytes a token contributes to decoded text (today: token_to_piece).
  std::string text_piece(TokenId id, bool render_special) const;

  // True if every byte 0..255 has a plain token (BPE: its byte-level symbol is a normal token;
  // SPM: <0xXX> exists), i.e. decode(encode(x)) == x holds for arbitrary bytes, not only for
  // valid UTF-8. DeepSeek-Coder's vocabulary, for one, lacks plain tokens for the 13 bytes that
  // never occur in UTF-8 (0xC0, 0xC1, 0xF5..0xFF) and re-adds their symbols as user-defined text.
  bool covers_all_bytes() const;

  // Concatenated text pieces. For SentencePiece vocabularies with a space prefix, the single leading
  // space the encoder added is removed from the first piece (as llama_detokenize does).
  std::string decode(const std::vector<TokenId>& ids, bool render_special) const;

  VocabKind kind() const { return kind_; }
  const std::string& model_name() const { return model_; }  // tokenizer.ggml.model
  const std::string& pre_name() const { return pre_; }       // tokenizer.ggml.pre
  size_t n_tokens() const { return tokens_.size(); }
  TokenId bos() const { return bos_; }
  TokenId eos() const { return eos_; }
  TokenId eot() const { return eot_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  bool is_eog(TokenId id) const;  // end of generation (EOS, EOT, <|im_end|>-like, ...)
  bool is_control(TokenId id) const { return valid(id) && (attrs_[id] & kAttrControl); }
  uint32_t attr(TokenId id) const { return valid(id) ? attrs_[id] : 0u; }
  const std::string& token_text(TokenId id) const;  // as stored in the vocabulary
  TokenId find_token(std::string_view text) const;  // kNoToken if absent
  // Warnings collected while loading (unknown pre-tokenizer, promoted tokens), for logs.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  Tokenizer();
  bool valid(TokenId id) const { return id >= 0 && static_cast<size_t>(id) < tokens_.size(); }
  void finish_load();
  std::vector<TokenId> encode_impl(std::string_view text, bool add_special, bool parse_special,
                                   const std::vector<std::pair<size_t, size_t>>* plain) const;
  void encode_bpe(std::string_view text, std::vector<TokenId>& out) const;
  void encode_spm(std::string_view text, std::vector<TokenId>& out) const;
  int bpe_rank(std::string_view left, std::string_view right) const;

  VocabKind kind_ = VocabKind::Bpe;
  std::string model_, pre_;
  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<uint32_t> attrs_;
  std::unordered_map<std::string, TokenId> token_to_id_;
  std::unordered_map<std::string, int> merge_rank_;  // key: left + '\xff' + right
  std::vector<TokenId> special_by_length_;           // control/user-defined/unknown, longest first
  std::vector<TokenId> eog_;
  std::vector<TokenId> byte_tokens_;                 // SPM: <0xXX> ids, kNoToken if absent
  std::unique_ptr<PreTokenizer> pretok_;
  TokenId bos_ = kNoToken, eos_ = kNoToken, eot_ = kNoToken, eom_ = kNoToken, unk_ = kNoToken, sep_ = kNoToken;
  bool add_bos_ = false, add_eos_ = false, add_sep_ = false, add_space_prefix_ = false, ignore_merges_ = false;
  std::vector<std::string> warnings_;
};

// Turns a stream of token ids into text that is always valid UTF-8: bytes of a sequence that a
// token leaves unfinished are held back until the next token completes it; bytes that can never
// form a valid sequence become U+FFFD (one per maximal invalid subpart). Control tokens are
// skipped unless `render_special`.
class StreamDecoder {
 public:
  StreamDecoder(const Tokenizer& tok, bool render_special) : tok_(tok), render_special_(render_special) {}
  // Text that became final with this token (possibly empty).
  std::string push(TokenId id);
  // Raw bytes in, for tests and other producers: same hold-back rules.
  std::string push_bytes(std::string_view bytes);
  // End of stream: whatever is held back, with an unfinished tail replaced by U+FFFD.
  std::string flush();
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tok_;
  bool render_special_;
  bool first_ = true;
  std::string pending_;
};

}  // namespace moepack
