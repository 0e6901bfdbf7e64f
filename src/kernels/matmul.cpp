#include "kernels/matmul.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "core/fp16.h"
#include "core/weight_memory.h"
#include "kernels/packed_kquant.h"
#include "kernels/quantize.h"
#include "kernels/quantize_k.h"

namespace nucleus {

namespace {
constexpr int64_t kMinParallelWork = 1 << 18;  // multiply-adds below which one thread is faster
}  // namespace

WorkerPool& worker_pool(MatmulScratch& scratch, int n_threads) {
  if (!scratch.pool || scratch.pool->n_threads() != n_threads) scratch.pool = std::make_shared<WorkerPool>(n_threads);
  return *scratch.pool;
}

ActivationFormat activation_format(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0: return ActivationFormat::Q8_0;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return ActivationFormat::Q8_K;
    default: return ActivationFormat::F32;
  }
}

bool matmul_supports(GgmlType type) {
  switch (type) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0: case GgmlType::Q4_0:
    case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K: return true;
    default: return false;
  }
}

void matrix_row_to_f32(const WeightMatrix& w, int64_t r, float* dst) { dequantize_row(w.type, w.row(r), dst, w.n_cols); }

float dot_row(const DotKernels& kernels, const WeightMatrix& w, int64_t r, const MatmulActivations& x, int64_t t) {
  const uint8_t* row = w.row(r);
  const int64_t k = w.n_cols;
  switch (w.type) {
    case GgmlType::F32: return kernels.dot_f32(reinterpret_cast<const float*>(row), x.f32 + t * k, k);
    case GgmlType::F16: return kernels.dot_f16_f32(reinterpret_cast<const uint16_t*>(row), x.f32 + t * k, k);
    case GgmlType::BF16: {
      const uint16_t* w_row = reinterpret_cast<const uint16_t*>(row);
      if (!x.bf16) return kernels.dot_bf16_f32(w_row, x.f32 + t * k, k);
      const uint16_t* x_row = x.bf16 + t * k;  // the BF16 tiles' order (kernels/tile_bf16.h), one row and token
      float out[kDotTokens * kMaxBF16TileRows];
      kernels.tile_bf16(&w_row, 1, &w_row, &x_row, 1, k, out);
      return out[0];
    }
    case GgmlType::Q8_0:
      return kernels.dot_q8_0_q8_0(reinterpret_cast<const BlockQ8_0*>(row), x.q8_0 + t * (k / kQK8_0), k / kQK8_0);
    case GgmlType::Q4_0:
      return kernels.dot_q4_0_q8_0(reinterpret_cast<const BlockQ4_0*>(row), x.q8_0 + t * (k / kQK8_0), k / kQK8_0);
    case GgmlType::Q4_K:
      return kernels.dot_q4_K_q8_K(reinterpret_cast<const BlockQ4_K*>(row), x.q8_K + t * (k / kQK_K), k / kQK_K);
    case GgmlType::Q5_K:
      return kernels.dot_q5_K_q8_K(reinterpret_cast<const BlockQ5_K*>(row), x.q8_K + t * (k / kQK_K), k / kQK_K);
    case GgmlType::Q6_K:
      return kernels.dot_q6_K_q8_K(reinterpret_cast<const BlockQ6_K*>(row), x.q8_K + t * (k / kQK_K), k / kQK_K);
    default: throw Error(std::string("matmul: unsupported weight type ") + ggml_type_name(w.type));
  }
}

MatmulActivations prepare_activations(GgmlType type, const float* x, int64_t n_tokens, int64_t k, MatmulScratch& scratch,
                                      int n_threads) {
  return prepare_activations(scalar_dot_kernels(), type, x, n_tokens, k, scratch, n_threads);
}

