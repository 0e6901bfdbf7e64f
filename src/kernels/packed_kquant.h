// Q4_K, Q5_K and Q6_K weights re-laid out so SIMD lanes run across rows, like the packed Q4_0 / Q8_0
// groups (kernels/packed_rows.h): one 32-bit lane per output row, 16 rows per group.
//
// Why: the row-major K-quant dot for one token spends ~95 instructions per 256-value block and row
// (Q4_K: unpacking the 6-bit scales, permuting them to the lanes, folding the halves, the mins'
// shuffles) and is compute-bound on one core at ~22 GB/s. With rows in lanes, a row's 32-bit lane
// holds exactly the 4 products llama.cpp's lane k adds (positions 4k..4k+3 of a 32-value run),
// every per-row scale is multiplied in by one instruction for all 16 rows, and a Q4_K block costs
// ~17 instructions per row.
//
// A group is its blocks one after another, each a multiple of 64 bytes. Within a block, "run" s is
// values 32s..32s+31 and "lane" k positions 4k..4k+3 of every run; [16 rows][4 bytes] is one 64-byte
// register of 4 values per row. The last group's padding rows are zero (d = 0: they give 0 and are
// not written out).
//
// Q4_K block (kPackedQ4KBlockBytes = 2368):
//   qs     [8 lanes k][4 c][16 rows][4 bytes]  low nibbles: run 2c, lane k; high nibbles: run 2c + 1
//   scales [8 runs][16 rows]           u8, each run's 6-bit scale
//   mins   [4 run pairs i][16 rows][2] u8, the mins of runs 2i and 2i + 1
//   d [16 rows] f16, dmin [16 rows] f16
// Q5_K block (2880): Q4_K's, with after qs
//   qh     [8 lanes k][16 rows][4 bytes]  the stored qh bytes 4k..4k+3: bit s is the fifth bit of run s
// and scales, mins, d, dmin after it (packed_q45_k_layout).
// Q6_K block (kPackedQ6KBlockBytes = 3392; values q + 32, 0..63):
//   ql     [8 lanes k][4 p][16 rows][4 bytes]  low 4 bits; low nibbles: run 2p, high nibbles: run 2p + 1
//   qh     [8 lanes k][2 halves h][16 rows][4 bytes]  the stored qh bytes 32h + 4k..32h + 4k + 3:
//          bits 2r, 2r + 1 are the top 2 bits of run 4h + r
//   scales [16][16 rows] i8, scale j covers values 16j..16j+15; d [16 rows] f16; 32 bytes of padding
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

// Q5_K: Q4_K's block with a plane of fifth bits after the quants, the rest moved on by its size.
struct PackedQ45KLayout {
  size_t qh, scales, mins, d, dmin, block;
};
constexpr PackedQ45KLayout packed_q45_k_layout(bool q5) {
  const size_t qh = 2048, scales = q5 ? qh + 8 * 64 : qh;
  return {qh, scales, scales + 8 * kPackRows, scales + 16 * kPackRows, scales + 18 * kPackRows, scales + 20 * kPackRows};
}
static_assert(packed_q45_k_layout(false).block == kPackedQ4KBlockBytes && packed_q45_k_layout(false).mins == kPackedQ4KMinsOffset);
static_assert(packed_q45_k_layout(true).block == 2880);

constexpr size_t kPackedQ6KQhOffset = 2048;
constexpr size_t kPackedQ6KScalesOffset = kPackedQ6KQhOffset + 1024;
constexpr size_t kPackedQ6KDOffset = kPackedQ6KScalesOffset + 16 * kPackRows;
constexpr size_t kPackedQ6KBlockBytes = kPackedQ6KDOffset + 2 * kPackRows + 32;  // 3392
static_assert(kPackedQ6KBlockBytes % 64 == 0);

// out[t · kPackRows + i] = dot_q*_K_q8_K(row 16·g + i, x[t]) for t < n_tokens ≤ kPackTokens,
// bit-identical to the row-major kernels (the integer sums are exact, the float steps the same).
using PackedKQuantKernel = void (*)(const PackedRows& w, int64_t g, const BlockQ8_K* const* x, int n_tokens, float* out);

void packed_q4_K_avx512(const PackedRows& w, int64_t g, const BlockQ8_K* const* x, int n_tokens, float* out);
void packed_q5_K_avx512(const PackedRows& w, int64_t g, const BlockQ8_K* const* x, int n_tokens, float* out);
void packed_q6_K_avx512(const PackedRows& w, int64_t g, const BlockQ8_K* const* x, int n_tokens, float* out);

// Repacks a Q4_K, Q5_K or Q6_K matrix (threads over row groups) into memory from `arena`, or an allocation
// of its own when arena is null; group(g) of the result starts the layout above. Throws Error for
// other types.
std::shared_ptr<const PackedRows> pack_rows_kquant(const WeightMatrix& w, WorkerPool& pool, WeightArena* arena = nullptr);
inline std::shared_ptr<const PackedRows> pack_rows_kquant(const WeightMatrix& w, int n_threads, WeightArena* arena = nullptr) {
  WorkerPool pool(n_threads);
  return pack_rows_kquant(w, pool, arena);
}

}  // namespace nucleus
