// Q4_0 / Q8_0 weights re-laid out so SIMD lanes run across rows (one lane per output row).
//
// Rows are taken 16 at a time (a "row group"; the last group is padded with zero rows). For each
// block of 32 columns a group stores its quants in 64-byte chunks that hold the same 4 columns of
// all 16 rows, then (after all blocks) the 16 f16 scales per block:
//
//   group g:  qs[n_blocks][chunks][16 rows][4 bytes]   scales[n_blocks][16 rows] (f16)
//   Q4_0: 4 chunks; chunk c = bytes 4c..4c+3 of each row's nibbles, so its low nibbles are columns
//         4c..4c+3 and its high nibbles columns 16+4c..16+4c+3, unsigned (value + 8).
//   Q8_0: 8 chunks; chunk c = columns 4c..4c+3, stored unsigned as q + 128.
//
// One 64-byte load then feeds a 16-lane int8 dot (VPDPBUSD) against 4 broadcast activation bytes,
// and each lane ends a block holding its row's whole integer block sum — no horizontal reductions,
// and every weight block loaded serves as many tokens as sit in registers. The sizes equal the
// stored ones, so packing costs no extra memory beyond the copy itself.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "core/weight_memory.h"
#include "io/ggml_type.h"

namespace nucleus {

struct WeightMatrix;

constexpr int kPackRows = 16;    // rows per group (lanes of a 512-bit register of int32)
constexpr int kPackTokens = 8;   // tokens a kernel call keeps in registers

struct PackedRows {
  GgmlType type = GgmlType::Q4_0;  // the stored type the quants came from
  int64_t n_rows = 0, n_cols = 0;
  int64_t n_groups = 0, n_blocks = 0;  // row groups; blocks of 32 columns per row
  size_t qs_block_bytes = 0;           // 256 (Q4_0) or 512 (Q8_0)
  size_t group_bytes = 0;              // one group's quants and scales, a multiple of 64
  std::shared_ptr<uint8_t> data;        // 64-byte aligned, on huge pages when large or from an arena

  const uint8_t* group_qs(int64_t g) const { return data.get() + static_cast<size_t>(g) * group_bytes; }
  const uint16_t* group_scales(int64_t g) const {
    return reinterpret_cast<const uint16_t*>(group_qs(g) + static_cast<size_t>(n_blocks) * qs_block_bytes);
  }
};

bool packable(GgmlType type);  // Q4_0, Q8_0
// Repacks a Q4_0 / Q8_0 matrix (threads over row groups) into memory from `arena`, or into an
// allocation of its own when arena is null. Throws Error for other types.
std::shared_ptr<const PackedRows> pack_rows(const WeightMatrix& w, int n_threads, WeightArena* arena = nullptr);

}  // namespace nucleus
