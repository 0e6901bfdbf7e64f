// The one forward pass, over the model's description (hparams.h). Per layer l with spec S:
//   h = norm(x, attn_norm)
//   q = Wq·h (+bq), k = Wk·h (+bk), v = Wv·h (+bv) or v = k (K-as-V)      [heads × head_dim]
//   q, k ← per-head norm (QK-norm), v ← unweighted per-head norm (V-norm), then rope(q), rope(k)
//   a = attention over the cache of layer S.kv_source (window, soft-cap, scale per S)
//   x += post_attention_norm?(Wo·a)
//   h = norm(x, ffn_norm); f = Wdown·(act(Wgate·h) ⊙ Wup·h) or the mixture of experts (moe_ffn.h)
//   x += post_ffn_norm?(f)
//   Gemma 4: x += norm(Wproj·(gelu(Winp_gate·x) ⊙ per-layer input), post_norm); x *= layer_output_scale
// A gated delta-net layer (Qwen3.5) replaces the attention block by delta_net_layer
// (forward_delta_net.cpp, state in the sequence's KvCache slot); Qwen3.5's attention layer gates its
// output per element with sigmoid(gate), the second half of each head's Wq rows.
// then logits = softcap?(Wout · norm(x, output_norm)) for the batch's output rows.
// Every per-token step is the same arithmetic on any thread and in any batch, so batching never
// changes a result (the engine's batch-invariance guarantee).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "core/aligned_vector.h"
#include "core/error.h"
#include "core/fp16.h"
#include "kernels/gelu.h"
#include "kernels/ops.h"
#include "kernels/rope_table.h"
#include "model/model.h"
#include "model/moe_ffn.h"
#include "model/parallel_tokens.h"

namespace nucleus {

// Activation buffers on cache lines (core/aligned_vector.h): rows of a multiple of 16 floats are
// then read by the kernels one whole line per 512-bit load.
struct Model::Scratch {
  AlignedVector<float> x;       // [n_tokens, n_embd] residual stream
  AlignedVector<float> xn;      // [n_tokens, n_embd] normalized input of the current sub-block
  AlignedVector<float> q;       // [n_tokens, max q_dim]
  AlignedVector<float> k;       // [n_tokens, max kv_dim]
  AlignedVector<float> v;       // [n_tokens, max kv_dim]
  AlignedVector<float> attn;    // [n_tokens, max q_dim] attention output (heads concatenated)
  AlignedVector<float> proj;    // [n_tokens, n_embd] output of Wo / the FFN
  AlignedVector<float> gate;    // [n_tokens, max n_ff]
  AlignedVector<float> up;      // [n_tokens, max n_ff]
  AlignedVector<float> scores;  // [n_threads, max group, max attended positions] attention weights
  AlignedVector<float> attention_lanes;  // [n_threads, max group, kAttentionLaneFloats] attention sums
  AlignedVector<float> attention_gather;  // [n_threads, attention_gather_floats(max positions)] value rows
  std::vector<RopeTable> ropes;  // [HParams::ropes] cos/sin for this step's positions
  AlignedVector<float> per_layer;  // [n_tokens, L·P] Gemma 4 per-layer inputs
  AlignedVector<float> pl_gate;    // [n_tokens, P]
  AlignedVector<float> out_x;   // [n_outputs, n_embd]
  MoeScratch moe;
  AlignedVector<float> q_and_gate;  // [n_tokens, 2 · max q_dim] Qwen3.5: per head its query, then its output gate
  AlignedVector<float> attn_gate;   // [n_tokens, max q_dim] those gates, heads concatenated
  MatmulScratch matmul;
};

void Model::validate(const ForwardBatch& batch, const KvCache& kv) const {
  const int64_t n = batch.n_tokens();
  if (batch.positions.size() != static_cast<size_t>(n) || batch.seq_index.size() != static_cast<size_t>(n))
    throw Error("forward: tokens, positions and seq_index must have the same length");
  const int64_t block_size = kv.shape().block_size;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t token = batch.tokens[i];
    if (token < 0 || token >= hparams_.n_vocab)
      throw Error("token id " + std::to_string(token) + " is out of range (vocabulary size " + std::to_string(hparams_.n_vocab) + ")");
    const int32_t seq = batch.seq_index[i];
    if (seq < 0 || static_cast<size_t>(seq) >= batch.block_tables.size()) throw Error("forward: seq_index out of range");
    const int32_t pos = batch.positions[i];
    const auto& table = batch.block_tables[static_cast<size_t>(seq)];
    if (pos < 0 || pos / block_size >= static_cast<int64_t>(table.size()))
      throw Error("forward: position " + std::to_string(pos) + " is not covered by its block table");
    for (int64_t b = 0; b <= pos / block_size; ++b)
      if (table[b] < 0 || table[b] >= kv.shape().num_blocks) throw Error("forward: block id out of range");
  }
  for (int32_t row : batch.output_rows)
    if (row < 0 || row >= n) throw Error("forward: output row out of range");
  if (kv.shape().kv_dim != hparams_.kv_dim() || kv.shape().n_layer != hparams_.n_layer)
    throw Error("forward: KV cache shape does not match the model");
  if (hparams_.has_recurrent_layers()) validate_recurrent(batch, kv);
  if (!kv.has_window_pool()) return;
  // Window-pool layers read only the last `window` positions: those blocks must be there.
  int64_t window = 0;
  for (int64_t l = 0; l < hparams_.n_layer; ++l)
    if (kv.in_window_pool(l)) {
      const int64_t w = hparams_.layers[static_cast<size_t>(l)].sliding_window;
      if (w <= 0) throw Error("forward: a full-attention layer cannot live in the window pool");
      window = std::max(window, w);
    }
  if (batch.window_block_tables.size() != batch.block_tables.size())
    throw Error("forward: a KV cache with a window pool needs a window block table per sequence");
  for (int64_t i = 0; i < n; ++i) {
    const int32_t pos = batch.positions[i];
    const auto& table = batch.window_block_tables[static_cast<size_t>(batch.seq_index[i])];
    if (pos / block_size >= static_cast<int64_t>(table.size()))
      throw Error("forward: position " + std::to_string(pos) + " is not covered by its window block table");
    for (int64_t b = std::max<int64_t>(0, pos - window + 1) / block_size; b <= pos / block_size; ++b)
      if (table[b] < 0 || table[b] >= kv.shape().num_window_blocks) throw Error("forward: window block id out of range");
  }
}

