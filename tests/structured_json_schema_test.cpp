// JSON Schema → GBNF: every keyword on small schemas (strings that must / must not match), exact
// integer and number ranges against the arithmetic, and the shared corpus of 240 real schemas:
// how many compile, every valid instance of a compiled schema matches, every invalid one is refused.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "structured/grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/json_schema_to_gbnf.h"
#include "test_helpers.h"

namespace nucleus {
namespace {

using ordered_json = nlohmann::ordered_json;

Grammar compile_schema(const std::string& schema_text, JsonSchemaOptions options = {}) {
  return parse_gbnf(json_schema_text_to_gbnf(schema_text, options));
}

struct KeywordCase {
  const char* name;
  const char* schema;
  std::vector<std::string> accept, reject;
};

void check_cases(const std::vector<KeywordCase>& cases) {
  for (const KeywordCase& c : cases) {
    SCOPED_TRACE(std::string(c.name) + ": " + c.schema);
    Grammar g;
    try {
      g = compile_schema(c.schema);
    } catch (const Error& e) {
      ADD_FAILURE() << "does not compile: " << e.what();
      continue;
    }
    for (const std::string& s : c.accept) EXPECT_TRUE(grammar_matches(g, s)) << "should match: " << s;
    for (const std::string& s : c.reject) EXPECT_FALSE(grammar_matches(g, s)) << "should not match: " << s;
  }
}

TEST(StructuredJsonSchemaKeywords, Types) {
  check_cases({
      {"null", R"({"type":"null"})", {"null"}, {"nul", "0", "\"null\""}},
      {"boolean", R"({"type":"boolean"})", {"true", "false"}, {"1", "True", "null"}},
      {"integer",
       R"({"type":"integer"})",
       {"0", "-1", "123", "-9007199254740993"},
       {"01", "-0.5", "1.0", "1e3", "+1", "-"}},
      {"number", R"({"type":"number"})", {"0", "-1.5", "1e10", "2.5E-3", "0.0", "-0"}, {"01", ".5", "1.", "1e", "NaN"}},
      {"string",
       R"({"type":"string"})",
       {R"("")", R"("a b")", R"("\"\\\/\b\f\n\r\t")", R"("\u00e9\uD83D\uDE00")", "\"日本語 🙂\""},
       {R"("a)", "\"a\nb\"", R"("\x")", R"("\u12")", "\"\x01\""}},
      {"union", R"({"type":["string","null"]})", {"null", R"("x")"}, {"1", "{}"}},
      {"any", R"({})", {"null", "1", R"("x")", R"({"a":[1,{"b":null}]})", "[ 1 , 2 ]"}, {"", "{", "[1,]"}},
      {"true schema", "true", {"null", "[]"}, {"nope"}},
  });
}

TEST(StructuredJsonSchemaKeywords, InferredTypes) {
  check_cases({
      {"properties imply object", R"({"properties":{"a":{"type":"integer"}}})", {R"({"a":1})", "{}"}, {R"("a")", "1"}},
      {"minLength implies string", R"({"minLength":2})", {R"("ab")"}, {R"("a")", "12"}},
      {"minimum implies number", R"({"minimum":2})", {"2", "2.5"}, {"1", R"("3")"}},
      {"items imply array", R"({"items":{"type":"integer"}})", {"[1,2]", "[]"}, {R"(["a"])", "1"}},
  });
}

TEST(StructuredJsonSchemaKeywords, EnumAndConst) {
  check_cases({
      {"enum",
       R"({"enum":["red","green",3,null,true,{"a":[1]},["x"]]})",
       {R"("red")", R"("green")", "3", "null", "true", R"({"a":[1]})", R"({ "a" : [ 1 ] })", R"(["x"])"},
       {R"("blue")", "4", "false", R"({"a":[2]})", R"("Red")"}},
      {"const",
       R"({"const":"a\"b/c"})",
       {R"("a\"b/c")", R"("a\"b\/c")", R"("a\u0022b/c")"},
       {R"("a\"b")", R"("ab/c")"}},
      {"enum filtered by type", R"({"type":"string","enum":["a",1]})", {R"("a")"}, {"1"}},
      {"enum filtered by maxLength", R"({"enum":["a","abc"],"maxLength":2})", {R"("a")"}, {R"("abc")"}},
  });
}

