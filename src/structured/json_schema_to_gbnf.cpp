// JSON Schema → GBNF. A schema is normalized first ($ref siblings and allOf merged, anyOf/oneOf
// distributed over their siblings), then written per type. Every compiled subschema is one rule,
// shared by identical subschemas; a $ref target is one rule, reserved before it is compiled, so
// recursive schemas become recursive rules.
#include "structured/json_schema_to_gbnf.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "core/error.h"
#include "structured/regex_to_gbnf.h"

namespace nucleus {
namespace {

// ordered_json keeps the schema's key order: properties are emitted in it.
using json = nlohmann::ordered_json;

// Every validation keyword this compiler knows (implemented or refused). Every other key is
// ignored: annotations (title, description, default, examples, $comment, readOnly, ...), the
// containers definitions/$defs, and keys that are no keyword (x-foo, ...), as validators do.
const std::set<std::string>& validation_keywords() {
  static const std::set<std::string> k = {"type",
                                          "enum",
                                          "const",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "patternProperties",
                                          "items",
                                          "prefixItems",
                                          "additionalItems",
                                          "minItems",
                                          "maxItems",
                                          "uniqueItems",
                                          "contains",
                                          "minContains",
                                          "maxContains",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "multipleOf",
                                          "allOf",
                                          "anyOf",
                                          "oneOf",
                                          "not",
                                          "if",
                                          "then",
                                          "else",
                                          "dependentSchemas",
                                          "dependentRequired",
                                          "dependencies",
                                          "propertyNames",
                                          "minProperties",
                                          "maxProperties",
                                          "unevaluatedProperties",
                                          "unevaluatedItems",
                                          "$ref",
                                          "$dynamicRef",
                                          "$recursiveRef"};
  return k;
}

// Refused whatever the type: no grammar expresses them in general.
const std::set<std::string>& refused_keywords() {
  static const std::set<std::string> k = {
      "not",         "if",           "then", "else", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems",
      "$dynamicRef", "$recursiveRef"};
  return k;
}

// The keywords that apply to one type only (and so imply it when `type` is absent).
const std::set<std::string>& string_keywords() {
  static const std::set<std::string> k = {"minLength", "maxLength", "pattern", "format"};
  return k;
}
const std::set<std::string>& number_keywords() {
  static const std::set<std::string> k = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"};
  return k;
}
const std::set<std::string>& object_keywords() {
  static const std::set<std::string> k = {"properties",        "required",      "additionalProperties",
                                          "patternProperties", "minProperties", "maxProperties",
                                          "propertyNames",     "dependencies",  "dependentRequired"};
  return k;
}
const std::set<std::string>& array_keywords() {
  static const std::set<std::string> k = {"items",       "prefixItems", "additionalItems", "minItems",   "maxItems",
                                          "uniqueItems", "contains",    "minContains",     "maxContains"};
  return k;
}
// Every JSON type ("integer" is inside "number").
const std::vector<std::string>& all_types() {
  static const std::vector<std::string> k = {"null", "boolean", "object", "array", "number", "string"};
  return k;
}

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw Error("json_schema: " + what + " at " + path);
}

std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (char c : token) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

std::string child_path(const std::string& path, const std::string& token) {
  return path + "/" + escape_pointer_token(token);
}

// A schema without any validation keyword (only annotations or unknown keys) accepts everything.
bool is_trivial(const json& schema) {
  if (schema.is_boolean()) return schema.get<bool>();
  if (!schema.is_object()) return false;
  for (auto it = schema.begin(); it != schema.end(); ++it)
    if (validation_keywords().count(it.key())) return false;
  return true;
}

// The schema's validation keywords only.
json constraints_of(const json& schema) {
  json out = json::object();
  for (auto it = schema.begin(); it != schema.end(); ++it)
    if (validation_keywords().count(it.key())) out[it.key()] = it.value();
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

// "(x){a,b}" in its shortest GBNF spelling; "" when nothing may repeat.
std::string repeat(const std::string& x, size_t min, std::optional<size_t> max) {
  if (max && *max == 0) return "";
  const std::string g = "(" + x + ")";
  if (min == 0 && !max) return g + "*";
  if (min == 1 && !max) return g + "+";
  if (min == 0 && max == 1) return g + "?";
  if (min == 1 && max == 1) return g;
  if (max && *max == min) return g + "{" + std::to_string(min) + "}";
  return g + "{" + std::to_string(min) + "," + (max ? std::to_string(*max) : "") + "}";
}

size_t codepoint_count(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Integer ranges: canonical decimal texts (no leading zeros) of the integers in a range.

constexpr int64_t kMaxBound = 999999999999999999;  // 18 digits: every power of ten below fits int64

int num_digits(int64_t v) {
  int d = 1;
  while (v >= 10) v /= 10, ++d;
  return d;
}

std::vector<int> digits_of(int64_t v, int width) {
  std::vector<int> d(static_cast<size_t>(width));
  for (int i = width - 1; i >= 0; --i, v /= 10) d[static_cast<size_t>(i)] = static_cast<int>(v % 10);
  return d;
}

// Non-negative integers in [lo, hi] (hi nullopt: unbounded); lo ≤ hi.
std::string nonnegative_range(int64_t lo, std::optional<int64_t> hi) {
  std::vector<std::string> alternatives;
  const int d_lo = num_digits(lo), d_hi = hi ? num_digits(*hi) : d_lo;
  int64_t power = 1;  // 10^(d-1)
  for (int d = 1; d < d_lo; ++d) power *= 10;
  for (int d = d_lo; d <= d_hi; ++d, power *= 10) {
    const int64_t a = std::max(lo, d == 1 ? int64_t{0} : power);
    int64_t b = power * 10 - 1;
    if (hi) b = std::min(b, *hi);
    if (a <= b) alternatives.push_back(gbnf_digit_range(digits_of(a, d), digits_of(b, d), 10));
  }
  if (!hi) alternatives.push_back("[1-9] [0-9]{" + std::to_string(d_lo) + ",}");
  return alternatives.size() == 1 ? alternatives[0] : "(" + join(alternatives, " | ") + ")";
}

struct IntegerRange {
  std::optional<int64_t> lo, hi;  // inclusive; nullopt: unbounded
};

std::optional<std::string> integer_range_expression(IntegerRange r) {
  std::vector<std::string> alternatives;
  if (r.lo && r.hi && *r.lo > *r.hi) return std::nullopt;
  if (!r.hi || *r.hi >= 0) alternatives.push_back(nonnegative_range(std::max<int64_t>(r.lo.value_or(0), 0), r.hi));
  if (!r.lo || *r.lo < 0) {
    const int64_t a = r.hi && *r.hi < 0 ? -*r.hi : 1;
    const std::optional<int64_t> b = r.lo ? std::optional<int64_t>(-*r.lo) : std::nullopt;
    if (!b || a <= *b) alternatives.push_back("\"-\" " + nonnegative_range(a, b));
  }
  if (alternatives.empty()) return std::nullopt;
  return alternatives.size() == 1 ? alternatives[0] : "(" + join(alternatives, " | ") + ")";
}

// A lower or upper bound read from minimum/maximum/exclusive* (draft 4 booleans or draft 6 numbers).
struct NumericBound {
  long double value = 0;
  bool exclusive = false;
  std::string text;  // the bound as written in the schema (its exact decimal value)
};

std::optional<NumericBound> read_bound(const json& schema, bool lower, const std::string& path) {
  const char* inclusive_key = lower ? "minimum" : "maximum";
  const char* exclusive_key = lower ? "exclusiveMinimum" : "exclusiveMaximum";
  std::optional<NumericBound> bound;
  auto tighter = [&](NumericBound b) {
    if (!bound || (lower ? b.value > bound->value : b.value < bound->value) || (b.value == bound->value && b.exclusive))
      bound = b;
  };
  const bool draft4_exclusive =
      schema.contains(exclusive_key) && schema[exclusive_key].is_boolean() && schema[exclusive_key].get<bool>();
  if (schema.contains(inclusive_key)) {
    if (!schema[inclusive_key].is_number()) fail(std::string("'") + inclusive_key + "' is not a number", path);
    tighter({schema[inclusive_key].get<long double>(), draft4_exclusive, schema[inclusive_key].dump()});
  }
  if (schema.contains(exclusive_key) && schema[exclusive_key].is_number())
    tighter({schema[exclusive_key].get<long double>(), true, schema[exclusive_key].dump()});
  if (bound && std::fabs(bound->value) > static_cast<long double>(kMaxBound))
    fail(std::string("unsupported bound '") + (lower ? "minimum" : "maximum") + "' beyond 18 digits", path);
  return bound;
}

// A non-negative decimal magnitude: whole.fraction, the fraction without trailing zeros.
struct Decimal {
  int64_t whole = 0;
  std::string fraction;
};

// `text` (a JSON number) as sign and magnitude; an Error beyond 18 integer digits.
std::pair<bool, Decimal> parse_decimal(const std::string& text, const std::string& path) {
  size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  std::string digits;
  long point = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) digits += text[i++], ++point;
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));) digits += text[i++];
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) point += std::stol(text.substr(i + 1));
  Decimal d;
  std::string whole;
  if (point <= 0) {
    d.fraction = std::string(static_cast<size_t>(-point), '0') + digits;
  } else if (static_cast<size_t>(point) >= digits.size()) {
    whole = digits + std::string(static_cast<size_t>(point) - digits.size(), '0');
  } else {
    whole = digits.substr(0, static_cast<size_t>(point));
    d.fraction = digits.substr(static_cast<size_t>(point));
  }
  while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.pop_back();
  whole.erase(0, std::min(whole.find_first_not_of('0'), whole.size()));
  if (whole.size() > 18) fail("unsupported bound " + text + " beyond 18 digits", path);
  d.whole = whole.empty() ? 0 : std::stoll(whole);
  return {negative && (d.whole != 0 || !d.fraction.empty()), d};
}

