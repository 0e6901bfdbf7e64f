// The streaming detokenizer behind SSE: ids (two bytes each, over every shared vocabulary) pushed one
// at a time into IncrementalDetokenizer, each piece wrapped as an SSE chunk the way the server
// streams it. Checked (the documented contract): the pushes plus flush() concatenate to the one-shot
// decode(ids, render_special), and every piece is whole UTF-8 when the decode is.
#include <cstdint>
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "server/sse.h"
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
  const Tokenizer& tokenizer = *(*vocabularies)[control % vocabularies->size()].tokenizer;
  const bool render_special = control & 0x10;
  std::vector<int32_t> ids;
  while (input.remaining() >= 2) {
    const uint16_t raw = input.u16();
    // Mostly ids near the byte tokens and the start of the vocabulary, where multi-byte pieces live.
    ids.push_back(raw & 0x8000 ? raw % tokenizer.n_vocab() : (raw & 0x7fff) % std::min<int32_t>(tokenizer.n_vocab(), 1024));
  }
  IncrementalDetokenizer detokenizer(tokenizer, render_special);
  std::string streamed;
  std::vector<std::string> pieces;
  for (int32_t id : ids) {
    const std::string piece = detokenizer.push(id);
    if (!piece.empty()) {
      nlohmann::json chunk = {{"choices", {{{"index", 0}, {"text", piece}}}}};
      sink = server::sse_event(chunk).size();
    }
    streamed += piece;
    pieces.push_back(piece);
  }
  pieces.push_back(detokenizer.flush());
  streamed += pieces.back();
  const std::string whole = tokenizer.decode(ids, render_special);
  FUZZ_CHECK(streamed == whole, "the streamed pieces differ from the one-shot decode");
  if (fuzz::valid_utf8(whole))
    for (const std::string& piece : pieces) FUZZ_CHECK(fuzz::valid_utf8(piece), "a streamed piece splits a character");
  return 0;
}