TEST(StructuredJsonSchemaKeywords, Objects) {
  check_cases({
      {"required and optional in order",
       R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["b"],)"
       R"("additionalProperties":false})",
       {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({ "a" : 1 , "b" : "x" })", "{\n  \"a\": 1,\n  \"b\": \"x\"\n}"},
       {"{}", R"({"a":1})", R"({"b":"x","a":1})", R"({"b":"x","c":1})", R"({"a":"1","b":"x"})", R"({"b":"x",})",
        "{\"b\":\"x\"     }", "{  \"b\":\"x\"}"}},
      {"additionalProperties absent means true",
       R"({"properties":{"a":{"type":"integer"}}})",
       {R"({"a":1,"z":[true]})", R"({"z":null})", R"({"a":1})"},
       {R"({"a":"x"})", R"({"z":1,"a":1})"}},
      {"additionalProperties schema",
       R"({"type":"object","additionalProperties":{"type":"integer"}})",
       {"{}", R"({"x":1,"y":2})"},
       {R"({"x":"1"})"}},
      {"required name not declared",
       R"({"type":"object","required":["id"],"additionalProperties":{"type":"integer"}})",
       {R"({"id":1})", R"({"id":1,"x":2})"},
       {"{}", R"({"id":"1"})"}},
      {"all optional, none allowed extra",
       R"({"type":"object","properties":{"a":{},"b":{}},"additionalProperties":false})",
       {"{}", R"({"a":1})", R"({"b":1})", R"({"a":1,"b":2})"},
       {R"({"b":1,"a":2})", R"({"a":1,"a":2})"}},
      {"property name needing escapes",
       R"({"type":"object","properties":{"a\"b":{"type":"integer"}},"required":["a\"b"],"additionalProperties":false})",
       {R"({"a\"b":1})", R"({"a\u0022b":1})"},
       {R"({"ab":1})"}},
      {"patternProperties with additionalProperties false",
       R"({"type":"object","patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false})",
       {"{}", R"({"x-a":1,"x-b":2})"},
       {R"({"y":1})", R"({"x-a":"s"})"}},
      {"trivial patternProperties",
       R"({"type":"object","patternProperties":{"^[a-z]*$":{}}})",
       {R"({"Q":1,"a":2})"},
       {}},
      {"minProperties",
       R"({"type":"object","properties":{"a":{},"b":{}},"minProperties":1})",
       {R"({"a":1})", R"({"b":1})", R"({"a":1,"b":1})", R"({"z":1})", R"({"a":1,"z":1})"},
       {"{}"}},
      {"maxProperties",
       R"({"type":"object","maxProperties":2})",
       {"{}", R"({"a":1})", R"({"a":1,"b":2})"},
       {R"({"a":1,"b":2,"c":3})"}},
      {"minProperties and maxProperties",
       R"({"properties":{"a":{},"b":{},"c":{}},"additionalProperties":false,"minProperties":2,"maxProperties":2})",
       {R"({"a":1,"b":2})", R"({"a":1,"c":2})", R"({"b":1,"c":2})"},
       {"{}", R"({"a":1})", R"({"a":1,"b":2,"c":3})"}},
      {"patternProperties beside additionalProperties",
       R"({"type":"object","patternProperties":{"^[a-z]+$":{"type":"integer"}}})",
       {R"({"abc":1,"B":"x","":null,"a1":"y"})", "{}"},
       {R"({"abc":"x"})", R"({"a":"x"})"}},
      {"unanchored patternProperties",
       R"({"patternProperties":{"\\w+":{"type":"integer"}},"additionalProperties":{"type":"string"}})",
       {R"({"a":1,"-":"x","":"y"})"},
       {R"({"-a-":"x"})", R"({"-":1})"}},
      {"minProperties implied by required",
       R"({"type":"object","properties":{"a":{}},"required":["a"],"minProperties":1})",
       {R"({"a":1})"},
       {"{}"}},
  });
}

// An extra key must never spell a declared name, however it is escaped: a duplicate key would
// slip its value past the declared property's schema.
TEST(StructuredJsonSchemaKeywords, AdditionalPropertiesExcludeDeclaredNames) {
  check_cases(
      {{"exclusion",
        R"({"type":"object","properties":{"a":{"type":"integer"},"ab":{"type":"integer"}},)"
        R"("additionalProperties":{"type":"string"}})",
        {R"({"a":1,"b":"x"})", R"({"b":"x"})", R"({"abc":"x"})", R"({"":"x"})", R"({"A":"x"})",
         R"({"a":1,"ab":2,"b":"x"})", R"({"\u0062":"x"})"},
        {R"({"a":1,"a":"x"})", R"({"a":"x"})", R"({"\u0061":"x"})", R"({"\u0061b":"x"})", R"({"a\u0062":"x"})",
         R"({"ab":"x"})"}}});
}

TEST(StructuredJsonSchemaKeywords, Arrays) {
  check_cases({
      {"items and counts",
       R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})",
       {"[1]", "[1,2,3]", "[ 1 , 2 ]", "[\n  1,\n  2\n]"},
       {"[]", "[1,2,3,4]", R"(["a"])", "[1,]"}},
      {"exact count", R"({"type":"array","minItems":2,"maxItems":2})", {"[1,\"a\"]"}, {"[1]", "[1,2,3]"}},
      {"draft-4 tuple",
       R"({"type":"array","items":[{"type":"integer"},{"type":"string"}],"additionalItems":false})",
       {"[]", "[1]", R"([1,"a"])"},
       {R"(["a"])", R"([1,"a",2])"}},
      {"tuple with additional items",
       R"({"type":"array","items":[{"type":"integer"}],"additionalItems":{"type":"string"}})",
       {"[1]", R"([1,"a","b"])"},
       {R"([1,2])"}},
      {"prefixItems",
       R"({"type":"array","prefixItems":[{"const":1}],"items":{"type":"boolean"},"minItems":2})",
       {"[1,true]", "[1,false,true]"},
       {"[1]", "[2,true]", "[1,1]"}},
      {"uniqueItems with maxItems 1", R"({"type":"array","uniqueItems":true,"maxItems":1})", {"[]", "[1]"}, {"[1,2]"}},
  });
}

