// Q4_0 / Q8_0 weights re-laid out so SIMD lanes run across rows (one lane per output row).
//
// Rows are taken 16 at a time (a "row group"; the last group is padded with zero rows). For each
// block of 32 columns a group stores its quants in 64-byte chunks that hold the same 4 columns of
// all 16 rows, and the 16 f16 scales of the block. Blocks go in pairs, each pair one 64-byte line
// of the two blocks' scales and their quants, so a group is one forward stream of 64-byte lines:
//
//   Q4_0 group:  pair[ceil(n_blocks / 2)] = { scales[2][16 rows] (f16), qs[2][chunks][16 rows][4 bytes] }
//   Q8_0 group:  pair[ceil(n_blocks / 2)] = { qs[2][chunks][16 rows][4 bytes], scales[2][16 rows] (f16) }
//
// (A lone last block of an odd count is followed by a zero block.) Where the scales sit was
// measured, not reasoned: all scales after all quants (reading 16 KB, skipping 2 KB, ...) cost one
// core ~25% of its stream; Q4_0 with each pair's scales after its quants (the kernel touching line
// 8 of 9 before lines 4-7) streamed ~19 GB/s on one Zen 5 core and decoded TinyLlama at 31-37
// tok/s, with the scales first 21-26 GB/s and 45-52 tok/s; Q8_0 the other way round (scales
// after: 18-23 tok/s, first: 15-16).
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
#include "core/worker_pool.h"
#include "io/ggml_type.h"

namespace nucleus {

struct WeightMatrix;

constexpr int kPackRows = 16;    // rows per group (lanes of a 512-bit register of int32)
constexpr int kPackTokens = 8;   // tokens a kernel call keeps in registers

// Where block b of a row group sits, from the group's start, for qs_bytes of quants per block
// (256 for Q4_0, 512 for Q8_0): the one definition of the layout above, used by the packer and
// every kernel (the AVX-512 ones with qs_bytes a compile-time constant). Unsigned b: halving it is a shift.
constexpr size_t kPackedPairScalesBytes = 2 * 2 * kPackRows;  // two blocks' 16 f16 scales: one line
constexpr size_t packed_pair_bytes(size_t qs_bytes) { return 2 * qs_bytes + kPackedPairScalesBytes; }
constexpr bool packed_scales_first(size_t qs_bytes) { return qs_bytes == 256; }  // Q4_0 (see above)
constexpr size_t packed_qs_offset(size_t b, size_t qs_bytes) {
  return (b / 2) * packed_pair_bytes(qs_bytes) + (packed_scales_first(qs_bytes) ? kPackedPairScalesBytes : 0) +
         (b % 2) * qs_bytes;
}
constexpr size_t packed_scales_offset(size_t b, size_t qs_bytes) {
  return (b / 2) * packed_pair_bytes(qs_bytes) + (packed_scales_first(qs_bytes) ? 0 : 2 * qs_bytes) +
         (b % 2) * 2 * kPackRows;
}

struct PackedRows {
  GgmlType type = GgmlType::Q4_0;  // the stored type the quants came from
  int64_t n_rows = 0, n_cols = 0;
  int64_t n_groups = 0, n_blocks = 0;  // row groups; blocks of 32 columns per row
  size_t qs_block_bytes = 0;           // 256 (Q4_0) or 512 (Q8_0)
  size_t group_bytes = 0;              // one group: ceil(n_blocks / 2) pairs, a multiple of 64
  std::shared_ptr<uint8_t> data;        // 64-byte aligned, on huge pages when large or from an arena

  const uint8_t* group(int64_t g) const { return data.get() + static_cast<size_t>(g) * group_bytes; }
  // Block b of group g: its quants (64-byte aligned) and its 16 scales (32-byte aligned).
  const uint8_t* block_qs(int64_t g, int64_t b) const {
    return group(g) + packed_qs_offset(static_cast<size_t>(b), qs_block_bytes);
  }
  const uint16_t* block_scales(int64_t g, int64_t b) const {
    return reinterpret_cast<const uint16_t*>(group(g) + packed_scales_offset(static_cast<size_t>(b), qs_block_bytes));
  }
};

// An empty packing of w's rows with n_blocks blocks per row and group_bytes per group, its memory
// from `arena` (or an allocation of its own when null): the part every packer shares.
std::shared_ptr<PackedRows> allocate_packed_rows(const WeightMatrix& w, int64_t n_blocks, size_t group_bytes,
                                                 WeightArena* arena);

bool packable(GgmlType type);  // Q4_0, Q8_0
// Repacks a Q4_0 / Q8_0 matrix (threads over row groups) into memory from `arena`, or into an
// allocation of its own when arena is null. Throws Error for other types.
std::shared_ptr<const PackedRows> pack_rows(const WeightMatrix& w, WorkerPool& pool, WeightArena* arena = nullptr);
inline std::shared_ptr<const PackedRows> pack_rows(const WeightMatrix& w, int n_threads, WeightArena* arena = nullptr) {
  WorkerPool pool(n_threads);
  return pack_rows(w, pool, arena);
}

}  // namespace nucleus
