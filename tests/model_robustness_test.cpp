// Malformed model files: truncated and byte-flipped copies of every shared model must give a
// nucleus::Error (or, for a flip that leaves the file well-formed, a working model) and never
// crash or read out of bounds (the suite also runs under AddressSanitizer).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/error.h"
#include "model/sequence_runner.h"
#include "io/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

const char* kModels[] = {"stories260K.gguf",          "test/llama-spm-f32.gguf", "test/llama-spm-f16.gguf",
                         "test/llama-spm-q8_0.gguf",  "test/llama-spm-q4_0.gguf", "test/qwen2-f16.gguf",
                         "test/llama3-f16.gguf",      "arch/llama31.gguf",       "arch/mixtral.gguf",
                         "arch/qwen3.gguf",           "arch/qwen3moe.gguf",      "arch/phi3.gguf",
                         "arch/phi3-long.gguf",       "arch/gemma2.gguf",        "arch/gemma3.gguf",
                         "arch/gemma4.gguf",          "arch/qwen35.gguf"};

std::vector<uint8_t> read_bytes(const std::string& path) {
  const std::string s = test::read_file(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

// Loads everything a user's command would: file, tokenizer, model, and one forward step.
void load_everything(std::vector<uint8_t> bytes) {
  auto file = GgufFile::from_bytes(std::move(bytes), "mutated.gguf");
  auto tokenizer = Tokenizer::from_gguf(*file);
  auto model = Model::load(std::move(file));
  SequenceRunner runner(*model, 4, 1);
  runner.feed({0, 1});
  (void)tokenizer->encode("Hi there", true, false);
}

class Robustness : public testing::TestWithParam<const char*> {};

TEST_P(Robustness, TruncatedCopiesAreErrors) {
  NUCLEUS_REQUIRE_SHARED();
  const auto bytes = read_bytes(test::shared_path(std::string("models/") + GetParam()));
  auto intact = GgufFile::from_bytes(bytes, "intact.gguf");
  // Where the last tensor's data ends: only padding after it could be cut without harm.
  size_t data_end = 0;
  for (const TensorInfo& t : intact->tensors())
    data_end = std::max<size_t>(data_end, intact->data_offset() + t.offset + t.nbytes);
  std::vector<size_t> cuts;
  for (size_t c = 0; c < std::min<size_t>(bytes.size(), 4096); c += 3) cuts.push_back(c);
  std::mt19937 rng(42);
  for (int i = 0; i < 60; ++i) cuts.push_back(std::uniform_int_distribution<size_t>(4096, data_end - 1)(rng));
  cuts.push_back(data_end - 1);
  size_t errors = 0;
  for (size_t cut : cuts) {
    std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
    try {
      load_everything(std::move(truncated));
      ADD_FAILURE() << "truncation at " << cut << " of " << bytes.size() << " was not detected";
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_EQ(errors, cuts.size());
}

TEST_P(Robustness, ByteFlipsAreErrorsOrHarmless) {
  NUCLEUS_REQUIRE_SHARED();
  const auto bytes = read_bytes(test::shared_path(std::string("models/") + GetParam()));
  std::mt19937 rng(7);
  const size_t header = std::min<size_t>(bytes.size(), 8192);
  int errors = 0, loaded = 0;
  for (int i = 0; i < 100; ++i) {
    auto mutated = bytes;
    // Mostly the header (lengths, types, counts, dims, offsets), sometimes the data.
    const size_t at = i % 5 == 4 ? std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng)
                                 : std::uniform_int_distribution<size_t>(0, header - 1)(rng);
    mutated[at] ^= static_cast<uint8_t>(1u << std::uniform_int_distribution<int>(0, 7)(rng));
    try {
      load_everything(std::move(mutated));
      ++loaded;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  RecordProperty("errors", errors);
  RecordProperty("loaded", loaded);
}

TEST_P(Robustness, StructuralFieldCorruptionIsAlwaysAnError) {
  NUCLEUS_REQUIRE_SHARED();
  const auto bytes = read_bytes(test::shared_path(std::string("models/") + GetParam()));
  auto expect_error = [&](std::vector<uint8_t> m, const char* what) {
    EXPECT_THROW(load_everything(std::move(m)), Error) << what;
  };
  auto m = bytes;
  m[0] ^= 0x20;
  expect_error(m, "magic");
  m = bytes;
  m[4] = 9;
  expect_error(m, "version");
  m = bytes;
  m[8 + 7] = 0x7f;  // tensor count's top byte
  expect_error(m, "tensor count");
  m = bytes;
  m[16 + 7] = 0x7f;  // metadata count's top byte
  expect_error(m, "metadata count");
  m = bytes;
  m[24 + 7] = 0x7f;  // first key's length, top byte
  expect_error(m, "first key length");
}

INSTANTIATE_TEST_SUITE_P(SharedModels, Robustness, testing::ValuesIn(kModels), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});

}  // namespace
}  // namespace nucleus
