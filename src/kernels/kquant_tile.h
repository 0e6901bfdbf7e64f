// Two K-quant weight rows × up to four tokens per call: the register-blocked kernel of the
// many-token matmul (prefill, batched decode, speculative verification) for Q4_K, Q5_K and Q6_K.
//
// Each weight block is unpacked once for four tokens and each activation block once for two rows,
// and the per-block float steps of several tokens share one instruction (two tokens' 8 float lanes
// in one 512-bit register, four tokens' 4 mins lanes in another). The integer lanes and every float
// step per (row, token) are those of the single-token kernels (dot_x86.inc; dot_scalar.cpp the orders),
// so out[i][j] is bit-identical to dot_q*_K_q8_K(row i, token j) on every table.
#pragma once
#include <cstdint>

#include "kernels/quant_blocks.h"

namespace nucleus {

constexpr int kKQuantTileRows = 2;
constexpr int kKQuantTileTokens = 4;

// Q8_K activation rows plus what the tile kernels read for several tokens at once. The per-token
// arrays are laid out block-major with the token count padded to a multiple of kKQuantTileTokens
// (zeros in the padding), so one 64-byte load gives four tokens' values.
struct KQuantTileActivations {
  const BlockQ8_K* blocks = nullptr;  // [n_tokens, n_blocks]
  const int8_t* qs = nullptr;         // [n_tokens, n_blocks, 256] the blocks' quants, 64-byte aligned (a
                                      // BlockQ8_K's sit 4 bytes into it: every 64-byte load would span two lines)
  const int16_t* sub_sums = nullptr;  // [n_blocks, padded_tokens, 8] Σ of each 32-value sub-block's quants
  const float* d = nullptr;           // [n_blocks, padded_tokens] each block's scale
  int64_t n_blocks = 0;
  int64_t padded_tokens = 0;
};

// Fills qs (64-byte aligned), sub_sums and d (sized for padded_tokens, zero-initialised) from
// x [n_tokens, n_blocks].
void fill_kquant_tile_activations(const BlockQ8_K* x, int64_t n_tokens, int64_t n_blocks, int64_t padded_tokens,
                                  int8_t* qs, int16_t* sub_sums, float* d);

// out[i · kKQuantTileTokens + j] = dot(rows[i], token t0 + j) for i < 2, j < n_tokens ≤ 4;
// t0 is a multiple of kKQuantTileTokens. row1 may equal row0 (a lone last row).
using KQuantTileKernel = void (*)(const void* row0, const void* row1, const KQuantTileActivations& x, int64_t t0,
                                  int n_tokens, float* out);

// Many token groups over the same rows: each row is first unpacked into a prepared layout (per
// block: its values as bytes in the activations' order, the two sub-block scales of each four-value lane,
// mins or scales, f32 super-block scales: kKQuantPreparedBlockBytes per block), so each group's
// kernel call only loads. Same results as the direct kernel, bit for bit.
constexpr size_t kKQuantPreparedBlockBytes = 448;
// prepared[n_blocks × kKQuantPreparedBlockBytes], 64-byte aligned.
using KQuantPrepareRow = void (*)(const void* row, int64_t n_blocks, uint8_t* prepared);
// n_rows prepared rows, row i at rows + i · row_bytes (each n_blocks × kKQuantPreparedBlockBytes),
// against tokens t0 .. t0 + n_tokens − 1 (n_tokens ≤ 4, t0 a multiple of kKQuantTileTokens):
// y[j · y_stride + i] = dot(row i, token t0 + j). Rows run two at a time in one call, so each
// pair's float tail overlaps the next pair's products and results go straight to y.
using KQuantPreparedKernel = void (*)(const uint8_t* rows, size_t row_bytes, int64_t n_rows, const KQuantTileActivations& x,
                                      int64_t t0, int n_tokens, float* y, int64_t y_stride);

// The first 64-byte aligned element at or after p: the tile kernels' buffers are allocated 64 bytes
// over and used from there.
template <class T>
T* align_up_64(T* p) {
  static_assert(sizeof(T) == 1, "byte buffers");
  return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
}

struct KQuantTileKernels {
  KQuantTileKernel direct = nullptr;
  KQuantPrepareRow prepare = nullptr;
  KQuantPreparedKernel prepared = nullptr;
};

KQuantTileKernels kquant_tile_q4_K_avx512();
KQuantTileKernels kquant_tile_q5_K_avx512();
KQuantTileKernels kquant_tile_q6_K_avx512();

}  // namespace nucleus
