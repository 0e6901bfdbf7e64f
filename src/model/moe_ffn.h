// The mixture-of-experts FFN (Mixtral inside `llama`, Qwen3-MoE), as llama.cpp's build_moe_ffn
// computes it for these families:
//   p = softmax(router · h) over all experts; S = the n_used experts with the largest p, descending;
//   w_j = p_j / max(Σ_{j∈S} p_j, 6.1035e-5);
//   y = Σ_{j∈S, in that order} w_j · down_j(silu(gate_j · h) ⊙ up_j · h)
// Tokens are grouped by expert, so each expert's weights are read once per step for all the tokens
// routed to it. Each token's result is the same whatever else shares the step: every matmul output
// element is one dot of its own row (kernels/matmul.h), and its experts are summed in its own order.
#pragma once
#include <cstdint>
#include <vector>

#include "core/aligned_vector.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/model.h"

namespace nucleus {

struct MoeScratch {
  std::vector<float> router_probs;   // [n_tokens, n_expert]
  std::vector<int32_t> chosen;       // [n_tokens, n_used] expert ids, best first
  std::vector<float> weights;        // [n_tokens, n_used] renormalized router weights
  // The expert matmuls' inputs and outputs, on cache lines (core/aligned_vector.h):
  AlignedVector<float> rows_in;      // [tokens of one expert, n_embd] gathered inputs
  AlignedVector<float> gate, up;     // [tokens of one expert, n_ff]
  AlignedVector<float> rows_out;     // [tokens of one expert, n_embd]
  std::vector<float> slot_out;       // [n_tokens, n_used, n_embd] each chosen expert's weighted output
};

// out[n_tokens, n_embd] = MoE FFN of h[n_tokens, n_embd] for one layer.
void moe_ffn(const DotKernels& kernels, const OpsKernels& ops, const LayerSpec& spec, const LayerWeights& weights,
             const float* h, int64_t n_tokens, int64_t n_embd, float* out, int n_threads, MatmulScratch& matmul_scratch,
             MoeScratch& scratch);

}  // namespace nucleus
