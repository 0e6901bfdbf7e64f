#include "model/synthetic_model.h"

#include <cmath>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "io/gguf.h"
#include "kernels/quantize.h"

namespace nucleus {

namespace {

uint64_t hash_name(const std::string& name, uint64_t seed) {
  uint64_t h = splitmix64(seed);
  for (unsigned char c : name) h = splitmix64(h ^ c);
  return h;
}

// Row r of a tensor: uniform in [−scale, scale], from a counter stream keyed by (tensor, row),
// so the result does not depend on the thread count.
void fill_row(float* out, int64_t n, uint64_t tensor_key, int64_t row, float scale) {
  const uint64_t row_key = splitmix64(tensor_key ^ static_cast<uint64_t>(row));
  for (int64_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(splitmix64(row_key + static_cast<uint64_t>(i)) >> 11) * 0x1.0p-53;
    out[i] = static_cast<float>((2.0 * u - 1.0) * scale);
  }
}

}  // namespace

void write_synthetic_model(const SyntheticModelSpec& spec, const std::string& output_path, int n_threads) {
  const std::string& arch = spec.arch;
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3" && arch != "qwen3moe" && arch != "phi3" && arch != "gemma2" &&
      arch != "gemma3" && arch != "gemma4" && arch != "qwen35")
    throw Error("synth: --arch must be llama, qwen2, qwen3, qwen3moe, phi3, gemma2, gemma3, gemma4 or qwen35, not '" + arch + "'");
  if (spec.experts > 0 && ((arch != "llama" && arch != "qwen3moe") || spec.experts_used < 1 || spec.experts_used > spec.experts))
    throw Error("synth: --experts needs --arch llama or qwen3moe and 1 <= --experts-used <= --experts");
  if (arch == "qwen3moe" && spec.experts == 0) throw Error("synth: --arch qwen3moe needs --experts N");
  const bool gemma4 = arch == "gemma4";
  const bool gemma = arch == "gemma2" || arch == "gemma3" || gemma4;
  const bool qwen35 = arch == "qwen35";
  const bool qk_norm = arch == "gemma3" || gemma4 || arch == "qwen3" || arch == "qwen3moe" || qwen35;
  const bool tied_output = arch == "qwen2" || gemma;
  if (spec.dim <= 0 || spec.layers <= 0 || spec.heads <= 0 || spec.kv_heads <= 0 || spec.ffn <= 0 ||
      spec.dim % spec.heads != 0 || spec.heads % spec.kv_heads != 0 || (spec.dim / spec.heads) % 2 != 0)
    throw Error("synth: inconsistent shape (dim must divide by heads into an even head size, heads by kv-heads)");
  const int64_t block = ggml_block_size(spec.type);
  if (spec.dim % block != 0 || spec.ffn % block != 0)
    throw Error(std::string("synth: dim and ffn must be multiples of the ") + ggml_type_name(spec.type) + " block size " +
                std::to_string(block));
  auto vocab = GgufFile::open(spec.vocab_path);
  const int64_t n_vocab = static_cast<int64_t>(vocab->get_array("tokenizer.ggml.tokens").array_size());
  if (n_vocab == 0) throw Error(spec.vocab_path + ": empty vocabulary");

