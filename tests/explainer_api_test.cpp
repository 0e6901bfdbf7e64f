// The explainer's JSON endpoints end to end: the real HttpServer with an AsyncEngine and an
// Explainer on stories260K, in-process on a free loopback port. One test per panel's data, plus the
// bad-parameter answers (4xx with an OpenAI-style error naming the field).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "explain/explainer.h"
#include "explain/repetition.h"
#include "server_test_harness.h"

namespace nucleus::test {
namespace {

using nlohmann::json;

// The server as `nucleus serve` builds it: engine + explainer (its own copy of the model).
class ExplainerServer {
 public:
  explicit ExplainerServer(const std::string& model_path) {
    loaded_ = load_model(ModelSource{model_path, "", {}});
    EngineConfig engine_config;
    engine_config.kv_cache_bytes = 16ll << 20;
    auto llm = std::make_unique<LLMEngine>(*loaded_.model, loaded_.tokenizer.get(), engine_config);
    const int64_t max_model_len = llm->max_model_len();
    engine_ = std::make_unique<AsyncEngine>(std::move(llm));
    explain::ExplainerConfig explainer_config;
    explainer_config.source = ModelSource{model_path, "", {}};
    explainer_config.n_threads = 1;
    explainer_config.weights_from = loaded_.model.get();  // as `serve` does: the engine's weights, shared
    explainer_ = std::make_unique<explain::Explainer>(explainer_config);
    server::ServerConfig config;
    config.host = "127.0.0.1";
    config.port = 0;
    config.served_model_name = "test-model";
    http_ = std::make_unique<server::HttpServer>(config);
    port_ = http_->bind();
    thread_ = std::thread([this] { http_->serve(); });
    server::ServedModel served;
    served.engine = engine_.get();
    served.tokenizer = loaded_.tokenizer.get();
    served.max_model_len = max_model_len;
    served.explainer = explainer_.get();
    http_->attach(std::move(served));
  }
  ~ExplainerServer() {
    http_->shutdown();
    thread_.join();
    http_.reset();
    explainer_.reset();
    engine_.reset();
  }
  int port() const { return port_; }

 private:
  LoadedModel loaded_;
  std::unique_ptr<AsyncEngine> engine_;
  std::unique_ptr<explain::Explainer> explainer_;
  std::unique_ptr<server::HttpServer> http_;
  std::thread thread_;
  int port_ = 0;
};

class ExplainerApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (shared_available()) server_ = new ExplainerServer(shared_path("models/stories260K.gguf"));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { NUCLEUS_REQUIRE_SHARED(); }

  static json ok(const std::string& path, const json& body) {
    const HttpResult r = post_json(server_->port(), path, body);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return r.json;
  }
  // A bad request: the status, and an OpenAI error body whose param and message name the field.
  static void expect_error(const std::string& path, const json& body, int status, const std::string& param) {
    const HttpResult r = post_json(server_->port(), path, body);
    EXPECT_EQ(r.status, status) << path << " " << body.dump() << ": " << r.body;
    ASSERT_TRUE(r.json.is_object() && r.json.contains("error")) << r.body;
    EXPECT_EQ(r.json["error"]["type"], "invalid_request_error");
    if (!param.empty()) {
      EXPECT_EQ(r.json["error"]["param"], param) << r.body;
      EXPECT_NE(r.json["error"]["message"].get<std::string>().find(param), std::string::npos) << r.body;
    }
  }

  static ExplainerServer* server_;
};
ExplainerServer* ExplainerApiTest::server_ = nullptr;

TEST_F(ExplainerApiTest, InfoNamesTheDefaultContextAndProposers) {
  const HttpResult r = get(server_->port(), "/explain/info");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["default_context"], "Once upon a time");
  EXPECT_EQ(r.json["n_vocab"], 512);
  EXPECT_EQ(r.json["proposers"], json({"ngram", "self"}));  // no --draft
  // No speed model given: the speed panels run on the served model.
  EXPECT_TRUE(r.json["speed_model"]["same_as_served"].get<bool>());
  EXPECT_FALSE(r.json["speed_model"]["random_weights"].get<bool>());
  EXPECT_EQ(r.json["speed_model"]["n_layer"], 5);
  EXPECT_GT(r.json["speed_model"]["weight_bytes"].get<double>(), 0.0);
}

