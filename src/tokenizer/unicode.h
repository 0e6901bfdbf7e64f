// UTF-8 helpers and the GPT-2 byte-level alphabet, shared by the tokenizers.
//
// Tokenizers work on raw bytes that are usually, but not always, valid UTF-8 (a model can emit half of
// a character; a user can send anything). Nothing here throws on bad input: invalid bytes are reported
// (is_valid_utf8, next_codepoint) or passed through, never dropped.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nucleus::unicode {

// Bytes in the sequence that `lead` announces, judged from its high four bits alone: 2..4 for lead
// bytes, 1 for ASCII and for bytes that cannot start a sequence. SentencePiece cuts text into symbols
// this way (so an invalid byte becomes a one-byte symbol that falls back to a <0xXX> token).
inline size_t utf8_sequence_length(uint8_t lead) {
  static constexpr uint8_t kLengthByHighBits[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengthByHighBits[lead >> 4];
}

// Strict UTF-8: shortest form, no surrogates, nothing above U+10FFFF.
bool is_valid_utf8(std::string_view text);

// Decodes the code point starting at `pos` and advances `pos` past it. On an invalid or truncated
// sequence returns false and advances `pos` by one byte.
bool next_codepoint(std::string_view text, size_t& pos, uint32_t& codepoint);

void append_utf8(uint32_t codepoint, std::string& out);

// Length of the longest prefix of `text` that does not end inside an unfinished character: when the
// text ends with the start of a valid multi-byte sequence that still lacks bytes, the prefix stops
// before it. Bytes that can never become valid are part of the prefix (holding them back would stall
// a stream forever).
size_t complete_utf8_prefix_length(std::string_view text);

// GPT-2's byte-level alphabet: every byte value has one printable code point standing for it, so any
// byte string is a string of "characters" BPE can merge. Printable Latin-1 bytes (!..~, ¡..¬, ®..ÿ)
// stand for themselves; the other 68 bytes map, in increasing order, to U+0100, U+0101, ... (space is
// U+0120 'Ġ', newline U+010A 'Ċ').
uint32_t byte_to_codepoint(uint8_t byte);
// The byte a code point of the alphabet stands for, or -1 when it is not in the alphabet.
int codepoint_to_byte(uint32_t codepoint);

}  // namespace nucleus::unicode
