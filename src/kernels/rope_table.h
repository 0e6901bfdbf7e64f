// The cos/sin of every rotary angle one forward pass needs, computed once per pass for the batch's
// positions and shared by all heads and layers of one rope kind (instead of pow/cos/sin per token,
// head and layer).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace nucleus {

// One rotary embedding (the model's description of it: model/hparams.h RopeSpec).
struct RopeParams {
  int64_t n_rot = 0;          // rotated dimensions per head (even); the rest pass through
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;    // linear scaling of every angle
  float attn_factor = 1.0f;   // multiplies cos and sin (LongRoPE's attention factor)
  bool neox = false;          // pairs (i, i + n_rot/2) instead of (2i, 2i + 1)
  const float* freq_factors = nullptr;  // [n_rot/2] divisors of each pair's angle, or null (all 1)
};

// Angle of rotary pair i at `position`, computed as ggml does (ggml_rope_cache_init): the power
// base^(−2i/n_rot) as repeated f32 products θ_0 = pos, θ_{i+1} = θ_i · base^(−2/n_rot), then divided
// by the pair's frequency factor and multiplied by freq_scale. The one formula both the scalar rope()
// and RopeTable use, so a table row holds exactly the values rope() computes.
inline float rope_angle(int64_t position, int64_t pair, const RopeParams& p) {
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
  float theta = static_cast<float>(position);
  for (int64_t i = 0; i < pair; ++i) theta *= theta_scale;
  const float factor = p.freq_factors ? p.freq_factors[pair] : 1.0f;
  return p.freq_scale * (theta / factor);
}

// Row t (for positions[t]) is cos_sin[t] = (C[n_rot], S[n_rot]) such that the rotated vector is
//   out[j] = x[j]·C[j] + x[partner(j)]·S[j]
// with partner(j) = j xor 1 (normal: pairs (2i, 2i+1)) or j ± n_rot/2 (neox: pairs (i, i + n_rot/2)).
// For pair i with angle θ and attention factor m: C = m·cos θ at both members, S = −m·sin θ at the
// first and +m·sin θ at the second, so out = (x0·C − x1·mS, …) rounds exactly like the textbook formula.
class RopeTable {
 public:
  void build(const int32_t* positions, int64_t n_tokens, const RopeParams& params);
  // Plain rope: no scaling, no factors.
  void build(const int32_t* positions, int64_t n_tokens, int64_t n_rot, float freq_base, bool neox) {
    RopeParams p;
    p.n_rot = n_rot;
    p.freq_base = freq_base;
    p.neox = neox;
    build(positions, n_tokens, p);
  }
  const float* row(int64_t t) const { return cos_sin_.data() + t * 2 * n_rot_; }  // [2, n_rot]
  int64_t n_rot() const { return n_rot_; }
  bool neox() const { return neox_; }

 private:
  int64_t n_rot_ = 0;
  bool neox_ = false;
  std::vector<float> cos_sin_;  // [n_tokens, 2, n_rot]
};

}  // namespace nucleus
