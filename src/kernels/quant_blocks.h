// Quantized block layouts, byte-compatible with GGUF/ggml.
//
//   Q8_0: 32 values = f16 scale d + 32 × int8;             x = d · q
//   Q4_0: 32 values = f16 scale d + 16 bytes of nibbles;   x = d · (q − 8)
//         byte j holds value j in its low nibble and value j+16 in its high nibble.
//
// K-quants: super-blocks of 256 values in sub-blocks with their own quantized scales.
//   Q4_K: 8 sub-blocks of 32; 6-bit scale and min per sub-block; x = d·sc·q − dmin·m, q ∈ [0,15]
//   Q5_K: as Q4_K with a fifth bit per value in qh;                        q ∈ [0,31]
//   Q6_K: 16 sub-blocks of 16; int8 scale per sub-block; x = d·sc·(q − 32), q ∈ [0,63]
//   Q8_K: activations; f32 scale, int8 values, and int16 sums of each 16 values (for the mins)
#pragma once
#include <cstdint>

namespace nucleus {

constexpr int kQK8_0 = 32;
constexpr int kQK4_0 = 32;

struct BlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ4_0 {
  uint16_t d;  // f16 scale
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

constexpr int kQK_K = 256;

struct BlockQ4_K {
  uint16_t d;     // f16 super-block scale for the sub-block scales
  uint16_t dmin;  // f16 super-block scale for the sub-block mins
  uint8_t scales[12];  // 8 scales and 8 mins, 6 bits each (see q4k_scale_min)
  uint8_t qs[kQK_K / 2];  // per 64 values: 32 bytes, low nibbles = first 32, high = next 32
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];  // fifth bits: bit 2j / 2j+1 of qh[l] for value l of sub-block 2j / 2j+1
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];      // lower 4 bits
  uint8_t qh[kQK_K / 4];      // upper 2 bits
  int8_t scales[kQK_K / 16];  // one per 16 values
  uint16_t d;                 // f16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];  // sum of each group of 16 qs
};
static_assert(sizeof(BlockQ8_K) == 292);

// Sub-block j's 6-bit scale and min from a Q4_K/Q5_K scales array.
inline void q4k_scale_min(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace nucleus
