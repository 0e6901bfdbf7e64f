#include "kernels/rope_table.h"

namespace nucleus {

void RopeTable::build(const int32_t* positions, int64_t n_tokens, const RopeParams& params) {
  const int64_t n_rot = params.n_rot;
  n_rot_ = n_rot;
  neox_ = params.neox;
  cos_sin_.resize(static_cast<size_t>(n_tokens * 2 * n_rot));
  const int64_t half = n_rot / 2;
  const float theta_scale = std::pow(params.freq_base, -2.0f / static_cast<float>(n_rot));
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* c = cos_sin_.data() + t * 2 * n_rot;  // [n_rot]
    float* s = c + n_rot;                        // [n_rot]
    float theta = static_cast<float>(positions[t]);  // θ_i by repeated products, as rope_angle
    for (int64_t i = 0; i < half; ++i) {
      const float factor = params.freq_factors ? params.freq_factors[i] : 1.0f;
      const float angle = params.freq_scale * (theta / factor);
      const float cos_theta = std::cos(angle) * params.attn_factor, sin_theta = std::sin(angle) * params.attn_factor;
      const int64_t a = params.neox ? i : 2 * i;  // first member of the pair
      const int64_t b = params.neox ? i + half : 2 * i + 1;
      c[a] = cos_theta;
      c[b] = cos_theta;
      s[a] = -sin_theta;
      s[b] = sin_theta;
      theta *= theta_scale;
    }
  }
}

}  // namespace nucleus
