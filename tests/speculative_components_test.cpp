// Speculative decoding pieces with exact fixtures: the rejection sampler (exact cases and a
// statistical check of one verification step), the n-gram proposer, the rollback runner, the
// vocabulary check, the layer-prefix model, and the generator with a perfect draft.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "speculative/draft_model_proposer.h"
#include "speculative/ngram_proposer.h"
#include "speculative/rejection_sampler.h"
#include "speculative/self_speculation.h"
#include "speculative/speculative_generator.h"
#include "speculative_tiny_model.h"

namespace nucleus {
namespace {

TEST(RejectionSampler, GreedyAcceptsWhileDraftIsArgmax) {
  const std::vector<int32_t> draft = {5, 6, 7};
  EXPECT_EQ(verify_greedy(draft, std::vector<int32_t>{5, 6, 7, 8}).num_accepted, 3);
  EXPECT_EQ(verify_greedy(draft, std::vector<int32_t>{5, 6, 7, 8}).token, 8);
  EXPECT_EQ(verify_greedy(draft, std::vector<int32_t>{5, 9}).num_accepted, 1);
  EXPECT_EQ(verify_greedy(draft, std::vector<int32_t>{5, 9}).token, 9);
  EXPECT_EQ(verify_greedy(draft, std::vector<int32_t>{4}).num_accepted, 0);
  EXPECT_EQ(verify_greedy({}, std::vector<int32_t>{3}).token, 3);
}

TEST(RejectionSampler, CertainCases) {
  // p puts all mass on token 2: a draft of 2 is always accepted, any other always rejected → 2.
  const std::vector<float> p = {0, 0, 1, 0, /*bonus row*/ 0, 1, 0, 0};
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const std::vector<int32_t> good = {2};
    VerificationResult r = verify_sampled(good, p.data(), nullptr, 4, seed, 0);
    EXPECT_EQ(r.num_accepted, 1);
    EXPECT_EQ(r.token, 1);  // the bonus row's only token
    const std::vector<int32_t> bad = {3};
    r = verify_sampled(bad, p.data(), nullptr, 4, seed, 0);
    EXPECT_EQ(r.num_accepted, 0);
    EXPECT_EQ(r.token, 2);
  }
}

TEST(RejectionSampler, DrawFromWeightsSkipsZeroWeights) {
  const std::vector<float> w = {0, 1, 0, 1, 0};
  EXPECT_EQ(draw_from_weights(w.data(), 5, 0.0), 1);
  EXPECT_EQ(draw_from_weights(w.data(), 5, 0.49), 1);
  EXPECT_EQ(draw_from_weights(w.data(), 5, 0.51), 3);
  EXPECT_EQ(draw_from_weights(w.data(), 5, 0.999999), 3);
}

// One verification step with x ~ q: the emitted token must follow p; the acceptance rate must be
// Σ min(p, q). Chi-square over 8 tokens, 10^6 draws (critical value 24.3 for df 7 at p = 1e-3).
double one_step_chi_square(const std::vector<float>& p, const std::vector<float>* q, int32_t fixed_draft,
                           double* acceptance) {
  const int64_t n_vocab = static_cast<int64_t>(p.size());
  std::vector<float> rows(p);
  rows.insert(rows.end(), p.begin(), p.end());  // the bonus row (unused with one draft accepted… still read)
  std::vector<int64_t> counts(p.size(), 0);
  const int64_t n = 1000000;
  int64_t accepted = 0;
  for (int64_t s = 0; s < n; ++s) {
    const uint64_t seed = splitmix64(static_cast<uint64_t>(s));
    const int32_t x = q ? draw_from_weights(q->data(), n_vocab, uniform_at(seed, 0, kDraftStream)) : fixed_draft;
    const std::vector<int32_t> draft = {x};
    const VerificationResult r = verify_sampled(draft, rows.data(), q ? q->data() : nullptr, n_vocab, seed, 0);
    accepted += r.num_accepted;
    ++counts[static_cast<size_t>(r.num_accepted == 1 ? x : r.token)];
  }
  *acceptance = static_cast<double>(accepted) / static_cast<double>(n);
  double chi = 0.0;
  for (size_t t = 0; t < p.size(); ++t) {
    const double expected = p[t] * static_cast<double>(n);
    chi += (counts[t] - expected) * (counts[t] - expected) / expected;
  }
  return chi;
}

TEST(RejectionSampler, OneStepFollowsTarget) {
  const std::vector<float> p = {0.30f, 0.20f, 0.15f, 0.10f, 0.10f, 0.08f, 0.05f, 0.02f};
  const std::vector<float> q = {0.05f, 0.05f, 0.40f, 0.02f, 0.30f, 0.08f, 0.05f, 0.05f};
  double acceptance = 0.0;
  EXPECT_LT(one_step_chi_square(p, &q, -1, &acceptance), 24.3);
  double overlap = 0.0;
  for (size_t t = 0; t < p.size(); ++t) overlap += std::min(p[t], q[t]);
  EXPECT_NEAR(acceptance, overlap, 0.003);
  // One-hot q (n-gram): acceptance is p(x).
  EXPECT_LT(one_step_chi_square(p, nullptr, 2, &acceptance), 24.3);
  EXPECT_NEAR(acceptance, 0.15, 0.003);
}

TEST(NgramProposer, ProposesWhatFollowedTheLongestMatch) {
  NgramProposer ngram(1, 3);
  DraftProposal proposal;
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 9, 3, 7, 1, 2, 3};
  ngram.propose(DraftRequest{tokens, 4, 3, 0, 0}, proposal);
  EXPECT_EQ(proposal.tokens, (std::vector<int32_t>{4, 9, 3}));  // "1 2 3" at 0, not "3" at 5
  EXPECT_TRUE(proposal.probs.empty());
  ngram.propose(DraftRequest{tokens, 4, 8, 0, 0}, proposal);  // the continuation runs to the end
  EXPECT_EQ(proposal.tokens, (std::vector<int32_t>{4, 9, 3, 7, 1, 2, 3}));
  const std::vector<int32_t> fresh = {1, 2, 3, 4, 5};
  ngram.propose(DraftRequest{fresh, 5, 3, 0, 0}, proposal);
  EXPECT_TRUE(proposal.tokens.empty());
  NgramProposer bigram(2, 2);
  const std::vector<int32_t> single = {5, 6, 7, 6};  // only a 1-gram match ("6")
  bigram.propose(DraftRequest{single, 4, 3, 0, 0}, proposal);
  EXPECT_TRUE(proposal.tokens.empty());
  EXPECT_THROW(NgramProposer(0, 2), Error);
  EXPECT_THROW(NgramProposer(3, 2), Error);
}

