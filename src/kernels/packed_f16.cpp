#include "kernels/packed_f16.h"

#include <cstring>

#include "core/error.h"
#include "core/weight_memory.h"
#include "kernels/matmul.h"

namespace nucleus {

int packed_half_chunk(GgmlType type) { return type == GgmlType::BF16 ? kPackedBF16Chunk : kPackedF16Chunk; }

bool packable_half(const WeightMatrix& w) {
  return (w.type == GgmlType::F16 || w.type == GgmlType::BF16) && w.n_cols > 0 &&
         w.n_cols % packed_half_chunk(w.type) == 0;
}

std::shared_ptr<const PackedRows> pack_rows_half(const WeightMatrix& w, WorkerPool& pool, WeightArena* arena) {
  if (!packable_half(w))
    throw Error("pack_rows_half: only F16 (BF16) rows of a multiple of 16 (32) columns are packed");
  const int chunk = packed_half_chunk(w.type);
  auto p = std::make_shared<PackedRows>();
  p->type = w.type;
  p->n_rows = w.n_rows;
  p->n_cols = w.n_cols;
  p->n_groups = (w.n_rows + kPackedHalfRows - 1) / kPackedHalfRows;
  p->n_blocks = w.n_cols / chunk;  // chunks per row
  p->group_bytes = static_cast<size_t>(kPackedHalfRows) * static_cast<size_t>(w.n_cols) * sizeof(uint16_t);
  const size_t bytes = p->group_bytes * static_cast<size_t>(p->n_groups);
  p->data = arena ? arena->allocate(bytes) : std::shared_ptr<uint8_t>(allocate_weight_memory(bytes).release(), &std::free);
  PackedRows& out = *p;
  const size_t slot_bytes = static_cast<size_t>(chunk) * sizeof(uint16_t);  // one row's piece of a chunk
  pool.run(out.n_groups, Schedule::Static, [&](int64_t g, int) {
    uint8_t* base = out.data.get() + static_cast<size_t>(g) * out.group_bytes;
    if ((g + 1) * kPackedHalfRows > out.n_rows) std::memset(base, 0, out.group_bytes);  // zero padding rows
    for (int row = 0; row < kPackedHalfRows; ++row) {
      const int64_t r = g * kPackedHalfRows + row;
      if (r >= out.n_rows) break;
      for (int64_t c = 0; c < out.n_blocks; ++c)
        std::memcpy(base + static_cast<size_t>(c) * kPackedHalfRows * slot_bytes + row * slot_bytes,
                    w.row(r) + static_cast<size_t>(c) * slot_bytes, slot_bytes);
    }
  });
  return p;
}

}  // namespace nucleus
