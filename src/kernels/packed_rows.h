// Q4_0 / Q8_0 weights re-laid out so SIMD lanes run across rows (one lane per output row).
//
// Rows are taken 16 at a time (a "row group"; the last group is padded with zero rows). For each
// block of 32 columns a group stores its quants in 64-byte chunks that hold the same 4 columns of
// all 16 rows, and the 16 f16 scales of the block. Blocks go in pairs, each pair's scales after
// its quants, so a group is one forward stream of 64-byte lines:
//
//   group g:  pair[ceil(n_blocks / 2)] = { qs[2][chunks][16 rows][4 bytes], scales[2][16 rows] (f16) }
//
// (Quants first and all scales after them cost one core's decode ~25% of its stream: reading 16 KB,
// skipping 2 KB, reading 16 KB, ... reached ~22 GB/s where one forward stream reached ~29 and a plain
// read loop ~33, Zen 5; a lone last block of an odd count is followed by a zero block.)
//   Q4_0: 4 chunks; chunk c = bytes 4c..4c+3 of each row's nibbles, so its low nibbles are columns
//         4c..4c+3 and its high nibbles columns 16+4c..16+4c+3, unsigned (value + 8).
//   Q8_0: 8 chunks; chunk c = columns 4c..4c+3, stored unsigned as q + 128.
//
// One 64-byte load then feeds a 16-lane int8 dot (VPDPBUSD) against 4 broadcast activation bytes,
// and each lane ends a block holding its row's whole integer block sum — no horizontal reductions,
// and every weight block loaded serves as many tokens as sit in registers. The sizes equal the
// stored ones (but for the zero block after an odd count), so packing costs no extra memory beyond
// the copy itself.
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
  size_t pair_bytes = 0;               // two blocks' quants and scales: 2 · qs_block_bytes + 64
  size_t group_bytes = 0;              // one group: ceil(n_blocks / 2) pairs, a multiple of 64
  std::shared_ptr<uint8_t> data;        // 64-byte aligned, on huge pages when large or from an arena

  // Byte offsets into data of block b of group g: its quants (64-byte aligned) and its 16 scales (32-byte aligned).
  size_t qs_offset(int64_t g, int64_t b) const {
    return static_cast<size_t>(g) * group_bytes + static_cast<size_t>(b / 2) * pair_bytes +
           static_cast<size_t>(b % 2) * qs_block_bytes;
  }
  size_t scales_offset(int64_t g, int64_t b) const {
    return static_cast<size_t>(g) * group_bytes + static_cast<size_t>(b / 2) * pair_bytes + 2 * qs_block_bytes +
           static_cast<size_t>(b % 2) * 2 * kPackRows;
  }
  const uint8_t* block_qs(int64_t g, int64_t b) const { return data.get() + qs_offset(g, b); }
  const uint16_t* block_scales(int64_t g, int64_t b) const {
    return reinterpret_cast<const uint16_t*>(data.get() + scales_offset(g, b));
  }
};

bool packable(GgmlType type);  // Q4_0, Q8_0
// Repacks a Q4_0 / Q8_0 matrix (threads over row groups) into memory from `arena`, or into an
// allocation of its own when arena is null. Throws Error for other types.
std::shared_ptr<const PackedRows> pack_rows(const WeightMatrix& w, int n_threads, WeightArena* arena = nullptr);

}  // namespace nucleus
