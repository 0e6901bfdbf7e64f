// Matrix multiplication against a stored weight matrix of any supported type.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/aligned_vector.h"
#include "core/worker_pool.h"
#include "io/ggml_type.h"
#include "kernels/dot.h"
#include "kernels/packed_rows.h"
#include "kernels/step_profile.h"

namespace nucleus {

// A weight matrix as stored in the file: n_rows rows of n_cols elements each, row-major in
// its own type (GGUF ne[0] = n_cols, ne[1] = n_rows). The data points into the file's mapping, or
// into `copy` once copy_to_weight_memory has moved it.
struct WeightMatrix {
  GgmlType type = GgmlType::F32;
  const void* data = nullptr;
  int64_t n_cols = 0;     // input features (k)
  int64_t n_rows = 0;     // output features (m)
  size_t row_bytes = 0;   // bytes per stored row
  // Q4_0 / Q8_0 / Q4_K / Q5_K / Q6_K / F16: the same rows re-laid out for SIMD (pack_weights); matmul uses
  // it when present and the table has its kernel. Shared, so copies of a model's weights share one packing.
  std::shared_ptr<const PackedRows> packed;
  // The memory `data` points into after copy_to_weight_memory (null while it is the file's).
  std::shared_ptr<const uint8_t> copy;

  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * row_bytes; }
  size_t bytes() const { return row_bytes * static_cast<size_t>(n_rows); }  // the stored matrix, as read per pass
};

// Scratch space reused across calls (activation rows quantized for integer dot products).
struct MatmulScratch {
  std::vector<BlockQ8_0> q8_0;  // [n_tokens, n_cols / 32]
  std::vector<BlockQ8_K> q8_K;  // [n_tokens, n_cols / 256]
  std::vector<int16_t> q8_K_sub_sums;  // [n_cols / 256, n_tokens rounded up to 4, 8] (K-quant tiles)
  std::vector<float> q8_K_d;           // [n_cols / 256, n_tokens rounded up to 4]
  std::vector<int8_t> q8_K_qs;         // [n_tokens, n_cols] the Q8_K quants 64-byte aligned (+ 64 to align)
  std::vector<std::vector<uint8_t>> kquant_prepared;  // per thread: a task's row pairs, unpacked (kquant_tile.h)
  StepProfile* profile = nullptr;     // when set, each call adds its time (kernels/step_profile.h)
  std::vector<double> busy_seconds;   // per thread, while profiling
  double quantize_seconds = 0;        // the last call's activation quantization, while profiling
  std::vector<float> q8_0_scale;  // [n_tokens, n_cols / 32] each Q8_0 block's d as f32 (packed kernels)
  std::vector<int32_t> q8_0_sum;  // [n_tokens, n_cols / 32] Σ of each Q8_0 block's quants
  std::vector<int32_t> q8_0_chunk_bias;  // [n_tokens, n_cols / 32, 8] −128 · Σ of each 4 consecutive quants
  AlignedVector<uint16_t> bf16;  // [n_tokens, n_cols] activations rounded to BF16 (BF16 tiles), on cache lines
  // The threads of parallel calls (core/worker_pool.h), made by worker_pool() on first use. Scratch
  // that several loops of one forward pass use shares one pool, so no two teams spin at once.
  std::shared_ptr<WorkerPool> pool;
};

// scratch.pool, made (or remade) for n_threads when it has another size.
WorkerPool& worker_pool(MatmulScratch& scratch, int n_threads);

// The activation format a weight type's dot product consumes.
enum class ActivationFormat { F32, Q8_0, Q8_K };
ActivationFormat activation_format(GgmlType type);
bool matmul_supports(GgmlType type);