TEST_F(ExplainerApiTest, DistributionRawProbabilitiesAreSortedAndEverythingIsKeptByDefault) {
  const json d = ok("/explain/distribution", {{"context", "Once upon a time"}});
  ASSERT_EQ(d["tokens"].size(), 30u);
  double previous = 1.0;
  for (const json& t : d["tokens"]) {
    EXPECT_LE(t["raw_prob"].get<double>(), previous);
    previous = t["raw_prob"].get<double>();
    EXPECT_TRUE(t["kept"].get<bool>());
    EXPECT_NEAR(t["prob"].get<double>(), t["raw_prob"].get<double>(), 1e-5);  // T = 1, nothing trimmed
  }
  EXPECT_EQ(d["kept_count"], 512);
  EXPECT_NEAR(d["kept_mass"].get<double>(), 1.0, 1e-6);
}

TEST_F(ExplainerApiTest, DistributionTopKOneKeepsOnlyTheArgmaxWithAllTheMass) {
  const json d = ok("/explain/distribution", {{"context", "Once upon a time"}, {"top_k", 1}});
  EXPECT_EQ(d["kept_count"], 1);
  EXPECT_TRUE(d["tokens"][0]["kept"].get<bool>());
  EXPECT_NEAR(d["tokens"][0]["prob"].get<double>(), 1.0, 1e-6);
  for (size_t i = 1; i < d["tokens"].size(); ++i) {
    EXPECT_FALSE(d["tokens"][i]["kept"].get<bool>());
    EXPECT_EQ(d["tokens"][i]["prob"].get<double>(), 0.0);
  }
  EXPECT_NEAR(d["kept_mass"].get<double>(), d["tokens"][0]["raw_prob"].get<double>(), 1e-9);
}

TEST_F(ExplainerApiTest, DistributionHigherTemperatureFlattensTheTop) {
  const json cold = ok("/explain/distribution", {{"temperature", 0.5}});
  const json hot = ok("/explain/distribution", {{"temperature", 2.0}});
  EXPECT_GT(cold["tokens"][0]["prob"].get<double>(), hot["tokens"][0]["prob"].get<double>());
  const json greedy = ok("/explain/distribution", {{"temperature", 0}});
  EXPECT_TRUE(greedy["greedy"].get<bool>());
  EXPECT_EQ(greedy["kept_count"], 1);
}

TEST_F(ExplainerApiTest, DistributionTopPKeepsTheSmallestPrefixReachingP) {
  const json d = ok("/explain/distribution", {{"context", "The dog"}, {"top_p", 0.5}});
  int64_t expected = 0;
  double mass = 0;
  for (const json& t : d["tokens"]) {
    ++expected;
    mass += t["raw_prob"].get<double>();
    if (mass >= 0.5) break;
  }
  ASSERT_GE(mass, 0.5);
  EXPECT_EQ(d["kept_count"], expected);
}

TEST_F(ExplainerApiTest, DistributionRejectsBadParameters) {
  expect_error("/explain/distribution", {{"temperature", -1}}, 400, "temperature");
  expect_error("/explain/distribution", {{"top_p", 1.5}}, 400, "top_p");
  expect_error("/explain/distribution", {{"top_k", "many"}}, 400, "top_k");
  expect_error("/explain/distribution", {{"min_p", 2}}, 400, "min_p");
  expect_error("/explain/distribution", {{"top_n", 0}}, 400, "top_n");
  expect_error("/explain/distribution", {{"context", 42}}, 400, "context");
  expect_error("/explain/distribution", json::array({1, 2}), 400, "");
  const HttpResult not_json = post_raw(server_->port(), "/explain/distribution", "{nope");
  EXPECT_EQ(not_json.status, 400);
  std::string long_context;
  for (int i = 0; i < 1000; ++i) long_context += "Once upon a time ";  // ~5000 tokens, past any context here
  const HttpResult too_long = post_json(server_->port(), "/explain/distribution", {{"context", long_context}});
  EXPECT_EQ(too_long.status, 400);
  EXPECT_NE(too_long.body.find("context length"), std::string::npos) << too_long.body;
}

