// One API request's sequences in flight on the AsyncEngine: prompt i, sample j becomes choice
// i·n + j, submitted with seed sample_seed(seed, j) (so sample 0 equals the n = 1 run). Collects what
// each sequence produced (text, tokens, logprobs from the raw logits rows), records latency metrics,
// and aborts whatever is unfinished when it is destroyed — a client that goes away frees its KV
// blocks at the engine's next step.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/async_engine.h"
#include "sampling/logprobs.h"
#include "server/metrics.h"
#include "server/openai_protocol.h"

namespace nucleus::server {

struct SequenceState {
  int index = 0;  // the choice index
  std::shared_ptr<RequestStream> stream;
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprobs> logprobs;  // per token when requested
  FinishReason finish_reason = FinishReason::none;
  bool finished = false;
  bool aborted = false;
  std::string error;
  int64_t num_prompt_tokens = 0;
  int64_t num_output_tokens = 0;
  std::chrono::steady_clock::time_point last_output;
  bool has_output = false;
};

// What one poll brought for one choice.
struct SequenceDelta {
  int index = 0;
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprobs> logprobs;
  bool finished = false;
  FinishReason finish_reason = FinishReason::none;
};

// Speculative decoding for every sequence the server runs (`serve --draft MODEL | --spec …`):
// a fresh proposer per sequence (those of one draft model draft together in the engine) and γ.
struct Speculation {
  std::function<std::shared_ptr<Proposer>(const SamplingParams&)> make_proposer;  // empty: plain decoding
  int32_t gamma = 0;
};

class Generation {
 public:
  // Submits every sequence. An engine refusal (e.g. a prompt over the context) is an ApiError 400
  // stating the engine's message; sequences already submitted are aborted. `in_flight` counts this
  // server's unfinished sequences (admission control). With `speculation` set, every sequence
  // speculates with a proposer of its own.
  Generation(AsyncEngine& engine, const GenerationRequest& request, ServerMetrics& metrics, std::atomic<int64_t>& in_flight,
             const Speculation& speculation = {});
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Waits at most timeout_ms for the first unfinished sequence, then takes whatever every sequence has.
  std::vector<SequenceDelta> poll(int64_t timeout_ms);
  bool done() const { return num_unfinished_ == 0; }
  void abort_all();

  const std::vector<SequenceState>& sequences() const { return sequences_; }
  int64_t prompt_tokens() const;      // each prompt counted once, whatever n
  int64_t completion_tokens() const;  // over every choice

 private:
  bool take(SequenceState& sequence, RequestOutput& out, std::vector<SequenceDelta>& deltas);
  void finish(SequenceState& sequence, const char* reason);

  AsyncEngine& engine_;
  ServerMetrics& metrics_;
  std::atomic<int64_t>& in_flight_;
  int32_t top_logprobs_;
  int n_;
  std::chrono::steady_clock::time_point start_;
  std::vector<SequenceState> sequences_;
  int64_t num_unfinished_ = 0;
};

}  // namespace nucleus::server