MatmulActivations prepare_activations(const DotKernels& kernels, GgmlType type, const float* x, int64_t n_tokens, int64_t k,
                                      MatmulScratch& scratch, int n_threads) {
  MatmulActivations a;
  a.f32 = x;
  const ActivationFormat format = activation_format(type);
  const int64_t nb = format == ActivationFormat::Q8_0 ? k / kQK8_0 : k / kQK_K;
  switch (format) {
    case ActivationFormat::Q8_0:
      scratch.q8_0.resize(static_cast<size_t>(n_tokens * nb));
      scratch.q8_0_scale.resize(scratch.q8_0.size());
      scratch.q8_0_sum.resize(scratch.q8_0.size());
      scratch.q8_0_chunk_bias.resize(scratch.q8_0.size() * 8);
      a.q8_0 = scratch.q8_0.data();
      a.q8_0_scale = scratch.q8_0_scale.data();
      a.q8_0_sum = scratch.q8_0_sum.data();
      a.q8_0_chunk_bias = scratch.q8_0_chunk_bias.data();
      break;
    case ActivationFormat::Q8_K:
      scratch.q8_K.resize(static_cast<size_t>(n_tokens * nb));
      a.q8_K = scratch.q8_K.data();
      break;
    case ActivationFormat::F32:
      if (type != GgmlType::BF16 || !kernels.tile_bf16) return a;
      scratch.bf16.resize(static_cast<size_t>(n_tokens * k));
      a.bf16 = scratch.bf16.data();
      break;
  }
  auto quantize_token = [&](int64_t t) {
    if (format == ActivationFormat::F32)
      kernels.round_to_bf16(x + t * k, scratch.bf16.data() + t * k, k);
    else if (format == ActivationFormat::Q8_0)
      kernels.quantize_q8_0(x + t * k, k, scratch.q8_0.data() + t * nb, scratch.q8_0_scale.data() + t * nb,
                            scratch.q8_0_sum.data() + t * nb, scratch.q8_0_chunk_bias.data() + t * nb * 8);
    else
      kernels.quantize_q8_K(x + t * k, scratch.q8_K.data() + t * nb, k);
  };
  // Many tokens (prefill) quantize in parallel; each row's result does not depend on the split.
  // A few stay on this thread: waking the others costs more than the ~0.5 us a 2048-value row takes.
  // (Only a parallel call may look up scratch's pool: one of another size would be replaced, and the
  // forward pass holds a reference to the one it shares.)
  parallel_for(n_threads > 1 ? &worker_pool(scratch, n_threads) : nullptr, n_tokens * k >= kMinParallelWork / 16, n_tokens,
               Schedule::Static, [&](int64_t t, int) { quantize_token(t); });
  return a;
}

PackedKQuantKernel packed_kquant_kernel(const DotKernels& kernels, GgmlType type) {
  switch (type) {
    case GgmlType::Q4_K: return kernels.packed_q4_K;
    case GgmlType::Q5_K: return kernels.packed_q5_K;
    case GgmlType::Q6_K: return kernels.packed_q6_K;
    default: return nullptr;
  }
}

PackedGroupKernel packed_group_kernel(const DotKernels& kernels, GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: return kernels.packed_q4_0;
    case GgmlType::Q8_0: return kernels.packed_q8_0;
    default: return nullptr;
  }
}

bool packable(const WeightMatrix& w, const DotKernels& kernels) {
  const bool half_kernel = w.type == GgmlType::F16 ? kernels.packed_f16 != nullptr : kernels.packed_bf16 != nullptr;
  return packable(w.type) || packed_kquant_kernel(kernels, w.type) != nullptr || (half_kernel && packable_half(w));
}

void pack_weights(WeightMatrix& w, WorkerPool& pool, WeightArena* arena, const DotKernels& kernels) {
  if (w.packed || !packable(w, kernels)) return;
  if (packable(w.type))
    w.packed = pack_rows(w, pool, arena);
  else if (w.type == GgmlType::F16 || w.type == GgmlType::BF16)
    w.packed = pack_rows_half(w, pool, arena);
  else
    w.packed = pack_rows_kquant(w, pool, arena);
}

void pack_weights(WeightMatrix& w, int n_threads, WeightArena* arena, const DotKernels& kernels) {
  if (w.packed || !packable(w, kernels)) return;
  WorkerPool pool(n_threads);
  pack_weights(w, pool, arena, kernels);
}

bool copy_to_weight_memory(WeightMatrix& w, WeightArena* arena) {
  const size_t bytes = w.bytes();
  if (arena) {
    std::shared_ptr<uint8_t> copy = arena->allocate(bytes);
    std::memcpy(copy.get(), w.data, bytes);
    w.data = copy.get();
    w.copy = std::move(copy);
    return true;
  }
  if (bytes < kMinHugeWeightBytes) return false;
  WeightBuffer buffer = allocate_weight_memory(bytes);
  std::memcpy(buffer.get(), w.data, bytes);
  w.data = buffer.get();
  w.copy = std::shared_ptr<const uint8_t>(buffer.release(), &std::free);
  return true;
}

