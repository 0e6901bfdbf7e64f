// The JSON-Schema compiler: schema text (byte 0: strict mode) → GBNF. Checked: every grammar it
// writes parses (parse_gbnf: defined rules, no left recursion), and a schema it cannot express is
// an Error naming the keyword. A sample value after a NUL byte is matched against the grammar.
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_common.h"
#include "structured/grammar.h"
#include "grammar_sample.h"
#include "structured/json_schema_to_gbnf.h"

using namespace nucleus;

static volatile size_t sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input input(data, size);
  JsonSchemaOptions options;
  options.strict = input.byte() & 1;
  std::string_view text = input.rest(), sample;
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    sample = text.substr(nul + 1, 256);
    text = text.substr(0, nul);
  }
  std::string gbnf;
  try {
    gbnf = json_schema_text_to_gbnf(text, options);
  } catch (const Error&) {
    return 0;
  }
  try {
    const auto grammar = std::make_shared<const Grammar>(parse_gbnf(gbnf));
    sink = grammar->num_rules();
    if (!sample.empty()) sink = fuzz::bounded_prefix_match(grammar, sample);
  } catch (const Error& e) {
    std::fprintf(stderr, "the compiled grammar does not parse: %s\n%s\n", e.what(), gbnf.c_str());
    FUZZ_CHECK(false, "json_schema_to_gbnf wrote a grammar parse_gbnf refuses");
  }
  return 0;
}