TEST_F(ExplainerApiTest, SampleAppendsOneTokenReproduciblyPerSeed) {
  const json a = ok("/explain/sample", {{"context", "Once upon a time"}, {"seed", 7}, {"temperature", 1.0}});
  const json b = ok("/explain/sample", {{"context", "Once upon a time"}, {"seed", 7}, {"temperature", 1.0}});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a["context"].get<std::string>(), "Once upon a time" + a["token"]["text"].get<std::string>());
  const json greedy = ok("/explain/sample", {{"context", "Once upon a time"}, {"temperature", 0}});
  const json d = ok("/explain/distribution", {{"context", "Once upon a time"}});
  EXPECT_EQ(greedy["token"]["id"], d["tokens"][0]["id"]);
  expect_error("/explain/sample", {{"seed", -3}}, 400, "seed");
}

TEST_F(ExplainerApiTest, ResampleWritesASentenceAndGreedyIsDeterministic) {
  const json a = ok("/explain/resample", {{"seed", 11}, {"max_tokens", 40}});
  const json b = ok("/explain/resample", {{"seed", 11}, {"max_tokens", 40}});
  EXPECT_EQ(a["text"], b["text"]);
  EXPECT_FALSE(a["text"].get<std::string>().empty());
  EXPECT_LE(a["tokens"].size(), 40u);
  expect_error("/explain/resample", {{"max_tokens", 0}}, 400, "max_tokens");
  expect_error("/explain/resample", {{"max_tokens", 100000}}, 400, "max_tokens");
}

TEST_F(ExplainerApiTest, ContinuationsGiveGreedyAndTheRequestedBeams) {
  const json c = ok("/explain/continuations", {{"context", "Once upon a time"}, {"max_tokens", 12}, {"num_beams", 3}});
  EXPECT_FALSE(c["greedy"]["text"].get<std::string>().empty());
  ASSERT_EQ(c["beams"].size(), 3u);
  for (size_t i = 1; i < c["beams"].size(); ++i)
    EXPECT_GE(c["beams"][i - 1]["score"].get<double>(), c["beams"][i]["score"].get<double>());
  // Greedy here is the argmax chain: the first greedy token is the distribution's top token.
  const json d = ok("/explain/distribution", {{"context", "Once upon a time"}});
  EXPECT_EQ(c["greedy"]["tokens"][0], d["tokens"][0]["id"]);
  expect_error("/explain/continuations", {{"num_beams", 0}}, 400, "num_beams");
  expect_error("/explain/continuations", {{"num_beams", 99}}, 400, "num_beams");
}

TEST_F(ExplainerApiTest, TraceHasOnePrefillStepThenSingleTokenDecodesAndTheRoofline) {
  const json t = ok("/explain/trace", {{"context", "Once upon a time there was"}, {"max_tokens", 8}});
  const json steps = t["steps"];
  ASSERT_GE(steps.size(), 2u);
  ASSERT_LE(steps.size(), 8u);
  EXPECT_EQ(steps[0]["phase"], "prefill");
  EXPECT_GT(steps[0]["tokens"].get<int64_t>(), 3);
  for (size_t i = 1; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i]["phase"], "decode");
    EXPECT_EQ(steps[i]["tokens"], 1);
    // Decode reuses no weight: its intensity is far below the prefill's.
    EXPECT_LT(steps[i]["intensity"].get<double>(), steps[0]["intensity"].get<double>());
    EXPECT_GT(steps[i]["seconds"].get<double>(), 0.0);
    EXPECT_NEAR(steps[i]["gflop_per_s"].get<double>(), steps[i]["flops"].get<double>() / steps[i]["seconds"].get<double>() / 1e9, 1e-6);
  }
  EXPECT_GT(t["machine"]["read_gb_per_s"].get<double>(), 0.0);
  EXPECT_GT(t["machine"]["gflop_per_s"].get<double>(), 0.0);
  // Greedy by default: the traced tokens are the greedy continuation.
  const json c = ok("/explain/continuations", {{"context", "Once upon a time there was"}, {"max_tokens", 3}, {"num_beams", 1}});
  EXPECT_EQ(steps[0]["token"], c["greedy"]["tokens"][0]);
  expect_error("/explain/trace", {{"max_tokens", -1}}, 400, "max_tokens");
}

