// F16 weights re-laid out so a register tile reads one forward stream.
//
// The F16 tile (kernels/tile_f16.h) multiplies 4 rows at a time, 16 columns per step. Row-major,
// that is 4 streams 4 KB apart at 2048 columns; a load-only loop over that pattern streamed 21-25
// GB/s on one Zen 5 core where one forward stream ran 30-31 (the access pattern, not the arithmetic,
// set one-token F16 decode's pace). Here rows go in groups of kPackedF16Rows, and each group stores
// its 16-column chunks one after the other, the chunk holding those columns of all its rows:
//
//   group g (rows 4g .. 4g+3): chunk[n_cols / 16] = { row[4][16] (f16) }     128 bytes per chunk
//
// so element (r, c) of the matrix is at group r / 4, chunk c / 16, slot r % 4, lane c % 16. A last
// group of fewer than 4 rows is padded with zero rows (computed, never stored). Only matrices whose
// rows are a multiple of 16 columns are packed (every model shape we know); others stay row-major.
// The values and the per-row order of the multiply-adds are the tile's, so results are bit-identical
// to dot_f16_f32 on the stored rows.
#pragma once
#include <cstdint>
#include <memory>

#include "kernels/packed_rows.h"

namespace nucleus {

struct WeightMatrix;

constexpr int kPackedF16Rows = 4;       // rows per group: the tile's rows for up to kF16TileTokens tokens
constexpr int kPackedF16Chunk = 16;     // columns per chunk: one 512-bit register of f32
constexpr int kPackedF16MaxTokens = 6;  // tokens one kernel call takes (4 rows × 6 tokens of accumulators)

bool packable_f16(const WeightMatrix& w);  // F16 with n_cols a multiple of kPackedF16Chunk
// The packed copy of an F16 matrix (threads over groups), its memory from `arena` or its own
// allocation; a PackedRows whose groups are kPackedF16Rows rows of group_bytes = 8 · n_cols.
// Throws Error when !packable_f16(w).
std::shared_ptr<const PackedRows> pack_rows_f16(const WeightMatrix& w, int n_threads, WeightArena* arena = nullptr);

// out[r · kDotTokens + j] = dot(row r of the group, x[j]) for r < 4, j < n_tokens ≤ kPackedF16MaxTokens,
// each bit-identical to dot_f16_f32 on that row; n = n_cols.
using PackedF16Kernel = void (*)(const uint16_t* group, const float* const* x, int n_tokens, int64_t n, float* out);

void packed_f16_f32_avx512(const uint16_t* group, const float* const* x, int n_tokens, int64_t n, float* out);

}  // namespace nucleus
