// Beam search: equal to exhaustive search on a synthetic table-driven model wherever the beam is wide
// enough to be exhaustive, equal to greedy at width 1, and on the real model equal whether the beams
// share KV blocks (copy-on-write) or recompute every sequence from scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/rng.h"
#include "engine/model_source.h"
#include "engine/sequence_group_runner.h"
#include "model/sequence_runner.h"
#include "sampling/beam_search.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

// A synthetic model: the logits after a sequence are a fixed table indexed by the whole sequence —
// pseudo-random values in [-3, 3) drawn from a hash of its tokens, so every prefix has its own
// distribution and no two scores tie.
class TableModel {
 public:
  TableModel(int32_t n_vocab, uint64_t salt) : n_vocab_(n_vocab), salt_(salt) {}
  int32_t n_vocab() const { return n_vocab_; }

  std::vector<float> logits_after(const std::vector<int32_t>& sequence) const {
    uint64_t h = splitmix64(salt_);
    for (int32_t t : sequence) h = splitmix64(h ^ static_cast<uint64_t>(t + 1));
    std::vector<float> logits(static_cast<size_t>(n_vocab_));
    for (int32_t t = 0; t < n_vocab_; ++t)
      logits[static_cast<size_t>(t)] = static_cast<float>(uniform_at(h, static_cast<uint64_t>(t)) * 6.0 - 3.0);
    return logits;
  }

  // The beam_search callback: tracks the live sequences the way a real runner tracks KV.
  NextTokenLogits callback(const std::vector<int32_t>& prompt) {
    return [this, prompt](std::span<const int32_t> parents, std::span<const int32_t> tokens, float* out) {
      std::vector<std::vector<int32_t>> next;
      if (parents.empty()) next.push_back(prompt);
      for (size_t i = 0; i < parents.size(); ++i) {
        next.push_back(live_.at(static_cast<size_t>(parents[i])));
        next.back().push_back(tokens[i]);
      }
      live_ = std::move(next);
      for (size_t i = 0; i < live_.size(); ++i) {
        const auto row = logits_after(live_[i]);
        std::copy(row.begin(), row.end(), out + i * static_cast<size_t>(n_vocab_));
      }
    };
  }

 private:
  int32_t n_vocab_;
  uint64_t salt_;
  std::vector<std::vector<int32_t>> live_;
};

std::vector<double> log_softmax(const std::vector<float>& logits) {
  double max = -INFINITY, sum = 0.0;
  for (float l : logits) max = std::max(max, static_cast<double>(l));
  for (float l : logits) sum += std::exp(l - max);
  std::vector<double> out;
  for (float l : logits) out.push_back(l - max - std::log(sum));
  return out;
}

// The log-probs the search uses for the next token: bans for min_new_tokens and repeated n-grams.
std::vector<double> next_logprobs(const TableModel& model, const BeamSearchParams& p, const std::vector<int32_t>& prompt,
                                  const std::vector<int32_t>& generated) {
  std::vector<int32_t> sequence = prompt;
  sequence.insert(sequence.end(), generated.begin(), generated.end());
  std::vector<double> lp = log_softmax(model.logits_after(sequence));
  if (static_cast<int32_t>(generated.size()) < p.min_new_tokens)
    for (int32_t e : p.end_of_generation_ids) lp[static_cast<size_t>(e)] = -INFINITY;
  for (int32_t t : banned_ngram_tokens(sequence, p.no_repeat_ngram_size)) lp[static_cast<size_t>(t)] = -INFINITY;
  return lp;
}

bool is_end(const BeamSearchParams& p, int32_t t) {
  return std::find(p.end_of_generation_ids.begin(), p.end_of_generation_ids.end(), t) != p.end_of_generation_ids.end();
}

