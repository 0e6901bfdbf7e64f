// Q4_K weights re-laid out so SIMD lanes run across rows, like the packed Q4_0 / Q8_0 groups
// (kernels/packed_rows.h): one 32-bit lane per output row, 16 rows per group.
//
// Why: the row-major Q4_K dot for one token spends ~95 instructions per 256-value block and row
// (unpacking the 6-bit scales, permuting them to the lanes, folding the halves, the mins' shuffles)
// and is compute-bound on one core at ~22 GB/s. With rows in lanes the 32-bit lane of a row holds
// exactly the 4 products llama.cpp's lane k adds (positions 4k..4k+3 of a 32-value run), every
// per-row scale is multiplied in by the same instruction for all 16 rows, and a block costs
// ~17 instructions per row.
//
// Per row group, block after block (n_blocks × kPackedQ4KBlockBytes, a multiple of 64 bytes):
//   qs     [8 lanes k][4 chunks c][16 rows][4 bytes]  row r's bytes 32c + 4k .. 32c + 4k + 3:
//                                                     low nibbles = run 2c, values 4k..4k+3;
//                                                     high nibbles = run 2c + 1, the same values
//   scales [8 runs][16 rows]           u8, the 6-bit scale of each 32-value run
//   mins   [4 run pairs i][16 rows][2] u8, the mins of runs 2i and 2i + 1
//   d      [16 rows] f16, dmin [16 rows] f16
// The last group's padding rows are zero (d = 0: they give 0 and are not written out).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/packed_rows.h"
#include "kernels/quant_blocks.h"

namespace nucleus {

constexpr size_t kPackedQ4KScalesOffset = 2048;
constexpr size_t kPackedQ4KMinsOffset = kPackedQ4KScalesOffset + 8 * kPackRows;
constexpr size_t kPackedQ4KDOffset = kPackedQ4KMinsOffset + 8 * kPackRows;
constexpr size_t kPackedQ4KDminOffset = kPackedQ4KDOffset + 2 * kPackRows;
constexpr size_t kPackedQ4KBlockBytes = kPackedQ4KDminOffset + 2 * kPackRows;  // 2368
static_assert(kPackedQ4KBlockBytes % 64 == 0);

// out[t · kPackRows + i] = dot_q4_K_q8_K(row 16·g + i, x[t]) for t < n_tokens ≤ kPackTokens,
// bit-identical to the row-major kernels (the integer lanes are exact, the float steps the same).
using PackedQ4KKernel = void (*)(const PackedRows& w, int64_t g, const BlockQ8_K* const* x, int n_tokens, float* out);

void packed_q4_K_avx512(const PackedRows& w, int64_t g, const BlockQ8_K* const* x, int n_tokens, float* out);

// Repacks a Q4_K matrix (threads over row groups) into memory from `arena`, or an allocation of its
// own when arena is null. The result's type is Q4_K and its group(g) starts the layout above.
std::shared_ptr<const PackedRows> pack_rows_q4_K(const WeightMatrix& w, int n_threads, WeightArena* arena = nullptr);

}  // namespace nucleus
