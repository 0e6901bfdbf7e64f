// Qwen3.5's gated delta-net: the recurrent (decode) and chunked (prefill) forms of the delta rule
// agree, the conv state carries across steps, and a whole hybrid model gives the same logits fed at
// once (chunked) as token by token (recurrent), including after a rollback (recomputed state).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"
#include "engine/llm_engine.h"
#include "engine_test_helpers.h"
#include "io/gguf.h"
#include "model/delta_net.h"
#include "model/model.h"
#include "model/sequence_runner.h"
#include "server/metrics.h"
#include "speculative/ngram_proposer.h"
#include "speculative/proposer.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

struct RandomSequence {
  DeltaNetSpec spec;
  int64_t n_tokens = 0;
  std::vector<float> u;     // [n, conv_dim] q | k | v per token (q, k L2-normed)
  std::vector<float> g;     // [n, Hv]
  std::vector<float> beta;  // [n, Hv]
  std::vector<float> state; // [Hv, S, S] initial

  RandomSequence(int64_t n, uint32_t seed) : n_tokens(n) {
    spec.n_k_heads = 2;
    spec.n_v_heads = 4;
    spec.head_dim = 16;
    spec.conv_kernel = 4;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    const int64_t conv_dim = spec.conv_dim(), S = spec.head_dim;
    u.resize(static_cast<size_t>(n * conv_dim));
    for (float& x : u) x = normal(rng);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t h = 0; h < 2 * spec.n_k_heads; ++h) l2_normalize(&u[t * conv_dim + h * S], S, 1e-6f);
    g.resize(static_cast<size_t>(n * spec.n_v_heads));
    beta.resize(g.size());
    for (float& x : g) x = -2.0f * uniform(rng) * uniform(rng);  // decays from 1 down to e^-2
    for (float& x : beta) x = uniform(rng);
    state.resize(static_cast<size_t>(spec.ssm_state_floats()));
    for (float& x : state) x = 0.3f * normal(rng);
  }

  DeltaNetInputs inputs(int64_t first, int64_t count) const {
    const int64_t conv_dim = spec.conv_dim(), Hv = spec.n_v_heads;
    DeltaNetInputs in;
    in.n_tokens = count;
    in.q = u.data() + first * conv_dim;
    in.k = in.q + spec.key_dim();
    in.v = in.q + 2 * spec.key_dim();
    in.row_stride = conv_dim;
    in.g = g.data() + first * Hv;
    in.beta = beta.data() + first * Hv;
    return in;
  }
};

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

TEST(DeltaNet, ChunkedFormAgreesWithRecurrentForm) {
  const RandomSequence seq(150, 7);
  const int64_t value_dim = seq.spec.value_dim();
  std::vector<float> recurrent_state = seq.state, recurrent_out(static_cast<size_t>(seq.n_tokens * value_dim));
  delta_net_recurrent(seq.spec, seq.inputs(0, seq.n_tokens), recurrent_state.data(), recurrent_out.data());
  for (int64_t chunk : {1, 7, 64, 200}) {
    for (int threads : {1, 2}) {
      std::vector<float> state = seq.state, out(recurrent_out.size());
      WorkerPool pool(threads);
      delta_net_chunked(seq.spec, seq.inputs(0, seq.n_tokens), state.data(), out.data(), &pool, chunk);
      EXPECT_LE(max_difference(out, recurrent_out), 1e-4) << "chunk " << chunk;
      EXPECT_LE(max_difference(state, recurrent_state), 1e-4) << "chunk " << chunk;
      std::printf("[ delta    ] chunk %lld, %d threads: outputs %.3g, state %.3g\n", static_cast<long long>(chunk), threads,
                  max_difference(out, recurrent_out), max_difference(state, recurrent_state));
    }
  }
}