int compare(const Decimal& a, const Decimal& b) {
  if (a.whole != b.whole) return a.whole < b.whole ? -1 : 1;
  return a.fraction < b.fraction ? -1 : a.fraction > b.fraction ? 1 : 0;  // no trailing zeros: lexicographic
}

// ---------------------------------------------------------------------------------------------

class SchemaCompiler {
 public:
  SchemaCompiler(const json& root, const JsonSchemaOptions& options) : root_(root), options_(options) {
    // Drafts 4–7 say a $ref replaces its whole schema object; 2019-09 and later apply siblings too.
    if (root.is_object() && root.contains("$schema") && root["$schema"].is_string()) {
      const std::string s = root["$schema"].get<std::string>();
      for (const char* d : {"draft-03", "draft-04", "draft-06", "draft-07"})
        if (s.find(d) != std::string::npos) refs_replace_siblings_ = true;
    }
    if (root.is_object()) {
      for (const char* key : {"$id", "id"})
        if (root.contains(key) && root[key].is_string()) {
          std::string id = root[key].get<std::string>();
          if (!id.empty() && id.back() == '#') id.pop_back();
          if (!id.empty()) base_ids_.push_back(id);
        }
    }
  }

  std::string compile_root() {
    ws_ = rules_.add("ws", "| \" \" | \"\\n\" [ \\t]{0,20}");
    const std::string root = compile(root_, "#");
    return rules_.text(root);
  }

 private:
  // ---- normalization ------------------------------------------------------------------------

