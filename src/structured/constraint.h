// What a request asks its output to be, and its compilation to a Grammar.
//
// Kinds: json_object (any JSON object: OpenAI's response_format json_object), json_schema, grammar
// (GBNF), regex (the whole output matches), choice (the output is exactly one of the strings).
// Every kind compiles to GBNF text and then to a Grammar, so one matcher runs them all. A
// construct that cannot be compiled is an Error naming it: a request is never answered with
// unconstrained output.
//
// ConstraintCompiler caches compiled grammars by content (kind, options and text), so a client
// sending the same schema again does not pay for compiling it; it is thread-safe (HTTP threads
// compile before submitting).
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "structured/grammar.h"

namespace nucleus {

struct ConstraintSpec {
  enum class Kind { none, json_object, json_schema, grammar, regex, choice };
  Kind kind = Kind::none;
  std::string text;                  // json_schema: the schema as JSON text; grammar: GBNF; regex: the pattern
  std::vector<std::string> choices;  // choice
  bool strict = false;               // json_schema: additionalProperties defaults to false (OpenAI strict)

  bool active() const { return kind != Kind::none; }
  std::string kind_name() const;  // "json_schema", ...
};

// The GBNF text a spec compiles to. Throws Error naming an unsupported construct.
std::string constraint_to_gbnf(const ConstraintSpec& spec);

// A grammar matching any JSON object (`root`), whitespace bounded as in the schema grammars.
std::string json_object_gbnf();

// Quotes `text` as a GBNF string literal.
std::string gbnf_literal(std::string_view text);

class ConstraintCompiler {
 public:
  explicit ConstraintCompiler(size_t capacity = 64) : capacity_(capacity) {}

  struct Compiled {
    std::shared_ptr<const Grammar> grammar;
    double seconds = 0;  // time to compile (0 for a cache hit)
    bool cached = false;
  };
  // Throws Error (the message names the problem) for a spec that cannot be compiled.
  Compiled compile(const ConstraintSpec& spec);

 private:
  size_t capacity_;
  std::mutex mutex_;
  std::list<std::string> order_;  // most recent first
  std::unordered_map<std::string, std::pair<std::shared_ptr<const Grammar>, std::list<std::string>::iterator>> cache_;
};

}  // namespace nucleus
