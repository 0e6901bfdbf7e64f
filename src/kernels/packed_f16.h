// F16 and BF16 ("half") weights re-laid out so a register tile reads one forward stream.
//
// The F16 tile (kernels/tile_f16.h) multiplies 4 rows at a time, 16 columns per step (the BF16
// tile, kernels/tile_bf16.h, 32 columns per VDPBF16PS step). Row-major,
// that is 4 streams 4 KB apart at 2048 columns; a load-only loop over that pattern streamed 21-25
// GB/s on one Zen 5 core where one forward stream ran 30-31 (the access pattern, not the arithmetic,
// set one-token F16 decode's pace). Here rows go in groups of kPackedF16Rows, and each group stores
// its C-column chunks one after the other (C = 16 for F16, 32 for BF16: one step of its tile), the
// chunk holding those columns of all its rows:
//
//   group g (rows 4g .. 4g+3): chunk[n_cols / C] = { row[4][C] (f16 or bf16) }   8·C bytes per chunk
//
// so element (r, c) of the matrix is at group r / 4, chunk c / C, slot r % 4, lane c % C. A last
// group of fewer than 4 rows is padded with zero rows (computed, never stored). Only matrices whose
// rows are a multiple of C columns are packed (every model shape we know); others stay row-major.
// The values and the per-row order of the multiply-adds are the tile's, so results are bit-identical
// to the row-major tiles (dot_f16_f32; the BF16 order of kernels/tile_bf16.h).
#pragma once
#include <cstdint>
#include <memory>

#include "io/ggml_type.h"
#include "kernels/packed_rows.h"

namespace nucleus {

struct WeightMatrix;

constexpr int kPackedHalfRows = 4;       // rows per group: the tiles' rows for up to 6 tokens
constexpr int kPackedHalfMaxTokens = 6;  // tokens one kernel call takes (4 rows × 6 tokens of accumulators)
constexpr int kPackedF16Chunk = 16;      // F16 columns per chunk: one 512-bit register of f32
constexpr int kPackedBF16Chunk = 32;     // BF16 columns per chunk: one VDPBF16PS step
int packed_half_chunk(GgmlType type);    // the above for F16 / BF16

bool packable_half(const WeightMatrix& w);  // F16 or BF16 with n_cols a multiple of its chunk
// The packed copy of an F16 or BF16 matrix (threads over groups), its memory from `arena` or its
// own allocation; a PackedRows whose groups are kPackedHalfRows rows of group_bytes = 8 · n_cols.
// Throws Error when !packable_half(w).
std::shared_ptr<const PackedRows> pack_rows_half(const WeightMatrix& w, WorkerPool& pool, WeightArena* arena = nullptr);
inline std::shared_ptr<const PackedRows> pack_rows_half(const WeightMatrix& w, int n_threads, WeightArena* arena = nullptr) {
  WorkerPool pool(n_threads);
  return pack_rows_half(w, pool, arena);
}

// out[r · kDotTokens + j] = dot(row r of the group, x[j]) for r < 4, j < n_tokens ≤ kPackedHalfMaxTokens,
// each bit-identical to the row-major tile on that row; n = n_cols. F16 against f32 activations,
// BF16 against activations rounded to BF16 (round_to_bf16).
using PackedF16Kernel = void (*)(const uint16_t* group, const float* const* x, int n_tokens, int64_t n, float* out);
using PackedBF16Kernel = void (*)(const uint16_t* group, const uint16_t* const* x, int n_tokens, int64_t n, float* out);

void packed_f16_f32_avx512(const uint16_t* group, const float* const* x, int n_tokens, int64_t n, float* out);
void packed_bf16_avx512(const uint16_t* group, const uint16_t* const* x, int n_tokens, int64_t n, float* out);

}  // namespace nucleus
