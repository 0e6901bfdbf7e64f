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
#include "kernels/ops.h"
#include "model/model.h"

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
  std::vector<float> scores;  // [n_threads, max_position + 1]
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
  const int64_t n = batch.n_tokens();
  const int64_t n_embd = hp.n_embd, kv_dim = hp.kv_dim(), head_dim = hp.head_dim, n_ff = hp.n_ff;
  const int64_t group = hp.n_head / hp.n_head_kv;  // query heads per KV head
  const int64_t block_size = kv.shape().block_size;
  const float attn_scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  n_threads = std::max(1, n_threads);
  if (!scratch_) scratch_ = std::make_shared<Scratch>();
  Scratch& s = *scratch_;
  int32_t max_pos = 0;
  for (int32_t p : batch.positions) max_pos = std::max(max_pos, p);

  s.x.resize(static_cast<size_t>(n * n_embd));
  s.xn.resize(s.x.size());
  s.q.resize(s.x.size());
  s.attn.resize(s.x.size());
  s.proj.resize(s.x.size());
  s.k.resize(static_cast<size_t>(n * kv_dim));
  s.v.resize(s.k.size());
  s.gate.resize(static_cast<size_t>(n * n_ff));
  s.up.resize(s.gate.size());
  s.scores.resize(static_cast<size_t>(n_threads) * static_cast<size_t>(max_pos + 1));

  for (int64_t i = 0; i < n; ++i) matrix_row_to_f32(weights_.token_embd, batch.tokens[i], s.x.data() + i * n_embd);

  for (int64_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = weights_.layers[static_cast<size_t>(l)];
    // --- attention ---
    for (int64_t i = 0; i < n; ++i) rms_norm(&s.x[i * n_embd], L.attn_norm.data(), &s.xn[i * n_embd], n_embd, hp.rms_eps);
    matmul(*kernels_, L.wq, s.xn.data(), n, s.q.data(), n_threads, s.matmul);
    matmul(*kernels_, L.wk, s.xn.data(), n, s.k.data(), n_threads, s.matmul);
    matmul(*kernels_, L.wv, s.xn.data(), n, s.v.data(), n_threads, s.matmul);
    for (int64_t i = 0; i < n; ++i) {
      float* q = &s.q[i * n_embd];
      float* k = &s.k[i * kv_dim];
      float* v = &s.v[i * kv_dim];
      if (!L.bq.empty()) {
        for (int64_t j = 0; j < n_embd; ++j) q[j] += L.bq[j];
        for (int64_t j = 0; j < kv_dim; ++j) k[j] += L.bk[j];
        for (int64_t j = 0; j < kv_dim; ++j) v[j] += L.bv[j];
      }
      const int32_t pos = batch.positions[i];
      for (int64_t h = 0; h < hp.n_head; ++h) rope(q + h * head_dim, hp.n_rot, pos, hp.rope_freq_base, hp.rope_neox);
      for (int64_t h = 0; h < hp.n_head_kv; ++h) rope(k + h * head_dim, hp.n_rot, pos, hp.rope_freq_base, hp.rope_neox);
      // Store this token's key and value where its block table says position `pos` lives.
      const auto& table = batch.block_tables[static_cast<size_t>(batch.seq_index[i])];
      const int32_t block = table[pos / block_size];
      std::copy(k, k + kv_dim, kv.key(l, block, pos % block_size));
      std::copy(v, v + kv_dim, kv.value(l, block, pos % block_size));
    }
    // Every token attends to positions 0..pos of its own sequence (all written by now).
    int64_t attention_work = 0;  // multiply-adds, to decide whether threads pay off
    for (int64_t i = 0; i < n; ++i) attention_work += 2 * (batch.positions[i] + 1) * head_dim * hp.n_head;
    auto attend = [&](int64_t work, int thread) {
      const int64_t i = work / hp.n_head, h = work % hp.n_head;
      const int64_t kv_head = h / group;
      const int32_t pos = batch.positions[i];
      const auto& table = batch.block_tables[static_cast<size_t>(batch.seq_index[i])];
      const float* q = &s.q[i * n_embd + h * head_dim];
      float* scores = &s.scores[static_cast<size_t>(thread) * static_cast<size_t>(max_pos + 1)];
      for (int32_t p = 0; p <= pos; ++p) {
        const float* key = kv.key(l, table[p / block_size], p % block_size) + kv_head * head_dim;
        float dot = 0.0f;
        for (int64_t d = 0; d < head_dim; ++d) dot += q[d] * key[d];
        scores[p] = dot * attn_scale;
      }
      softmax(scores, pos + 1);
      float* out = &s.attn[i * n_embd + h * head_dim];
      std::fill(out, out + head_dim, 0.0f);
      for (int32_t p = 0; p <= pos; ++p) {
        const float* value = kv.value(l, table[p / block_size], p % block_size) + kv_head * head_dim;
        const float a = scores[p];
        for (int64_t d = 0; d < head_dim; ++d) out[d] += a * value[d];
      }
    };
    if (n_threads > 1 && attention_work >= (1 << 16)) {
#pragma omp parallel for num_threads(n_threads) schedule(dynamic)
      for (int64_t work = 0; work < n * hp.n_head; ++work) attend(work, omp_get_thread_num());
    } else {
      for (int64_t work = 0; work < n * hp.n_head; ++work) attend(work, 0);
    }
    matmul(*kernels_, L.wo, s.attn.data(), n, s.proj.data(), n_threads, s.matmul);
    for (size_t j = 0; j < s.x.size(); ++j) s.x[j] += s.proj[j];

    // --- feed-forward (SwiGLU) ---
    for (int64_t i = 0; i < n; ++i) rms_norm(&s.x[i * n_embd], L.ffn_norm.data(), &s.xn[i * n_embd], n_embd, hp.rms_eps);
    matmul(*kernels_, L.w_gate, s.xn.data(), n, s.gate.data(), n_threads, s.matmul);
    matmul(*kernels_, L.w_up, s.xn.data(), n, s.up.data(), n_threads, s.matmul);
    swiglu(s.gate.data(), s.up.data(), s.gate.data(), n * n_ff);
    matmul(*kernels_, L.w_down, s.gate.data(), n, s.proj.data(), n_threads, s.matmul);
    for (size_t j = 0; j < s.x.size(); ++j) s.x[j] += s.proj[j];
  }

  const int64_t n_out = batch.n_outputs();
  if (n_out == 0) return;
  s.out_x.resize(static_cast<size_t>(n_out * n_embd));
  for (int64_t o = 0; o < n_out; ++o)
    rms_norm(&s.x[batch.output_rows[o] * n_embd], weights_.output_norm.data(), &s.out_x[o * n_embd], n_embd, hp.rms_eps);
  matmul(*kernels_, weights_.output, s.out_x.data(), n_out, logits, n_threads, s.matmul);
}

}  // namespace nucleus