TEST_F(ExplainerApiTest, SpeculativePassesAccountForEveryTokenAndMatchGreedy) {
  for (const char* proposer : {"ngram", "self"}) {
    const json s = ok("/explain/speculative", {{"context", "Once upon a time"}, {"proposer", proposer}, {"gamma", 3}, {"max_tokens", 20}});
    EXPECT_EQ(s["generated_tokens"], 20) << proposer;
    int64_t emitted = 0, drafted = 0, accepted = 0;
    std::vector<int32_t> tokens;
    for (const json& pass : s["passes"]) {
      const json& list = pass["tokens"];
      ASSERT_EQ(list.size(), pass["drafted"].get<size_t>() + 1);
      for (size_t i = 0; i + 1 < list.size(); ++i) {
        const std::string status = list[i]["status"];
        EXPECT_EQ(status, static_cast<int64_t>(i) < pass["accepted"].get<int64_t>() ? "accepted" : "rejected");
        if (status == "accepted") tokens.push_back(list[i]["id"]);
      }
      const std::string last = list.back()["status"];
      EXPECT_EQ(last, pass["accepted"] == pass["drafted"] ? "bonus" : "corrected");
      tokens.push_back(list.back()["id"]);
      drafted += pass["drafted"].get<int64_t>();
      accepted += pass["accepted"].get<int64_t>();
      emitted += pass["accepted"].get<int64_t>() + 1;
    }
    EXPECT_EQ(emitted, 20);
    if (drafted > 0) {
      EXPECT_NEAR(s["alpha"].get<double>(), static_cast<double>(accepted) / static_cast<double>(drafted), 1e-9);
    }
    EXPECT_NEAR(s["tokens_per_pass"].get<double>(), 20.0 / static_cast<double>(s["passes"].size()), 1e-9);
    EXPECT_NEAR(s["measured_speedup"].get<double>(), s["plain_seconds"].get<double>() / s["speculative_seconds"].get<double>(), 1e-9);
    ASSERT_EQ(s["theory"].size(), 51u);
    EXPECT_NEAR(s["theory"][0]["tokens_per_pass"].get<double>(), 1.0, 1e-12);
    EXPECT_NEAR(s["theory"][50]["tokens_per_pass"].get<double>(), 4.0, 1e-12);  // γ + 1 at α = 1
    // Greedy speculative decoding emits exactly the greedy tokens.
    const json c = ok("/explain/trace", {{"context", "Once upon a time"}, {"max_tokens", 20}});
    for (size_t i = 0; i < c["steps"].size(); ++i) {
      EXPECT_EQ(tokens[i], c["steps"][i]["token"].get<int32_t>()) << proposer << " token " << i;
    }
  }
}

TEST_F(ExplainerApiTest, SpeculativeRejectsBadParameters) {
  expect_error("/explain/speculative", {{"proposer", "draft"}}, 400, "proposer");
  expect_error("/explain/speculative", {{"proposer", "oracle"}}, 400, "proposer");
  expect_error("/explain/speculative", {{"gamma", 0}}, 400, "gamma");
  expect_error("/explain/speculative", {{"gamma", 17}}, 400, "gamma");
  expect_error("/explain/speculative", {{"proposer", "self"}, {"self_layers", 99}}, 400, "self_layers");
}

