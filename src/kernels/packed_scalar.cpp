// Scalar reference for the packed kernels: reads the packed layout value by value.
#include <cmath>

#include "core/fp16.h"
#include "kernels/packed_dot.h"

namespace nucleus {

namespace {

// The unsigned stored value of column `col` of row `row` in one block's quants, and its offset.
uint8_t stored_q4_0(const uint8_t* qs, int row, int col) {
  const int c = (col % 16) / 4, j = col % 4;
  const uint8_t byte = qs[64 * c + 4 * row + j];
  return col < 16 ? (byte & 0x0f) : (byte >> 4);
}
uint8_t stored_q8_0(const uint8_t* qs, int row, int col) { return qs[64 * (col / 4) + 4 * row + (col % 4)]; }

// Q8_0 in lane order: 8 lanes of 4 columns each, reduced pairwise at the end.
void packed_q8_0_lanes(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n_tokens, float* out) {
  for (int t = 0; t < n_tokens; ++t) {
    const int64_t base = (t0 + t) * x.n_blocks;
    for (int row = 0; row < kPackRows; ++row) {
      float lanes[8] = {};
      for (int64_t b = 0; b < x.n_blocks; ++b) {
        const uint8_t* block = w.block_qs(g, b);
        const int8_t* xq = x.blocks[base + b].qs;
        const float d = f16_to_f32(w.block_scales(g, b)[row]) * x.scale[base + b];
        for (int l = 0; l < 8; ++l) {
          int32_t sum = x.chunk_bias[(base + b) * 8 + l];
          for (int col = 4 * l; col < 4 * l + 4; ++col) sum += static_cast<int32_t>(stored_q8_0(block, row, col)) * xq[col];
          lanes[l] = std::fma(static_cast<float>(sum), d, lanes[l]);
        }
      }
      const float a0 = lanes[0] + lanes[4], a1 = lanes[1] + lanes[5], a2 = lanes[2] + lanes[6], a3 = lanes[3] + lanes[7];
      out[t * kPackRows + row] = (a0 + a2) + (a1 + a3);
    }
  }
}

template <bool kQ4>
void packed_scalar(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n_tokens, float* out) {
  const int32_t offset = kQ4 ? 8 : 128;
  for (int t = 0; t < n_tokens; ++t) {
    const int64_t base = (t0 + t) * x.n_blocks;
    for (int row = 0; row < kPackRows; ++row) {
      float acc = 0.0f;
      for (int64_t b = 0; b < x.n_blocks; ++b) {
        const uint8_t* block = w.block_qs(g, b);
        const int8_t* xq = x.blocks[base + b].qs;
        int32_t sum = 0;
        for (int col = 0; col < 32; ++col)
          sum += static_cast<int32_t>(kQ4 ? stored_q4_0(block, row, col) : stored_q8_0(block, row, col)) * xq[col];
        sum -= offset * x.sum[base + b];
        const float d = f16_to_f32(w.block_scales(g, b)[row]) * x.scale[base + b];
        acc = std::fma(static_cast<float>(sum), d, acc);
      }
      out[t * kPackRows + row] = acc;
    }
  }
}

}  // namespace

void packed_q4_0_scalar(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  packed_scalar<true>(w, g, x, t0, n, out);
}
void packed_q8_0_scalar(const PackedRows& w, int64_t g, const PackedActivations& x, int64_t t0, int n, float* out) {
  packed_q8_0_lanes(w, g, x, t0, n, out);
}

}  // namespace nucleus