TEST(DeltaNet, PrefillThenDecodeContinuesTheState) {
  // A chunked prefill of 90 tokens, then 60 decode steps of one token, equals one recurrent pass.
  const RandomSequence seq(150, 11);
  const int64_t value_dim = seq.spec.value_dim();
  std::vector<float> expected_state = seq.state, expected(static_cast<size_t>(seq.n_tokens * value_dim));
  delta_net_recurrent(seq.spec, seq.inputs(0, seq.n_tokens), expected_state.data(), expected.data());
  std::vector<float> state = seq.state, out(expected.size());
  WorkerPool pool(2);
  delta_net_chunked(seq.spec, seq.inputs(0, 90), state.data(), out.data(), &pool, 64);
  for (int64_t t = 90; t < seq.n_tokens; ++t)
    delta_net_recurrent(seq.spec, seq.inputs(t, 1), state.data(), out.data() + t * value_dim);
  EXPECT_LE(max_difference(out, expected), 1e-4);
  EXPECT_LE(max_difference(state, expected_state), 1e-4);
}

TEST(DeltaNet, RecurrentFormMatchesTheDefinition) {
  // One head by the README's formula in double: S ← e^g S; δ = β(v − Sᵀk); S ← S + kδᵀ; o = Sᵀq/√S.
  const RandomSequence seq(20, 3);
  const DeltaNetSpec& spec = seq.spec;
  const int64_t S = spec.head_dim, Hv = spec.n_v_heads, conv_dim = spec.conv_dim();
  std::vector<float> state = seq.state, out(static_cast<size_t>(seq.n_tokens * spec.value_dim()));
  delta_net_recurrent(spec, seq.inputs(0, seq.n_tokens), state.data(), out.data());
  for (int64_t j = 0; j < Hv; ++j) {
    const int64_t key_head = j % spec.n_k_heads;  // tiled pairing, as ggml broadcasts
    std::vector<double> M(static_cast<size_t>(S * S));  // M[a][b]
    for (int64_t a = 0; a < S; ++a)
      for (int64_t b = 0; b < S; ++b) M[a * S + b] = seq.state[j * S * S + b * S + a];
    for (int64_t t = 0; t < seq.n_tokens; ++t) {
      const float* q = &seq.u[t * conv_dim + key_head * S];
      const float* k = &seq.u[t * conv_dim + spec.key_dim() + key_head * S];
      const float* v = &seq.u[t * conv_dim + 2 * spec.key_dim() + j * S];
      const double decay = std::exp(static_cast<double>(seq.g[t * Hv + j])), beta = seq.beta[t * Hv + j];
      for (double& m : M) m *= decay;
      for (int64_t b = 0; b < S; ++b) {
        double recalled = 0.0;
        for (int64_t a = 0; a < S; ++a) recalled += M[a * S + b] * k[a];
        const double delta = beta * (v[b] - recalled);
        for (int64_t a = 0; a < S; ++a) M[a * S + b] += k[a] * delta;
      }
      for (int64_t b = 0; b < S; ++b) {
        double o = 0.0;
        for (int64_t a = 0; a < S; ++a) o += M[a * S + b] * q[a];
        EXPECT_NEAR(out[t * spec.value_dim() + j * S + b], o / std::sqrt(static_cast<double>(S)), 1e-4) << t << " " << j;
      }
    }
  }
}

