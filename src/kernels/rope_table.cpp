#include "kernels/rope_table.h"

namespace nucleus {

void RopeTable::build(const int32_t* positions, int64_t n_tokens, int64_t n_rot, float freq_base, bool neox) {
  n_rot_ = n_rot;
  cos_sin_.resize(static_cast<size_t>(n_tokens * 2 * n_rot));
  const int64_t half = n_rot / 2;
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* c = cos_sin_.data() + t * 2 * n_rot;  // [n_rot]
    float* s = c + n_rot;                        // [n_rot]
    for (int64_t i = 0; i < half; ++i) {
      const float theta = rope_angle(positions[t], i, n_rot, freq_base);
      const float cos_theta = std::cos(theta), sin_theta = std::sin(theta);
      const int64_t a = neox ? i : 2 * i;         // first member of the pair
      const int64_t b = neox ? i + half : 2 * i + 1;
      c[a] = cos_theta;
      c[b] = cos_theta;
      s[a] = -sin_theta;
      s[b] = sin_theta;
    }
  }
}

}  // namespace nucleus
