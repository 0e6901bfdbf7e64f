// Matrix multiplication against a stored weight matrix of any supported type.
#pragma once
#include <cstdint>
#include <vector>

#include "io/ggml_type.h"
#include "kernels/dot.h"

namespace nucleus {

// A weight matrix as stored in the file: n_rows rows of n_cols elements each, row-major in
// its own type (GGUF ne[0] = n_cols, ne[1] = n_rows). The data is not owned (mmap).
struct WeightMatrix {
  GgmlType type = GgmlType::F32;
  const void* data = nullptr;
  int64_t n_cols = 0;     // input features (k)
  int64_t n_rows = 0;     // output features (m)
  size_t row_bytes = 0;   // bytes per stored row

  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * row_bytes; }
};

// Scratch space reused across calls (activation rows quantized for integer dot products).
struct MatmulScratch {
  std::vector<BlockQ8_0> q8_0;  // [n_tokens, n_cols / 32]
  std::vector<BlockQ8_K> q8_K;  // [n_tokens, n_cols / 256]
};

// The activation format a weight type's dot product consumes.
enum class ActivationFormat { F32, Q8_0, Q8_K };
ActivationFormat activation_format(GgmlType type);
bool matmul_supports(GgmlType type);

// Activation rows [n_tokens, n_cols] in the format of one weight type (pointers into scratch).
struct MatmulActivations {
  const float* f32 = nullptr;
  const BlockQ8_0* q8_0 = nullptr;
  const BlockQ8_K* q8_K = nullptr;
};
MatmulActivations prepare_activations(GgmlType type, const float* x, int64_t n_tokens, int64_t k, MatmulScratch& scratch);
// One output element: dot(w.row(r), activations of token t).
float dot_row(const DotKernels& kernels, const WeightMatrix& w, int64_t r, const MatmulActivations& x, int64_t t);

// y[n_tokens, w.n_rows] = x[n_tokens, w.n_cols] · wᵀ, threads over output rows.
// Every y[t, r] is one dot(w.row(r), x[t]) from `kernels`, independent of n_tokens.
void matmul(const DotKernels& kernels, const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
            int n_threads, MatmulScratch& scratch);

// Dequantizes one stored row (e.g. an embedding lookup) into dst[w.n_cols].
void matrix_row_to_f32(const WeightMatrix& w, int64_t r, float* dst);

}  // namespace nucleus
