// Beam search (Hugging Face semantics), independent of any model: the model is a callback that
// gives the next-token logits of a set of sequences, so the algorithm runs the same on a synthetic
// table-driven model in tests and on the real Model (engine/sequence_group_runner.h).
//
// Each step, every live beam b extends by every token t with score sum_b + log_softmax(logits_b)[t]
// (banned tokens −inf, no renormalization, as HF applies its processors to the log-probs). The best
// (1 + #end-of-generation ids) · num_beams extensions are taken in rank order: an end-of-generation
// token ranked among the first num_beams closes a hypothesis; any other becomes a live beam of the
// next step, until num_beams are live. Ranking: higher score, then lower beam, then lower token id.
//
// A hypothesis's score is sum_logprobs / length^length_penalty, where length counts its generated
// tokens including the closing end-of-generation token (HF leaves that token out of the length;
// counting it keeps the length ≥ 1). At most num_beams hypotheses are kept, the best by score. The
// search ends when max_new_tokens are reached (the live beams then become hypotheses too) or when
// num_beams hypotheses exist and early_stopping says no live beam can still win:
//   immediately  at once (HF early_stopping=True)
//   heuristic    when the best live beam's score at the current length is no better than the worst
//                hypothesis (HF early_stopping=False, the default; not exact for length_penalty > 0)
//   never        only when the bound best_sum / max_new_tokens^length_penalty (length_penalty > 0),
//                best_sum / current_length^length_penalty otherwise, cannot beat the worst hypothesis
//                (exact: log-probs only ever lower a sum)
// With num_beams = 1 and early_stopping = immediately the result is greedy decoding.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace nucleus {

enum class EarlyStopping { heuristic, immediately, never };

struct BeamSearchParams {
  int32_t num_beams = 1;
  float length_penalty = 1.0f;
  EarlyStopping early_stopping = EarlyStopping::heuristic;
  int32_t num_return_sequences = 1;   // ≤ num_beams
  int32_t no_repeat_ngram_size = 0;   // > 0: no n-gram of this size occurs twice in prompt + output
  int32_t max_new_tokens = 16;
  int32_t min_new_tokens = 0;         // end-of-generation ids are banned before this many tokens
  std::vector<int32_t> end_of_generation_ids;
};

struct BeamHypothesis {
  std::vector<int32_t> tokens;   // generated tokens, the closing end-of-generation token included
  double sum_logprobs = 0.0;
  double score = 0.0;            // sum_logprobs / tokens.size()^length_penalty
  bool ended_by_end_of_generation = false;
};

// The model, as the search sees it. Writes logits [n, n_vocab] for the next token of n sequences:
// sequence i of this call is sequence parents[i] of the previous call followed by tokens[i]. The
// first call has empty spans and asks for the one sequence that is the prompt (n = 1). A sequence of
// the previous call that no parent index names is dropped for good.
using NextTokenLogits =
    std::function<void(std::span<const int32_t> parents, std::span<const int32_t> tokens, float* logits)>;

// Returns the best num_return_sequences hypotheses, best first (equal scores: the earlier found).
// `prompt` is used only for no_repeat_ngram_size. Throws Error for invalid params.
std::vector<BeamHypothesis> beam_search(const BeamSearchParams& params, std::span<const int32_t> prompt,
                                        int64_t n_vocab, const NextTokenLogits& next_token_logits);

// The tokens that would repeat an n-gram of `sequence` (HF NoRepeatNGramLogitsProcessor): every t
// such that (last n−1 tokens, t) already occurs in it. Ascending, distinct.
std::vector<int32_t> banned_ngram_tokens(std::span<const int32_t> sequence, int32_t ngram_size);

}  // namespace nucleus
