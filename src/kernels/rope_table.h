// The cos/sin of every rotary angle one forward pass needs, computed once per pass for the batch's
// positions and shared by all heads and layers (instead of pow/cos/sin per token, head and layer).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace nucleus {

// Angle of rotary pair i at `position`: position · base^(−2i/n_rot). The one formula both the
// scalar rope() and RopeTable use, so a table row holds exactly the values rope() computes.
inline float rope_angle(int64_t position, int64_t pair, int64_t n_rot, float freq_base) {
  return static_cast<float>(position) *
         std::pow(freq_base, -2.0f * static_cast<float>(pair) / static_cast<float>(n_rot));
}

// Row t (for positions[t]) is cos_sin[t] = (C[n_rot], S[n_rot]) such that the rotated vector is
//   out[j] = x[j]·C[j] + x[partner(j)]·S[j]
// with partner(j) = j xor 1 (normal: pairs (2i, 2i+1)) or j ± n_rot/2 (neox: pairs (i, i + n_rot/2)).
// n_rot is even (HParams checks it). For pair i with angle θ: C = cos θ at both members, S = −sin θ at the first and +sin θ at the
// second, so out = (x0·cos − x1·sin, x0·sin + x1·cos) rounds exactly like the textbook formula.
class RopeTable {
 public:
  void build(const int32_t* positions, int64_t n_tokens, int64_t n_rot, float freq_base, bool neox);
  const float* row(int64_t t) const { return cos_sin_.data() + t * 2 * n_rot_; }  // [2, n_rot]
  int64_t n_rot() const { return n_rot_; }

 private:
  int64_t n_rot_ = 0;
  std::vector<float> cos_sin_;  // [n_tokens, 2, n_rot]
};

}  // namespace nucleus
