#include "explain/generation_trace.h"

#include <chrono>

#include "model/sequence_runner.h"

namespace nucleus::explain {

GenerationTrace trace_generation(Model& model, const std::vector<int32_t>& prompt, int64_t max_tokens, SamplerChain& chain,
                                 const Tokenizer& tokenizer, int n_threads) {
  GenerationTrace trace;
  SequenceRunner runner(model, static_cast<int64_t>(prompt.size()) + max_tokens, n_threads);
  const int64_t n_vocab = model.hparams().n_vocab;
  std::vector<int32_t> sequence = prompt;
  std::vector<int32_t> step_tokens = prompt;
  IncrementalDetokenizer detokenizer(tokenizer);
  for (int64_t position = 0; position < max_tokens; ++position) {
    const int64_t n_past = runner.n_past();
    const auto start = std::chrono::steady_clock::now();
    const std::vector<float>& logits = runner.feed(step_tokens);
    TraceStep step;
    step.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    step.prefill = position == 0;
    step.cost = estimate_sequence_step_cost(model, n_past, static_cast<int64_t>(step_tokens.size()));
    step.token = chain.sample(logits.data(), n_vocab, SamplingContext{sequence, static_cast<uint64_t>(position)});
    step.text = tokenizer.token_to_piece(step.token);
    trace.steps.push_back(step);
    if (tokenizer.is_end_of_generation(step.token)) break;
    trace.text += detokenizer.push(step.token);
    sequence.push_back(step.token);
    step_tokens.assign(1, step.token);
  }
  trace.text += detokenizer.flush();
  return trace;
}

}  // namespace nucleus::explain