TEST(StructuredJsonSchemaKeywords, CompositionAndRefs) {
  check_cases({
      {"anyOf",
       R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]})",
       {"1", R"("a")"},
       {R"("ab")", "null"}},
      {"oneOf with sibling",
       R"({"type":"object","properties":{"k":{"type":"string"}},"required":["k"],)"
       R"("oneOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},)"
       R"({"properties":{"b":{"type":"integer"}},"required":["b"]}]})",
       {R"({"k":"x","a":1})", R"({"k":"x","b":1})"},
       {R"({"k":"x"})", R"({"a":1})"}},
      {"allOf merges objects",
       R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},)"
       R"({"properties":{"b":{"type":"string"}},"required":["b"]}]})",
       {R"({"a":1,"b":"x"})", R"({"a":1,"b":"x","c":0})"},
       {R"({"a":1})", R"({"b":"x"})", R"({"a":"1","b":"x"})"}},
      {"allOf: additionalProperties of one part applies to the other's properties",
       R"({"allOf":[{"properties":{"a":{"type":"integer"}},"additionalProperties":false},{"properties":{"b":{}}}]})",
       {R"({"a":1})", "{}"},
       {R"({"a":1,"b":2})", R"({"b":2})"}},
      {"oneOf by required keys is exclusive",
       R"({"type":"object","properties":{"x":{},"y":{}},"oneOf":[{"required":["x"]},{"required":["y"]}]})",
       {R"({"x":1})", R"({"y":1})"},
       {R"({"x":1,"y":2})", "{}"}},
      {"oneOf with disjoint types",
       R"({"oneOf":[{"type":"string"},{"type":"integer","minimum":0}]})",
       {R"("a")", "3"},
       {"-1", "null"}},
      {"allOf intersects bounds",
       R"({"allOf":[{"type":"integer","minimum":0},{"maximum":5}]})",
       {"0", "5"},
       {"-1", "6"}},
      {"$ref to definitions",
       R"({"definitions":{"n":{"type":"integer"}},"type":"array","items":{"$ref":"#/definitions/n"}})",
       {"[1,2]"},
       {R"(["a"])"}},
      {"$ref escapes",
       R"({"$defs":{"a/b":{"type":"integer"},"c~d":{"type":"string"},"e f":{"type":"null"}},)"
       R"("type":"array","prefixItems":[{"$ref":"#/$defs/a~1b"},{"$ref":"#/$defs/c~0d"},)"
       R"({"$ref":"#/$defs/e%20f"}]})",
       {R"([1,"x",null])"},
       {R"(["x"])"}},
      {"$ref siblings apply (2020-12)",
       R"({"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s","maxLength":2})",
       {R"("ab")"},
       {R"("abc")"}},
      {"$ref siblings ignored (draft 7)",
       R"({"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},)"
       R"("$ref":"#/definitions/s","maxLength":2})",
       {R"("abc")"},
       {"1"}},
  });
}

TEST(StructuredJsonSchemaKeywords, RecursiveRefTree) {
  const char* tree = R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{
      "value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["value"],"additionalProperties":false}}})";
  const Grammar g = compile_schema(tree);
  EXPECT_TRUE(grammar_matches(g, R"({"value":1})"));
  EXPECT_TRUE(
      grammar_matches(g, R"({"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4,"children":[]}]}]})"));
  EXPECT_FALSE(grammar_matches(g, R"({"value":1,"children":[{"value":"2"}]})"));
  EXPECT_FALSE(grammar_matches(g, R"({"value":1,"children":[{"children":[]}]})"));
  // Recursion through the root itself.
  const Grammar list =
      compile_schema(R"({"type":"object","properties":{"next":{"$ref":"#"}},"additionalProperties":false})");
  EXPECT_TRUE(grammar_matches(list, R"({"next":{"next":{}}})"));
  EXPECT_FALSE(grammar_matches(list, R"({"next":{"x":{}}})"));
}

