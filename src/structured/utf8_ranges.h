// Code point sets and their UTF-8 encodings as byte-range sequences, so character classes can be
// matched one byte at a time (grammar.h).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nucleus {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// A set of code points as sorted, disjoint, non-adjacent inclusive ranges. Surrogates
// (U+D800–U+DFFF) are never members: they have no UTF-8 encoding.
class CodepointSet {
 public:
  void add(uint32_t lo, uint32_t hi);  // inclusive; lo > hi adds nothing
  CodepointSet complement() const;      // over U+0000–U+10FFFF without surrogates
  bool contains(uint32_t cp) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

// One way to spell some of the set's code points: byte i lies in [lo[i], hi[i]].
struct Utf8Sequence {
  int length = 0;
  std::array<uint8_t, 4> lo{}, hi{};
};

// Byte-range sequences whose union is exactly the UTF-8 encodings of the set's members.
std::vector<Utf8Sequence> utf8_sequences(const CodepointSet& set);

// Appends the UTF-8 encoding of `cp` (which must be ≤ U+10FFFF).
void append_utf8(std::string& out, uint32_t cp);

}  // namespace nucleus
