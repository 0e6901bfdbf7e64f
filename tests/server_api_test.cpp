// The OpenAI-compatible server end to end: the real HttpServer + AsyncEngine in-process on a free
// loopback port, spoken to over HTTP. Completions run on stories260K, chat on the Qwen2 test model
// (ChatML template, byte-level BPE: its deltas exercise UTF-8 boundaries).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "server/http_server.h"
#include "server_test_harness.h"
#include "tokenizer/unicode.h"

namespace nucleus::test {
namespace {

using nlohmann::json;

class ServerApiTest : public TwoServersTest<ServerApiTest> {
 protected:
  static json completion(int port, json body) {
    const HttpResult r = post_json(port, "/v1/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json;
  }
};

TEST_F(ServerApiTest, CompletionHasOpenAIShapeAndExactUsage) {
  const json r = completion(stories_->port(), {{"model", "test-model"}, {"prompt", "Once upon a time"}, {"max_tokens", 20},
                                               {"temperature", 0}, {"ignore_eos", true}});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["model"], "test-model");
  EXPECT_EQ(r["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  ASSERT_EQ(r["choices"].size(), 1u);
  EXPECT_EQ(r["choices"][0]["index"], 0);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(r["choices"][0]["text"].get<std::string>().empty());
  const std::vector<int32_t> prompt = stories_->tokenizer().encode("Once upon a time", true, true);
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(r["usage"]["completion_tokens"], 20);
  EXPECT_EQ(r["usage"]["total_tokens"], prompt.size() + 20);
}

TEST_F(ServerApiTest, GreedyLogprobsPickTheArgmaxAndSpellTheText) {
  const json r = completion(stories_->port(), {{"prompt", "Lily had a"}, {"max_tokens", 12}, {"temperature", 0},
                                               {"ignore_eos", true}, {"logprobs", 3}});
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 12u);
  ASSERT_EQ(lp["token_logprobs"].size(), 12u);
  std::string spelled;
  for (size_t i = 0; i < 12; ++i) {
    const float chosen = lp["token_logprobs"][i].get<float>();
    EXPECT_LE(chosen, 0.0f);
    ASSERT_EQ(lp["top_logprobs"][i].size(), 3u);
    float best = -1e30f;
    for (const auto& [token, value] : lp["top_logprobs"][i].items()) best = std::max(best, value.get<float>());
    EXPECT_FLOAT_EQ(chosen, best) << "greedy must choose the most likely token at " << i;
    EXPECT_EQ(lp["text_offset"][i], spelled.size());
    spelled += lp["tokens"][i].get<std::string>();
  }
  EXPECT_EQ(spelled, r["choices"][0]["text"].get<std::string>());
}

TEST_F(ServerApiTest, PromptForms_StringTokensAndLists) {
  const std::vector<int32_t> ids = stories_->tokenizer().encode("The cat", true, true);
  const json by_text = completion(stories_->port(), {{"prompt", "The cat"}, {"max_tokens", 8}, {"temperature", 0}});
  const json by_ids = completion(stories_->port(), {{"prompt", ids}, {"max_tokens", 8}, {"temperature", 0}});
  EXPECT_EQ(by_text["choices"][0]["text"], by_ids["choices"][0]["text"]);
  const json batch = completion(stories_->port(), {{"prompt", {"The cat", "A dog"}}, {"max_tokens", 8}, {"temperature", 0}, {"n", 2}});
  ASSERT_EQ(batch["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(batch["choices"][i]["index"], i);
  EXPECT_EQ(batch["choices"][0]["text"], by_text["choices"][0]["text"]);
  EXPECT_EQ(batch["choices"][1]["text"], by_text["choices"][0]["text"]);  // greedy: both samples agree
  const size_t dog_tokens = stories_->tokenizer().encode("A dog", true, true).size();
  EXPECT_EQ(batch["usage"]["prompt_tokens"], ids.size() + dog_tokens);  // each prompt once, whatever n
}

TEST_F(ServerApiTest, SeedReproducesAndDifferentSeedsDiffer) {
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 1.0}, {"seed", 1234}, {"ignore_eos", true}};
  const std::string a = completion(stories_->port(), body)["choices"][0]["text"];
  const std::string b = completion(stories_->port(), body)["choices"][0]["text"];
  json other = body;
  other["seed"] = 4321;
  const std::string c = completion(stories_->port(), other)["choices"][0]["text"];
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST_F(ServerApiTest, NEqualsTwoSampleZeroMatchesTheSingleRun) {
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 1.0}, {"seed", 99}, {"ignore_eos", true}};
  const json one = completion(stories_->port(), body);
  json two_body = body;
  two_body["n"] = 2;
  const json two = completion(stories_->port(), two_body);
  ASSERT_EQ(two["choices"].size(), 2u);
  EXPECT_EQ(two["choices"][0]["text"], one["choices"][0]["text"]);
  EXPECT_NE(two["choices"][0]["text"], two["choices"][1]["text"]);
  EXPECT_EQ(two["usage"]["completion_tokens"], 60);
  EXPECT_EQ(two["usage"]["prompt_tokens"], one["usage"]["prompt_tokens"]);
}

TEST_F(ServerApiTest, StreamingEqualsNonStreamingForTheSameSeed) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 48}, {"temperature", 0.9}, {"seed", seed}};
    const json full = completion(stories_->port(), body);
    const StreamResult stream = post_stream(stories_->port(), "/v1/completions", body);
    EXPECT_EQ(stream.status, 200);
    EXPECT_TRUE(stream.done);
    EXPECT_EQ(stream_text(stream), full["choices"][0]["text"].get<std::string>());
    ASSERT_FALSE(stream.chunks.empty());
    EXPECT_EQ(stream.chunks.back()["choices"][0]["finish_reason"], full["choices"][0]["finish_reason"]);
    for (size_t i = 0; i + 1 < stream.chunks.size(); ++i) EXPECT_TRUE(stream.chunks[i]["choices"][0]["finish_reason"].is_null());
  }
}

