// A sampler chain: composable stages that reshape a Candidates array, then one draw.
//
// Stages, by their `--samplers` names (sampling_params.h), each a no-op at its default value:
//   logit_bias   l_t += bias_t (OpenAI); −inf bans t
//   penalties    over the last penalty_last_n tokens of prompt + output, for each seen token t with
//                count c_t: repetition (l > 0 ? l / r : l · r), then l −= c_t·frequency + presence
//   temperature  l /= T
//   top_k        keep the k best (≤ 0: off)
//   top_p        keep the smallest prefix, by descending probability, whose mass reaches p; the
//                crossing token is kept (≥ 1: off)
//   min_p        keep p_t ≥ min_p · p_max, i.e. l_t − l_max ≥ log(min_p) (0: off)
//   typical_p    keep the smallest set, by ascending |−log p_t − H|, whose mass reaches typical_p
//                (H: the entropy); the crossing token is kept (≥ 1: off)
// Default order: logit_bias → penalties → temperature → top_k → top_p → min_p → typical_p → draw
// (OpenAI/vLLM/HF semantics: truncations see the tempered distribution). Every truncation works on
// what the previous stages left, renormalized, and keeps at least one token. The draw renormalizes
// the survivors. Tie rule everywhere: at equal logits (or equal typical scores) the lower id ranks first.
//
// Temperature 0 is greedy: argmax (lowest id on ties) after logit_bias and penalties; the truncations
// are skipped, as in HF and vLLM (top-k/top-p/min-p never remove the argmax; typical-p could).
// While fewer than min_tokens tokens exist, end-of-generation ids are banned before every stage.
//
// Draws: the u of the inverse-CDF draw is uniform_at(seed, position) — a pure function of the
// request's seed and the token's output position, so a request's samples never depend on batch
// composition, thread count or other requests.
//
// Ownership: a chain owns its stages. Stages are immutable and hold no per-sequence state (the
// sequence so far arrives in SamplingContext), so there is no accept/reset: one chain can serve
// every sequence of a request, and replaying a position replays its draw. A chain's candidates
// buffer is its only mutable state: one chain per thread.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sampling/candidates.h"
#include "sampling/sampling_params.h"

namespace nucleus {

// What a stage may know about the sequence whose next token is being chosen.
struct SamplingContext {
  std::span<const int32_t> tokens;  // the sequence so far: prompt, then the outputs before `position`
  uint64_t position = 0;            // index of the token being chosen among the outputs
};

class SamplerStage {
 public:
  virtual ~SamplerStage() = default;
  virtual const char* name() const = 0;
  // Reshapes the candidates: edits logits or drops entries. Leaves at least one entry.
  virtual void apply(Candidates& candidates, const SamplingContext& context) const = 0;
  // Stages that only edit logits of given tokens (bias, penalties, the min_tokens ban) also run
  // under greedy decoding.
  virtual bool edits_logits_only() const { return false; }
};

struct PenaltyParams {
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int32_t last_n = 64;  // -1: the whole sequence
};

std::unique_ptr<SamplerStage> make_logit_bias_stage(std::vector<std::pair<int32_t, float>> bias);
std::unique_ptr<SamplerStage> make_penalties_stage(const PenaltyParams& params);
std::unique_ptr<SamplerStage> make_min_tokens_stage(std::vector<int32_t> end_of_generation_ids, int32_t min_tokens);
std::unique_ptr<SamplerStage> make_temperature_stage(float temperature);
std::unique_ptr<SamplerStage> make_top_k_stage(int32_t k);
std::unique_ptr<SamplerStage> make_top_p_stage(float p);
std::unique_ptr<SamplerStage> make_min_p_stage(float min_p);
std::unique_ptr<SamplerStage> make_typical_p_stage(float typical_p);

// Throws Error naming the field when a value is outside its domain (negative temperature, top_p
// outside [0, 1], non-positive repetition penalty, penalty_last_n < -1, ...).
void validate_sampling_params(const SamplingParams& params);

class SamplerChain {
 public:
  // The stages `params` asks for, in params.order; no seed → random_seed().
  explicit SamplerChain(const SamplingParams& params);
  // Exactly these stages in this order (the chain takes ownership), then a draw — or argmax when
  // `greedy` — with `seed`. For tests and custom chains.
  SamplerChain(std::vector<std::unique_ptr<SamplerStage>> stages, uint64_t seed, bool greedy = false);

  // Chooses the next token from a logits row [n_vocab].
  int32_t sample(const float* logits, int64_t n_vocab, const SamplingContext& context);
  // The same without the sequence: penalties see no tokens.
  int32_t sample(const float* logits, int64_t n_vocab, uint64_t position) {
    return sample(logits, n_vocab, SamplingContext{{}, position});
  }

  // Runs the stages without drawing and returns the distribution the draw would use (probs
  // normalized). Under greedy decoding: the softmax of the edited logits (no temperature exists).
  const Candidates& distribution(const float* logits, int64_t n_vocab, const SamplingContext& context);
  // After sample(): the candidates the draw used (not filled by the greedy fast path without stages).
  const Candidates& last_candidates() const { return candidates_; }

  uint64_t seed() const { return seed_; }
  bool greedy() const { return greedy_; }
  // e.g. "temperature → top_p → draw"; "argmax" for plain greedy.
  std::string describe() const;

 private:
  void run_stages(const float* logits, int64_t n_vocab, const SamplingContext& context);

  std::vector<std::unique_ptr<SamplerStage>> stages_;
  bool greedy_ = false;
  uint64_t seed_ = 0;
  Candidates candidates_;
};

// Inverse-CDF draw with u ∈ [0, 1) over the candidates in their current order, weights ∝ exp(logit).
int32_t draw_token(Candidates& candidates, double u);
// The candidate with the highest logit, lowest id among equals.
int32_t argmax_token(const Candidates& candidates);
// Argmax of a logits row (lowest id among equal maxima).
int32_t argmax(const float* logits, int64_t n);
// A fresh random seed (from the OS), for requests that give none.
uint64_t random_seed();
// The seed of sample `index` of a request with n > 1 samples: sample 0 uses the request's seed (so it
// equals the n = 1 run), the others a hash of (seed, index) — independent streams.
uint64_t sample_seed(uint64_t seed, uint64_t index);

}  // namespace nucleus
