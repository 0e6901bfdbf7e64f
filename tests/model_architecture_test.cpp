// The model description (hparams.h) and the loader's bookkeeping, on the shared architecture files:
// a tensor or key the description does not use is an error naming it, documented no-ops really are
// no-ops, and the features that select behaviour (Phi-3's factor set by context, MoE renormalization,
// sliding windows, Gemma 4's KV sharing) do what the shared README says llama.cpp does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.h"
#include "io/gguf.h"
#include "model/model.h"
#include "model/sequence_runner.h"
#include "model/synthetic_model.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

const char* kArchModels[] = {"llama31", "mixtral", "qwen3", "qwen3moe", "phi3", "phi3-long", "gemma2", "gemma3", "gemma4", "qwen35"};

std::string arch_path(const std::string& name) { return test::shared_path("models/arch/" + name + ".gguf"); }

// A copy of `source` rebuilt through GgufWriter, with `edit` applied to its metadata and tensor list.
// Tensor data points into `source`, which must outlive the returned file.
struct Rewrite {
  std::vector<std::pair<std::string, MetaValue>> metadata;
  std::vector<TensorInfo> tensors;
  std::vector<std::vector<uint8_t>> owned;  // replacement tensor data
};

std::unique_ptr<GgufFile> rewrite(const GgufFile& source, const std::function<void(Rewrite&)>& edit) {
  Rewrite r;
  r.metadata = source.metadata();
  r.tensors = source.tensors();
  r.owned.reserve(64);
  edit(r);
  GgufWriter writer;
  for (const auto& [key, value] : r.metadata) writer.set(key, value);
  for (const TensorInfo& t : r.tensors)
    writer.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), t.data, t.nbytes);
  return GgufFile::from_bytes(writer.to_bytes(), source.path() + " (edited)");
}

std::vector<float> logits_of(Model& model, const std::vector<int32_t>& tokens) {
  SequenceRunner runner(model, static_cast<int64_t>(tokens.size()), 1);
  return runner.feed(tokens, /*all_logits=*/true);
}

