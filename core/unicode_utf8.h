// UTF-8 helpers shared by the tokenizer, the pre-tokenizer and the streaming decoder.
//
// Decoding is strict (RFC 3629): overlong forms, surrogates (U+D800..U+DFFF), code points above
// U+10FFFF, truncated sequences and stray continuation bytes are invalid. Callers decide what an
// invalid byte means; nothing here throws on bad input.
//
// The byte-level alphabet is GPT-2's `bytes_to_unicode` (OpenAI, gpt-2/src/encoder.py): the 188
// printable Latin-1 bytes (0x21..0x7E, 0xA1..0xAC, 0xAE..0xFF) map to themselves, the other 68
// bytes map, in increasing byte order, to U+0100, U+0101, ... Byte-level BPE vocabularies
// (`tokenizer.ggml.model = gpt2`) spell every token in this alphabet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moepack::utf8 {

inline constexpr uint32_t kReplacement = 0xFFFD;

// Length of the valid UTF-8 sequence starting at s[i], and its code point in *cp; 0 if the bytes
// at i do not start a complete valid sequence (then *cp is left unchanged).
size_t decode_one(std::string_view s, size_t i, uint32_t* cp);

// Appends the UTF-8 encoding of `cp` (must be <= 0x10FFFF and not a surrogate).
void append(std::string& out, uint32_t cp);

// Number of bytes a sequence announces by its lead byte, the way llama.cpp's unicode_len_utf8
// reads it (by the high nibble: 0x0-0xB -> 1, 0xC-0xD -> 2, 0xE -> 3, 0xF -> 4). Used where the
// reference tokenizer splits text into "characters" without validating.
inline size_t lead_length(unsigned char b) {
  static constexpr unsigned char kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[b >> 4];
}

// True if `s` is entirely valid UTF-8.
bool is_valid(std::string_view s);

// Replaces every invalid sequence by U+FFFD, one per maximal invalid subpart (the Unicode
// Standard's recommended practice, ch. 3 "U+FFFD Substitution of Maximal Subparts"; also what
// Python's bytes.decode(errors="replace") does).
std::string sanitize(std::string_view s);

// Length of the longest prefix of the last <= 3 bytes of `s` that could still become a valid
// sequence if more bytes arrive (0 if the tail is complete or already invalid).
size_t incomplete_tail(std::string_view s);

// GPT-2 byte-level alphabet: the code point that stands for `byte`, as UTF-8.
const std::string& byte_to_symbol(uint8_t byte);
// Inverse: the byte a byte-level code point stands for, or -1 if `cp` is not in the alphabet.
int symbol_to_byte(uint32_t cp);

}  // namespace moepack::utf8
