// Binding GGUF tensors to the model's weights, with every shape and type checked, and every tensor
// of the file accounted for: one the description does not use is an error naming it (unless the
// description lists it as a documented no-op, HParams::ignored_tensors).
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/weight_memory.h"
#include "kernels/quantize.h"
#include "model/model.h"

namespace nucleus {

namespace {

std::string shape_of(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

class TensorBinder {
 public:
  explicit TensorBinder(const GgufFile& file) : file_(file) {}

  const TensorInfo* find(const std::string& name) const { return file_.find_tensor(name); }

  const TensorInfo& require(const std::string& name, const std::vector<int64_t>& shape) {
    const TensorInfo* t = file_.find_tensor(name);
    if (!t) throw Error(file_.path() + ": missing tensor '" + name + "'");
    bool ok = t->n_dims == static_cast<int>(shape.size());
    for (size_t i = 0; ok && i < shape.size(); ++i) ok = t->ne[i] == shape[i];
    if (!ok)
      throw Error(file_.path() + ": tensor '" + name + "' has shape " + t->shape_string() + ", expected " + shape_of(shape));
    used_.insert(name);
    return *t;
  }

  // A matrix stored with ne = [n_cols, n_rows].
  WeightMatrix matrix(const std::string& name, int64_t n_cols, int64_t n_rows) {
    return to_matrix(require(name, {n_cols, n_rows}));
  }

  WeightMatrix to_matrix(const TensorInfo& t) {
    if (!matmul_supports(t.type))
      throw Error(file_.path() + ": tensor '" + t.name + "' has type " + ggml_type_name(t.type) +
                  ", which this build cannot multiply yet");
    used_.insert(t.name);
    WeightMatrix w;
    w.type = t.type;
    w.data = t.data;
    w.n_cols = t.ne[0];
    w.n_rows = t.ne[1];
    w.row_bytes = ggml_row_size(t.type, t.ne[0]);
    return w;
  }

  // E matrices of ne = [n_cols, n_rows] stored back to back in one tensor [n_cols, n_rows, E].
  std::vector<WeightMatrix> stacked(const std::string& name, int64_t n_cols, int64_t n_rows, int64_t n_stack) {
    const TensorInfo& t = require(name, {n_cols, n_rows, n_stack});
    WeightMatrix whole = to_matrix(t);
    whole.n_rows = n_rows;
    std::vector<WeightMatrix> out;
    for (int64_t e = 0; e < n_stack; ++e) out.push_back(rows(whole, e * n_rows, n_rows, /*of_stack=*/true));
    return out;
  }

  // Rows [first, first + n) of m as a matrix of their own (fused Q|K|V, gate|up, one expert).
  static WeightMatrix rows(const WeightMatrix& m, int64_t first, int64_t n, bool of_stack = false) {
    WeightMatrix view = m;
    if (!of_stack && first + n > m.n_rows) throw Error("internal: row view out of range");
    view.data = static_cast<const uint8_t*>(m.data) + static_cast<size_t>(first) * m.row_bytes;
    view.n_rows = n;
    return view;
  }

  // A small vector (norm weight, bias) copied to f32.
  std::vector<float> vector(const std::string& name, int64_t n) {
    const TensorInfo& t = require(name, {n});
    if (!matmul_supports(t.type) || t.ne[0] % ggml_block_size(t.type) != 0)
      throw Error(file_.path() + ": tensor '" + name + "' has unsupported type " + ggml_type_name(t.type));
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t.type, t.data, v.data(), n);
    for (float x : v)
      if (!std::isfinite(x)) throw Error(file_.path() + ": tensor '" + name + "' holds a value that is not finite");
    return v;
  }

  // A small tensor of any shape (e.g. a conv kernel) copied to f32, ne0 fastest.
  std::vector<float> floats(const std::string& name, const std::vector<int64_t>& shape) {
    const TensorInfo& t = require(name, shape);
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    if (!matmul_supports(t.type) || t.ne[0] % ggml_block_size(t.type) != 0)
      throw Error(file_.path() + ": tensor '" + name + "' has unsupported type " + ggml_type_name(t.type));
    std::vector<float> v(static_cast<size_t>(count));
    const int64_t rows = count / t.ne[0];
    const size_t row_bytes = ggml_row_size(t.type, t.ne[0]);
    for (int64_t r = 0; r < rows; ++r)
      dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * row_bytes, v.data() + r * t.ne[0], t.ne[0]);
    for (float x : v)
      if (!std::isfinite(x)) throw Error(file_.path() + ": tensor '" + name + "' holds a value that is not finite");
    return v;
  }

