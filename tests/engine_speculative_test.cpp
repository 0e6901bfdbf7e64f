// Speculative decoding inside continuous batching: a speculative request's drafts are verified in
// the same forward pass as every other request's tokens. Checked on real models:
// - a speculative request in the engine gives exactly the tokens of SpeculativeGenerator (the
//   single-sequence reference path) for the same seed, greedy and sampled, with every proposer;
// - speculative and plain requests mixed in one batch (small token budgets that chunk prefills
//   and cut drafts short, a pool small enough to preempt) give each request the tokens and logits
//   it gets alone;
// - greedy speculation equals plain greedy decoding, logits included;
// - rejected drafts' blocks go back to the pool, and the counters add up;
// - requests sharing a draft model draft together: one draft pass per position for all of them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>

#include "core/error.h"
#include "core/rng.h"
#include "engine/llm_engine.h"
#include "engine/model_source.h"
#include "model/synthetic_model.h"
#include "speculative/draft_batch.h"
#include "speculative/draft_model_proposer.h"
#include "speculative/ngram_proposer.h"
#include "speculative/self_speculation.h"
#include "speculative/speculative_generator.h"
#include "engine_test_helpers.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

constexpr int32_t kMaxTokens = 24;

using Result = test::EngineResult;
using test::expect_identical;
using test::random_prompt;

enum class Kind { plain, ngram, draft, self };

// One request of a test: its prompt, sampling, and (when speculative) how to make its proposer.
struct Job {
  std::vector<int32_t> prompt;
  Kind kind = Kind::plain;
  int32_t gamma = 0;
  SamplingParams sampling;
};

class Models {
 public:
  explicit Models(const std::string& target_path) {
    target_ = load_model(ModelSource{target_path, "", {}});
    // A small random draft sharing the target's vocabulary: a poor guesser, so many rejections.
    const std::string draft_path =
        (std::filesystem::temp_directory_path() / ("engine_spec_draft_" + std::to_string(::getpid()) + ".gguf")).string();
    SyntheticModelSpec spec;
    spec.vocab_path = target_path;
    spec.dim = 32, spec.layers = 1, spec.heads = 2, spec.kv_heads = 2, spec.ffn = 64;
    write_synthetic_model(spec, draft_path, 7);
    draft_ = Model::load(GgufFile::open(draft_path));
    std::filesystem::remove(draft_path);
    draft_batch_ = std::make_shared<DraftBatch>(*draft_, 1);
  }
  Model& target() { return *target_.model; }
  const Tokenizer& tokenizer() { return *target_.tokenizer; }
  int64_t n_vocab() { return target().hparams().n_vocab; }

  std::shared_ptr<Proposer> proposer(const Job& job, int64_t n_ctx) {
    switch (job.kind) {
      case Kind::ngram: return std::make_shared<NgramProposer>(1, 3);
      // Every draft-model request drafts in one DraftBatch, as `nucleus generate` and the
      // server set it up: the engine then drafts for all of them in shared passes.
      case Kind::draft: return std::make_shared<DraftModelProposer>(draft_batch_, job.sampling, "random-draft");
      case Kind::self: return std::shared_ptr<Proposer>(make_self_speculation_proposer(target(), 1, job.sampling, 1));
      case Kind::plain: break;
    }
    return nullptr;
  }

  RequestOptions options(const Job& job) {
    RequestOptions o;
    o.sampling = job.sampling;
    o.return_logits = true;
    o.stop.max_tokens = kMaxTokens;
    o.stop.ignore_eos = true;
    if (job.kind != Kind::plain) {
      o.proposer = proposer(job, static_cast<int64_t>(job.prompt.size()) + kMaxTokens + job.gamma);
      o.num_speculative_tokens = job.gamma;
    }
    return o;
  }

 private:
  LoadedModel target_;
  std::unique_ptr<Model> draft_;

 public:
  std::shared_ptr<DraftBatch> draft_batch_;
};

// Runs the jobs to completion together in one engine; results by job index.
std::vector<Result> run_engine(Models& models, const EngineConfig& config, const std::vector<Job>& jobs,
                               EngineStats* stats = nullptr) {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestOptions> options;
  for (const Job& job : jobs) {
    prompts.push_back(job.prompt);
    options.push_back(models.options(job));
  }
  return test::run_engine(models.target(), config, prompts, options, stats);
}

EngineConfig config_with(int64_t budget, int64_t num_blocks = 128) {
  EngineConfig c;
  c.max_num_batched_tokens = budget;
  c.num_blocks = num_blocks;
  c.block_size = 16;
  return c;
}

SamplingParams sampled(uint64_t seed, bool top_p) {
  SamplingParams s;
  s.temperature = 0.8f;
  if (top_p) s.top_p = 0.9f;
  s.seed = seed;
  return s;
}

SamplingParams greedy() {
  SamplingParams s;
  s.temperature = 0.0f;
  s.seed = 1;
  return s;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::plain: return "plain";
    case Kind::ngram: return "ngram";
    case Kind::draft: return "draft";
    case Kind::self: return "self:1";
  }
  return "?";
}