namespace {

// body(task, thread) for tasks [0, n_tasks), on scratch's pool of n_threads when `parallel`, spread
// as `schedule` says (core/worker_pool.h). While profiling, each thread's time inside its tasks is
// added to scratch.busy_seconds.
template <class Body>
void run_tasks(int64_t n_tasks, bool parallel, int n_threads, Schedule schedule, MatmulScratch& scratch, Body&& body) {
  std::vector<double>* busy = scratch.profile ? &scratch.busy_seconds : nullptr;
  auto task = [&](int64_t t, int thread) {
    if (!busy) return body(t, thread);
    const auto start = std::chrono::steady_clock::now();
    body(t, thread);
    (*busy)[static_cast<size_t>(thread)] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  parallel_for(parallel ? &worker_pool(scratch, n_threads) : nullptr, parallel, n_tasks, schedule, task);
}

// Row groups per task of a Stealing loop over n_groups: about kStealTasksPerThread tasks per
// thread, so a slowed thread's last tasks are small enough to share and the tasks few enough that
// claiming them (and timing them, while profiling) costs nothing measurable.
constexpr int64_t kStealTasksPerThread = 16;
int64_t groups_per_steal_task(int64_t n_groups, int n_threads) {
  return std::max<int64_t>(1, n_groups / (kStealTasksPerThread * std::max(1, n_threads)));
}

// for_each(g) for the groups [0, n_groups) in tasks of consecutive groups, Stealing: each thread runs
// its contiguous share forward (the weights one stream, as the kernels' prefetches expect) and
// then helps with the others' last tasks.
template <class ForEachGroup>
void run_group_tasks(int64_t n_groups, bool parallel, int n_threads, MatmulScratch& scratch, ForEachGroup&& for_each) {
  const int64_t per_task = parallel ? groups_per_steal_task(n_groups, n_threads) : n_groups;
  const int64_t n_tasks = (n_groups + per_task - 1) / per_task;
  run_tasks(n_tasks, parallel, n_threads, Schedule::Stealing, scratch, [&](int64_t task, int) {
    for (int64_t g = task * per_task; g < std::min(n_groups, (task + 1) * per_task); ++g) for_each(g);
  });
}

constexpr int64_t kRowTile = 64;  // rows per task: a tile of weights stays in L2 while tokens stream past
constexpr int64_t kF16RowTile = 48;  // the same for F16 and BF16 tiles: a multiple of every f16/bf16_tile_rows()
static_assert(kF16RowTile % kPackedHalfRows == 0);

// y[t0 .. t0+n) (n ≤ kDotTokens) for one row through the multi-token kernel; false when the table has none.
bool dot_row_tokens(const DotKernels& kernels, const WeightMatrix& w, int64_t r, const MatmulActivations& a,
                    int64_t t0, int n, float* out) {
  const uint8_t* row = w.row(r);
  const int64_t k = w.n_cols;
  switch (w.type) {
    case GgmlType::F16: {
      if (!kernels.dotn_f16_f32) return false;
      const float* x[kDotTokens];
      for (int j = 0; j < n; ++j) x[j] = a.f32 + (t0 + j) * k;
      kernels.dotn_f16_f32(reinterpret_cast<const uint16_t*>(row), x, n, k, out);
      return true;
    }
    case GgmlType::Q4_K: case GgmlType::Q6_K: {
      const auto f = w.type == GgmlType::Q4_K ? kernels.dotn_q4_K_q8_K : nullptr;
      const auto g = w.type == GgmlType::Q6_K ? kernels.dotn_q6_K_q8_K : nullptr;
      if (!f && !g) return false;
      const BlockQ8_K* x[kDotTokens];
      for (int j = 0; j < n; ++j) x[j] = a.q8_K + (t0 + j) * (k / kQK_K);
      if (f) f(reinterpret_cast<const BlockQ4_K*>(row), x, n, k / kQK_K, out);
      else g(reinterpret_cast<const BlockQ6_K*>(row), x, n, k / kQK_K, out);
      return true;
    }
    default: return false;
  }
}

// y[t0 .. t0+n, r_begin .. r_end) through a register-tile kernel (F16 weights against f32
// activations, or BF16 against BF16), tile_rows rows per kernel call.
template <typename Activation, typename TileKernel>
void run_row_tiles(TileKernel kernel, int tile_rows, const WeightMatrix& w, const Activation* activations,
                   int64_t r_begin, int64_t r_end, int64_t t0, int n, float* y) {
  constexpr int kMaxRows = 4;
  static_assert(kMaxF16TileRows <= kMaxRows && kMaxBF16TileRows <= kMaxRows);
  const int64_t k = w.n_cols, m = w.n_rows;
  const Activation* x[kDotTokens];
  for (int j = 0; j < n; ++j) x[j] = activations + (t0 + j) * k;
  float out[kMaxRows * kDotTokens];
  for (int64_t r = r_begin; r < r_end; r += tile_rows) {
    const int n_rows = static_cast<int>(std::min<int64_t>(tile_rows, r_end - r));
    const uint16_t* w_rows[kMaxRows];
    const uint16_t* ahead[kMaxRows];  // the next tile's rows, clamped to the matrix
    for (int i = 0; i < n_rows; ++i) {
      w_rows[i] = reinterpret_cast<const uint16_t*>(w.row(r + i));
      ahead[i] = reinterpret_cast<const uint16_t*>(w.row(std::min(r + tile_rows + i, m - 1)));
    }
    kernel(w_rows, n_rows, ahead, x, n, k, out);
    for (int i = 0; i < n_rows; ++i)
      for (int j = 0; j < n; ++j) y[(t0 + j) * m + r + i] = out[i * kDotTokens + j];
  }
}

// The tile kernel of w's type for n tokens, run over rows [r_begin, r_end); false when there is none.
bool run_tiles(const DotKernels& kernels, const WeightMatrix& w, const MatmulActivations& a, int64_t r_begin,
               int64_t r_end, int64_t t0, int n, float* y) {
  if (w.type == GgmlType::F16 && kernels.tile_f16_f32) {
    run_row_tiles(kernels.tile_f16_f32, f16_tile_rows(n), w, a.f32, r_begin, r_end, t0, n, y);
    return true;
  }
  if (w.type == GgmlType::BF16 && a.bf16) {
    run_row_tiles(kernels.tile_bf16, bf16_tile_rows(n), w, a.bf16, r_begin, r_end, t0, n, y);
    return true;
  }
  return false;
}

}  // namespace

namespace {

// The K-quant tile kernels for n_tokens tokens, or null where the row kernels do better. Measured
// in the model, not on cache-resident matrices (where the tiles win from 5 tokens): TinyLlama-shape
// Q4_K_M, 2 threads, Zen 5, `nucleus bench batch --batch B --prompt 128 --gen 32` generation tok/s,
// tiles from 8 tokens vs from 16: batch 8 93-94 vs 87-89; tiles from 16 vs from 17: batch 16 117-118
// vs 96-105. At 5 tokens (a γ = 4 verification pass) the row kernels win: `bench spec` verify/step
// 3.3x with them, 4.3x with the prepared tiles, 5.5x with the direct ones. Q5_K has no multi-token
// row kernel: the tiles from 2 tokens.
const KQuantTileKernels* kquant_tile_kernels(const DotKernels& kernels, GgmlType type, int64_t n_tokens) {
  const KQuantTileKernels* k = nullptr;
  int64_t min_tokens = 2;
  switch (type) {
    case GgmlType::Q4_K: k = &kernels.tile_q4_K, min_tokens = kernels.dotn_q4_K_q8_K ? 8 : 2; break;
    case GgmlType::Q5_K: k = &kernels.tile_q5_K; break;
    case GgmlType::Q6_K: k = &kernels.tile_q6_K, min_tokens = kernels.dotn_q6_K_q8_K ? 8 : 2; break;
    default: return nullptr;
  }
  return k->direct && n_tokens >= min_tokens ? k : nullptr;
}

constexpr int64_t kPreparedRowTile = 32;  // rows per task when prepared: 16 row pairs' blocks stay in L2

// K-quant weights, several tokens (kernels/kquant_tile.h): tasks of rows; within a task, groups of
// four tokens (kept in L1) run past the task's rows two at a time. With more than one group, each
// row pair is unpacked once into the thread's prepared buffer and every group reads it from there.
void matmul_kquant_tiles(const KQuantTileKernels& kernels, const WeightMatrix& w, const MatmulActivations& a,
                         int64_t n_tokens, float* y, bool parallel, int n_threads, MatmulScratch& scratch) {
  const int64_t m = w.n_rows, n_blocks = w.n_cols / kQK_K;
  const int64_t padded = (n_tokens + kKQuantTileTokens - 1) / kKQuantTileTokens * kKQuantTileTokens;
  scratch.q8_K_sub_sums.assign(static_cast<size_t>(n_blocks * padded * 8), 0);
  scratch.q8_K_d.assign(static_cast<size_t>(n_blocks * padded), 0.0f);
  scratch.q8_K_qs.resize(static_cast<size_t>(n_tokens * n_blocks * kQK_K + 64));
  int8_t* qs = align_up_64(scratch.q8_K_qs.data());
  fill_kquant_tile_activations(a.q8_K, n_tokens, n_blocks, padded, qs, scratch.q8_K_sub_sums.data(), scratch.q8_K_d.data());
  const KQuantTileActivations x{a.q8_K, qs, scratch.q8_K_sub_sums.data(), scratch.q8_K_d.data(), n_blocks, padded};
  const bool prepare = n_tokens > kKQuantTileTokens;
  const int64_t rows_per_task = prepare ? kPreparedRowTile : kRowTile;
  const size_t row_bytes = static_cast<size_t>(n_blocks) * kKQuantPreparedBlockBytes;
  if (prepare) {
    scratch.kquant_prepared.resize(static_cast<size_t>(parallel ? n_threads : 1));
    for (auto& buffer : scratch.kquant_prepared) buffer.resize(row_bytes * kPreparedRowTile + 64);
  }
  const int64_t n_tiles = (m + rows_per_task - 1) / rows_per_task;
  auto run_tile = [&](int64_t tile, int thread) {
    const int64_t r_begin = tile * rows_per_task, r_end = std::min(m, r_begin + rows_per_task);
    uint8_t* prepared = nullptr;
    if (prepare) {
      uint8_t* base = scratch.kquant_prepared[static_cast<size_t>(thread)].data();
      prepared = align_up_64(base);
      for (int64_t r = r_begin; r < r_end; ++r)
        kernels.prepare(w.row(r), n_blocks, prepared + static_cast<size_t>(r - r_begin) * row_bytes);
    }
    float out[kKQuantTileRows * kKQuantTileTokens];
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kKQuantTileTokens) {
      const int n = static_cast<int>(std::min<int64_t>(kKQuantTileTokens, n_tokens - t0));
      if (prepare) {  // all the task's rows in one call, results straight into y
        kernels.prepared(prepared, row_bytes, r_end - r_begin, x, t0, n, y + t0 * m + r_begin, m);
        continue;
      }
      for (int64_t r = r_begin; r < r_end; r += kKQuantTileRows) {
        const bool pair = r + 1 < r_end;
        kernels.direct(w.row(r), w.row(pair ? r + 1 : r), x, t0, n, out);
        for (int j = 0; j < n; ++j) {
          y[(t0 + j) * m + r] = out[j];
          if (pair) y[(t0 + j) * m + r + 1] = out[kKQuantTileTokens + j];
        }
      }
    }
  };
  run_tasks(n_tiles, parallel, n_threads, Schedule::Dynamic, scratch, run_tile);
}

// Packed weights: each task is one group of 16 rows, which runs the tokens through in tiles of
// kPackTokens so every weight block loaded serves the whole tile from registers.
// kernel(g, t0, n, out) writes out[t · kPackRows + i] for the group's rows i and tokens t0 + t.
template <class GroupKernel>
void packed_group_all_tokens(const PackedRows& p, int64_t g, int64_t n_tokens, float* y, GroupKernel&& kernel) {
  const int64_t m = p.n_rows;
  alignas(64) float out[kPackTokens * kPackRows];
  const int64_t r0 = g * kPackRows;
  const int n_valid = static_cast<int>(std::min<int64_t>(kPackRows, m - r0));
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kPackTokens) {
    const int n = static_cast<int>(std::min<int64_t>(kPackTokens, n_tokens - t0));
    kernel(g, t0, n, out);
    for (int t = 0; t < n; ++t) std::copy(out + t * kPackRows, out + t * kPackRows + n_valid, y + (t0 + t) * m + r0);
  }
}

