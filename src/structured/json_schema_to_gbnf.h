// JSON Schema → GBNF text (llama.cpp's dialect, read by parse_gbnf) whose `root` matches JSON
// texts valid under the schema. The grammar may be stricter than the schema (below), never looser:
// a keyword that constrains validity and cannot be expressed is an Error, never dropped.
//
// Supported: type (and type lists), enum, const, properties, required, additionalProperties
// (absent = true, unless options.strict), items (schema, or the draft-4 array form = tuple),
// prefixItems, additionalItems, minItems, maxItems, minLength, maxLength (code points, each raw or
// escaped), pattern (regex_to_gbnf.h; unanchored = may match anywhere), format (date, time,
// date-time, uuid, email, idn-email, uri, iri, ipv4, ipv6, json-pointer), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum (draft-4 booleans and draft-6+ numbers; exact digit-range
// grammars for integers and for numbers with integer-valued bounds), anyOf, oneOf, allOf (merged),
// local $ref (`#`, `#/definitions/..`, `#/$defs/..`, with ~0 ~1 and %-escapes) including recursion.
// Conditionally accepted (when they cannot reject anything the rest admits): uniqueItems (false, or
// maxItems ≤ 1), multipleOf 1 on integers, minProperties ≤ number of required properties,
// maxProperties ≥ number of properties when no others are allowed, patternProperties whose schemas
// are all `{}` with additionalProperties allowed, or (additionalProperties false) whose patterns
// give the only extra keys. Refused (Error naming the keyword and its JSON pointer): not,
// if/then/else, dependencies, dependentSchemas, dependentRequired, contains, propertyNames,
// unevaluated*, other patternProperties, remote $ref, formats that are asserted but not written
// here (hostname, uri-reference, regex, duration, ...), pattern or format combined with lengths it
// does not imply, bounds on numbers that are not integers.
//
// Choices where the grammar is stricter than JSON Schema (each a subset, so never unsound):
// * keys come in `properties` order (required ones mandatory, optional ones optional), then the
//   additional ones, whose keys differ from every declared name; duplicate keys are never produced.
// * whitespace only after `{ [ , :` and before `} ]`: none, one space, or a newline and up to 20
//   blanks (so a model cannot loop on whitespace); none around the root value.
// * integers are written without fraction or exponent (`1.0` is not an integer here, as in draft
//   4); bounded numbers are written without exponent; `-0` is written only where 0 is allowed.
// * enum and const values are written as their compact serialization (keys in the given order),
//   strings in their shortest spelling except that `"` `\` `/` and control characters may take any
//   escape; string formats are matched in their plain (unescaped) spelling.
// * without `type`, the types are inferred from the type-specific keywords present (properties →
//   object, minLength → string, ...); with none of those, any JSON value.
// * `$ref` siblings: ignored under drafts 4–7 (as those drafts say), otherwise merged like allOf.
//
// Unsound case (documented, accepted): oneOf is compiled as anyOf, so a value matching two
// branches is admitted although oneOf rejects it. Checking exclusivity needs the intersection of
// the branches' languages, which a grammar cannot express in general; schemas use oneOf mostly
// for branches that are disjoint by type or by required keys, where the two agree.
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
