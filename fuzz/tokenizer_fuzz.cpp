// Tokenizer encode + decode over every shared vocabulary: arbitrary bytes (invalid UTF-8, special
// token text, long runs) encoded with each add_special / parse_special combination, decoded back
// with and without rendering specials; random ids decoded (out-of-range ones are an Error).
// Byte 0 picks the vocabulary and the flags, the rest is the text.
//
// Checked: encode returns ids inside the vocabulary; for valid UTF-8 with add_special and
// parse_special off, decode(encode(s), strip_space_prefix) gives s back (the documented round
// trip; every shared vocabulary has byte fallback or is byte-level).
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "vocabularies.h"

using namespace nucleus;

static std::vector<fuzz::LoadedVocabulary>* vocabularies;
static volatile size_t sink;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  vocabularies = new std::vector<fuzz::LoadedVocabulary>(fuzz::load_vocabularies());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input input(data, size);
  const uint8_t control = input.byte();
  const auto& vocab = (*vocabularies)[control % vocabularies->size()];
  const Tokenizer& tokenizer = *vocab.tokenizer;
  const bool add_special = control & 0x10, parse_special = control & 0x20, render_special = control & 0x40;
  const std::string_view text = input.rest();
  if (control & 0x80) {
    // Ids: two bytes each; ids past the vocabulary must be an Error, not a read out of bounds.
    std::vector<int32_t> ids;
    for (size_t i = 0; i + 1 < text.size(); i += 2) {
      const int32_t raw = static_cast<uint8_t>(text[i]) | (static_cast<uint8_t>(text[i + 1]) << 8);
      ids.push_back(raw % 0x8000 < 0x7ff0 ? raw % tokenizer.n_vocab() : tokenizer.n_vocab() + raw % 4 - 2);
    }
    try {
      sink = tokenizer.decode(ids, render_special, add_special).size();
    } catch (const Error&) {
    }
    return 0;
  }
  std::vector<int32_t> ids;
  try {
    ids = tokenizer.encode(text, add_special, parse_special);
  } catch (const Error&) {
    return 0;
  }
  for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < tokenizer.n_vocab(), "encode returned an id outside the vocabulary");
  const std::string decoded = tokenizer.decode(ids, render_special, true);
  sink = decoded.size();
  // A literal U+2581 (SentencePiece's space mark) in the text comes back as a space from the SPM and
  // Gemma 4 vocabularies, as in llama.cpp and SentencePiece: no round trip for such text.
  if (!add_special && !parse_special && !render_special && fuzz::valid_utf8(text) &&
      text.find("\xe2\x96\x81") == std::string_view::npos)
    FUZZ_CHECK(decoded == text, "decode(encode(s)) != s for valid UTF-8");
  return 0;
}
