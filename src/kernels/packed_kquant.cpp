#include "kernels/packed_kquant.h"

#include <cstring>

#include "core/error.h"
#include "kernels/matmul.h"

namespace nucleus {

namespace {

// One row's block into its place (row `row` of the group) in the packed block at `out`; qh is
// Q5_K's fifth bits (null for Q4_K).
void pack_block_q45_K(uint16_t d, uint16_t dmin, const uint8_t* scales, const uint8_t* qs, const uint8_t* qh, int row,
                      uint8_t* out) {
  const PackedQ45KLayout layout = packed_q45_k_layout(qh != nullptr);
  for (int k = 0; k < 8; ++k) {
    for (int c = 0; c < 4; ++c) std::memcpy(out + 64 * (4 * k + c) + 4 * row, qs + 32 * c + 4 * k, 4);
    if (qh) std::memcpy(out + layout.qh + 64 * k + 4 * row, qh + 4 * k, 4);
  }
  uint8_t scale[8], min[8];
  for (int j = 0; j < 8; ++j) q4k_scale_min(j, scales, &scale[j], &min[j]);
  for (int j = 0; j < 8; ++j) out[layout.scales + kPackRows * j + row] = scale[j];
  for (int i = 0; i < 4; ++i) {
    out[layout.mins + 2 * kPackRows * i + 2 * row] = min[2 * i];
    out[layout.mins + 2 * kPackRows * i + 2 * row + 1] = min[2 * i + 1];
  }
  std::memcpy(out + layout.d + 2 * row, &d, 2);
  std::memcpy(out + layout.dmin + 2 * row, &dmin, 2);
}

// The low 4 bits of value l (0..31) of run s (0..7) of a Q6_K block.
uint8_t q6k_low_bits(const BlockQ6_K& src, int s, int l) {
  const int half = s / 4, r = s % 4;
  const uint8_t byte = src.ql[64 * half + 32 * (r % 2) + l];
  return r >= 2 ? static_cast<uint8_t>(byte >> 4) : static_cast<uint8_t>(byte & 0xF);
}

void pack_block_q6_K(const BlockQ6_K& src, int row, uint8_t* out) {
  for (int k = 0; k < 8; ++k) {
    for (int p = 0; p < 4; ++p)
      for (int i = 0; i < 4; ++i)
        out[64 * (4 * k + p) + 4 * row + i] =
            static_cast<uint8_t>(q6k_low_bits(src, 2 * p, 4 * k + i) | (q6k_low_bits(src, 2 * p + 1, 4 * k + i) << 4));
    for (int h = 0; h < 2; ++h) std::memcpy(out + kPackedQ6KQhOffset + 64 * (2 * k + h) + 4 * row, src.qh + 32 * h + 4 * k, 4);
  }
  for (int j = 0; j < 16; ++j) out[kPackedQ6KScalesOffset + kPackRows * j + row] = static_cast<uint8_t>(src.scales[j]);
  std::memcpy(out + kPackedQ6KDOffset + 2 * row, &src.d, 2);
}

}  // namespace

std::shared_ptr<const PackedRows> pack_rows_kquant(const WeightMatrix& w, WorkerPool& pool, WeightArena* arena) {
  if (w.type != GgmlType::Q4_K && w.type != GgmlType::Q5_K && w.type != GgmlType::Q6_K)
    throw Error(std::string("pack_rows_kquant: cannot pack type ") + ggml_type_name(w.type));
  if (w.n_cols % kQK_K != 0) throw Error("pack_rows_kquant: the row length must be a multiple of 256");
  const bool q6 = w.type == GgmlType::Q6_K;
  const size_t block_bytes = q6 ? kPackedQ6KBlockBytes : packed_q45_k_layout(w.type == GgmlType::Q5_K).block;
  const int64_t n_blocks = w.n_cols / kQK_K;
  auto p = allocate_packed_rows(w, n_blocks, static_cast<size_t>(n_blocks) * block_bytes, arena);
  PackedRows& out = *p;
  pool.run(out.n_groups, Schedule::Static, [&](int64_t g, int) {
    uint8_t* base = out.data.get() + static_cast<size_t>(g) * out.group_bytes;
    // Padding rows (and Q6_K's padding bytes) all zero.
    if (q6 || (g + 1) * kPackRows > out.n_rows) std::memset(base, 0, out.group_bytes);
    for (int row = 0; row < kPackRows; ++row) {
      const int64_t r = g * kPackRows + row;
      if (r >= out.n_rows) break;
      for (int64_t b = 0; b < out.n_blocks; ++b) {
        uint8_t* block = base + static_cast<size_t>(b) * block_bytes;
        if (q6) {
          pack_block_q6_K(reinterpret_cast<const BlockQ6_K*>(w.row(r))[b], row, block);
        } else if (out.type == GgmlType::Q5_K) {
          const BlockQ5_K& src = reinterpret_cast<const BlockQ5_K*>(w.row(r))[b];
          pack_block_q45_K(src.d, src.dmin, src.scales, src.qs, src.qh, row, block);
        } else {
          const BlockQ4_K& src = reinterpret_cast<const BlockQ4_K*>(w.row(r))[b];
          pack_block_q45_K(src.d, src.dmin, src.scales, src.qs, nullptr, row, block);
        }
      }
    }
  });
  return p;
}

}  // namespace nucleus