  // The JSON pointer a $ref names, and its target.
  std::pair<std::string, const json*> resolve_ref(const json& ref, const std::string& path) {
    if (!ref.is_string()) fail("'$ref' is not a string", path);
    std::string r = ref.get<std::string>();
    for (const std::string& id : base_ids_)
      if (r.compare(0, id.size(), id) == 0 && (r.size() == id.size() || r[id.size()] == '#')) r = r.substr(id.size());
    if (r.empty()) r = "#";
    if (r[0] != '#') fail("unsupported remote $ref '" + r + "'", path);
    std::string pointer = r.substr(1);
    // %-decoding (a $ref is a URI fragment), then ~1 → '/', ~0 → '~' per token.
    std::string decoded;
    for (size_t i = 0; i < pointer.size(); ++i) {
      if (pointer[i] == '%' && i + 2 < pointer.size() + 0 &&
          std::isxdigit(static_cast<unsigned char>(pointer[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(pointer[i + 2]))) {
        decoded += static_cast<char>(std::stoi(pointer.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += pointer[i];
      }
    }
    if (!decoded.empty() && decoded[0] != '/') fail("unsupported $ref '" + r + "' (anchors are not resolved)", path);
    const json* node = &root_;
    size_t start = 1;
    while (start <= decoded.size() && !decoded.empty()) {
      const size_t end = std::min(decoded.find('/', start), decoded.size());
      std::string token;
      const std::string raw = decoded.substr(start, end - start);
      for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
          token += raw[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          token += raw[i];
        }
      }
      if (node->is_object() && node->contains(token)) {
        node = &(*node)[token];
      } else if (node->is_array() && !token.empty() && std::all_of(token.begin(), token.end(), ::isdigit) &&
                 std::stoul(token) < node->size()) {
        node = &(*node)[std::stoul(token)];
      } else {
        fail("unresolvable $ref '" + r + "'", path);
      }
      start = end + 1;
    }
    return {"#" + decoded, node};
  }

  // The schema a $ref stands for, with its siblings merged where the draft applies them.
  json without_ref(const json& schema, const std::string& path, int depth = 0) {
    if (!schema.is_object() || !schema.contains("$ref")) return schema;
    if (depth > 32) fail("$ref chain too long", path);
    auto [pointer, target] = resolve_ref(schema["$ref"], path);
    json siblings = constraints_of(schema);
    siblings.erase("$ref");
    json resolved = without_ref(*target, pointer, depth + 1);
    if (refs_replace_siblings_ || siblings.empty()) return resolved;
    return json{{"allOf", json::array({resolved, siblings})}};
  }

  // allOf folded into one schema (and a $ref into its target).
  json flattened(const json& schema, const std::string& path, int depth = 0) {
    if (depth > 32) fail("allOf nested too deeply", path);
    json s = without_ref(schema, path);
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail("unsatisfiable schema (false inside allOf)", path);
      return json::object();
    }
    if (!s.is_object() || !s.contains("allOf")) return s;
    const json& parts = s["allOf"];
    if (!parts.is_array()) fail("'allOf' is not an array", path);
    // The schema's own keywords first, then the parts: properties come in that order, and a
    // part's anyOf/oneOf branches are merged where the part stands (its properties after the
    // earlier parts', before the later ones').
    json rest = s;
    rest.erase("allOf");
    json out = flattened(rest, path, depth + 1);
    for (size_t i = 0; i < parts.size(); ++i)
      out = merge_distributing(out, flattened(parts[i], child_path(path + "/allOf", std::to_string(i)), depth + 1),
                               path + "/allOf", depth + 1);
    return out;
  }

  static const char* combinator_of(const json& s) {
    if (!s.is_object()) return nullptr;
    return s.contains("anyOf") ? "anyOf" : s.contains("oneOf") ? "oneOf" : nullptr;
  }

  // a & b with every anyOf/oneOf pushed outwards: (a & (b1 | b2)) = (a & b1) | (a & b2).
  json merge_distributing(const json& a, const json& b, const std::string& path, int depth) {
    if (depth > 64) fail("allOf nested too deeply", path);
    const json* with = combinator_of(a) ? &a : combinator_of(b) ? &b : nullptr;
    if (!with) return merge(a, b, path);
    const json& other = with == &a ? b : a;
    const char* key = combinator_of(*with);
    if (!(*with)[key].is_array()) fail(std::string("'") + key + "' is not an array", path);
    json rest = *with;
    rest.erase(key);
    json branches = json::array();
    for (size_t i = 0; i < (*with)[key].size(); ++i) {
      const std::string branch_path = child_path(path + "/" + key, std::to_string(i));
      json branch =
          merge_distributing(rest, flattened((*with)[key][i], branch_path, depth + 1), branch_path, depth + 1);
      branch = with == &a ? merge_distributing(branch, other, branch_path, depth + 1)
                          : merge_distributing(other, branch, branch_path, depth + 1);
      branches.push_back(branch);
    }
    if (branches.size() > 256) fail("allOf of anyOf/oneOf with too many combinations", path);
    return json{{key, branches}};
  }

  static json both(const json& a, const json& b) {
    if (a == b || is_trivial(b)) return a;
    if (is_trivial(a)) return b;
    if (a == false || b == false) return false;
    return json{{"allOf", json::array({a, b})}};
  }

  // The intersection of two flattened schemas as one schema, or an Error naming the keyword
  // that cannot be merged.
  json merge(const json& a, const json& b, const std::string& path) {
    json out = a;
    const bool objects = a.contains("properties") || b.contains("properties") || a.contains("additionalProperties") ||
                         b.contains("additionalProperties");
    if (objects) {
      if (a.contains("patternProperties") || b.contains("patternProperties"))
        fail("unsupported allOf merging 'patternProperties'", path);
      const json none = json::object();
      const json& pa = a.contains("properties") ? a["properties"] : none;
      const json& pb = b.contains("properties") ? b["properties"] : none;
      // Where one side does not declare a property, its additionalProperties applies to it.
      auto side = [](const json& s, const json& props, const std::string& name) -> std::optional<json> {
        if (props.contains(name)) return props[name];
        if (s.contains("additionalProperties") && !is_trivial(s["additionalProperties"]))
          return s["additionalProperties"];
        return std::nullopt;
      };
      json props = json::object();
      std::vector<std::string> names;
      for (auto it = pa.begin(); it != pa.end(); ++it) names.push_back(it.key());
      for (auto it = pb.begin(); it != pb.end(); ++it)
        if (!pa.contains(it.key())) names.push_back(it.key());
      for (const std::string& name : names) {
        const auto sa = side(a, pa, name), sb = side(b, pb, name);
        props[name] = sa && sb ? both(*sa, *sb) : sa ? *sa : *sb;
      }
      out.erase("properties");
      if (!props.empty()) out["properties"] = props;
      if (a.contains("additionalProperties") && b.contains("additionalProperties")) {
        out["additionalProperties"] = both(a["additionalProperties"], b["additionalProperties"]);
      } else if (b.contains("additionalProperties")) {
        out["additionalProperties"] = b["additionalProperties"];
      }
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      if (!validation_keywords().count(k)) continue;
      if (objects && (k == "properties" || k == "additionalProperties")) continue;
      if (!out.contains(k)) {
        out[k] = v;
        continue;
      }
      json& mine = out[k];
      if (mine == v) continue;
      if (k == "type") {
        auto names = [](const json& t) {
          std::set<std::string> s;
          if (t.is_string()) s.insert(t.get<std::string>());
          if (t.is_array())
            for (const json& x : t) s.insert(x.get<std::string>());
          return s;
        };
        std::set<std::string> ta = names(mine), tb = names(v), common;
        for (const std::string& t : ta)
          if (tb.count(t) || (t == "integer" && tb.count("number"))) common.insert(t);
        if (tb.count("integer") && ta.count("number")) common.insert("integer");
        if (common.empty()) fail("unsatisfiable allOf: the types do not intersect", path);
        mine = json(std::vector<std::string>(common.begin(), common.end()));
      } else if (k == "required") {
        for (const json& name : v)
          if (std::find(mine.begin(), mine.end(), name) == mine.end()) mine.push_back(name);
      } else if (k == "minLength" || k == "minItems" || k == "minProperties") {
        mine = std::max(mine.get<double>(), v.get<double>());
      } else if (k == "maxLength" || k == "maxItems" || k == "maxProperties") {
        mine = std::min(mine.get<double>(), v.get<double>());
      } else if ((k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum") &&
                 mine.is_number() && v.is_number() && !a.value("exclusiveMinimum", json()).is_boolean() &&
                 !b.value("exclusiveMinimum", json()).is_boolean() &&
                 !a.value("exclusiveMaximum", json()).is_boolean() &&
                 !b.value("exclusiveMaximum", json()).is_boolean()) {
        const bool lower = k == "minimum" || k == "exclusiveMinimum";
        mine = lower ? std::max(mine.get<double>(), v.get<double>()) : std::min(mine.get<double>(), v.get<double>());
      } else if (k == "enum" && mine.is_array() && v.is_array()) {
        json common = json::array();
        for (const json& x : mine)
          if (std::find(v.begin(), v.end(), x) != v.end()) common.push_back(x);
        mine = common;
      } else if (k == "items" && (mine.is_object() || mine.is_boolean()) && (v.is_object() || v.is_boolean())) {
        mine = both(mine, v);
      } else if (k == "uniqueItems") {
        mine = mine.get<bool>() || v.get<bool>();
      } else if (k == "anyOf" || k == "oneOf") {
        // (a1 | a2) & (b1 | b2) = a1&b1 | a1&b2 | ...
        if (mine.size() * v.size() > 64) fail("allOf of two large '" + k + "' lists", path);
        json product = json::array();
        for (const json& x : mine)
          for (const json& y : v) product.push_back(json{{"allOf", json::array({x, y})}});
        mine = product;
      } else {
        fail("unsupported allOf merging two different '" + k + "'", path);
      }
    }
    return out;
  }

  // ---- oneOf --------------------------------------------------------------------------------
  // oneOf admits a value valid under exactly one branch. Branch i is written as
  // branch_i & not branch_j for every j that could overlap it. Disjoint branches (by type, by
  // const/enum of a top-level value or of a required property, by a required property the other
  // forbids) need nothing. Otherwise, if branch j requires a property r that branch i does not,
  // "r absent" implies "not branch_j" and is added to branch i (a subset of the exact
  // difference: sound). Where neither holds the overlap stays, as in anyOf (documented).

  std::optional<std::set<std::string>> type_set(const json& s) {
    if (!s.contains("type") && !s.contains("const") && !s.contains("enum")) {
      // An anyOf/oneOf admits the union of its branches' types.
      const char* key = combinator_of(s);
      if (!key || !s[key].is_array()) return std::nullopt;
      std::set<std::string> out;
      for (const json& branch : s[key]) {
        std::optional<std::set<std::string>> t;
        try {
          t = type_set(flattened(branch, "#"));
        } catch (const Error&) {
          return std::nullopt;
        }
        if (!t) return std::nullopt;
        out.insert(t->begin(), t->end());
      }
      return out;
    }
    return own_type_set(s);
  }

  static std::optional<std::set<std::string>> own_type_set(const json& s) {
    auto type_of = [](const json& v) -> std::string {
      if (v.is_null()) return "null";
      if (v.is_boolean()) return "boolean";
      if (v.is_number()) return "number";
      if (v.is_string()) return "string";
      return v.is_array() ? "array" : "object";
    };
    std::set<std::string> out;
    if (s.contains("const")) return std::set<std::string>{type_of(s["const"])};
    if (s.contains("enum") && s["enum"].is_array()) {
      for (const json& v : s["enum"]) out.insert(type_of(v));
      return out;
    }
    if (!s.contains("type")) return std::nullopt;
    const json& t = s["type"];
    for (const json& x : t.is_array() ? t : json::array({t})) {
      if (!x.is_string() || x == "any") return std::nullopt;
      out.insert(x == "integer" ? "number" : x.get<std::string>());
    }
    return out;
  }

  static std::optional<std::vector<json>> value_set(const json& s) {
    if (s.contains("const")) return std::vector<json>{s["const"]};
    if (s.contains("enum") && s["enum"].is_array()) return std::vector<json>(s["enum"].begin(), s["enum"].end());
    return std::nullopt;
  }

  static bool requires_property(const json& s, const std::string& name) {
    if (!s.contains("required") || !s["required"].is_array()) return false;
    return std::find(s["required"].begin(), s["required"].end(), json(name)) != s["required"].end();
  }

  static bool forbids_property(const json& s, const std::string& name) {
    if (s.contains("properties") && s["properties"].is_object() && s["properties"].contains(name))
      return s["properties"][name] == false;
    return s.contains("additionalProperties") && s["additionalProperties"] == false && !s.contains("patternProperties");
  }

  std::optional<std::vector<json>> property_values(const json& s, const std::string& name) {
    if (!s.contains("properties") || !s["properties"].is_object() || !s["properties"].contains(name))
      return std::nullopt;
    try {
      return value_set(flattened(s["properties"][name], "#"));
    } catch (const Error&) {
      return std::nullopt;
    }
  }

  static bool no_common_value(const std::vector<json>& a, const std::vector<json>& b) {
    for (const json& x : a)
      if (std::find(b.begin(), b.end(), x) != b.end()) return false;
    return true;
  }

  bool disjoint(const json& a, const json& b) {
    if (!a.is_object() || !b.is_object()) return false;
    const auto ta = type_set(a), tb = type_set(b);
    if (ta && tb && std::none_of(ta->begin(), ta->end(), [&](const std::string& t) { return tb->count(t) > 0; }))
      return true;
    const auto va = value_set(a), vb = value_set(b);
    if (va && vb && no_common_value(*va, *vb)) return true;
    for (const json* x : {&a, &b}) {
      const json& other = x == &a ? b : a;
      if (!x->contains("required") || !(*x)["required"].is_array()) continue;
      for (const json& r : (*x)["required"]) {
        if (!r.is_string()) continue;
        const std::string name = r.get<std::string>();
        if (forbids_property(other, name)) return true;
        const auto pa = property_values(*x, name), pb = property_values(other, name);
        if (pa && pb && no_common_value(*pa, *pb)) return true;
      }
    }
    return false;
  }

  json exclusive_branch(const std::vector<json>& branches, size_t i, const std::string& path) {
    json branch = branches[i];
    for (size_t j = 0; j < branches.size(); ++j) {
      if (j == i || disjoint(branch, branches[j])) continue;
      const json& other = branches[j];
      if (!other.is_object() || !other.contains("required") || !other["required"].is_array()) continue;
      for (const json& r : other["required"]) {
        if (!r.is_string() || requires_property(branch, r.get<std::string>())) continue;
        json absent = {{"type", "object"}, {"properties", {{r.get<std::string>(), false}}}};
        branch = merge(branch, absent, path);
        break;
      }
    }
    return branch;
  }

  // ---- compilation --------------------------------------------------------------------------

  std::string hint(const std::string& path) const {
    static const std::set<std::string> structural = {"properties",      "definitions",
                                                     "$defs",           "items",
                                                     "anyOf",           "oneOf",
                                                     "allOf",           "additionalProperties",
                                                     "prefixItems",     "patternProperties",
                                                     "additionalItems", "#"};
    if (path == "#") return "root";  // becomes root-value: `root` itself is the grammar's entry rule
    size_t end = path.size();
    while (end > 0) {
      const size_t slash = path.rfind('/', end - 1);
      const size_t start = slash == std::string::npos ? 0 : slash + 1;
      const std::string token = path.substr(start, end - start);
      if (!token.empty() && !structural.count(token) && !std::all_of(token.begin(), token.end(), ::isdigit))
        return token;
      if (slash == std::string::npos) break;
      end = slash;
    }
    return "value";
  }

  // The rule for a value valid under `schema` (found at `path`).
  std::string compile(const json& schema, const std::string& path) {
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return any_value();
      fail("unsatisfiable schema false", path);
    }
    if (!schema.is_object()) fail("a schema must be an object or a boolean", path);
    const std::string key = schema.dump();
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    if (++depth_ > 200) fail("schema nested too deeply", path);
    const std::string rule = compile_uncached(schema, path);
    --depth_;
    cache_[key] = rule;
    return rule;
  }

  std::string ref_rule(const json& ref, const std::string& path) {
    auto [pointer, target] = resolve_ref(ref, path);
    if (auto it = ref_rules_.find(pointer); it != ref_rules_.end()) return it->second;
    const std::string name = rules_.reserve(hint(pointer));
    ref_rules_[pointer] = name;
    rules_.define(name, compile(*target, pointer));
    return name;
  }

  std::string compile_uncached(const json& schema, const std::string& path) {
    if (schema.contains("$ref")) {
      json siblings = constraints_of(schema);
      siblings.erase("$ref");
      if (refs_replace_siblings_ || siblings.empty()) return ref_rule(schema["$ref"], path);
      return compile(flattened(schema, path), path);
    }
    if (schema.contains("allOf")) return compile(flattened(schema, path), path);
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!schema.contains(key)) continue;
      const json& branches = schema[key];
      if (!branches.is_array() || branches.empty()) fail(std::string("'") + key + "' is not a non-empty array", path);
      json rest = constraints_of(schema);
      rest.erase(key);
      // Siblings apply to every branch: (rest & (b1 | b2)) = (rest & b1) | (rest & b2).
      std::vector<json> merged;
      for (size_t i = 0; i < branches.size(); ++i) {
        const std::string branch_path = child_path(path + "/" + key, std::to_string(i));
        merged.push_back(rest.empty() ? branches[i] : merge(rest, flattened(branches[i], branch_path), branch_path));
      }
      // Exclusivity is judged on the branches with their $refs and allOfs resolved; a branch
      // that needs nothing added is compiled as written, so $ref rules stay shared.
      std::vector<json> resolved;
      if (std::string(key) == "oneOf")
        for (size_t i = 0; i < merged.size(); ++i)
          resolved.push_back(rest.empty() ? flattened(merged[i], child_path(path + "/" + key, std::to_string(i)))
                                          : merged[i]);
      std::vector<std::string> alternatives;
      for (size_t i = 0; i < merged.size(); ++i) {
        const std::string branch_path = child_path(path + "/" + key, std::to_string(i));
        json branch = merged[i];
        if (!resolved.empty()) {
          const json exclusive = exclusive_branch(resolved, i, branch_path);
          if (exclusive != resolved[i]) branch = exclusive;
        }
        alternatives.push_back(compile(branch, branch_path));
      }
      return rules_.add(hint(path), join(alternatives, " | "));
    }
    for (auto it = schema.begin(); it != schema.end(); ++it)
      if (refused_keywords().count(it.key()))
        fail("unsupported keyword '" + it.key() + "'", child_path(path, it.key()));
    const std::vector<std::string> types = allowed_types(schema, path);
    if (schema.contains("const") || schema.contains("enum"))
      return rules_.add(hint(path), literals(schema, types, path));
    std::vector<std::string> alternatives;
    for (const std::string& type : types) {
      if (type == "null") alternatives.push_back("\"null\"");
      if (type == "boolean") alternatives.push_back("\"true\" | \"false\"");
      if (type == "string") alternatives.push_back(string_expression(schema, path));
      if (type == "number") alternatives.push_back(number_expression(schema, path, false));
      if (type == "integer" && std::find(types.begin(), types.end(), "number") == types.end())
        alternatives.push_back(number_expression(schema, path, true));
      if (type == "object") alternatives.push_back(object_rule(schema, path));
      if (type == "array") alternatives.push_back(array_rule(schema, path));
    }
    return rules_.add(hint(path), join(alternatives, " | "));
  }

