// `nucleus bench serve`: starts its own `nucleus serve` on stories260K, sweeps two request rates with
// a few small streaming requests, and reports one JSON object per rate. Checks the report's shape,
// exact token counts and that nothing failed — not timings.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_helpers.h"

namespace nucleus::test {
namespace {

using nlohmann::json;

TEST(CliBenchServe, ReportsEveryRateWithExactCountsAndNoErrors) {
  NUCLEUS_REQUIRE_SHARED();
  const CommandResult r = run_nucleus("bench serve -m " + shared_path("models/stories260K.gguf") +
                                      " -t 1 --rate 20,inf --num-prompts 6 --prompt-len 8 --output-len 5 --seed 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json report = json::parse(r.out);
  ASSERT_TRUE(report.is_array());
  ASSERT_EQ(report.size(), 2u);
  EXPECT_EQ(report[0]["request_rate"], 20.0);
  EXPECT_EQ(report[1]["request_rate"], "inf");
  for (const json& rate : report) {
    EXPECT_EQ(rate["completed"], 6) << rate.dump();
    EXPECT_EQ(rate["failed"], 0) << rate.dump();
    EXPECT_TRUE(rate["errors"].empty()) << rate.dump();
    EXPECT_EQ(rate["prompt_tokens"], 6 * 8);
    EXPECT_EQ(rate["output_tokens"], 6 * 5);
    EXPECT_GT(rate["duration_s"].get<double>(), 0.0);
    EXPECT_GT(rate["request_throughput"].get<double>(), 0.0);
    EXPECT_GT(rate["output_throughput"].get<double>(), 0.0);
    for (const char* metric : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_latency_ms"}) {
      const json& m = rate[metric];
      ASSERT_TRUE(m.is_object()) << metric;
      EXPECT_GT(m["mean"].get<double>(), 0.0) << metric;
      EXPECT_LE(m["p50"].get<double>(), m["p99"].get<double>()) << metric;
    }
    EXPECT_GE(rate["e2e_latency_ms"]["p50"].get<double>(), rate["ttft_ms"]["p50"].get<double>());
  }
}

TEST(CliBenchServe, AnUnreachableServerIsAnError) {
  const CommandResult r = run_nucleus("bench serve --url http://127.0.0.1:1 --num-prompts 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error: bench serve"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace nucleus::test
