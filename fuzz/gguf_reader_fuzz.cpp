// GGUF reader: header, metadata (every value type, nested arrays), tensor infos, offsets and
// alignment, from an in-memory image; what parses is then read back through the typed getters and,
// when it looks like a model, handed to the tokenizer and to Model::load (every tensor's shape and
// type checked against the architecture's description).
#include <cstdint>
#include <memory>
#include <vector>

#include "fuzz_common.h"
#include "io/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

using namespace nucleus;

static volatile size_t sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<GgufFile> file;
  try {
    file = GgufFile::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz.gguf");
  } catch (const Error&) {
    return 0;
  }
  size_t total = 0;
  for (const auto& [key, value] : file->metadata()) {
    total += value.to_display().size() + value.array_size();
    try {
      (void)file->get_int(key, 0);
    } catch (const Error&) {
    }
    try {
      (void)file->get_float(key, 0.0);
    } catch (const Error&) {
    }
    try {
      (void)file->get_string(key, "");
    } catch (const Error&) {
    }
  }
  for (const TensorInfo& tensor : file->tensors()) {
    total += tensor.shape_string().size();
    FUZZ_CHECK(file->find_tensor(tensor.name) != nullptr, "every tensor can be found by name");
    // The reader promises every tensor's bytes lie inside the image.
    FUZZ_CHECK(tensor.nbytes <= file->file_size(), "tensor larger than the file");
    FUZZ_CHECK(tensor.data != nullptr || tensor.nbytes == 0, "tensor without data");
  }
  if (!file->has("tokenizer.ggml.model")) return 0;
  try {
    auto tokenizer = Tokenizer::from_gguf(*file);
    (void)tokenizer->decode(tokenizer->encode("Hello world", true, true));
  } catch (const Error&) {
  }
  if (!file->has("general.architecture") || file->tensors().empty()) return 0;
  try {
    ModelLoadOptions options;
    options.n_ctx = 64;
    options.run_from_mapping = true;
    auto model = Model::load(std::move(file), options);
    total += model->weight_bytes();
  } catch (const Error&) {
  }
  sink = total;
  return 0;
}