  std::vector<std::string> allowed_types(const json& schema, const std::string& path) const {
    std::vector<std::string> types;
    if (schema.contains("type")) {
      const json& t = schema["type"];
      std::vector<json> list = t.is_array() ? std::vector<json>(t.begin(), t.end()) : std::vector<json>{t};
      for (const json& x : list) {
        if (!x.is_string()) fail("'type' must be a string or a list of strings", path + "/type");
        const std::string name = x.get<std::string>();
        if (name == "any") return all_types();
        if (name != "integer" && std::find(all_types().begin(), all_types().end(), name) == all_types().end())
          fail("unknown type '" + name + "'", path + "/type");
        if (std::find(types.begin(), types.end(), name) == types.end()) types.push_back(name);
      }
      if (types.empty()) fail("'type' is an empty list", path + "/type");
      return types;
    }
    if (schema.contains("const") || schema.contains("enum")) return all_types();
    auto any_of = [&](const std::set<std::string>& keys) {
      return std::any_of(keys.begin(), keys.end(), [&](const std::string& k) { return schema.contains(k); });
    };
    if (any_of(object_keywords())) types.push_back("object");
    if (any_of(array_keywords())) types.push_back("array");
    if (any_of(string_keywords())) types.push_back("string");
    if (any_of(number_keywords())) types.push_back("number");
    return types.empty() ? all_types() : types;
  }

  std::string ws() const { return ws_; }

  // ---- any value ----------------------------------------------------------------------------

  std::string any_string() {
    return rules_.add("string", "\"\\\"\" " + json_string_char(rules_, all_codepoints()) + "* \"\\\"\"");
  }

  std::string any_number() {
    return rules_.add("number", "\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)?");
  }

  std::string any_value() {
    if (!any_value_.empty()) return any_value_;
    any_value_ = rules_.reserve("value");
    const std::string string = any_string(), w = ws();
    const std::string member = string + " " + w + " \":\" " + w + " " + any_value_ + " " + w;
    const std::string object =
        rules_.add("object", "\"{\" " + w + " (" + member + " (\",\" " + w + " " + member + ")*)? \"}\"");
    const std::string element = any_value_ + " " + w;
    const std::string array =
        rules_.add("array", "\"[\" " + w + " (" + element + " (\",\" " + w + " " + element + ")*)? \"]\"");
    rules_.define(any_value_, object + " | " + array + " | " + string + " | " + any_number() +
                                  " | \"true\" | \"false\" | \"null\"");
    return any_value_;
  }

  // ---- enum / const -------------------------------------------------------------------------

  // A JSON string in its shortest spelling, except that the characters JSON may escape in more
  // than one way (" \ / controls, and U+0085 U+2028 U+2029 that line splitters fear) accept every spelling.
  std::string string_literal(const std::string& value) {
    std::vector<std::string> parts = {"\"\\\"\""};
    std::string run;
    auto flush = [&] {
      if (!run.empty()) parts.push_back(gbnf_quote(run));
      run.clear();
    };
    for (uint32_t cp : utf8_codepoints(value, "json_schema: string value")) {
      if (cp < 0x20 || cp == '"' || cp == '\\' || cp == '/' || cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
        flush();
        CodepointSet one;
        one.add(cp, cp);
        parts.push_back(json_string_char(rules_, one));
      } else {
        append_utf8(run, cp);
      }
    }
    flush();
    parts.push_back("\"\\\"\"");
    return join(parts, " ");
  }

  std::string literal(const json& v) {
    const std::string w = ws();
    if (v.is_string()) return string_literal(v.get<std::string>());
    if (v.is_object()) {
      std::vector<std::string> members;
      for (auto it = v.begin(); it != v.end(); ++it)
        members.push_back(string_literal(it.key()) + " " + w + " \":\" " + w + " " + literal(it.value()) + " " + w);
      return "\"{\" " + w + " " + join(members, " \",\" " + w + " ") + " \"}\"";
    }
    if (v.is_array()) {
      std::vector<std::string> elements;
      for (const json& x : v) elements.push_back(literal(x) + " " + w);
      return "\"[\" " + w + " " + join(elements, " \",\" " + w + " ") + " \"]\"";
    }
    return gbnf_quote(v.dump());
  }

  static bool has_type(const json& v, const std::string& type) {
    if (type == "null") return v.is_null();
    if (type == "boolean") return v.is_boolean();
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    if (type == "string") return v.is_string();
    if (type == "number") return v.is_number();
    if (type == "integer")
      return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    return false;
  }

