#include "kernels/packed_rows.h"

#include <cstring>
#include <new>

#include "core/error.h"
#include "core/weight_memory.h"
#include "kernels/matmul.h"
#include "kernels/quant_blocks.h"

namespace nucleus {

bool packable(GgmlType type) { return type == GgmlType::Q4_0 || type == GgmlType::Q8_0; }

namespace {

// One block of one row into its place in the group: row i's 4-byte pieces go to chunk c, slot i.
void pack_block_q4_0(const BlockQ4_0& src, int row, uint8_t* qs, uint16_t* scales) {
  for (int c = 0; c < 4; ++c) std::memcpy(qs + 64 * c + 4 * row, src.qs + 4 * c, 4);
  scales[row] = src.d;
}

void pack_block_q8_0(const BlockQ8_0& src, int row, uint8_t* qs, uint16_t* scales) {
  for (int c = 0; c < 8; ++c)
    for (int j = 0; j < 4; ++j) qs[64 * c + 4 * row + j] = static_cast<uint8_t>(src.qs[4 * c + j] + 128);
  scales[row] = src.d;
}

}  // namespace

std::shared_ptr<PackedRows> allocate_packed_rows(const WeightMatrix& w, int64_t n_blocks, size_t group_bytes,
                                                 WeightArena* arena) {
  auto p = std::make_shared<PackedRows>();
  p->type = w.type;
  p->n_rows = w.n_rows;
  p->n_cols = w.n_cols;
  p->n_groups = (w.n_rows + kPackRows - 1) / kPackRows;
  p->n_blocks = n_blocks;
  p->group_bytes = group_bytes;
  // Huge pages (core/weight_memory.h): a 1 GB model then also takes ~500 page faults to pack, not
  // ~250,000 (which cost seconds in a VM), and decode streams through 2 MiB pages.
  const size_t bytes = p->group_bytes * static_cast<size_t>(p->n_groups);
  p->data = arena ? arena->allocate(bytes) : std::shared_ptr<uint8_t>(allocate_weight_memory(bytes).release(), &std::free);
  return p;
}

std::shared_ptr<const PackedRows> pack_rows(const WeightMatrix& w, WorkerPool& pool, WeightArena* arena) {
  if (!packable(w.type)) throw Error(std::string("pack_rows: cannot pack type ") + ggml_type_name(w.type));
  if (w.n_cols % 32 != 0) throw Error("pack_rows: the row length must be a multiple of 32");
  const int64_t n_blocks = w.n_cols / 32;
  const size_t qs_block_bytes = w.type == GgmlType::Q4_0 ? 256 : 512;
  auto p = allocate_packed_rows(w, n_blocks, static_cast<size_t>((n_blocks + 1) / 2) * packed_pair_bytes(qs_block_bytes), arena);
  p->qs_block_bytes = qs_block_bytes;
  PackedRows& out = *p;
  pool.run(out.n_groups, Schedule::Static, [&](int64_t g, int) {
    uint8_t* base = out.data.get() + static_cast<size_t>(g) * out.group_bytes;
    // The last group's padding rows (and the block after an odd count) must be zero quants and zero scales.
    if ((g + 1) * kPackRows > out.n_rows || out.n_blocks % 2 != 0) std::memset(base, 0, out.group_bytes);
    for (int row = 0; row < kPackRows; ++row) {
      const int64_t r = g * kPackRows + row;
      if (r >= out.n_rows) break;
      for (int64_t b = 0; b < out.n_blocks; ++b) {
        uint8_t* qs = base + packed_qs_offset(static_cast<size_t>(b), out.qs_block_bytes);
        uint16_t* scales = reinterpret_cast<uint16_t*>(base + packed_scales_offset(static_cast<size_t>(b), out.qs_block_bytes));
        if (out.type == GgmlType::Q4_0)
          pack_block_q4_0(reinterpret_cast<const BlockQ4_0*>(w.row(r))[b], row, qs, scales);
        else
          pack_block_q8_0(reinterpret_cast<const BlockQ8_0*>(w.row(r))[b], row, qs, scales);
      }
    }
  });
  return p;
}

}  // namespace nucleus