template <class GroupKernel>
void matmul_packed_groups(const PackedRows& p, int64_t n_tokens, float* y, bool parallel, int n_threads,
                          MatmulScratch& scratch, GroupKernel&& kernel) {
  run_group_tasks(p.n_groups, parallel, n_threads, scratch,
                  [&](int64_t g) { packed_group_all_tokens(p, g, n_tokens, y, kernel); });
}

void matmul_packed(PackedGroupKernel kernel, const PackedRows& p, const MatmulActivations& a, int64_t n_tokens, float* y,
                   bool parallel, int n_threads, MatmulScratch& scratch) {
  const PackedActivations x{a.q8_0, a.q8_0_scale, a.q8_0_sum, a.q8_0_chunk_bias, p.n_blocks};
  matmul_packed_groups(p, n_tokens, y, parallel, n_threads, scratch,
                       [&](int64_t g, int64_t t0, int n, float* out) { kernel(p, g, x, t0, n, out); });
}

// One packed K-quant group against Q8_K activation rows t0 .. t0 + n - 1 (n ≤ kPackTokens).
void kquant_group(PackedKQuantKernel kernel, const PackedRows& p, const MatmulActivations& a, int64_t g, int64_t t0,
                  int n, float* out) {
  const BlockQ8_K* x[kPackTokens];
  for (int t = 0; t < n; ++t) x[t] = a.q8_K + (t0 + t) * p.n_blocks;
  kernel(p, g, x, n, out);
}

