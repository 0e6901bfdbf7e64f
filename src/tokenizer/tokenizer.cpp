#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "io/gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"

namespace nucleus {

namespace {

std::unique_ptr<Tokenizer> make_sentence_piece(const GgufFile& file) {
  VocabDefaults defaults;
  defaults.type = VocabType::SENTENCE_PIECE;
  defaults.bos_id = 1;  // <s>, </s>, <unk> in every Llama-family SentencePiece model
  defaults.eos_id = 2;
  defaults.unknown_id = 0;
  defaults.add_bos = true;
  defaults.add_space_prefix = true;
  defaults.requires_token_types = true;
  return std::make_unique<SpmTokenizer>(load_vocab(file, defaults));
}

// model: "gpt2" (byte-level BPE, pre-tokenizer from the file) or "gemma4" (its own pre-tokenizer,
// SentencePiece-style alphabet; llama.cpp also always adds BOS for it).
std::unique_ptr<Tokenizer> make_bpe(const GgufFile& file, const TokenizerOptions& options, const std::string& model) {
  // Files converted before tokenizer.ggml.pre existed get llama.cpp's "default" patterns.
  const std::string pre_name = !options.pre_override.empty() ? options.pre_override
                               : model == "gemma4"           ? "gemma4"
                                                             : file.get_string("tokenizer.ggml.pre", "default");
  std::optional<PreTokenizer> pre_tokenizer;
  try {
    pre_tokenizer.emplace(pre_name);
  } catch (const Error& error) {
    throw Error(file.path() + ": " + error.what());
  }

  VocabDefaults defaults;
  const bool sentencepiece = pre_tokenizer->traits().sentencepiece_alphabet;
  defaults.type = sentencepiece ? VocabType::SENTENCE_PIECE_BPE : VocabType::BYTE_LEVEL_BPE;
  defaults.bos_id = model == "gpt2" ? 11 : -1;  // llama.cpp's defaults for "gpt2" files that name no BOS/EOS
  defaults.eos_id = model == "gpt2" ? 11 : -1;
  defaults.add_bos = pre_tokenizer->traits().add_bos;
  Vocab vocab = load_vocab(file, defaults);
  if (model == "gemma4") vocab.add_bos = true;  // whatever the file says, as llama.cpp does (its PR 21500)
  if (vocab.add_bos && vocab.bos_id < 0) throw Error(file.path() + ": the tokenizer adds BOS but names no BOS token");

  const MetaValue* merges = file.find("tokenizer.ggml.merges");
  if (!merges) throw Error(file.path() + ": missing tokenizer.ggml.merges (needed by the '" + model + "' tokenizer)");
  if (merges->type != MetaType::ARRAY || merges->elem_type != MetaType::STRING) {
    throw Error(file.path() + ": tokenizer.ggml.merges is not an array of strings");
  }
  return std::make_unique<BpeTokenizer>(std::move(vocab), merges->strings, std::move(*pre_tokenizer));
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file, const TokenizerOptions& options) {
  if (!file.has("tokenizer.ggml.model")) throw Error(file.path() + ": missing tokenizer.ggml.model (the file has no tokenizer)");
  const std::string model = file.get_string("tokenizer.ggml.model");
  if (model == "llama") return make_sentence_piece(file);
  if (model == "gpt2" || model == "gemma4") return make_bpe(file, options, model);
  throw Error(file.path() + ": unsupported tokenizer.ggml.model '" + model + "' (supported: llama, gpt2, gemma4)");
}

void Tokenizer::check_id(int32_t id) const {
  if (!vocab_.contains(id)) {
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " + vocab_.source + " (n_vocab " +
                std::to_string(vocab_.n_vocab()) + ")");
  }
}

const std::string& Tokenizer::token_text(int32_t id) const {
  check_id(id);
  return vocab_.texts[id];
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return std::binary_search(vocab_.end_of_generation_ids.begin(), vocab_.end_of_generation_ids.end(), id);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special, bool strip_space_prefix) const {
  // The prefixed space sits on the first text token: the first token, or the second after a BOS.
  size_t strip_index = ids.size();
  if (strip_space_prefix && vocab_.add_space_prefix && !ids.empty()) {
    strip_index = (ids.size() > 1 && ids[0] == vocab_.bos_id) ? 1 : 0;
  }
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string piece = token_to_piece(ids[i], render_special);
    const bool strip = i == strip_index && !piece.empty() && piece[0] == ' ';
    text.append(piece, strip ? 1 : 0, std::string::npos);
  }
  return text;
}

}  // namespace nucleus