std::vector<int32_t> long_prompt(int64_t n) {
  std::vector<int32_t> t = {1};
  for (int64_t i = 1; i < n; ++i) t.push_back(static_cast<int32_t>(3 + (i * 7919) % 500));
  return t;
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

void expect_error_naming(const std::function<void()>& load, const std::string& name) {
  try {
    load();
    ADD_FAILURE() << "loaded without an error naming " << name;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

TEST(ModelDescription, AnUnusedTensorIsAnErrorNamingIt) {
  NUCLEUS_REQUIRE_SHARED();
  for (const char* name : kArchModels) {
    auto file = GgufFile::open(arch_path(name));
    ASSERT_NO_THROW(Model::load(GgufFile::open(arch_path(name)))) << name;
    // A copy of a real norm vector under a name no family reads, and one a family could read but
    // this file's description does not (a bias on a model without biases).
    for (const char* extra : {"blk.0.attn_mystery.weight", "blk.1.attn_output.bias"}) {
      auto edited = rewrite(*file, [&](Rewrite& r) {
        TensorInfo t = *file->find_tensor("output_norm.weight");
        t.name = extra;
        r.tensors.push_back(t);
      });
      expect_error_naming([&] { Model::load(std::move(edited)); }, extra);
    }
  }
}

TEST(ModelDescription, AMissingTensorIsAnErrorNamingIt) {
  NUCLEUS_REQUIRE_SHARED();
  for (const char* name : kArchModels) {
    auto file = GgufFile::open(arch_path(name));
    // Every tensor the description reads is required: dropping any one of them is an error.
    for (const TensorInfo& victim : file->tensors()) {
      if (victim.name.rfind("blk.1.", 0) != 0 && victim.name.find("blk.") == 0) continue;  // layer 1 and the globals
      auto edited = rewrite(*file, [&](Rewrite& r) {
        std::erase_if(r.tensors, [&](const TensorInfo& t) { return t.name == victim.name; });
      });
      if (std::string(name) == "gemma4" && victim.name == "rope_freqs.weight") continue;  // optional: proportional rope off
      if (std::string(name).rfind("phi3", 0) == 0 && victim.name.rfind("rope_factors_", 0) == 0) continue;  // below
      if (victim.name == "rope_freqs.weight" || victim.name == "output.weight") continue;  // optional by design
      if (std::string(name) == "gemma4" && victim.name.find("attn_v") != std::string::npos) continue;  // K-as-V without it
      expect_error_naming([&] { Model::load(std::move(edited)); }, victim.name);
    }
  }
}

TEST(ModelDescription, AnArchitectureKeyNucleusDoesNotImplementIsAnErrorNamingIt) {
  NUCLEUS_REQUIRE_SHARED();
  for (const char* name : kArchModels) {
    auto file = GgufFile::open(arch_path(name));
    const std::string arch = file->get_string("general.architecture");
    auto edited = rewrite(*file, [&](Rewrite& r) {
      r.metadata.push_back({arch + ".attention.some_future_feature", MetaValue::f32(1.0f)});
    });
    expect_error_naming([&] { Model::load(std::move(edited)); }, arch + ".attention.some_future_feature");
  }
  // YaRN rope scaling is not implemented: refused, never run as if unscaled.
  auto file = GgufFile::open(arch_path("llama31"));
  auto yarn = rewrite(*file, [&](Rewrite& r) {
    r.metadata.push_back({"llama.rope.scaling.type", MetaValue::string("yarn")});
    r.metadata.push_back({"llama.rope.scaling.factor", MetaValue::f32(4.0f)});
  });
  expect_error_naming([&] { Model::load(std::move(yarn)); }, "llama.rope.scaling.type");
}

TEST(ModelDescription, LlamaRopeFreqsChangeTheLogitsAndAreReadFromTheFile) {
  NUCLEUS_REQUIRE_SHARED();
  auto file = GgufFile::open(arch_path("llama31"));
  const std::vector<int32_t> tokens = long_prompt(300);
  auto model = Model::load(GgufFile::open(arch_path("llama31")));
  ASSERT_EQ(model->hparams().ropes[0].freq_factors.size(), 8u);
  EXPECT_FLOAT_EQ(model->hparams().ropes[0].freq_factors[7], 8.0f);
  // All-ones factors: the plain rope, visibly different at long positions (README: up to 1.81).
  std::vector<float> ones(8, 1.0f);
  auto plain = Model::load(rewrite(*file, [&](Rewrite& r) {
    for (TensorInfo& t : r.tensors)
      if (t.name == "rope_freqs.weight") t.data = reinterpret_cast<const uint8_t*>(ones.data());
  }));
  EXPECT_GT(max_difference(logits_of(*model, tokens), logits_of(*plain, tokens)), 0.1);
}

TEST(ModelDescription, Phi3PicksItsLongRopeFactorsOnceByTheContextSize) {
  NUCLEUS_REQUIRE_SHARED();
  // phi3.gguf: original context 4096 → short factors up to 4096, long from 4097; phi3-long.gguf: 256.
  const std::vector<int32_t> tokens = long_prompt(40);
  for (auto [name, boundary] : {std::pair<const char*, int64_t>{"phi3", 4096}, {"phi3-long", 256}}) {
    ModelLoadOptions at, above;
    at.n_ctx = boundary;
    above.n_ctx = boundary + 1;
    auto short_model = Model::load(GgufFile::open(arch_path(name)), at);
    auto long_model = Model::load(GgufFile::open(arch_path(name)), above);
    EXPECT_EQ(short_model->hparams().ropes[0].factors_tensor, "rope_factors_short.weight") << name;
    EXPECT_EQ(long_model->hparams().ropes[0].factors_tensor, "rope_factors_long.weight") << name;
    // Even a 40-token prompt differs: the choice is by context, not by sequence length.
    EXPECT_GT(max_difference(logits_of(*short_model, tokens), logits_of(*long_model, tokens)), 0.05) << name;
    EXPECT_EQ(long_model->hparams().n_ctx, boundary + 1);
  }
}

TEST(ModelDescription, Gemma4KvSharedLayersIgnoreTheirOwnKeyAndValueTensors) {
  // llama.cpp creates attn_k / attn_k_norm / attn_v for the KV-shared layers 5 and 6 and never uses
  // them: garbage in them must not change a logit.
  NUCLEUS_REQUIRE_SHARED();
  auto file = GgufFile::open(arch_path("gemma4"));
  auto model = Model::load(GgufFile::open(arch_path("gemma4")));
  EXPECT_EQ(model->hparams().layers[5].kv_source, 3);
  EXPECT_EQ(model->hparams().layers[6].kv_source, 4);
  EXPECT_TRUE(model->hparams().layers[2].k_as_v);
  EXPECT_FALSE(model->hparams().layers[1].k_as_v);
  std::vector<std::vector<float>> garbage;
  garbage.reserve(8);
  auto scrambled = Model::load(rewrite(*file, [&](Rewrite& r) {
    for (TensorInfo& t : r.tensors) {
      const bool shared_layer = t.name.rfind("blk.5.", 0) == 0 || t.name.rfind("blk.6.", 0) == 0;
      if (!shared_layer || (t.name.find("attn_k") == std::string::npos && t.name.find("attn_v") == std::string::npos)) continue;
      garbage.emplace_back(static_cast<size_t>(t.n_elements()), 1e3f);
      t.data = reinterpret_cast<const uint8_t*>(garbage.back().data());
    }
  }));
  EXPECT_FALSE(garbage.empty());
  const std::vector<int32_t> tokens = long_prompt(50);
  EXPECT_EQ(logits_of(*model, tokens), logits_of(*scrambled, tokens));
}

TEST(ModelDescription, SlidingWindowLayersSeeOnlyTheWindow) {
  // gemma2 (window 16, layers 0 and 2 slide): the logits at position p depend on token p − 16 only
  // through the global layers, so with every layer made sliding a change 16 tokens back is invisible
  // and one 15 tokens back is not.
  NUCLEUS_REQUIRE_SHARED();
  auto file = GgufFile::open(arch_path("gemma2"));
  auto all_sliding = Model::load(rewrite(*file, [&](Rewrite& r) {
    r.metadata.push_back({"gemma2.attention.sliding_window_pattern", MetaValue::u32(1000)});  // every il % P < P − 1
  }));
  for (const LayerSpec& l : all_sliding->hparams().layers) ASSERT_EQ(l.sliding_window, 16);
  std::vector<int32_t> base = long_prompt(80);
  auto last_logits = [&](const std::vector<int32_t>& t) {
    std::vector<float> all = logits_of(*all_sliding, t);
    return std::vector<float>(all.end() - all_sliding->hparams().n_vocab, all.end());
  };
  const std::vector<float> reference = last_logits(base);
  // Depth 4: the last token (79) reaches back 4 · 15 positions through stacked windows (to 19), so
  // a change further back has no effect, and one inside the last window has one.
  std::vector<int32_t> far = base, near = base;
  far[10] = 7;
  near[79 - 10] = 7;
  EXPECT_EQ(last_logits(far), reference);
  EXPECT_GT(max_difference(last_logits(near), reference), 1e-4);
}

TEST(ModelDescription, MixtureOfExpertsWithIdenticalExpertsIsTheDenseFfn) {
  // With every expert equal to expert 0, the renormalized router weights sum to 1, so the MoE layer
  // equals a dense FFN with expert 0's weights (up to the order of one f32 sum); without the
  // renormalization it would be scaled by the top-k probability mass instead.
  NUCLEUS_REQUIRE_SHARED();
  auto file = GgufFile::open(arch_path("mixtral"));
  auto same_experts = Model::load(rewrite(*file, [&](Rewrite& r) {
    for (TensorInfo& t : r.tensors) {
      if (t.name.find("_exps.weight") == std::string::npos) continue;
      const size_t per_expert = t.nbytes / static_cast<size_t>(t.ne[2]);
      std::vector<uint8_t> copy(t.nbytes);
      for (int64_t e = 0; e < t.ne[2]; ++e) std::memcpy(copy.data() + e * per_expert, t.data, per_expert);
      r.owned.push_back(std::move(copy));
      t.data = r.owned.back().data();
    }
  }));
  auto dense = Model::load(rewrite(*file, [&](Rewrite& r) {
    std::erase_if(r.metadata, [](const auto& kv) { return kv.first == "llama.expert_count" || kv.first == "llama.expert_used_count"; });
    std::vector<TensorInfo> out;
    for (TensorInfo t : r.tensors) {
      if (t.name.find("ffn_gate_inp") != std::string::npos) continue;
      const size_t pos = t.name.find("_exps.weight");
      if (pos != std::string::npos) {  // expert 0 as the layer's dense matrix
        t.name = t.name.substr(0, pos) + ".weight";
        t.n_dims = 2;
        t.nbytes /= static_cast<size_t>(t.ne[2]);
        t.ne[2] = 1;
      }
      out.push_back(t);
    }
    r.tensors = out;
  }));
  const std::vector<int32_t> tokens = long_prompt(30);
  EXPECT_LT(max_difference(logits_of(*same_experts, tokens), logits_of(*dense, tokens)), 1e-4);
}

TEST(ModelDescription, LayerPrefixSharesTheWeightsAndRunsTheFirstLayers) {
  NUCLEUS_REQUIRE_SHARED();
  for (const char* name : kArchModels) {
    auto model = Model::load(GgufFile::open(arch_path(name)));
    auto prefix = model->layer_prefix(1);
    EXPECT_EQ(prefix->hparams().n_layer, 1);
    EXPECT_EQ(prefix->weights().layers[0].wq.data, model->weights().layers[0].wq.data);
    const std::vector<int32_t> tokens = long_prompt(12);
    const std::vector<float> a = logits_of(*prefix, tokens);
    for (float v : a) ASSERT_TRUE(std::isfinite(v)) << name;
    EXPECT_GT(max_difference(a, logits_of(*model, tokens)), 1e-3) << name;  // not the full model
  }
}

}  // namespace
}  // namespace nucleus

namespace nucleus {
namespace {

// `nucleus synth` writes every family of the architecture issue at any shape (for benchmarks):
// a Mixtral-style MoE, Qwen3 and Qwen3-MoE, Phi-3, Gemma 2, 3 and 4 with sliding layers. The loader
// must accept every tensor and key it writes (an unused one would be an error), read the family's
// features back, and run a forward pass.
TEST(SyntheticShapes, EveryFamilyLoadsWithItsFeaturesAndRuns) {
  NUCLEUS_REQUIRE_SHARED();
  const auto tmp = std::filesystem::temp_directory_path() / ("nucleus_synth_shapes_" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  const std::string dir = tmp.string();
  SyntheticModelSpec base;
  base.vocab_path = test::shared_path("models/stories260K.gguf");
  base.dim = 256, base.layers = 2, base.heads = 4, base.kv_heads = 2, base.ffn = 256;
  base.type = GgmlType::Q4_0;
  struct Family {
    std::string arch;
    Architecture expected;
    int64_t experts = 0, layers = 2;
  };
  const Family families[] = {{"llama", Architecture::Llama, 4},  {"qwen2", Architecture::Qwen2},
                             {"qwen3", Architecture::Qwen3},     {"qwen3moe", Architecture::Qwen3Moe, 4},
                             {"phi3", Architecture::Phi3},       {"gemma2", Architecture::Gemma2, 0, 4},
                             {"gemma3", Architecture::Gemma3, 0, 6}, {"gemma4", Architecture::Gemma4, 0, 6},
                             {"qwen35", Architecture::Qwen35, 0, 8}};
  for (const Family& family : families) {
    SCOPED_TRACE(family.arch);
    SyntheticModelSpec spec = base;
    spec.arch = family.arch, spec.experts = family.experts, spec.layers = family.layers, spec.window = 8;
    const std::string path = dir + "/" + family.arch + ".gguf";
    write_synthetic_model(spec, path, 2);
    auto model = Model::load(GgufFile::open(path));
    const HParams& hp = model->hparams();
    EXPECT_EQ(hp.arch, family.expected);
    int sliding = 0, moe = 0, qk_norm = 0;
    for (const LayerSpec& l : hp.layers) {
      sliding += l.sliding_window == 8;
      moe += l.n_expert == family.experts && l.n_expert_used == 2;
      qk_norm += l.qk_norm;
    }
    const int expected_sliding = family.arch == "gemma2" ? 2 : family.arch == "gemma3" || family.arch == "gemma4" ? 5 : 0;  // alternating; 5 : 1
    EXPECT_EQ(sliding, expected_sliding);
    EXPECT_EQ(moe, family.experts > 0 ? family.layers : 0);
    const bool has_qk_norm = family.arch == "qwen3" || family.arch == "qwen3moe" || family.arch == "gemma3" || family.arch == "gemma4";
    if (family.arch == "qwen35") {  // 3 delta-net : 1 gated attention layer with QK-norm
      int delta_net = 0;
      for (const LayerSpec& l : hp.layers) delta_net += l.delta_net;
      EXPECT_EQ(delta_net, 6);
      EXPECT_EQ(qk_norm, 2);
      EXPECT_TRUE(hp.layers[3].attn_output_gate);
    } else {
      EXPECT_EQ(qk_norm, has_qk_norm ? family.layers : 0);
    }
    if (family.arch == "phi3") {
      EXPECT_TRUE(hp.fused_qkv);
      EXPECT_TRUE(hp.fused_gate_up);
    }
    EXPECT_FLOAT_EQ(hp.final_softcap, family.arch == "gemma2" || family.arch == "gemma4" ? 30.0f : 0.0f);
    if (family.arch == "gemma4") {  // full layers: twice the head size, V from the raw K projection
      EXPECT_EQ(hp.layers[5].head_dim, 2 * hp.layers[0].head_dim);
      EXPECT_TRUE(hp.layers[5].k_as_v);
      EXPECT_FALSE(hp.layers[0].k_as_v);
    }
    std::vector<int32_t> tokens;
    for (int i = 0; i < 20; ++i) tokens.push_back(1 + (i * 53) % 500);
    SequenceRunner runner(*model, static_cast<int64_t>(tokens.size()), 2);
    const std::vector<float>& logits = runner.feed(tokens, /*all_logits=*/false);
    for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  }
  {  // qwen35 at Qwen3.5-0.8B's proportions: attention heads wider than dim / heads, delta-net heads of their own
    SyntheticModelSpec spec = base;
    spec.arch = "qwen35", spec.layers = 4, spec.head_dim = 128, spec.ssm_k_heads = 4, spec.ssm_v_heads = 8, spec.ssm_state = 32;
    const std::string path = dir + "/qwen35-wide.gguf";
    write_synthetic_model(spec, path, 2);
    auto model = Model::load(GgufFile::open(path));
    const HParams& hp = model->hparams();
    EXPECT_EQ(hp.layers[3].head_dim, 128);
    EXPECT_EQ(hp.delta_net.n_k_heads, 4);
    EXPECT_EQ(hp.delta_net.n_v_heads, 8);
    EXPECT_EQ(hp.delta_net.head_dim, 32);
    SequenceRunner runner(*model, 20, 2);
    std::vector<int32_t> tokens(20, 7);
    for (float v : runner.feed(tokens, /*all_logits=*/false)) ASSERT_TRUE(std::isfinite(v));
    spec.arch = "qwen3";  // the qwen35 shape options belong to qwen35
    EXPECT_THROW(write_synthetic_model(spec, dir + "/bad.gguf", 2), Error);
  }
  SyntheticModelSpec bad = base;
  bad.arch = "gemma3", bad.experts = 4;
  EXPECT_THROW(write_synthetic_model(bad, dir + "/bad.gguf", 2), Error);  // experts only for llama / qwen3moe
  bad.arch = "qwen3moe", bad.experts = 0;
  EXPECT_THROW(write_synthetic_model(bad, dir + "/bad.gguf", 2), Error);  // qwen3moe needs experts
  bad.arch = "mamba";
  EXPECT_THROW(write_synthetic_model(bad, dir + "/bad.gguf", 2), Error);
  std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace nucleus
