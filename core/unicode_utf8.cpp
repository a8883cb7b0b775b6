// See unicode_utf8.h.
#include "core/unicode_utf8.h"

#include <array>

namespace moepack::utf8 {

namespace {

// Maximal valid subpart length starting at i (>= 1), per the Unicode well-formed byte table
// (Table 3-7): how many bytes form a prefix of some valid sequence.
size_t maximal_subpart(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  unsigned char lo = 0x80, hi = 0xBF;
  size_t need = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  size_t k = 1;
  for (; k <= need && i + k < s.size(); ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) break;
  }
  return k;  // == need + 1 only for a complete valid sequence
}

struct ByteTables {
  std::array<std::string, 256> to_symbol;
  std::array<int, 512> from_cp;  // code points < 512 cover the whole alphabet
  ByteTables() {
    from_cp.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
      append(to_symbol[static_cast<size_t>(b)], cp);
      from_cp[cp] = b;
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

size_t decode_one(std::string_view s, size_t i, uint32_t* cp) {
  if (i >= s.size()) return 0;
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  const size_t n = maximal_subpart(s, i);
  const size_t need = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
  if (n != need) return 0;
  uint32_t v = b0 & (need == 2 ? 0x1Fu : need == 3 ? 0x0Fu : 0x07u);
  for (size_t k = 1; k < need; ++k) v = (v << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
  *cp = v;
  return need;
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_valid(std::string_view s) {
  uint32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = decode_one(s, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  uint32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = decode_one(s, i, &cp);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      append(out, kReplacement);
      i += maximal_subpart(s, i);
    }
  }
  return out;
}

size_t incomplete_tail(std::string_view s) {
  // Look for a lead byte in the last 3 bytes whose maximal subpart runs to the end of `s`
  // without completing.
  const size_t start = s.size() > 3 ? s.size() - 3 : 0;
  for (size_t i = start; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0xC2 || b > 0xF4) continue;
    const size_t need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
    const size_t n = maximal_subpart(s, i);
    if (i + n == s.size() && n < need) return n;
  }
  return 0;
}

const std::string& byte_to_symbol(uint8_t byte) { return tables().to_symbol[byte]; }

int symbol_to_byte(uint32_t cp) { return cp < 512 ? tables().from_cp[cp] : -1; }

}  // namespace moepack::utf8
