// Opening a model the user named: a GGUF file, or a llama2.c checkpoint + tokenizer pair
// (converted in memory to the same GGUF form). Yields the network and its tokenizer.
#pragma once
#include <memory>
#include <string>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace nucleus {

struct ModelSource {
  std::string model_path;
  std::string tokenizer_path;  // llama2.c only
  TokenizerOptions tokenizer_options;
  bool run_from_mapping = false;  // --mmap: no packed / huge-page weight copies (ModelLoadOptions)
  int64_t n_ctx = 0;              // the context the model will serve (0: its own); ModelLoadOptions::n_ctx
  bool check_memory = true;       // --no-memory-check turns it off (ModelLoadOptions::check_memory)
};

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// Throws Error with a one-line message (missing file, malformed file, vocab mismatch).
LoadedModel load_model(const ModelSource& source);
std::unique_ptr<GgufFile> open_model_file(const ModelSource& source);

}  // namespace nucleus
