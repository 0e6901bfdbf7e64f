// The architecture families nucleus runs: each fills in an HParams description (hparams.h) from its
// GGUF keys, following what llama.cpp computes for that family. Adding a family is adding an entry
// here (and its tensors to model_load.cpp), never a new forward pass.
#pragma once
#include <string>

#include "model/arch_keys.h"
#include "model/hparams.h"

namespace nucleus {

struct ArchitectureFamily {
  const char* name;  // general.architecture
  Architecture arch;
  // Reads the family's keys into hp (everything but n_vocab, which the embedding gives).
  void (*describe)(const GgufFile& file, ArchKeys& keys, HParams& hp);
};

const ArchitectureFamily* find_architecture_family(const std::string& name);
std::string supported_architecture_names();  // "llama, qwen2, ..."

}  // namespace nucleus
