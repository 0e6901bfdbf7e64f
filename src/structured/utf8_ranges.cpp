#include "structured/utf8_ranges.h"

#include <algorithm>

namespace nucleus {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

int encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

std::array<uint8_t, 4> encode(uint32_t cp, int length) {
  std::array<uint8_t, 4> b{};
  if (length == 1) {
    b[0] = static_cast<uint8_t>(cp);
  } else {
    static constexpr uint8_t kLead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
    for (int i = length - 1; i > 0; --i) {
      b[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      cp >>= 6;
    }
    b[0] = static_cast<uint8_t>(kLead[length] | cp);
  }
  return b;
}

// [lo, hi] all of one encoded length. Splits until every byte position ranges independently:
// a range is expressible as per-byte ranges when, for each suffix of continuation bytes, either
// both ends share the prefix above it or the range covers whole blocks of that suffix.
void split_same_length(uint32_t lo, uint32_t hi, int length, std::vector<Utf8Sequence>& out) {
  for (int i = 1; i < length; ++i) {
    const uint32_t mask = (1u << (6 * i)) - 1;
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        split_same_length(lo, lo | mask, length, out);
        split_same_length((lo | mask) + 1, hi, length, out);
        return;
      }
      if ((hi & mask) != mask) {
        split_same_length(lo, (hi & ~mask) - 1, length, out);
        split_same_length(hi & ~mask, hi, length, out);
        return;
      }
    }
  }
  Utf8Sequence seq;
  seq.length = length;
  seq.lo = encode(lo, length);
  seq.hi = encode(hi, length);
  out.push_back(seq);
}

}  // namespace

void CodepointSet::add(uint32_t lo, uint32_t hi) {
  hi = std::min(hi, kMaxCodepoint);
  if (lo > hi) return;
  // Cut out the surrogates.
  if (lo <= kSurrogateHi && hi >= kSurrogateLo) {
    if (lo < kSurrogateLo) add(lo, kSurrogateLo - 1);
    if (hi > kSurrogateHi) add(kSurrogateHi + 1, hi);
    return;
  }
  ranges_.emplace_back(lo, hi);
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges_) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  ranges_ = std::move(merged);
}

CodepointSet CodepointSet::complement() const {
  CodepointSet out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : ranges_) {
    if (lo > next) out.add(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.add(next, kMaxCodepoint);
  return out;
}

bool CodepointSet::contains(uint32_t cp) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), std::make_pair(cp, kMaxCodepoint + 1));
  return it != ranges_.begin() && std::prev(it)->second >= cp;
}

std::vector<Utf8Sequence> utf8_sequences(const CodepointSet& set) {
  static constexpr uint32_t kLengthEnd[4] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
  std::vector<Utf8Sequence> out;
  for (auto [lo, hi] : set.ranges()) {
    while (lo <= hi) {
      const int length = encoded_length(lo);
      const uint32_t end = std::min(hi, kLengthEnd[length - 1]);
      split_same_length(lo, end, length, out);
      if (end == hi) break;
      lo = end + 1;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  const int length = encoded_length(cp);
  const auto b = encode(cp, length);
  out.append(reinterpret_cast<const char*>(b.data()), static_cast<size_t>(length));
}

}  // namespace nucleus