TEST(DeltaNet, ConvStateCarriesAcrossSteps) {
  const int64_t conv_dim = 6, K = 4, n = 11;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> m(static_cast<size_t>(n * conv_dim)), weight(static_cast<size_t>(conv_dim * K));
  for (float& x : m) x = normal(rng);
  for (float& x : weight) x = normal(rng);
  std::vector<float> whole(m.size()), window(static_cast<size_t>((K - 1 + n) * conv_dim));
  std::vector<float> state(static_cast<size_t>((K - 1) * conv_dim), 0.0f);
  delta_net_conv(m.data(), n, conv_dim, K, weight.data(), state.data(), whole.data(), window.data());
  // Against the definition: out_t[c] = silu(Σ_j w[c][j] m_{t−3+j}[c]), m before 0 = 0.
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < conv_dim; ++c) {
      double sum = 0.0;
      for (int64_t j = 0; j < K; ++j)
        if (t - (K - 1) + j >= 0) sum += static_cast<double>(weight[c * K + j]) * m[(t - (K - 1) + j) * conv_dim + c];
      EXPECT_NEAR(whole[t * conv_dim + c], sum / (1.0 + std::exp(-sum)), 1e-5);
    }
  std::vector<float> stepped(m.size());
  std::fill(state.begin(), state.end(), 0.0f);
  for (int64_t first : {0, 2, 3, 8}) {  // steps of 2, 1, 5, 3 tokens
    const int64_t count = (first == 0 ? 2 : first == 2 ? 1 : first == 3 ? 5 : 3);
    delta_net_conv(&m[first * conv_dim], count, conv_dim, K, weight.data(), state.data(), &stepped[first * conv_dim], window.data());
  }
  EXPECT_EQ(stepped, whole);
}

// The shared Qwen3.5 test model: one forward over all tokens (chunked delta-net form) against one
// token per step (recurrent form).
std::unique_ptr<Model> load_qwen35() {
  ModelLoadOptions options;
  options.n_ctx = 512;
  return Model::load(GgufFile::open(test::shared_path("models/arch/qwen35.gguf")), options);
}

std::vector<int32_t> some_tokens(int n) {
  std::vector<int32_t> tokens{1};
  for (int i = 1; i < n; ++i) tokens.push_back(static_cast<int32_t>((i * 37 + 11) % 500 + 3));
  return tokens;
}

TEST(DeltaNetModel, PrefillAtOnceAgreesWithTokenByTokenDecode) {
  NUCLEUS_REQUIRE_SHARED();
  auto model = load_qwen35();
  ASSERT_TRUE(model->hparams().has_recurrent_layers());
  const int64_t n_vocab = model->hparams().n_vocab;
  const std::vector<int32_t> tokens = some_tokens(90);
  SequenceRunner at_once(*model, 128, 2);
  const std::vector<float> all = at_once.feed(tokens, /*all_logits=*/true);
  SequenceRunner stepwise(*model, 128, 2);
  double worst = 0.0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::vector<float>& row = stepwise.feed(std::vector<int32_t>{tokens[t]});
    for (int64_t v = 0; v < n_vocab; ++v) worst = std::max(worst, std::fabs(static_cast<double>(row[v]) - all[t * n_vocab + v]));
  }
  std::printf("[ delta    ] qwen35 logits, all at once vs token by token: %.3g\n", worst);
  EXPECT_LE(worst, 1e-4);
}

TEST(DeltaNetModel, RollbackRecomputesTheState) {
  NUCLEUS_REQUIRE_SHARED();
  auto model = load_qwen35();
  const int64_t n_vocab = model->hparams().n_vocab;
  const std::vector<int32_t> tokens = some_tokens(40);
  SequenceRunner fresh(*model, 64, 1);
  fresh.feed(std::vector<int32_t>(tokens.begin(), tokens.begin() + 30));
  const std::vector<float> expected = fresh.feed(std::vector<int32_t>(tokens.begin() + 30, tokens.end()));
  SequenceRunner rolled(*model, 64, 1);
  rolled.feed(tokens);
  rolled.feed(std::vector<int32_t>{7, 8, 9});
  rolled.truncate(30);  // the recurrent state is now ahead of n_past: the next feed recomputes it
  const std::vector<float> got = rolled.feed(std::vector<int32_t>(tokens.begin() + 30, tokens.end()));
  ASSERT_EQ(got.size(), static_cast<size_t>(n_vocab));
  double worst = 0.0;
  for (int64_t v = 0; v < n_vocab; ++v) worst = std::max(worst, std::fabs(static_cast<double>(got[v]) - expected[v]));
  EXPECT_LE(worst, 1e-4);
}

