#include "kernels/quantize_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"

namespace nucleus {

namespace {

int nearest(float v) { return static_cast<int>(std::nearbyintf(v)); }

// Packs 8 six-bit scales and mins into the 12-byte Q4_K/Q5_K layout (inverse of q4k_scale_min).
void pack_scales_mins(const uint8_t* sc, const uint8_t* m, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// Asymmetric fit of 8 sub-blocks of 32 values to q ∈ [0, levels]: x ≈ d·sc·q − dmin·m.
// Writes d, dmin, 6-bit sc[8], m[8] and the quantized values q[256].
void fit_asymmetric(const float* x, int levels, uint16_t* d_out, uint16_t* dmin_out, uint8_t* sc, uint8_t* m,
                    uint8_t* q) {
  float scales[8], mins[8];  // per sub-block: step and −minimum (≥ 0)
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float lo = xs[0], hi = xs[0];
    for (int l = 1; l < 32; ++l) {
      lo = std::min(lo, xs[l]);
      hi = std::max(hi, xs[l]);
    }
    lo = std::min(lo, 0.0f);  // the min term only subtracts, as in the format
    scales[j] = (hi - lo) / static_cast<float>(levels);
    mins[j] = -lo;
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float d = max_scale / 63.0f, dmin = max_min / 63.0f;
  *d_out = f32_to_f16(d);
  *dmin_out = f32_to_f16(dmin);
  const float d_eff = f16_to_f32(*d_out), dmin_eff = f16_to_f32(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(d_eff > 0 ? std::min(63, nearest(scales[j] / d_eff)) : 0);
    m[j] = static_cast<uint8_t>(dmin_eff > 0 ? std::min(63, nearest(mins[j] / dmin_eff)) : 0);
    const float step = d_eff * sc[j], offset = dmin_eff * m[j];
    for (int l = 0; l < 32; ++l) {
      const int v = step > 0 ? nearest((x[32 * j + l] + offset) / step) : 0;
      q[32 * j + l] = static_cast<uint8_t>(std::clamp(v, 0, levels));
    }
  }
}

}  // namespace

void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(x[i].d), dmin = f16_to_f32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    for (int chunk = 0; chunk < 4; ++chunk) {
      uint8_t sc, m;
      q4k_scale_min(2 * chunk, x[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      q4k_scale_min(2 * chunk + 1, x[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
      q += 32;
    }
  }
}

void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(x[i].d), dmin = f16_to_f32(x[i].dmin);
    const uint8_t* ql = x[i].qs;
    uint8_t u1 = 1, u2 = 2;
    for (int chunk = 0; chunk < 4; ++chunk) {
      uint8_t sc, m;
      q4k_scale_min(2 * chunk, x[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      q4k_scale_min(2 * chunk + 1, x[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (x[i].qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (x[i].qh[l] & u2 ? 16 : 0)) - m2;
      ql += 32;
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int half = 0; half < 2; ++half) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void quantize_row_q4_K(const float* x, BlockQ4_K* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8], q[kQK_K];
    fit_asymmetric(x + i * kQK_K, 15, &y[i].d, &y[i].dmin, sc, m, q);
    pack_scales_mins(sc, m, y[i].scales);
    for (int chunk = 0; chunk < 4; ++chunk)
      for (int l = 0; l < 32; ++l)
        y[i].qs[chunk * 32 + l] = static_cast<uint8_t>(q[chunk * 64 + l] | (q[chunk * 64 + 32 + l] << 4));
  }
}

void quantize_row_q5_K(const float* x, BlockQ5_K* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8], q[kQK_K];
    fit_asymmetric(x + i * kQK_K, 31, &y[i].d, &y[i].dmin, sc, m, q);
    pack_scales_mins(sc, m, y[i].scales);
    std::memset(y[i].qh, 0, sizeof y[i].qh);
    for (int chunk = 0; chunk < 4; ++chunk) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t a = q[chunk * 64 + l], b = q[chunk * 64 + 32 + l];
        y[i].qs[chunk * 32 + l] = static_cast<uint8_t>((a & 0xF) | ((b & 0xF) << 4));
        y[i].qh[l] = static_cast<uint8_t>(y[i].qh[l] | ((a >> 4) << (2 * chunk)) | ((b >> 4) << (2 * chunk + 1)));
      }
    }
  }
}

void quantize_row_q6_K(const float* x, BlockQ6_K* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* xb = x + i * kQK_K;
    float group_scale[16];  // signed: the largest-magnitude value maps to q = −32
    float max_abs_scale = 0.0f, max_scale = 0.0f;
    for (int g = 0; g < 16; ++g) {
      float amax = 0.0f, max = 0.0f;
      for (int l = 0; l < 16; ++l) {
        const float v = xb[16 * g + l];
        if (std::fabs(v) > amax) {
          amax = std::fabs(v);
          max = v;
        }
      }
      group_scale[g] = max / -32.0f;
      if (std::fabs(group_scale[g]) > max_abs_scale) {
        max_abs_scale = std::fabs(group_scale[g]);
        max_scale = group_scale[g];
      }
    }
    const float d = max_scale / -128.0f;
    y[i].d = f32_to_f16(d);
    const float d_eff = f16_to_f32(y[i].d);
    uint8_t q[kQK_K];
    for (int g = 0; g < 16; ++g) {
      const int s = d_eff != 0.0f ? std::clamp(nearest(group_scale[g] / d_eff), -128, 127) : 0;
      y[i].scales[g] = static_cast<int8_t>(s);
      const float step = d_eff * static_cast<float>(s);
      for (int l = 0; l < 16; ++l) {
        const int v = step != 0.0f ? nearest(xb[16 * g + l] / step) : 0;
        q[16 * g + l] = static_cast<uint8_t>(std::clamp(v, -32, 31) + 32);
      }
    }
    for (int half = 0; half < 2; ++half) {
      const uint8_t* qq = q + 128 * half;
      for (int l = 0; l < 32; ++l) {
        y[i].ql[64 * half + l] = static_cast<uint8_t>((qq[l] & 0xF) | ((qq[l + 64] & 0xF) << 4));
        y[i].ql[64 * half + 32 + l] = static_cast<uint8_t>((qq[l + 32] & 0xF) | ((qq[l + 96] & 0xF) << 4));
        y[i].qh[32 * half + l] = static_cast<uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) | ((qq[l + 64] >> 4) << 4) |
                                                      ((qq[l + 96] >> 4) << 6));
      }
    }
  }
}

void quantize_activations_q8_K(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* xb = x + i * kQK_K;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      if (std::fabs(xb[j]) > amax) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) y[i].qs[j] = static_cast<int8_t>(std::min(127, nearest(iscale * xb[j])));
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * g + l];
      y[i].bsums[g] = static_cast<int16_t>(sum);
    }
    y[i].d = 1.0f / iscale;
  }
}

}  // namespace nucleus