void Model::forward(const ForwardBatch& batch, KvCache& kv, float* logits, int n_threads) {
  validate(batch, kv);
  // Recurrent states this step advances: marked invalid (−1) until the step completes, so a step
  // that fails midway can only be followed by a restart at position 0.
  std::vector<std::pair<int32_t, int64_t>> state_after;  // (slot, tokens absorbed after this step)
  if (hparams_.has_recurrent_layers()) {
    std::vector<int64_t> end(batch.block_tables.size(), -1);
    for (int64_t i = 0; i < batch.n_tokens(); ++i) end[static_cast<size_t>(batch.seq_index[i])] = batch.positions[i] + 1;
    for (size_t seq = 0; seq < end.size(); ++seq)
      if (end[seq] >= 0) {
        state_after.push_back({batch.state_slots[seq], end[seq]});
        kv.set_state_tokens(batch.state_slots[seq], -1);
      }
  }
  const HParams& hp = hparams_;
  const OpsKernels& ops = ops_kernels_for(kernels_->isa);  // the same instruction set as the matmuls
  const int64_t n = batch.n_tokens();
  const int64_t n_embd = hp.n_embd, kv_stride = kv.shape().kv_dim;
  const int64_t block_size = kv.shape().block_size;
  const bool kv_f16 = kv.type() == KvType::f16;
  n_threads = std::max(1, n_threads);
  if (!scratch_) scratch_ = std::make_shared<Scratch>();
  Scratch& s = *scratch_;
  s.matmul.profile = profile_;
  WorkerPool& pool = worker_pool(s.matmul, n_threads);  // every parallel loop of the step
  // While profiling: the whole step's wall time, added when the step ends (however it ends).
  struct StepTimer {
    StepProfile* profile;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~StepTimer() {
      if (!profile) return;
      profile->step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      profile->steps += 1;
    }
  } step_timer{profile_};
  int32_t max_pos = 0;
  for (int32_t p : batch.positions) max_pos = std::max(max_pos, p);
  const int64_t n_positions_max = max_pos + 1;

  int64_t q_max = 0, ff_max = 0, group_max = 1;
  for (const LayerSpec& l : hp.layers) {
    q_max = std::max(q_max, l.q_dim());
    ff_max = std::max(ff_max, l.n_ff);
    group_max = std::max(group_max, l.n_head / l.n_head_kv);
  }
  s.x.resize(static_cast<size_t>(n * n_embd));
  s.xn.resize(s.x.size());
  s.proj.resize(s.x.size());
  s.q.resize(static_cast<size_t>(n * q_max));
  s.attn.resize(s.q.size());
  s.k.resize(static_cast<size_t>(n * kv_stride));
  s.v.resize(s.k.size());
  s.gate.resize(static_cast<size_t>(n * ff_max));
  s.up.resize(s.gate.size());
  s.scores.resize(static_cast<size_t>(n_threads * group_max * n_positions_max));
  s.attention_lanes.resize(static_cast<size_t>(n_threads * group_max * kAttentionLaneFloats));
  s.attention_gather.resize(static_cast<size_t>(n_threads * attention_gather_floats(n_positions_max)));
  s.ropes.resize(hp.ropes.size());
  for (size_t r = 0; r < hp.ropes.size(); ++r) {
    const RopeSpec& spec = hp.ropes[r];
    RopeParams params;
    params.n_rot = spec.n_rot;
    params.freq_base = spec.freq_base;
    params.freq_scale = spec.freq_scale;
    params.attn_factor = spec.attn_factor;
    params.neox = spec.neox;
    params.freq_factors = spec.freq_factors.empty() ? nullptr : spec.freq_factors.data();
    s.ropes[r].build(batch.positions.data(), n, params);
  }

  for (int64_t i = 0; i < n; ++i) {
    float* x = s.x.data() + i * n_embd;
    matrix_row_to_f32(weights_.token_embd, batch.tokens[i], x);
    if (hp.embedding_scale != 1.0f)
      for (int64_t d = 0; d < n_embd; ++d) x[d] *= hp.embedding_scale;
  }
  if (hp.n_per_layer_input > 0) compute_per_layer_inputs(batch, n_threads);

  // The block tables of the pool a layer's K/V live in.
  auto tables_of = [&](int64_t layer) -> const std::vector<std::vector<int32_t>>& {
    return kv.in_window_pool(layer) ? batch.window_block_tables : batch.block_tables;
  };
  // x[i] += proj[i] (post-normed first when the layer says so).
  auto add_sub_block = [&](const std::vector<float>& post_norm) {
    for_each_token(pool, n, n_embd, [&](int64_t i) {
      float* p = &s.proj[i * n_embd];
      if (!post_norm.empty()) ops.rms_norm(p, post_norm.data(), p, n_embd, hp.rms_eps);
      ops.add(&s.x[i * n_embd], p, n_embd);
    });
  };
  auto norm_into_xn = [&](const std::vector<float>& weight) {
    for_each_token(pool, n, n_embd,
                   [&](int64_t i) { ops.rms_norm(&s.x[i * n_embd], weight.data(), &s.xn[i * n_embd], n_embd, hp.rms_eps); });
  };

  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = weights_.layers[static_cast<size_t>(l)];
    const LayerSpec& S = hp.layers[static_cast<size_t>(l)];
    const int64_t head_dim = S.head_dim, q_dim = S.q_dim(), kv_dim = S.kv_dim();
    const int64_t group = S.n_head / S.n_head_kv;  // query heads per KV head
    const bool own_kv = S.stores_kv(l);
    const RopeTable& rope = s.ropes[static_cast<size_t>(S.rope)];
    // --- attention ---
    norm_into_xn(L.attn_norm);
    if (S.delta_net) {  // Qwen3.5: a recurrent mixer instead of attention (forward_delta_net.cpp)
      delta_net_layer(l, batch, kv, s.xn.data(), s.proj.data(), s.matmul.pool);
    } else {
      if (S.attn_output_gate) {  // rows per head: query, then gate
        s.q_and_gate.resize(static_cast<size_t>(n * 2 * q_dim));
        s.attn_gate.resize(static_cast<size_t>(n * q_dim));
        matmul(*kernels_, L.wq, s.xn.data(), n, s.q_and_gate.data(), n_threads, s.matmul);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t h = 0; h < S.n_head; ++h) {
            const float* both = &s.q_and_gate[(i * S.n_head + h) * 2 * head_dim];
            std::copy_n(both, head_dim, &s.q[i * q_dim + h * head_dim]);
            std::copy_n(both + head_dim, head_dim, &s.attn_gate[i * q_dim + h * head_dim]);
          }
      } else if (own_kv) {  // Q, K and V from one input: one pass where their types allow
        const WeightMatrix* ws[] = {&L.wq, &L.wk, &L.wv};
        float* ys[] = {s.q.data(), s.k.data(), s.v.data()};
        const size_t count = S.k_as_v ? 2 : 3;
        matmul_same_input(*kernels_, std::span(ws, count), s.xn.data(), n, std::span(ys, count), n_threads, s.matmul);
      } else {
        matmul(*kernels_, L.wq, s.xn.data(), n, s.q.data(), n_threads, s.matmul);
      }
      if (own_kv && S.attn_output_gate) {
        const WeightMatrix* ws[] = {&L.wk, &L.wv};
        float* ys[] = {s.k.data(), s.v.data()};
        const size_t count = S.k_as_v ? 1 : 2;
        matmul_same_input(*kernels_, std::span(ws, count), s.xn.data(), n, std::span(ys, count), n_threads, s.matmul);
      }
      for_each_token(pool, n, q_dim + 2 * kv_dim, [&](int64_t i) {
        float* q = &s.q[i * q_dim];   // [n_head, head_dim]
        float* k = &s.k[i * kv_dim];  // [n_head_kv, head_dim]
        float* v = &s.v[i * kv_dim];  // [n_head_kv, head_dim]
        if (S.qkv_bias) {
          ops.add(q, L.bq.data(), q_dim);
          if (own_kv) {
            ops.add(k, L.bk.data(), kv_dim);
            ops.add(v, L.bv.data(), kv_dim);
          }
        }
        if (S.qk_norm)
          for (int64_t h = 0; h < S.n_head; ++h) ops.rms_norm(q + h * head_dim, L.q_norm.data(), q + h * head_dim, head_dim, hp.rms_eps);
        ops.rope(q, S.n_head, head_dim, rope.row(i), rope.n_rot(), rope.neox());
        if (S.attn_scale_on_query)
          for (int64_t d = 0; d < q_dim; ++d) q[d] *= S.attn_scale;
        if (!own_kv) return;
        if (S.k_as_v) std::copy(k, k + kv_dim, v);  // the raw projection, before K's norm and rope
        if (S.qk_norm)
          for (int64_t h = 0; h < S.n_head_kv; ++h) ops.rms_norm(k + h * head_dim, L.k_norm.data(), k + h * head_dim, head_dim, hp.rms_eps);
        if (S.v_norm)
          for (int64_t h = 0; h < S.n_head_kv; ++h) ops.rms_norm(v + h * head_dim, ones_.data(), v + h * head_dim, head_dim, hp.rms_eps);
        ops.rope(k, S.n_head_kv, head_dim, rope.row(i), rope.n_rot(), rope.neox());
        // Store this token's key and value where its block table says position `pos` lives.
        const int32_t pos = batch.positions[i];
        const auto& table = tables_of(l)[static_cast<size_t>(batch.seq_index[i])];
        const int32_t block = table[pos / block_size];
        for (int64_t h = 0; h < S.n_head_kv; ++h) {  // each head's row in its own run (kv_cache.h)
          const float* kh = k + h * head_dim;
          const float* vh = v + h * head_dim;
          if (kv_f16) {  // rounded to nearest even; attention widens them back exactly
            uint16_t* k16 = kv.key_f16(l, block, pos % block_size, h, head_dim);
            uint16_t* v16 = kv.value_f16(l, block, pos % block_size, h, head_dim);
            for (int64_t d = 0; d < head_dim; ++d) k16[d] = f32_to_f16(kh[d]);
            for (int64_t d = 0; d < head_dim; ++d) v16[d] = f32_to_f16(vh[d]);
          } else {
            std::copy(kh, kh + head_dim, kv.key(l, block, pos % block_size, h, head_dim));
            std::copy(vh, vh + head_dim, kv.value(l, block, pos % block_size, h, head_dim));
          }
        }
      });

      // Attention work units: (KV head, slice of its query-head group, token). A whole group shares
      // each loaded key/value row; it is split only when there are too few units to keep every thread
      // busy (decode of one token). A head's result does not depend on the split.
      int64_t heads_per_unit = group;
      while (heads_per_unit % 2 == 0 && n * S.n_head / heads_per_unit < 2 * n_threads) heads_per_unit /= 2;
      const int64_t units_per_kv_head = group / heads_per_unit;
      const int64_t n_units = n * S.n_head_kv * units_per_kv_head;
      int64_t attention_work = 0;  // multiply-adds, to decide whether threads pay off
      for (int64_t i = 0; i < n; ++i) attention_work += 2 * (batch.positions[i] + 1) * head_dim * S.n_head;
      const bool parallel_attention = attention_work >= (1 << 16);
      const int64_t kv_layer = S.kv_source;
      // Every token attends to its sequence's positions up to its own (all written by now), or the
      // last sliding_window of them.
      // Units go by (KV head, slice), each with all the step's tokens in a row, and where those
      // groups divide evenly among the threads each thread takes a contiguous run of whole groups:
      // every group costs the same (the same tokens over the same positions), and a head's cached
      // rows, read cold once, then serve the step's other tokens from that core's caches (a 5-token
      // verification pass reads each sequence's rows five times). Otherwise units are handed out
      // dynamically in the same order.
      auto attend = [&](int64_t unit, int thread) {
        const int64_t kv_head = unit / (n * units_per_kv_head);
        const int64_t slice = unit / n % units_per_kv_head;
        const int64_t i = unit % n;
        const int64_t first_head = kv_head * group + slice * heads_per_unit;
        AttentionArgs a;
        a.q = &s.q[i * q_dim + first_head * head_dim];
        a.out = &s.attn[i * q_dim + first_head * head_dim];
        a.n_q = heads_per_unit;
        a.head_dim = head_dim;
        if (kv_f16) {
          a.keys_f16 = kv.key_f16(kv_layer, 0, 0, kv_head, head_dim);
          a.values_f16 = kv.value_f16(kv_layer, 0, 0, kv_head, head_dim);
        } else {
          a.keys = kv.key(kv_layer, 0, 0, kv_head, head_dim);
          a.values = kv.value(kv_layer, 0, 0, kv_head, head_dim);
        }
        a.row_stride = head_dim;
        a.block_stride = kv.block_elements();
        a.block_table = tables_of(kv_layer)[static_cast<size_t>(batch.seq_index[i])].data();
        a.block_size = block_size;
        a.n_positions = batch.positions[i] + 1;
        a.first_position = S.sliding_window > 0 ? std::max<int64_t>(0, a.n_positions - S.sliding_window) : 0;
        a.scale = S.attn_scale_on_query ? 1.0f : S.attn_scale;
        a.softcap = S.attn_softcap;
        a.scores = &s.scores[static_cast<size_t>(thread * group_max * n_positions_max)];
        a.lanes = &s.attention_lanes[static_cast<size_t>(thread * group_max * kAttentionLaneFloats)];
        a.gather = &s.attention_gather[static_cast<size_t>(thread * attention_gather_floats(n_positions_max))];
        (kv_f16 ? ops.attention_f16 : ops.attention)(a);
      };
      const auto attention_start = profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      parallel_for(&pool, parallel_attention, n_units, S.n_head_kv * units_per_kv_head % n_threads != 0 ? Schedule::Dynamic : Schedule::Static, attend);
      if (profile_)
        profile_->attention_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - attention_start).count();
      if (S.attn_output_gate)
        for (int64_t e = 0; e < n * q_dim; ++e) s.attn[e] *= 1.0f / (1.0f + std::exp(-s.attn_gate[e]));
      matmul(*kernels_, L.wo, s.attn.data(), n, s.proj.data(), n_threads, s.matmul);
    }
    add_sub_block(L.post_attention_norm);

    // --- feed-forward ---
    norm_into_xn(L.ffn_norm);
    if (S.moe()) {
      moe_ffn(*kernels_, ops, S, L, s.xn.data(), n, n_embd, s.proj.data(), n_threads, s.matmul, s.moe);
    } else {
      const int64_t n_ff = S.n_ff;
      const WeightMatrix* ws[] = {&L.w_gate, &L.w_up};
      float* ys[] = {s.gate.data(), s.up.data()};
      matmul_same_input(*kernels_, ws, s.xn.data(), n, ys, n_threads, s.matmul);
      for_each_token(pool, n, n_ff, [&](int64_t i) {
        float* g = &s.gate[i * n_ff];
        if (hp.activation == Activation::Gelu) geglu_row(g, &s.up[i * n_ff], g, n_ff);
        else ops.swiglu(g, &s.up[i * n_ff], g, n_ff);
      });
      matmul(*kernels_, L.w_down, s.gate.data(), n, s.proj.data(), n_threads, s.matmul);
    }
    add_sub_block(L.post_ffn_norm);
    if (S.per_layer_input) add_per_layer_input(l, n, n_threads);
    if (S.output_scale)
      for (float& value : s.x) value *= L.output_scale;
  }

  for (const auto& [slot, tokens] : state_after) kv.set_state_tokens(slot, tokens);

  const int64_t n_out = batch.n_outputs();
  if (n_out == 0) return;
  s.out_x.resize(static_cast<size_t>(n_out * n_embd));
  for_each_token(pool, n_out, n_embd, [&](int64_t o) {
    const float* x = &s.x[batch.output_rows[o] * n_embd];
    ops.rms_norm(x, weights_.output_norm.data(), &s.out_x[o * n_embd], n_embd, hp.rms_eps);
  });
  matmul(*kernels_, weights_.output, s.out_x.data(), n_out, logits, n_threads, s.matmul);
  if (hp.final_softcap > 0.0f) {
    const float inverse = 1.0f / hp.final_softcap;
    for (int64_t i = 0; i < n_out * hp.n_vocab; ++i) logits[i] = std::tanh(logits[i] * inverse) * hp.final_softcap;
  }
}

