// Reproducibility on the real model: a seed gives the same tokens across runs and thread counts;
// different seeds differ; n > 1 samples that share one prefill and its KV blocks equal the same
// samples run one by one; and the CLI keeps all of it (and prints the seed it used).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/model_source.h"
#include "engine/sequence_group_runner.h"
#include "model/sequence_runner.h"
#include "sampling/sampler.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

using test::run_nucleus;
using test::shared_path;

struct Stories {
  LoadedModel loaded;
  std::vector<int32_t> prompt;
  Stories() {
    ModelSource source;
    source.model_path = shared_path("models/stories260K.gguf");
    loaded = load_model(source);
    prompt = loaded.tokenizer->encode("Once upon a time", true, false);
  }
  int64_t n_vocab() const { return loaded.model->hparams().n_vocab; }
};

SamplingParams creative(uint64_t seed) {
  SamplingParams p;
  p.seed = seed;
  p.temperature = 1.1f;
  p.top_p = 0.95f;
  p.repetition_penalty = 1.1f;
  return p;
}

// One sequence, sampled token by token through SequenceRunner with `n_threads`.
std::vector<int32_t> sample_alone(Stories& s, const SamplingParams& params, int n_tokens, int n_threads) {
  SequenceRunner runner(*s.loaded.model, static_cast<int64_t>(s.prompt.size()) + n_tokens, n_threads);
  SamplerChain chain(params);
  std::vector<int32_t> sequence = s.prompt, out;
  const std::vector<float>* logits = &runner.feed(s.prompt);
  for (int i = 0; i < n_tokens; ++i) {
    const int32_t token = chain.sample(logits->data(), s.n_vocab(), SamplingContext{sequence, static_cast<uint64_t>(i)});
    out.push_back(token);
    sequence.push_back(token);
    if (i + 1 < n_tokens) logits = &runner.feed({token});
  }
  return out;
}

TEST(Reproducibility, SameSeedSameTokensAcrossRunsAndThreadCounts) {
  NUCLEUS_REQUIRE_SHARED();
  Stories s;
  const auto one_thread = sample_alone(s, creative(1234), 80, 1);
  EXPECT_EQ(sample_alone(s, creative(1234), 80, 1), one_thread);
  EXPECT_EQ(sample_alone(s, creative(1234), 80, 2), one_thread);
  EXPECT_EQ(sample_alone(s, creative(1234), 80, 3), one_thread);
  const auto other = sample_alone(s, creative(1235), 80, 1);
  EXPECT_NE(other, one_thread);
}

TEST(Reproducibility, SamplesSharingOnePrefillEqualSamplesRunAlone) {
  NUCLEUS_REQUIRE_SHARED();
  Stories s;
  constexpr int kSamples = 4, kTokens = 40;
  const SamplingParams params = creative(77);
  SequenceGroupRunner group(*s.loaded.model,
                            SequenceGroupRunner::blocks_needed(static_cast<int64_t>(s.prompt.size()), kTokens, kSamples, 16),
                            static_cast<int64_t>(s.prompt.size()) + kTokens, 2);
  const auto root = group.prefill(s.prompt);
  const int64_t free_after_prefill = group.num_free_blocks();
  std::vector<SequenceGroupRunner::SequenceId> ids;
  std::vector<SamplerChain> chains;
  std::vector<std::vector<int32_t>> sequences(kSamples, s.prompt), outputs(kSamples);
  for (int i = 0; i < kSamples; ++i) {
    ids.push_back(group.fork(root));
    SamplingParams own = params;
    own.seed = sample_seed(*params.seed, static_cast<uint64_t>(i));
    chains.emplace_back(own);
  }
  EXPECT_EQ(group.num_free_blocks(), free_after_prefill);  // forks share: no block allocated
  group.release(root);

  std::vector<float> logits;
  for (int i = 0; i < kSamples; ++i) logits.insert(logits.end(), group.logits().begin(), group.logits().end());
  for (int position = 0; position < kTokens; ++position) {
    std::vector<int32_t> tokens;
    for (int i = 0; i < kSamples; ++i) {
      const float* row = logits.data() + static_cast<size_t>(i) * static_cast<size_t>(s.n_vocab());
      const int32_t token = chains[static_cast<size_t>(i)].sample(row, s.n_vocab(),
                                                                   SamplingContext{sequences[static_cast<size_t>(i)], static_cast<uint64_t>(position)});
      tokens.push_back(token);
      sequences[static_cast<size_t>(i)].push_back(token);
      outputs[static_cast<size_t>(i)].push_back(token);
    }
    if (position + 1 < kTokens) logits = group.step(ids, tokens);
  }
  // The prompt (5 tokens) fills part of one block: each sample copied it once, on its first write.
  EXPECT_EQ(group.num_block_copies(), kSamples - 1);

  for (int i = 0; i < kSamples; ++i) {
    SamplingParams own = params;
    own.seed = sample_seed(*params.seed, static_cast<uint64_t>(i));
    EXPECT_EQ(outputs[static_cast<size_t>(i)], sample_alone(s, own, kTokens, 1)) << "sample " << i;
  }
  EXPECT_NE(outputs[0], outputs[1]);
}