// Every complete sequence: ended by an end-of-generation token, or max_new_tokens long.
void enumerate(const TableModel& model, const BeamSearchParams& p, const std::vector<int32_t>& prompt,
               std::vector<int32_t>& generated, double sum, std::vector<BeamHypothesis>& out) {
  const std::vector<double> lp = next_logprobs(model, p, prompt, generated);
  for (int32_t t = 0; t < model.n_vocab(); ++t) {
    if (lp[static_cast<size_t>(t)] == -INFINITY) continue;
    generated.push_back(t);
    const double s = sum + lp[static_cast<size_t>(t)];
    if (is_end(p, t) || static_cast<int32_t>(generated.size()) == p.max_new_tokens) {
      const double score = s / std::pow(static_cast<double>(generated.size()), static_cast<double>(p.length_penalty));
      out.push_back({generated, s, score, is_end(p, t)});
    } else {
      enumerate(model, p, prompt, generated, s, out);
    }
    generated.pop_back();
  }
}

std::vector<BeamHypothesis> exhaustive_best(const TableModel& model, const BeamSearchParams& p,
                                            const std::vector<int32_t>& prompt) {
  std::vector<BeamHypothesis> all;
  std::vector<int32_t> generated;
  enumerate(model, p, prompt, generated, 0.0, all);
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
  all.resize(std::min(all.size(), static_cast<size_t>(p.num_return_sequences)));
  return all;
}

void expect_same(const std::vector<BeamHypothesis>& got, const std::vector<BeamHypothesis>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tokens, want[i].tokens) << what << " rank " << i;
    EXPECT_NEAR(got[i].score, want[i].score, 1e-9) << what << " rank " << i;
    EXPECT_EQ(got[i].ended_by_end_of_generation, want[i].ended_by_end_of_generation) << what << " rank " << i;
  }
}

int32_t power(int32_t base, int32_t exponent) {
  int32_t r = 1;
  for (int32_t i = 0; i < exponent; ++i) r *= base;
  return r;
}

TEST(BeamSearch, EqualsExhaustiveSearchWhenTheBeamCoversEverySequence) {
  constexpr int32_t kDepth = 4;
  const std::vector<int32_t> prompt = {1, 2};
  for (int32_t vocab : {3, 5, 8}) {
    const TableModel model(vocab, static_cast<uint64_t>(vocab) * 7919);
    // The beam is exhaustive when every extension of every live sequence fits in it:
    // (vocab − 1)^(depth − 1) live sequences × vocab tokens; vocab^depth is the brief's width.
    const int32_t minimal = power(vocab - 1, kDepth - 1) * vocab;
    for (int32_t width : {minimal, power(vocab, kDepth)}) {
      for (float alpha : {0.0f, 0.5f, 1.0f, 2.0f}) {
        for (EarlyStopping mode : {EarlyStopping::heuristic, EarlyStopping::immediately, EarlyStopping::never}) {
          BeamSearchParams p;
          p.num_beams = width;
          p.length_penalty = alpha;
          p.early_stopping = mode;
          p.num_return_sequences = 3;
          p.max_new_tokens = kDepth;
          p.end_of_generation_ids = {vocab - 1};
          TableModel runner = model;
          const std::string what = "vocab " + std::to_string(vocab) + " width " + std::to_string(width) + " alpha " +
                                   std::to_string(alpha) + " mode " + std::to_string(static_cast<int>(mode));
          expect_same(beam_search(p, prompt, vocab, runner.callback(prompt)), exhaustive_best(model, p, prompt), what);
        }
      }
    }
  }
}

TEST(BeamSearch, EqualsExhaustiveSearchWithBansAndTwoEndTokens) {
  const std::vector<int32_t> prompt = {0, 1, 0};
  const int32_t vocab = 6;
  const TableModel model(vocab, 4242);
  BeamSearchParams p;
  p.num_beams = power(vocab, 4);
  p.num_return_sequences = 5;
  p.max_new_tokens = 4;
  p.min_new_tokens = 2;
  p.no_repeat_ngram_size = 2;  // "0 1" is in the prompt: after a 0, 1 is banned
  p.end_of_generation_ids = {4, 5};
  TableModel runner = model;
  expect_same(beam_search(p, prompt, vocab, runner.callback(prompt)), exhaustive_best(model, p, prompt), "bans");
}

