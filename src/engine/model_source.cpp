#include "engine/model_source.h"

#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "io/llama2c.h"

namespace nucleus {

namespace {
bool starts_with_gguf_magic(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(path + ": cannot open: " + std::strerror(errno));
  char magic[4] = {};
  const size_t n = std::fread(magic, 1, 4, f);
  std::fclose(f);
  return n == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}
}  // namespace

std::unique_ptr<GgufFile> open_model_file(const ModelSource& source) {
  if (starts_with_gguf_magic(source.model_path)) return GgufFile::open(source.model_path);
  if (source.tokenizer_path.empty())
    throw Error(source.model_path + ": not a GGUF file; for a llama2.c checkpoint also pass --tokenizer TOKENIZER.bin");
  return load_llama2c(source.model_path, source.tokenizer_path);
}

LoadedModel load_model(const ModelSource& source) {
  LoadedModel loaded;
  std::unique_ptr<GgufFile> file = open_model_file(source);
  loaded.tokenizer = Tokenizer::from_gguf(*file, source.tokenizer_options);
  loaded.model = Model::load(std::move(file), ModelLoadOptions{source.run_from_mapping, source.n_ctx, source.check_memory});
  if (loaded.tokenizer->n_vocab() != loaded.model->hparams().n_vocab)
    throw Error(source.model_path + ": tokenizer has " + std::to_string(loaded.tokenizer->n_vocab()) +
                " tokens but the embedding matrix has " + std::to_string(loaded.model->hparams().n_vocab) + " rows");
  return loaded;
}

}  // namespace nucleus