TEST(StructuredJsonSchemaKeywords, StringLengthsCountCodePoints) {
  const Grammar g = compile_schema(R"({"type":"string","minLength":2,"maxLength":3})");
  for (const char* s : {R"("ab")", R"("abc")", "\"é\\n\"", R"("\u00e9ab")", R"("\uD83D\uDE00a")", "\"😀😀\"",
                        "\"日本語\"", R"("\"\\\/")", R"("\t\t")"})
    EXPECT_TRUE(grammar_matches(g, s)) << s;
  for (const char* s :
       {R"("a")", R"("abcd")", "\"😀😀😀😀\"", R"("\u00e9")", R"("\uD83D\uDE00")", R"("\n\n\n\n")", "\"日本語x\"", R"("")"})
    EXPECT_FALSE(grammar_matches(g, s)) << s;
}

TEST(StructuredJsonSchemaKeywords, Patterns) {
  check_cases({
      {"anchored",
       R"({"type":"string","pattern":"^[a-z]+-[0-9]{2}$"})",
       {R"("ab-12")", R"("a\u002d12")"},
       {R"("ab-1")", R"(" ab-12")", R"("Ab-12")"}},
      {"unanchored finds a match anywhere",
       R"({"type":"string","pattern":"[0-9]{3}"})",
       {R"("x123y")", R"("123")", "\"\\n123\\n\""},
       {R"("12x3")"}},
      {"escaped characters count once",
       R"({"type":"string","pattern":"^.{2}$"})",
       {R"("\"\\")", R"("\u00e9\uD83D\uDE00")"},
       {R"("\n\n")", R"("abc")"}},
      {"pattern implies the lengths",
       R"({"type":"string","pattern":"^[0-9]{4}$","minLength":4,"maxLength":4})",
       {R"("1234")"},
       {R"("123")"}},
  });
}

TEST(StructuredJsonSchemaKeywords, Formats) {
  check_cases({
      {"date",
       R"({"type":"string","format":"date"})",
       {R"("2024-01-15")", R"("2024-02-29")", R"("2000-02-29")", R"("1999-12-31")", R"("0001-01-01")"},
       {R"("2023-02-29")", R"("1900-02-29")", R"("2024-04-31")", R"("2024-13-01")", R"("2024-00-10")", R"("2024-1-5")",
        R"("0000-01-01")", R"("2024-01-15#")", R"("")"}},
      {"time",
       R"({"type":"string","format":"time"})",
       {R"("10:30:00Z")", R"("23:59:59.123+05:30")", R"("00:00:00-08:00")"},
       {R"("24:00:00Z")", R"("10:30:00")", R"("10:60:00Z")", R"("10:30Z")", R"("10:30:00+24:00")"}},
      {"date-time",
       R"({"type":"string","format":"date-time"})",
       {R"("2024-01-15T10:30:00Z")", R"("1999-12-31T23:59:59.5-08:00")"},
       {R"("2024-01-15 10:30:00Z")", R"("2024-01-15T10:30:00")", R"("2024-02-30T10:30:00Z")",
        R"("2024-01-15T10:30:00Z#!~")"}},
      {"uuid",
       R"({"type":"string","format":"uuid"})",
       {R"("123e4567-e89b-12d3-a456-426614174000")", R"("123E4567-E89B-12D3-A456-426614174000")"},
       {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400")",
        R"("g23e4567-e89b-12d3-a456-426614174000")"}},
      {"email",
       R"({"type":"string","format":"email"})",
       {R"("john@example.com")", R"("a.b+c@d-e.org")", R"("x@localhost")"},
       {R"("")", R"("not-an-email")", R"("a@")", R"("@b.c")", R"("a b@c.d")", R"("a..b@c.d")"}},
      {"uri",
       R"({"type":"string","format":"uri"})",
       {R"("https://example.com/path?q=1#frag")", R"("urn:isbn:0451450523")", R"("chrome://flags")",
        R"("mailto:a@b.c")", R"("http://[::1]:8080/")", R"("file:///etc/hosts")"},
       {R"("")", R"("not a uri")", R"(" http://example.org")", R"("/relative/path")", R"("invalid_url")",
        R"("http://a b")"}},
      {"ipv4",
       R"({"type":"string","format":"ipv4"})",
       {R"("192.168.0.1")", R"("0.0.0.0")", R"("255.255.255.255")"},
       {R"("256.0.0.1")", R"("1.2.3")", R"("01.2.3.4")"}},
      {"ipv6",
       R"({"type":"string","format":"ipv6"})",
       {R"("::1")", R"("2001:db8::8a2e:370:7334")", R"("::ffff:192.168.0.1")", R"("1:2:3:4:5:6:7:8")"},
       {R"("1:2:3:4:5:6:7:8:9")", R"("2001:db8:::1")", R"(":::")", R"("12345::")"}},
      {"json-pointer",
       R"({"type":"string","format":"json-pointer"})",
       {R"("")", R"("/a/b~0c/~1")"},
       {R"("a")", R"("/a~2")"}},
      {"unknown format is an annotation", R"({"type":"string","format":"int32"})", {R"("anything")"}, {"1"}},
  });
}

TEST(StructuredJsonSchemaKeywords, StrictModeForbidsExtraProperties) {
  const char* schema = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
  JsonSchemaOptions strict;
  strict.strict = true;
  EXPECT_TRUE(grammar_matches(compile_schema(schema), R"({"a":1,"b":2})"));
  const Grammar g = compile_schema(schema, strict);
  EXPECT_TRUE(grammar_matches(g, R"({"a":1})"));
  EXPECT_FALSE(grammar_matches(g, R"({"a":1,"b":2})"));
}

// Exhaustive over a window of values: the integer grammar accepts exactly the integers in range.
TEST(StructuredJsonSchemaNumbers, IntegerRangesMatchTheArithmetic) {
  struct Bounds {
    std::optional<int64_t> lo, hi;
    bool lo_exclusive = false, hi_exclusive = false, draft4 = false;
  };
  const std::vector<Bounds> cases = {{0, 100},
                                     {1, 1},
                                     {-5, 5},
                                     {-999, -10},
                                     {7, std::nullopt},
                                     {std::nullopt, -3},
                                     {-100, 0, true, true},
                                     {10, 99, true, false, true},
                                     {0, 1000, false, true, true},
                                     {-37, 512},
                                     {95, 105},
                                     {std::nullopt, 250, false, true},
                                     {-1000, 1000},
                                     {123, 456, true, true}};
  for (const Bounds& b : cases) {
    ordered_json schema = {{"type", "integer"}};
    if (b.lo) {
      if (b.draft4) {
        schema["minimum"] = *b.lo, schema["exclusiveMinimum"] = b.lo_exclusive;
      } else {
        schema[b.lo_exclusive ? "exclusiveMinimum" : "minimum"] = *b.lo;
      }
    }
    if (b.hi) {
      if (b.draft4) {
        schema["maximum"] = *b.hi, schema["exclusiveMaximum"] = b.hi_exclusive;
      } else {
        schema[b.hi_exclusive ? "exclusiveMaximum" : "maximum"] = *b.hi;
      }
    }
    SCOPED_TRACE(schema.dump());
    const Grammar g = parse_gbnf(json_schema_to_gbnf(schema));
    int wrong = 0;
    for (int64_t v = -1100; v <= 1100; ++v) {
      const bool in =
          (!b.lo || (b.lo_exclusive ? v > *b.lo : v >= *b.lo)) && (!b.hi || (b.hi_exclusive ? v < *b.hi : v <= *b.hi));
      if (grammar_matches(g, std::to_string(v)) != in && ++wrong <= 5) ADD_FAILURE() << v << " expected " << in;
    }
    EXPECT_EQ(wrong, 0);
    EXPECT_FALSE(grammar_matches(g, "007"));
    EXPECT_FALSE(grammar_matches(g, "5.0"));
  }
  // Larger magnitudes: digit counts change across the bounds.
  const Grammar big = compile_schema(R"({"type":"integer","minimum":-123456789,"maximum":9007199254740991})");
  for (const char* s : {"-123456789", "9007199254740991", "0", "99999999", "-99999999", "1000000000000000"})
    EXPECT_TRUE(grammar_matches(big, s)) << s;
  for (const char* s : {"-123456790", "9007199254740992", "10000000000000000", "-1000000000"})
    EXPECT_FALSE(grammar_matches(big, s)) << s;
  // Fractional bounds on integers round inwards.
  const Grammar rounded = compile_schema(R"({"type":"integer","minimum":0.5,"exclusiveMaximum":3.5})");
  EXPECT_FALSE(grammar_matches(rounded, "0"));
  EXPECT_TRUE(grammar_matches(rounded, "1"));
  EXPECT_TRUE(grammar_matches(rounded, "3"));
  EXPECT_FALSE(grammar_matches(rounded, "4"));
}

// Numbers with integer-valued bounds, over values with and without fractions.
TEST(StructuredJsonSchemaNumbers, NumberRangesMatchTheArithmetic) {
  struct Bounds {
    std::optional<int64_t> lo, hi;
    bool lo_exclusive = false, hi_exclusive = false;
  };
  const std::vector<Bounds> cases = {{0, 1},
                                     {-3, 7},
                                     {-10, -2},
                                     {0, 100, true, true},
                                     {5, std::nullopt},
                                     {std::nullopt, -1, false, true},
                                     {-1, 1, true, false},
                                     {1, 1}};
  const std::vector<std::string> fractions = {"", ".0", ".00", ".5", ".25", ".001", ".999"};
  for (const Bounds& b : cases) {
    ordered_json schema = {{"type", "number"}};
    if (b.lo) schema[b.lo_exclusive ? "exclusiveMinimum" : "minimum"] = *b.lo;
    if (b.hi) schema[b.hi_exclusive ? "exclusiveMaximum" : "maximum"] = *b.hi;
    SCOPED_TRACE(schema.dump());
    const Grammar g = parse_gbnf(json_schema_to_gbnf(schema));
    int wrong = 0;
    for (int64_t i = 0; i <= 120; ++i) {
      for (const std::string& f : fractions) {
        for (bool negative : {false, true}) {
          const std::string text = (negative ? "-" : "") + std::to_string(i) + f;
          const double v = std::stod(text);
          const bool in = (!b.lo || (b.lo_exclusive ? v > *b.lo : v >= *b.lo)) &&
                          (!b.hi || (b.hi_exclusive ? v < *b.hi : v <= *b.hi));
          if (grammar_matches(g, text) != in && ++wrong <= 5) ADD_FAILURE() << text << " expected " << in;
        }
      }
    }
    EXPECT_EQ(wrong, 0);
  }
}

// Decimal bounds: the fraction digits are compared with the bound's, over a fine grid of values.
TEST(StructuredJsonSchemaNumbers, DecimalBoundsMatchTheArithmetic) {
  struct Bounds {
    std::optional<std::string> lo, hi;
    bool lo_exclusive = false, hi_exclusive = false;
  };
  const std::vector<Bounds> cases = {{"0.25", "1.25"},
                                     {"0.0001", "0.1"},
                                     {"-0.5", "0.5", true, true},
                                     {"-2.75", "-1.5"},
                                     {"0.3", std::nullopt, true},
                                     {std::nullopt, "-0.05"},
                                     {"-1.05", "2", false, true},
                                     {"1.5", "1.75", true},
                                     {"0", "0.5", true}};
  for (const Bounds& b : cases) {
    std::string schema = R"({"type":"number")";
    if (b.lo) schema += std::string(",\"") + (b.lo_exclusive ? "exclusiveMinimum" : "minimum") + "\":" + *b.lo;
    if (b.hi) schema += std::string(",\"") + (b.hi_exclusive ? "exclusiveMaximum" : "maximum") + "\":" + *b.hi;
    schema += "}";
    SCOPED_TRACE(schema);
    const Grammar g = compile_schema(schema);
    const double lo = b.lo ? std::stod(*b.lo) : 0, hi = b.hi ? std::stod(*b.hi) : 0;
    int wrong = 0;
    for (int whole = 0; whole <= 3; ++whole) {
      for (const char* f :
           {"",    ".0",    ".00",   ".0001", ".00010", ".00011", ".05", ".049", ".051", ".1",  ".10",  ".2",
            ".25", ".2500", ".2501", ".3",    ".30001", ".5",     ".50", ".75",  ".7",   ".76", ".9999"}) {
        for (const char* sign : {"", "-"}) {
          const std::string text = sign + std::to_string(whole) + f;
          const double v = std::stod(text);
          const bool in =
              (!b.lo || (b.lo_exclusive ? v > lo : v >= lo)) && (!b.hi || (b.hi_exclusive ? v < hi : v <= hi));
          if (grammar_matches(g, text) != in && ++wrong <= 5) ADD_FAILURE() << text << " expected " << in;
        }
      }
    }
    EXPECT_EQ(wrong, 0);
  }
}

TEST(StructuredJsonSchemaErrors, UnsupportedKeywordsAreNamed) {
  struct ErrorCase {
    const char* schema;
    std::vector<std::string> message_parts;
  };
  const std::vector<ErrorCase> cases = {
      {R"({"properties":{"foo":{"not":{"type":"string"}}}})", {"'not'", "#/properties/foo/not"}},
      {R"({"if":{"type":"string"},"then":{"minLength":1}})", {"'if'", "#/if"}},
      {R"({"type":"object","dependentSchemas":{"a":{}}})", {"'dependentSchemas'"}},
      {R"({"type":"object","dependencies":{"a":["b"]}})", {"'dependencies'", "#/dependencies"}},
      {R"({"type":"array","uniqueItems":true})", {"'uniqueItems'", "#/uniqueItems"}},
      {R"({"type":"number","multipleOf":3})", {"'multipleOf'"}},
      {R"({"type":"object","maxProperties":100000})", {"'maxProperties'"}},
      {R"({"type":"array","contains":{"type":"integer"}})", {"'contains'"}},
      {R"({"type":"object","propertyNames":{"maxLength":3}})", {"'propertyNames'"}},
      {R"({"type":"object","unevaluatedProperties":false})", {"'unevaluatedProperties'"}},
      {R"({"$ref":"other.json#/definitions/a"})", {"remote $ref", "other.json"}},
      {R"({"$ref":"#/definitions/missing"})", {"unresolvable $ref"}},
      {R"({"type":"object","properties":{"b":{}},"patternProperties":{"^a":{"type":"integer"}}})",
       {"'patternProperties'"}},
      {R"({"type":"object","patternProperties":{"^a":{"type":"integer"},"^b":{}}})",
       {"'patternProperties'", "several"}},
      {R"({"type":"object","patternProperties":{"^a+b$":{"type":"integer"}}})", {"'patternProperties'", "complement"}},
      {R"({"type":"string","format":"hostname"})", {"format 'hostname'", "#/format"}},
      {R"({"type":"string","pattern":"(a)\\1"})", {"pattern", "backreference", "#/pattern"}},
      {R"({"type":"string","pattern":"^[a-z]+$","maxLength":5})", {"'pattern'", "maxLength"}},
      {R"({"type":"number","minimum":1e30})", {"bound", "18 digits"}},
      {R"({"type":"integer","minimum":5,"maximum":4})", {"unsatisfiable"}},
  };
  for (const ErrorCase& c : cases) {
    try {
      const std::string gbnf = json_schema_text_to_gbnf(c.schema);
      ADD_FAILURE() << "compiled, but should be refused: " << c.schema;
    } catch (const Error& e) {
      for (const std::string& part : c.message_parts)
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << c.schema << " → " << e.what();
    }
  }
  // Annotations and vendor keys are ignored.
  EXPECT_NO_THROW(json_schema_text_to_gbnf(
      R"({"title":"t","description":"d","examples":[1],"default":1,"$comment":"c","deprecated":true,)"
      R"("readOnly":true,"x-vendor":{"not":1},"type":"integer"})"));
}

// ---------------------------------------------------------------------------------------------
// The shared corpus.

std::string corpus_dir() { return test::shared_dir() + "/structured"; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

struct CorpusSchema {
  std::string id, category;
  ordered_json schema;
  std::shared_ptr<Grammar> grammar;  // null: refused
  std::string error;
};

// Under the sanitizers (memory and UB errors, not coverage) every 4th schema; all 240 elsewhere.
#ifdef NUCLEUS_SANITIZED
constexpr size_t kCorpusStride = 4;
#else
constexpr size_t kCorpusStride = 1;
#endif
constexpr size_t kCorpusSize = 240;
constexpr size_t kCorpusTaken = (kCorpusSize + kCorpusStride - 1) / kCorpusStride;

// Every schema of INDEX.tsv (every kCorpusStride-th), compiled once for all the corpus tests.
const std::vector<CorpusSchema>& corpus() {
  static const std::vector<CorpusSchema> schemas = [] {
    std::vector<CorpusSchema> out;
    const std::vector<std::string> rows = lines_of(corpus_dir() + "/INDEX.tsv");
    for (size_t i = 1; i < rows.size(); i += kCorpusStride) {
      std::stringstream row(rows[i]);
      CorpusSchema s;
      std::getline(row, s.id, '\t');
      std::getline(row, s.category, '\t');
      s.schema = ordered_json::parse(slurp(corpus_dir() + "/schemas/" + s.category + "/" + s.id + ".json"));
      try {
        s.grammar = std::make_shared<Grammar>(parse_gbnf(json_schema_to_gbnf(s.schema)));
      } catch (const Error& e) {
        s.error = e.what();
      }
      out.push_back(std::move(s));
    }
    return out;
  }();
  return schemas;
}

// ---- key reordering ----------------------------------------------------------------------
// JSON Schema does not fix key order but the grammar does (properties order; allOf parts after
// the schema's own properties; an anyOf/oneOf branch's after its siblings'). An instance whose
// text does not match is re-serialized with its keys in that order before it is judged.

const ordered_json* follow_ref(const ordered_json& root, const ordered_json& schema) {
  const ordered_json* s = &schema;
  for (int depth = 0; depth < 32 && s->is_object() && s->contains("$ref") && (*s)["$ref"].is_string(); ++depth) {
    std::string ref = (*s)["$ref"].get<std::string>();
    const size_t hash = ref.find('#');
    if (hash == std::string::npos) return s;
    ref = ref.substr(hash + 1);
    try {
      s = &root.at(ordered_json::json_pointer(ref));
    } catch (const std::exception&) {
      return s;
    }
  }
  return s;
}

struct Shape {
  std::vector<std::string> order;             // property names in grammar order
  std::map<std::string, ordered_json> props;  // the first schema seen for each
  const ordered_json* items = nullptr;        // items schema (object form)
  const ordered_json* additional = nullptr;
  std::vector<std::string> required;  // required names: undeclared ones come after every property
};

// How well an instance fits a branch, for choosing the anyOf branch it came from: keys the branch
// names, and above all values equal to (or differing from) the branch's const/enum.
long fit(const ordered_json& root, const Shape& shape, const ordered_json& value) {
  long score = 0;
  for (auto it = value.begin(); it != value.end(); ++it) {
    auto p = shape.props.find(it.key());
    if (p == shape.props.end()) continue;
    score += 1;
    const ordered_json& s = *follow_ref(root, p->second);
    if (!s.is_object()) continue;
    if (s.contains("const")) score += s["const"] == it.value() ? 10 : -100;
    if (s.contains("enum") && s["enum"].is_array())
      score += std::find(s["enum"].begin(), s["enum"].end(), it.value()) != s["enum"].end() ? 5 : -100;
  }
  return score;
}

void collect(const ordered_json& root, const ordered_json& schema_in, const ordered_json& value, Shape& shape,
             int depth) {
  if (depth > 16) return;
  const ordered_json& schema = *follow_ref(root, schema_in);
  if (!schema.is_object()) return;
  if (schema.contains("properties") && schema["properties"].is_object())
    for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it)
      if (!shape.props.count(it.key())) shape.order.push_back(it.key()), shape.props[it.key()] = it.value();
  if (schema.contains("required") && schema["required"].is_array())
    for (const auto& r : schema["required"])
      if (r.is_string()) shape.required.push_back(r.get<std::string>());
  if (schema.contains("items") && schema["items"].is_object() && !shape.items) shape.items = &schema["items"];
  if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object() && !shape.additional)
    shape.additional = &schema["additionalProperties"];
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!schema.contains(key)) continue;
    // The branch naming most of the instance's keys.
    const ordered_json* best = nullptr;
    long best_fit = 0;
    for (const auto& branch : schema[key]) {
      Shape trial;
      collect(root, branch, value, trial, depth + 1);
      const long f = value.is_object() ? fit(root, trial, value) : 0;
      if (!best || f > best_fit) best = &branch, best_fit = f;
    }
    if (best) collect(root, *best, value, shape, depth + 1);
  }
  if (schema.contains("allOf"))
    for (const auto& part : schema["allOf"]) collect(root, part, value, shape, depth + 1);
}

ordered_json reorder(const ordered_json& root, const ordered_json& schema, const ordered_json& value, int depth = 0) {
  if (depth > 64 || !(value.is_object() || value.is_array())) return value;
  Shape shape;
  collect(root, schema, value, shape, 0);
  if (value.is_array()) {
    ordered_json out = ordered_json::array();
    const ordered_json* prefix = nullptr;
    const ordered_json& s = *follow_ref(root, schema);
    if (s.is_object() && s.contains("prefixItems")) prefix = &s["prefixItems"];
    if (s.is_object() && s.contains("items") && s["items"].is_array()) prefix = &s["items"];
    for (size_t i = 0; i < value.size(); ++i) {
      const ordered_json* item_schema = prefix && i < prefix->size() ? &(*prefix)[i] : shape.items;
      out.push_back(item_schema ? reorder(root, *item_schema, value[i], depth + 1) : value[i]);
    }
    return out;
  }
  ordered_json out = ordered_json::object();
  for (const std::string& name : shape.order)
    if (value.contains(name)) out[name] = reorder(root, shape.props[name], value[name], depth + 1);
  for (const std::string& name : shape.required)
    if (value.contains(name) && !out.contains(name))
      out[name] = shape.additional ? reorder(root, *shape.additional, value[name], depth + 1) : value[name];
  for (auto it = value.begin(); it != value.end(); ++it)
    if (!out.contains(it.key()))
      out[it.key()] = shape.additional ? reorder(root, *shape.additional, it.value(), depth + 1) : it.value();
  return out;
}

// The instance text as the grammar should see it: as written, or with its keys reordered.
bool matches_up_to_key_order(const CorpusSchema& s, const std::string& line, bool& reordered) {
  reordered = false;
  if (grammar_matches(*s.grammar, line)) return true;
  const ordered_json value = ordered_json::parse(line);
  const std::string again = reorder(s.schema, s.schema, value).dump();
  if (again == line) return false;
  reordered = true;
  return grammar_matches(*s.grammar, again);
}

TEST(StructuredJsonSchemaCorpus, AtLeast85PercentCompile) {
  NUCLEUS_REQUIRE_SHARED();  // as every shared-data test: skipped only when ../shared is absent
  const std::vector<CorpusSchema>& schemas = corpus();
  ASSERT_EQ(schemas.size(), kCorpusTaken) << "the shared corpus was not found under " << corpus_dir()
                                  << " (set NUCLEUS_SHARED_DIR)";
  size_t compiled = 0;
  std::map<std::string, int> reasons;
  static const std::vector<std::string> keyword_names = {"unsupported",
                                                         "unsatisfiable",
                                                         "not",
                                                         "if",
                                                         "dependencies",
                                                         "dependentSchemas",
                                                         "patternProperties",
                                                         "uniqueItems",
                                                         "multipleOf",
                                                         "minProperties",
                                                         "maxProperties",
                                                         "contains",
                                                         "propertyNames",
                                                         "unevaluatedProperties",
                                                         "$ref",
                                                         "pattern",
                                                         "format",
                                                         "minimum",
                                                         "maximum",
                                                         "enum",
                                                         "const"};
  for (const CorpusSchema& s : schemas) {
    if (s.grammar) {
      ++compiled;
      continue;
    }
    const bool named = std::any_of(keyword_names.begin(), keyword_names.end(),
                                   [&](const std::string& k) { return s.error.find(k) != std::string::npos; });
    EXPECT_TRUE(named) << s.category << "/" << s.id << ": the error names no keyword: " << s.error;
    // The reason without its location, for the summary.
    const size_t at = s.error.rfind(" at #");
    reasons[at == std::string::npos ? s.error : s.error.substr(0, at)]++;
    std::cout << "  refused " << s.category << "/" << s.id << ": " << s.error << "\n";
  }
  std::cout << "compiled " << compiled << " of " << schemas.size() << " schemas; reasons for the others:\n";
  for (const auto& [reason, count] : reasons) std::cout << "  " << count << " × " << reason << "\n";
  EXPECT_GE(compiled * 100, schemas.size() * 85);
}

TEST(StructuredJsonSchemaCorpus, EveryValidInstanceMatches) {
  NUCLEUS_REQUIRE_SHARED();  // as every shared-data test: skipped only when ../shared is absent
  const std::vector<CorpusSchema>& schemas = corpus();
  ASSERT_EQ(schemas.size(), kCorpusTaken) << "the shared corpus was not found under " << corpus_dir();
  size_t total = 0, as_written = 0, after_reordering = 0;
  for (const CorpusSchema& s : schemas) {
    if (!s.grammar) continue;
    for (const std::string& line : lines_of(corpus_dir() + "/instances/" + s.category + "/" + s.id + ".valid.jsonl")) {
      ++total;
      bool reordered = false;
      if (matches_up_to_key_order(s, line, reordered)) {
        ++(reordered ? after_reordering : as_written);
      } else {
        const size_t at = grammar_prefix_length(*s.grammar, line);
        ADD_FAILURE() << s.category << "/" << s.id << ": valid instance refused at byte " << at << " (after "
                      << line.substr(at > 60 ? at - 60 : 0, std::min<size_t>(at, 60)) << ")"
                      << (reordered ? ", also with reordered keys" : "") << ": " << line.substr(0, 300);
      }
    }
  }
  std::cout << "valid instances of compiled schemas: " << total << "; matched as written " << as_written
            << ", after reordering keys to schema order " << after_reordering << "\n";
  EXPECT_GT(total, 1000u / kCorpusStride);
  EXPECT_EQ(as_written + after_reordering, total);
}

TEST(StructuredJsonSchemaCorpus, InvalidInstancesAreRefused) {
  NUCLEUS_REQUIRE_SHARED();  // as every shared-data test: skipped only when ../shared is absent
  const std::vector<CorpusSchema>& schemas = corpus();
  ASSERT_EQ(schemas.size(), kCorpusTaken) << "the shared corpus was not found under " << corpus_dir();
  for (const char* kind : {"invalid", "invalid_format"}) {
    size_t total = 0, refused = 0;
    for (const CorpusSchema& s : schemas) {
      if (!s.grammar) continue;
      for (const std::string& line :
           lines_of(corpus_dir() + "/instances/" + s.category + "/" + s.id + "." + kind + ".jsonl")) {
        ++total;
        // Judged both as written and with keys reordered: neither spelling may pass.
        bool reordered = false;
        if (!matches_up_to_key_order(s, line, reordered)) {
          ++refused;
        } else {
          ADD_FAILURE() << s.category << "/" << s.id << ": " << kind << " instance accepted"
                        << (reordered ? " (keys reordered)" : "") << ": " << line.substr(0, 300);
        }
      }
    }
    std::cout << kind << " instances of compiled schemas: " << total << ", refused " << refused << "\n";
    EXPECT_GT(total, 0u);
    EXPECT_EQ(refused, total);
  }
}

}  // namespace
}  // namespace nucleus
