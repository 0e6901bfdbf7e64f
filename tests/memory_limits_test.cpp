// A model or KV cache that needs more memory than the machine (or its container) has is refused
// with a clear Error before anything large is allocated: Linux overcommits, so an allocation that
// is too large succeeds and the OOM killer ends the process later, when the pages are touched.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/weight_memory.h"
#include "engine/llm_engine.h"
#include "io/gguf.h"
#include "model/model.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

std::string stories() { return test::shared_path("models/stories260K.gguf"); }

size_t tensor_bytes(const GgufFile& file) { return file.file_size() - file.data_offset(); }

std::string load_error(const ModelLoadOptions& options) {
  try {
    Model::load(GgufFile::open(stories()), options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MemoryLimits, TheAvailableMemoryIsMeasured) {
  const size_t available = available_memory_bytes();
  EXPECT_GT(available, size_t{16} << 20);  // a machine that runs this suite has more than 16 MiB free
  EXPECT_LT(available, size_t{1} << 50);   // and a real figure, not a cgroup's "no limit"
  EXPECT_EQ(gib_text(size_t{3} << 29), "1.50 GiB");
}

TEST(MemoryLimits, WeightsLargerThanTheAvailableMemoryAreRefusedBeforeLoading) {
  NUCLEUS_REQUIRE_SHARED();
  const size_t need = tensor_bytes(*GgufFile::open(stories()));
  ASSERT_GT(need, 1000u);
  ModelLoadOptions options;
  options.available_memory = need - 1;
  const std::string error = load_error(options);
  EXPECT_NE(error.find("stories260K.gguf: the weights take"), std::string::npos) << error;
  EXPECT_NE(error.find("of memory is available"), std::string::npos) << error;
  EXPECT_NE(error.find("--no-memory-check"), std::string::npos) << error;

  options.available_memory = need;  // exactly enough
  EXPECT_EQ(load_error(options), "");
  options.available_memory = 1;  // not enough, but the user said to go on
  options.check_memory = false;
  EXPECT_EQ(load_error(options), "");
}

TEST(MemoryLimits, AKvCacheLargerThanTheMemoryLeftIsRefusedBeforeAllocation) {
  NUCLEUS_REQUIRE_SHARED();
  auto model = Model::load(GgufFile::open(stories()));
  EngineConfig config;
  config.kv_cache_bytes = 64ll << 20;
  // The budget is what is left beside the mapped weights.
  config.available_memory = model->mapped_weight_bytes() + (32u << 20);
  try {
    LLMEngine engine(*model, nullptr, config);
    FAIL() << "a 64 MiB pool was allocated in 32 MiB";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the KV cache needs 0.06 GiB"), std::string::npos) << what;
    EXPECT_NE(what.find("only 0.03 GiB of memory is left"), std::string::npos) << what;
    EXPECT_NE(what.find("--kv-cache-mem"), std::string::npos) << what;
  }
  config.available_memory = model->mapped_weight_bytes() + (80u << 20);
  EXPECT_NO_THROW(LLMEngine(*model, nullptr, config));
  config.available_memory = 1;
  config.check_memory = false;
  EXPECT_NO_THROW(LLMEngine(*model, nullptr, config));
}

TEST(MemoryLimits, AHybridModelsRecurrentStateCountsAgainstTheBudget) {
  NUCLEUS_REQUIRE_SHARED();
  auto model = Model::load(GgufFile::open(test::shared_path("models/arch/qwen35.gguf")));
  EngineConfig config;
  config.num_blocks = 1;  // almost no K/V rows: what remains is the state of 64 slots
  config.max_num_seqs = 64;
  config.available_memory = model->mapped_weight_bytes() + 1024;
  try {
    LLMEngine engine(*model, nullptr, config);
    FAIL() << "the recurrent state was allocated past the budget";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("and the recurrent state"), std::string::npos) << e.what();
  }
}

// The real measurement, end to end: a 1 TiB KV pool on a machine that has less is a one-line error
// and exit status 1, not an OOM kill (a zero-filled 1 TiB vector would be one).
TEST(MemoryLimits, ServeWithAKvCacheLargerThanTheMachineExitsWithTheReason) {
  NUCLEUS_REQUIRE_SHARED();
  ASSERT_LT(available_memory_bytes(), size_t{1} << 40) << "the test wants a machine with less than 1 TiB available";
  const test::CommandResult r =
      test::run_nucleus("serve -m " + stories() + " --port 0 --kv-cache-mem 1048576");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the KV cache needs 1024.00 GiB"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace nucleus