// A prompt that repeats a passage, so n-gram lookup has something to find.
std::vector<int32_t> repetitive_prompt(Models& models) {
  return models.tokenizer().encode(
      "Once upon a time, there was a little dog. The dog was happy. Once upon a time, there was a little dog.", true,
      false);
}

class EngineSpeculation : public testing::TestWithParam<const char*> {};

TEST_P(EngineSpeculation, EqualsTheSingleSequenceGeneratorForEveryProposer) {
  NUCLEUS_REQUIRE_SHARED();
  Models models(test::shared_path(GetParam()));
  const std::vector<int32_t> prompt = repetitive_prompt(models);
  for (Kind kind : {Kind::ngram, Kind::draft, Kind::self}) {
    for (const SamplingParams& sampling : {greedy(), sampled(11, false), sampled(12, true)}) {
      const Job job{prompt, kind, 4, sampling};
      const Result in_engine = run_engine(models, config_with(512), {job})[0];

      RequestOptions options = models.options(job);
      SpeculativeGenerator generator(models.target(), *options.proposer, sampling, job.gamma,
                                     static_cast<int64_t>(prompt.size()) + kMaxTokens, 1);
      generator.start(prompt, kMaxTokens, *sampling.seed);
      while (!generator.finished()) generator.step();
      const std::vector<int32_t> expected(generator.tokens().begin() + static_cast<std::ptrdiff_t>(prompt.size()),
                                          generator.tokens().end());
      const std::string what = std::string(kind_name(kind)) + " T=" + std::to_string(sampling.temperature);
      EXPECT_EQ(in_engine.tokens, expected) << what;
      EXPECT_EQ(in_engine.spec.num_passes, generator.stats().num_passes) << what;
      EXPECT_EQ(in_engine.spec.num_accepted, generator.stats().num_accepted) << what;
      EXPECT_EQ(in_engine.spec.num_proposed, generator.stats().num_proposed) << what;
      EXPECT_EQ(in_engine.spec.num_emitted, kMaxTokens) << what;
    }
  }
}

TEST_P(EngineSpeculation, MixedWithPlainRequestsEachGetsItsTokensAlone) {
  NUCLEUS_REQUIRE_SHARED();
  Models models(test::shared_path(GetParam()));
  const int64_t n_vocab = models.n_vocab();
  std::vector<Job> jobs;
  const Kind kinds[] = {Kind::ngram, Kind::plain, Kind::draft, Kind::self};
  const int32_t gammas[] = {1, 2, 4, 8};
  for (int i = 0; i < 12; ++i) {
    Job job;
    job.prompt = i % 3 == 0 ? repetitive_prompt(models) : random_prompt(static_cast<uint64_t>(i) + 1, 5 + 9 * i, n_vocab);
    job.kind = kinds[i % 4];
    job.gamma = job.kind == Kind::plain ? 0 : gammas[(i / 4 + i) % 4];
    job.sampling = i % 2 == 0 ? greedy() : sampled(100 + static_cast<uint64_t>(i), i % 3 == 1);
    jobs.push_back(job);
  }
  std::vector<Result> alone;
  for (const Job& job : jobs) alone.push_back(run_engine(models, config_with(512), {job})[0]);

  struct Setting {
    const char* name;
    EngineConfig config;
  };
  // Budget 7 chunks prefills and cuts drafts short; 24 blocks (384 positions) cannot hold all 12
  // requests at once (≥ 560 positions), so some are preempted and recomputed.
  const Setting settings[] = {{"budget 512", config_with(512)}, {"budget 7", config_with(7)}, {"24 blocks", config_with(64, 24)}};
  for (const Setting& setting : settings) {
    EngineStats stats;
    const std::vector<Result> together = run_engine(models, setting.config, jobs, &stats);
    for (size_t i = 0; i < jobs.size(); ++i)
      expect_identical(alone[i], together[i],
                       std::string(setting.name) + ", job " + std::to_string(i) + " (" + kind_name(jobs[i].kind) + ")");
    int64_t spec_emitted = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const SpeculativeStats& s = together[i].spec;
      if (jobs[i].kind == Kind::plain) {
        EXPECT_EQ(s.num_passes, 0);
        continue;
      }
      EXPECT_EQ(s.num_emitted, s.num_accepted + s.num_passes) << "job " << i;
      EXPECT_LE(s.num_proposed, s.num_passes * jobs[i].gamma) << "job " << i;
      spec_emitted += s.num_emitted;
    }
    EXPECT_EQ(stats.spec.num_emitted, spec_emitted) << setting.name;
    if (std::string(setting.name) == "24 blocks") {
      EXPECT_GT(stats.preemptions, 0) << "the small pool must preempt";
    }
  }
}