void matmul_packed_kquant(PackedKQuantKernel kernel, const PackedRows& p, const MatmulActivations& a, int64_t n_tokens,
                        float* y, bool parallel, int n_threads, MatmulScratch& scratch) {
  matmul_packed_groups(p, n_tokens, y, parallel, n_threads, scratch, [&](int64_t g, int64_t t0, int n, float* out) {
    kquant_group(kernel, p, a, g, t0, n, out);
  });
}

// Packed F16 or BF16 weights (kernels/packed_f16.h): groups of kPackedHalfRows rows through the
// packed tile, against activation rows x[n_tokens, n_cols] (f32 for F16, BF16-rounded for BF16).
// Here group g for tokens t0 .. t0 + n - 1 (n ≤ kDotTokens) into y [n_tokens, p.n_rows].
template <typename Activation, typename Kernel>
void packed_half_group(Kernel kernel, const PackedRows& p, int64_t g, const Activation* x, int64_t t0, int n, float* y) {
  const int64_t m = p.n_rows, k = p.n_cols;
  const Activation* xs[kDotTokens] = {};
  for (int j = 0; j < n; ++j) xs[j] = x + (t0 + j) * k;
  float out[kPackedHalfRows * kDotTokens];
  kernel(reinterpret_cast<const uint16_t*>(p.group(g)), xs, n, k, out);
  const int64_t r0 = g * kPackedHalfRows;
  const int n_valid = static_cast<int>(std::min<int64_t>(kPackedHalfRows, m - r0));
  for (int i = 0; i < n_valid; ++i)
    for (int j = 0; j < n; ++j) y[(t0 + j) * m + r0 + i] = out[i * kDotTokens + j];
}

