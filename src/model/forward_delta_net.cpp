// Qwen3.5's gated delta-net mixer inside the one forward pass (the maths is model/delta_net.h):
//   m = W_qkv·h, z = W_gate·h, β = sigmoid(W_beta·h), g = softplus(W_alpha·h + dt_bias) · ssm_a
//   u = silu(causal conv(m)) with the sequence's conv state;  q, k, v = split(u), q and k L2-normed
//   o = delta rule over the sequence's recurrent state (recurrent form for a few tokens, chunked
//       for many);  o_j ← norm(o_j, ssm_norm) · silu(z_j);  out = W_out·o
// A sequence's state lives in its KvCache slot (ForwardBatch::state_slots); it is zeroed when the
// sequence's first token in the batch is at position 0 and otherwise continued.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/aligned_vector.h"
#include "core/error.h"
#include "kernels/ops.h"
#include "model/delta_net.h"
#include "model/model.h"

namespace nucleus {

namespace {
// A sequence with at least this many tokens in a step takes the chunked form (its tokens' results
// then differ from token-by-token decode by f32 rounding only, ≤ 1e-4 on the logits).
constexpr int64_t kChunkedMinTokens = 16;
constexpr int64_t kChunkSize = 64;

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }
}  // namespace

struct Model::DeltaNetScratch {
  // Matmul inputs and outputs on cache lines (core/aligned_vector.h):
  AlignedVector<float> mixed;  // [n_tokens, conv_dim] W_qkv·h
  AlignedVector<float> z;      // [n_tokens, value_dim]
  std::vector<float> beta;     // [n_tokens, Hv]
  std::vector<float> g;        // [n_tokens, Hv]
  AlignedVector<float> o;      // [n_tokens, value_dim] gated outputs, before W_out
  std::vector<std::vector<int32_t>> rows;  // [n_seqs] each sequence's rows of the batch, in order
  // One sequence's tokens gathered contiguously:
  std::vector<float> seq_m, seq_u, seq_g, seq_beta, seq_o, window;
  MatmulScratch matmul;
};

void Model::validate_recurrent(const ForwardBatch& batch, const KvCache& kv) const {
  if (!kv.has_recurrent_state())
    throw Error("forward: architecture '" + hparams_.arch_name +
                "' has recurrent (gated delta-net) layers, and this KV cache has no recurrent state slots for them");
  const RecurrentStateShape& r = kv.shape().recurrent;
  if (r.conv_floats != hparams_.delta_net.conv_state_floats() || r.ssm_floats != hparams_.delta_net.ssm_state_floats() ||
      static_cast<int64_t>(r.layers.size()) != hparams_.n_layer)
    throw Error("forward: the KV cache's recurrent state shape does not match the model");
  for (int64_t l = 0; l < hparams_.n_layer; ++l)
    if (r.layers[static_cast<size_t>(l)] != hparams_.layers[static_cast<size_t>(l)].delta_net)
      throw Error("forward: the KV cache's recurrent layers do not match the model's");
  if (batch.state_slots.size() != batch.block_tables.size())
    throw Error("forward: a model with recurrent layers needs a state slot per sequence (ForwardBatch::state_slots)");
  std::vector<int32_t> next(batch.block_tables.size(), -1);  // the position each sequence must continue at
  for (int64_t i = 0; i < batch.n_tokens(); ++i) {
    const auto seq = static_cast<size_t>(batch.seq_index[i]);
    const int32_t pos = batch.positions[i];
    if (next[seq] < 0) {
      const int32_t slot = batch.state_slots[seq];
      if (slot < 0 || slot >= r.num_slots) throw Error("forward: state slot out of range");
      const int64_t held = kv.state_tokens(slot);
      if (pos != 0 && pos != held)
        throw Error("forward: a recurrent state holds " + std::to_string(held) + " tokens, but its sequence continues at position " +
                    std::to_string(pos) + " (a recurrent state cannot be rolled back; restart the sequence at position 0)");
    } else if (pos != next[seq]) {
      throw Error("forward: a sequence of a recurrent model must bring its tokens in order with consecutive positions");
    }
    next[seq] = pos + 1;
  }
  for (size_t a = 0; a < next.size(); ++a)
    for (size_t b = a + 1; b < next.size(); ++b)
      if (next[a] >= 0 && next[b] >= 0 && batch.state_slots[a] == batch.state_slots[b])
        throw Error("forward: two sequences of one batch share a recurrent state slot");
}