// Greedy decoding with the same bans and end rule.
std::vector<int32_t> greedy(const TableModel& model, const BeamSearchParams& p, const std::vector<int32_t>& prompt) {
  std::vector<int32_t> generated;
  while (static_cast<int32_t>(generated.size()) < p.max_new_tokens) {
    const std::vector<double> lp = next_logprobs(model, p, prompt, generated);
    const auto best = static_cast<int32_t>(std::max_element(lp.begin(), lp.end()) - lp.begin());
    generated.push_back(best);
    if (is_end(p, best)) break;
  }
  return generated;
}

TEST(BeamSearch, WidthOneIsGreedy) {
  const std::vector<int32_t> prompt = {3};
  for (uint64_t salt = 0; salt < 40; ++salt) {
    const int32_t vocab = 4 + static_cast<int32_t>(salt % 5);
    const TableModel model(vocab, salt);
    for (EarlyStopping mode : {EarlyStopping::heuristic, EarlyStopping::immediately}) {
      for (float alpha : {0.0f, 1.0f, 3.0f}) {
        BeamSearchParams p;
        p.num_beams = 1;
        p.max_new_tokens = 12;
        p.length_penalty = alpha;
        p.early_stopping = mode;
        p.end_of_generation_ids = {0};
        TableModel runner = model;
        const auto result = beam_search(p, prompt, vocab, runner.callback(prompt));
        ASSERT_EQ(result.size(), 1u);
        EXPECT_EQ(result[0].tokens, greedy(model, p, prompt)) << "salt " << salt;
      }
    }
  }
}

TEST(BeamSearch, NoRepeatNgramBans) {
  const std::vector<int32_t> s = {5, 1, 2, 7, 1, 2, 9, 1};
  EXPECT_EQ(banned_ngram_tokens(s, 2), (std::vector<int32_t>{2}));   // "1 2" seen twice: after 1, ban 2
  EXPECT_EQ(banned_ngram_tokens(s, 3), (std::vector<int32_t>{}));    // "9 1 ?" never seen
  EXPECT_EQ(banned_ngram_tokens(std::vector<int32_t>{1, 2, 1}, 3), (std::vector<int32_t>{}));
  EXPECT_EQ(banned_ngram_tokens(std::vector<int32_t>{1, 2, 3, 1, 2}, 3), (std::vector<int32_t>{3}));
  EXPECT_EQ(banned_ngram_tokens(s, 1), (std::vector<int32_t>{1, 2, 5, 7, 9}));  // size 1: no token twice
  EXPECT_EQ(banned_ngram_tokens(s, 0), (std::vector<int32_t>{}));
}

TEST(BeamSearch, InvalidParamsAreErrors) {
  TableModel model(4, 1);
  BeamSearchParams p;
  p.num_beams = 2;
  p.num_return_sequences = 3;
  EXPECT_THROW(beam_search(p, {}, 4, model.callback({})), Error);
  p.num_beams = 0;
  p.num_return_sequences = 1;
  EXPECT_THROW(beam_search(p, {}, 4, model.callback({})), Error);
}

// ---- on the real model ----

struct RealModel {
  LoadedModel loaded;
  RealModel() {
    ModelSource source;
    source.model_path = test::shared_path("models/stories260K.gguf");
    loaded = load_model(source);
  }
  Model& model() { return *loaded.model; }
  int64_t n_vocab() { return loaded.model->hparams().n_vocab; }
};

