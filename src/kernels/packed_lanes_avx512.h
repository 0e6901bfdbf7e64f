// Pieces every packed-row AVX-512 kernel (packed_avx512.cpp, packed_q45_k_avx512.cpp,
// packed_q6_k_avx512.cpp) shares: 32-bit lane r of a register is row r of a 16-row group.
#pragma once

#include <immintrin.h>

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

}  // namespace nucleus
