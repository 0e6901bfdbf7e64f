// Pieces every packed-row AVX-512 kernel (packed_avx512.cpp, packed_q45_k_avx512.cpp,
// packed_q6_k_avx512.cpp) shares: 32-bit lane r of a register is row r of a 16-row group.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/kquant_values_avx512.h"

namespace nucleus {

// Four activation bytes in every 32-bit lane (one VPBROADCASTD from memory).
NUCLEUS_VNNI512 inline __m512i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// A VPSHUFB index for a 16-byte vector of per-row bytes broadcast to every 128-bit lane: lane L's
// 32-bit element j (row 4L + j) gets that row's byte at bytes `at` and `at` + 2 and zero in the other
// two. at = 0: an unsigned byte s as the 16-bit pair (s, s); at = 1: the pair (256·s, 256·s), which
// an arithmetic shift right by 8 turns into a signed byte's (s, s).
NUCLEUS_VNNI512 inline __m512i row_byte_pair_index(int at) {
  alignas(64) int8_t idx[64];
  for (int lane = 0; lane < 4; ++lane)
    for (int j = 0; j < 4; ++j) {
      int8_t* p = idx + 16 * lane + 4 * j;
      p[at] = p[at + 2] = static_cast<int8_t>(4 * lane + j);
      p[1 - at] = p[3 - at] = static_cast<int8_t>(0x80);
    }
  return _mm512_load_si512(idx);
}

// Asks for slice `step` (of 8) of a block of kBlockBytes bytes at `ahead`, into L2: called once at
// each of a block's 8 lane steps, it spreads the block's lines over the loop instead of asking for
// them all at its start (why: packed_q45_k_avx512.cpp, at kPrefetchBlocks).
template <size_t kBlockBytes>
NUCLEUS_VNNI512 inline void prefetch_block_slice(const uint8_t* ahead, int step) {
  constexpr size_t kLines = (kBlockBytes + 63) / 64;
  const size_t k = static_cast<size_t>(step);
  for (size_t line = kLines * k / 8; line < kLines * (k + 1) / 8; ++line)
    _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * line), _MM_HINT_T1);
}

}  // namespace nucleus
