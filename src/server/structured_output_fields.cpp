#include "server/structured_output_fields.h"

#include <vector>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace nucleus::server {
namespace {

using json = nlohmann::json;
using Kind = ConstraintSpec::Kind;

// The same value in the order-keeping parse of the body, found by the path of keys.
const nlohmann::ordered_json* ordered_at(const nlohmann::ordered_json* body, std::initializer_list<const char*> path) {
  for (const char* key : path) {
    if (!body || !body->is_object() || !body->contains(key)) return nullptr;
    body = &(*body)[key];
  }
  return body;
}

std::string schema_text(const json& schema, const std::string& param, const nlohmann::ordered_json* ordered = nullptr) {
  if (ordered && ordered->is_object()) return ordered->dump();
  if (schema.is_string()) {  // some clients send the schema serialized
    try {
      return json::parse(schema.get<std::string>()).dump();
    } catch (const json::exception&) {
      throw invalid_param(param, "'" + param + "' is a string that is not JSON");
    }
  }
  if (!schema.is_object() && !schema.is_boolean()) throw invalid_param(param, "'" + param + "' must be a JSON Schema object");
  return schema.dump();
}

std::string text_value(const json& v, const std::string& param) {
  if (!v.is_string()) throw invalid_param(param, "'" + param + "' must be a string");
  if (v.get<std::string>().empty()) throw invalid_param(param, "'" + param + "' must not be empty");
  return v.get<std::string>();
}

std::vector<std::string> choices_value(const json& v, const std::string& param) {
  if (!v.is_array() || v.empty()) throw invalid_param(param, "'" + param + "' must be a non-empty array of strings");
  std::vector<std::string> out;
  for (const json& c : v) {
    if (!c.is_string()) throw invalid_param(param, "'" + param + "' must hold strings only");
    out.push_back(c.get<std::string>());
  }
  return out;
}

ConstraintSpec from_response_format(const json& v, const nlohmann::ordered_json* ordered_body) {
  if (!v.is_object()) throw invalid_param("response_format", "'response_format' must be an object");
  const json* type = field(v, "type");
  if (!type || !type->is_string()) throw invalid_param("response_format", "'response_format.type' must be a string");
  const std::string t = type->get<std::string>();
  ConstraintSpec spec;
  if (t == "text") return spec;
  if (t == "json_object") {
    spec.kind = Kind::json_object;
    return spec;
  }
  if (t != "json_schema")
    throw invalid_param("response_format", "'response_format.type' must be text, json_object or json_schema, got '" + t + "'");
  const json* js = field(v, "json_schema");
  if (!js || !js->is_object()) throw invalid_param("response_format", "'response_format.json_schema' must be an object");
  const json* schema = field(*js, "schema");
  spec.kind = Kind::json_schema;
  // OpenAI allows a json_schema without a schema (any JSON); give it the json_object grammar.
  if (!schema) {
    spec.kind = Kind::json_object;
    return spec;
  }
  spec.text = schema_text(*schema, "response_format.json_schema.schema",
                          ordered_at(ordered_body, {"response_format", "json_schema", "schema"}));
  if (const json* strict = field(*js, "strict")) {
    if (!strict->is_boolean()) throw invalid_param("response_format", "'response_format.json_schema.strict' must be a boolean");
    spec.strict = strict->get<bool>();
  }
  return spec;
}

ConstraintSpec from_structured_outputs(const json& v, const nlohmann::ordered_json* ordered_body) {
  if (!v.is_object()) throw invalid_param("structured_outputs", "'structured_outputs' must be an object");
  std::vector<ConstraintSpec> found;
  for (const auto& [key, value] : v.items()) {
    if (value.is_null()) continue;
    const std::string param = "structured_outputs." + key;
    ConstraintSpec spec;
    if (key == "json") {
      spec.kind = Kind::json_schema;
      spec.text = schema_text(value, param, ordered_at(ordered_body, {"structured_outputs", "json"}));
    } else if (key == "regex") {
      spec.kind = Kind::regex;
      spec.text = text_value(value, param);
    } else if (key == "choice") {
      spec.kind = Kind::choice;
      spec.choices = choices_value(value, param);
    } else if (key == "grammar") {
      spec.kind = Kind::grammar;
      spec.text = text_value(value, param);
    } else if (key == "json_object") {
      if (!value.is_boolean()) throw invalid_param(param, "'" + param + "' must be a boolean");
      if (!value.get<bool>()) continue;
      spec.kind = Kind::json_object;
    } else if (key == "disable_any_whitespace" || key == "disable_additional_properties" || key == "whitespace_pattern" ||
               key == "structural_tag") {
      throw invalid_param(param, "'" + param + "' is not supported");
    } else {
      throw invalid_param(param, "'" + param + "' is not a structured_outputs field (json, regex, choice, grammar, json_object)");
    }
    found.push_back(std::move(spec));
  }
  if (found.size() > 1) throw invalid_param("structured_outputs", "'structured_outputs' must hold exactly one of json, regex, choice, grammar");
  return found.empty() ? ConstraintSpec{} : found.front();
}

}  // namespace

StructuredOutputField parse_structured_output_fields(const json& body, const nlohmann::ordered_json* ordered_body) {
  std::vector<StructuredOutputField> found;
  auto add = [&](const char* name, ConstraintSpec spec) {
    if (spec.active()) found.push_back({std::move(spec), name});
  };
  if (const json* v = field(body, "response_format")) add("response_format", from_response_format(*v, ordered_body));
  if (const json* v = field(body, "structured_outputs")) add("structured_outputs", from_structured_outputs(*v, ordered_body));
  if (const json* v = field(body, "guided_json")) add("guided_json", ConstraintSpec{Kind::json_schema, schema_text(*v, "guided_json", ordered_at(ordered_body, {"guided_json"})), {}, false});
  if (const json* v = field(body, "guided_regex")) add("guided_regex", ConstraintSpec{Kind::regex, text_value(*v, "guided_regex"), {}, false});
  if (const json* v = field(body, "guided_choice")) add("guided_choice", ConstraintSpec{Kind::choice, "", choices_value(*v, "guided_choice"), false});
  if (const json* v = field(body, "guided_grammar")) add("guided_grammar", ConstraintSpec{Kind::grammar, text_value(*v, "guided_grammar"), {}, false});
  if (const json* v = field(body, "grammar")) add("grammar", ConstraintSpec{Kind::grammar, text_value(*v, "grammar"), {}, false});
  if (const json* v = field(body, "json_schema")) add("json_schema", ConstraintSpec{Kind::json_schema, schema_text(*v, "json_schema", ordered_at(ordered_body, {"json_schema"})), {}, false});
  if (found.size() > 1)
    throw invalid_param(found[1].field, "'" + found[0].field + "' and '" + found[1].field +
                                            "' both ask for structured output: give only one");
  return found.empty() ? StructuredOutputField{} : found.front();
}

}  // namespace nucleus::server
