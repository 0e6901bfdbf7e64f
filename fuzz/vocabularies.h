// The shared vocabularies the tokenizer targets load once (LLVMFuzzerInitialize): SentencePiece
// (stories260K's 512 tokens, llama, phi-3), byte-level BPE (gpt-2, llama-bpe = Llama 3, qwen2,
// qwen35) and Gemma 4's SentencePiece-style BPE.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace nucleus::fuzz {

struct LoadedVocabulary {
  std::string name;
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tokenizer;
};

inline std::vector<LoadedVocabulary> load_vocabularies() {
  const std::string shared = shared_dir();
  const std::vector<std::string> paths = {
      shared + "/models/stories260K.gguf",         shared + "/vocab/ggml-vocab-llama-spm.gguf",
      shared + "/vocab/ggml-vocab-phi-3.gguf",     shared + "/vocab/ggml-vocab-gpt-2.gguf",
      shared + "/vocab/ggml-vocab-llama-bpe.gguf", shared + "/vocab/ggml-vocab-qwen2.gguf",
      shared + "/vocab/ggml-vocab-qwen35.gguf",    shared + "/vocab/ggml-vocab-gemma-4.gguf",
  };
  std::vector<LoadedVocabulary> out;
  for (const std::string& path : paths) {
    try {
      LoadedVocabulary v;
      v.name = path.substr(path.rfind('/') + 1);
      v.file = GgufFile::open(path);
      v.tokenizer = Tokenizer::from_gguf(*v.file);
      out.push_back(std::move(v));
    } catch (const Error& e) {
      std::fprintf(stderr, "fuzz: cannot load %s: %s (set NUCLEUS_SHARED_DIR)\n", path.c_str(), e.what());
      std::abort();
    }
  }
  return out;
}

}  // namespace nucleus::fuzz
