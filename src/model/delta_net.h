// The maths of Qwen3.5's gated delta-net layer for one sequence, on plain f32 arrays (the model's
// layer code, forward_delta_net.cpp, does the projections and finds each sequence's state).
//
// Per token t and value head j (reading key head j mod Hk: ggml's broadcast, which the converter
// arranges the heads for), with a state S_j of S × S floats (key index a, value index b):
//   S_j ← exp(g_j) · S_j                 decay, g_j ≤ 0
//   δ   = β_j · (v_j − S_jᵀ k)           the delta rule: correct what the state recalls for k
//   S_j ← S_j + k δᵀ
//   o_j = S_jᵀ q / √S
// q and k are L2-normalized per head beforehand. The state is stored as ggml does: S[a][b] at
// b·S + a, so row b (one value index) is contiguous over the key index.
//
// Two forms compute this: the recurrent one, token by token (decode), and the chunked one, which
// turns a chunk of C tokens into matrix products (prefill): with G_t the running sum of g inside
// the chunk and M_0 the state before it,
//   δ_t = β_t (v_t − e^{G_t} M_0ᵀ k_t) − β_t Σ_{s<t} e^{G_t−G_s} (k_t·k_s) δ_s   (a triangular solve)
//   o_t = (e^{G_t} M_0ᵀ q_t + Σ_{s≤t} e^{G_t−G_s} (q_t·k_s) δ_s) / √S
//   M_C = e^{G_C} M_0 + Σ_s e^{G_C−G_s} k_s δ_sᵀ
// Both are the same recurrence; they differ only by f32 rounding (tests/model_delta_net_test.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "core/worker_pool.h"
#include "model/hparams.h"

namespace nucleus {

// Causal depthwise conv over n consecutive tokens of one sequence, then SiLU:
//   out_t[c] = silu(Σ_{j<K} weight[c][j] · m_{t−K+1+j}[c])
// m: [n, conv_dim]; weight: [conv_dim, K] (tap K−1 multiplies the current token);
// state: [K−1, conv_dim] the inputs before m[0] (oldest first; zeros at a sequence's start),
// replaced by the last K−1 inputs; out: [n, conv_dim]; window: scratch of (K−1+n)·conv_dim floats.
// Long runs are split over the pool's threads tokens-wise (the same result on any thread count);
// without a pool, on this thread.
void delta_net_conv(const float* m, int64_t n, int64_t conv_dim, int64_t kernel, const float* weight, float* state,
                    float* out, float* window, WorkerPool* pool = nullptr);

// x ← x / max(‖x‖₂, eps) (ggml's l2_norm: the sum of squares in double).
void l2_normalize(float* x, int64_t n, float eps);

// One sequence's inputs to the delta rule, after the conv and the L2 norms.
struct DeltaNetInputs {
  int64_t n_tokens = 0;
  const float* q = nullptr;     // [n_tokens, row_stride]: Hk heads of S at the row's start
  const float* k = nullptr;     // [n_tokens, row_stride]: Hk heads of S
  const float* v = nullptr;     // [n_tokens, row_stride]: Hv heads of S
  int64_t row_stride = 0;       // floats from one token's q (k, v) to the next's
  const float* g = nullptr;     // [n_tokens, Hv] log decay per value head (≤ 0)
  const float* beta = nullptr;  // [n_tokens, Hv] write strength per value head, in (0, 1)
};

// Value head j over all tokens, token by token. state: [S, S] of head j; out: [n_tokens, out_stride]
// (head j's S values at j·S of each row).
void delta_net_recurrent_head(const DeltaNetSpec& spec, const DeltaNetInputs& in, int64_t head, float* state, float* out,
                              int64_t out_stride);

// The same in chunks of chunk_size tokens. scratch: resized as needed (one per thread).
void delta_net_chunked_head(const DeltaNetSpec& spec, const DeltaNetInputs& in, int64_t head, float* state, float* out,
                            int64_t out_stride, int64_t chunk_size, std::vector<float>& scratch);

// All value heads (states: [Hv, S, S]), on the pool's threads (this one without a pool); a head's
// result does not depend on the threads.
void delta_net_recurrent(const DeltaNetSpec& spec, const DeltaNetInputs& in, float* states, float* out,
                         WorkerPool* pool = nullptr);
void delta_net_chunked(const DeltaNetSpec& spec, const DeltaNetInputs& in, float* states, float* out,
                       WorkerPool* pool = nullptr, int64_t chunk_size = 64);

}  // namespace nucleus
