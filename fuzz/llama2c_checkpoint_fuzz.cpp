// llama2.c checkpoint reader: the 7-int header (dims, negative vocab = separate classifier) and the
// weight layout it implies, converted to a GGUF image; what converts is loaded as a model. The
// tokenizer file is a valid one of the header's vocabulary size (the tokenizer reader has its own
// target), or the real tok512.bin for vocabulary 512.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_common.h"
#include "io/gguf.h"
#include "io/llama2c.h"
#include "llama2c_files.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

using namespace nucleus;

static volatile size_t sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::TempFile checkpoint("llama2c-ckpt"), tokenizer("llama2c-tok");
  static int64_t tokenizer_vocab = -1;
  int32_t header_vocab = 512;
  if (size >= 28) std::memcpy(&header_vocab, data + 20, 4);
  const int64_t vocab = header_vocab < 0 ? -static_cast<int64_t>(header_vocab) : header_vocab;
  const int64_t wanted = vocab >= 1 && vocab <= 4096 ? vocab : 512;
  if (wanted != tokenizer_vocab) {
    const auto file = wanted == 512 ? [] {
      const std::string s = fuzz::read_file(fuzz::shared_dir() + "/models/llama2c/tok512.bin");
      return std::vector<uint8_t>(s.begin(), s.end());
    }()
                                    : fuzz::llama2c_tokenizer_file(static_cast<int32_t>(wanted));
    tokenizer.write(file.data(), file.size());
    tokenizer_vocab = wanted;
  }
  std::vector<uint8_t> image;
  try {
    image = convert_llama2c_to_gguf(checkpoint.write(data, size), tokenizer.path());
  } catch (const Error&) {
    return 0;
  }
  try {
    auto file = GgufFile::from_bytes(std::move(image), "converted.gguf");
    auto tok = Tokenizer::from_gguf(*file);
    sink = tok->encode("Once upon a time", true, false).size();
    ModelLoadOptions options;
    options.n_ctx = 8;
    auto model = Model::load(std::move(file), options);
    sink = model->weight_bytes();
  } catch (const Error&) {
    // A converted image the tokenizer or the model refuses is still an Error, not a crash.
  }
  return 0;
}
