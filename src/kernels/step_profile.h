// Where a forward step's time goes (`nucleus bench --profile`): matmul wall time per weight type,
// the time the threads of those matmuls sat idle (waiting at the end of a parallel region for the
// slowest thread, and entering and leaving it: synchronization and imbalance), attention, and the
// whole step, so the rest is the small operators (norms, rope, KV stores, activations, residuals).
// Filled only while a profile is attached (Model::set_profile); otherwise no clock is read.
#pragma once
#include <cstdint>
#include <map>

#include "io/ggml_type.h"

namespace nucleus {

struct StepProfile {
  struct Matmuls {
    double seconds = 0;              // wall time of the calls, quantization included
    double quantize_seconds = 0;     // quantizing the activations (Q8_0 / Q8_K) before the products
    double idle_thread_seconds = 0;  // Σ over threads of (wall − busy) in the products of parallel calls
    int64_t calls = 0;     // parallel passes: one per matmul, one per joint pass (matmul_same_input)
    int64_t matrices = 0;  // matrices multiplied (a joint pass over Q, K and V counts 3)
    double weight_bytes = 0;       // stored bytes of the matrices, once per call
  };
  std::map<GgmlType, Matmuls> matmul;  // by the matrix's stored type
  double attention_seconds = 0;
  double step_seconds = 0;
  int64_t steps = 0;
  int n_threads = 1;  // the widest team seen: idle thread-seconds / n_threads is wall time lost
};

}  // namespace nucleus
