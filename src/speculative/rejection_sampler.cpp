#include "speculative/rejection_sampler.h"

#include <algorithm>
#include <vector>

#include "core/rng.h"

namespace nucleus {

int32_t draw_from_weights(const float* weights, int64_t n, double u) {
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += weights[i];
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_positive = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (weights[i] <= 0.0f) continue;
    cumulative += weights[i];
    last_positive = static_cast<int32_t>(i);
    if (cumulative > target) return last_positive;
  }
  return last_positive;  // rounding left u·total at the very end
}

namespace {

double row_sum(const float* row, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += row[i];
  return s;
}

// Draws from norm(max(0, p − q)); q == nullptr is the one-hot q on `rejected`.
int32_t draw_residual(const float* p, const float* q, int32_t rejected, int64_t n_vocab, double u) {
  thread_local std::vector<float> residual;
  residual.resize(static_cast<size_t>(n_vocab));
  const double p_scale = 1.0 / row_sum(p, n_vocab), q_scale = q ? 1.0 / row_sum(q, n_vocab) : 1.0;
  double mass = 0.0;
  for (int64_t t = 0; t < n_vocab; ++t) {
    const double q_t = q ? q[t] * q_scale : (t == rejected ? 1.0 : 0.0);
    residual[static_cast<size_t>(t)] = static_cast<float>(std::max(0.0, p[t] * p_scale - q_t));
    mass += residual[static_cast<size_t>(t)];
  }
  // A rejection has probability Σ max(0, q − p) = Σ max(0, p − q); the residual is empty only
  // when rounding made p and q equal, where p itself is the right law.
  if (mass <= 0.0) return draw_from_weights(p, n_vocab, u);
  return draw_from_weights(residual.data(), n_vocab, u);
}

}  // namespace

VerificationResult verify_sampled(std::span<const int32_t> draft_tokens, const float* target_probs,
                                  const float* draft_probs, int64_t n_vocab, uint64_t seed, uint64_t first_position) {
  VerificationResult result;
  const auto n_draft = static_cast<int32_t>(draft_tokens.size());
  for (int32_t i = 0; i < n_draft; ++i) {
    const uint64_t position = first_position + static_cast<uint64_t>(i);
    const float* p = target_probs + static_cast<int64_t>(i) * n_vocab;
    const float* q = draft_probs ? draft_probs + static_cast<int64_t>(i) * n_vocab : nullptr;
    const int32_t x = draft_tokens[static_cast<size_t>(i)];
    // Normalize on the fly so unnormalized rows give the right ratio.
    const double p_x = p[x] / row_sum(p, n_vocab);
    const double q_x = q ? q[x] / row_sum(q, n_vocab) : 1.0;
    const double u = uniform_at(seed, position, kAcceptStream);
    if (u * q_x < p_x) {  // u < p/q without dividing by a zero q
      ++result.num_accepted;
      continue;
    }
    result.token = draw_residual(p, q, x, n_vocab, uniform_at(seed, position, kTargetStream));
    return result;
  }
  const float* p = target_probs + static_cast<int64_t>(n_draft) * n_vocab;
  result.token = draw_from_weights(p, n_vocab, uniform_at(seed, first_position + static_cast<uint64_t>(n_draft), kTargetStream));
  return result;
}

VerificationResult verify_greedy(std::span<const int32_t> draft_tokens, std::span<const int32_t> target_tokens) {
  VerificationResult result;
  while (static_cast<size_t>(result.num_accepted) < draft_tokens.size() &&
         draft_tokens[static_cast<size_t>(result.num_accepted)] == target_tokens[static_cast<size_t>(result.num_accepted)])
    ++result.num_accepted;
  result.token = target_tokens[static_cast<size_t>(result.num_accepted)];
  return result;
}

}  // namespace nucleus