TEST_F(ExplainerApiTest, BatchingCurveRunsInTheBackgroundAndIsCached) {
  const json request = {{"batch_sizes", {1, 2, 4}}, {"prompt_tokens", 8}, {"gen_tokens", 8}};
  const HttpResult started = post_json(server_->port(), "/explain/batching", request);
  ASSERT_TRUE(started.status == 202 || started.status == 200) << started.body;
  EXPECT_EQ(started.json["total"], 3);
  json status;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = get(server_->port(), "/explain/batching").json;
  } while (status["state"] == "running" && std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(status["state"], "done") << status.dump();
  ASSERT_EQ(status["points"].size(), 3u);
  EXPECT_EQ(status["completed"], 3);
  for (const json& p : status["points"]) EXPECT_GT(p["gen_tok_s"].get<double>(), 0.0);
  const int64_t knee = status["knee"];
  EXPECT_TRUE(knee == 1 || knee == 2 || knee == 4);
  const HttpResult again = post_json(server_->port(), "/explain/batching", request);
  EXPECT_EQ(again.status, 200);
  EXPECT_TRUE(again.json["cached"].get<bool>());
  EXPECT_EQ(again.json["points"], status["points"]);

  expect_error("/explain/batching", {{"batch_sizes", {0}}}, 400, "batch_sizes");
  expect_error("/explain/batching", {{"batch_sizes", json::array()}}, 400, "batch_sizes");
  expect_error("/explain/batching", {{"prompt_tokens", 0}}, 400, "prompt_tokens");
  expect_error("/explain/batching", {{"gen_tokens", 1}}, 400, "gen_tokens");
}

TEST_F(ExplainerApiTest, DegenerationComparesGreedyBeamAndSamplingWithRepetitionMeasures) {
  const json d = ok("/explain/degeneration", {{"context", "Once upon a time"}, {"max_tokens", 48}, {"num_beams", 3}, {"seed", 5}});
  ASSERT_EQ(d["outputs"].size(), 3u);
  EXPECT_EQ(d["outputs"][0]["method"], "greedy");
  EXPECT_EQ(d["outputs"][1]["method"], "beam");
  EXPECT_EQ(d["outputs"][2]["method"], "sampling");
  EXPECT_EQ(d["seed"], 5);
  for (const json& o : d["outputs"]) {
    const json& r = o["repetition"];
    EXPECT_EQ(r["num_tokens"], o["tokens"].size());
    ASSERT_EQ(o["pieces"].size(), o["tokens"].size());
    EXPECT_LE(o["tokens"].size(), 48u);
    EXPECT_GE(r["repeated_4gram_share"].get<double>(), 0.0);
    EXPECT_LE(r["repeated_4gram_share"].get<double>(), 1.0);
    EXPECT_LE(r["distinct_2"].get<double>(), 1.0);
    // The measures are those of the returned tokens.
    const explain::RepetitionMeasures m = explain::measure_repetition(o["tokens"].get<std::vector<int32_t>>());
    EXPECT_DOUBLE_EQ(r["repeated_4gram_share"].get<double>(), m.repeated_4gram_share);
    EXPECT_EQ(r["longest_loop"], m.longest_loop);
  }
  // Greedy is the argmax chain: it starts like /explain/continuations' greedy and repeats exactly.
  const json c = ok("/explain/continuations", {{"context", "Once upon a time"}, {"max_tokens", 4}, {"num_beams", 1}});
  EXPECT_EQ(d["outputs"][0]["tokens"][0], c["greedy"]["tokens"][0]);
  const json again = ok("/explain/degeneration", {{"context", "Once upon a time"}, {"max_tokens", 48}, {"num_beams", 3}, {"seed", 5}});
  EXPECT_EQ(again["outputs"], d["outputs"]);
  expect_error("/explain/degeneration", {{"num_beams", 9}}, 400, "num_beams");
  expect_error("/explain/degeneration", {{"max_tokens", 0}}, 400, "max_tokens");
}

