// Quantized block layouts, byte-compatible with GGUF/ggml.
//
//   Q8_0: 32 values = f16 scale d + 32 × int8;             x = d · q
//   Q4_0: 32 values = f16 scale d + 16 bytes of nibbles;   x = d · (q − 8)
//         byte j holds value j in its low nibble and value j+16 in its high nibble.
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

}  // namespace nucleus
