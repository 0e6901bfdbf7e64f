// The request fields that ask for structured output, in every dialect clients send:
//   OpenAI:    response_format {"type": "text" | "json_object" |
//                               "json_schema", "json_schema": {"name", "schema", "strict"}}
//   vLLM:      structured_outputs {"json" | "regex" | "choice" | "grammar" | "json_object"}
//              and the older guided_json / guided_regex / guided_choice / guided_grammar
//   llama.cpp: grammar (GBNF text), json_schema (a schema object)
// At most one may be given (two are a 400: which one would win is a guess). A malformed value is a
// 400 naming the field; a schema or grammar that cannot be compiled is a 400 naming the construct
// (compile_structured_output), never unconstrained output.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "structured/constraint.h"

namespace nucleus::server {

struct StructuredOutputField {
  ConstraintSpec spec;
  std::string field;  // the field it came from, e.g. "response_format"; empty when none
};

// Throws ApiError 400 for malformed fields or more than one. `ordered_body`, when given, is the same
// body parsed keeping key order: schemas are taken from it, so properties come out in the order
// the client wrote them (nlohmann::json sorts keys).
StructuredOutputField parse_structured_output_fields(const nlohmann::json& body,
                                                     const nlohmann::ordered_json* ordered_body = nullptr);

}  // namespace nucleus::server