TEST(DeltaNetModel, ForwardRefusesACacheWithoutRecurrentState) {
  NUCLEUS_REQUIRE_SHARED();
  auto model = load_qwen35();
  const HParams& hp = model->hparams();
  KvCache kv(KvCacheShape{hp.n_layer, 4, 16, hp.kv_dim()});
  ForwardBatch batch;
  batch.block_tables.push_back({0, 1, 2, 3});
  batch.add(1, 0, 0, true);
  std::vector<float> logits(static_cast<size_t>(hp.n_vocab));
  try {
    model->forward(batch, kv, logits.data(), 1);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("recurrent"), std::string::npos) << e.what();
  }
}

TEST(DeltaNetModel, ForwardRefusesAStateThatCannotContinue) {
  NUCLEUS_REQUIRE_SHARED();
  auto model = load_qwen35();
  const HParams& hp = model->hparams();
  KvCacheShape shape{hp.n_layer, 4, 16, hp.kv_dim()};
  shape.recurrent = recurrent_state_shape(hp, 2);
  KvCache kv(shape);
  std::vector<float> logits(static_cast<size_t>(2 * hp.n_vocab));
  ForwardBatch first;
  first.block_tables.push_back({0, 1});
  first.state_slots.push_back(1);
  first.add(1, 0, 0, false);
  first.add(5, 1, 0, true);
  model->forward(first, kv, logits.data(), 1);
  EXPECT_EQ(kv.state_tokens(1), 2);
  ForwardBatch skip = first;  // position 5 does not continue a state of 2 tokens
  skip.tokens = {9};
  skip.positions = {5};
  skip.seq_index = {0};
  skip.output_rows = {0};
  EXPECT_THROW(model->forward(skip, kv, logits.data(), 1), Error);
}

// The batching engine with a hybrid model: a state slot per running request. With a budget that
// prefills every prompt in one step, a request's results are bit-identical alone and among others;
// with chunked prefill and a pool small enough to force preemption (recomputed from position 0),
// every request still reproduces its solo tokens, with logits within the chunked/recurrent 1e-4.
RequestOptions greedy(int32_t max_tokens) {
  RequestOptions o;
  o.return_logits = true;
  o.stop.max_tokens = max_tokens;
  o.stop.ignore_eos = true;
  o.sampling.temperature = 0.0f;
  return o;
}

TEST(DeltaNetEngine, BatchedRequestsMatchTheirSoloRuns) {
  NUCLEUS_REQUIRE_SHARED();
  auto model = load_qwen35();
  const int64_t n_vocab = model->hparams().n_vocab;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestOptions> options;
#ifdef NUCLEUS_SANITIZED
  constexpr int kRequests = 12;  // memory and UB errors are the point there
#else
  constexpr int kRequests = 32;  // one request alone vs among 31 others
#endif
  for (int i = 0; i < kRequests; ++i) {
    prompts.push_back(test::random_prompt(static_cast<uint64_t>(i) + 40, 5 + (11 * i) % 80, n_vocab));
    options.push_back(greedy(10));
  }
  EngineConfig wide;
  wide.n_threads = 2;
  wide.num_blocks = 320;                // room for all 32 at once: no preemption
  wide.max_num_batched_tokens = 4096;   // every prompt prefills whole in its first step
  EngineStats stats;
  const auto batched = test::run_engine(*model, wide, prompts, options, &stats);
  EngineConfig tight = wide;
  tight.max_num_batched_tokens = 24;  // chunked prefill
  tight.num_blocks = 12;              // forces preemption
  EngineStats tight_stats;
  const auto squeezed = test::run_engine(*model, tight, prompts, options, &tight_stats);
  EXPECT_GT(tight_stats.preemptions, 0);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto alone = test::run_engine(*model, wide, {prompts[i]}, {options[i]});
    test::expect_identical(batched[i], alone[0], "request " + std::to_string(i));
    ASSERT_EQ(squeezed[i].tokens, alone[0].tokens) << "request " << i;
    double worst = 0.0;
    for (size_t t = 0; t < alone[0].logits.size(); ++t)
      worst = std::max(worst, max_difference(squeezed[i].logits[t], alone[0].logits[t]));
    EXPECT_LE(worst, 1e-4) << "request " << i;
  }
}

