// Binding GGUF tensors to the model's weights, with every shape and type checked.
#include <algorithm>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/weight_memory.h"
#include "kernels/quantize.h"
#include "model/model.h"

namespace nucleus {

namespace {

class TensorBinder {
 public:
  explicit TensorBinder(const GgufFile& file) : file_(file) {}

  const TensorInfo* find(const std::string& name) const { return file_.find_tensor(name); }

  const TensorInfo& require(const std::string& name, std::vector<int64_t> shape) const {
    const TensorInfo* t = file_.find_tensor(name);
    if (!t) throw Error(file_.path() + ": missing tensor '" + name + "'");
    bool ok = t->n_dims == static_cast<int>(shape.size());
    for (size_t i = 0; ok && i < shape.size(); ++i) ok = t->ne[i] == shape[i];
    if (!ok) {
      std::string want = "[";
      for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
      throw Error(file_.path() + ": tensor '" + name + "' has shape " + t->shape_string() + ", expected " + want + "]");
    }
    return *t;
  }

  // A matrix stored with ne = [n_cols, n_rows].
  WeightMatrix matrix(const std::string& name, int64_t n_cols, int64_t n_rows) const {
    const TensorInfo& t = require(name, {n_cols, n_rows});
    return to_matrix(t);
  }

  WeightMatrix to_matrix(const TensorInfo& t) const {
    if (!matmul_supports(t.type))
      throw Error(file_.path() + ": tensor '" + t.name + "' has type " + ggml_type_name(t.type) +
                  ", which this build cannot multiply yet");
    WeightMatrix w;
    w.type = t.type;
    w.data = t.data;
    w.n_cols = t.ne[0];
    w.n_rows = t.ne[1];
    w.row_bytes = ggml_row_size(t.type, t.ne[0]);
    return w;
  }

  // A small vector (norm weight, bias) copied to f32.
  std::vector<float> vector(const std::string& name, int64_t n) const {
    const TensorInfo& t = require(name, {n});
    if (!matmul_supports(t.type) || t.ne[0] % ggml_block_size(t.type) != 0)
      throw Error(file_.path() + ": tensor '" + name + "' has unsupported type " + ggml_type_name(t.type));
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t.type, t.data, v.data(), n);
    return v;
  }

 private:
  const GgufFile& file_;
};

}  // namespace

std::unique_ptr<Model> Model::load(std::unique_ptr<GgufFile> file, const ModelLoadOptions& options) {
  auto model = std::unique_ptr<Model>(new Model());
  model->hparams_ = HParams::from_gguf(*file);
  HParams& hp = model->hparams_;
  TensorBinder bind(*file);

  const TensorInfo* embd = bind.find("token_embd.weight");
  if (!embd) throw Error(file->path() + ": missing tensor 'token_embd.weight'");
  if (embd->n_dims != 2 || embd->ne[0] != hp.n_embd)
    throw Error(file->path() + ": tensor 'token_embd.weight' has shape " + embd->shape_string() + ", expected [" +
                std::to_string(hp.n_embd) + ", n_vocab]");
  hp.n_vocab = embd->ne[1];
  ModelWeights& w = model->weights_;
  w.token_embd = bind.to_matrix(*embd);

  const int64_t kv_dim = hp.kv_dim();
  w.layers.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    LayerWeights& L = w.layers[static_cast<size_t>(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    L.attn_norm = bind.vector(p + "attn_norm.weight", hp.n_embd);
    L.wq = bind.matrix(p + "attn_q.weight", hp.n_embd, hp.n_embd);
    L.wk = bind.matrix(p + "attn_k.weight", hp.n_embd, kv_dim);
    L.wv = bind.matrix(p + "attn_v.weight", hp.n_embd, kv_dim);
    L.wo = bind.matrix(p + "attn_output.weight", hp.n_embd, hp.n_embd);
    if (hp.arch == Architecture::Qwen2 || bind.find(p + "attn_q.bias")) {
      L.bq = bind.vector(p + "attn_q.bias", hp.n_embd);
      L.bk = bind.vector(p + "attn_k.bias", kv_dim);
      L.bv = bind.vector(p + "attn_v.bias", kv_dim);
    }
    L.ffn_norm = bind.vector(p + "ffn_norm.weight", hp.n_embd);
    L.w_gate = bind.matrix(p + "ffn_gate.weight", hp.n_embd, hp.n_ff);
    L.w_up = bind.matrix(p + "ffn_up.weight", hp.n_embd, hp.n_ff);
    L.w_down = bind.matrix(p + "ffn_down.weight", hp.n_ff, hp.n_embd);
  }
  w.output_norm = bind.vector("output_norm.weight", hp.n_embd);
  if (bind.find("output.weight")) {
    w.output = bind.matrix("output.weight", hp.n_embd, hp.n_vocab);
  } else {
    w.output = w.token_embd;
    w.tied_output = true;
  }
  // Q4_0 / Q8_0 matrices get a copy laid out for SIMD across rows (kernels/packed_rows.h); other
  // large ones of a mapped file a plain copy on huge pages (core/weight_memory.h; an in-memory
  // image already is anonymous memory, and copying would double it). The token embedding stays as
  // stored (rows are looked up, not multiplied), unless it is the output.
  const int pack_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // The stored bytes of a moved matrix are not read again, so the process lets go of those pages.
  std::vector<WeightMatrix*> matrices;
  for (LayerWeights& L : w.layers)
    for (WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) matrices.push_back(m);
  matrices.push_back(&w.output);
  auto will_copy = [&](const WeightMatrix& m) { return !packable(m.type) && file->mapped() && m.bytes() >= kMinHugeWeightBytes; };
  size_t moving = 0;
  for (const WeightMatrix* m : matrices)
    if (packable(m->type) || will_copy(*m)) moving += m->bytes();
  // Copies that would not fit are not made (the OOM killer, not an Error, would answer them).
  model->weights_moved_ = !options.run_from_mapping && moving > 0 && weight_copies_fit(moving, available_memory_bytes());
  auto settle = [&](WeightMatrix& m) {
    const void* stored = m.data;
    pack_weights(m, pack_threads);
    const bool moved = m.packed || (will_copy(m) && copy_to_weight_memory(m));
    if (moved && stored != w.token_embd.data) file->release_pages(stored, m.bytes());
  };
  if (model->weights_moved_)
    for (WeightMatrix* m : matrices) settle(*m);
  model->file_ = std::move(file);
  model->kernels_ = &select_dot_kernels();
  return model;
}

std::unique_ptr<Model> Model::share_weights() const {
  std::unique_ptr<Model> copy(new Model());
  copy->file_ = file_;
  copy->hparams_ = hparams_;
  copy->weights_ = weights_;  // WeightMatrix holds its packing / copy by shared_ptr
  copy->kernels_ = kernels_;
  copy->weights_moved_ = weights_moved_;
  return copy;
}

size_t Model::weight_bytes() const {
  size_t total = weights_.output.bytes();
  for (const LayerWeights& L : weights_.layers)
    for (const WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) total += m->bytes();
  return total;
}

}  // namespace nucleus
