// A sampler chain: composable stages that reshape a Candidates array, then one draw.
//
// Stage order (default, OpenAI/vLLM/HF semantics): temperature → top-k → top-p → min-p → draw.
// Temperature 0 short-circuits to greedy (argmax, lowest id on ties).
// Ownership: the chain owns its stages.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sampling/candidates.h"
#include "sampling/sampling_params.h"

namespace nucleus {

class SamplerStage {
 public:
  virtual ~SamplerStage() = default;
  virtual const char* name() const = 0;
  // Reshapes the candidates: rescales logits or drops entries. Leaves at least one entry.
  virtual void apply(Candidates& candidates) const = 0;
};

std::unique_ptr<SamplerStage> make_temperature_stage(float temperature);
std::unique_ptr<SamplerStage> make_top_k_stage(int32_t k);
std::unique_ptr<SamplerStage> make_top_p_stage(float p);
std::unique_ptr<SamplerStage> make_min_p_stage(float min_p);

class SamplerChain {
 public:
  explicit SamplerChain(const SamplingParams& params);

  // Chooses the next token from a logits row. `position` is the index of the token among the
  // request's outputs: the draw uses uniform_at(seed, position) only.
  int32_t sample(const float* logits, int64_t n_vocab, uint64_t position);
  // The distribution the draw would use (after all stages, renormalized), for tests and UIs.
  const Candidates& last_candidates() const { return candidates_; }
  uint64_t seed() const { return seed_; }
  bool greedy() const { return greedy_; }

 private:
  std::vector<std::unique_ptr<SamplerStage>> stages_;
  bool greedy_ = false;
  uint64_t seed_ = 0;
  Candidates candidates_;
};

// Argmax of a logits row (lowest id among equal maxima).
int32_t argmax(const float* logits, int64_t n);
// A fresh random seed (from the OS), for requests that give none.
uint64_t random_seed();

}  // namespace nucleus
