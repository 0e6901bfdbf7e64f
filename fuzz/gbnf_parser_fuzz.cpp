// The GBNF parser (llama.cpp's dialect): grammar text up to the first NUL byte, parsed with root
// `root`; a grammar that parses is run on the sample text after the NUL (at most 128 bytes) by the
// grammar matcher, byte by byte with a rollback (grammar_sample.h). A syntax error, undefined rule,
// missing root or left recursion must be an Error naming line and column.
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_common.h"
#include "structured/grammar.h"
#include "grammar_sample.h"

using namespace nucleus;

static volatile size_t sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size), sample;
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    sample = text.substr(nul + 1, 128);
    text = text.substr(0, nul);
  }
  std::shared_ptr<const Grammar> grammar;
  try {
    grammar = std::make_shared<const Grammar>(parse_gbnf(text));
  } catch (const Error&) {
    return 0;
  }
  sink = grammar->num_rules();
  try {
    sink = fuzz::bounded_prefix_match(grammar, sample);
  } catch (const Error&) {
  }
  return 0;
}
