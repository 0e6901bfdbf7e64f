#include "kernels/packed_q4_k.h"

#include <cstring>

#include "core/error.h"
#include "core/weight_memory.h"
#include "kernels/matmul.h"

namespace nucleus {

namespace {

// One row's block into its place (row `row` of the group) in the packed block at `out`.
void pack_block_q4_K(const BlockQ4_K& src, int row, uint8_t* out) {
  for (int k = 0; k < 8; ++k)
    for (int c = 0; c < 4; ++c) std::memcpy(out + 64 * (4 * k + c) + 4 * row, src.qs + 32 * c + 4 * k, 4);
  uint8_t scale[8], min[8];
  for (int j = 0; j < 8; ++j) q4k_scale_min(j, src.scales, &scale[j], &min[j]);
  for (int j = 0; j < 8; ++j) out[kPackedQ4KScalesOffset + kPackRows * j + row] = scale[j];
  for (int i = 0; i < 4; ++i) {
    out[kPackedQ4KMinsOffset + 2 * kPackRows * i + 2 * row] = min[2 * i];
    out[kPackedQ4KMinsOffset + 2 * kPackRows * i + 2 * row + 1] = min[2 * i + 1];
  }
  std::memcpy(out + kPackedQ4KDOffset + 2 * row, &src.d, 2);
  std::memcpy(out + kPackedQ4KDminOffset + 2 * row, &src.dmin, 2);
}

}  // namespace

std::shared_ptr<const PackedRows> pack_rows_q4_K(const WeightMatrix& w, int n_threads, WeightArena* arena) {
  if (w.type != GgmlType::Q4_K) throw Error(std::string("pack_rows_q4_K: cannot pack type ") + ggml_type_name(w.type));
  if (w.n_cols % kQK_K != 0) throw Error("pack_rows_q4_K: the row length must be a multiple of 256");
  auto p = std::make_shared<PackedRows>();
  p->type = w.type;
  p->n_rows = w.n_rows;
  p->n_cols = w.n_cols;
  p->n_groups = (w.n_rows + kPackRows - 1) / kPackRows;
  p->n_blocks = w.n_cols / kQK_K;
  p->group_bytes = static_cast<size_t>(p->n_blocks) * kPackedQ4KBlockBytes;
  const size_t bytes = p->group_bytes * static_cast<size_t>(p->n_groups);
  p->data = arena ? arena->allocate(bytes) : std::shared_ptr<uint8_t>(allocate_weight_memory(bytes).release(), &std::free);
  PackedRows& out = *p;
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n_threads > 1 && out.n_groups > 1)
  for (int64_t g = 0; g < out.n_groups; ++g) {
    uint8_t* base = out.data.get() + static_cast<size_t>(g) * out.group_bytes;
    if ((g + 1) * kPackRows > out.n_rows) std::memset(base, 0, out.group_bytes);  // padding rows: all zero
    for (int row = 0; row < kPackRows; ++row) {
      const int64_t r = g * kPackRows + row;
      if (r >= out.n_rows) break;
      const BlockQ4_K* blocks = reinterpret_cast<const BlockQ4_K*>(w.row(r));
      for (int64_t b = 0; b < out.n_blocks; ++b)
        pack_block_q4_K(blocks[b], row, base + static_cast<size_t>(b) * kPackedQ4KBlockBytes);
    }
  }
  return p;
}

}  // namespace nucleus