TEST_F(ServerApiTest, StreamSendsOneChunkPerTokenAndUsageWhenAsked) {
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0}, {"ignore_eos", true},
                     {"stream_options", {{"include_usage", true}}}};
  const StreamResult stream = post_stream(stories_->port(), "/v1/completions", body);
  ASSERT_TRUE(stream.done);
  ASSERT_EQ(stream.chunks.size(), 17u);  // 16 token chunks + the usage chunk
  for (size_t i = 0; i < 16; ++i) EXPECT_TRUE(stream.chunks[i]["usage"].is_null());
  const json& last = stream.chunks.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], 16);
  EXPECT_EQ(last["usage"]["prompt_tokens"], stories_->tokenizer().encode("Once upon a time", true, true).size());
}

TEST_F(ServerApiTest, StopStringsCutTheTextAndFinishWithStop) {
  const json base = {{"prompt", "Once upon a time"}, {"max_tokens", 60}, {"temperature", 0}, {"ignore_eos", true}};
  const std::string text = completion(stories_->port(), base)["choices"][0]["text"];
  ASSERT_GT(text.size(), 30u);
  const std::string stop = text.substr(20, 4);
  const std::string expected = text.substr(0, text.find(stop));
  json body = base;
  body["stop"] = {stop, "never-appears-xyz"};
  const json r = completion(stories_->port(), body);
  EXPECT_EQ(r["choices"][0]["text"], expected);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  const StreamResult stream = post_stream(stories_->port(), "/v1/completions", body);
  EXPECT_EQ(stream_text(stream), expected);
  EXPECT_EQ(stream.chunks.back()["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServerApiTest, ChatCompletionWithChatMLTemplate) {
  const json messages = {{{"role", "system"}, {"content", "You are terse."}}, {{"role", "user"}, {"content", "Say hello."}}};
  const HttpResult r = post_json(qwen_->port(), "/v1/chat/completions",
                                 {{"model", "test-model"}, {"messages", messages}, {"max_completion_tokens", 12}, {"seed", 5}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["object"], "chat.completion");
  EXPECT_EQ(r.json["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(r.json["choices"][0]["message"]["content"].is_string());
  const HttpResult tokens = post_json(qwen_->port(), "/tokenize", {{"messages", messages}});
  ASSERT_EQ(tokens.status, 200);
  EXPECT_EQ(r.json["usage"]["prompt_tokens"], tokens.json["count"]);
  EXPECT_LE(r.json["usage"]["completion_tokens"].get<int>(), 12);
  // The rendered prompt is ChatML: <|im_start|> opens it; /detokenize leaves control tokens out.
  EXPECT_EQ(tokens.json["tokens"][0], qwen_->tokenizer().find_token("<|im_start|>"));
  const HttpResult text = post_json(qwen_->port(), "/detokenize", {{"tokens", tokens.json["tokens"]}});
  EXPECT_EQ(text.json["prompt"], "system\nYou are terse.\nuser\nSay hello.\nassistant\n");
}

TEST_F(ServerApiTest, ChatStreamMatchesAndNeverSplitsUtf8) {
  const json messages = {{{"role", "user"}, {"content", "写一首关于猫的诗 🐱"}}};
  for (uint64_t seed : {11u, 12u, 13u, 14u}) {
    const json body = {{"messages", messages}, {"max_tokens", 40}, {"temperature", 1.0}, {"seed", seed}, {"ignore_eos", true}};
    const HttpResult full = post_json(qwen_->port(), "/v1/chat/completions", body);
    ASSERT_EQ(full.status, 200) << full.body;
    const std::string expected = full.json["choices"][0]["message"]["content"];
    const StreamResult stream = post_stream(qwen_->port(), "/v1/chat/completions", body);
    ASSERT_TRUE(stream.done);
    EXPECT_EQ(stream.chunks.front()["object"], "chat.completion.chunk");
    EXPECT_EQ(stream.chunks.front()["choices"][0]["delta"]["role"], "assistant");
    EXPECT_EQ(stream_text(stream), expected);
    for (const json& chunk : stream.chunks) {
      const json& delta = chunk["choices"][0]["delta"];
      if (!delta.contains("content")) continue;
      const std::string piece = delta["content"];
      EXPECT_TRUE(unicode::is_valid_utf8(piece));
      // A character split between two deltas would show up as U+FFFD in both halves and make the
      // concatenation differ from the non-streamed text (which the random-weight model may itself
      // fill with U+FFFD for byte tokens that never form a character).
    }
  }
}

TEST_F(ServerApiTest, ChatLogprobsHaveTheChatShape) {
  const json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 5}, {"temperature", 0},
                     {"ignore_eos", true}, {"logprobs", true}, {"top_logprobs", 2}};
  const HttpResult r = post_json(qwen_->port(), "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json& content = r.json["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u);
  for (const json& entry : content) {
    EXPECT_TRUE(entry["token"].is_string());
    EXPECT_LE(entry["logprob"].get<double>(), 0.0);
    EXPECT_TRUE(entry["bytes"].is_array());
    ASSERT_EQ(entry["top_logprobs"].size(), 2u);
    EXPECT_DOUBLE_EQ(entry["logprob"].get<double>(), entry["top_logprobs"][0]["logprob"].get<double>());
  }
}

TEST_F(ServerApiTest, ChatWithoutTemplateIsRefusedClearly) {
  const HttpResult r = post_json(stories_->port(), "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.json["error"]["message"].get<std::string>().find("--chat-template"), std::string::npos);
}

TEST_F(ServerApiTest, TokenizeDetokenizeRoundTrip) {
  const std::string text = "Once upon a time, there was a little girl named Lily.";
  const HttpResult t = post_json(stories_->port(), "/tokenize", {{"prompt", text}});
  ASSERT_EQ(t.status, 200);
  EXPECT_EQ(t.json["tokens"].get<std::vector<int32_t>>(), stories_->tokenizer().encode(text, true, true));
  EXPECT_EQ(t.json["count"], t.json["tokens"].size());
  EXPECT_EQ(t.json["max_model_len"], stories_->max_model_len());
  const HttpResult d = post_json(stories_->port(), "/detokenize", {{"tokens", t.json["tokens"]}});
  ASSERT_EQ(d.status, 200);
  EXPECT_EQ(d.json["prompt"], text);
}

TEST_F(ServerApiTest, ModelsAndHealth) {
  const HttpResult models = get(stories_->port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.json["object"], "list");
  ASSERT_EQ(models.json["data"].size(), 1u);
  EXPECT_EQ(models.json["data"][0]["id"], "test-model");
  EXPECT_EQ(models.json["data"][0]["object"], "model");
  EXPECT_EQ(get(stories_->port(), "/health").status, 200);
}

TEST_F(ServerApiTest, MetricsCountTokensLatenciesAndFreeBlocks) {
  completion(stories_->port(), {{"prompt", "Hello"}, {"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true}});
  const HttpResult m = get(stories_->port(), "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.headers.find("Content-Type")->second.find("text/plain"), std::string::npos);
  EXPECT_GE(metric_value(m.body, "nucleus_generation_tokens_total"), 10);
  EXPECT_GE(metric_value(m.body, "nucleus_prompt_tokens_total"), 2);
  EXPECT_GE(metric_value(m.body, "nucleus_time_to_first_token_seconds_count"), 1);
  EXPECT_GE(metric_value(m.body, "nucleus_inter_token_latency_seconds_count"), 9);
  EXPECT_GE(metric_value(m.body, "nucleus_e2e_request_latency_seconds_count"), 1);
  EXPECT_EQ(metric_value(m.body, "nucleus_num_requests_running"), 0);
  EXPECT_EQ(metric_value(m.body, "nucleus_num_requests_waiting"), 0);
  EXPECT_EQ(metric_value(m.body, "nucleus_kv_cache_blocks_used"), 0);
  EXPECT_GT(metric_value(m.body, "nucleus_kv_cache_blocks_total"), 0);
  EXPECT_GE(metric_value(m.body, "nucleus_prefix_cache_hit_rate"), 0);
  EXPECT_GE(metric_value(m.body, "nucleus_num_preemptions_total"), 0);
  EXPECT_NE(m.body.find("nucleus_time_to_first_token_seconds_bucket{le=\"+Inf\"}"), std::string::npos);
}

TEST(ServerLifecycleTest, ShutdownRightAfterServeStartsStillStopsTheListener) {
  // `nucleus serve` binds, runs serve() on a thread, then loads the model; a load that fails at once
  // calls shutdown() before that thread may have reached accept(). serve() must return all the same.
  for (int round = 0; round < 100; ++round) {
    server::ServerConfig config;
    config.port = 0;
    server::HttpServer http(config);
    http.bind();
    std::thread listener([&] { http.serve(); });
    if (round % 3 == 1) std::this_thread::yield();
    if (round % 3 == 2) std::this_thread::sleep_for(std::chrono::microseconds(200));
    http.shutdown();
    listener.join();  // a stop that missed the listener hangs here (the test's timeout)
  }
}

TEST(ServerLifecycleTest, HealthIs503UntilTheModelIsAttached) {
  NUCLEUS_REQUIRE_SHARED();
  TestServer server(shared_path("models/stories260K.gguf"), {}, {}, /*attach_model=*/false);
  const HttpResult loading = get(server.port(), "/health");
  EXPECT_EQ(loading.status, 503);
  EXPECT_TRUE(loading.json["error"]["message"].is_string());
  EXPECT_EQ(post_json(server.port(), "/v1/completions", {{"prompt", "x"}}).status, 503);
  server.attach();
  EXPECT_EQ(get(server.port(), "/health").status, 200);
  EXPECT_EQ(post_json(server.port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
}

TEST(ServerLifecycleTest, ApiKeyGuardsV1Routes) {
  NUCLEUS_REQUIRE_SHARED();
  server::ServerConfig config;
  config.api_key = "sekrit";
  TestServer server(shared_path("models/stories260K.gguf"), config);
  const json body = {{"prompt", "x"}, {"max_tokens", 2}};
  const HttpResult missing = post_json(server.port(), "/v1/completions", body);
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.json["error"]["type"], "authentication_error");
  EXPECT_EQ(post_json(server.port(), "/v1/completions", body, {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(get(server.port(), "/v1/models").status, 401);
  EXPECT_EQ(post_json(server.port(), "/v1/completions", body, {{"Authorization", "Bearer sekrit"}}).status, 200);
  EXPECT_EQ(get(server.port(), "/health").status, 200);  // probes need no key
}

TEST(ServerLifecycleTest, ShutdownLetsInFlightStreamsFinish) {
  NUCLEUS_REQUIRE_SHARED();
  auto server = std::make_unique<TestServer>(shared_path("models/stories260K.gguf"));
  StreamResult stream;
  std::thread client([&] {
    stream = post_stream(server->port(), "/v1/completions",
                         {{"prompt", "Once"}, {"max_tokens", 200}, {"temperature", 0}, {"ignore_eos", true}});
  });
  while (server->http().sequences_in_flight() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread stopper([&] { server->http().shutdown(); });
  stopper.join();
  client.join();
  EXPECT_TRUE(stream.done);
  ASSERT_FALSE(stream.chunks.empty());
  EXPECT_EQ(stream.chunks.back()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(server->http().sequences_in_flight(), 0);
}

}  // namespace
}  // namespace nucleus::test
