// The forward pass of a pre-norm decoder block stack (llama / qwen2):
//   x = embed(token)
//   per layer: x += Wo · attention(rope(Wq·norm(x)), rope(Wk·norm(x)), Wv·norm(x))
//              x += Wdown · (silu(Wgate·norm(x)) ⊙ Wup·norm(x))
//   logits = Wout · norm(x)        (only for the batch's output rows)
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/ops.h"
#include "kernels/rope_table.h"
#include "model/model.h"
#include "model/parallel_tokens.h"

namespace nucleus {

struct Model::Scratch {
  std::vector<float> x;       // [n_tokens, n_embd] residual stream
  std::vector<float> xn;      // [n_tokens, n_embd] normalized input of the current sub-block
  std::vector<float> q;       // [n_tokens, n_embd]
  std::vector<float> k;       // [n_tokens, kv_dim]
  std::vector<float> v;       // [n_tokens, kv_dim]
  std::vector<float> attn;    // [n_tokens, n_embd] attention output (heads concatenated)
  std::vector<float> proj;    // [n_tokens, n_embd] output of Wo / Wdown
  std::vector<float> gate;    // [n_tokens, n_ff]
  std::vector<float> up;      // [n_tokens, n_ff]
  std::vector<float> scores;  // [n_threads, group, max_position + 1] attention weights
  RopeTable rope;             // cos/sin for this step's positions
  std::vector<float> out_x;   // [n_outputs, n_embd]
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
}

void Model::forward(const ForwardBatch& batch, KvCache& kv, float* logits, int n_threads) {
  validate(batch, kv);
  const HParams& hp = hparams_;
  const OpsKernels& ops = ops_kernels_for(kernels_->isa);  // the same instruction set as the matmuls
  const int64_t n = batch.n_tokens();
  const int64_t n_embd = hp.n_embd, kv_dim = hp.kv_dim(), head_dim = hp.head_dim, n_ff = hp.n_ff;
  const int64_t group = hp.n_head / hp.n_head_kv;  // query heads per KV head
  const int64_t block_size = kv.shape().block_size;
  const bool kv_f16 = kv.type() == KvType::f16;
  const float attn_scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  n_threads = std::max(1, n_threads);
  if (!scratch_) scratch_ = std::make_shared<Scratch>();
  Scratch& s = *scratch_;
  int32_t max_pos = 0;
  for (int32_t p : batch.positions) max_pos = std::max(max_pos, p);
  const int64_t n_positions_max = max_pos + 1;

  s.x.resize(static_cast<size_t>(n * n_embd));
  s.xn.resize(s.x.size());
  s.q.resize(s.x.size());
  s.attn.resize(s.x.size());
  s.proj.resize(s.x.size());
  s.k.resize(static_cast<size_t>(n * kv_dim));
  s.v.resize(s.k.size());
  s.gate.resize(static_cast<size_t>(n * n_ff));
  s.up.resize(s.gate.size());
  s.scores.resize(static_cast<size_t>(n_threads * group * n_positions_max));
  s.rope.build(batch.positions.data(), n, hp.n_rot, hp.rope_freq_base, hp.rope_neox);

  for (int64_t i = 0; i < n; ++i) matrix_row_to_f32(weights_.token_embd, batch.tokens[i], s.x.data() + i * n_embd);

  // x[i] += proj[i] when a sub-block's output is pending, then xn[i] = rms_norm(x[i]) · weight.
  auto residual_and_norm = [&](bool add_proj, const std::vector<float>& norm_weight) {
    for_each_token(n, n_embd, n_threads, [&](int64_t i) {
      float* x = &s.x[i * n_embd];
      if (add_proj) ops.add(x, &s.proj[i * n_embd], n_embd);
      ops.rms_norm(x, norm_weight.data(), &s.xn[i * n_embd], n_embd, hp.rms_eps);
    });
  };

  // Attention work units: (token, KV head, slice of its query-head group). A whole group shares
  // each loaded key/value row; it is split only when there are too few units to keep every thread
  // busy (decode of one token). A head's result does not depend on the split.
  int64_t heads_per_unit = group;
  while (heads_per_unit % 2 == 0 && n * hp.n_head / heads_per_unit < 2 * n_threads) heads_per_unit /= 2;
  const int64_t units_per_kv_head = group / heads_per_unit;
  const int64_t n_units = n * hp.n_head_kv * units_per_kv_head;
  int64_t attention_work = 0;  // multiply-adds, to decide whether threads pay off
  for (int64_t i = 0; i < n; ++i) attention_work += 2 * (batch.positions[i] + 1) * head_dim * hp.n_head;
  const bool parallel_attention = n_threads > 1 && n_units > 1 && attention_work >= (1 << 16);

  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = weights_.layers[static_cast<size_t>(l)];
    // --- attention ---
    residual_and_norm(/*add_proj=*/l > 0, L.attn_norm);  // the previous layer's FFN output joins here
    matmul(*kernels_, L.wq, s.xn.data(), n, s.q.data(), n_threads, s.matmul);
    matmul(*kernels_, L.wk, s.xn.data(), n, s.k.data(), n_threads, s.matmul);
    matmul(*kernels_, L.wv, s.xn.data(), n, s.v.data(), n_threads, s.matmul);
    for_each_token(n, n_embd + 2 * kv_dim, n_threads, [&](int64_t i) {
      float* q = &s.q[i * n_embd];    // [n_head, head_dim]
      float* k = &s.k[i * kv_dim];    // [n_head_kv, head_dim]
      float* v = &s.v[i * kv_dim];    // [n_head_kv, head_dim]
      if (!L.bq.empty()) {
        ops.add(q, L.bq.data(), n_embd);
        ops.add(k, L.bk.data(), kv_dim);
        ops.add(v, L.bv.data(), kv_dim);
      }
      ops.rope(q, hp.n_head, head_dim, s.rope.row(i), hp.n_rot, hp.rope_neox);
      ops.rope(k, hp.n_head_kv, head_dim, s.rope.row(i), hp.n_rot, hp.rope_neox);
      // Store this token's key and value where its block table says position `pos` lives.
      const int32_t pos = batch.positions[i];
      const auto& table = batch.block_tables[static_cast<size_t>(batch.seq_index[i])];
      const int32_t block = table[pos / block_size];
      if (kv_f16) {  // rounded to nearest even; attention widens them back exactly
        uint16_t* k16 = kv.key_f16(l, block, pos % block_size);
        uint16_t* v16 = kv.value_f16(l, block, pos % block_size);
        for (int64_t d = 0; d < kv_dim; ++d) k16[d] = f32_to_f16(k[d]);
        for (int64_t d = 0; d < kv_dim; ++d) v16[d] = f32_to_f16(v[d]);
      } else {
        std::copy(k, k + kv_dim, kv.key(l, block, pos % block_size));
        std::copy(v, v + kv_dim, kv.value(l, block, pos % block_size));
      }
    });
    // Every token attends to positions 0..pos of its own sequence (all written by now).
    auto attend = [&](int64_t unit, int thread) {
      const int64_t i = unit / (hp.n_head_kv * units_per_kv_head);
      const int64_t kv_head = unit / units_per_kv_head % hp.n_head_kv;
      const int64_t first_head = kv_head * group + unit % units_per_kv_head * heads_per_unit;
      AttentionArgs a;
      a.q = &s.q[i * n_embd + first_head * head_dim];
      a.out = &s.attn[i * n_embd + first_head * head_dim];
      a.n_q = heads_per_unit;
      a.head_dim = head_dim;
      if (kv_f16) {
        a.keys_f16 = kv.key_f16(l, 0, 0) + kv_head * head_dim;
        a.values_f16 = kv.value_f16(l, 0, 0) + kv_head * head_dim;
      } else {
        a.keys = kv.key(l, 0, 0) + kv_head * head_dim;
        a.values = kv.value(l, 0, 0) + kv_head * head_dim;
      }
      a.kv_dim = kv_dim;
      a.block_table = batch.block_tables[static_cast<size_t>(batch.seq_index[i])].data();
      a.block_size = block_size;
      a.n_positions = batch.positions[i] + 1;
      a.scale = attn_scale;
      a.scores = &s.scores[static_cast<size_t>(thread * group * n_positions_max)];
      (kv_f16 ? ops.attention_f16 : ops.attention)(a);
    };
    if (parallel_attention) {
#pragma omp parallel for num_threads(n_threads) schedule(dynamic)
      for (int64_t unit = 0; unit < n_units; ++unit) attend(unit, omp_get_thread_num());
    } else {
      for (int64_t unit = 0; unit < n_units; ++unit) attend(unit, 0);
    }
    matmul(*kernels_, L.wo, s.attn.data(), n, s.proj.data(), n_threads, s.matmul);

    // --- feed-forward (SwiGLU) ---
    residual_and_norm(/*add_proj=*/true, L.ffn_norm);  // the attention output joins the stream
    matmul(*kernels_, L.w_gate, s.xn.data(), n, s.gate.data(), n_threads, s.matmul);
    matmul(*kernels_, L.w_up, s.xn.data(), n, s.up.data(), n_threads, s.matmul);
    for_each_token(n, n_ff, n_threads, [&](int64_t i) {
      ops.swiglu(&s.gate[i * n_ff], &s.up[i * n_ff], &s.gate[i * n_ff], n_ff);
    });
    matmul(*kernels_, L.w_down, s.gate.data(), n, s.proj.data(), n_threads, s.matmul);
  }
  // The last layer's FFN output joins the stream only for the rows whose logits are wanted.
  const int64_t n_out = batch.n_outputs();
  if (n_out == 0) return;
  s.out_x.resize(static_cast<size_t>(n_out * n_embd));
  for_each_token(n_out, n_embd, n_threads, [&](int64_t o) {
    const int64_t row = batch.output_rows[o];
    float* out_x = &s.out_x[o * n_embd];
    std::copy(&s.x[row * n_embd], &s.x[row * n_embd] + n_embd, out_x);
    ops.add(out_x, &s.proj[row * n_embd], n_embd);
    ops.rms_norm(out_x, weights_.output_norm.data(), out_x, n_embd, hp.rms_eps);
  });
  matmul(*kernels_, weights_.output, s.out_x.data(), n_out, logits, n_threads, s.matmul);
}

}  // namespace nucleus
