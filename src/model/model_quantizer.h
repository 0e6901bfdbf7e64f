// `nucleus quantize`: rewrite a GGUF model with its weight matrices in another type.
//
// Policy (llama.cpp's, unless `pure`): 1-D tensors (norms, biases) stay as they are; the output
// matrix (or the tied embedding) becomes Q6_K for quantized targets other than Q8_0; the _M
// mixtures use Q6_K for attn_v and ffn_down in the first and last eighth of the layers and every
// third layer between. K-quant targets fall back to Q8_0 for rows not a multiple of 256.
// `pure` quantizes every matrix, embeddings and output included, to the one target type.
#pragma once
#include <string>

#include "io/gguf.h"

namespace nucleus {

struct QuantizeRecipe {
  GgmlType base = GgmlType::Q8_0;  // type of ordinary matrices
  bool medium_mix = false;         // Q4_K_M / Q5_K_M
  int file_type = 7;               // general.file_type (llama.cpp's LLAMA_FTYPE numbering)
};

// "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K", "Q4_K_M", "Q5_K_M" (any case);
// throws Error naming the value otherwise.
QuantizeRecipe parse_quantize_type(const std::string& name);

// The type one tensor gets under a recipe.
GgmlType choose_tensor_type(const TensorInfo& tensor, const QuantizeRecipe& recipe, bool pure, int64_t n_layer,
                            bool has_output);

struct QuantizeStats {
  size_t bytes_in = 0, bytes_out = 0;
  int tensors_quantized = 0;
};

QuantizeStats quantize_model(const GgufFile& input, const std::string& output_path, const QuantizeRecipe& recipe,
                             bool pure, int n_threads);

}  // namespace nucleus
