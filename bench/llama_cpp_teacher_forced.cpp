// Teacher-forced logits from native llama.cpp against a shared reference file, and optionally every
// intermediate tensor of one position — the tool that found where nucleus's K-quant logits left
// llama.cpp's (docs/ARCHITECTURE.md, kernels/ggml_order.h). Not built by CMake: it links the static
// libraries of the native build that bench/build-llama-cpp.sh makes:
//
//   L=bench/.llama-cpp; B=$L/build
//   g++ -O2 -std=c++17 bench/llama_cpp_teacher_forced.cpp -I$L/src/include -I$L/src/ggml/include
//     -o $L/teacher-forced $B/src/libllama.a $B/ggml/src/libggml.a
//     $B/ggml/src/libggml-cpu.a $B/ggml/src/libggml-base.a -fopenmp -lpthread   (one line)
//   bench/.llama-cpp/teacher-forced MODEL.gguf REFERENCE.json [prompt|all|one]
//
// Settings as the references were made: 1 thread, f32 KV cache, flash attention off, n_ctx 512, no
// weight repacking. Modes: `prompt` (the prompt in one batch, then one token at a time, as the
// references), `all` (everything in one batch), `one` (one token at a time). Prints the worst
// |logit − reference| of each step's top 8. With DUMP_POS=p (and DUMP_CASE=c) every f32 tensor llama.cpp
// computes for position p of case c in a one-token batch is written to DUMP_DIR (default .) as
// ref_<name>.bin, raw floats, to compare with nucleus's at the same point.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggml.h"
#include "llama.h"

namespace {

struct DumpState {
  int position = -1;  // the position to dump
  int current = -2;   // the position of the one-token batch being decoded (-2: not one to dump)
  std::string dir = ".";
  std::map<std::string, int> seen;
};

bool dump_tensor(ggml_tensor* t, bool ask, void* user) {
  auto& state = *static_cast<DumpState*>(user);
  if (ask) return state.current == state.position;
  if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t)) return true;
  const int k = state.seen[t->name]++;
  const std::string path = state.dir + "/ref_" + t->name + (k ? "#" + std::to_string(k) : "") + ".bin";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(t->data, 1, ggml_nbytes(t), f);
    std::fclose(f);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf REFERENCE.json [prompt|all|one]\n", argv[0]);
    return 2;
  }
  const std::string mode = argc > 3 ? argv[3] : "prompt";
  llama_backend_init();
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_model_params model_params = llama_model_default_params();
  model_params.use_extra_bufts = false;  // no repacking: ggml's plain vec_dot path
  llama_model* model = llama_model_load_from_file(argv[1], model_params);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  llama_context_params params = llama_context_default_params();
  params.n_ctx = params.n_batch = params.n_ubatch = 512;
  params.n_threads = params.n_threads_batch = 1;
  params.type_k = params.type_v = GGML_TYPE_F32;
  params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  DumpState dump;
  const int dump_case = std::getenv("DUMP_CASE") ? std::atoi(std::getenv("DUMP_CASE")) : 0;
  if (const char* p = std::getenv("DUMP_POS")) {
    dump.position = std::atoi(p);
    if (const char* d = std::getenv("DUMP_DIR")) dump.dir = d;
    params.cb_eval = dump_tensor;
    params.cb_eval_user_data = &dump;
  }
  std::ifstream file(argv[2]);
  const nlohmann::json reference = nlohmann::json::parse(file);
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  double worst = 0.0;
  int beyond = 0, steps = 0, case_index = 0;
  for (const auto& rc : reference["cases"]) {
    const bool dump_this_case = case_index++ == dump_case;
    llama_context* ctx = llama_init_from_model(model, params);
    std::vector<llama_token> tokens = rc["prompt_tokens"].get<std::vector<llama_token>>();
    const size_t n_prompt = tokens.size(), n_steps = rc["steps"].size();
    for (const auto& step : rc["steps"]) tokens.push_back(step["token"].get<int>());
    std::vector<std::vector<float>> rows;  // logits, one row per output
    auto decode = [&](size_t from, size_t n, bool all_logits) {
      dump.current = dump_this_case && n == 1 ? static_cast<int>(from) : -2;
      llama_batch batch = llama_batch_init(static_cast<int32_t>(n), 0, 1);
      for (size_t i = 0; i < n; ++i) {
        batch.token[i] = tokens[from + i];
        batch.pos[i] = static_cast<llama_pos>(from + i);
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = all_logits || i + 1 == n;
      }
      batch.n_tokens = static_cast<int32_t>(n);
      if (llama_decode(ctx, batch) != 0) {
        std::fprintf(stderr, "llama_decode failed\n");
        std::exit(1);
      }
      for (size_t i = 0; i < n; ++i)
        if (batch.logits[i]) {
          const float* l = llama_get_logits_ith(ctx, static_cast<int32_t>(i));
          rows.emplace_back(l, l + n_vocab);
        }
      llama_batch_free(batch);
    };
    if (mode == "prompt") {
      decode(0, n_prompt, false);
      for (size_t s = 1; s < n_steps; ++s) decode(n_prompt - 1 + s, 1, false);
    } else if (mode == "all") {
      decode(0, n_prompt + n_steps - 1, true);
      rows.erase(rows.begin(), rows.begin() + static_cast<long>(n_prompt - 1));
    } else {
      for (size_t i = 0; i + 1 < n_prompt + n_steps; ++i) decode(i, 1, false);
      rows.erase(rows.begin(), rows.begin() + static_cast<long>(n_prompt - 1));
    }
    for (size_t s = 0; s < n_steps; ++s) {
      double step_worst = 0.0;
      for (const auto& entry : rc["steps"][s]["top"])
        step_worst = std::max(step_worst, std::fabs(rows[s][entry[0].get<int>()] - entry[1].get<double>()));
      std::printf("%.1e ", step_worst);
      worst = std::max(worst, step_worst);
      beyond += step_worst > 1e-4;
      ++steps;
    }
    std::printf("\n");
    llama_free(ctx);
  }
  std::printf("worst %.3e, steps beyond 1e-4: %d/%d\n", worst, beyond, steps);
  llama_model_free(model);
  return 0;
}
