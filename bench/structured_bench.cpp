// The per-step cost of a lazy constraint (tool_choice "auto") while the output is still free text:
// mask_logits over Qwen's 152k vocabulary, after text that does not and that does end in a proper
// prefix of the trigger. One thread.
//   cmake --build build --target structured_bench && build/bench/structured_bench
// Needs the shared test models: set NUCLEUS_SHARED_DIR, or run from the project root with ../shared.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "structured/grammar.h"
#include "structured/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string shared_dir() {
  if (const char* env = std::getenv("NUCLEUS_SHARED_DIR"); env && *env) return env;
#ifdef NUCLEUS_SHARED_DIR
  return NUCLEUS_SHARED_DIR;
#else
  return "../shared";
#endif
}

struct QwenVocabulary {
  std::unique_ptr<nucleus::Tokenizer> tokenizer;
  std::shared_ptr<const nucleus::VocabularyTrie> trie;
};

const QwenVocabulary& qwen() {
  static QwenVocabulary v = [] {
    QwenVocabulary q;
    q.tokenizer = nucleus::Tokenizer::from_gguf(*nucleus::GgufFile::open(shared_dir() + "/models/test/qwen2-f16.gguf"));
    q.trie = std::make_shared<const nucleus::VocabularyTrie>(*q.tokenizer);
    return q;
  }();
  return v;
}

void lazy_free_text_mask(benchmark::State& state, const char* text) {
  const QwenVocabulary& v = qwen();
  auto grammar = std::make_shared<const nucleus::Grammar>(
      nucleus::parse_gbnf(R"(root ::= "<tool_call>\n{\"name\": \"" [a-z_]+ "\"}\n</tool_call>")"));
  nucleus::TokenConstraint constraint(grammar, v.trie, "<tool_call>");
  for (int32_t t : v.tokenizer->encode(text, false, false))
    if (!constraint.accept_token(t)) state.SkipWithError("the text broke the constraint");
  std::vector<float> logits(static_cast<size_t>(v.trie->n_vocab()), 0.0f);
  for (auto _ : state) {
    constraint.mask_logits(logits.data(), static_cast<int64_t>(logits.size()));
    benchmark::DoNotOptimize(logits.data());
  }
}

void BM_LazyMaskFreeText(benchmark::State& state) { lazy_free_text_mask(state, "Let me think about the weather"); }
void BM_LazyMaskAfterTriggerPrefix(benchmark::State& state) { lazy_free_text_mask(state, "I will check. <tool"); }
BENCHMARK(BM_LazyMaskFreeText);
BENCHMARK(BM_LazyMaskAfterTriggerPrefix);

}  // namespace

BENCHMARK_MAIN();
