// The row pointers of one register tile (kernels/tile_f16.h, kernels/tile_bf16.h): R rows to
// compute and the R rows to prefetch meanwhile. Rows past n_rows repeat the last one, so a partial
// tile runs the full-size code; their results are computed and not stored.
#pragma once
#include <cstdint>

namespace nucleus {

template <int R>
struct TileRows {
  const uint16_t* w[R];
  const uint16_t* ahead[R];
  TileRows(const uint16_t* const* rows, int n_rows, const uint16_t* const* ahead_rows) {
    for (int r = 0; r < R; ++r) {
      w[r] = rows[r < n_rows ? r : n_rows - 1];
      ahead[r] = ahead_rows[r < n_rows ? r : n_rows - 1];
    }
  }
};

}  // namespace nucleus
