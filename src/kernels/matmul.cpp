#include "kernels/matmul.h"

#include <omp.h>

#include <algorithm>

#include "core/error.h"
#include "kernels/quantize.h"
#include "kernels/quantize_k.h"

namespace nucleus {

namespace {
constexpr int64_t kMinParallelWork = 1 << 18;  // multiply-adds below which one thread is faster
}  // namespace

ActivationFormat activation_format(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0: return ActivationFormat::Q8_0;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return ActivationFormat::Q8_K;
    default: return ActivationFormat::F32;
  }
}

bool matmul_supports(GgmlType type) {
  switch (type) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0: case GgmlType::Q4_0:
    case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K: return true;
    default: return false;
  }
}

void matrix_row_to_f32(const WeightMatrix& w, int64_t r, float* dst) { dequantize_row(w.type, w.row(r), dst, w.n_cols); }

float dot_row(const DotKernels& kernels, const WeightMatrix& w, int64_t r, const MatmulActivations& x, int64_t t) {
  const uint8_t* row = w.row(r);
  const int64_t k = w.n_cols;
  switch (w.type) {
    case GgmlType::F32: return kernels.dot_f32(reinterpret_cast<const float*>(row), x.f32 + t * k, k);
    case GgmlType::F16: return kernels.dot_f16_f32(reinterpret_cast<const uint16_t*>(row), x.f32 + t * k, k);
    case GgmlType::BF16: return kernels.dot_bf16_f32(reinterpret_cast<const uint16_t*>(row), x.f32 + t * k, k);
    case GgmlType::Q8_0:
      return kernels.dot_q8_0_q8_0(reinterpret_cast<const BlockQ8_0*>(row), x.q8_0 + t * (k / kQK8_0), k / kQK8_0);
    case GgmlType::Q4_0:
      return kernels.dot_q4_0_q8_0(reinterpret_cast<const BlockQ4_0*>(row), x.q8_0 + t * (k / kQK8_0), k / kQK8_0);
    case GgmlType::Q4_K:
      return kernels.dot_q4_K_q8_K(reinterpret_cast<const BlockQ4_K*>(row), x.q8_K + t * (k / kQK_K), k / kQK_K);
    case GgmlType::Q5_K:
      return kernels.dot_q5_K_q8_K(reinterpret_cast<const BlockQ5_K*>(row), x.q8_K + t * (k / kQK_K), k / kQK_K);
    case GgmlType::Q6_K:
      return kernels.dot_q6_K_q8_K(reinterpret_cast<const BlockQ6_K*>(row), x.q8_K + t * (k / kQK_K), k / kQK_K);
    default: throw Error(std::string("matmul: unsupported weight type ") + ggml_type_name(w.type));
  }
}

MatmulActivations prepare_activations(GgmlType type, const float* x, int64_t n_tokens, int64_t k, MatmulScratch& scratch) {
  MatmulActivations a;
  a.f32 = x;
  switch (activation_format(type)) {
    case ActivationFormat::Q8_0: {
      scratch.q8_0.resize(static_cast<size_t>(n_tokens * (k / kQK8_0)));
      for (int64_t t = 0; t < n_tokens; ++t) quantize_activations_q8_0(x + t * k, scratch.q8_0.data() + t * (k / kQK8_0), k);
      a.q8_0 = scratch.q8_0.data();
      break;
    }
    case ActivationFormat::Q8_K: {
      scratch.q8_K.resize(static_cast<size_t>(n_tokens * (k / kQK_K)));
      for (int64_t t = 0; t < n_tokens; ++t) quantize_activations_q8_K(x + t * k, scratch.q8_K.data() + t * (k / kQK_K), k);
      a.q8_K = scratch.q8_K.data();
      break;
    }
    case ActivationFormat::F32: break;
  }
  return a;
}