// One token: run_group_tasks (a contiguous share per thread, then stealing); more: tasks of
// kF16RowTile rows, each running its groups past token groups of near-equal size (≤ 6 tokens, the
// tile's), as the row-major F16 path does — Stealing too, rather than one counter both threads
// take from alternately: kernels_bench stream/F16/avx512/2/5, Zen 4, four rounds alternating,
// median 51.0 -> 49.7 ms, BF16 58.5 -> 54.7; TinyLlama F16's 5-token pass 66.3-70.8 -> 64.4-65.1 ms.
template <typename Activation, typename Kernel>
void matmul_packed_half(Kernel kernel, const PackedRows& p, const Activation* x, int64_t n_tokens, float* y,
                        bool parallel, int n_threads, MatmulScratch& scratch) {
  auto run_groups = [&](int64_t g_begin, int64_t g_end, int64_t t0, int n) {
    for (int64_t g = g_begin; g < g_end; ++g) packed_half_group(kernel, p, g, x, t0, n, y);
  };
  if (n_tokens == 1) {
    run_group_tasks(p.n_groups, parallel, n_threads, scratch, [&](int64_t g) { run_groups(g, g + 1, 0, 1); });
    return;
  }
  constexpr int64_t kGroupsPerTask = kF16RowTile / kPackedHalfRows;
  const int64_t n_tasks = (p.n_groups + kGroupsPerTask - 1) / kGroupsPerTask;
  const int64_t n_token_groups = (n_tokens + kPackedHalfMaxTokens - 1) / kPackedHalfMaxTokens;
  const int64_t group_size = (n_tokens + n_token_groups - 1) / n_token_groups;
  run_tasks(n_tasks, parallel, n_threads, Schedule::Stealing, scratch, [&](int64_t task, int) {
    const int64_t g_begin = task * kGroupsPerTask, g_end = std::min(p.n_groups, g_begin + kGroupsPerTask);
    for (int64_t t0 = 0; t0 < n_tokens; t0 += group_size)
      run_groups(g_begin, g_end, t0, static_cast<int>(std::min<int64_t>(group_size, n_tokens - t0)));
  });
}

}  // namespace