// Gemma 4's per-layer inputs, once per step for every layer:
//   a = per_layer_token_embd[token] · √P;  b = norm_P(per_layer_model_proj · x · 1/√n_embd)  (each P-slice)
//   per_layer[l] = (b + a) · 1/√2
void Model::compute_per_layer_inputs(const ForwardBatch& batch, int n_threads) {
  Scratch& s = *scratch_;
  const HParams& hp = hparams_;
  const OpsKernels& ops = ops_kernels_for(kernels_->isa);
  const int64_t n = batch.n_tokens(), P = hp.n_per_layer_input;
  const int64_t width = weights_.per_layer_model_proj.n_rows;  // L·P of the full model (a layer prefix uses the first slices)
  s.per_layer.resize(static_cast<size_t>(n * width));
  matmul(*kernels_, weights_.per_layer_model_proj, s.x.data(), n, s.per_layer.data(), n_threads, s.matmul);
  const float proj_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd));
  const float embd_scale = std::sqrt(static_cast<float>(P));
  const float mix_scale = 1.0f / std::sqrt(2.0f);
  std::vector<float> a(static_cast<size_t>(width));
  for (int64_t i = 0; i < n; ++i) {
    matrix_row_to_f32(weights_.per_layer_token_embd, batch.tokens[i], a.data());
    float* b = &s.per_layer[i * width];
    for (int64_t d = 0; d < width; ++d) b[d] *= proj_scale;
    for (int64_t slice = 0; slice < width / P; ++slice)
      ops.rms_norm(b + slice * P, weights_.per_layer_proj_norm.data(), b + slice * P, P, hp.rms_eps);
    for (int64_t d = 0; d < width; ++d) b[d] = (b[d] + a[d] * embd_scale) * mix_scale;
  }
}