  void ignore(const std::string& name) {
    if (find(name)) used_.insert(name);
  }

  // Throws Error naming the first tensor of the file nothing bound.
  void reject_unused(const std::string& arch) const {
    for (const TensorInfo& t : file_.tensors())
      if (!used_.count(t.name))
        throw Error(file_.path() + ": tensor '" + t.name + "' is not used by nucleus's description of architecture '" +
                    arch + "' (an unknown tensor or a feature nucleus does not implement); refusing to run without it");
  }

 private:
  const GgufFile& file_;
  std::set<std::string> used_;
};

void bind_layer(TensorBinder& bind, const HParams& hp, int64_t il, LayerWeights& L) {
  const LayerSpec& spec = hp.layers[static_cast<size_t>(il)];
  const std::string p = "blk." + std::to_string(il) + ".";
  const int64_t E = hp.n_embd, q_dim = spec.q_dim(), kv_dim = spec.kv_dim(), ff = spec.n_ff;
  const bool own_kv = spec.stores_kv(il);
  L.attn_norm = bind.vector(p + "attn_norm.weight", E);
  if (spec.delta_net) {  // Qwen3.5's gated delta-net mixer instead of attention
    const DeltaNetSpec& d = hp.delta_net;
    L.ssm_in = bind.matrix(p + "attn_qkv.weight", E, d.conv_dim());
    L.ssm_z = bind.matrix(p + "attn_gate.weight", E, d.value_dim());
    L.ssm_beta = bind.matrix(p + "ssm_beta.weight", E, d.n_v_heads);
    L.ssm_alpha = bind.matrix(p + "ssm_alpha.weight", E, d.n_v_heads);
    L.ssm_out = bind.matrix(p + "ssm_out.weight", d.value_dim(), E);
    L.ssm_conv = bind.floats(p + "ssm_conv1d.weight", {d.conv_kernel, d.conv_dim()});
    L.ssm_dt_bias = bind.vector(p + "ssm_dt.bias", d.n_v_heads);
    L.ssm_a = bind.vector(p + "ssm_a", d.n_v_heads);
    L.ssm_norm = bind.vector(p + "ssm_norm.weight", d.head_dim);
  } else if (hp.fused_qkv) {
    const WeightMatrix qkv = bind.matrix(p + "attn_qkv.weight", E, q_dim + 2 * kv_dim);  // rows: Q, then K, then V
    L.wq = TensorBinder::rows(qkv, 0, q_dim);
    L.wk = TensorBinder::rows(qkv, q_dim, kv_dim);
    L.wv = TensorBinder::rows(qkv, q_dim + kv_dim, kv_dim);
  } else {
    L.wq = bind.matrix(p + "attn_q.weight", E, spec.attn_output_gate ? 2 * q_dim : q_dim);
    if (own_kv) {
      L.wk = bind.matrix(p + "attn_k.weight", E, kv_dim);
      if (!spec.k_as_v) L.wv = bind.matrix(p + "attn_v.weight", E, kv_dim);
    }
  }
  if (!spec.delta_net) L.wo = bind.matrix(p + "attn_output.weight", q_dim, E);
  if (spec.qkv_bias) {
    L.bq = bind.vector(p + "attn_q.bias", q_dim);
    L.bk = bind.vector(p + "attn_k.bias", kv_dim);
    L.bv = bind.vector(p + "attn_v.bias", kv_dim);
  }
  if (spec.qk_norm) {
    L.q_norm = bind.vector(p + "attn_q_norm.weight", spec.head_dim);
    if (own_kv) L.k_norm = bind.vector(p + "attn_k_norm.weight", spec.head_dim);
  }
  if (spec.post_attention_norm) L.post_attention_norm = bind.vector(p + "post_attention_norm.weight", E);
  L.ffn_norm = bind.vector(p + hp.ffn_norm_tensor + ".weight", E);
  if (spec.moe()) {
    L.router = bind.matrix(p + "ffn_gate_inp.weight", E, spec.n_expert);
    const auto gate = bind.stacked(p + "ffn_gate_exps.weight", E, ff, spec.n_expert);
    const auto up = bind.stacked(p + "ffn_up_exps.weight", E, ff, spec.n_expert);
    const auto down = bind.stacked(p + "ffn_down_exps.weight", ff, E, spec.n_expert);
    for (int64_t e = 0; e < spec.n_expert; ++e) L.experts.push_back({gate[e], up[e], down[e]});
  } else if (hp.fused_gate_up) {
    const WeightMatrix gate_up = bind.matrix(p + "ffn_up.weight", E, 2 * ff);  // rows: gate, then up
    L.w_gate = TensorBinder::rows(gate_up, 0, ff);
    L.w_up = TensorBinder::rows(gate_up, ff, ff);
    L.w_down = bind.matrix(p + "ffn_down.weight", ff, E);
  } else {
    L.w_gate = bind.matrix(p + "ffn_gate.weight", E, ff);
    L.w_up = bind.matrix(p + "ffn_up.weight", E, ff);
    L.w_down = bind.matrix(p + "ffn_down.weight", ff, E);
  }
  if (spec.post_ffn_norm) L.post_ffn_norm = bind.vector(p + "post_ffw_norm.weight", E);
  if (spec.per_layer_input) {
    L.inp_gate = bind.matrix(p + "inp_gate.weight", E, hp.n_per_layer_input);
    L.proj = bind.matrix(p + "proj.weight", hp.n_per_layer_input, E);
    L.post_norm = bind.vector(p + "post_norm.weight", E);
  }
  if (spec.output_scale) L.output_scale = bind.vector(p + "layer_output_scale.weight", 1)[0];
}

}  // namespace