// Activation rows [n_tokens, n_cols] in the format of one weight type (pointers into scratch).
struct MatmulActivations {
  const float* f32 = nullptr;
  const BlockQ8_0* q8_0 = nullptr;
  const float* q8_0_scale = nullptr;  // [n_tokens, n_cols / 32]
  const int32_t* q8_0_sum = nullptr;  // [n_tokens, n_cols / 32]
  const int32_t* q8_0_chunk_bias = nullptr;  // [n_tokens, n_cols / 32, 8]
  const BlockQ8_K* q8_K = nullptr;
  const uint16_t* bf16 = nullptr;  // [n_tokens, n_cols], for BF16 weights where the table has BF16 tiles
};
// With a table, its quantizers (the same bytes on every table); without, the scalar ones.
MatmulActivations prepare_activations(const DotKernels& kernels, GgmlType type, const float* x, int64_t n_tokens, int64_t k,
                                      MatmulScratch& scratch, int n_threads = 1);
MatmulActivations prepare_activations(GgmlType type, const float* x, int64_t n_tokens, int64_t k, MatmulScratch& scratch,
                                      int n_threads = 1);
// One output element: dot(w.row(r), activations of token t).
float dot_row(const DotKernels& kernels, const WeightMatrix& w, int64_t r, const MatmulActivations& x, int64_t t);

// y[n_tokens, w.n_rows] = x[n_tokens, w.n_cols] · wᵀ, threads over output rows.
// Every y[t, r] is one dot(w.row(r), x[t]) from `kernels`, independent of n_tokens.
void matmul(const DotKernels& kernels, const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
            int n_threads, MatmulScratch& scratch);

// Several matrices applied to one input (Q, K and V; gate and up): ys[i][n_tokens, ws[i]->n_rows]
// = x · ws[i]ᵀ, the same bits as one matmul per matrix. Where all are one type and width and
// packed for a group kernel (any token count for the int8 ones, one token for F16 / BF16), the
// activations are prepared once and all the row groups run as one parallel pass; otherwise it
// is one matmul per matrix. At most kMaxJointMatrices share a pass.
constexpr size_t kMaxJointMatrices = 4;
void matmul_same_input(const DotKernels& kernels, std::span<const WeightMatrix* const> ws, const float* x,
                       int64_t n_tokens, std::span<float* const> ys, int n_threads, MatmulScratch& scratch);

// Whether pack_weights packs this matrix for this table: Q4_0 and Q8_0 always (every table has their
// packed kernels), the K-quants and F16 (rows of a multiple of 16 columns) where the table has a
// packed kernel for them.
bool packable(const WeightMatrix& w, const DotKernels& kernels);
PackedKQuantKernel packed_kquant_kernel(const DotKernels& kernels, GgmlType type);  // null where none
PackedGroupKernel packed_group_kernel(const DotKernels& kernels, GgmlType type);    // Q4_0, Q8_0; else null
// Packs w's rows for the packed kernels when packable(w, kernels); otherwise a no-op.
// The packing's memory comes from `arena` when given (a model's weights share huge pages).
// A packed matrix's row-major rows stay where they were: the tables without its packed kernel read them.
// The groups are packed on the pool's threads (the int form makes a pool of n_threads for the call).
void pack_weights(WeightMatrix& w, WorkerPool& pool, WeightArena* arena = nullptr,
                  const DotKernels& kernels = scalar_dot_kernels());
void pack_weights(WeightMatrix& w, int n_threads, WeightArena* arena = nullptr,
                  const DotKernels& kernels = scalar_dot_kernels());

// Moves a large matrix into weight memory (core/weight_memory.h: huge pages) by copying its rows;
// w.data then points at the copy. Returns false, changing nothing, for one too small to gain
// (under kMinHugeWeightBytes). Results of matmul are unchanged: the bytes are the same.
// With an arena the copy is carved from it instead (and no size is too small).
bool copy_to_weight_memory(WeightMatrix& w, WeightArena* arena = nullptr);

// Dequantizes one stored row (e.g. an embedding lookup) into dst[w.n_cols].
void matrix_row_to_f32(const WeightMatrix& w, int64_t r, float* dst);

}  // namespace nucleus
