// The sampler chain on one Llama 3 sized logits row (128,256 entries of random normal logits):
// ns per sample() call, for the default chain with top-p and for its variants. Each iteration draws
// at a new output position, so the work is that of a real decode step.
//
// Build standalone:
//   g++ -std=c++20 -O3 -march=native -Isrc bench/sampling_bench.cpp src/sampling/*.cpp src/core/*.cpp \
//       -lbenchmark -lpthread -o sampling_bench
#include <benchmark/benchmark.h>

#include <random>

#include "sampling/sampler.h"

namespace nucleus {
namespace {

constexpr int64_t kVocab = 128256;  // Llama 3

// [kVocab] logits ~ N(0, scale²), fixed seed.
std::vector<float> normal_logits(float scale) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> logits(kVocab);
  for (float& l : logits) l = normal(rng);
  return logits;
}

void run_chain(benchmark::State& state, const SamplingParams& params, float logit_scale = 1.0f) {
  const std::vector<float> logits = normal_logits(logit_scale);
  SamplerChain chain(params);
  std::vector<int32_t> history(256);
  for (size_t i = 0; i < history.size(); ++i) history[i] = static_cast<int32_t>((i * 7919) % kVocab);
  uint64_t position = 0;
  for (auto _ : state) {
    const int32_t token = chain.sample(logits.data(), kVocab, SamplingContext{history, position++});
    benchmark::DoNotOptimize(token);
  }
  state.SetLabel(chain.describe() + ", " + std::to_string(chain.last_candidates().size()) + " candidates left");
}

SamplingParams base() {
  SamplingParams p;
  p.seed = 1;
  return p;
}

// The default chain with top-p: temperature → top-p → draw.
void BM_DefaultChainTopP(benchmark::State& state) {
  SamplingParams p = base();
  p.temperature = 0.8f;
  p.top_p = 0.95f;
  run_chain(state, p);
}
BENCHMARK(BM_DefaultChainTopP);

// The same on a peaked row (logit scale 4), closer to a trained model's distribution.
void BM_DefaultChainTopPPeaked(benchmark::State& state) {
  SamplingParams p = base();
  p.temperature = 0.8f;
  p.top_p = 0.95f;
  run_chain(state, p, 4.0f);
}
BENCHMARK(BM_DefaultChainTopPPeaked);

// Everything on: penalties over 64 tokens, temperature, top-k 40, top-p, min-p.
void BM_FullChain(benchmark::State& state) {
  SamplingParams p = base();
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  p.repetition_penalty = 1.1f;
  p.frequency_penalty = 0.1f;
  p.presence_penalty = 0.1f;
  run_chain(state, p);
}
BENCHMARK(BM_FullChain);

void BM_TopKOnly(benchmark::State& state) {
  SamplingParams p = base();
  p.top_k = 40;
  run_chain(state, p);
}
BENCHMARK(BM_TopKOnly);

void BM_MinPOnly(benchmark::State& state) {
  SamplingParams p = base();
  p.min_p = 0.05f;
  run_chain(state, p);
}
BENCHMARK(BM_MinPOnly);

void BM_TypicalP(benchmark::State& state) {
  SamplingParams p = base();
  p.typical_p = 0.9f;
  run_chain(state, p);
}
BENCHMARK(BM_TypicalP);

void BM_PlainDraw(benchmark::State& state) { run_chain(state, base()); }
BENCHMARK(BM_PlainDraw);

void BM_Greedy(benchmark::State& state) {
  SamplingParams p = base();
  p.temperature = 0.0f;
  run_chain(state, p);
}
BENCHMARK(BM_Greedy);

// For comparison: what the top-p stage would cost with a full sort of the vocabulary first.
void BM_TopPAfterFullSort(benchmark::State& state) {
  const std::vector<float> logits = normal_logits(1.0f);
  auto temperature = make_temperature_stage(0.8f);
  auto top_p = make_top_p_stage(0.95f);
  Candidates candidates;
  for (auto _ : state) {
    candidates.assign(logits.data(), kVocab);
    temperature->apply(candidates, {});
    candidates.sort_descending();
    top_p->apply(candidates, {});
    benchmark::DoNotOptimize(candidates.ids.data());
  }
}
BENCHMARK(BM_TopPAfterFullSort);

}  // namespace
}  // namespace nucleus

BENCHMARK_MAIN();