// Prefix caching is off for a hybrid model, and says so: a snapshot of the recurrent state at each
// block boundary would cost far more than the block's K/V (the reason gives both sizes; serve logs
// it), and /metrics shows nucleus_prefix_caching_enabled 0 (1 for an attention-only model).
TEST(DeltaNetEngine, PrefixCachingIsOffWithItsReasonInTheStatsAndMetrics) {
  NUCLEUS_REQUIRE_SHARED();
  auto hybrid = load_qwen35();
  LLMEngine engine(*hybrid, nullptr, EngineConfig{});
  EXPECT_FALSE(engine.stats().prefix_caching);
  const std::string& why = engine.prefix_caching_off_reason();
  EXPECT_NE(why.find("recurrent (gated delta-net) layers"), std::string::npos) << why;
  EXPECT_NE(why.find("MiB per snapshot against"), std::string::npos) << why;
  const EngineStats hybrid_stats = engine.stats();
  EXPECT_NE(server::ServerMetrics().render(&hybrid_stats, "m").find("nucleus_prefix_caching_enabled 0"), std::string::npos);

  auto plain = Model::load(GgufFile::open(test::shared_path("models/stories260K.gguf")));
  LLMEngine attention_only(*plain, nullptr, EngineConfig{});
  EXPECT_TRUE(attention_only.stats().prefix_caching);
  EXPECT_EQ(attention_only.prefix_caching_off_reason(), "");
  const EngineStats plain_stats = attention_only.stats();
  EXPECT_NE(server::ServerMetrics().render(&plain_stats, "m").find("nucleus_prefix_caching_enabled 1"), std::string::npos);
}

TEST(DeltaNetEngine, StateSlotsAndBlocksComeBackAfterSixtyFourRequestsFinishOrAbort) {
  NUCLEUS_REQUIRE_SHARED();
  auto model = load_qwen35();
  const int64_t n_vocab = model->hparams().n_vocab;
  EngineConfig config;
  config.n_threads = 2;
  config.num_blocks = 10;  // tight (a request needs up to 4): requests wait, and some are preempted
  config.max_num_batched_tokens = 64;
  LLMEngine engine(*model, nullptr, config);
  const EngineStats empty = engine.stats();
  ASSERT_GT(empty.state_slots_total, 0);
  EXPECT_EQ(empty.state_slots_used, 0);
  // 64 requests; every third is aborted after its first token, one while still waiting.
  std::map<int64_t, int> produced;
  std::set<int64_t> finished;
  for (int i = 0; i < 64; ++i)
    produced[engine.add_request(test::random_prompt(static_cast<uint64_t>(i) + 500, 3 + (i * 7) % 37, n_vocab), greedy(4 + i % 9))] = 0;
  engine.abort(63);
  int64_t most_used = 0;
  for (int steps = 0; steps < 5000 && finished.size() < 64; ++steps) {
    for (const RequestOutput& out : engine.step()) {
      produced[out.request_id] += static_cast<int>(out.new_tokens.size());
      if (out.finished) finished.insert(out.request_id);
    }
    for (const auto& [id, n] : produced)
      if (id % 3 == 0 && n > 0 && !finished.count(id)) engine.abort(id);
    const EngineStats now = engine.stats();
    ASSERT_LE(now.state_slots_used, now.state_slots_total);
    most_used = std::max(most_used, now.state_slots_used);
  }
  ASSERT_EQ(finished.size(), 64u);
  EXPECT_GT(most_used, 1);  // requests ran side by side
  const EngineStats after = engine.stats();
  EXPECT_GT(after.preemptions, 0);  // and some lost their state to others and recomputed it
  EXPECT_EQ(after.state_slots_used, 0);
  EXPECT_EQ(after.kv_blocks_used, 0);
  EXPECT_EQ(after.num_running + after.num_waiting, 0);
  // A request after all that runs as it does in a fresh engine (no state left behind in a slot).
  const std::vector<int32_t> prompt = test::random_prompt(9, 20, n_vocab);
  const auto fresh = test::run_engine(*model, config, {prompt}, {greedy(8)});
  const int64_t id = engine.add_request(prompt, greedy(8));
  std::vector<int32_t> tokens;
  for (bool done = false; !done;)
    for (const RequestOutput& out : engine.step())
      if (out.request_id == id) {
        tokens.insert(tokens.end(), out.new_tokens.begin(), out.new_tokens.end());
        done = out.finished;
      }
  EXPECT_EQ(tokens, fresh[0].tokens);
}