TEST_P(EngineSpeculation, RequestsSharingADraftModelDraftInSharedPasses) {
  // Six draft-model requests (greedy and seeded, γ 4) run together: each gets exactly its tokens
  // alone, and the draft model runs about a sixth of the passes the requests take one by one
  // (a pass per draft position for all of them). Every draft block is free at the end.
  NUCLEUS_REQUIRE_SHARED();
  Models models(test::shared_path(GetParam()));
  std::vector<Job> jobs;
  for (int i = 0; i < 6; ++i)
    jobs.push_back(Job{random_prompt(static_cast<uint64_t>(i) + 40, 6 + 5 * i, models.n_vocab()), Kind::draft, 4,
                       i % 2 == 0 ? greedy() : sampled(200 + static_cast<uint64_t>(i), false)});
  std::vector<Result> alone;
  const int64_t passes_before = models.draft_batch_->forward_passes();
  for (const Job& job : jobs) alone.push_back(run_engine(models, config_with(512), {job})[0]);
  const int64_t passes_alone = models.draft_batch_->forward_passes() - passes_before;

  EngineStats stats;
  const std::vector<Result> together = run_engine(models, config_with(512), jobs, &stats);
  const int64_t passes_together = models.draft_batch_->forward_passes() - passes_before - passes_alone;
  for (size_t i = 0; i < jobs.size(); ++i) expect_identical(alone[i], together[i], "job " + std::to_string(i));
  // Alone, each engine step with a draft costs up to γ passes; together the same per step for all six.
  EXPECT_LE(passes_together, stats.steps * jobs[0].gamma);
  EXPECT_LT(3 * passes_together, passes_alone) << passes_together << " passes together vs " << passes_alone << " alone";
  EXPECT_EQ(models.draft_batch_->blocks_in_use(), 0);
  std::printf("%lld draft passes together, %lld alone\n", static_cast<long long>(passes_together), static_cast<long long>(passes_alone));
}

TEST_P(EngineSpeculation, GreedySpeculationEqualsPlainGreedyLogitsIncluded) {
  NUCLEUS_REQUIRE_SHARED();
  Models models(test::shared_path(GetParam()));
  const std::vector<int32_t> prompt = repetitive_prompt(models);
  const Result plain = run_engine(models, config_with(512), {Job{prompt, Kind::plain, 0, greedy()}})[0];
  for (Kind kind : {Kind::ngram, Kind::draft, Kind::self})
    for (int32_t gamma : {1, 2, 4, 8}) {
      const Result spec = run_engine(models, config_with(512), {Job{prompt, kind, gamma, greedy()}})[0];
      expect_identical(plain, spec, std::string(kind_name(kind)) + " gamma " + std::to_string(gamma));
      EXPECT_GT(spec.spec.num_proposed, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, EngineSpeculation,
                         testing::Values("models/stories260K.gguf", "models/test/llama-spm-f16.gguf"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(EngineSpeculationErrors, GammaOutOfRangeIsRefused) {
  NUCLEUS_REQUIRE_SHARED();
  Models models(test::shared_path("models/stories260K.gguf"));
  LLMEngine engine(models.target(), nullptr, config_with(64));
  Job job{{1, 2, 3}, Kind::ngram, 4, greedy()};
  RequestOptions options = models.options(job);
  options.num_speculative_tokens = -1;
  EXPECT_THROW(engine.add_request(job.prompt, options), Error);
  options.num_speculative_tokens = kMaxSpeculativeTokens + 1;
  EXPECT_THROW(engine.add_request(job.prompt, options), Error);
}

// A proposer that fails: its request ends with the error, every other request completes.
class FailingProposer final : public Proposer {
 public:
  std::string name() const override { return "failing"; }
  void propose(const DraftRequest&, DraftProposal&) override { throw Error("draft model ran out of context"); }
};

TEST(EngineSpeculationErrors, AFailingProposerEndsOnlyItsRequestWithTheReason) {
  NUCLEUS_REQUIRE_SHARED();
  Models models(test::shared_path("models/stories260K.gguf"));
  LLMEngine engine(models.target(), nullptr, config_with(64));
  const Job plain{{1, 20, 30, 40}, Kind::plain, 0, greedy()};
  RequestOptions failing = models.options(Job{{1, 20, 30, 40}, Kind::ngram, 4, greedy()});
  failing.proposer = std::make_shared<FailingProposer>();
  const int64_t a = engine.add_request(plain.prompt, models.options(plain));
  const int64_t b = engine.add_request({1, 50, 60, 70}, failing);
  std::map<int64_t, RequestOutput> last;
  int64_t a_tokens = 0;
  while (engine.has_unfinished())
    for (const RequestOutput& out : engine.step()) {
      last[out.request_id] = out;
      if (out.request_id == a) a_tokens += static_cast<int64_t>(out.new_tokens.size());
    }
  ASSERT_TRUE(last.count(b));
  EXPECT_TRUE(last[b].finished);
  EXPECT_NE(last[b].error.find("proposer failing failed: draft model ran out of context"), std::string::npos) << last[b].error;
  EXPECT_TRUE(last[a].finished);
  EXPECT_TRUE(last[a].error.empty());
  EXPECT_EQ(a_tokens, kMaxTokens);
  EXPECT_EQ(engine.block_pool().num_free_blocks(), engine.block_pool().num_blocks());
}

}  // namespace
}  // namespace nucleus
