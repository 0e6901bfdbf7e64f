// Synthetic workloads (engine/workload.h) and `nucleus bench workload`: the workload is a function of
// its seed and respects its ranges and prefix fraction; a replay through the engine completes every
// request with exactly its generation length, and its report adds up; shared prefixes hit the prefix
// cache only when caching is on; the CLI prints one JSON object and refuses bad flags in one line.
// Small KV pools (num_blocks) keep it fast: the default 256 MB pool takes long to allocate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "engine/model_source.h"
#include "engine/workload.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

WorkloadSpec small_spec() {
  WorkloadSpec s;
  s.num_requests = 40;
  s.rate = 100.0;
  s.prompt_len_min = 3;
  s.prompt_len_max = 17;
  s.gen_len_min = 2;
  s.gen_len_max = 9;
  s.shared_prefix_len = 20;
  s.prefix_groups = 3;
  s.prefix_fraction = 0.25;
  s.seed = 42;
  for (int32_t id = 10; id < 60; ++id) s.token_ids.push_back(id);
  return s;
}

bool same(const std::vector<WorkloadRequest>& a, const std::vector<WorkloadRequest>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].arrival_s != b[i].arrival_s || a[i].prompt != b[i].prompt || a[i].gen_len != b[i].gen_len ||
        a[i].prefix_group != b[i].prefix_group || a[i].sampling_seed != b[i].sampling_seed)
      return false;
  return true;
}

TEST(WorkloadGeneration, IsReproducibleFromTheSeedAndRespectsRangesAndPrefixFraction) {
  const WorkloadSpec spec = small_spec();
  const std::vector<WorkloadRequest> w = make_workload(spec);
  EXPECT_TRUE(same(w, make_workload(spec)));
  WorkloadSpec other = spec;
  other.seed = 43;
  EXPECT_FALSE(same(w, make_workload(other)));

  ASSERT_EQ(w.size(), 40u);
  EXPECT_EQ(w[0].arrival_s, 0.0);
  std::vector<std::vector<int32_t>> prefix_of_group(3);
  int64_t prefixed = 0;
  std::set<int64_t> prompt_lens, gen_lens;
  for (size_t i = 0; i < w.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(w[i].arrival_s, w[i - 1].arrival_s);
    }
    const int64_t prefix = w[i].prefix_group >= 0 ? spec.shared_prefix_len : 0;
    const auto own = static_cast<int64_t>(w[i].prompt.size()) - prefix;
    EXPECT_GE(own, 3);
    EXPECT_LE(own, 17);
    EXPECT_GE(w[i].gen_len, 2);
    EXPECT_LE(w[i].gen_len, 9);
    prompt_lens.insert(own);
    gen_lens.insert(w[i].gen_len);
    for (int32_t t : w[i].prompt) EXPECT_TRUE(t >= 10 && t < 60) << t;
    if (w[i].prefix_group >= 0) {
      ASSERT_LT(w[i].prefix_group, 3);
      ++prefixed;
      std::vector<int32_t> head(w[i].prompt.begin(), w[i].prompt.begin() + spec.shared_prefix_len);
      auto& known = prefix_of_group[static_cast<size_t>(w[i].prefix_group)];
      if (known.empty()) known = head;
      EXPECT_EQ(head, known) << "request " << i << " does not start with its group's prefix";
    }
  }
  EXPECT_EQ(prefixed, 10);  // round(0.25 · 40), exactly
  EXPECT_GT(prompt_lens.size(), 5u) << "lengths should spread over the range";
  EXPECT_GT(gen_lens.size(), 4u);
  // Poisson arrivals at 100/s: 39 gaps of mean 10 ms.
  EXPECT_GT(w.back().arrival_s, 0.1);
  EXPECT_LT(w.back().arrival_s, 1.5);

  WorkloadSpec at_once = spec;
  at_once.rate = 0;
  for (const WorkloadRequest& r : make_workload(at_once)) EXPECT_EQ(r.arrival_s, 0.0);
  at_once.rate = INFINITY;
  for (const WorkloadRequest& r : make_workload(at_once)) EXPECT_EQ(r.arrival_s, 0.0);
  WorkloadSpec none = spec;
  none.prefix_fraction = 0;
  for (const WorkloadRequest& r : make_workload(none)) EXPECT_EQ(r.prefix_group, -1);
  none.prefix_fraction = 1;
  for (const WorkloadRequest& r : make_workload(none)) EXPECT_GE(r.prefix_group, 0);
}

TEST(WorkloadGeneration, RejectsInconsistentSpecs) {
  auto rejects = [](auto change) {
    WorkloadSpec s = small_spec();
    change(s);
    EXPECT_THROW(make_workload(s), Error);
  };
  rejects([](WorkloadSpec& s) { s.prompt_len_min = 5, s.prompt_len_max = 2; });
  rejects([](WorkloadSpec& s) { s.gen_len_min = 0; });
  rejects([](WorkloadSpec& s) { s.rate = -1; });
  rejects([](WorkloadSpec& s) { s.rate = NAN; });
  rejects([](WorkloadSpec& s) { s.prefix_fraction = 1.5; });
  rejects([](WorkloadSpec& s) { s.num_requests = 0; });
  rejects([](WorkloadSpec& s) { s.token_ids.clear(); });
}