TEST(SequenceRunner, TruncateThenFeedEqualsFreshFeed) {
  auto model = test::make_tiny_model(test::TinyModelSpec{});
  SequenceRunner fresh(*model, 32, 1), rolled(*model, 32, 1);
  const std::vector<int32_t> kept = {1, 5, 6}, rejected = {7, 8, 9}, accepted = {10, 11};
  std::vector<int32_t> all = kept;
  all.insert(all.end(), accepted.begin(), accepted.end());
  const std::vector<float> expected = fresh.feed(all);
  rolled.feed(kept);
  rolled.feed(rejected, true);
  rolled.truncate(3);
  EXPECT_EQ(rolled.cached_tokens(), kept);
  EXPECT_EQ(rolled.feed(accepted), expected);  // bit-identical
  EXPECT_EQ(rolled.keep_common_prefix(std::vector<int32_t>{1, 5, 4}, 10), 2);
  EXPECT_THROW(rolled.truncate(3), Error);
}

TEST(DraftModelProposer, VocabularyMismatchNamesTheToken) {
  auto target = test::make_tiny_model(test::TinyModelSpec{});
  test::TinyModelSpec other;
  other.first_token_text = "xyz";
  auto draft = test::make_tiny_model(other);
  EXPECT_NO_THROW(check_same_vocabulary(target->file(), target->file(), "same.gguf"));
  try {
    check_same_vocabulary(target->file(), draft->file(), "draft.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "draft.gguf: vocabulary differs from the target's: token 3 is 'xyz' vs the target's '$'");
  }
  test::TinyModelSpec bigger;
  bigger.n_vocab = 40;
  auto big = test::make_tiny_model(bigger);
  EXPECT_THROW(check_same_vocabulary(target->file(), big->file(), "big.gguf"), Error);
}

TEST(SelfSpeculation, AllLayersIsTheTargetAndKIsChecked) {
  auto target = test::make_tiny_model(test::TinyModelSpec{});
  auto whole = load_layer_prefix_model(*target, 2);
  auto first = load_layer_prefix_model(*target, 1);
  EXPECT_EQ(first->hparams().n_layer, 1);
  SequenceRunner a(*target, 16, 1), b(*whole, 16, 1), c(*first, 16, 1);
  const std::vector<int32_t> tokens = {1, 4, 5, 6};
  EXPECT_EQ(a.feed(tokens), b.feed(tokens));
  EXPECT_NE(a.feed(std::vector<int32_t>{7}), c.feed(tokens));
  EXPECT_THROW(load_layer_prefix_model(*target, 0), Error);
  EXPECT_THROW(load_layer_prefix_model(*target, 3), Error);
}

TEST(SpeculativeGenerator, PerfectDraftAcceptsEverything) {
  auto target = test::make_tiny_model(test::TinyModelSpec{});
  SamplingParams params;
  params.temperature = 0.8f;
  params.top_p = 0.9f;
  auto same_proposer = make_self_speculation_proposer(*target, 2, params, 1);  // all layers: q == p
  Proposer& same = *same_proposer;
  SpeculativeGenerator generator(*target, same, params, 4, 64, 1);
  const std::vector<int32_t> prompt = {1, 3, 4};
  generator.start(prompt, 20, 42);
  while (!generator.finished()) generator.step();
  EXPECT_EQ(generator.n_generated(), 20);
  EXPECT_EQ(generator.stats().num_accepted, generator.stats().num_proposed);
  EXPECT_EQ(generator.stats().num_passes, 4);  // 5 + 5 + 5 + 5
  EXPECT_DOUBLE_EQ(generator.stats().tokens_per_pass(), 5.0);
  // The same seed replays the same tokens.
  const std::vector<int32_t> first = generator.tokens();
  generator.start(prompt, 20, 42);
  while (!generator.finished()) generator.step();
  EXPECT_EQ(generator.tokens(), first);
  EXPECT_THROW(generator.start({}, 4, 1), Error);
  EXPECT_THROW(generator.start(prompt, 62, 1), Error);
}

}  // namespace
}  // namespace nucleus