std::vector<const WeightMatrix*> LayerWeights::matrices() const {
  std::vector<const WeightMatrix*> out;
  for (const WeightMatrix* m : {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down, &router, &inp_gate, &proj, &ssm_in, &ssm_z,
                                &ssm_beta, &ssm_alpha, &ssm_out})
    if (m->data) out.push_back(m);
  for (const ExpertWeights& e : experts)
    for (const WeightMatrix* m : {&e.w_gate, &e.w_up, &e.w_down}) out.push_back(m);
  return out;
}

std::vector<WeightMatrix*> LayerWeights::matrices() {
  std::vector<WeightMatrix*> out;
  for (const WeightMatrix* m : std::as_const(*this).matrices()) out.push_back(const_cast<WeightMatrix*>(m));
  return out;
}

std::unique_ptr<Model> Model::load(std::unique_ptr<GgufFile> file, const ModelLoadOptions& options) {
  auto model = std::unique_ptr<Model>(new Model());
  model->hparams_ = HParams::from_gguf(*file, options.n_ctx);
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

  for (RopeSpec& rope : hp.ropes) {
    if (rope.factors_tensor.empty()) continue;
    rope.freq_factors = bind.vector(rope.factors_tensor, rope.n_rot / 2);
    for (float f : rope.freq_factors)
      if (!(f > 0.0f)) throw Error(file->path() + ": tensor '" + rope.factors_tensor + "' holds a factor that is not positive");
  }
  if (hp.n_per_layer_input > 0) {
    const int64_t width = hp.n_per_layer_input * hp.n_layer;  // [L, P] per token
    const TensorInfo& t = bind.require("per_layer_token_embd.weight", {width, hp.n_vocab});
    w.per_layer_token_embd = bind.to_matrix(t);
    w.per_layer_model_proj = bind.matrix("per_layer_model_proj.weight", hp.n_embd, width);
    w.per_layer_proj_norm = bind.vector("per_layer_proj_norm.weight", hp.n_per_layer_input);
  }
  w.layers.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t l = 0; l < hp.n_layer; ++l) bind_layer(bind, hp, l, w.layers[static_cast<size_t>(l)]);
  w.output_norm = bind.vector("output_norm.weight", hp.n_embd);
  if (!hp.output_always_tied && bind.find("output.weight")) {
    w.output = bind.matrix("output.weight", hp.n_embd, hp.n_vocab);
  } else {
    w.output = w.token_embd;
    w.tied_output = true;
  }
  for (const auto& [name, why] : hp.ignored_tensors) bind.ignore(name);
  bind.reject_unused(hp.arch_name);

  int64_t widest_head = 0;
  for (const LayerSpec& l : hp.layers) widest_head = std::max(widest_head, l.head_dim);
  model->ones_.assign(static_cast<size_t>(widest_head), 1.0f);

  // Q4_0 / Q8_0 matrices (and K-quants where the kernel table has packed kernels for them) get a copy
  // laid out for SIMD across rows (kernels/packed_rows.h, packed_kquant.h); other large ones of a mapped
  // file a plain copy on huge pages (core/weight_memory.h; an in-memory image already is anonymous
  // memory, and copying would double it). The token embeddings stay as stored (rows are looked up,
  // not multiplied), unless one is the output.
  const int pack_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // The stored bytes of a moved matrix are not read again, so the process lets go of those pages.
  std::vector<WeightMatrix*> matrices;
  for (LayerWeights& L : w.layers)
    for (WeightMatrix* m : L.matrices()) matrices.push_back(m);
  matrices.push_back(&w.output);
  if (w.per_layer_model_proj.data) matrices.push_back(&w.per_layer_model_proj);
  // Every matrix of a mapped file: from the arena even the small ones stream from 2 MiB pages.
  const DotKernels& kernels = select_dot_kernels();
  auto will_copy = [&](const WeightMatrix& m) { return !packable(m, kernels) && file->mapped(); };
  size_t moving = 0;
  for (const WeightMatrix* m : matrices)
    if (packable(*m, kernels) || will_copy(*m)) moving += m->bytes();
  // The weights are read on every token: they must fit in memory (ModelLoadOptions).
  const size_t tensor_bytes = file->file_size() - std::min(file->file_size(), file->data_offset());
  const size_t available = options.available_memory > 0 ? options.available_memory : available_memory_bytes();
  if (file->mapped() && options.check_memory && available > 0 && tensor_bytes > available)
    throw Error(file->path() + ": the weights take " + gib_text(tensor_bytes) + " but only " + gib_text(available) +
                " of memory is available; every token reads all of them, so they would be paged in from the file "
                "at disk speed (--no-memory-check loads the model anyway)");
  // Copies that would not fit are not made (the OOM killer, not an Error, would answer them).
  model->weights_moved_ = !options.run_from_mapping && moving > 0 && weight_copies_fit(moving, available);
  model->mapped_weight_bytes_ = file->mapped() ? tensor_bytes - (model->weights_moved_ ? std::min(tensor_bytes, moving) : 0) : 0;
  // One arena for all of them: the matrices of a small model are each below a huge page's worth of
  // rounding, but together they still stream from 2 MiB pages (core/weight_memory.h).
  WeightArena arena(moving + 64 * matrices.size() + 64 * kPackRows * 1024);
  WorkerPool packers(pack_threads);  // one team for every matrix (not OpenMP: see core/worker_pool.h)
  auto settle = [&](WeightMatrix& m) {
    const void* stored = m.data;
    pack_weights(m, packers, &arena, kernels);
    const bool moved = m.packed || (will_copy(m) && copy_to_weight_memory(m, &arena));
    if (moved && stored != w.token_embd.data) file->release_pages(stored, m.bytes());
  };
  if (model->weights_moved_)
    for (WeightMatrix* m : matrices) settle(*m);
  model->file_ = std::move(file);
  model->kernels_ = &kernels;
  return model;
}

