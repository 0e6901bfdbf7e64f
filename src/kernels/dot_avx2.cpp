// AVX2 + FMA + F16C dot products. Compiled with target attributes so the binary still runs
// (with the scalar table) on CPUs without them; select_dot_kernels() checks at run time.
#include <immintrin.h>

#include "core/fp16.h"
#include "kernels/dot.h"

#define NUCLEUS_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace nucleus {

namespace {

// One f16 scale → f32 with the F16C instruction (the portable f16_to_f32 is a slow bit-twiddle).
NUCLEUS_AVX2 inline float half(uint16_t h) { return _cvtsh_ss(h); }

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
  for (; i < n; ++i) sum += half(w[i]) * x[i];
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
    const __m256 d = _mm256_set1_ps(half(w[b].d) * half(x[b].d));
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
    const __m256 d = _mm256_set1_ps(half(w[b].d) * half(x[b].d));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_lanes(qw, qx)), acc);
  }
  return horizontal_sum(acc);
}

int32_t mins_dot_bsums(const uint8_t* mins, const int16_t* bsums) {
  int32_t sum = 0;
  for (int j = 0; j < 8; ++j) sum += mins[j] * (bsums[2 * j] + bsums[2 * j + 1]);
  return sum;
}

NUCLEUS_AVX2 inline int32_t horizontal_sum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// Σ over one 64-value chunk: scale_a · (lo · x[0..31]) + scale_b · (hi · x[32..63]), unsigned q.
NUCLEUS_AVX2 inline __m256i chunk_dot(__m256i lo, __m256i hi, const int8_t* xq, uint8_t scale_a, uint8_t scale_b) {
  const __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
  const __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32)));
  return _mm256_add_epi32(_mm256_madd_epi16(p0, _mm256_set1_epi16(scale_a)), _mm256_madd_epi16(p1, _mm256_set1_epi16(scale_b)));
}

// The integer sums are exact, so these equal the scalar reference up to the float steps,
// which follow the same per-block order.
NUCLEUS_AVX2 float dot_q4_K_q8_K(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  const __m256i mask = _mm256_set1_epi8(0x0f);
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) q4k_scale_min(j, w[b].scales, &sc[j], &m[j]);
    __m256i acc = _mm256_setzero_si256();
    for (int chunk = 0; chunk < 4; ++chunk) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs + 32 * chunk));
      const __m256i lo = _mm256_and_si256(q, mask);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), mask);
      acc = _mm256_add_epi32(acc, chunk_dot(lo, hi, x[b].qs + 64 * chunk, sc[2 * chunk], sc[2 * chunk + 1]));
    }
    const float d = x[b].d * half(w[b].d), dmin = x[b].d * half(w[b].dmin);
    sum += d * static_cast<float>(horizontal_sum_i32(acc)) - dmin * static_cast<float>(mins_dot_bsums(m, x[b].bsums));
  }
  return sum;
}

NUCLEUS_AVX2 float dot_q5_K_q8_K(const BlockQ5_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  const __m256i mask = _mm256_set1_epi8(0x0f);
  const __m256i one = _mm256_set1_epi8(1);
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) q4k_scale_min(j, w[b].scales, &sc[j], &m[j]);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qh));
    __m256i acc = _mm256_setzero_si256();
    for (int chunk = 0; chunk < 4; ++chunk) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs + 32 * chunk));
      // Bit (2·chunk) of qh[l] is the fifth bit of the low-nibble value, bit (2·chunk+1) of the high one.
      const __m256i h_lo = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * chunk), one);
      const __m256i h_hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * chunk + 1), one);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, mask), _mm256_slli_epi16(h_lo, 4));
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), mask), _mm256_slli_epi16(h_hi, 4));
      acc = _mm256_add_epi32(acc, chunk_dot(lo, hi, x[b].qs + 64 * chunk, sc[2 * chunk], sc[2 * chunk + 1]));
    }
    const float d = x[b].d * half(w[b].d), dmin = x[b].d * half(w[b].dmin);
    sum += d * static_cast<float>(horizontal_sum_i32(acc)) - dmin * static_cast<float>(mins_dot_bsums(m, x[b].bsums));
  }
  return sum;
}

// One 32-value run of Q6_K: q unsigned [0, 63] covering two 16-value groups with scales a, b.
NUCLEUS_AVX2 inline __m256i q6_run(__m256i q, const int8_t* xq, int8_t scale_a, int8_t scale_b) {
  const __m256i p = _mm256_maddubs_epi16(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
  const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(scale_b), _mm_set1_epi16(scale_a));
  return _mm256_madd_epi16(p, scales);
}