namespace {

// prepare_activations for a matmul (on its threads when parallel), its time kept in
// scratch.quantize_seconds while profiling.
MatmulActivations prepare_timed(const DotKernels& kernels, GgmlType type, const float* x, int64_t n_tokens, int64_t k,
                                bool parallel, int n_threads, MatmulScratch& scratch) {
  const auto start = scratch.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const MatmulActivations a = prepare_activations(kernels, type, x, n_tokens, k, scratch, parallel ? n_threads : 1);
  if (scratch.profile)
    scratch.quantize_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return a;
}

void matmul_with(const DotKernels& kernels, const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                 int n_threads, bool parallel, MatmulScratch& scratch) {
  const int64_t k = w.n_cols, m = w.n_rows;
  const MatmulActivations a = prepare_timed(kernels, w.type, x, n_tokens, k, parallel, n_threads, scratch);
  if (w.packed) {
    // Every token count: the packed K-quant kernels beat the K-quant tiles from 1 to 128 tokens
    // (kernels_bench gemm/Q4_K/avx512, one thread, Zen 5: 160 vs 89 G multiply-adds/s at 8 tokens,
    // 153 vs 125 at 128; Q5_K and Q6_K alike).
    if (const PackedKQuantKernel kquant = packed_kquant_kernel(kernels, w.type))
      return matmul_packed_kquant(kquant, *w.packed, a, n_tokens, y, parallel, n_threads, scratch);
    if (const PackedGroupKernel kernel = packed_group_kernel(kernels, w.type))
      return matmul_packed(kernel, *w.packed, a, n_tokens, y, parallel, n_threads, scratch);
    if (w.type == GgmlType::F16 && kernels.packed_f16)
      return matmul_packed_half(kernels.packed_f16, *w.packed, a.f32, n_tokens, y, parallel, n_threads, scratch);
    if (w.type == GgmlType::BF16 && kernels.packed_bf16 && a.bf16)
      return matmul_packed_half(kernels.packed_bf16, *w.packed, a.bf16, n_tokens, y, parallel, n_threads, scratch);
  }
  if (const KQuantTileKernels* tiles = kquant_tile_kernels(kernels, w.type, n_tokens))
    return matmul_kquant_tiles(*tiles, w, a, n_tokens, y, parallel, n_threads, scratch);
  if (n_tokens == 1) {
    // One contiguous share of the rows per thread (not even a team of one when not parallel:
    // entering OpenMP costs microseconds per call).
    const int n_shares = parallel ? n_threads : 1;
    run_tasks(n_shares, parallel, n_threads, Schedule::Static, scratch, [&](int64_t share, int) {
      const int64_t r_begin = m * share / n_shares, r_end = m * (share + 1) / n_shares;
      // The F16 and BF16 tiles (where the table has them) for one token too: a lone F16 row's dot is two
      // dependent accumulator chains (latency-bound); a tile runs its rows' chains side by side, same order per row.
      if (run_tiles(kernels, w, a, r_begin, r_end, 0, 1, y)) return;
      for (int64_t r = r_begin; r < r_end; ++r) y[r] = dot_row(kernels, w, r, a, 0);
    });
    return;
  }
  // Several tokens: tiles of rows; within a tile, groups of up to kDotTokens tokens share each
  // loaded weight row (arithmetic intensity grows with the group; a verification pass of γ + 1
  // ≤ 8 tokens reads each row once). F16 and BF16 weights go through the register-blocked tile
  // kernels where the table has them: a few rows at a time, so activations are reused across rows too.
  // Every y[t, r] is still the same reduction as a single-token dot, so results do not depend
  // on n_tokens.
  const bool tiles = (w.type == GgmlType::F16 && kernels.tile_f16_f32) || (w.type == GgmlType::BF16 && a.bf16);
  const int64_t rows_per_task = tiles ? kF16RowTile : kRowTile;
  const int64_t n_tiles = (m + rows_per_task - 1) / rows_per_task;
  // Token groups of near-equal size (9 tokens: 5 + 4, not 8 + 1, whose lone token would take
  // the one-row-at-a-time path) — the tokens past the first group re-read the task's rows from L2.
  const int64_t max_group = (w.type == GgmlType::F16 && tiles) ? kF16TileTokens : kDotTokens;
  const int64_t n_groups = (n_tokens + max_group - 1) / max_group;
  const int64_t group_size = (n_tokens + n_groups - 1) / n_groups;
  auto run_tile = [&](int64_t tile, int) {
    const int64_t r_begin = tile * rows_per_task, r_end = std::min(m, r_begin + rows_per_task);
    for (int64_t t0 = 0; t0 < n_tokens; t0 += group_size) {
      const int n = static_cast<int>(std::min<int64_t>(group_size, n_tokens - t0));
      if (tiles && run_tiles(kernels, w, a, r_begin, r_end, t0, n, y)) continue;
      float out[kDotTokens];
      for (int64_t r = r_begin; r < r_end; ++r) {
        if (n > 1 && dot_row_tokens(kernels, w, r, a, t0, n, out)) {
          for (int j = 0; j < n; ++j) y[(t0 + j) * m + r] = out[j];
        } else {
          for (int j = 0; j < n; ++j) y[(t0 + j) * m + r] = dot_row(kernels, w, r, a, t0 + j);
        }
      }
    }
  };
  run_tasks(n_tiles, parallel, n_threads, Schedule::Dynamic, scratch, run_tile);
}

}  // namespace

