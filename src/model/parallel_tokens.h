// Per-token loops of the forward pass (norms, biases, rope, residual adds, SwiGLU) over threads.
#pragma once
#include <cstdint>

namespace nucleus {

// Elements below which one thread is faster: waking an OpenMP team costs microseconds, and a
// decode step of a small model has only a few thousand elements per loop.
constexpr int64_t kMinParallelElements = 1 << 16;

// Calls body(i) for every token i in [0, n_tokens), on n_threads when n_tokens · elements_per_token
// is large enough. A token's work never depends on which thread runs it or on the other tokens, so
// the results are the same either way; the serial path does not enter OpenMP at all.
template <class Body>
void for_each_token(int64_t n_tokens, int64_t elements_per_token, int n_threads, const Body& body) {
  if (n_threads > 1 && n_tokens > 1 && n_tokens * elements_per_token >= kMinParallelElements) {
#pragma omp parallel for num_threads(n_threads) schedule(static)
    for (int64_t i = 0; i < n_tokens; ++i) body(i);
    return;
  }
  for (int64_t i = 0; i < n_tokens; ++i) body(i);
}

}  // namespace nucleus
