// The length of the longest common prefix of two token sequences, at most `max_length`: how much
// of a cached sequence still matches a new one (the rest of the cache is dropped and recomputed).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

namespace nucleus {

inline int64_t common_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b, int64_t max_length) {
  const int64_t limit = std::min({max_length, static_cast<int64_t>(a.size()), static_cast<int64_t>(b.size())});
  int64_t n = 0;
  while (n < limit && a[static_cast<size_t>(n)] == b[static_cast<size_t>(n)]) ++n;
  return n;
}

}  // namespace nucleus