  // Whether an enum/const value also satisfies the schema's other keywords (those that can be
  // checked here; any other one that applies to the value's type is an Error).
  bool satisfies_siblings(const json& v, const json& schema, const std::vector<std::string>& types,
                          const std::string& path) {
    if (!std::any_of(types.begin(), types.end(), [&](const std::string& t) { return has_type(v, t); })) return false;
    for (auto it = schema.begin(); it != schema.end(); ++it) {
      const std::string& k = it.key();
      if (!validation_keywords().count(k) || k == "type" || k == "enum" || k == "const") continue;
      const bool applies = (string_keywords().count(k) && v.is_string()) ||
                           (number_keywords().count(k) && v.is_number()) ||
                           (object_keywords().count(k) && v.is_object()) || (array_keywords().count(k) && v.is_array());
      if (!applies) continue;
      if (k == "minLength" && codepoint_count(v.get<std::string>()) < it.value().get<size_t>()) return false;
      if (k == "maxLength" && codepoint_count(v.get<std::string>()) > it.value().get<size_t>()) return false;
      if (k == "format") {
        // Unknown formats are annotations; a value would need checking against a known one.
        static const std::set<std::string> known = {"date",
                                                    "time",
                                                    "date-time",
                                                    "uuid",
                                                    "email",
                                                    "idn-email",
                                                    "uri",
                                                    "iri",
                                                    "ipv4",
                                                    "ipv6",
                                                    "json-pointer",
                                                    "hostname",
                                                    "idn-hostname",
                                                    "uri-reference",
                                                    "iri-reference",
                                                    "uri-template",
                                                    "relative-json-pointer",
                                                    "regex",
                                                    "duration"};
        if (it.value().is_string() && known.count(it.value().get<std::string>()))
          fail("unsupported 'format' beside 'enum'/'const'", path);
        continue;
      }
      if (k == "pattern") {
        try {
          if (!std::regex_search(v.get<std::string>(),
                                 std::regex(it.value().get<std::string>(), std::regex::ECMAScript)))
            return false;
        } catch (const std::regex_error&) {
          fail("unsupported 'pattern' beside 'enum'", path);
        }
        continue;
      }
      if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum") {
        const auto lo = read_bound(schema, true, path), hi = read_bound(schema, false, path);
        const long double x = v.get<long double>();
        if (lo && (x < lo->value || (lo->exclusive && x == lo->value))) return false;
        if (hi && (x > hi->value || (hi->exclusive && x == hi->value))) return false;
        continue;
      }
      if (k == "minLength" || k == "maxLength") continue;  // checked above
      fail("unsupported '" + k + "' beside 'enum'/'const'", path);
    }
    return true;
  }

  std::string literals(const json& schema, const std::vector<std::string>& types, const std::string& path) {
    std::vector<json> values;
    if (schema.contains("const")) {
      values.push_back(schema["const"]);
      if (schema.contains("enum") &&
          std::find(schema["enum"].begin(), schema["enum"].end(), schema["const"]) == schema["enum"].end())
        values.clear();
    } else {
      if (!schema["enum"].is_array()) fail("'enum' is not an array", path + "/enum");
      values.assign(schema["enum"].begin(), schema["enum"].end());
    }
    std::vector<std::string> alternatives;
    for (const json& v : values)
      if (satisfies_siblings(v, schema, types, path)) alternatives.push_back(literal(v));
    if (alternatives.empty()) fail("unsatisfiable 'enum'/'const' (no value passes the other keywords)", path);
    return join(alternatives, " | ");
  }

  // ---- strings ------------------------------------------------------------------------------

  struct Format {
    std::string content;  // expression for the string's contents (between the quotes)
    size_t min_length = 0;
    std::optional<size_t> max_length;
  };

  std::optional<Format> format_of(const std::string& name, const std::string& path) {
    auto r = [&](const std::string& rule, const std::string& body) { return rules_.add(rule, body); };
    const std::string hex = "[0-9a-fA-F]";
    if (name == "date" || name == "date-time" || name == "time") {
      const std::string year = r("year", "[1-9] [0-9]{3} | \"0\" ([1-9] [0-9]{2} | \"0\" ([1-9] [0-9] | \"0\" [1-9]))");
      // Leap years: divisible by 4, and centuries only when divisible by 400 (year 0000 does not exist).
      const std::string leap = r(
          "leap-year",
          "[0-9]{2} ([02468] [48] | [2468] \"0\" | [13579] [26]) | (\"0\" [48] | [2468] [048] | [13579] [26]) \"00\"");
      const std::string month_day =
          r("month-day",
            "(\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8]) | (\"0\" [13-9] | \"1\" "
            "[0-2]) \"-\" (\"29\" | \"30\") | (\"0\" [13578] | \"1\" [02]) \"-31\"");
      const std::string date = r("date", year + " \"-\" " + month_day + " | " + leap + " \"-02-29\"");
      const std::string time = r("time",
                                 "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]+)? "
                                 "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])");
      if (name == "date") return Format{date, 10, 10};
      if (name == "time") return Format{time, 9, std::nullopt};
      return Format{r("date-time", date + " \"T\" " + time), 20, std::nullopt};
    }
    if (name == "uuid")
      return Format{
          r("uuid", hex + "{8} \"-\" " + hex + "{4} \"-\" " + hex + "{4} \"-\" " + hex + "{4} \"-\" " + hex + "{12}"),
          36, 36};
    if (name == "email" || name == "idn-email") {
      const bool idn = name == "idn-email";
      const std::string more = idn ? "\\u0080-\\U0010FFFF" : "";
      const std::string atom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-" + more + "]+";
      const std::string label = "[A-Za-z0-9" + more + "] ([A-Za-z0-9\\-" + more + "]* [A-Za-z0-9" + more + "])?";
      return Format{r(name, atom + " (\".\" " + atom + ")* \"@\" " + label + " (\".\" " + label + ")*"), 3,
                    std::nullopt};
    }
    if (name == "ipv4") return Format{ipv4(), 7, 15};
    if (name == "ipv6") return Format{ipv6(), 2, std::nullopt};
    if (name == "uri" || name == "iri") return Format{uri(name == "iri"), 2, std::nullopt};
    if (name == "json-pointer") {
      CodepointSet plain = all_codepoints(), excluded;
      excluded.add('/', '/');
      excluded.add('~', '~');
      const CodepointSet allowed = excluded.complement();
      CodepointSet others;
      for (auto [lo, hi] : plain.ranges())
        for (auto [elo, ehi] : allowed.ranges()) others.add(std::max(lo, elo), std::min(hi, ehi));
      return Format{r("json-pointer", "(\"/\" (" + json_string_char(rules_, others) + " | \"~\" [01])*)*"), 0,
                    std::nullopt};
    }
    static const std::set<std::string> asserted = {"hostname",      "idn-hostname", "uri-reference",
                                                   "iri-reference", "uri-template", "relative-json-pointer",
                                                   "regex",         "duration"};
    if (asserted.count(name)) fail("unsupported format '" + name + "'", path + "/format");
    return std::nullopt;  // an unknown format is an annotation, as validators treat it
  }

  std::string ipv4() {
    const std::string octet =
        rules_.add("ipv4-octet", "[0-9] | [1-9] [0-9] | \"1\" [0-9]{2} | \"2\" [0-4] [0-9] | \"25\" [0-5]");
    return rules_.add("ipv4", octet + " \".\" " + octet + " \".\" " + octet + " \".\" " + octet);
  }

  // RFC 3986's IPv6address.
  std::string ipv6() {
    const std::string h16 = rules_.add("h16", "[0-9a-fA-F]{1,4}");
    const std::string ls32 = rules_.add("ls32", h16 + " \":\" " + h16 + " | " + ipv4());
    const std::string g = "(" + h16 + " \":\")";
    auto before = [&](int n) { return "((" + h16 + " \":\"){0," + std::to_string(n) + "} " + h16 + ")?"; };
    std::vector<std::string> alternatives = {g + "{6} " + ls32,
                                             "\"::\" " + g + "{5} " + ls32,
                                             h16 + "? \"::\" " + g + "{4} " + ls32,
                                             before(1) + " \"::\" " + g + "{3} " + ls32,
                                             before(2) + " \"::\" " + g + "{2} " + ls32,
                                             before(3) + " \"::\" " + h16 + " \":\" " + ls32,
                                             before(4) + " \"::\" " + ls32,
                                             before(5) + " \"::\" " + h16,
                                             before(6) + " \"::\""};
    return rules_.add("ipv6", join(alternatives, " | "));
  }

  // RFC 3986 URI (RFC 3987 IRI: plus the ucschar code points in paths, queries and fragments).
  std::string uri(bool iri) {
    const std::string p = iri ? "i" : "";
    std::string unreserved_class = "A-Za-z0-9\\-._~";
    if (iri)
      unreserved_class +=
          "\\u00A0-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFEF\\U00010000-\\U0001FFFD\\U00020000-\\U0002FFFD"
          "\\U00030000-\\U0003FFFD\\U00040000-\\U0004FFFD\\U00050000-\\U0005FFFD\\U00060000-\\U0006FFFD"
          "\\U00070000-\\U0007FFFD\\U00080000-\\U0008FFFD\\U00090000-\\U0009FFFD\\U000A0000-\\U000AFFFD"
          "\\U000B0000-\\U000BFFFD\\U000C0000-\\U000CFFFD\\U000D0000-\\U000DFFFD\\U000E1000-\\U000EFFFD";
    const std::string sub_delims = "!$&'()*+,;=";
    const std::string pct = "\"%\" [0-9a-fA-F]{2}";
    const std::string pchar = rules_.add(p + "uri-pchar", "[" + unreserved_class + sub_delims + ":@] | " + pct);
    const std::string reg_char = rules_.add(p + "uri-reg-char", "[" + unreserved_class + sub_delims + "] | " + pct);
    const std::string user_char = rules_.add(p + "uri-user-char", "[" + unreserved_class + sub_delims + ":] | " + pct);
    const std::string ip_literal =
        rules_.add("uri-ip-literal",
                   "\"[\" (" + ipv6() + " | \"v\" [0-9a-fA-F]+ \".\" [A-Za-z0-9\\-._~" + sub_delims + ":]+) \"]\"");
    const std::string authority = rules_.add(
        p + "uri-authority", "(" + user_char + "* \"@\")? (" + ip_literal + " | " + reg_char + "*) (\":\" [0-9]*)?");
    const std::string segments = "(\"/\" " + pchar + "*)*";
    const std::string hier =
        rules_.add(p + "uri-hier", "\"//\" " + authority + " " + segments + " | \"/\" (" + pchar + "+ " + segments +
                                       ")? | " + pchar + "+ " + segments + " | \"\"");
    const std::string query_char =
        rules_.add(p + "uri-query-char", pchar + " | [/?]" + (iri ? " | [\\uE000-\\uF8FF]" : ""));
    const std::string fragment_char = rules_.add(p + "uri-fragment-char", pchar + " | [/?]");
    return rules_.add(p + "uri", "[A-Za-z] [A-Za-z0-9+\\-.]* \":\" " + hier + " (\"?\" " + query_char + "*)? (\"#\" " +
                                     fragment_char + "*)?");
  }

  std::string string_expression(const json& schema, const std::string& path) {
    auto length = [&](const char* key) -> std::optional<size_t> {
      if (!schema.contains(key)) return std::nullopt;
      const json& v = schema[key];
      if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>())
        fail(std::string("'") + key + "' is not a non-negative integer", child_path(path, key));
      return static_cast<size_t>(v.get<double>());
    };
    const size_t min_length = length("minLength").value_or(0);
    const std::optional<size_t> max_length = length("maxLength");
    if (max_length && *max_length < min_length) fail("unsatisfiable minLength > maxLength", path);
    const std::string quote = "\"\\\"\"";
    std::optional<Format> format;
    if (schema.contains("format") && schema["format"].is_string())
      format = format_of(schema["format"].get<std::string>(), path);
    std::optional<RegexFragment> pattern;
    if (schema.contains("pattern")) {
      if (!schema["pattern"].is_string()) fail("'pattern' is not a string", path + "/pattern");
      try {
        pattern = compile_regex(rules_, schema["pattern"].get<std::string>(), RegexAnchoring::search,
                                RegexTarget::json_string_contents);
      } catch (const Error& e) {
        fail(std::string("unsupported pattern (") + e.what() + ")", path + "/pattern");
      }
    }
    if (format && pattern) fail("unsupported 'pattern' together with 'format'", path);
    if (format || pattern) {
      // A pattern or format whose matches have other lengths cannot also count them: refuse
      // unless its own lengths already lie within the bounds.
      const size_t own_min = format ? format->min_length : pattern->min_length;
      const std::optional<size_t> own_max = format ? format->max_length : pattern->max_length;
      if (min_length > own_min || (max_length && (!own_max || *own_max > *max_length)))
        fail(std::string("unsupported '") + (format ? "format" : "pattern") + "' together with minLength/maxLength",
             path);
      return quote + " " + (format ? format->content : pattern->expression) + " " + quote;
    }
    if (min_length == 0 && !max_length) return any_string();
    const std::string any_char = json_string_char(rules_, all_codepoints());
    return quote + " " + repeat(any_char, min_length, max_length) + " " + quote;
  }

  // ---- numbers ------------------------------------------------------------------------------

  std::string number_expression(const json& schema, const std::string& path, bool integer) {
    if (schema.contains("multipleOf")) {
      const json& m = schema["multipleOf"];
      if (!(integer && m.is_number() && m.get<double>() == 1.0))
        fail("unsupported keyword 'multipleOf'", path + "/multipleOf");
    }
    const auto lo = read_bound(schema, true, path), hi = read_bound(schema, false, path);
    if (integer) {
      IntegerRange range;
      if (lo) range.lo = static_cast<int64_t>(lo->exclusive ? std::floor(lo->value) + 1 : std::ceil(lo->value));
      if (hi) range.hi = static_cast<int64_t>(hi->exclusive ? std::ceil(hi->value) - 1 : std::floor(hi->value));
      if (!lo && !hi) return rules_.add("integer", "\"-\"? (\"0\" | [1-9] [0-9]*)");
      const auto expression = integer_range_expression(range);
      if (!expression) fail("unsatisfiable integer bounds", path);
      return rules_.add(hint(path) + "-integer", *expression);
    }
    if (!lo && !hi) return any_number();
    const bool integer_bounds =
        (!lo || std::floor(lo->value) == lo->value) && (!hi || std::floor(hi->value) == hi->value);
    if (!integer_bounds) return decimal_range(lo, hi, path);
    // v = ±(I + f): with f = 0 the value is ±I; with 0 < f < 1 it lies strictly between two
    // integers, so integer bounds constrain only I. Bounded numbers are written without exponent.
    const std::optional<int64_t> L = lo ? std::optional<int64_t>(static_cast<int64_t>(lo->value)) : std::nullopt;
    const std::optional<int64_t> H = hi ? std::optional<int64_t>(static_cast<int64_t>(hi->value)) : std::nullopt;
    const std::optional<int64_t> L_exact = L ? std::optional<int64_t>(*L + (lo->exclusive ? 1 : 0)) : std::nullopt;
    const std::optional<int64_t> H_exact = H ? std::optional<int64_t>(*H - (hi->exclusive ? 1 : 0)) : std::nullopt;
    const std::string zero_fraction = "(\".\" \"0\"+)?", nonzero_fraction = "\".\" \"0\"* [1-9] [0-9]*";
    std::vector<std::string> alternatives;
    auto add = [&](std::optional<int64_t> a, std::optional<int64_t> b, const std::string& sign,
                   const std::string& fraction) {
      const int64_t from = std::max<int64_t>(0, a.value_or(0));
      if (b && *b < from) return;
      alternatives.push_back(sign + nonnegative_range(from, b) + " " + fraction);
    };
    auto negate = [](std::optional<int64_t> x) { return x ? std::optional<int64_t>(-*x) : std::nullopt; };
    add(L_exact, H_exact, "", zero_fraction);                                                        // +I
    add(L, H ? std::optional<int64_t>(*H - 1) : std::nullopt, "", nonzero_fraction);                 // +(I, I+1)
    add(negate(H_exact), negate(L_exact), "\"-\" ", zero_fraction);                                  // -I
    add(negate(H), L ? std::optional<int64_t>(-*L - 1) : std::nullopt, "\"-\" ", nonzero_fraction);  // -(I, I+1)
    if (alternatives.empty()) fail("unsatisfiable number bounds", path);
    return rules_.add(hint(path) + "-number", join(alternatives, " | "));
  }

  // Numbers between decimal bounds, without exponent: v = ±(I.F) is split by sign, then by its
  // integer part I; only where I equals a bound's integer part is the fraction F constrained,
  // digit by digit against the bound's fraction digits.
  std::string decimal_range(const std::optional<NumericBound>& lo, const std::optional<NumericBound>& hi,
                            const std::string& path) {
    struct End {
      Decimal value;
      bool exclusive = false;
    };
    std::optional<std::pair<bool, Decimal>> L, H;
    if (lo) L = parse_decimal(lo->text, path);
    if (hi) H = parse_decimal(hi->text, path);
    std::vector<std::string> alternatives;
    // Magnitudes m ≥ 0 in [a, b] (b nullopt: unbounded) written as I ("." F)?.
    auto magnitude = [&](End a, std::optional<End> b, const std::string& sign) {
      if (b && (compare(a.value, b->value) > 0 || (compare(a.value, b->value) == 0 && (a.exclusive || b->exclusive))))
        return;
      const std::string any_fraction = "(\".\" [0-9]+)?";
      auto integer = [](int64_t v) { return nonnegative_range(v, v); };
      if (b && a.value.whole == b->value.whole) {
        if (auto f = fraction_between(&a.value.fraction, a.exclusive, &b->value.fraction, b->exclusive))
          alternatives.push_back(sign + integer(a.value.whole) + " " + *f);
        return;
      }
      if (auto f = fraction_between(&a.value.fraction, a.exclusive, nullptr, false))
        alternatives.push_back(sign + integer(a.value.whole) + " " + *f);
      if (!b || b->value.whole - a.value.whole >= 2)
        alternatives.push_back(
            sign + nonnegative_range(a.value.whole + 1, b ? std::optional<int64_t>(b->value.whole - 1) : std::nullopt) +
            " " + any_fraction);
      if (b)
        if (auto f = fraction_between(nullptr, false, &b->value.fraction, b->exclusive))
          alternatives.push_back(sign + integer(b->value.whole) + " " + *f);
    };
    const Decimal zero;
    // Positive side: m in [max(L, 0), H].
    if (!H || !H->first) {
      End a{zero, false};
      if (L && !L->first) a = {L->second, lo->exclusive};
      std::optional<End> b;
      if (H) b = End{H->second, hi->exclusive};
      magnitude(a, b, "");
    }
    // Negative side: -m in the bounds, i.e. m in [max(-H, 0), -L].
    if (!L || L->first || compare(L->second, zero) == 0) {
      End a{zero, false};
      if (H && (H->first || compare(H->second, zero) == 0)) a = {H->second, hi->exclusive};
      std::optional<End> b;
      if (L) b = End{L->second, lo->exclusive};
      magnitude(a, b, "\"-\" ");
    }
    if (alternatives.empty()) fail("unsatisfiable number bounds", path);
    return rules_.add(hint(path) + "-number", join(alternatives, " | "));
  }

  // The optional fraction ("." digits) of a number whose fraction F (digits after the point,
  // padded with zeros) lies above `low` (strictly when low_exclusive) and below `high`; a null
  // bound does not constrain. nullopt when no fraction fits.
  std::optional<std::string> fraction_between(const std::string* low, bool low_exclusive, const std::string* high,
                                              bool high_exclusive) {
    const size_t width = std::max(low ? low->size() : 0, high ? high->size() : 0);
    auto digit = [](const std::string* d, size_t i) { return d && i < d->size() ? (*d)[i] - '0' : 0; };
    // After i digits, still equal to low's first i digits (tight_low) / high's (tight_high): may
    // the fraction end here?
    auto can_end = [&](size_t i, bool tight_low, bool tight_high) {
      if (tight_low && (i < low->size() || low_exclusive)) return false;    // below low, or equal when exclusive
      if (tight_high && i >= high->size() && high_exclusive) return false;  // equal to high when exclusive
      return true;
    };
    std::map<std::tuple<size_t, bool, bool>, std::optional<std::string>> memo;
    // At least one more digit; the states past `width` repeat, so rules may recurse.
    std::function<std::optional<std::string>(size_t, bool, bool)> more =
        [&](size_t i, bool tight_low, bool tight_high) -> std::optional<std::string> {
      if (!tight_low && !tight_high) return std::string("[0-9]+");
      const auto key = std::make_tuple(std::min(i, width), tight_low, tight_high);
      if (auto it = memo.find(key); it != memo.end()) return it->second;
      const int from = tight_low ? digit(low, i) : 0, to = tight_high ? digit(high, i) : 9;
      if (from > to) return memo[key] = std::nullopt;
      const std::string name = rules_.reserve("fraction");
      memo[key] = name;
      std::vector<std::string> alternatives;
      for (int d = from; d <= to;) {
        const bool next_low = tight_low && d == digit(low, i), next_high = tight_high && d == digit(high, i);
        int last = d;  // digits d..last lead to the same state
        while (last + 1 <= to && (tight_low && last + 1 == digit(low, i)) == next_low &&
               (tight_high && last + 1 == digit(high, i)) == next_high)
          ++last;
        const auto then = more(i + 1, next_low, next_high);
        const bool end = can_end(i + 1, next_low, next_high);
        const std::string digits = "[" + std::to_string(d) + (last > d ? "-" + std::to_string(last) : "") + "]";
        if (then && *then == "[0-9]+") {
          alternatives.push_back(digits + (end ? " [0-9]*" : " [0-9]+"));
        } else if (then) {
          alternatives.push_back(digits + " " + *then + (end ? "?" : ""));
        } else if (end) {
          alternatives.push_back(digits);
        }
        d = last + 1;
      }
      rules_.define(name, alternatives.empty() ? "[^\\x00-\\U0010FFFF]" : join(alternatives, " | "));
      return name;
    };
    const auto first = more(0, low != nullptr, high != nullptr);
    const bool no_fraction = can_end(0, low != nullptr, high != nullptr);
    if (!first) return no_fraction ? std::optional<std::string>("") : std::nullopt;
    return "(\".\" " + *first + ")" + (no_fraction ? "?" : "");
  }

  // ---- objects ------------------------------------------------------------------------------

  static bool is_universal_pattern(const std::string& p) { return p.empty() || p == ".*" || p == "^.*" || p == ".*$"; }

  static bool pattern_matches(const std::string& pattern, const std::string& text, const std::string& path) {
    try {
      return std::regex_search(text, std::regex(pattern, std::regex::ECMAScript));
    } catch (const std::regex_error&) {
      fail("unsupported 'patternProperties' pattern /" + pattern + "/", path);
    }
  }

  std::string object_rule(const json& schema, const std::string& path) {
    const std::string w = ws();
    for (const char* key : {"propertyNames", "dependencies", "dependentRequired"})
      if (schema.contains(key)) fail(std::string("unsupported keyword '") + key + "'", child_path(path, key));
    const json none = json::object();
    const json& properties = schema.contains("properties") ? schema["properties"] : none;
    if (!properties.is_object()) fail("'properties' is not an object", path + "/properties");
    json additional = schema.contains("additionalProperties") ? schema["additionalProperties"] : json(!options_.strict);
    std::vector<std::string> required;
    if (schema.contains("required")) {
      if (!schema["required"].is_array()) fail("'required' is not an array", path + "/required");
      for (const json& r : schema["required"])
        if (r.is_string() && std::find(required.begin(), required.end(), r.get<std::string>()) == required.end())
          required.push_back(r.get<std::string>());
    }
    // Declared properties in order, then required names that are not declared.
    std::vector<std::pair<std::string, json>> members;
    for (auto it = properties.begin(); it != properties.end(); ++it) members.emplace_back(it.key(), it.value());
    for (const std::string& name : required)
      if (!properties.contains(name)) members.emplace_back(name, additional);

    // An extra member (key, colon, value): std::nullopt when none is allowed.
    std::optional<std::string> extra;
    auto member_of = [&](const std::string& key, const std::string& value) {
      return key + " " + w + " \":\" " + w + " " + value + " " + w;
    };
    const json patterns = schema.contains("patternProperties") ? schema["patternProperties"] : json::object();
    bool patterns_trivial = true;
    for (auto it = patterns.begin(); it != patterns.end(); ++it)
      patterns_trivial = patterns_trivial && is_trivial(it.value());
    const std::string pattern_path = path + "/patternProperties";
    if (!patterns.empty() && additional == false) {
      // Every extra key matches some pattern; keys matching several must satisfy each schema, so
      // the patterns' schemas must agree.
      const json value_schema = patterns.begin().value();
      std::vector<std::string> keys;
      for (auto it = patterns.begin(); it != patterns.end(); ++it) {
        if (it.value() != value_schema)
          fail("unsupported 'patternProperties' with different schemas per pattern", pattern_path);
        for (const auto& [name, unused] : members)
          if (pattern_matches(it.key(), name, pattern_path))
            fail("unsupported 'patternProperties' pattern /" + it.key() + "/ matching the declared property '" + name +
                     "'",
                 pattern_path);
        try {
          keys.push_back(
              compile_regex(rules_, it.key(), RegexAnchoring::search, RegexTarget::json_string_contents).expression);
        } catch (const Error& e) {
          fail(std::string("unsupported 'patternProperties' (") + e.what() + ")", pattern_path);
        }
      }
      const std::string key = rules_.add(hint(path) + "-key", "\"\\\"\" (" + join(keys, " | ") + ") \"\\\"\"");
      extra = member_of(key, compile(value_schema, child_path(pattern_path, patterns.begin().key())));
    } else if (!patterns.empty() && !(patterns_trivial && additional == true)) {
      if (patterns.size() != 1) fail("unsupported 'patternProperties' with several patterns", pattern_path);
      const std::string& pattern = patterns.begin().key();
      const json& value_schema = patterns.begin().value();
      const std::string value_path = child_path(pattern_path, pattern);
      if (is_universal_pattern(pattern)) {
        // The pattern matches every key: all extra keys (and declared ones) obey its schema.
        for (auto& [name, member_schema] : members) member_schema = both(member_schema, value_schema);
        additional = both(additional, value_schema);
      } else {
        // Keys matching the pattern take its schema, the others additionalProperties; with no
        // declared names, no key needs excluding.
        if (!members.empty()) fail("unsupported 'patternProperties' beside declared properties", pattern_path);
        std::string matching;
        RegexComplement others;
        try {
          matching =
              compile_regex(rules_, pattern, RegexAnchoring::search, RegexTarget::json_string_contents).expression;
          others = compile_regex_complement(rules_, pattern);
        } catch (const Error& e) {
          fail(std::string("unsupported 'patternProperties' (") + e.what() + ")", pattern_path);
        }
        if (!others.handled)
          fail("unsupported 'patternProperties' /" + pattern + "/ (extra keys would need the pattern's complement)",
               pattern_path);
        const std::string quote = "\"\\\"\"";
        std::vector<std::string> alternatives = {
            member_of(quote + " " + matching + " " + quote, compile(value_schema, value_path))};
        if (others.expression && additional != false)
          alternatives.push_back(member_of(quote + " " + *others.expression + " " + quote,
                                           compile(additional, path + "/additionalProperties")));
        extra = rules_.add(hint(path) + "-member", join(alternatives, " | "));
      }
    }
    if (!extra && additional != false) {
      std::vector<std::string> names;
      for (const auto& [name, unused] : members) names.push_back(name);
      extra = member_of(key_other_than(names), compile(additional, path + "/additionalProperties"));
    }

    // minProperties / maxProperties count the members present.
    auto count_of = [&](const char* key) -> std::optional<size_t> {
      if (!schema.contains(key)) return std::nullopt;
      const json& v = schema[key];
      if (!v.is_number() || v.get<double>() < 0)
        fail(std::string("'") + key + "' is not a non-negative integer", child_path(path, key));
      return static_cast<size_t>(v.get<double>());
    };
    const size_t min_members = count_of("minProperties").value_or(0);
    std::optional<size_t> max_members = count_of("maxProperties");
    if (max_members && !extra && *max_members >= members.size()) max_members.reset();  // cannot be exceeded

    // Member values and whether each is required, in order (false schemas: the key may not appear).
    std::vector<std::string> member_text;
    std::vector<bool> member_required;
    for (const auto& [name, member_schema] : members) {
      const bool is_required = std::find(required.begin(), required.end(), name) != required.end();
      if (member_schema == false) {
        if (is_required) fail("unsatisfiable: required property '" + name + "' is not allowed", path);
        continue;
      }
      const std::string value = compile(member_schema, child_path(path + "/properties", name));
      member_text.push_back(string_literal(name) + " " + w + " \":\" " + w + " " + value + " " + w);
      member_required.push_back(is_required);
    }
    const size_t n = member_text.size();
    // state(i, c): the rest of the object when members 0..i-1 are decided and c of them (capped)
    // are present; c > 0 means the next member needs a comma. With no counts to keep, only
    // c = 0 and c = 1 occur: one rule per member for "nothing yet" and one for "after a member".
    const size_t cap = max_members ? *max_members : std::max<size_t>(1, min_members);
    if ((n + 1) * (cap + 1) > 20000) fail("unsupported 'minProperties'/'maxProperties' this large", path);
    const std::string h = hint(path);
    const std::string extra_member = extra.value_or("");
    const std::string comma = "\",\" " + w + " ";
    std::map<std::pair<size_t, size_t>, std::optional<std::string>> memo;
    std::function<std::optional<std::string>(size_t, size_t)> state = [&](size_t i,
                                                                          size_t c) -> std::optional<std::string> {
      if (auto it = memo.find({i, c}); it != memo.end()) return it->second;
      std::vector<std::string> alternatives;
      bool can_end = false;
      if (i == n) {
        const size_t need = min_members > c ? min_members - c : 0;
        const std::optional<size_t> allow = max_members ? std::optional<size_t>(*max_members - c) : std::nullopt;
        if (!extra) {
          can_end = need == 0;
        } else if (c == 0) {
          can_end = need == 0;
          if (!allow || *allow >= 1)
            alternatives.push_back(extra_member + " " +
                                   repeat(comma + extra_member, need > 0 ? need - 1 : 0,
                                          allow ? std::optional<size_t>(*allow - 1) : std::nullopt));
        } else {
          const std::string more = repeat(comma + extra_member, need, allow);
          if (more.empty()) {
            can_end = need == 0;
          } else {
            alternatives.push_back(more);
          }
        }
      } else {
        if (!max_members || c < *max_members) {
          const auto next = state(i + 1, std::min(c + 1, cap));
          if (next) alternatives.push_back((c == 0 ? "" : comma) + member_text[i] + (next->empty() ? "" : " " + *next));
        }
        if (!member_required[i]) {
          const auto next = state(i + 1, c);
          if (next && next->empty()) can_end = true;
          if (next && !next->empty()) alternatives.push_back(*next);
        }
      }
      std::optional<std::string> result;
      if (!alternatives.empty()) {
        result = rules_.add(h + (c == 0 ? "-first" : "-rest"), (can_end ? "| " : "") + join(alternatives, " | "));
      } else if (can_end) {
        result = "";
      }
      memo[{i, c}] = result;
      return result;
    };
    const auto body = state(0, 0);
    if (!body) fail("unsatisfiable object (required properties, minProperties, maxProperties)", path);
    return rules_.add(h + "-object", "\"{\" " + w + (body->empty() ? "" : " " + *body) + " \"}\"");
  }

  // A JSON string (with its quotes) whose value is none of `names`: a trie over their code
  // points, each step raw or escaped, so no spelling of a declared name slips through.
  std::string key_other_than(const std::vector<std::string>& names) {
    if (names.empty()) return any_string();
    std::vector<std::vector<uint32_t>> words;
    for (const std::string& n : names) words.push_back(utf8_codepoints(n, "json_schema: property name"));
    const std::string any_char = json_string_char(rules_, all_codepoints());
    const std::string quote = "\"\\\"\"";
    // node(prefix): the rest of a key that starts with `prefix` (a prefix of some name).
    std::function<std::string(const std::vector<uint32_t>&)> node = [&](const std::vector<uint32_t>& prefix) {
      std::map<uint32_t, bool> next;  // following code points; whether the prefix + it is itself a name
      bool is_name = false;
      for (const auto& wd : words) {
        if (wd.size() < prefix.size() || !std::equal(prefix.begin(), prefix.end(), wd.begin())) continue;
        if (wd.size() == prefix.size()) {
          is_name = true;
        } else {
          next[wd[prefix.size()]] = true;
        }
      }
      std::vector<std::string> alternatives;
      if (!is_name) alternatives.push_back(quote);  // the key ends here and is no name
      CodepointSet others = all_codepoints();
      for (const auto& [cp, unused] : next) {
        CodepointSet one;
        one.add(cp, cp);
        std::vector<uint32_t> longer = prefix;
        longer.push_back(cp);
        alternatives.push_back(json_string_char(rules_, one) + " " + node(longer));
        CodepointSet without;
        for (auto [lo, hi] : others.ranges()) {
          if (cp < lo || cp > hi) {
            without.add(lo, hi);
          } else {
            if (cp > lo) without.add(lo, cp - 1);
            if (cp < hi) without.add(cp + 1, hi);
          }
        }
        others = without;
      }
      if (!others.empty()) alternatives.push_back(json_string_char(rules_, others) + " " + any_char + "* " + quote);
      return rules_.add("key-other", join(alternatives, " | "));
    };
    return rules_.add("key", quote + " " + node({}));
  }

  // ---- arrays -------------------------------------------------------------------------------

  std::string array_rule(const json& schema, const std::string& path) {
    const std::string w = ws();
    for (const char* key : {"contains", "minContains", "maxContains"})
      if (schema.contains(key)) fail(std::string("unsupported keyword '") + key + "'", child_path(path, key));
    auto count = [&](const char* key) -> std::optional<size_t> {
      if (!schema.contains(key)) return std::nullopt;
      const json& v = schema[key];
      if (!v.is_number() || v.get<double>() < 0)
        fail(std::string("'") + key + "' is not a non-negative integer", child_path(path, key));
      return static_cast<size_t>(v.get<double>());
    };
    const size_t min_items = count("minItems").value_or(0);
    const std::optional<size_t> max_items = count("maxItems");
    // Refused here: the repetition below would otherwise be written as {m,n} with n < m.
    if (max_items && *max_items < min_items) fail("unsatisfiable minItems > maxItems", path);
    if (schema.contains("uniqueItems") && schema["uniqueItems"] == true && !(max_items && *max_items <= 1))
      fail("unsupported keyword 'uniqueItems'", path + "/uniqueItems");
    // The tuple's schemas, then the schema of every further item (nullopt: no further items).
    std::vector<std::string> prefix;
    std::optional<json> rest_schema = json(true);
    std::string rest_path = path + "/items";
    const json* tuple = nullptr;
    std::string tuple_key;
    if (schema.contains("prefixItems")) {
      tuple = &schema["prefixItems"], tuple_key = "prefixItems";
      if (schema.contains("items")) rest_schema = schema["items"];
    } else if (schema.contains("items") && schema["items"].is_array()) {
      tuple = &schema["items"], tuple_key = "items";
      rest_schema = schema.contains("additionalItems") ? schema["additionalItems"] : json(true);
      rest_path = path + "/additionalItems";
    } else if (schema.contains("items")) {
      rest_schema = schema["items"];
    }
    if (tuple) {
      if (!tuple->is_array()) fail("'" + tuple_key + "' is not an array", path + "/" + tuple_key);
      for (size_t i = 0; i < tuple->size(); ++i) {
        if ((*tuple)[i] == false) break;  // no item may stand here, so none after it either
        prefix.push_back(compile((*tuple)[i], child_path(path + "/" + tuple_key, std::to_string(i))));
      }
      if (prefix.size() < tuple->size()) rest_schema.reset();
    }
    std::optional<std::string> rest;
    if (rest_schema && *rest_schema != false) rest = compile(*rest_schema, rest_path);
    const size_t n = prefix.size();
    auto sequence = [&](size_t k) {
      std::string s;
      for (size_t i = 0; i < k; ++i) s += (i ? " \",\" " + w + " " : "") + prefix[i] + " " + w;
      return s.empty() ? std::string("\"\"") : s;
    };
    std::vector<std::string> alternatives;
    for (size_t k = 0; k < n; ++k)
      if (k >= min_items && (!max_items || k <= *max_items)) alternatives.push_back(sequence(k));
    if (!max_items || *max_items >= n) {
      if (!rest) {
        if (n >= min_items) alternatives.push_back(sequence(n));
      } else {
        const size_t more_min = min_items > n ? min_items - n : 0;
        const std::optional<size_t> more_max = max_items ? std::optional<size_t>(*max_items - n) : std::nullopt;
        const std::string next = "\",\" " + w + " " + *rest + " " + w;
        if (n == 0) {
          if (more_min == 0) alternatives.push_back("\"\"");
          if (!more_max || *more_max >= 1)
            alternatives.push_back(*rest + " " + w + " " +
                                   repeat(next, more_min > 0 ? more_min - 1 : 0,
                                          more_max ? std::optional<size_t>(*more_max - 1) : std::nullopt));
        } else {
          alternatives.push_back(sequence(n) + " " + repeat(next, more_min, more_max));
        }
      }
    }
    if (alternatives.empty()) fail("unsatisfiable minItems/maxItems", path);
    return rules_.add(hint(path) + "-array", "\"[\" " + w + " (" + join(alternatives, " | ") + ") \"]\"");
  }

  const json& root_;
  JsonSchemaOptions options_;
  bool refs_replace_siblings_ = false;
  std::vector<std::string> base_ids_;  // the root's $id: a $ref starting with it is local
  GbnfRules rules_;
  std::string ws_;
  std::string any_value_;
  std::map<std::string, std::string> cache_;      // schema text → rule
  std::map<std::string, std::string> ref_rules_;  // JSON pointer → rule
  int depth_ = 0;
};

}  // namespace

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options) {
  return SchemaCompiler(schema, options).compile_root();
}

std::string json_schema_to_gbnf(const nlohmann::json& schema, const JsonSchemaOptions& options) {
  return json_schema_to_gbnf(nlohmann::ordered_json::parse(schema.dump()), options);
}

std::string json_schema_text_to_gbnf(std::string_view schema_text, const JsonSchemaOptions& options) {
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(schema_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number like 1e309
    throw Error(std::string("json_schema: the schema is not valid JSON (") + e.what() + ")");
  }
  return json_schema_to_gbnf(schema, options);
}

}  // namespace nucleus
