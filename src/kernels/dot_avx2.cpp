// AVX2 + FMA + F16C dot products. Compiled with target attributes so the binary still runs
// (with the scalar table) on CPUs without them; select_dot_kernels() checks at run time.
#include <immintrin.h>

#include "core/fp16.h"
#include "kernels/dot.h"

#define NUCLEUS_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace nucleus {

namespace {

NUCLEUS_AVX2 inline float horizontal_sum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

NUCLEUS_AVX2 float dot_f32(const float* w, const float* x, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc0);
  float sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += w[i] * x[i];
  return sum;
}

NUCLEUS_AVX2 float dot_f16_f32(const uint16_t* w, const float* x, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i)));
    __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i + 8)));
    acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) {
    __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i)));
    acc0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), acc0);
  }
  float sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += f16_to_f32(w[i]) * x[i];
  return sum;
}

NUCLEUS_AVX2 float dot_bf16_f32(const uint16_t* w, const float* x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i));
    __m256 wf = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    acc = _mm256_fmadd_ps(wf, _mm256_loadu_ps(x + i), acc);
  }
  float sum = horizontal_sum(acc);
  for (; i < n; ++i) sum += bf16_to_f32(w[i]) * x[i];
  return sum;
}

// Signed int8 × int8 → 8 int32 lanes, via the sign trick (maddubs needs one unsigned operand).
NUCLEUS_AVX2 inline __m256i dot_i8_lanes(__m256i a, __m256i b) {
  const __m256i abs_a = _mm256_sign_epi8(a, a);
  const __m256i b_signed = _mm256_sign_epi8(b, a);
  const __m256i pairs = _mm256_maddubs_epi16(abs_a, b_signed);
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

NUCLEUS_AVX2 float dot_q8_0_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n_blocks) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs));
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
    const __m256 d = _mm256_set1_ps(f16_to_f32(w[b].d) * f16_to_f32(x[b].d));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_lanes(qw, qx)), acc);
  }
  return horizontal_sum(acc);
}

NUCLEUS_AVX2 float dot_q4_0_q8_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n_blocks) {
  __m256 acc = _mm256_setzero_ps();
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i eight = _mm256_set1_epi8(8);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs));
    // Low nibbles are values 0..15, high nibbles values 16..31.
    const __m256i nibbles = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    const __m256i qw = _mm256_sub_epi8(_mm256_and_si256(nibbles, low_mask), eight);
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
    const __m256 d = _mm256_set1_ps(f16_to_f32(w[b].d) * f16_to_f32(x[b].d));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_lanes(qw, qx)), acc);
  }
  return horizontal_sum(acc);
}

}  // namespace

const DotKernels& avx2_dot_kernels() {
  static const DotKernels table{Isa::Avx2, dot_f32, dot_f16_f32, dot_bf16_f32, dot_q8_0_q8_0, dot_q4_0_q8_0};
  return table;
}

}  // namespace nucleus
