// The engine API: add requests, step, read outputs, abort. One step = schedule → one forward
// pass over every scheduled token (prefill chunks and decodes mixed) → sample → stop checks.
// Not thread-safe: async_engine.h wraps it in a loop thread for concurrent users.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/block_pool.h"
#include "engine/kv_cache_manager.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "model/kv_cache.h"
#include "engine/scheduler.h"
#include "model/model.h"
#include "speculative/draft_verifier.h"
#include "tokenizer/tokenizer.h"

namespace nucleus {

// The most draft tokens a request may ask to verify per step.
inline constexpr int32_t kMaxSpeculativeTokens = 64;

struct EngineConfig {
  int64_t num_blocks = 0;         // KV pool size in blocks; 0 → from kv_cache_bytes
  int64_t kv_cache_bytes = 256ll << 20;
  KvType kv_type = KvType::f32;   // element type of cached keys and values (f16: half the bytes per block)
  int64_t block_size = 16;
  int64_t max_num_batched_tokens = 512;
  int64_t max_num_seqs = 64;
  int64_t max_model_len = 0;      // 0 → the model's training context
  bool enable_prefix_caching = true;
  int n_threads = 1;
  // Models with sliding-window layers: those layers' K/V in a pool of their own whose blocks are
  // given back once they fall out of every window (kv_cache_manager.h), so the bytes of the main
  // pool go to the full-attention layers. False: one pool for every layer.
  bool window_kv_pool = true;
  int64_t num_window_blocks = 0;  // window pool size in blocks; 0 → enough for max_num_seqs windows
  // The KV pool (and recurrent state) is refused with an Error before allocation when it needs more
  // than the memory available less the model's mapped weights (Model::mapped_weight_bytes).
  bool check_memory = true;
  size_t available_memory = 0;  // 0: measure (available_memory_bytes())
};

struct RequestOutput {
  int64_t request_id = 0;
  std::vector<int32_t> new_tokens;   // sampled this step (at most one without speculation)
  std::string text;                  // their text (when the engine has a tokenizer), stop strings held back
  std::string error;                 // set when the request was refused or failed (finished; e.g. a grammar too ambiguous)
  std::vector<std::vector<float>> logits;  // per new token, the raw logits row (return_logits)
  bool finished = false;
  FinishReason finish_reason = FinishReason::none;
  bool aborted = false;
  int64_t num_prompt_tokens = 0;
  int64_t num_output_tokens = 0;
  uint64_t seed = 0;
  SpeculativeStats spec;  // the request's speculative counters so far (zero for plain requests)
  std::vector<double> mask_seconds;  // structured output: the time of each token mask computed this step
  std::chrono::steady_clock::time_point produced_at;  // when the step that made it ended
};

struct EngineStats {
  int64_t steps = 0;
  int64_t num_running = 0, num_waiting = 0;
  int64_t last_step_requests = 0, last_step_tokens = 0;
  int64_t kv_blocks_total = 0, kv_blocks_used = 0;
  int64_t kv_window_blocks_total = 0, kv_window_blocks_used = 0;  // the window pool (0 without one)
  int64_t state_slots_total = 0, state_slots_used = 0;  // recurrent state slots (0 without recurrent layers)
  int64_t kv_tokens_stored = 0;        // Σ num_computed_tokens of requests holding blocks
  int64_t preemptions = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t computed_tokens = 0;         // tokens run through the model
  int64_t prefix_cached_tokens = 0;    // prompt tokens served from the prefix cache
  int64_t prefix_query_tokens = 0;     // tokens of admitted requests looked up in it (vLLM's prefix-cache queries)
  int64_t kv_block_size = 0;           // tokens per KV block
  bool prefix_caching = false;         // on for this engine (off for hybrid models: LLMEngine::prefix_caching_off_reason)
  BlockPoolCounters block_pool;
  SpeculativeStats spec;               // over every speculative request (target_seconds not kept)
  double kv_usage() const { return kv_blocks_total ? static_cast<double>(kv_blocks_used) / static_cast<double>(kv_blocks_total) : 0.0; }
  double prefix_hit_rate() const {
    return block_pool.prefix_queries ? static_cast<double>(block_pool.prefix_hits) / static_cast<double>(block_pool.prefix_queries) : 0.0;
  }
};

class LLMEngine {
 public:
  // `tokenizer` may be null: then outputs carry ids only and stop strings are not checked.
  LLMEngine(Model& model, const Tokenizer* tokenizer, const EngineConfig& config);

