// GELU as llama.cpp's CPU backend computes it (ggml_vec_gelu_f32 / ggml_vec_geglu_f32 with
// GGML_GELU_FP16): the tanh form
//   gelu(x) = 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²)))
// looked up in a 65536-entry table indexed by x rounded to f16: for −10 < x < 10,
// gelu(x) = f32(table[f16(x)]) with table[h] = f16(gelu_f32(f32(h))) (round to nearest even both
// ways); x ≤ −10 gives 0 and x ≥ 10 gives x. Gemma models are matched to 5e-3 only with this table
// (an exact GELU differs from llama.cpp by up to ~2.6e-3 on the shared references). One path only:
// the lookup is the same in every kernel table.
#pragma once
#include <cstdint>

namespace nucleus {

// The exact f32 tanh GELU (the table's source), in ggml's operation order.
float gelu_tanh_f32(float x);
// The table lookup above.
float gelu(float x);
// out[n] = gelu(x[n])   (out may alias x)
void gelu_row(const float* x, float* out, int64_t n);
// out[n] = gelu(gate[n]) · up[n]   (GeGLU; out may alias gate)
void geglu_row(const float* gate, const float* up, float* out, int64_t n);

}  // namespace nucleus
