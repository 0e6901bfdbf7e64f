// llama2.c tokenizer reader (max_token_length, then per token score, length, bytes), through the
// conversion with a valid checkpoint of the vocabulary size the first input byte picks (1-64, or
// 512 when it is 0xff); what converts becomes a tokenizer that encodes and decodes a sample.
#include <cstdint>
#include <vector>

#include "fuzz_common.h"
#include "io/gguf.h"
#include "io/llama2c.h"
#include "llama2c_files.h"
#include "tokenizer/tokenizer.h"

using namespace nucleus;

static volatile size_t sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::TempFile checkpoint("llama2c-ckpt2"), tokenizer("llama2c-tok2");
  static int32_t checkpoint_vocab = -1;
  if (size < 1) return 0;
  const int32_t vocab = data[0] == 0xff ? 512 : 1 + data[0] % 64;
  if (vocab != checkpoint_vocab) {
    const auto file = fuzz::llama2c_checkpoint_file(vocab, false, false);
    checkpoint.write(file.data(), file.size());
    checkpoint_vocab = vocab;
  }
  std::vector<uint8_t> image;
  try {
    image = convert_llama2c_to_gguf(checkpoint.path(), tokenizer.write(data + 1, size - 1));
  } catch (const Error&) {
    return 0;
  }
  try {
    auto file = GgufFile::from_bytes(std::move(image), "converted.gguf");
    auto tok = Tokenizer::from_gguf(*file);
    const auto ids = tok->encode("Once upon a time, \xe4\xb8\x96 <s> \xff!", true, true);
    sink = tok->decode(ids, true).size();
    for (int32_t id = 0; id < tok->n_vocab(); ++id) sink = tok->token_to_piece(id, true).size();
  } catch (const Error&) {
  }
  return 0;
}
