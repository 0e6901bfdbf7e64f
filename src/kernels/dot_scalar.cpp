// Scalar reference dot products: simple, obviously correct, the ground truth for SIMD tests.
#include <cmath>

#include "core/fp16.h"
#include "kernels/dot.h"

namespace nucleus {

namespace {

float dot_f32(const float* w, const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += w[i] * x[i];
  return sum;
}

float dot_f16_f32(const uint16_t* w, const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += f16_to_f32(w[i]) * x[i];
  return sum;
}

float dot_bf16_f32(const uint16_t* w, const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += bf16_to_f32(w[i]) * x[i];
  return sum;
}

// Q8_0: 8 lanes of 4 consecutive values, one fused multiply-add per block and lane, then a fixed
// pairwise reduction — the order of llama.cpp's AVX2 kernel, which its reference logits follow
// (this one model family amplifies summation-order differences up to 3e-2 in the logits).
float reduce_lanes(const float lanes[8]) {
  const float a0 = lanes[0] + lanes[4], a1 = lanes[1] + lanes[5], a2 = lanes[2] + lanes[6], a3 = lanes[3] + lanes[7];
  return (a0 + a2) + (a1 + a3);
}

float dot_q8_0_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n_blocks) {
  float lanes[8] = {};
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(w[b].d) * f16_to_f32(x[b].d);
    for (int lane = 0; lane < 8; ++lane) {
      int32_t isum = 0;
      for (int j = 4 * lane; j < 4 * lane + 4; ++j) isum += static_cast<int32_t>(w[b].qs[j]) * x[b].qs[j];
      lanes[lane] = std::fma(static_cast<float>(isum), d, lanes[lane]);
    }
  }
  return reduce_lanes(lanes);
}

// Q4_0: per block the exact integer sum, then one fused multiply-add with the block's scale
// product (the order of llama.cpp's repacked Q4_0 kernels).
float dot_q4_0_q8_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n_blocks) {
  float acc = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    // Byte j holds value j in its low nibble and value j + 16 in its high nibble. (Written as
    // one loop over 16 bytes: a 32-value loop indexing qs[j − 16] was miscompiled by GCC 12 -O3.)
    for (int j = 0; j < 16; ++j) {
      isum += ((w[b].qs[j] & 0x0f) - 8) * x[b].qs[j];
      isum += ((w[b].qs[j] >> 4) - 8) * x[b].qs[j + 16];
    }
    acc = std::fma(static_cast<float>(isum), f16_to_f32(w[b].d) * f16_to_f32(x[b].d), acc);
  }
  return acc;
}

// Q5_K and Q6_K follow llama.cpp's AVX2 kernels step for step: per block, 8 exact int32 lanes (lane
// k holds the values at positions 4k..4k+3 of every 32-value run), each lane accumulated in float
// across blocks with one fused multiply-add, then reduce_lanes; the mins of Q5_K go to one float.
//
// Q4_K sums each block as integers first (llama.cpp's ARM kernels also do, with their own float
// steps): the exact isum = Σ scale·q·x and msum = Σ min·(sub-block Σx), then
// acc = fma(d_x·d, isum, acc) and acc_m = fma(−d_x·dmin, msum, acc_m); the result is acc + acc_m.
// Keeping AVX2's 8 float lanes forces a kernel with rows in SIMD lanes to scale every 4-product sum
// before mixing runs (one VPDPWSSD per two VPDPBUSD); with one integer per block each 32-value run
// is scaled once: on Zen 4 the packed 5-token kernel went from 106 to 150-163 G multiply-adds/s in
// L1 and a 5-token verification pass from 1.5 to ~1.2-1.3 one-token steps (docs/BENCHMARKS.md,
// 2026-12-07 16:54 UTC). Against llama.cpp's Q4_K_M reference the logits agree to 7e-6 (5e-6 in
// the AVX2 order).
//
// Why follow llama.cpp at all: a last-bit difference, in a deep enough stack, can flip a Q8_K
// activation that sits on a rounding tie; Q5_K_M and Q6_K files once differed from llama.cpp by up to
// 7.7e-2 that way, and Q6_K in Q4_K's order did again (5.2e-2 on the shared Q6_K reference, every
// table agreeing with the others: not kept). Q4_K's order is not llama.cpp's x86 one, and
// tests/model_fidelity_test.cpp would show such a flip on the shared Q4_K_M reference. Every table
// here (scalar, AVX2, AVX-512, packed, tiles) computes each type's order exactly, so all of them
// give the same bits.

// Adds Σ scale·q·x over one 32-value run to the lanes: scale_lo for values 0..15, scale_hi 16..31.
void add_run_lanes(const uint8_t* q, const int8_t* x, int scale_lo, int scale_hi, int32_t lanes[8]) {
  for (int k = 0; k < 8; ++k) {
    int32_t s = 0;
    for (int p = 4 * k; p < 4 * k + 4; ++p) s += q[p] * x[p];
    lanes[k] += (k < 4 ? scale_lo : scale_hi) * s;
  }
}

void accumulate_lanes(float d, const int32_t lanes[8], float acc[8]) {
  for (int k = 0; k < 8; ++k) acc[k] = std::fma(d, static_cast<float>(lanes[k]), acc[k]);
}