class WorkloadReplay : public testing::Test {
 protected:
  void SetUp() override {
    if (!test::shared_available()) GTEST_SKIP() << "shared assets not found";
    loaded_ = load_model(ModelSource{test::shared_path("models/stories260K.gguf"), "", {}});
  }
  EngineConfig config(bool prefix_caching) const {
    EngineConfig c;
    c.num_blocks = 128;
    c.n_threads = 1;
    c.enable_prefix_caching = prefix_caching;
    return c;
  }
  WorkloadSpec spec() const {
    WorkloadSpec s;
    s.num_requests = 16;
    s.rate = 200.0;  // arrivals spread over ~75 ms: later requests find earlier prefixes cached
    s.prompt_len_min = 4;
    s.prompt_len_max = 24;
    s.gen_len_min = 3;
    s.gen_len_max = 12;
    s.shared_prefix_len = 48;
    s.prefix_groups = 2;
    s.prefix_fraction = 0.75;
    s.seed = 7;
    s.token_ids = ordinary_token_ids(loaded_.tokenizer.get(), static_cast<int32_t>(loaded_.model->hparams().n_vocab));
    return s;
  }
  LoadedModel loaded_;
};

TEST_F(WorkloadReplay, EveryRequestCompletesWithItsGenLengthAndTheReportAddsUp) {
  WorkloadSpec s = spec();
  s.temperature = 0.8f;  // seeded sampling; ignore_eos keeps the lengths exact
  const std::vector<WorkloadRequest> w = make_workload(s);
  LLMEngine engine(*loaded_.model, loaded_.tokenizer.get(), config(true));
  warm_up_engine(engine, s.token_ids);  // its request and step are not part of the report
  const int64_t warm_steps = engine.stats().steps;
  ASSERT_GT(warm_steps, 0);
  const WorkloadReport r = replay_workload(engine, w);
  EXPECT_FALSE(engine.has_unfinished());
  EXPECT_EQ(r.steps, engine.stats().steps - warm_steps);
  EXPECT_EQ(engine.block_pool().num_free_blocks(), engine.block_pool().num_blocks()) << "KV blocks leaked";
  ASSERT_EQ(r.requests.size(), w.size());
  int64_t gen_total = 0, prompt_total = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const WorkloadRequestResult& q = r.requests[i];
    EXPECT_FALSE(q.failed) << i;
    EXPECT_EQ(q.output_tokens, w[i].gen_len) << i;
    EXPECT_EQ(q.prompt_tokens, static_cast<int64_t>(w[i].prompt.size())) << i;
    EXPECT_EQ(q.finish_reason, FinishReason::length) << i;
    EXPECT_GE(q.first_token_s, q.arrival_s) << "a token before its request arrived: " << i;
    EXPECT_GE(q.last_token_s, q.first_token_s) << i;
    gen_total += w[i].gen_len;
    prompt_total += static_cast<int64_t>(w[i].prompt.size());
  }
  EXPECT_EQ(r.num_requests, 16);
  EXPECT_EQ(r.completed, 16);
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.output_tokens, gen_total);
  EXPECT_EQ(r.prompt_tokens, prompt_total);
  EXPECT_GE(r.duration_s, w.back().arrival_s);
  EXPECT_NEAR(r.output_throughput, static_cast<double>(gen_total) / r.duration_s, 1e-9);
  EXPECT_NEAR(r.total_throughput, static_cast<double>(gen_total + prompt_total) / r.duration_s, 1e-9);
  EXPECT_NEAR(r.request_throughput, 16.0 / r.duration_s, 1e-9);
  for (const LatencySummary* l : {&r.ttft_ms, &r.tpot_ms, &r.e2e_ms}) {
    EXPECT_GT(l->mean, 0.0);
    EXPECT_LE(l->p50, l->p90);
    EXPECT_LE(l->p90, l->p99);
  }
  EXPECT_GE(r.e2e_ms.p50, r.ttft_ms.p50);
  EXPECT_GT(r.peak_kv_usage, 0.0);
  EXPECT_LE(r.peak_kv_usage, 1.0);
  EXPECT_GE(r.peak_running, 1);
  EXPECT_GT(r.steps, 0);
}