TEST(SequenceGroupRunner, BlocksAreSharedCopiedOnWriteAndFreed) {
  NUCLEUS_REQUIRE_SHARED();
  Stories s;
  std::vector<int32_t> prompt(20, 0);  // 20 tokens: one full block of 16 and a partial one
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(300 + i);
  SequenceGroupRunner group(*s.loaded.model, 10, 64, 1);
  const auto root = group.prefill(prompt);
  EXPECT_EQ(group.num_free_blocks(), 8);
  const auto a = group.fork(root), b = group.fork(root);
  EXPECT_EQ(group.num_free_blocks(), 8);
  const std::vector<SequenceGroupRunner::SequenceId> both = {a, b};
  const std::vector<int32_t> tokens = {401, 402};
  group.step(both, tokens);
  // a and b each copied the partial block (the root still holds the original); the full block stays shared.
  EXPECT_EQ(group.num_block_copies(), 2);
  EXPECT_EQ(group.num_free_blocks(), 6);
  group.release(root);
  EXPECT_EQ(group.num_free_blocks(), 7);
  group.release(a);
  group.release(b);
  EXPECT_EQ(group.num_free_blocks(), 10);
  EXPECT_EQ(group.length(group.prefill(prompt)), 20);
}

// ---- through the CLI ----

std::string quote(const std::string& s) { return "'" + s + "'"; }

std::string generate(const std::string& flags) {
  auto r = run_nucleus("generate -m " + quote(shared_path("models/stories260K.gguf")) + " -p 'Once upon a time' " + flags);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(CliSampling, SeedReproducesAcrossThreadCountsAndDiffersAcrossSeeds) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string flags = " -n 60 --temp 0.9 --top-k 40 --top-p 0.9 --min-p 0.02 --repeat-penalty 1.1 ";
  const std::string one = generate(flags + "-s 42 -t 1");
  EXPECT_EQ(generate(flags + "-s 42 -t 2"), one);
  EXPECT_EQ(generate(flags + "-s 42 -t 1"), one);
  EXPECT_NE(generate(flags + "-s 43 -t 1"), one);
}

TEST(CliSampling, RandomSeedIsReportedAndReplays) {
  NUCLEUS_REQUIRE_SHARED();
  auto r = run_nucleus("generate -m " + quote(shared_path("models/stories260K.gguf")) + " -p 'Once upon a time' -n 40");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.err.find("seed: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string seed = r.err.substr(at + 6, r.err.find_first_not_of("0123456789", at + 6) - at - 6);
  EXPECT_EQ(generate("-n 40 -s " + seed), r.out);
}

TEST(CliSampling, BeamWidthOneEqualsGreedy) {
  NUCLEUS_REQUIRE_SHARED();
  EXPECT_EQ(generate("-n 50 --beams 1"), generate("-n 50 --temp 0"));
}

TEST(CliSampling, SamplesShareThePromptAndSampleZeroIsTheSingleRun) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string single = generate("-n 30 --temp 0.8 -s 5");
  std::istringstream lines(generate("-n 30 --temp 0.8 -s 5 --n 3"));
  std::string line;
  std::vector<std::string> texts;
  while (std::getline(lines, line)) texts.push_back(nlohmann::json::parse(line)["text"]);
  ASSERT_EQ(texts.size(), 3u);
  EXPECT_EQ(texts[0] + "\n", single);
  EXPECT_NE(texts[0], texts[1]);
}

TEST(CliSampling, LogprobsLinesAndStopStrings) {
  NUCLEUS_REQUIRE_SHARED();
  std::istringstream lines(generate("-n 8 --temp 0 --logprobs 3"));
  std::string line;
  int tokens = 0;
  std::string text;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("finish_reason")) {
      EXPECT_EQ(j["finish_reason"], "length");
      EXPECT_EQ(j["text"].get<std::string>(), text);
      continue;
    }
    ++tokens;
    text += j["text"].get<std::string>();
    ASSERT_EQ(j["top_logprobs"].size(), 3u);
    EXPECT_EQ(j["top_logprobs"][0]["token"], j["token"]);  // greedy: the chosen token is the top one
    EXPECT_LE(j["logprob"].get<double>(), 0.0);
  }
  EXPECT_EQ(tokens, 8);

  const std::string greedy = generate("-n 40 --temp 0");
  const std::string stopped = generate("-n 40 --temp 0 --stop 'girl nam'");
  ASSERT_NE(greedy.find("girl nam"), std::string::npos);
  EXPECT_EQ(stopped, greedy.substr(0, greedy.find("girl nam")) + "\n");
}

}  // namespace
}  // namespace nucleus