namespace {

// Runs call() (one matmul or one joint pass over `bytes` of weights of `type`), adding its time to
// scratch.profile when profiling.
template <class Call>
void profiled(MatmulScratch& scratch, GgmlType type, int64_t matrices, double bytes, bool parallel, int n_threads,
              Call&& call) {
  if (!scratch.profile) return call();
  scratch.busy_seconds.assign(static_cast<size_t>(std::max(1, n_threads)), 0.0);
  scratch.quantize_seconds = 0;
  const auto start = std::chrono::steady_clock::now();
  call();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  StepProfile::Matmuls& entry = scratch.profile->matmul[type];
  entry.seconds += seconds;
  entry.quantize_seconds += scratch.quantize_seconds;
  entry.calls += 1;
  entry.matrices += matrices;
  entry.weight_bytes += bytes;
  if (parallel) {
    double busy = 0;
    for (double b : scratch.busy_seconds) busy += b;
    entry.idle_thread_seconds += std::max(0.0, n_threads * (seconds - scratch.quantize_seconds) - busy);
    scratch.profile->n_threads = std::max(scratch.profile->n_threads, n_threads);
  }
}

// How several matrices on one input can share a pass: all of one type and width and packed for
// one of this table's group kernels — the int8 ones (Q4_0, Q8_0, K-quants) at any token count,
// the F16 / BF16 ones for one token (more tokens take their own dynamic tiling).
enum class JointPass { None, Int8Groups, KQuantGroups, HalfGroups };

JointPass joint_pass(const DotKernels& kernels, std::span<const WeightMatrix* const> ws, int64_t n_tokens) {
  if (ws.size() < 2 || ws.size() > kMaxJointMatrices) return JointPass::None;
  const WeightMatrix& w0 = *ws[0];
  for (const WeightMatrix* w : ws)
    if (w->type != w0.type || w->n_cols != w0.n_cols || !w->packed) return JointPass::None;
  if (packed_kquant_kernel(kernels, w0.type)) return JointPass::KQuantGroups;
  if (packed_group_kernel(kernels, w0.type)) return JointPass::Int8Groups;
  // BF16 groups take BF16-rounded activations, which prepare_activations makes where the table has BF16 tiles.
  const bool half = (w0.type == GgmlType::F16 && kernels.packed_f16) ||
                    (w0.type == GgmlType::BF16 && kernels.packed_bf16 && kernels.tile_bf16);
  return half && n_tokens == 1 ? JointPass::HalfGroups : JointPass::None;
}

// The joint pass: activations prepared once, then the row groups of all matrices, in order, as one
// list run by run_group_tasks (one parallel region instead of one per matrix, and the small
// matrices no longer each split in two).
void matmul_joint(const DotKernels& kernels, JointPass pass, std::span<const WeightMatrix* const> ws, const float* x,
                  int64_t n_tokens, std::span<float* const> ys, int n_threads, bool parallel, MatmulScratch& scratch) {
  const WeightMatrix& w0 = *ws[0];
  const MatmulActivations a = prepare_timed(kernels, w0.type, x, n_tokens, w0.n_cols, parallel, n_threads, scratch);
  const PackedActivations q8_0{a.q8_0, a.q8_0_scale, a.q8_0_sum, a.q8_0_chunk_bias, w0.packed->n_blocks};
  const PackedGroupKernel int8 = packed_group_kernel(kernels, w0.type);
  const PackedKQuantKernel kquant = packed_kquant_kernel(kernels, w0.type);
  auto run_group = [&](size_t i, int64_t g) {
    const PackedRows& p = *ws[i]->packed;
    switch (pass) {
      case JointPass::Int8Groups:
        return packed_group_all_tokens(p, g, n_tokens, ys[i], [&](int64_t gg, int64_t t0, int n, float* out) {
          int8(p, gg, q8_0, t0, n, out);
        });
      case JointPass::KQuantGroups:
        return packed_group_all_tokens(p, g, n_tokens, ys[i], [&](int64_t gg, int64_t t0, int n, float* out) {
          kquant_group(kquant, p, a, gg, t0, n, out);
        });
      case JointPass::HalfGroups:
        if (w0.type == GgmlType::F16) return packed_half_group(kernels.packed_f16, p, g, a.f32, 0, 1, ys[i]);
        return packed_half_group(kernels.packed_bf16, p, g, a.bf16, 0, 1, ys[i]);
      case JointPass::None: return;
    }
  };
  std::array<int64_t, kMaxJointMatrices + 1> first{};  // first[i]: matrix i's first group in the joint list
  for (size_t i = 0; i < ws.size(); ++i) first[i + 1] = first[i] + ws[i]->packed->n_groups;
  const int64_t n_groups = first[ws.size()];
  run_group_tasks(n_groups, parallel, n_threads, scratch, [&](int64_t j) {
    size_t i = 0;
    while (j >= first[i + 1]) ++i;
    run_group(i, j - first[i]);
  });
}

}  // namespace

void matmul(const DotKernels& kernels, const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
            int n_threads, MatmulScratch& scratch) {
  if (!matmul_supports(w.type)) throw Error(std::string("matmul: unsupported weight type ") + ggml_type_name(w.type));
  // Small products stay on one thread: waking a team costs more than the work.
  const bool parallel = n_threads > 1 && w.n_rows * w.n_cols * n_tokens >= kMinParallelWork;
  profiled(scratch, w.type, 1, static_cast<double>(w.bytes()), parallel, n_threads,
           [&] { matmul_with(kernels, w, x, n_tokens, y, n_threads, parallel, scratch); });
}

void matmul_same_input(const DotKernels& kernels, std::span<const WeightMatrix* const> ws, const float* x,
                       int64_t n_tokens, std::span<float* const> ys, int n_threads, MatmulScratch& scratch) {
  if (ws.size() != ys.size()) throw Error("matmul_same_input: one output per matrix");
  const JointPass pass = joint_pass(kernels, ws, n_tokens);
  if (pass == JointPass::None) {
    for (size_t i = 0; i < ws.size(); ++i) matmul(kernels, *ws[i], x, n_tokens, ys[i], n_threads, scratch);
    return;
  }
  int64_t rows = 0;
  double bytes = 0;
  for (const WeightMatrix* w : ws) rows += w->n_rows, bytes += static_cast<double>(w->bytes());
  const bool parallel = n_threads > 1 && rows * ws[0]->n_cols * n_tokens >= kMinParallelWork;
  profiled(scratch, ws[0]->type, static_cast<int64_t>(ws.size()), bytes, parallel, n_threads,
           [&] { matmul_joint(kernels, pass, ws, x, n_tokens, ys, n_threads, parallel, scratch); });
}

}  // namespace nucleus
