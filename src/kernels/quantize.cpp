#include "kernels/quantize.h"
#include "kernels/quantize_activations.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/quantize_k.h"

namespace nucleus {

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  const int64_t n_blocks = n / kQK8_0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK8_0; ++j) y[b].qs[j] = static_cast<int8_t>(std::roundf(xb[j] * id));
  }
}

void quantize_activations_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  const int64_t n_blocks = n / kQK8_0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * kQK8_0;
    float amax = 0.0f;  // a plain compare (not fmax's NaN rules) lets the compiler vectorize it
    for (int j = 0; j < kQK8_0; ++j) {
      const float a = std::fabs(xb[j]);
      amax = a > amax ? a : amax;
    }
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    y[b].d = f32_to_f16(amax / 127.0f);
    for (int j = 0; j < kQK8_0; ++j) y[b].qs[j] = static_cast<int8_t>(std::nearbyintf(xb[j] * id));
  }
}

void quantize_q8_0_row_scalar(const float* x, int64_t k, BlockQ8_0* blocks, float* scale, int32_t* sum,
                              int32_t* chunk_bias) {
  quantize_activations_q8_0(x, blocks, k);
  for (int64_t b = 0; b < k / kQK8_0; ++b) {
    scale[b] = f16_to_f32(blocks[b].d);
    int32_t s = 0;
    for (int c = 0; c < 8; ++c) {
      const int8_t* q = blocks[b].qs + 4 * c;
      const int32_t chunk = q[0] + q[1] + q[2] + q[3];
      chunk_bias[8 * b + c] = -128 * chunk;
      s += chunk;
    }
    sum[b] = s;
  }
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  const int64_t n_blocks = n / kQK4_0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * kQK4_0;
    float amax = 0.0f, max = 0.0f;  // max keeps the sign of the largest-magnitude value
    for (int j = 0; j < kQK4_0; ++j) {
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const float x0 = xb[j] * id;
      const float x1 = xb[j + kQK4_0 / 2] * id;
      const uint8_t q0 = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x0 + 8.5f))));
      const uint8_t q1 = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x1 + 8.5f))));
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case GgmlType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case GgmlType::F16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case GgmlType::BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case GgmlType::Q8_0: {
      const auto* blocks = static_cast<const BlockQ8_0*>(src);
      for (int64_t b = 0; b < n / kQK8_0; ++b) {
        const float d = f16_to_f32(blocks[b].d);
        for (int j = 0; j < kQK8_0; ++j) dst[b * kQK8_0 + j] = d * blocks[b].qs[j];
      }
      return;
    }
    case GgmlType::Q4_0: {
      const auto* blocks = static_cast<const BlockQ4_0*>(src);
      for (int64_t b = 0; b < n / kQK4_0; ++b) {
        const float d = f16_to_f32(blocks[b].d);
        for (int j = 0; j < kQK4_0 / 2; ++j) {
          dst[b * kQK4_0 + j] = d * ((blocks[b].qs[j] & 0x0f) - 8);
          dst[b * kQK4_0 + j + kQK4_0 / 2] = d * ((blocks[b].qs[j] >> 4) - 8);
        }
      }
      return;
    }
    case GgmlType::Q4_K: dequantize_row_q4_K(static_cast<const BlockQ4_K*>(src), dst, n); return;
    case GgmlType::Q5_K: dequantize_row_q5_K(static_cast<const BlockQ5_K*>(src), dst, n); return;
    case GgmlType::Q6_K: dequantize_row_q6_K(static_cast<const BlockQ6_K*>(src), dst, n); return;
    default: throw Error(std::string("dequantize: unsupported type ") + ggml_type_name(type));
  }
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  switch (type) {
    case GgmlType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case GgmlType::F16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case GgmlType::BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case GgmlType::Q8_0: quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n); return;
    case GgmlType::Q4_0: quantize_row_q4_0(src, static_cast<BlockQ4_0*>(dst), n); return;
    case GgmlType::Q4_K: quantize_row_q4_K(src, static_cast<BlockQ4_K*>(dst), n); return;
    case GgmlType::Q5_K: quantize_row_q5_K(src, static_cast<BlockQ5_K*>(dst), n); return;
    case GgmlType::Q6_K: quantize_row_q6_K(src, static_cast<BlockQ6_K*>(dst), n); return;
    default: throw Error(std::string("quantize: unsupported type ") + ggml_type_name(type));
  }
}

}  // namespace nucleus
