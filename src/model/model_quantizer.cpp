#include "model/model_quantizer.h"

#include <algorithm>
#include <cctype>
#include <memory>

#include "core/error.h"
#include "kernels/quantize.h"

namespace nucleus {

QuantizeRecipe parse_quantize_type(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper == "F32") return {GgmlType::F32, false, 0};
  if (upper == "F16") return {GgmlType::F16, false, 1};
  if (upper == "BF16") return {GgmlType::BF16, false, 32};
  if (upper == "Q8_0") return {GgmlType::Q8_0, false, 7};
  if (upper == "Q4_0") return {GgmlType::Q4_0, false, 2};
  if (upper == "Q4_K" || upper == "Q4_K_S") return {GgmlType::Q4_K, false, 14};
  if (upper == "Q5_K" || upper == "Q5_K_S") return {GgmlType::Q5_K, false, 16};
  if (upper == "Q6_K") return {GgmlType::Q6_K, false, 18};
  if (upper == "Q4_K_M") return {GgmlType::Q4_K, true, 15};
  if (upper == "Q5_K_M") return {GgmlType::Q5_K, true, 17};
  throw Error("unknown quantization type '" + name + "' (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q4_K_M, Q5_K_M)");
}

namespace {

bool is_quantized(GgmlType t) { return t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16; }

// llama.cpp's "use more bits" layers: the first and last eighth, and every third one between.
bool use_more_bits(int64_t layer, int64_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

int64_t layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  return std::stoll(name.substr(4, name.find('.', 4) - 4));
}

}  // namespace

GgmlType choose_tensor_type(const TensorInfo& tensor, const QuantizeRecipe& recipe, bool pure, int64_t n_layer,
                            bool has_output) {
  if (tensor.n_dims < 2) return tensor.type;  // norms and biases keep their precision
  GgmlType type = recipe.base;
  if (!pure && is_quantized(recipe.base)) {
    const std::string& name = tensor.name;
    const bool is_output = name == "output.weight" || (!has_output && name == "token_embd.weight");
    if (is_output && recipe.base != GgmlType::Q8_0) type = GgmlType::Q6_K;
    if (recipe.medium_mix && (name.find("attn_v.weight") != std::string::npos ||
                              name.find("ffn_down.weight") != std::string::npos)) {
      const int64_t layer = layer_of(name);
      if (layer >= 0 && use_more_bits(layer, n_layer)) type = GgmlType::Q6_K;
    }
  }
  if (tensor.ne[0] % ggml_block_size(type) != 0) type = GgmlType::Q8_0;
  if (tensor.ne[0] % ggml_block_size(type) != 0) type = GgmlType::F16;
  return type;
}

QuantizeStats quantize_model(const GgufFile& input, const std::string& output_path, const QuantizeRecipe& recipe,
                             bool pure, int n_threads) {
  const std::string arch = input.get_string("general.architecture");
  const int64_t n_layer = input.get_int(arch + ".block_count");
  const bool has_output = input.find_tensor("output.weight") != nullptr;
  GgufWriter writer;
  for (const auto& [key, value] : input.metadata()) writer.set(key, value);
  writer.set("general.file_type", MetaValue::u32(static_cast<uint32_t>(recipe.file_type)));
  writer.set("general.quantization_version", MetaValue::u32(2));

  QuantizeStats stats;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> buffers;  // converted data, alive until write
  for (const TensorInfo& t : input.tensors()) {
    const GgmlType type = choose_tensor_type(t, recipe, pure, n_layer, has_output);
    stats.bytes_in += t.nbytes;
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    if (type == t.type) {
      writer.add_tensor(t.name, t.type, ne, t.data, t.nbytes);
      stats.bytes_out += t.nbytes;
      continue;
    }
    const int64_t row = t.ne[0], n_rows = t.n_elements() / row;
    const size_t in_row_bytes = ggml_row_size(t.type, row), out_row_bytes = ggml_row_size(type, row);
    auto out = std::make_unique<std::vector<uint8_t>>(out_row_bytes * static_cast<size_t>(n_rows));
    uint8_t* dst = out->data();
#pragma omp parallel num_threads(std::max(1, n_threads))
    {
      std::vector<float> f32(static_cast<size_t>(row));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < n_rows; ++r) {
        dequantize_row(t.type, t.data + static_cast<size_t>(r) * in_row_bytes, f32.data(), row);
        quantize_row(type, f32.data(), dst + static_cast<size_t>(r) * out_row_bytes, row);
      }
    }
    writer.add_tensor(t.name, type, ne, out->data(), out->size());
    stats.bytes_out += out->size();
    ++stats.tensors_quantized;
    buffers.push_back(std::move(out));
  }
  writer.write(output_path);
  return stats;
}

}  // namespace nucleus