  // Throws Error (naming both numbers) when the prompt cannot fit the context or the KV pool.
  // `id` < 0: the engine picks one; otherwise the caller's (unique) id is used.
  int64_t add_request(std::vector<int32_t> prompt, RequestOptions options, int64_t id = -1);
  // The checks of add_request without adding anything. Reads only what is fixed at construction,
  // so it is safe to call from any thread while another steps the engine.
  void validate_request(const std::vector<int32_t>& prompt, const RequestOptions& options) const;
  std::vector<RequestOutput> step();
  // Removes a request at once and frees its blocks; its final output is returned by the next step().
  void abort(int64_t request_id);
  bool has_unfinished() const { return !requests_.empty(); }
  EngineStats stats() const;
  const EngineConfig& config() const { return config_; }
  // Why prefix caching is off although the config asked for it (empty: it is not). A hybrid model's
  // cached prefix would need its recurrent state at every block boundary, and one snapshot costs
  // ~50x the block's K/V at Qwen3.5-0.8B's shape; the reason names both sizes.
  const std::string& prefix_caching_off_reason() const { return prefix_caching_off_reason_; }
  int64_t max_model_len() const { return max_model_len_; }
  Model& model() { return model_; }
  const Tokenizer* tokenizer() const { return tokenizer_; }
  const BlockPool& block_pool() const { return pool_; }
  // The sliding-window layers' pool, or null when the engine keeps every layer in block_pool().
  const BlockPool* window_block_pool() const { return kv_.has_window_pool() ? &window_pool_ : nullptr; }

 private:
  void finish(Request& request, FinishReason reason, RequestOutput& output);
  // Drafts for every speculative request about to verify (running, all but its last token cached).
  // A proposer that throws ends its request with an error output (appended to `outputs`).
  void propose_drafts(std::vector<RequestOutput>& outputs);
  struct DueDraft {
    Request* request;
    DraftRequest draft;
  };
  // One batch group's drafts in one propose_batch call.
  void propose_group(std::span<const DueDraft> group, std::vector<RequestOutput>& outputs);
  // Appends one generated token to the request and its output; true when that finished it.
  bool emit(Request& request, int32_t token, const float* logits_row, RequestOutput& out);
  // A constrained request's logits rows for this pass, masked (into masked_rows_): row k allows what
  // the grammar allows after the first k drafts. Drafts after the first one the grammar refuses are
  // dropped (that one stays: verification must reject it, p = 0, and draw from the residual).
  // Returns the rows to sample from; sets `dead` when no token at all can follow.
  const float* mask_constrained_rows(Request& request, const float* logits, int64_t n_rows, bool& dead);
  // Ends `request` in this step with an error (out.error = message), the batch's others going on.
  void fail_request(Request& request, std::string message, RequestOutput& out, std::vector<RequestOutput>& outputs,
                    std::vector<int64_t>& finished_ids);

  Model& model_;
  const Tokenizer* tokenizer_;
  EngineConfig config_;
  std::string prefix_caching_off_reason_;
  int64_t max_model_len_;
  KvCache kv_;
  BlockPool pool_;
  BlockPool window_pool_;  // one unused block when there is no window pool
  KvCacheManager kv_manager_;
  Scheduler scheduler_;
  ModelRunner runner_;
  std::unordered_map<int64_t, std::unique_ptr<Request>> requests_;
  std::vector<RequestOutput> aborted_outputs_;
  int64_t next_id_ = 1;
  uint64_t next_arrival_ = 0;
  EngineStats stats_;
  ModelRunner::StepResult step_result_;
  DraftVerifier verifier_;
  std::vector<int32_t> emitted_;
  std::shared_ptr<const VocabularyTrie> vocabulary_trie_;  // built on the first constrained request
  // Per compiled grammar (the compiler's cache hands out the same one for the same schema): the
  // automaton and masks that every request with that grammar shares. Unused ones are dropped.
  std::unordered_map<const Grammar*, std::shared_ptr<ConstraintTables>> constraint_tables_;
  std::vector<float> masked_rows_;                         // [rows, n_vocab] of the request being sampled
};

// Blocks for a KV budget in bytes (keys and values of every layer, 4 bytes per element for f32,
// 2 for f16 — so an f16 cache gets twice the blocks from the same budget).
int64_t kv_blocks_for_bytes(const HParams& hp, int64_t block_size, int64_t bytes, KvType type = KvType::f32);
// The engine's KV cache: one pool, or (window_kv_pool and a model with sliding-window layers) a main
// pool for the full-attention layers plus a window pool sized for max_num_seqs windows, the rest of
// kv_cache_bytes going to the main pool.
KvCacheShape engine_kv_shape(const HParams& hp, const EngineConfig& config);

}  // namespace nucleus
