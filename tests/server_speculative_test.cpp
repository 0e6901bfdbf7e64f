// `serve --draft/--spec`: every completion speculates, and the answers are the plain server's.
// Greedy speculation is exact token for token; seeded sampling is exact in distribution only, so
// the sampled requests here check that a speculative server answers them fully, not their text.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "speculative/draft_batch.h"
#include "speculative/draft_model_proposer.h"
#include "server_test_harness.h"

namespace nucleus::test {
namespace {

nlohmann::json completion(const std::string& prompt, double temperature, int seed) {
  return {{"model", "test-model"}, {"prompt", prompt}, {"max_tokens", 40}, {"temperature", temperature}, {"seed", seed}};
}

TEST(ServerSpeculation, ConcurrentGreedyCompletionsMatchThePlainServer) {
  NUCLEUS_REQUIRE_SHARED();
  const std::string model_path = shared_path("models/stories260K.gguf");
  TestServer plain(model_path);
  TestServer speculative(model_path, {}, {}, /*attach_model=*/false);
  // The draft: a second copy of the model file, all sequences in one DraftBatch (as serve does).
  const LoadedModel draft = load_model(ModelSource{model_path, "", {}});
  auto batch = std::make_shared<DraftBatch>(*draft.model, 1);
  server::Speculation speculation;
  speculation.gamma = 4;
  speculation.make_proposer = [batch](const SamplingParams& s) -> std::shared_ptr<Proposer> {
    return std::make_shared<DraftModelProposer>(batch, s, "draft:stories260K");
  };
  speculative.attach(speculation);

  const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Lily and Ben went", "One day, a bird"};
  std::vector<std::future<HttpResult>> answers;
  for (const std::string& p : prompts)
    answers.push_back(std::async(std::launch::async, [&, p] { return post_json(speculative.port(), "/v1/completions", completion(p, 0.0, 1)); }));
  auto sampled = std::async(std::launch::async, [&] {
    return post_json(speculative.port(), "/v1/completions", completion("Once upon a time", 0.9, 7));
  });
  for (size_t i = 0; i < prompts.size(); ++i) {
    const HttpResult got = answers[i].get();
    const HttpResult want = post_json(plain.port(), "/v1/completions", completion(prompts[i], 0.0, 1));
    ASSERT_EQ(got.status, 200) << got.body;
    ASSERT_EQ(want.status, 200) << want.body;
    EXPECT_EQ(got.json["choices"][0]["text"], want.json["choices"][0]["text"]) << prompts[i];
    EXPECT_EQ(got.json["usage"], want.json["usage"]) << prompts[i];
  }
  const HttpResult s = sampled.get();
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_EQ(s.json["usage"]["completion_tokens"], 40);

  const EngineStats stats = speculative.engine().engine().stats();
  EXPECT_GT(stats.spec.num_proposed, 0);
  EXPECT_GT(stats.spec.num_accepted, 0);  // the draft is the model itself: greedy drafts are all right
  EXPECT_EQ(plain.engine().engine().stats().spec.num_proposed, 0);
  const HttpResult metrics = get(speculative.port(), "/metrics");
  EXPECT_EQ(metric_value(metrics.body, "nucleus_spec_decode_num_draft_tokens_total"), static_cast<double>(stats.spec.num_proposed));
  EXPECT_EQ(metric_value(metrics.body, "nucleus_spec_decode_num_accepted_tokens_total"), static_cast<double>(stats.spec.num_accepted));
  // Every finished sequence gives its draft blocks back (once the engine thread has let it go).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (batch->blocks_in_use() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(batch->blocks_in_use(), 0);
}

}  // namespace
}  // namespace nucleus::test
