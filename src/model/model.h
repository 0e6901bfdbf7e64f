// A loaded decoder-only transformer of any family hparams.h describes: the description, weights
// used in their stored type, and the one forward pass over a ragged batch.
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

// One expert of a mixture-of-experts FFN: views into the stacked 3-D expert tensors.
struct ExpertWeights {
  WeightMatrix w_gate, w_up, w_down;       // [n_embd → n_ff] ×2, [n_ff → n_embd]
};

// A layer's weights; which are present follows its LayerSpec (hparams.h). Vectors are f32 copies.
struct LayerWeights {
  std::vector<float> attn_norm;            // [n_embd]
  WeightMatrix wq, wk, wv, wo;             // [n_embd → q_dim], [n_embd → kv_dim] ×2 (wv absent: K-as-V or KV-shared), [q_dim → n_embd]
  std::vector<float> bq, bk, bv;           // qkv_bias: [q_dim], [kv_dim], [kv_dim]
  std::vector<float> q_norm, k_norm;       // qk_norm: [head_dim] each, shared by all heads
  std::vector<float> post_attention_norm;  // [n_embd]
  std::vector<float> ffn_norm;             // [n_embd]
  WeightMatrix w_gate, w_up, w_down;       // dense FFN: [n_embd → n_ff] ×2, [n_ff → n_embd]
  WeightMatrix router;                     // MoE: [n_embd → n_expert] (ffn_gate_inp)
  std::vector<ExpertWeights> experts;      // MoE: [n_expert]
  std::vector<float> post_ffn_norm;        // [n_embd]
  WeightMatrix inp_gate, proj;             // per-layer input (Gemma 4): [n_embd → P], [P → n_embd]
  std::vector<float> post_norm;            // per-layer input: [n_embd]
  float output_scale = 1.0f;               // Gemma 4: layer_output_scale
  // Gated delta-net (Qwen3.5; shapes from HParams::delta_net, conv_dim = 2·key_dim + value_dim):
  WeightMatrix ssm_in;                     // attn_qkv: [n_embd → conv_dim] rows q | k | v
  WeightMatrix ssm_z;                      // attn_gate: [n_embd → value_dim] the output gate z
  WeightMatrix ssm_beta, ssm_alpha;        // [n_embd → n_v_heads] each
  WeightMatrix ssm_out;                    // [value_dim → n_embd]
  std::vector<float> ssm_conv;             // ssm_conv1d: [conv_dim, conv_kernel]
  std::vector<float> ssm_dt_bias;          // [n_v_heads]
  std::vector<float> ssm_a;                // [n_v_heads] −exp(A_log), negative
  std::vector<float> ssm_norm;             // [head_dim] the gated RMS norm's weight

  // Every matrix a forward pass multiplies by (the ones present), for packing, copies and byte counts.
  std::vector<const WeightMatrix*> matrices() const;
  std::vector<WeightMatrix*> matrices();
};

struct ModelWeights {
  WeightMatrix token_embd;                 // [n_vocab rows × n_embd]
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;          // [n_embd]
  WeightMatrix output;                     // [n_vocab rows × n_embd]; token_embd when tied
  bool tied_output = false;
  // Gemma 4 per-layer inputs (P = n_per_layer_input, L = n_layer):
  WeightMatrix per_layer_token_embd;       // [n_vocab rows × L·P] looked up per token
  WeightMatrix per_layer_model_proj;       // [n_embd → L·P]
  std::vector<float> per_layer_proj_norm;  // [P]
};

// How Model::load places the weights. By default Q4_0/Q8_0 matrices are repacked and other large
// ones of a mapped file copied to huge pages (faster decode), when the copies fit in available
// memory; otherwise, or with run_from_mapping, the kernels read them where the file has them.
//
// A mapped file's weights are read on every token, so they must fit in memory: a file whose tensor
// data exceeds the memory available (core/weight_memory.h: MemAvailable, or a container's cgroup
// limit) is refused with an Error before anything is allocated, unless check_memory is off (then
// the kernel pages weights in from the file on every token, at disk speed).
struct ModelLoadOptions {
  bool run_from_mapping = false;
  int64_t n_ctx = 0;  // the context the model will serve (0: its training context); Phi-3 picks its rope factors by it
  bool check_memory = true;
  size_t available_memory = 0;  // bytes the weights may take; 0: measure (available_memory_bytes())
};