NUCLEUS_AVX2 float dot_q6_K_q8_K(const BlockQ6_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  const __m256i mask4 = _mm256_set1_epi8(0x0f);
  const __m256i mask2 = _mm256_set1_epi8(0x03);
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int8_t* sc = w[b].scales;
    __m256i acc = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].ql + 64 * half));
      const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].ql + 64 * half + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qh + 32 * half));
      auto high = [&](int shift) { return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, shift), mask2), 4); };
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(ql0, mask4), high(0));
      const __m256i q2 = _mm256_or_si256(_mm256_and_si256(ql1, mask4), high(2));
      const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), mask4), high(4));
      const __m256i q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), mask4), high(6));
      const int8_t* xq = x[b].qs + 128 * half;
      const int8_t* s = sc + 8 * half;
      acc = _mm256_add_epi32(acc, q6_run(q1, xq, s[0], s[1]));
      acc = _mm256_add_epi32(acc, q6_run(q2, xq + 32, s[2], s[3]));
      acc = _mm256_add_epi32(acc, q6_run(q3, xq + 64, s[4], s[5]));
      acc = _mm256_add_epi32(acc, q6_run(q4, xq + 96, s[6], s[7]));
    }
    // q was used unsigned; subtract 32 · Σ_g scale_g · (Σ of x in group g).
    int32_t offset = 0;
    for (int g = 0; g < 16; ++g) offset += sc[g] * x[b].bsums[g];
    const int32_t sumi = horizontal_sum_i32(acc) - 32 * offset;
    sum += x[b].d * half(w[b].d) * static_cast<float>(sumi);
  }
  return sum;
}

// --- several tokens per weight row (mirror the single-token kernels step for step) ---

NUCLEUS_AVX2 void dot4_f16_f32(const uint16_t* w, const float* const* x, int64_t n, float* out) {
  __m256 acc0[kDotTokens], acc1[kDotTokens];
  for (int j = 0; j < kDotTokens; ++j) acc0[j] = acc1[j] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i)));
    const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i + 8)));
    for (int j = 0; j < kDotTokens; ++j) {
      acc0[j] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[j] + i), acc0[j]);
      acc1[j] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x[j] + i + 8), acc1[j]);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i)));
    for (int j = 0; j < kDotTokens; ++j) acc0[j] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[j] + i), acc0[j]);
  }
  for (int j = 0; j < kDotTokens; ++j) {
    float sum = horizontal_sum(_mm256_add_ps(acc0[j], acc1[j]));
    for (int64_t t = i; t < n; ++t) sum += half(w[t]) * x[j][t];
    out[j] = sum;
  }
}

NUCLEUS_AVX2 void dot4_q8_0_q8_0(const BlockQ8_0* w, const BlockQ8_0* const* x, int64_t n_blocks, float* out) {
  __m256 acc[kDotTokens];
  for (int j = 0; j < kDotTokens; ++j) acc[j] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs));
    const __m256i abs_w = _mm256_sign_epi8(qw, qw);
    const float dw = half(w[b].d);
    for (int j = 0; j < kDotTokens; ++j) {
      const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].qs));
      const __m256i lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(qx, qw)), _mm256_set1_epi16(1));
      acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * half(x[j][b].d)), _mm256_cvtepi32_ps(lanes), acc[j]);
    }
  }
  for (int j = 0; j < kDotTokens; ++j) out[j] = horizontal_sum(acc[j]);
}

NUCLEUS_AVX2 void dot4_q4_0_q8_0(const BlockQ4_0* w, const BlockQ8_0* const* x, int64_t n_blocks, float* out) {
  __m256 acc[kDotTokens];
  for (int j = 0; j < kDotTokens; ++j) acc[j] = _mm256_setzero_ps();
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  const __m256i eight = _mm256_set1_epi8(8);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs));
    const __m256i nibbles = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    const __m256i qw = _mm256_sub_epi8(_mm256_and_si256(nibbles, low_mask), eight);
    const __m256i abs_w = _mm256_sign_epi8(qw, qw);
    const float dw = half(w[b].d);
    for (int j = 0; j < kDotTokens; ++j) {
      const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].qs));
      const __m256i lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(qx, qw)), _mm256_set1_epi16(1));
      acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * half(x[j][b].d)), _mm256_cvtepi32_ps(lanes), acc[j]);
    }
  }
  for (int j = 0; j < kDotTokens; ++j) out[j] = horizontal_sum(acc[j]);
}

}  // namespace

const DotKernels& avx2_dot_kernels() {
  static const DotKernels table{Isa::Avx2,    dot_f32,       dot_f16_f32,    dot_bf16_f32,   dot_q8_0_q8_0,
                                dot_q4_0_q8_0, dot_q4_K_q8_K, dot_q5_K_q8_K,  dot_q6_K_q8_K,  dot4_f16_f32,
                                dot4_q8_0_q8_0, dot4_q4_0_q8_0};
  return table;
}

}  // namespace nucleus