TEST_F(ExplainerApiTest, SchedulesServeTheWorkloadContinuouslyInFewerStepsThanStatically) {
  const std::vector<int64_t> lengths = {24, 3, 5, 20, 4, 6, 18, 2};
  const json s = ok("/explain/schedules", {{"gen_lengths", lengths}, {"max_batch", 4}, {"prompt_tokens", 4}});
  for (const char* mode : {"continuous", "static"}) {
    const json& run = s[mode];
    ASSERT_EQ(run["requests"].size(), lengths.size()) << mode;
    for (size_t i = 0; i < lengths.size(); ++i) {
      const json& r = run["requests"][i];
      EXPECT_EQ(r["gen_tokens"], lengths[i]);
      EXPECT_LT(r["slot"].get<int64_t>(), 4);
      EXPECT_LT(r["admitted_seconds"].get<double>(), r["finished_seconds"].get<double>()) << mode << " request " << i;
      // No two requests hold one slot at once.
      for (size_t j = 0; j < i; ++j) {
        const json& o = run["requests"][j];
        if (o["slot"] != r["slot"]) continue;
        EXPECT_TRUE(o["finished_seconds"].get<double>() <= r["admitted_seconds"].get<double>() ||
                    r["finished_seconds"].get<double>() <= o["admitted_seconds"].get<double>())
            << mode << " requests " << j << " and " << i;
      }
    }
    for (const json& step : run["steps"]) EXPECT_LE(step["num_running"].get<int64_t>(), 4);
    EXPECT_GT(run["mean_occupancy"].get<double>(), 0.0);
    EXPECT_LE(run["mean_occupancy"].get<double>(), 1.0 + 1e-9);
  }
  // Static: each group of 4 runs as long as its longest request (24 + 18 steps; the prefill step
  // yields each request's first token); continuous refills freed slots, needing fewer steps.
  EXPECT_EQ(s["static"]["steps"].size(), 24u + 18u);
  EXPECT_LT(s["continuous"]["steps"].size(), s["static"]["steps"].size());
  // Static batching admits request 5 only once the whole first group has finished.
  double first_group_end = 0;
  for (size_t i = 0; i < 4; ++i) first_group_end = std::max(first_group_end, s["static"]["requests"][i]["finished_seconds"].get<double>());
  EXPECT_GE(s["static"]["requests"][4]["admitted_seconds"].get<double>(), first_group_end);
  expect_error("/explain/schedules", {{"gen_lengths", {0}}}, 400, "gen_lengths");
  expect_error("/explain/schedules", {{"max_batch", 0}}, 400, "max_batch");
}

TEST_F(ExplainerApiTest, KvMemoryFitsMoreRequestsPagedThanContiguous) {
  // stories260K: 5 layers × kv_dim 32 × K and V × 4 bytes = 1280 bytes per token, 20480 per block of 16;
  // 1 MiB holds 51 blocks = 816 positions.
  const json m = ok("/explain/kv_memory", {{"lengths", {20, 40}}, {"kv_cache_mib", 1}, {"max_model_len", 128}});
  EXPECT_EQ(m["block_size"], 16);
  EXPECT_EQ(m["bytes_per_block"], 20480);
  EXPECT_EQ(m["num_blocks"], 51);
  // Paged: 2 + 3 blocks per pair of requests: 10 pairs take 50 blocks, the 21st request needs 2.
  EXPECT_EQ(m["paged"]["requests"], 20);
  EXPECT_EQ(m["paged"]["tokens"], 10 * 60);
  EXPECT_EQ(m["paged"]["wasted_tokens"], 10 * (12 + 8));
  int64_t used = 0;
  for (const json& owner : m["paged"]["block_owner"]) used += owner.get<int64_t>() >= 0;
  EXPECT_EQ(used, 50);
  // Contiguous: floor(816 / 128) reservations of 128 positions.
  EXPECT_EQ(m["contiguous"]["requests"], 6);
  EXPECT_EQ(m["contiguous"]["reserved_tokens"], 6 * 128);
  EXPECT_EQ(m["contiguous"]["tokens"], 3 * 60);
  expect_error("/explain/kv_memory", {{"lengths", {0}}}, 400, "lengths");
  expect_error("/explain/kv_memory", {{"lengths", {200}}, {"max_model_len", 128}}, 400, "lengths");
}

