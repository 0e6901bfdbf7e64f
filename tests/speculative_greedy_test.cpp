// Greedy speculative decoding must reproduce plain greedy decoding token for token, for every
// shared model, every proposer (n-gram, self-speculation, a draft model) and γ ∈ {1, 2, 4, 8};
// and n-gram lookup must pay off on a prompt that repeats a passage.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/model_source.h"
#include "model/sequence_runner.h"
#include "model/synthetic_model.h"
#include "sampling/sampler.h"
#include "speculative/draft_model_proposer.h"
#include "speculative/ngram_proposer.h"
#include "speculative/self_speculation.h"
#include "speculative/speculative_generator.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

constexpr int64_t kNewTokens = 40;

SamplingParams greedy_params() {
  SamplingParams params;
  params.temperature = 0.0f;
  params.seed = 1;
  return params;
}

std::vector<int32_t> plain_greedy(Model& model, const std::vector<int32_t>& prompt, int64_t n_new) {
  SequenceRunner runner(model, static_cast<int64_t>(prompt.size()) + n_new, 1);
  SamplerChain chain(greedy_params());
  std::vector<int32_t> tokens = prompt;
  const std::vector<float>* logits = &runner.feed(prompt);
  for (int64_t i = 0; i < n_new; ++i) {
    const int32_t token = chain.sample(logits->data(), model.hparams().n_vocab, SamplingContext{tokens, static_cast<uint64_t>(i)});
    tokens.push_back(token);
    if (i + 1 < n_new) logits = &runner.feed({token});
  }
  return tokens;
}

std::vector<int32_t> speculative_greedy(Model& model, Proposer& proposer, int32_t gamma, const std::vector<int32_t>& prompt,
                                        int64_t n_new, SpeculativeStats* stats = nullptr) {
  SpeculativeGenerator generator(model, proposer, greedy_params(), gamma, static_cast<int64_t>(prompt.size()) + n_new, 1);
  generator.start(prompt, n_new, 1);
  while (!generator.finished()) generator.step();
  if (stats) *stats = generator.stats();
  return generator.tokens();
}

class SpeculativeGreedyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SpeculativeGreedyTest, EqualsPlainGreedyForEveryProposerAndGamma) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string path = test::shared_path(GetParam());
  LoadedModel loaded = load_model(ModelSource{path, "", {}});
  Model& model = *loaded.model;
  const std::vector<int32_t> prompt =
      loaded.tokenizer->encode("Once upon a time, there was a little dog. The dog was happy. Once upon a time,", true, false);
  const std::vector<int32_t> expected = plain_greedy(model, prompt, kNewTokens);

  // A small random draft sharing the target's vocabulary (a poor guesser: many rejections).
  const std::string draft_path =
      (std::filesystem::temp_directory_path() / ("spec_greedy_draft_" + std::to_string(::getpid()) + ".gguf")).string();
  SyntheticModelSpec spec;
  spec.vocab_path = path;
  spec.dim = 32, spec.layers = 1, spec.heads = 2, spec.kv_heads = 2, spec.ffn = 64;
  write_synthetic_model(spec, draft_path, 1);
  auto draft = Model::load(GgufFile::open(draft_path));
  std::filesystem::remove(draft_path);
  check_same_vocabulary(model.file(), draft->file(), draft_path);

  for (int32_t gamma : {1, 2, 4, 8}) {
    std::vector<std::unique_ptr<Proposer>> proposers;
    proposers.push_back(std::make_unique<NgramProposer>(1, 3));
    proposers.push_back(make_self_speculation_proposer(model, 1, greedy_params(), 1));
    if (model.hparams().n_layer > 2)
      proposers.push_back(make_self_speculation_proposer(model, model.hparams().n_layer - 1, greedy_params(), 1));
    proposers.push_back(std::make_unique<DraftModelProposer>(*draft, greedy_params(), 1, "random-draft"));
    for (auto& proposer : proposers) {
      SpeculativeStats stats;
      EXPECT_EQ(speculative_greedy(model, *proposer, gamma, prompt, kNewTokens, &stats), expected)
          << GetParam() << " " << proposer->name() << " gamma " << gamma;
      EXPECT_EQ(stats.num_emitted, kNewTokens);
      if (gamma == 4)
        std::printf("%s %s gamma 4: alpha %.3f, tokens/pass %.2f\n", GetParam().c_str(), proposer->name().c_str(),
                    stats.acceptance_rate(), stats.tokens_per_pass());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, SpeculativeGreedyTest,
                         ::testing::Values("models/stories260K.gguf", "models/test/llama-spm-f16.gguf",
                                           "models/test/llama-spm-f32.gguf", "models/test/llama-spm-q4_0.gguf",
                                           "models/test/llama-spm-q8_0.gguf", "models/test/llama3-f16.gguf",
                                           "models/test/qwen2-f16.gguf", "models/arch/llama31.gguf",
                                           "models/arch/mixtral.gguf", "models/arch/qwen3.gguf", "models/arch/qwen3moe.gguf",
                                           "models/arch/phi3.gguf", "models/arch/gemma2.gguf", "models/arch/gemma3.gguf",
                                           "models/arch/gemma4.gguf"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// A good draft: the Q4_0 quantization of the same test model.
TEST(SpeculativeGreedy, QuantizedDraftOfTheSameModel) {
  NUCLEUS_REQUIRE_SHARED();
  LoadedModel target = load_model(ModelSource{test::shared_path("models/test/llama-spm-f16.gguf"), "", {}});
  LoadedModel draft = load_model(ModelSource{test::shared_path("models/test/llama-spm-q4_0.gguf"), "", {}});
  check_same_vocabulary(target.model->file(), draft.model->file(), "llama-spm-q4_0.gguf");
  const std::vector<int32_t> prompt = target.tokenizer->encode("The quick brown fox", true, false);
  const std::vector<int32_t> expected = plain_greedy(*target.model, prompt, kNewTokens);
  for (int32_t gamma : {1, 2, 4, 8}) {
    DraftModelProposer proposer(*draft.model, greedy_params(), 1, "q4_0");
    SpeculativeStats stats;
    EXPECT_EQ(speculative_greedy(*target.model, proposer, gamma, prompt, kNewTokens, &stats), expected) << gamma;
    std::printf("f16 target, q4_0 draft, gamma %d: alpha %.3f, tokens/pass %.2f\n", gamma, stats.acceptance_rate(),
                stats.tokens_per_pass());
  }
}

// Prompt lookup on a repetitive prompt: stories260K (260K parameters) does not copy long passages,
// but after a sentence repeated eight times its own output keeps repeating short phrases, which the
// n-gram proposer drafts from the prompt and the output (measured: 2.91 tokens per pass).
TEST(SpeculativeGreedy, NgramLookupOnRepetitivePromptGivesMoreThanTwoTokensPerPass) {
  NUCLEUS_REQUIRE_SHARED();
  LoadedModel loaded = load_model(ModelSource{test::shared_path("models/stories260K.gguf"), "", {}});
  std::string text;
  for (int i = 0; i < 8; ++i) text += "The cat sat on the mat. ";
  const std::vector<int32_t> prompt = loaded.tokenizer->encode(text, true, false);
  const int64_t n_new = 96;
  NgramProposer ngram(1, 4);
  SpeculativeStats stats;
  const std::vector<int32_t> tokens = speculative_greedy(*loaded.model, ngram, 4, prompt, n_new, &stats);
  EXPECT_EQ(tokens, plain_greedy(*loaded.model, prompt, n_new));
  std::printf("stories260K, n-gram, gamma 4, repetitive prompt: alpha %.3f, tokens/pass %.2f (%lld passes)\n",
              stats.acceptance_rate(), stats.tokens_per_pass(), static_cast<long long>(stats.num_passes));
  EXPECT_GT(stats.tokens_per_pass(), 2.0);
}

}  // namespace
}  // namespace nucleus
