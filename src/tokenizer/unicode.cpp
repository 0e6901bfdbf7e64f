#include "tokenizer/unicode.h"

#include <array>

namespace nucleus::unicode {

namespace {

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

// Valid range of the second byte after a given lead byte (the first continuation byte carries the
// shortest-form, surrogate and U+10FFFF limits); other continuation bytes are always 0x80..0xBF.
struct SecondByteRange {
  uint8_t low, high;
};
SecondByteRange second_byte_range(uint8_t lead) {
  switch (lead) {
    case 0xE0: return {0xA0, 0xBF};  // shortest form for 3 bytes
    case 0xED: return {0x80, 0x9F};  // no UTF-16 surrogates
    case 0xF0: return {0x90, 0xBF};  // shortest form for 4 bytes
    case 0xF4: return {0x80, 0x8F};  // nothing above U+10FFFF
    default: return {0x80, 0xBF};
  }
}

// Sequence length for a lead byte that can start a valid sequence, else 0.
size_t valid_lead_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// The byte → code point table of the byte-level alphabet, built once at compile time.
constexpr std::array<uint16_t, 256> make_byte_alphabet() {
  std::array<uint16_t, 256> table{};
  uint16_t next_extra = 256;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE);
    table[byte] = printable ? static_cast<uint16_t>(byte) : next_extra++;
  }
  return table;
}
constexpr std::array<uint16_t, 256> kByteAlphabet = make_byte_alphabet();

// Inverse over U+0000..U+0143 (the alphabet's highest code point is 256 + 68 - 1 = U+0143).
constexpr size_t kAlphabetLimit = 256 + 68;
constexpr std::array<int16_t, kAlphabetLimit> make_alphabet_inverse() {
  std::array<int16_t, kAlphabetLimit> inverse{};
  for (auto& entry : inverse) entry = -1;
  for (int byte = 0; byte < 256; ++byte) inverse[kByteAlphabet[byte]] = static_cast<int16_t>(byte);
  return inverse;
}
constexpr std::array<int16_t, kAlphabetLimit> kAlphabetInverse = make_alphabet_inverse();

}  // namespace

bool next_codepoint(std::string_view text, size_t& pos, uint32_t& codepoint) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const uint8_t lead = bytes[pos];
  const size_t length = valid_lead_length(lead);
  if (length == 0 || pos + length > text.size()) {
    ++pos;
    return false;
  }
  if (length == 1) {
    codepoint = lead;
    ++pos;
    return true;
  }
  const SecondByteRange range = second_byte_range(lead);
  if (bytes[pos + 1] < range.low || bytes[pos + 1] > range.high) {
    ++pos;
    return false;
  }
  for (size_t i = 2; i < length; ++i) {
    if (!is_continuation(bytes[pos + i])) {
      ++pos;
      return false;
    }
  }
  static constexpr uint8_t kLeadMask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t value = lead & kLeadMask[length];
  for (size_t i = 1; i < length; ++i) value = (value << 6) | (bytes[pos + i] & 0x3F);
  codepoint = value;
  pos += length;
  return true;
}

bool is_valid_utf8(std::string_view text) {
  size_t pos = 0;
  uint32_t codepoint = 0;
  while (pos < text.size()) {
    // ASCII fast path: most token texts and most input is ASCII.
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    if (!next_codepoint(text, pos, codepoint)) return false;
  }
  return true;
}

void append_utf8(uint32_t codepoint, std::string& out) {
  if (codepoint < 0x80) {
    out.push_back(static_cast<char>(codepoint));
  } else if (codepoint < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (codepoint >> 6)));
    out.push_back(static_cast<char>(0x80 | (codepoint & 0x3F)));
  } else if (codepoint < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (codepoint >> 12)));
    out.push_back(static_cast<char>(0x80 | ((codepoint >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (codepoint & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (codepoint >> 18)));
    out.push_back(static_cast<char>(0x80 | ((codepoint >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((codepoint >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (codepoint & 0x3F)));
  }
}

size_t complete_utf8_prefix_length(std::string_view text) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const size_t size = text.size();
  // An unfinished sequence is at most 3 bytes long: a lead byte and up to 2 continuation bytes.
  size_t start = size;
  while (start > 0 && size - start < 3 && is_continuation(bytes[start - 1])) --start;
  if (start == 0) return size;
  const size_t lead_pos = start - 1;
  const size_t length = valid_lead_length(bytes[lead_pos]);
  const size_t present = size - lead_pos;
  if (length <= 1 || present >= length) return size;  // complete, ASCII, or never valid
  if (present >= 2) {
    const SecondByteRange range = second_byte_range(bytes[lead_pos]);
    if (bytes[lead_pos + 1] < range.low || bytes[lead_pos + 1] > range.high) return size;  // never valid
  }
  return lead_pos;
}

uint32_t byte_to_codepoint(uint8_t byte) { return kByteAlphabet[byte]; }

int codepoint_to_byte(uint32_t codepoint) {
  return codepoint < kAlphabetLimit ? kAlphabetInverse[codepoint] : -1;
}

}  // namespace nucleus::unicode
