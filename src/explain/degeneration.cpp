#include "explain/degeneration.h"

#include <algorithm>
#include <cmath>

#include "engine/beam_search_runner.h"
#include "model/sequence_runner.h"
#include "sampling/sampler.h"

namespace nucleus::explain {

namespace {

bool ends_sentence(const std::string& piece) { return piece.find_first_of(".!?\n") != std::string::npos; }

double log_prob_of(const float* logits, int64_t n_vocab, int32_t token) {
  const float max_logit = *std::max_element(logits, logits + n_vocab);
  double sum = 0;
  for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max_logit));
  return static_cast<double>(logits[token] - max_logit) - std::log(sum);
}

}  // namespace

Continuation generate_continuation(Model& model, const Tokenizer& tokenizer, std::vector<int32_t> sequence, const SamplingParams& params,
                                   int64_t max_tokens, bool stop_at_sentence_end, int n_threads) {
  SamplerChain chain(params);
  SequenceRunner runner(model, static_cast<int64_t>(sequence.size()) + max_tokens, n_threads);
  const int64_t n_vocab = model.hparams().n_vocab;
  Continuation result;
  result.seed = params.seed.value_or(0);
  IncrementalDetokenizer detokenizer(tokenizer);
  std::vector<float> logits = runner.feed(sequence);
  for (int64_t position = 0; position < max_tokens; ++position) {
    const int32_t token = chain.sample(logits.data(), n_vocab, SamplingContext{sequence, static_cast<uint64_t>(position)});
    result.score += log_prob_of(logits.data(), n_vocab, token);
    if (tokenizer.is_end_of_generation(token)) break;
    result.tokens.push_back(token);
    sequence.push_back(token);
    result.text += detokenizer.push(token);
    if ((stop_at_sentence_end && ends_sentence(tokenizer.token_to_piece(token))) || position + 1 == max_tokens) break;
    logits = runner.feed({token});
  }
  result.text += detokenizer.flush();
  return result;
}

std::vector<DecodedOutput> compare_decoders(Model& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                                            const SamplingParams& sampling, int32_t num_beams, int64_t max_tokens, int n_threads) {
  std::vector<DecodedOutput> outputs;
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.seed = 0;
  outputs.push_back({"greedy", generate_continuation(model, tokenizer, prompt, greedy, max_tokens, false, n_threads), {}});

  BeamSearchParams beam;
  beam.num_beams = num_beams;
  beam.num_return_sequences = 1;
  beam.max_new_tokens = static_cast<int32_t>(max_tokens);
  beam.end_of_generation_ids = tokenizer.end_of_generation_ids();
  Continuation best;
  const std::vector<BeamHypothesis> hypotheses = run_beam_search(model, prompt, beam, n_threads);
  if (!hypotheses.empty()) {
    best.score = hypotheses.front().score;
    for (int32_t token : hypotheses.front().tokens)
      if (!tokenizer.is_end_of_generation(token)) best.tokens.push_back(token);
    best.text = tokenizer.decode(best.tokens);
  }
  outputs.push_back({"beam", std::move(best), {}});

  outputs.push_back({"sampling", generate_continuation(model, tokenizer, prompt, sampling, max_tokens, false, n_threads), {}});
  for (DecodedOutput& output : outputs) output.repetition = measure_repetition(output.continuation.tokens);
  return outputs;
}

}  // namespace nucleus::explain