// x += norm(Wproj · (gelu(Winp_gate · x) ⊙ per_layer[l]), post_norm)
void Model::add_per_layer_input(int64_t layer, int64_t n, int n_threads) {
  Scratch& s = *scratch_;
  const HParams& hp = hparams_;
  const OpsKernels& ops = ops_kernels_for(kernels_->isa);
  const LayerWeights& L = weights_.layers[static_cast<size_t>(layer)];
  const int64_t P = hp.n_per_layer_input, n_embd = hp.n_embd;
  const int64_t width = weights_.per_layer_model_proj.n_rows;
  s.pl_gate.resize(static_cast<size_t>(n * P));
  matmul(*kernels_, L.inp_gate, s.x.data(), n, s.pl_gate.data(), n_threads, s.matmul);
  for (int64_t i = 0; i < n; ++i) {
    float* g = &s.pl_gate[i * P];
    gelu_row(g, g, P);
    const float* input = &s.per_layer[i * width + layer * P];
    for (int64_t d = 0; d < P; ++d) g[d] *= input[d];
  }
  matmul(*kernels_, L.proj, s.pl_gate.data(), n, s.proj.data(), n_threads, s.matmul);
  for (int64_t i = 0; i < n; ++i) {
    float* p = &s.proj[i * n_embd];
    ops.rms_norm(p, L.post_norm.data(), p, n_embd, hp.rms_eps);
    ops.add(&s.x[i * n_embd], p, n_embd);
  }
}

}  // namespace nucleus