class Model {
 public:
  // Takes ownership of the parsed file; validates every tensor's presence, shape and type.
  static std::unique_ptr<Model> load(std::unique_ptr<GgufFile> file, const ModelLoadOptions& options = {});
  bool weights_moved() const { return weights_moved_; }  // packed / copied (false: read in place)
  // Bytes of the file mapping the forward pass keeps reading (all the tensor data when nothing was
  // moved; the token embeddings and other unmoved tensors otherwise): page cache that must stay
  // resident, which MemAvailable still counts as reclaimable.
  size_t mapped_weight_bytes() const { return mapped_weight_bytes_; }
  // A second Model over the same weights (the file, packed and copied matrices are shared, not
  // copied) with scratch of its own, so it can run on another thread while this one does.
  std::unique_ptr<Model> share_weights() const;
  // A model of the first n_layers layers over the same weights (self-speculation's draft): the final
  // norm and lm_head of the full model follow its last kept layer. Throws Error outside 1..n_layer.
  std::unique_ptr<Model> layer_prefix(int64_t n_layers) const;

  const HParams& hparams() const { return hparams_; }
  const GgufFile& file() const { return *file_; }
  const ModelWeights& weights() const { return weights_; }
  size_t weight_bytes() const;  // bytes of all matrices read per forward pass

  // Runs every token of the batch through the network, writing K/V into `kv` through the
  // batch's block tables, and writes logits[n_outputs, n_vocab] for batch.output_rows.
  // Throws Error for token ids out of range or positions the block tables do not cover.
  void forward(const ForwardBatch& batch, KvCache& kv, float* logits, int n_threads);

  void set_kernels(const DotKernels& kernels) { kernels_ = &kernels; }
  // While set, every forward step adds where its time went (kernels/step_profile.h); null stops it.
  void set_profile(StepProfile* profile) { profile_ = profile; }
  const DotKernels& kernels() const { return *kernels_; }

 private:
  struct Scratch;
  Model() = default;
  void validate(const ForwardBatch& batch, const KvCache& kv) const;
  void compute_per_layer_inputs(const ForwardBatch& batch, int n_threads);
  void add_per_layer_input(int64_t layer, int64_t n_tokens, int n_threads);
  // Gated delta-net mixer of `layer` (forward_delta_net.cpp): out[n, n_embd] from xn[n, n_embd],
  // each sequence's state read from and written back to its slot in kv, on the forward pass's threads.
  void delta_net_layer(int64_t layer, const ForwardBatch& batch, KvCache& kv, const float* xn, float* out,
                       const std::shared_ptr<WorkerPool>& threads);
  void validate_recurrent(const ForwardBatch& batch, const KvCache& kv) const;

  std::shared_ptr<const GgufFile> file_;  // shared with share_weights() copies
  HParams hparams_;
  ModelWeights weights_;
  const DotKernels* kernels_ = nullptr;
  std::vector<float> ones_;  // [max head_dim] the weight of an unweighted RMS norm (Gemma 4's V-norm)
  std::shared_ptr<Scratch> scratch_;
  struct DeltaNetScratch;
  std::shared_ptr<DeltaNetScratch> delta_scratch_;
  StepProfile* profile_ = nullptr;
  bool weights_moved_ = false;
  size_t mapped_weight_bytes_ = 0;
};

// Keeps `profile` attached to `model` for its own lifetime, so a step that throws cannot leave the
// model writing into a profile that has gone out of scope.
class ScopedProfile {
 public:
  ScopedProfile(Model& model, StepProfile* profile) : model_(model) { model_.set_profile(profile); }
  ~ScopedProfile() { model_.set_profile(nullptr); }
  ScopedProfile(const ScopedProfile&) = delete;
  ScopedProfile& operator=(const ScopedProfile&) = delete;

 private:
  Model& model_;
};

}  // namespace nucleus