TEST(BeamSearchOnModel, SharedCopyOnWriteBlocksEqualRecomputingEverySequence) {
  NUCLEUS_REQUIRE_SHARED();
  RealModel real;
  const std::vector<int32_t> prompt = real.loaded.tokenizer->encode("Once upon a time, there was a", true, false);
  ASSERT_GT(prompt.size() % 16, 0u);  // the prompt ends inside a block: forks must copy it on write
  BeamSearchParams p;
  p.num_beams = 4;
  p.num_return_sequences = 4;
  p.max_new_tokens = 24;  // crosses a block boundary
  p.end_of_generation_ids = real.loaded.tokenizer->end_of_generation_ids();

  // Shared: one prefill, beams fork and copy only partial blocks.
  SequenceGroupRunner group(real.model(), SequenceGroupRunner::blocks_needed(static_cast<int64_t>(prompt.size()), 24, 4, 16),
                            static_cast<int64_t>(prompt.size()) + 24, 2);
  std::vector<SequenceGroupRunner::SequenceId> live = {group.prefill(prompt)};
  int64_t forward_tokens_shared = static_cast<int64_t>(prompt.size());
  auto shared = [&](std::span<const int32_t> parents, std::span<const int32_t> tokens, float* out) {
    if (parents.empty()) {
      std::copy(group.logits().begin(), group.logits().end(), out);
      return;
    }
    std::vector<SequenceGroupRunner::SequenceId> children;
    for (int32_t parent : parents) children.push_back(group.fork(live[static_cast<size_t>(parent)]));
    for (auto old : live) group.release(old);
    live = children;
    const auto& logits = group.step(live, tokens);
    std::copy(logits.begin(), logits.end(), out);
    forward_tokens_shared += static_cast<int64_t>(tokens.size());
  };
  const auto with_sharing = beam_search(p, prompt, real.n_vocab(), shared);

  // Recomputed: every sequence of every step is run from scratch through its own contiguous cache.
  std::vector<std::vector<int32_t>> sequences;
  auto recompute = [&](std::span<const int32_t> parents, std::span<const int32_t> tokens, float* out) {
    std::vector<std::vector<int32_t>> next;
    if (parents.empty()) next.push_back(prompt);
    for (size_t i = 0; i < parents.size(); ++i) {
      next.push_back(sequences[static_cast<size_t>(parents[i])]);
      next.back().push_back(tokens[i]);
    }
    sequences = next;
    for (size_t i = 0; i < sequences.size(); ++i) {
      SequenceRunner alone(real.model(), static_cast<int64_t>(sequences[i].size()), 1);
      const auto& logits = alone.feed(sequences[i]);
      std::copy(logits.begin(), logits.end(), out + i * static_cast<size_t>(real.n_vocab()));
    }
  };
  const auto without_sharing = beam_search(p, prompt, real.n_vocab(), recompute);

  ASSERT_EQ(with_sharing.size(), 4u);
  for (size_t i = 0; i < with_sharing.size(); ++i) {
    EXPECT_EQ(with_sharing[i].tokens, without_sharing[i].tokens) << i;
    EXPECT_EQ(with_sharing[i].sum_logprobs, without_sharing[i].sum_logprobs) << i;  // bit-identical logits
  }
  EXPECT_GT(group.num_block_copies(), 0);
  // One prefill, then one token per beam per step: the prefix is never recomputed.
  EXPECT_LE(forward_tokens_shared, static_cast<int64_t>(prompt.size()) + 4 * 24);
}

TEST(BeamSearchOnModel, WidthOneEqualsGreedyDecoding) {
  NUCLEUS_REQUIRE_SHARED();
  RealModel real;
  const std::vector<int32_t> prompt = real.loaded.tokenizer->encode("Once upon a time", true, false);
  BeamSearchParams p;
  p.num_beams = 1;
  p.max_new_tokens = 40;
  p.end_of_generation_ids = real.loaded.tokenizer->end_of_generation_ids();
  std::vector<int32_t> sequence = prompt;
  auto callback = [&](std::span<const int32_t>, std::span<const int32_t> tokens, float* out) {
    sequence.insert(sequence.end(), tokens.begin(), tokens.end());
    SequenceRunner alone(real.model(), static_cast<int64_t>(sequence.size()), 1);
    const auto& logits = alone.feed(sequence);
    std::copy(logits.begin(), logits.end(), out);
  };
  const auto result = beam_search(p, prompt, real.n_vocab(), callback);

  SequenceRunner runner(real.model(), static_cast<int64_t>(prompt.size()) + 40, 1);
  std::vector<int32_t> greedy_tokens;
  const std::vector<float>* logits = &runner.feed(prompt);
  for (int i = 0; i < 40; ++i) {
    const auto token = static_cast<int32_t>(std::max_element(logits->begin(), logits->end()) - logits->begin());
    greedy_tokens.push_back(token);
    if (real.loaded.tokenizer->is_end_of_generation(token)) break;
    if (i + 1 < 40) logits = &runner.feed({token});
  }
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(result[0].tokens, greedy_tokens);
}

}  // namespace
}  // namespace nucleus