namespace {

constexpr int64_t kRowTile = 64;  // rows per task: a tile of weights stays in L2 while tokens stream past

// y[t0 .. t0+kDotTokens) for one row through the multi-token kernel; false when the table has none.
bool dot_row_tokens(const DotKernels& kernels, const WeightMatrix& w, int64_t r, const MatmulActivations& a,
                    int64_t t0, float* out) {
  const uint8_t* row = w.row(r);
  const int64_t k = w.n_cols;
  switch (w.type) {
    case GgmlType::F16: {
      if (!kernels.dot4_f16_f32) return false;
      const float* x[kDotTokens];
      for (int j = 0; j < kDotTokens; ++j) x[j] = a.f32 + (t0 + j) * k;
      kernels.dot4_f16_f32(reinterpret_cast<const uint16_t*>(row), x, k, out);
      return true;
    }
    case GgmlType::Q8_0:
    case GgmlType::Q4_0: {
      const BlockQ8_0* x[kDotTokens];
      for (int j = 0; j < kDotTokens; ++j) x[j] = a.q8_0 + (t0 + j) * (k / kQK8_0);
      if (w.type == GgmlType::Q8_0 && kernels.dot4_q8_0_q8_0) {
        kernels.dot4_q8_0_q8_0(reinterpret_cast<const BlockQ8_0*>(row), x, k / kQK8_0, out);
        return true;
      }
      if (w.type == GgmlType::Q4_0 && kernels.dot4_q4_0_q8_0) {
        kernels.dot4_q4_0_q8_0(reinterpret_cast<const BlockQ4_0*>(row), x, k / kQK8_0, out);
        return true;
      }
      return false;
    }
    default: return false;
  }
}

}  // namespace

void matmul(const DotKernels& kernels, const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
            int n_threads, MatmulScratch& scratch) {
  const int64_t k = w.n_cols, m = w.n_rows;
  if (!matmul_supports(w.type)) throw Error(std::string("matmul: unsupported weight type ") + ggml_type_name(w.type));
  const MatmulActivations a = prepare_activations(w.type, x, n_tokens, k, scratch);
  // Small products stay on one thread: waking a team costs more than the work.
  const bool parallel = n_threads > 1 && m * k * n_tokens >= kMinParallelWork;
  if (n_tokens == 1) {
    if (!parallel) {  // not even a team of one: entering OpenMP costs microseconds per call
      for (int64_t r = 0; r < m; ++r) y[r] = dot_row(kernels, w, r, a, 0);
      return;
    }
#pragma omp parallel for num_threads(n_threads) schedule(static)
    for (int64_t r = 0; r < m; ++r) y[r] = dot_row(kernels, w, r, a, 0);
    return;
  }
  // Several tokens: tiles of rows; within a tile, groups of kDotTokens tokens share each loaded
  // weight row (arithmetic intensity grows with the group). Every y[t, r] is still the same
  // reduction as a single-token dot, so results do not depend on n_tokens.
  const int64_t n_tiles = (m + kRowTile - 1) / kRowTile;
  auto run_tile = [&](int64_t tile) {
    const int64_t r_end = std::min(m, (tile + 1) * kRowTile);
    int64_t t0 = 0;
    float out[kDotTokens];
    for (; t0 + kDotTokens <= n_tokens; t0 += kDotTokens) {
      for (int64_t r = tile * kRowTile; r < r_end; ++r) {
        if (dot_row_tokens(kernels, w, r, a, t0, out)) {
          for (int j = 0; j < kDotTokens; ++j) y[(t0 + j) * m + r] = out[j];
        } else {
          for (int j = 0; j < kDotTokens; ++j) y[(t0 + j) * m + r] = dot_row(kernels, w, r, a, t0 + j);
        }
      }
    }
    for (; t0 < n_tokens; ++t0)
      for (int64_t r = tile * kRowTile; r < r_end; ++r) y[t0 * m + r] = dot_row(kernels, w, r, a, t0);
  };
  if (!parallel) {
    for (int64_t tile = 0; tile < n_tiles; ++tile) run_tile(tile);
    return;
  }
#pragma omp parallel for num_threads(n_threads) schedule(dynamic, 1)
  for (int64_t tile = 0; tile < n_tiles; ++tile) run_tile(tile);
}

}  // namespace nucleus
