// The explainer's engine side: everything the four panels of the explainer UI ask of the model,
// as plain functions over text contexts and SamplingParams (server/explainer_routes.h turns HTTP
// JSON into these calls).
//
// Two models. Panel 1 (distributions, sampling, degeneration) runs on the served, trained model.
// The speed panels (roofline trace, speculative decoding, batching curve and schedules, KV memory)
// run on the *speed model*: one big enough that its weights do not fit the CPU caches, so decode is
// memory-bound as it is on real hardware with real models (by default a random-weights model that
// scripts/setup.sh writes; speed does not depend on the weights' values). Without one they run on
// the served model.
//
// Isolation: the explainer's models share the served weights (Model::share_weights: only scratch
// and per-call KV caches are private), so it never enters the OpenAI endpoints' AsyncEngine, whose
// loop keeps stepping while the explainer works; the two only share CPU cores. Panel 1's calls are
// serialized by one mutex (each is short). The speed panels' calls are timed measurements: one at a
// time holds the speed model's MeasurementSlot, and one asked for meanwhile is refused with
// MeasurementBusy (HTTP 409) rather than queued — the batching curve (batching_curve.h) holds it in
// the background for seconds.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_source.h"
#include "explain/batching_curve.h"
#include "explain/batching_schedules.h"
#include "explain/degeneration.h"
#include "explain/generation_trace.h"
#include "explain/kv_memory.h"
#include "explain/measurement_slot.h"
#include "explain/next_token_distribution.h"
#include "explain/speculative_trace.h"
#include "kernels/machine_peak.h"

namespace nucleus::explain {

struct ExplainerConfig {
  ModelSource source;      // the model the server loaded
  std::string draft_path;  // optional draft model (same vocabulary as the speed model) for speculative decoding
  int n_threads = 1;
  // The served model, when there is one: the explainer's models share its weights (each with its
  // own scratch) instead of loading the file again. Must outlive the Explainer.
  const Model* weights_from = nullptr;
  // The served draft model (from draft_path), when the server loaded one: shared the same way.
  const Model* draft_weights_from = nullptr;
  // The speed panels' model file; empty: the served model.
  std::string speed_model_path;
};

// What the page says about the speed model.
struct SpeedModelInfo {
  std::string path;
  bool same_as_served = false;
  bool random_weights = false;  // written by `nucleus synth` (general.name "synthetic-…")
  int64_t n_embd = 0, n_layer = 0, n_ff = 0, n_head = 0, n_head_kv = 0, n_vocab = 0, n_ctx = 0;
  std::string weight_type;      // of the FFN matrices, e.g. "F16"
  double weight_bytes = 0.0;    // read per decode step
};

struct SampledToken {
  int32_t id = 0;
  std::string text;     // its piece
  std::string context;  // the context with the token appended (decoded)
  uint64_t seed = 0;
};

enum class ProposerKind { ngram, self, draft };

struct SpeculativeOptions {
  ProposerKind proposer = ProposerKind::ngram;
  int32_t gamma = 4;
  int64_t max_tokens = 48;
  int64_t self_layers = 0;  // self-speculation: layers of the draft (0 → all but the last one)
  SamplingParams sampling;  // temperature 0 → greedy verification
};

struct BatchingSchedules {
  ScheduleRun continuous, static_batching;
};

class Explainer {
 public:
  // Loads the explainer's copies of the models. Throws Error like load_model.
  explicit Explainer(ExplainerConfig config);
  ~Explainer();

  const Tokenizer& tokenizer() const { return *loaded_.tokenizer; }
  const HParams& hparams() const { return loaded_.model->hparams(); }
  const HParams& speed_hparams() const { return speed_.model->hparams(); }
  const SpeedModelInfo& speed_model() const { return speed_info_; }
  bool has_draft_model() const { return draft_ != nullptr; }
  std::string default_context() const;  // "Once upon a time" for TinyStories models, else "The"
  int n_threads() const { return config_.n_threads; }

  // Every call below throws Error when the context plus the tokens asked for do not fit the model's
  // context length. Contexts are encoded with BOS as the model expects.
  // Panel 1, on the served model:
  NextTokenDistribution distribution(const std::string& context, const SamplingParams& params, int64_t top_n);
  SampledToken sample(const std::string& context, SamplingParams params);
  // Samples until a sentence ends (. ! ? or a newline), end of generation, or max_tokens.
  Continuation resample(const std::string& context, SamplingParams params, int64_t max_tokens);
  Continuation greedy(const std::string& context, int64_t max_tokens);
  std::vector<Continuation> beams(const std::string& context, int32_t num_beams, int64_t max_tokens);
  std::vector<DecodedOutput> degeneration(const std::string& context, SamplingParams sampling, int32_t num_beams, int64_t max_tokens);

  // The speed panels, on the speed model; each throws MeasurementBusy while another measurement runs.
  GenerationTrace trace(const std::string& context, SamplingParams params, int64_t max_tokens);
  // This machine's read bandwidth and FMA peak (kernels/machine_peak.h), measured on first use.
  MachinePeak machine_peak();
  SpeculativeTrace speculate(const std::string& context, SpeculativeOptions options);
  BatchingCurve& batching() { return *batching_; }
  BatchingSchedules schedules(const ScheduleWorkload& workload);
  KvMemoryLayout kv_memory(const KvMemoryRequest& request) const { return plan_kv_memory(speed_hparams(), request); }

 private:
  const std::vector<float>& logits_for(const std::vector<int32_t>& tokens);  // under mutex_

  ExplainerConfig config_;
  LoadedModel loaded_;
  LoadedModel speed_;             // its own Model (sharing the served weights when it is the served model)
  SpeedModelInfo speed_info_;
  std::unique_ptr<Model> draft_;  // null without a usable draft model
  std::mutex mutex_;  // one panel-1 call at a time on loaded_.model
  std::vector<int32_t> cached_tokens_;  // the context whose next-token logits are cached
  std::vector<float> cached_logits_;    // [n_vocab]
  MeasurementSlot speed_slot_;          // one timed measurement at a time on speed_.model
  std::mutex peak_mutex_;
  std::optional<MachinePeak> peak_;
  std::unique_ptr<BatchingCurve> batching_;
};

}  // namespace nucleus::explain
