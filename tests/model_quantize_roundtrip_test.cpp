// Quantization round trip at the level users see: an F32 model quantized to each type gives
// logits whose error against the F32 logits stays within that type's resolution, and the error
// grows as bits shrink (a broken quantizer or kernel gives errors near 100%, not a few percent).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include <unistd.h>

#include "model/sequence_runner.h"
#include "io/gguf.h"
#include "model/model.h"
#include "model/model_quantizer.h"
#include "model/synthetic_model.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

// Teacher-forced logits [n_tokens, n_vocab] of a fixed token sequence.
std::vector<float> logits_of(const std::string& path, const std::vector<int32_t>& tokens) {
  auto model = Model::load(GgufFile::open(path));
  SequenceRunner runner(*model, static_cast<int64_t>(tokens.size()), 2);
  return runner.feed(tokens, /*all_logits=*/true);
}

// ‖a − b‖ / ‖b‖ over all entries.
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

TEST(QuantizeRoundTrip, LogitsStayWithinEachTypesResolution) {
  NUCLEUS_REQUIRE_SHARED();
  const auto dir = std::filesystem::temp_directory_path() / ("nucleus_roundtrip_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // Rows of 256 so every K-quant applies to every matrix (with --pure, embeddings and output too).
  SyntheticModelSpec spec;
  spec.vocab_path = test::shared_path("models/stories260K.gguf");
  spec.dim = 256, spec.layers = 2, spec.heads = 4, spec.kv_heads = 2, spec.ffn = 512;
  spec.type = GgmlType::F32;
  const std::string f32_path = (dir / "f32.gguf").string();
  write_synthetic_model(spec, f32_path, 2);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 24; ++i) tokens.push_back(1 + (i * 37) % 500);
  const std::vector<float> reference = logits_of(f32_path, tokens);

  // Relative logit error per type on this model: 1.5× what was measured when the test was written
  // (F16 6.1e-4, BF16 5.0e-3, Q8_0 1.75e-2, Q6_K 4.9e-2, Q5_K 9.7e-2, Q4_K 1.8e-1, Q4_0 1.9e-1 —
  // each bit fewer doubles the error, as the step size does), far below a broken path's ~1.
  // BF16 is 6.6e-3 where the CPU has AVX512_BF16: the activations are rounded to BF16 as well
  // (kernels/tile_bf16.h), so its limit is 1.5× that.
  const std::vector<std::pair<std::string, double>> limits = {
      {"F16", 1e-3}, {"BF16", 1e-2}, {"Q8_0", 2.6e-2}, {"Q6_K", 7.5e-2},
      {"Q5_K", 1.5e-1}, {"Q4_K", 2.8e-1}, {"Q4_0", 2.9e-1}};
  std::map<std::string, double> measured;
  auto input = GgufFile::open(f32_path);
  for (const auto& [type, limit] : limits) {
    const std::string out = (dir / (type + ".gguf")).string();
    quantize_model(*input, out, parse_quantize_type(type), /*pure=*/true, 2);
    const double err = relative_error(logits_of(out, tokens), reference);
    measured[type] = err;
    EXPECT_LT(err, limit) << type;
    EXPECT_GT(err, 0.0) << type << " gave the F32 logits exactly: was it quantized at all?";
  }
  // More bits, less error; among the K-quants one bit fewer roughly doubles it.
  EXPECT_LT(measured["F16"], measured["BF16"]);
  EXPECT_LT(measured["BF16"], measured["Q8_0"]);
  EXPECT_LT(measured["Q8_0"], measured["Q6_K"]);
  for (const auto& [more, fewer] : {std::pair{"Q6_K", "Q5_K"}, std::pair{"Q5_K", "Q4_K"}}) {
    const double ratio = measured[fewer] / measured[more];
    EXPECT_GT(ratio, 1.5) << fewer << " vs " << more;
    EXPECT_LT(ratio, 2.8) << fewer << " vs " << more;
  }
  for (const auto& [type, err] : measured) std::printf("  %-5s relative logit error %.2e\n", type.c_str(), err);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nucleus
