// The explainer's engine side: everything the four panels of the explainer UI ask of the model,
// as plain functions over text contexts and SamplingParams (server/explainer_routes.h turns HTTP
// JSON into these calls).
//
// Isolation: the explainer owns its own copy of the served model (loaded from the same file: the
// weights stay in the shared page cache, only small norm vectors and scratch buffers are private),
// its own KV caches (one per call) and its own threads. So it never enters the OpenAI endpoints'
// AsyncEngine, whose loop keeps stepping while the explainer works; the two only share CPU cores.
// Interactive calls (panels 1–3) are serialized by one mutex — each is short (one forward pass for a
// distribution, at most a few hundred tokens for a generation) — and the batching curve (panel 4)
// runs in the background on a further copy of the model (batching_curve.h).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_source.h"
#include "explain/batching_curve.h"
#include "explain/generation_trace.h"
#include "explain/next_token_distribution.h"
#include "explain/speculative_trace.h"
#include "kernels/machine_peak.h"
#include "sampling/beam_search.h"

namespace nucleus::explain {

struct ExplainerConfig {
  ModelSource source;      // the model the server loaded
  std::string draft_path;  // optional draft model (same vocabulary) for speculative decoding
  int n_threads = 1;
  // The served model, when there is one: the explainer's models share its weights (each with its
  // own scratch) instead of loading the file again. Must outlive the Explainer.
  const Model* weights_from = nullptr;
  // The served draft model (from draft_path), when the server loaded one: shared the same way.
  const Model* draft_weights_from = nullptr;
};

struct SampledToken {
  int32_t id = 0;
  std::string text;     // its piece
  std::string context;  // the context with the token appended (decoded)
  uint64_t seed = 0;
};

struct Continuation {
  std::vector<int32_t> tokens;
  std::string text;
  double score = 0.0;  // beams: sum_logprobs / length^length_penalty; greedy and samples: sum of log p
  uint64_t seed = 0;   // samples: the seed used
};

enum class ProposerKind { ngram, self, draft };

struct SpeculativeOptions {
  ProposerKind proposer = ProposerKind::ngram;
  int32_t gamma = 4;
  int64_t max_tokens = 48;
  int64_t self_layers = 0;  // self-speculation: layers of the draft (0 → all but the last one)
  SamplingParams sampling;  // temperature 0 → greedy verification
};

class Explainer {
 public:
  // Loads the explainer's copy of the model (and the draft model). Throws Error like load_model.
  explicit Explainer(ExplainerConfig config);
  ~Explainer();

  const Tokenizer& tokenizer() const { return *loaded_.tokenizer; }
  const HParams& hparams() const { return loaded_.model->hparams(); }
  bool has_draft_model() const { return draft_ != nullptr; }
  std::string default_context() const;  // "Once upon a time" for TinyStories models, else "The"
  int n_threads() const { return config_.n_threads; }

  // Every call below throws Error when the context plus the tokens asked for do not fit the model's
  // context length. Contexts are encoded with BOS as the model expects.
  NextTokenDistribution distribution(const std::string& context, const SamplingParams& params, int64_t top_n);
  SampledToken sample(const std::string& context, SamplingParams params);
  // Samples until a sentence ends (. ! ? or a newline), end of generation, or max_tokens.
  Continuation resample(const std::string& context, SamplingParams params, int64_t max_tokens);
  Continuation greedy(const std::string& context, int64_t max_tokens);
  std::vector<Continuation> beams(const std::string& context, int32_t num_beams, int64_t max_tokens);
  GenerationTrace trace(const std::string& context, SamplingParams params, int64_t max_tokens);
  // This machine's read bandwidth and FMA peak (kernels/machine_peak.h), measured on first use.
  MachinePeak machine_peak();
  SpeculativeTrace speculate(const std::string& context, SpeculativeOptions options);
  BatchingCurve& batching() { return batching_; }

 private:
  std::vector<int32_t> encode(const std::string& context, int64_t extra_positions) const;
  const std::vector<float>& logits_for(const std::vector<int32_t>& tokens);  // under mutex_

  ExplainerConfig config_;
  LoadedModel loaded_;
  std::unique_ptr<Model> draft_;  // null without a draft model
  std::mutex mutex_;  // one interactive call at a time on loaded_.model
  std::vector<int32_t> cached_tokens_;  // the context whose next-token logits are cached
  std::vector<float> cached_logits_;    // [n_vocab]
  std::optional<MachinePeak> peak_;
  BatchingCurve batching_;
};

}  // namespace nucleus::explain