// Proposes the known greedy continuation with one draft made wrong on most passes (the k-th of
// pass k mod (γ + 1); none when k mod (γ + 1) = γ): every pass has a known outcome — all accepted,
// or the first k accepted and the next rejected.
class ScriptedProposer final : public Proposer {
 public:
  ScriptedProposer(std::vector<int32_t> expected, int64_t n_vocab) : expected_(std::move(expected)), n_vocab_(n_vocab) {}
  std::string name() const override { return "scripted"; }
  void propose(const DraftRequest& request, DraftProposal& proposal) override {
    proposal.clear();
    const size_t at = request.tokens.size();
    const auto wrong = static_cast<int32_t>(passes_++ % (request.num_draft_tokens + 1));
    for (int32_t k = 0; k < request.num_draft_tokens && at + static_cast<size_t>(k) < expected_.size(); ++k) {
      const int32_t token = expected_[at + static_cast<size_t>(k)];
      proposal.tokens.push_back(k == wrong ? static_cast<int32_t>((token + 1) % n_vocab_) : token);
    }
  }

 private:
  std::vector<int32_t> expected_;
  int64_t n_vocab_;
  int64_t passes_ = 0;
};

TEST(DeltaNetEngine, SpeculativeGreedyEqualsPlainGreedyWithTheStateRestoredAfterARejection) {
  NUCLEUS_REQUIRE_SHARED();
  auto model = load_qwen35();
  const int64_t n_vocab = model->hparams().n_vocab;
  EngineConfig config;
  config.n_threads = 2;
  config.num_blocks = 64;
  EXPECT_FALSE(LLMEngine(*model, nullptr, config).config().enable_prefix_caching);  // no state snapshots per block
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestOptions> plain;
  for (int i = 0; i < 6; ++i) {
    prompts.push_back(test::random_prompt(static_cast<uint64_t>(i) + 900, 6 + 5 * i, n_vocab));
    plain.push_back(greedy(24));
  }
  const auto expected = test::run_engine(*model, config, prompts, plain);
  for (const bool ngram : {false, true}) {
    SCOPED_TRACE(ngram ? "n-gram drafts" : "scripted drafts");
    std::vector<RequestOptions> speculative;
    for (size_t i = 0; i < prompts.size(); ++i) {
      RequestOptions o = greedy(24);
      std::vector<int32_t> script = prompts[i];
      script.insert(script.end(), expected[i].tokens.begin(), expected[i].tokens.end());
      o.proposer = ngram ? std::shared_ptr<Proposer>(std::make_shared<NgramProposer>(1, 3))
                         : std::shared_ptr<Proposer>(std::make_shared<ScriptedProposer>(script, n_vocab));
      o.num_speculative_tokens = 3;
      speculative.push_back(o);
    }
    // All six together: each rejection puts just its own request's state slot back.
    const auto got = test::run_engine(*model, config, prompts, speculative);
    SpeculativeStats total;
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(got[i].tokens, expected[i].tokens) << "request " << i;
      total.add(got[i].spec);
    }
    EXPECT_GT(total.num_rejected, 0);  // the restore path ran
    if (!ngram) {
      EXPECT_GT(total.num_accepted, total.num_rejected);  // partial and whole acceptances too
    }
  }
}

}  // namespace
}  // namespace nucleus