  GgufWriter writer;
  const std::string p = spec.arch + ".";
  writer.set("general.architecture", MetaValue::string(spec.arch));
  writer.set("general.name", MetaValue::string("synthetic-" + spec.arch + "-" + std::to_string(spec.dim) + "x" +
                                                std::to_string(spec.layers)));
  writer.set(p + "context_length", MetaValue::u32(static_cast<uint32_t>(spec.context_length)));
  writer.set(p + "embedding_length", MetaValue::u32(static_cast<uint32_t>(spec.dim)));
  writer.set(p + "block_count", MetaValue::u32(static_cast<uint32_t>(spec.layers)));
  writer.set(p + "feed_forward_length", MetaValue::u32(static_cast<uint32_t>(spec.ffn)));
  writer.set(p + "attention.head_count", MetaValue::u32(static_cast<uint32_t>(spec.heads)));
  writer.set(p + "attention.head_count_kv", MetaValue::u32(static_cast<uint32_t>(spec.kv_heads)));
  writer.set(p + "attention.layer_norm_rms_epsilon", MetaValue::f32(1e-5f));
  writer.set(p + "rope.dimension_count", MetaValue::u32(static_cast<uint32_t>(spec.dim / spec.heads)));
  writer.set(p + "rope.freq_base", MetaValue::f32(arch == "llama" || arch == "phi3" ? 10000.0f : 1e6f));
  if (arch == "qwen3" || arch == "qwen3moe") {
    writer.set(p + "attention.key_length", MetaValue::u32(static_cast<uint32_t>(spec.dim / spec.heads)));
    writer.set(p + "attention.value_length", MetaValue::u32(static_cast<uint32_t>(spec.dim / spec.heads)));
    writer.set(p + "attention.layer_norm_rms_epsilon", MetaValue::f32(1e-6f));
  }
  // Qwen3.5 (hybrid): every 4th layer gated attention (heads × dim/heads, a query and a gate per head,
  // QK-norm, rope on a quarter of the head), the others gated delta-net with kv_heads key heads and
  // heads value heads of size dim/heads and a 4-tap conv.
  auto or_default = [](int64_t value, int64_t fallback) { return value > 0 ? value : fallback; };
  const int64_t ssm_state = or_default(spec.ssm_state, spec.dim / spec.heads);
  const int64_t ssm_k_heads = or_default(spec.ssm_k_heads, spec.kv_heads), ssm_v_heads = or_default(spec.ssm_v_heads, spec.heads);
  if (!qwen35 && (spec.head_dim > 0 || spec.ssm_state > 0 || spec.ssm_k_heads > 0 || spec.ssm_v_heads > 0))
    throw Error("synth: --head-dim and --ssm-* are for --arch qwen35");
  if (ssm_v_heads % ssm_k_heads != 0) throw Error("synth: --ssm-v-heads must be a multiple of --ssm-k-heads");
  const int64_t attn_head = qwen35 ? or_default(spec.head_dim, spec.dim / spec.heads) : spec.dim / spec.heads;
  if (attn_head % 8 != 0 && qwen35) throw Error("synth: qwen35's --head-dim must be a multiple of 8");
  const int64_t ssm_key_dim = ssm_k_heads * ssm_state, ssm_value_dim = ssm_v_heads * ssm_state;
  const int64_t ssm_conv_dim = 2 * ssm_key_dim + ssm_value_dim;
  auto qwen35_recurrent = [&](int64_t il) { return (il + 1) % 4 != 0; };
  if (qwen35) {
    const int64_t head = attn_head;
    const int64_t n_rot = std::max<int64_t>(2, head / 4 / 2 * 2), pairs = n_rot / 2;
    writer.set(p + "attention.key_length", MetaValue::u32(static_cast<uint32_t>(head)));
    writer.set(p + "attention.value_length", MetaValue::u32(static_cast<uint32_t>(head)));
    writer.set(p + "attention.layer_norm_rms_epsilon", MetaValue::f32(1e-6f));
    writer.set(p + "rope.dimension_count", MetaValue::u32(static_cast<uint32_t>(n_rot)));
    writer.set(p + "rope.freq_base", MetaValue::f32(1e7f));
    writer.set(p + "rope.dimension_sections", MetaValue::i32_array({static_cast<int32_t>((pairs + 2) / 3),
                                                                     static_cast<int32_t>((pairs + 1) / 3),
                                                                     static_cast<int32_t>(pairs / 3), 0}));
    writer.set(p + "ssm.conv_kernel", MetaValue::u32(4));
    writer.set(p + "ssm.state_size", MetaValue::u32(static_cast<uint32_t>(ssm_state)));
    writer.set(p + "ssm.group_count", MetaValue::u32(static_cast<uint32_t>(ssm_k_heads)));
    writer.set(p + "ssm.time_step_rank", MetaValue::u32(static_cast<uint32_t>(ssm_v_heads)));
    writer.set(p + "ssm.inner_size", MetaValue::u32(static_cast<uint32_t>(ssm_value_dim)));
    writer.set(p + "full_attention_interval", MetaValue::u32(4));
  }
  if (gemma) {
    writer.set(p + "attention.sliding_window", MetaValue::u32(static_cast<uint32_t>(spec.window)));
    writer.set(p + "attention.layer_norm_rms_epsilon", MetaValue::f32(1e-6f));
  }
  // Gemma 4 (dense, as its 1B-class files): 5 sliding layers : 1 full; full layers have twice the
  // head size and read V from the raw K projection (no attn_v); no per-layer inputs, no KV sharing.
  const int64_t head_swa = spec.dim / spec.heads;
  const int64_t head_full = gemma4 ? 2 * head_swa : head_swa;
  auto gemma4_sliding = [&](int64_t il) { return il % 6 < 5; };
  if (gemma4) {
    MetaValue pattern;
    pattern.type = MetaType::ARRAY;
    pattern.elem_type = MetaType::BOOL;
    for (int64_t il = 0; il < spec.layers; ++il) pattern.ints.push_back(gemma4_sliding(il) ? 1 : 0);
    writer.set(p + "attention.sliding_window_pattern", pattern);
    writer.set(p + "attention.key_length", MetaValue::u32(static_cast<uint32_t>(head_full)));
    writer.set(p + "attention.value_length", MetaValue::u32(static_cast<uint32_t>(head_full)));
    writer.set(p + "attention.key_length_swa", MetaValue::u32(static_cast<uint32_t>(head_swa)));
    writer.set(p + "attention.value_length_swa", MetaValue::u32(static_cast<uint32_t>(head_swa)));
    writer.set(p + "rope.dimension_count", MetaValue::u32(static_cast<uint32_t>(head_full)));
    writer.set(p + "rope.dimension_count_swa", MetaValue::u32(static_cast<uint32_t>(head_swa)));
    writer.set(p + "rope.freq_base_swa", MetaValue::f32(10000.0f));
    writer.set(p + "attention.shared_kv_layers", MetaValue::u32(0));
    writer.set(p + "embedding_length_per_layer_input", MetaValue::u32(0));
    writer.set(p + "final_logit_softcapping", MetaValue::f32(30.0f));
  }
  if (arch == "gemma2") {
    writer.set(p + "attn_logit_softcapping", MetaValue::f32(50.0f));
    writer.set(p + "final_logit_softcapping", MetaValue::f32(30.0f));
  }
  if (spec.experts > 0) {
    writer.set(p + "expert_count", MetaValue::u32(static_cast<uint32_t>(spec.experts)));
    writer.set(p + "expert_used_count", MetaValue::u32(static_cast<uint32_t>(spec.experts_used)));
    if (arch == "qwen3moe") writer.set(p + "expert_feed_forward_length", MetaValue::u32(static_cast<uint32_t>(spec.ffn)));
  }
  for (const auto& [key, value] : vocab->metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    if ((key != "tokenizer.ggml.tokens" && key != "tokenizer.ggml.token_type") || spec.renamed_tokens.empty()) {
      writer.set(key, value);
      continue;
    }
    const std::vector<int64_t>& types = vocab->get_array("tokenizer.ggml.token_type").ints;
    if (key == "tokenizer.ggml.token_type") {
      std::vector<int32_t> new_types(types.begin(), types.end());
      for (const auto& renamed : spec.renamed_tokens)
        if (renamed.control && renamed.id >= 0 && renamed.id < static_cast<int64_t>(new_types.size()))
          new_types[static_cast<size_t>(renamed.id)] = 3;  // CONTROL
      writer.set(key, MetaValue::i32_array(std::move(new_types)));
      continue;
    }
    MetaValue tokens = value;
    for (const auto& [id, text, control] : spec.renamed_tokens) {
      if (id < 0 || id >= n_vocab) throw Error("synth: token id " + std::to_string(id) + " is outside the vocabulary");
      if (types.size() > static_cast<size_t>(id) && types[static_cast<size_t>(id)] != 4 && types[static_cast<size_t>(id)] != 5)
        throw Error("synth: token " + std::to_string(id) + " ('" + tokens.strings[static_cast<size_t>(id)] +
                    "') is not a user-defined or unused entry; only those may be renamed");
      for (const std::string& existing : tokens.strings)
        if (existing == text) throw Error("synth: the vocabulary already has a token '" + text + "'");
      tokens.strings[static_cast<size_t>(id)] = text;
    }
    writer.set(key, tokens);
  }
  if (!spec.chat_template.empty()) writer.set("tokenizer.chat_template", MetaValue::string(spec.chat_template));