void Model::delta_net_layer(int64_t layer, const ForwardBatch& batch, KvCache& kv, const float* xn, float* out,
                            const std::shared_ptr<WorkerPool>& threads) {
  if (!delta_scratch_) delta_scratch_ = std::make_shared<DeltaNetScratch>();
  DeltaNetScratch& ds = *delta_scratch_;
  const HParams& hp = hparams_;
  const DeltaNetSpec& d = hp.delta_net;
  const LayerWeights& L = weights_.layers[static_cast<size_t>(layer)];
  const OpsKernels& ops = ops_kernels_for(kernels_->isa);
  const int64_t n = batch.n_tokens(), S = d.head_dim, Hk = d.n_k_heads, Hv = d.n_v_heads;
  const int64_t key_dim = d.key_dim(), value_dim = d.value_dim(), conv_dim = d.conv_dim(), K = d.conv_kernel;
  ds.matmul.profile = profile_;
  ds.matmul.pool = threads;  // the forward pass's threads: one team spinning, not two
  WorkerPool& pool = *threads;
  const int n_threads = pool.n_threads();
  ds.mixed.resize(static_cast<size_t>(n * conv_dim));
  ds.z.resize(static_cast<size_t>(n * value_dim));
  ds.beta.resize(static_cast<size_t>(n * Hv));
  ds.g.resize(static_cast<size_t>(n * Hv));
  ds.o.resize(static_cast<size_t>(n * value_dim));
  matmul(*kernels_, L.ssm_in, xn, n, ds.mixed.data(), n_threads, ds.matmul);
  matmul(*kernels_, L.ssm_z, xn, n, ds.z.data(), n_threads, ds.matmul);
  matmul(*kernels_, L.ssm_beta, xn, n, ds.beta.data(), n_threads, ds.matmul);
  matmul(*kernels_, L.ssm_alpha, xn, n, ds.g.data(), n_threads, ds.matmul);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < Hv; ++j) {
      float& beta = ds.beta[i * Hv + j];
      beta = sigmoid(beta);
      float& g = ds.g[i * Hv + j];  // α → log decay
      g = softplus(g + L.ssm_dt_bias[j]) * L.ssm_a[j];
    }

  ds.rows.assign(batch.block_tables.size(), {});
  for (int64_t i = 0; i < n; ++i) ds.rows[static_cast<size_t>(batch.seq_index[i])].push_back(static_cast<int32_t>(i));
  for (size_t seq = 0; seq < ds.rows.size(); ++seq) {
    const std::vector<int32_t>& rows = ds.rows[seq];
    if (rows.empty()) continue;
    const auto n_s = static_cast<int64_t>(rows.size());
    const int32_t slot = batch.state_slots[seq];
    float* conv_state = kv.conv_state(layer, slot);  // [K−1, conv_dim]
    float* ssm_state = kv.ssm_state(layer, slot);    // [Hv, S, S]
    if (batch.positions[rows[0]] == 0) {  // a sequence (re)starting: empty history
      std::fill(conv_state, conv_state + d.conv_state_floats(), 0.0f);
      std::fill(ssm_state, ssm_state + d.ssm_state_floats(), 0.0f);
    }
    ds.seq_m.resize(static_cast<size_t>(n_s * conv_dim));
    ds.seq_u.resize(ds.seq_m.size());
    ds.seq_g.resize(static_cast<size_t>(n_s * Hv));
    ds.seq_beta.resize(ds.seq_g.size());
    ds.seq_o.resize(static_cast<size_t>(n_s * value_dim));
    ds.window.resize(static_cast<size_t>((K - 1 + n_s) * conv_dim));
    for (int64_t t = 0; t < n_s; ++t) {
      const int64_t row = rows[static_cast<size_t>(t)];
      std::copy_n(&ds.mixed[row * conv_dim], conv_dim, &ds.seq_m[t * conv_dim]);
      std::copy_n(&ds.g[row * Hv], Hv, &ds.seq_g[t * Hv]);
      std::copy_n(&ds.beta[row * Hv], Hv, &ds.seq_beta[t * Hv]);
    }
    delta_net_conv(ds.seq_m.data(), n_s, conv_dim, K, L.ssm_conv.data(), conv_state, ds.seq_u.data(), ds.window.data(), &pool);
    // Per token and head, independent: split over threads for prefill (no result depends on it).
    const bool split = n_s * conv_dim >= (1 << 16);
    auto normalize = [&](int64_t t, int) {
      float* u = &ds.seq_u[t * conv_dim];
      for (int64_t h = 0; h < Hk; ++h) {
        l2_normalize(u + h * S, S, hp.rms_eps);            // q
        l2_normalize(u + key_dim + h * S, S, hp.rms_eps);  // k
      }
    };
    parallel_for(&pool, split, n_s, Schedule::Static, normalize);
    DeltaNetInputs in;
    in.n_tokens = n_s;
    in.q = ds.seq_u.data();
    in.k = ds.seq_u.data() + key_dim;
    in.v = ds.seq_u.data() + 2 * key_dim;
    in.row_stride = conv_dim;
    in.g = ds.seq_g.data();
    in.beta = ds.seq_beta.data();
    if (n_s >= kChunkedMinTokens) delta_net_chunked(d, in, ssm_state, ds.seq_o.data(), &pool, kChunkSize);
    else delta_net_recurrent(d, in, ssm_state, ds.seq_o.data(), &pool);
    // Gated RMS norm per value head: o_j ← norm(o_j, ssm_norm) · silu(z_j).
    auto gate = [&](int64_t t, int) {
      const int64_t row = rows[static_cast<size_t>(t)];
      for (int64_t j = 0; j < Hv; ++j) {
        const float* o = &ds.seq_o[t * value_dim + j * S];
        const float* z = &ds.z[row * value_dim + j * S];
        float* gated = &ds.o[row * value_dim + j * S];
        ops.rms_norm(o, L.ssm_norm.data(), gated, S, hp.rms_eps);
        for (int64_t b = 0; b < S; ++b) gated[b] *= z[b] / (1.0f + std::exp(-z[b]));
      }
    };
    parallel_for(&pool, split, n_s, Schedule::Static, gate);
  }
  matmul(*kernels_, L.ssm_out, ds.o.data(), n, out, n_threads, ds.matmul);
}

}  // namespace nucleus