// Σ_j m_j · (Σ of activations in sub-block j) as 4 partial sums: lane i covers sub-blocks 2i, 2i+1.
void mins_lanes(const uint8_t* mins, const int16_t* bsums, int32_t out[4]) {
  for (int i = 0; i < 4; ++i)
    out[i] = mins[2 * i] * (bsums[4 * i] + bsums[4 * i + 1]) + mins[2 * i + 1] * (bsums[4 * i + 2] + bsums[4 * i + 3]);
}

// One 64-value chunk of Q4_K/Q5_K: 32 low-nibble values (with their fifth bits for Q5_K) then 32 high.
void q45k_chunk(const uint8_t* qs, const uint8_t* qh, int chunk, uint8_t lo[32], uint8_t hi[32]) {
  for (int l = 0; l < 32; ++l) {
    lo[l] = static_cast<uint8_t>(qs[l] & 0xF);
    hi[l] = static_cast<uint8_t>(qs[l] >> 4);
    if (qh) {
      lo[l] = static_cast<uint8_t>(lo[l] | (((qh[l] >> (2 * chunk)) & 1) << 4));
      hi[l] = static_cast<uint8_t>(hi[l] | (((qh[l] >> (2 * chunk + 1)) & 1) << 4));
    }
  }
}

template <typename Block>
void q45k_block_lanes(const Block& w, const uint8_t* qh, const BlockQ8_K& x, int32_t lanes[8], uint8_t m[8]) {
  uint8_t sc[8];
  for (int j = 0; j < 8; ++j) q4k_scale_min(j, w.scales, &sc[j], &m[j]);
  for (int chunk = 0; chunk < 4; ++chunk) {
    uint8_t lo[32], hi[32];
    q45k_chunk(w.qs + 32 * chunk, qh, chunk, lo, hi);
    add_run_lanes(lo, x.qs + 64 * chunk, sc[2 * chunk], sc[2 * chunk], lanes);
    add_run_lanes(hi, x.qs + 64 * chunk + 32, sc[2 * chunk + 1], sc[2 * chunk + 1], lanes);
  }
}

float dot_q4_K_q8_K(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float acc = 0.0f, acc_m = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t lanes[8] = {}, mins[4];
    uint8_t m[8];
    q45k_block_lanes(w[b], nullptr, x[b], lanes, m);
    int32_t isum = 0;
    for (int k = 0; k < 8; ++k) isum += lanes[k];
    mins_lanes(m, x[b].bsums, mins);
    acc = std::fma(x[b].d * f16_to_f32(w[b].d), static_cast<float>(isum), acc);
    acc_m = std::fma(-x[b].d * f16_to_f32(w[b].dmin), static_cast<float>(mins[0] + mins[1] + mins[2] + mins[3]), acc_m);
  }
  return acc + acc_m;
}

float dot_q5_K_q8_K(const BlockQ5_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float acc[8] = {}, summs = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t lanes[8] = {}, mins[4];
    uint8_t m[8];
    q45k_block_lanes(w[b], w[b].qh, x[b], lanes, m);
    accumulate_lanes(x[b].d * f16_to_f32(w[b].d), lanes, acc);
    mins_lanes(m, x[b].bsums, mins);
    const float dmin = -x[b].d * f16_to_f32(w[b].dmin);
    summs = std::fma(dmin, static_cast<float>(mins[0] + mins[1] + mins[2] + mins[3]), summs);
  }
  return reduce_lanes(acc) + summs;
}

// Q6_K: q used unsigned [0, 63]; lane k then subtracts 32·(scale·Σx) of sub-blocks 2k and 2k+1.
float dot_q6_K_q8_K(const BlockQ6_K* w, const BlockQ8_K* x, int64_t n_blocks) {
  float acc[8] = {};
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t lanes[8] = {};
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = w[b].ql + 64 * half;
      const uint8_t* qh = w[b].qh + 32 * half;
      const int8_t* sc = w[b].scales + 8 * half;
      uint8_t q[4][32];
      for (int l = 0; l < 32; ++l) {
        q[0][l] = static_cast<uint8_t>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4));
        q[1][l] = static_cast<uint8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
        q[2][l] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
        q[3][l] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
      }
      for (int run = 0; run < 4; ++run)
        add_run_lanes(q[run], x[b].qs + 128 * half + 32 * run, sc[2 * run], sc[2 * run + 1], lanes);
    }
    for (int k = 0; k < 8; ++k)
      lanes[k] -= 32 * (x[b].bsums[2 * k] * w[b].scales[2 * k] + x[b].bsums[2 * k + 1] * w[b].scales[2 * k + 1]);
    accumulate_lanes(x[b].d * f16_to_f32(w[b].d), lanes, acc);
  }
  return reduce_lanes(acc);
}

}  // namespace

const DotKernels& scalar_dot_kernels() {
  static const DotKernels table = [] {
    DotKernels t{Isa::Scalar,   dot_f32,       dot_f16_f32,   dot_bf16_f32, dot_q8_0_q8_0,
                 dot_q4_0_q8_0, dot_q4_K_q8_K, dot_q5_K_q8_K, dot_q6_K_q8_K};
    t.packed_q4_0 = packed_q4_0_scalar;
    t.packed_q8_0 = packed_q8_0_scalar;
    return t;
  }();
  return table;
}

}  // namespace nucleus
