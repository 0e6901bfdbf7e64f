// Tokenizer throughput on 1 MB of mixed English prose, source code and CJK text, one thread.
// The target (issue 3) is >= 5 MB/s with the Llama 3 vocabulary; the bytes/s column is that figure.
//
// Needs the shared vocabularies: set NUCLEUS_SHARED_DIR, or run from the project root with ../shared.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

std::string shared_dir() {
  if (const char* env = std::getenv("NUCLEUS_SHARED_DIR"); env && *env) return env;
#ifdef NUCLEUS_SHARED_DIR
  return NUCLEUS_SHARED_DIR;
#else
  return "../shared";
#endif
}

// Deterministic pseudo-random text: paragraphs of English (~60% of bytes), code (~25%) and CJK
// (~15%), varied enough that no tokenizer cache could reduce it to a few distinct words.
std::string mixed_text(size_t target_bytes) {
  static const char* const kEnglish[] = {
      "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "was", "on", "with", "as", "by", "at",
      "model", "token", "inference", "language", "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog",
      "however", "although", "understanding", "significantly", "don't", "we'll", "it's", "I've", "they're",
      "Paris", "London", "NASA", "OpenAI", "GPU", "memory", "bandwidth", "throughput", "latency", "cache",
      "probability", "distribution", "sampling", "temperature", "nucleus", "beam", "search", "speculative"};
  static const char* const kCode[] = {
      "int main(int argc, char** argv) {\n", "    for (size_t i = 0; i < n; ++i) {\n", "        sum += x[i] * w[i];\n",
      "    }\n", "    return 0;\n}\n", "def forward(self, x):\n", "    h = self.norm(x)\n",
      "    return self.proj(F.silu(self.w1(h)) * self.w3(h))\n", "if (ptr == nullptr) throw std::runtime_error(\"null\");\n",
      "const auto& [key, value] = *it;\n", "x = np.zeros((4096, 128), dtype=np.float32)  # cache\n",
      "SELECT id, name FROM users WHERE age > 42;\n", "<div class=\"row\">{{ item.title }}</div>\n"};
  static const char* const kCjkPunctuation[] = {"\xEF\xBC\x8C", "\xE3\x80\x82", "\xE3\x80\x81", "\xEF\xBC\x9F"};

  std::mt19937 rng(12345);
  auto uniform = [&](uint32_t low, uint32_t high) { return std::uniform_int_distribution<uint32_t>(low, high)(rng); };
  std::string text;
  text.reserve(target_bytes + 4096);
  while (text.size() < target_bytes) {
    const uint32_t kind = uniform(0, 19);
    if (kind < 12) {  // English paragraph with numbers and punctuation
      for (uint32_t n = uniform(20, 80); n > 0; --n) {
        text += kEnglish[uniform(0, sizeof kEnglish / sizeof kEnglish[0] - 1)];
        const uint32_t r = uniform(0, 30);
        if (r == 0) {
          text += ' ';
          text += std::to_string(uniform(0, 100000));
        }
        text += r == 1 ? ", " : r == 2 ? ". " : " ";
      }
      text += "\n\n";
    } else if (kind < 17) {  // code
      for (uint32_t n = uniform(3, 12); n > 0; --n) text += kCode[uniform(0, sizeof kCode / sizeof kCode[0] - 1)];
      text += "\n";
    } else {  // CJK: Chinese ideographs, some kana and Hangul, full-width punctuation
      for (uint32_t n = uniform(20, 120); n > 0; --n) {
        const uint32_t r = uniform(0, 9);
        const uint32_t codepoint = r < 7 ? uniform(0x4E00, 0x9FA5) : r < 9 ? uniform(0x3041, 0x3093) : uniform(0xAC00, 0xD7A3);
        nucleus::unicode::append_utf8(codepoint, text);
        if (uniform(0, 15) == 0) text += kCjkPunctuation[uniform(0, 3)];
      }
      text += "\n";
    }
  }
  return text;
}

const std::string& one_megabyte() {
  static const std::string text = mixed_text(1 << 20);
  return text;
}

std::unique_ptr<nucleus::Tokenizer> load(const std::string& vocab_name) {
  const auto file = nucleus::GgufFile::open(shared_dir() + "/vocab/ggml-vocab-" + vocab_name + ".gguf");
  return nucleus::Tokenizer::from_gguf(*file);
}

void BM_Encode(benchmark::State& state, const std::string& vocab_name) {
  std::unique_ptr<nucleus::Tokenizer> tokenizer;
  try {
    tokenizer = load(vocab_name);
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
    return;
  }
  const std::string& text = one_megabyte();
  size_t n_tokens = 0;
  for (auto _ : state) {
    const std::vector<int32_t> ids = tokenizer->encode(text, false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}

void BM_Decode(benchmark::State& state, const std::string& vocab_name) {
  std::unique_ptr<nucleus::Tokenizer> tokenizer;
  try {
    tokenizer = load(vocab_name);
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
    return;
  }
  const std::vector<int32_t> ids = tokenizer->encode(one_megabyte(), false, false);
  for (auto _ : state) {
    const std::string text = tokenizer->decode(ids);
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(one_megabyte().size()));
}

void BM_LoadVocabulary(benchmark::State& state, const std::string& vocab_name) {
  for (auto _ : state) {
    try {
      benchmark::DoNotOptimize(load(vocab_name).get());
    } catch (const std::exception& error) {
      state.SkipWithError(error.what());
      return;
    }
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_Encode, llama3_1MB_mixed, std::string("llama-bpe"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, qwen2_1MB_mixed, std::string("qwen2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, gpt2_1MB_mixed, std::string("gpt-2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, llama_spm_1MB_mixed, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, llama3_1MB_mixed, std::string("llama-bpe"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadVocabulary, llama3, std::string("llama-bpe"))->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
