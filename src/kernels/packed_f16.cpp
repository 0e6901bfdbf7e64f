#include "kernels/packed_f16.h"

#include <cstring>

#include "core/error.h"
#include "core/weight_memory.h"
#include "kernels/matmul.h"

namespace nucleus {

bool packable_f16(const WeightMatrix& w) {
  return w.type == GgmlType::F16 && w.n_cols > 0 && w.n_cols % kPackedF16Chunk == 0;
}

std::shared_ptr<const PackedRows> pack_rows_f16(const WeightMatrix& w, int n_threads, WeightArena* arena) {
  if (!packable_f16(w)) throw Error("pack_rows_f16: only F16 rows of a multiple of 16 columns are packed");
  auto p = std::make_shared<PackedRows>();
  p->type = w.type;
  p->n_rows = w.n_rows;
  p->n_cols = w.n_cols;
  p->n_groups = (w.n_rows + kPackedF16Rows - 1) / kPackedF16Rows;
  p->n_blocks = w.n_cols / kPackedF16Chunk;
  p->group_bytes = static_cast<size_t>(kPackedF16Rows) * static_cast<size_t>(w.n_cols) * sizeof(uint16_t);
  const size_t bytes = p->group_bytes * static_cast<size_t>(p->n_groups);
  p->data = arena ? arena->allocate(bytes) : std::shared_ptr<uint8_t>(allocate_weight_memory(bytes).release(), &std::free);
  PackedRows& out = *p;
  constexpr size_t kSlotBytes = kPackedF16Chunk * sizeof(uint16_t);  // one row's piece of a chunk
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n_threads > 1 && out.n_groups > 1)
  for (int64_t g = 0; g < out.n_groups; ++g) {
    uint8_t* base = out.data.get() + static_cast<size_t>(g) * out.group_bytes;
    if ((g + 1) * kPackedF16Rows > out.n_rows) std::memset(base, 0, out.group_bytes);  // zero padding rows
    for (int row = 0; row < kPackedF16Rows; ++row) {
      const int64_t r = g * kPackedF16Rows + row;
      if (r >= out.n_rows) break;
      for (int64_t c = 0; c < out.n_blocks; ++c)
        std::memcpy(base + static_cast<size_t>(c) * kPackedF16Rows * kSlotBytes + row * kSlotBytes,
                    w.row(r) + static_cast<size_t>(c) * kSlotBytes, kSlotBytes);
    }
  }
  return p;
}

}  // namespace nucleus
