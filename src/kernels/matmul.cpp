#include "kernels/matmul.h"

#include <omp.h>

#include "core/error.h"
#include "kernels/quantize.h"

namespace nucleus {

bool uses_q8_0_activations(GgmlType type) { return type == GgmlType::Q8_0 || type == GgmlType::Q4_0; }

void matrix_row_to_f32(const WeightMatrix& w, int64_t r, float* dst) { dequantize_row(w.type, w.row(r), dst, w.n_cols); }

void matmul(const DotKernels& kernels, const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
            int n_threads, MatmulScratch& scratch) {
  const int64_t k = w.n_cols, m = w.n_rows;
  const GgmlType type = w.type;
  if (uses_q8_0_activations(type)) {
    const int64_t blocks_per_row = k / kQK8_0;
    scratch.quantized.resize(static_cast<size_t>(n_tokens * blocks_per_row));
    for (int64_t t = 0; t < n_tokens; ++t) quantize_activations_q8_0(x + t * k, scratch.quantized.data() + t * blocks_per_row, k);
  }
  const BlockQ8_0* xq = scratch.quantized.data();
  const int64_t blocks_per_row = k / kQK8_0;

  // Rows are split across threads; each thread walks its rows and, for each, every token, so a
  // weight row is loaded once and reused from cache for all tokens of the step.
#pragma omp parallel for num_threads(n_threads) schedule(static)
  for (int64_t r = 0; r < m; ++r) {
    const uint8_t* row = w.row(r);
    for (int64_t t = 0; t < n_tokens; ++t) {
      float v;
      switch (type) {
        case GgmlType::F32: v = kernels.dot_f32(reinterpret_cast<const float*>(row), x + t * k, k); break;
        case GgmlType::F16: v = kernels.dot_f16_f32(reinterpret_cast<const uint16_t*>(row), x + t * k, k); break;
        case GgmlType::BF16: v = kernels.dot_bf16_f32(reinterpret_cast<const uint16_t*>(row), x + t * k, k); break;
        case GgmlType::Q8_0:
          v = kernels.dot_q8_0_q8_0(reinterpret_cast<const BlockQ8_0*>(row), xq + t * blocks_per_row, blocks_per_row);
          break;
        case GgmlType::Q4_0:
          v = kernels.dot_q4_0_q8_0(reinterpret_cast<const BlockQ4_0*>(row), xq + t * blocks_per_row, blocks_per_row);
          break;
        default: v = 0.0f;  // rejected at model load (see Model::load)
      }
      y[t * m + r] = v;
    }
  }
}

}  // namespace nucleus
