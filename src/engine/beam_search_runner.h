// Beam search (sampling/beam_search.h) on a real model: the beams live in one SequenceGroupRunner,
// so the prompt is prefilled once and beams share their KV blocks copy-on-write.
#pragma once
#include <memory>
#include <vector>

#include "model/model.h"
#include "sampling/beam_search.h"
#include "structured/token_mask.h"

namespace nucleus {

struct BeamSearchTiming {
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
};

// params.max_new_tokens bounds the growth; the KV pool is sized for the worst case (no block shared).
// With `constraint` (structured output), every beam carries its own matcher and its logits are masked
// before the search scores them, so every hypothesis is a prefix of a sentence of the grammar (a
// whole sentence when it ended by end-of-generation, which the mask allows only then).
// Throws Error for an empty prompt, invalid params, or a prompt + budget beyond the model's context.
std::vector<BeamHypothesis> run_beam_search(Model& model, const std::vector<int32_t>& prompt, const BeamSearchParams& params,
                                            int n_threads, BeamSearchTiming* timing = nullptr,
                                            std::shared_ptr<ConstraintTables> constraint = nullptr);

}  // namespace nucleus