  std::vector<std::unique_ptr<std::vector<uint8_t>>> buffers;
  // A matrix of `rows` × `cols`, or `stack` of them as one 3-D tensor (experts).
  auto add = [&](const std::string& name, GgmlType type, int64_t cols, int64_t rows, float scale, float constant,
                 int64_t stack = 1) {
    const int64_t matrix_rows = rows;
    rows *= stack;
    const size_t row_bytes = ggml_row_size(type, cols);
    auto data = std::make_unique<std::vector<uint8_t>>(row_bytes * static_cast<size_t>(rows));
    const uint64_t key = hash_name(name, spec.seed);
    uint8_t* dst = data->data();
#pragma omp parallel num_threads(std::max(1, n_threads))
    {
      std::vector<float> values(static_cast<size_t>(cols));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        if (scale == 0.0f) std::fill(values.begin(), values.end(), constant);
        else fill_row(values.data(), cols, key, r, scale);
        quantize_row(type, values.data(), dst + static_cast<size_t>(r) * row_bytes, cols);
      }
    }
    std::vector<int64_t> ne = rows == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{cols, rows};
    if (stack > 1) ne = {cols, matrix_rows, stack};
    writer.add_tensor(name, type, ne, data->data(), data->size());
    buffers.push_back(std::move(data));
  };
  const int64_t kv_dim = spec.dim / spec.heads * spec.kv_heads;
  // Uniform(−a, a) has variance a²/3: a = √(3/fan_in) keeps activations near unit scale.
  auto scale_for = [](int64_t fan_in) { return std::sqrt(3.0f / static_cast<float>(fan_in)); };
  add("token_embd.weight", spec.type, spec.dim, n_vocab, 1.0f, 0.0f);
  add("output_norm.weight", GgmlType::F32, spec.dim, 1, 0.0f, 1.0f);
  if (!tied_output) add("output.weight", spec.type, spec.dim, n_vocab, scale_for(spec.dim), 0.0f);
  for (int64_t l = 0; l < spec.layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const int64_t head_dim = gemma4 && !gemma4_sliding(l) ? head_full : head_swa;
    add(b + "attn_norm.weight", GgmlType::F32, spec.dim, 1, 0.0f, 1.0f);
    if (qwen35) {
      if (qwen35_recurrent(l)) {
        add(b + "attn_qkv.weight", spec.type, spec.dim, ssm_conv_dim, scale_for(spec.dim), 0.0f);
        add(b + "attn_gate.weight", spec.type, spec.dim, ssm_value_dim, scale_for(spec.dim), 0.0f);
        add(b + "ssm_conv1d.weight", GgmlType::F32, 4, ssm_conv_dim, 0.5f, 0.0f);
        add(b + "ssm_dt.bias", GgmlType::F32, ssm_v_heads, 1, 0.5f, 0.0f);
        add(b + "ssm_a", GgmlType::F32, ssm_v_heads, 1, 0.0f, -0.5f);
        add(b + "ssm_beta.weight", GgmlType::F32, spec.dim, ssm_v_heads, scale_for(spec.dim), 0.0f);
        add(b + "ssm_alpha.weight", GgmlType::F32, spec.dim, ssm_v_heads, scale_for(spec.dim), 0.0f);
        add(b + "ssm_norm.weight", GgmlType::F32, ssm_state, 1, 0.0f, 1.0f);
        add(b + "ssm_out.weight", spec.type, ssm_value_dim, spec.dim, scale_for(ssm_value_dim), 0.0f);
      } else {
        const int64_t q_dim = spec.heads * attn_head, layer_kv_dim = spec.kv_heads * attn_head;
        add(b + "attn_q.weight", spec.type, spec.dim, 2 * q_dim, scale_for(spec.dim), 0.0f);  // query | gate per head
        add(b + "attn_k.weight", spec.type, spec.dim, layer_kv_dim, scale_for(spec.dim), 0.0f);
        add(b + "attn_v.weight", spec.type, spec.dim, layer_kv_dim, scale_for(spec.dim), 0.0f);
        add(b + "attn_output.weight", spec.type, q_dim, spec.dim, scale_for(q_dim), 0.0f);
        add(b + "attn_q_norm.weight", GgmlType::F32, attn_head, 1, 0.0f, 1.0f);
        add(b + "attn_k_norm.weight", GgmlType::F32, attn_head, 1, 0.0f, 1.0f);
      }
      add(b + "post_attention_norm.weight", GgmlType::F32, spec.dim, 1, 0.0f, 1.0f);  // the pre-FFN norm
      add(b + "ffn_gate.weight", spec.type, spec.dim, spec.ffn, scale_for(spec.dim), 0.0f);
      add(b + "ffn_up.weight", spec.type, spec.dim, spec.ffn, scale_for(spec.dim), 0.0f);
      add(b + "ffn_down.weight", spec.type, spec.ffn, spec.dim, scale_for(spec.ffn), 0.0f);
      continue;
    }
    if (gemma4) {
      const int64_t q_dim = spec.heads * head_dim, layer_kv_dim = spec.kv_heads * head_dim;
      add(b + "attn_q.weight", spec.type, spec.dim, q_dim, scale_for(spec.dim), 0.0f);
      add(b + "attn_k.weight", spec.type, spec.dim, layer_kv_dim, scale_for(spec.dim), 0.0f);
      if (gemma4_sliding(l)) add(b + "attn_v.weight", spec.type, spec.dim, layer_kv_dim, scale_for(spec.dim), 0.0f);
      add(b + "attn_output.weight", spec.type, q_dim, spec.dim, scale_for(q_dim), 0.0f);
      add(b + "layer_output_scale.weight", GgmlType::F32, 1, 1, 0.0f, 1.0f);
    } else if (arch == "phi3") {  // fused: [q | k | v] rows
      add(b + "attn_qkv.weight", spec.type, spec.dim, spec.dim + 2 * kv_dim, scale_for(spec.dim), 0.0f);
    } else {
      add(b + "attn_q.weight", spec.type, spec.dim, spec.dim, scale_for(spec.dim), 0.0f);
      add(b + "attn_k.weight", spec.type, spec.dim, kv_dim, scale_for(spec.dim), 0.0f);
      add(b + "attn_v.weight", spec.type, spec.dim, kv_dim, scale_for(spec.dim), 0.0f);
    }
    if (arch == "qwen2") {
      add(b + "attn_q.bias", GgmlType::F32, spec.dim, 1, 0.02f, 0.0f);
      add(b + "attn_k.bias", GgmlType::F32, kv_dim, 1, 0.02f, 0.0f);
      add(b + "attn_v.bias", GgmlType::F32, kv_dim, 1, 0.02f, 0.0f);
    }
    if (!gemma4) add(b + "attn_output.weight", spec.type, spec.dim, spec.dim, scale_for(spec.dim), 0.0f);
    if (qk_norm) {
      add(b + "attn_q_norm.weight", GgmlType::F32, head_dim, 1, 0.0f, 1.0f);
      add(b + "attn_k_norm.weight", GgmlType::F32, head_dim, 1, 0.0f, 1.0f);
    }
    if (gemma) {
      add(b + "post_attention_norm.weight", GgmlType::F32, spec.dim, 1, 0.0f, 1.0f);
      add(b + "post_ffw_norm.weight", GgmlType::F32, spec.dim, 1, 0.0f, 1.0f);
    }
    add(b + "ffn_norm.weight", GgmlType::F32, spec.dim, 1, 0.0f, 1.0f);
    if (spec.experts > 0) {
      add(b + "ffn_gate_inp.weight", GgmlType::F32, spec.dim, spec.experts, scale_for(spec.dim), 0.0f);
      add(b + "ffn_gate_exps.weight", spec.type, spec.dim, spec.ffn, scale_for(spec.dim), 0.0f, spec.experts);
      add(b + "ffn_up_exps.weight", spec.type, spec.dim, spec.ffn, scale_for(spec.dim), 0.0f, spec.experts);
      add(b + "ffn_down_exps.weight", spec.type, spec.ffn, spec.dim, scale_for(spec.ffn), 0.0f, spec.experts);
      continue;
    }
    if (arch == "phi3") {  // fused: [gate | up] rows
      add(b + "ffn_up.weight", spec.type, spec.dim, 2 * spec.ffn, scale_for(spec.dim), 0.0f);
      add(b + "ffn_down.weight", spec.type, spec.ffn, spec.dim, scale_for(spec.ffn), 0.0f);
      continue;
    }
    add(b + "ffn_gate.weight", spec.type, spec.dim, spec.ffn, scale_for(spec.dim), 0.0f);
    add(b + "ffn_up.weight", spec.type, spec.dim, spec.ffn, scale_for(spec.dim), 0.0f);
    add(b + "ffn_down.weight", spec.type, spec.ffn, spec.dim, scale_for(spec.ffn), 0.0f);
  }
  writer.write(output_path);
}

}  // namespace nucleus