TEST_F(WorkloadReplay, SharedPrefixesHitTheCacheOnlyWhenCachingIsOn) {
  const std::vector<WorkloadRequest> w = make_workload(spec());
  {
    LLMEngine engine(*loaded_.model, nullptr, config(true));
    const WorkloadReport r = replay_workload(engine, w);
    EXPECT_EQ(r.completed, 16);
    EXPECT_GT(r.prefix_hit_rate, 0.0);
    EXPECT_GT(r.prefix_hits, 0);
    EXPECT_GT(r.prefix_cached_tokens, 0);
    EXPECT_EQ(r.prefix_cached_tokens % 16, 0) << "whole blocks are cached";
  }
  {
    LLMEngine engine(*loaded_.model, nullptr, config(false));
    const WorkloadReport r = replay_workload(engine, w);
    EXPECT_EQ(r.completed, 16);
    EXPECT_EQ(r.prefix_hit_rate, 0.0);
    EXPECT_EQ(r.prefix_hits, 0);
    EXPECT_EQ(r.prefix_cached_tokens, 0);
  }
}

TEST_F(WorkloadReplay, ARequestThatCannotFitIsAnErrorBeforeTheClockStarts) {
  WorkloadSpec s = spec();
  s.prompt_len_min = s.prompt_len_max = 4000;  // far beyond the 128 × 16 tokens of the pool
  LLMEngine engine(*loaded_.model, nullptr, config(true));
  EXPECT_THROW(replay_workload(engine, make_workload(s)), Error);
  EXPECT_FALSE(engine.has_unfinished());
}

TEST(CliBenchWorkload, PrintsOneJsonObjectWithTheDocumentedKeys) {
  NUCLEUS_REQUIRE_SHARED();
  const test::CommandResult r =
      test::run_nucleus("bench workload -m " + test::shared_path("models/stories260K.gguf") +
                        " -t 1 --requests 10 --rate 500 --prompt-len 4:12 --gen-len 2:6 --shared-prefix-len 32 --prefix-groups 2"
                        " --prefix-fraction 0.5 --seed 5 --num-blocks 128 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_object());
  for (const char* key : {"num_requests", "completed", "failed", "request_rate", "duration_s", "prompt_tokens", "output_tokens",
                          "request_throughput", "output_throughput", "total_token_throughput", "ttft_ms", "tpot_ms",
                          "e2e_latency_ms", "prefix_hit_rate", "prefix_cached_tokens", "preemptions", "peak_kv_usage",
                          "workload", "engine"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["num_requests"], 10);
  EXPECT_EQ(j["completed"], 10);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["request_rate"], 500.0);
  EXPECT_EQ(j["engine"]["num_blocks"], 128);
  EXPECT_EQ(j["engine"]["enable_prefix_caching"], true);
  for (const char* metric : {"ttft_ms", "tpot_ms", "e2e_latency_ms"})
    for (const char* stat : {"mean", "p50", "p90", "p99"}) EXPECT_TRUE(j[metric].contains(stat)) << metric << " " << stat;
  const int64_t out = j["output_tokens"];
  EXPECT_GE(out, 10 * 2);
  EXPECT_LE(out, 10 * 6);

  // The same seed gives the same workload, hence the same token counts.
  const test::CommandResult again =
      test::run_nucleus("bench workload -m " + test::shared_path("models/stories260K.gguf") +
                        " -t 1 --requests 10 --rate inf --prompt-len 4:12 --gen-len 2:6 --shared-prefix-len 32 --prefix-groups 2"
                        " --prefix-fraction 0.5 --seed 5 --num-blocks 128 --no-prefix-caching --json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const nlohmann::json k = nlohmann::json::parse(again.out);
  EXPECT_EQ(k["output_tokens"], j["output_tokens"]);
  EXPECT_EQ(k["prompt_tokens"], j["prompt_tokens"]);
  EXPECT_EQ(k["request_rate"], "inf");
  EXPECT_EQ(k["prefix_cached_tokens"], 0);
  EXPECT_EQ(k["engine"]["enable_prefix_caching"], false);
}

TEST(CliBenchWorkload, TheTableNamesEveryMetric) {
  NUCLEUS_REQUIRE_SHARED();
  const test::CommandResult r = test::run_nucleus("bench workload -m " + test::shared_path("models/stories260K.gguf") +
                                                  " -t 1 --requests 4 --prompt-len 4:8 --gen-len 2:3 --num-blocks 64");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  for (const char* text : {"output tok/s", "total tok/s", "requests/s", "TTFT", "TPOT", "E2E", "p90", "prefix hit rate",
                           "prefix-cached prompt tokens", "preemptions", "peak KV usage"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
}

TEST(CliBenchWorkload, BadFlagsFailWithOneLine) {
  for (const char* flags : {"--prompt-len 5:2", "--rate -1", "--gen-len x", "--prompt-len 0:4", "--rate abc"}) {
    const test::CommandResult r = test::run_nucleus(std::string("bench workload -m /nonexistent.gguf ") + flags);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << flags << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << ": " << r.err;
    EXPECT_NE(r.err.find(std::string(flags).substr(0, std::string(flags).find(' '))), std::string::npos) << flags << ": " << r.err;
  }
}

}  // namespace
}  // namespace nucleus
