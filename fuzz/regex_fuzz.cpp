// The regex compiler (the ECMAScript subset of JSON Schema `pattern` and guided_regex): byte 0 picks
// the anchoring (search / full) and the target (raw text / JSON string contents), the rest up to a
// NUL is the pattern and what follows it a sample. Checked: the GBNF it writes always parses, a
// full-match grammar of the pattern (regex_to_gbnf) too, and the complement used for
// patternProperties as well when the compiler says it handled the pattern.
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_common.h"
#include "structured/grammar.h"
#include "grammar_sample.h"
#include "structured/regex_to_gbnf.h"

using namespace nucleus;

static volatile size_t sink;

static void must_parse(const std::string& gbnf, const char* what) {
  try {
    sink = parse_gbnf(gbnf).num_rules();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: the grammar does not parse: %s\n%s\n", what, e.what(), gbnf.c_str());
    FUZZ_CHECK(false, "the regex compiler wrote a grammar parse_gbnf refuses");
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input input(data, size);
  const uint8_t control = input.byte();
  std::string_view pattern = input.rest(), sample;
  if (const size_t nul = pattern.find('\0'); nul != std::string_view::npos) {
    sample = pattern.substr(nul + 1, 128);
    pattern = pattern.substr(0, nul);
  }
  const auto anchoring = control & 1 ? RegexAnchoring::full : RegexAnchoring::search;
  const auto target = control & 2 ? RegexTarget::json_string_contents : RegexTarget::raw_text;
  try {
    GbnfRules rules;
    const RegexFragment fragment = compile_regex(rules, pattern, anchoring, target);
    if (fragment.max_length) FUZZ_CHECK(fragment.min_length <= *fragment.max_length, "min_length > max_length");
    must_parse(rules.text(fragment.expression), "compile_regex");
  } catch (const Error&) {
  }
  if (control & 4) {
    try {
      GbnfRules rules;
      const RegexComplement complement = compile_regex_complement(rules, pattern);
      if (complement.handled && complement.expression) must_parse(rules.text(*complement.expression), "complement");
    } catch (const Error&) {
    }
  }
  try {
    const std::string gbnf = regex_to_gbnf(pattern);
    must_parse(gbnf, "regex_to_gbnf");
    if (!sample.empty()) sink = fuzz::bounded_prefix_match(std::make_shared<const Grammar>(parse_gbnf(gbnf)), sample);
  } catch (const Error&) {
  }
  return 0;
}
