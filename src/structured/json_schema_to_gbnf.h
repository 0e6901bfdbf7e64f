// JSON Schema → GBNF text (llama.cpp's dialect, read by parse_gbnf) whose `root` matches JSON
// texts valid under the schema. The grammar may be stricter than the schema (below), never looser:
// a keyword that constrains validity and cannot be expressed is an Error, never dropped.
//
// Supported: type (and type lists), enum, const, properties, required, additionalProperties
// (absent = true, unless options.strict), minProperties, maxProperties, items (schema, or the
// draft-4 array form = tuple), prefixItems, additionalItems, minItems, maxItems, minLength,
// maxLength (code points, each raw or escaped), pattern (regex_to_gbnf.h; unanchored = may match
// anywhere), format (date, time, date-time, uuid, email, idn-email, uri, iri, ipv4, ipv6,
// json-pointer; other names the validators assert are refused, unknown ones are annotations),
// minimum, maximum, exclusiveMinimum, exclusiveMaximum (draft-4 booleans and draft-6+ numbers;
// exact digit grammars for integers and for numbers with decimal bounds), anyOf, oneOf, allOf
// (merged; anyOf/oneOf inside distributed), local $ref (`#`, `#/definitions/..`, `#/$defs/..`,
// with ~0 ~1 and %-escapes, the root's $id as prefix) including recursion.
// patternProperties: ignored when every pattern's schema is `{}` and extra keys are allowed anyway;
// with additionalProperties false, extra keys must match a pattern (the patterns' schemas must
// agree and no declared name may match one); a pattern matching every key (`.*`) adds its schema
// to every value; one pattern whose complement is written (a single class with a quantifier:
// `^[a-z_]+$`, `\w+`) splits the extra keys between it and additionalProperties.
// Conditionally accepted (when they cannot reject anything the rest admits): uniqueItems (false,
// or maxItems ≤ 1), multipleOf 1 on integers.
// Refused (Error naming the keyword and its JSON pointer): not, if/then/else, dependencies,
// dependentSchemas, dependentRequired, contains, propertyNames, unevaluated*, uniqueItems,
// multipleOf, other patternProperties, remote $ref and anchors, pattern together with format,
// pattern or format together with lengths they do not imply, bounds beyond 18 digits.
//
// Choices where the grammar is stricter than JSON Schema (each a subset, so never unsound):
// * keys come in `properties` order (required ones mandatory, optional ones optional; allOf parts
//   after the schema's own properties, an anyOf/oneOf branch's after its siblings'), then the
//   additional ones, whose keys differ from every declared name however they are escaped.
// * whitespace only after `{ [ , :` and before `} ]`: none, one space, or a newline and up to 20
//   blanks (so a model cannot loop on whitespace); none around the root value.
// * integers are written without fraction or exponent (`1.0` is not an integer here, as in draft
//   4); bounded numbers are written without exponent.
// * enum and const values are written as their compact serialization (keys in the given order),
//   strings in their shortest spelling except that `"` `\` `/`, control characters and U+0085
//   U+2028 U+2029 may take any escape; string formats are matched in their plain spelling.
// * without `type`, the types are inferred from the type-specific keywords present (properties →
//   object, minLength → string, ...); with none of those, any JSON value.
// * `$ref` siblings: ignored under drafts 4–7 (as those drafts say), otherwise merged like allOf.
// * date/time formats: RFC 3339 with real calendar dates, upper-case T and Z, seconds 00–59.
//
// oneOf (one branch exactly) is written as the union of branch_i & not branch_j. Branches that
// are disjoint (by type, by const/enum of the value or of a required property, by a required
// property the other forbids) need nothing; otherwise, when branch j requires a property that
// branch i does not, "that property absent" (which implies not branch_j) is added to branch i.
// Where neither applies the overlap stays, as in anyOf: a value matching two such branches is
// admitted although oneOf rejects it (in the shared corpus: 7 oneOf sites in 6 schemas). Exact
// exclusion needs the complement of a branch, which a context-free grammar lacks in general.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace nucleus {

struct JsonSchemaOptions {
  bool strict = false;  // additionalProperties defaults to false, as OpenAI's strict mode
};

// Throws Error naming the unsupported keyword or construct and its JSON pointer (#/properties/..).
// Properties are emitted in the order the schema object holds them: the schema's own order for
// ordered_json and for text, alphabetical for nlohmann::json (which sorts its keys).
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {});
std::string json_schema_to_gbnf(const nlohmann::json& schema, const JsonSchemaOptions& options = {});
// Parses the schema text keeping its key order; invalid JSON is an Error.
std::string json_schema_text_to_gbnf(std::string_view schema_text, const JsonSchemaOptions& options = {});

}  // namespace nucleus
