// Per-token loops of the forward pass (norms, biases, rope, residual adds, SwiGLU) over threads.
#pragma once
#include <cstdint>

#include "core/worker_pool.h"

namespace nucleus {

// Elements below which one thread is faster: waking the other threads costs microseconds, and a
// decode step of a small model has only a few thousand elements per loop.
constexpr int64_t kMinParallelElements = 1 << 16;

// Calls body(i) for every token i in [0, n_tokens), on the pool's threads when n_tokens ·
// elements_per_token is large enough. A token's work never depends on which thread runs it or on
// the other tokens, so the results are the same either way.
template <class Body>
void for_each_token(WorkerPool& pool, int64_t n_tokens, int64_t elements_per_token, const Body& body) {
  parallel_for(&pool, n_tokens * elements_per_token >= kMinParallelElements, n_tokens, Schedule::Static,
               [&](int64_t i, int) { body(i); });
}

}  // namespace nucleus