TEST_F(ExplainerApiTest, SpeedPanelsAnswer409WhileAMeasurementRuns) {
  // A curve long enough to be running when the next requests arrive (they follow the 202 at once).
  const json request = {{"batch_sizes", {1, 16, 64}}, {"prompt_tokens", 64}, {"gen_tokens", 128}};
  const HttpResult started = post_json(server_->port(), "/explain/batching", request);
  ASSERT_EQ(started.status, 202) << started.body;
  for (const auto& [path, body] : std::vector<std::pair<std::string, json>>{
           {"/explain/trace", {{"max_tokens", 4}}},
           {"/explain/speculative", {{"max_tokens", 4}}},
           {"/explain/schedules", {{"gen_lengths", {2, 3}}}},
           {"/explain/batching", {{"batch_sizes", {1}}}}}) {
    const HttpResult busy = post_json(server_->port(), path, body);
    EXPECT_EQ(busy.status, 409) << path << ": " << busy.body;
    EXPECT_EQ(busy.json["error"]["code"], "busy") << busy.body;
  }
  // The same curve again is its progress, not a conflict; panel 1 is not a speed panel.
  EXPECT_EQ(post_json(server_->port(), "/explain/batching", request).status, 202);
  ok("/explain/distribution", {{"context", "Once upon a time"}});
  json status;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = get(server_->port(), "/explain/batching").json;
  } while (status["state"] == "running" && std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(status["state"], "done") << status.dump();
  ok("/explain/trace", {{"max_tokens", 4}});  // the slot is free again
}

TEST(ExplainerRepetition, CountsRepeatedFourGramsDistinctBigramsAndTheLongestLoop) {
  // "a b c a b c a b": 4-grams abca bcab cabc abca(again) bcab(again) → 2 of 5 repeated.
  const std::vector<int32_t> loop = {1, 2, 3, 1, 2, 3, 1, 2};
  const explain::RepetitionMeasures m = explain::measure_repetition(loop);
  EXPECT_EQ(m.num_tokens, 8);
  EXPECT_DOUBLE_EQ(m.repeated_4gram_share, 2.0 / 5.0);
  EXPECT_DOUBLE_EQ(m.distinct_2, 3.0 / 7.0);  // ab bc ca
  EXPECT_EQ(m.longest_loop, 5);  // "a b c a b" at 0 and again at 3 (overlapping)
  EXPECT_EQ(m.loop_period, 3);
  EXPECT_EQ(m.loop_start, 0);

  const std::vector<int32_t> fresh = {1, 2, 3, 4, 5, 6};
  const explain::RepetitionMeasures f = explain::measure_repetition(fresh);
  EXPECT_EQ(f.repeated_4gram_share, 0.0);
  EXPECT_EQ(f.distinct_2, 1.0);
  EXPECT_EQ(f.longest_loop, 0);

  // "x the the the y": "the the" at 1 and at 2.
  const std::vector<int32_t> stutter = {9, 7, 7, 7, 8};
  const explain::RepetitionMeasures s = explain::measure_repetition(stutter);
  EXPECT_EQ(s.longest_loop, 2);
  EXPECT_EQ(s.loop_period, 1);
  EXPECT_EQ(s.loop_start, 1);

  // A phrase the text comes back to, not back to back: "5 6 7" at 1 and at 6.
  const std::vector<int32_t> phrase = {1, 5, 6, 7, 2, 3, 5, 6, 7, 4};
  const explain::RepetitionMeasures p = explain::measure_repetition(phrase);
  EXPECT_EQ(p.longest_loop, 3);
  EXPECT_EQ(p.loop_start, 1);
  EXPECT_EQ(p.loop_period, 5);

  EXPECT_EQ(explain::measure_repetition(std::vector<int32_t>{}).num_tokens, 0);
  EXPECT_EQ(explain::measure_repetition(std::vector<int32_t>{4, 4}).longest_loop, 1);
}

TEST_F(ExplainerApiTest, ServesTheEmbeddedPage) {
  const HttpResult page = get(server_->port(), "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("nucleus explainer"), std::string::npos);
  EXPECT_NE(page.body.find("/explainer/app.js"), std::string::npos);
  for (const char* file : {"app.js", "api.js", "charts.js", "style.css", "panel_distribution.js", "panel_roofline.js",
                           "panel_speculative.js", "panel_batching.js", "panel_degeneration.js", "trace_player.js",
                           "speculative_theory.js", "panel_schedules.js", "panel_kv_memory.js"}) {
    const HttpResult asset = get(server_->port(), std::string("/explainer/") + file);
    EXPECT_EQ(asset.status, 200) << file;
    EXPECT_FALSE(asset.body.empty()) << file;
  }
  const HttpResult missing = get(server_->port(), "/explainer/missing.js");
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(missing.json.contains("error"));
}

}  // namespace
}  // namespace nucleus::test
