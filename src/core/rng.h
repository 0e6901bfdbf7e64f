// Counter-based random numbers: a draw is a pure function of (seed, position, stream), so a
// request's samples never depend on batch composition, thread count or other requests.
#pragma once
#include <cstdint>

namespace nucleus {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform double in [0, 1) for (seed, position, stream). `stream` separates independent
// draws at the same position (e.g. a speculative accept test vs. the resample).
inline double uniform_at(uint64_t seed, uint64_t position, uint64_t stream = 0) {
  const uint64_t bits = splitmix64(splitmix64(splitmix64(seed) ^ position) ^ (stream * 0xd1b54a32d192ed03ull));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace nucleus
