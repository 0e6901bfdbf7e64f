// A loaded decoder-only transformer (llama, qwen2): hyper-parameters, weights used in place
// from the file mapping in their stored type, and the forward pass over a ragged batch.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "io/gguf.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "model/forward_batch.h"
#include "model/hparams.h"
#include "model/kv_cache.h"

namespace nucleus {

struct LayerWeights {
  std::vector<float> attn_norm;            // [n_embd]
  WeightMatrix wq, wk, wv, wo;             // [n_embd → n_embd], [n_embd → kv_dim] ×2, [n_embd → n_embd]
  std::vector<float> bq, bk, bv;           // qwen2 only: [n_embd], [kv_dim], [kv_dim]
  std::vector<float> ffn_norm;             // [n_embd]
  WeightMatrix w_gate, w_up, w_down;       // [n_embd → n_ff] ×2, [n_ff → n_embd]
};

struct ModelWeights {
  WeightMatrix token_embd;                 // [n_vocab rows × n_embd]
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;          // [n_embd]
  WeightMatrix output;                     // [n_vocab rows × n_embd]; token_embd when tied
  bool tied_output = false;
};

// How Model::load places the weights. By default Q4_0/Q8_0 matrices are repacked and other large
// ones of a mapped file copied to huge pages (faster decode), when the copies fit in available
// memory; otherwise, or with run_from_mapping, the kernels read them where the file has them.
struct ModelLoadOptions {
  bool run_from_mapping = false;
};

class Model {
 public:
  // Takes ownership of the parsed file; validates every tensor's presence, shape and type.
  static std::unique_ptr<Model> load(std::unique_ptr<GgufFile> file, const ModelLoadOptions& options = {});
  bool weights_moved() const { return weights_moved_; }  // packed / copied (false: read in place)
  // A second Model over the same weights (the file, packed and copied matrices are shared, not
  // copied) with scratch of its own, so it can run on another thread while this one does.
  std::unique_ptr<Model> share_weights() const;

  const HParams& hparams() const { return hparams_; }
  const GgufFile& file() const { return *file_; }
  const ModelWeights& weights() const { return weights_; }
  size_t weight_bytes() const;  // bytes of all matrices read per forward pass

  // Runs every token of the batch through the network, writing K/V into `kv` through the
  // batch's block tables, and writes logits[n_outputs, n_vocab] for batch.output_rows.
  // Throws Error for token ids out of range or positions the block tables do not cover.
  void forward(const ForwardBatch& batch, KvCache& kv, float* logits, int n_threads);

  void set_kernels(const DotKernels& kernels) { kernels_ = &kernels; }
  const DotKernels& kernels() const { return *kernels_; }

 private:
  struct Scratch;
  Model() = default;
  void validate(const ForwardBatch& batch, const KvCache& kv) const;

  std::shared_ptr<const GgufFile> file_;  // shared with share_weights() copies
  HParams hparams_;
  ModelWeights weights_;
  const DotKernels* kernels_ = nullptr;
  std::shared_ptr<Scratch> scratch_;
  bool weights_moved_ = false;
};

}  // namespace nucleus