std::unique_ptr<Model> Model::share_weights() const {
  std::unique_ptr<Model> copy(new Model());
  copy->file_ = file_;
  copy->hparams_ = hparams_;
  copy->weights_ = weights_;  // WeightMatrix holds its packing / copy by shared_ptr
  copy->kernels_ = kernels_;
  copy->ones_ = ones_;
  copy->weights_moved_ = weights_moved_;
  copy->mapped_weight_bytes_ = mapped_weight_bytes_;
  return copy;
}

std::unique_ptr<Model> Model::layer_prefix(int64_t n_layers) const {
  if (n_layers < 1 || n_layers > hparams_.n_layer)
    throw Error("layer prefix: the number of layers must be in 1.." + std::to_string(hparams_.n_layer) + " (the model's), got " +
                std::to_string(n_layers));
  std::unique_ptr<Model> prefix = share_weights();
  prefix->hparams_.n_layer = n_layers;
  prefix->hparams_.layers.resize(static_cast<size_t>(n_layers));
  prefix->weights_.layers.resize(static_cast<size_t>(n_layers));
  return prefix;
}

size_t Model::weight_bytes() const {
  size_t total = weights_.output.bytes() + weights_.per_layer_model_proj.bytes();
  for (const LayerWeights& L : weights_.layers)
    for (const WeightMatrix* m : L.matrices()) total += m->bytes();
  return total;
}

}  // namespace nucleus
