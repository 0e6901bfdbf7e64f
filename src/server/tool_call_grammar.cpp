#include "server/tool_call_grammar.h"

#include <algorithm>
#include <set>
#include <vector>

#include "core/error.h"
#include "structured/constraint.h"
#include "structured/gbnf_compose.h"
#include "structured/json_schema_to_gbnf.h"

namespace nucleus::server {
namespace {

using ordered_json = nlohmann::ordered_json;

struct Tool {
  std::string name;
  ordered_json parameters;  // null when absent
  bool strict = false;
};

std::string tool_label(const std::string& name) { return "tool '" + name + "'"; }

// Characters a name written raw by `format` cannot hold without breaking the call's shape.
void check_name(const std::string& name, ToolCallFormat format, const std::string& what) {
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) throw Error(what + " has a control character");
    if (format == ToolCallFormat::qwen3_xml && c == '>')
      throw Error(what + " has a '>', which qwen3-xml tool calls cannot carry (<function=NAME>, <parameter=NAME>)");
    if (format == ToolCallFormat::mistral_args && c == '[')
      throw Error(what + " has a '[', which mistral-args tool calls cannot carry ([TOOL_CALLS]NAME[ARGS])");
  }
}

std::vector<Tool> read_tools(const ToolCallGrammarOptions& options) {
  const ordered_json& tools = options.tools;
  if (!tools.is_array() || tools.empty())
    throw Error("tools: must be a non-empty array of {\"type\": \"function\", \"function\": {\"name\": ...}}");
  std::vector<Tool> out;
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    const ordered_json& entry = tools[i];
    if (!entry.is_object()) throw Error(where + ": must be an object {\"type\": \"function\", \"function\": {...}}");
    const auto type = entry.find("type");
    if (type == entry.end() || !type->is_string() || type->get_ref<const std::string&>() != "function")
      throw Error(where + ".type: must be \"function\"" +
                  (type == entry.end() ? std::string(" (missing)") : " (got " + type->dump() + ")"));
    const auto function = entry.find("function");
    if (function == entry.end() || !function->is_object())
      throw Error(where + ".function: must be an object with a \"name\"");
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string() || name->get_ref<const std::string&>().empty())
      throw Error(where + ".function.name: must be a non-empty string");
    Tool tool;
    tool.name = name->get<std::string>();
    check_name(tool.name, options.format, where + ".function.name '" + tool.name + "'");
    if (!names.insert(tool.name).second) throw Error(where + ": two tools are named '" + tool.name + "'");
    if (const auto parameters = function->find("parameters"); parameters != function->end() && !parameters->is_null()) {
      if (!parameters->is_object())
        throw Error(tool_label(tool.name) + ": \"parameters\" must be a JSON Schema object (got " + parameters->dump() + ")");
      tool.parameters = *parameters;
    }
    const auto strict = function->find("strict");
    tool.strict = options.strict || (strict != function->end() && strict->is_boolean() && strict->get<bool>());
    out.push_back(std::move(tool));
  }
  return out;
}

// The schema the arguments of a JSON-writing format follow: the parameters, taken as an object
// schema when they say nothing else (no type, no combinator, no enum/const/$ref).
ordered_json arguments_schema(const Tool& tool) {
  if (tool.parameters.is_null()) return ordered_json{{"type", "object"}};
  ordered_json schema = tool.parameters;
  if (const auto type = schema.find("type"); type != schema.end()) {
    const bool object = (type->is_string() && *type == "object") ||
                        (type->is_array() && std::find(type->begin(), type->end(), ordered_json("object")) != type->end());
    if (!object)
      throw Error(tool_label(tool.name) + ": the parameters schema must describe a JSON object (its type is " +
                  type->dump() + ")");
    return schema;
  }
  for (const char* key : {"anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not", "if"})
    if (schema.contains(key)) return schema;
  schema["type"] = "object";
  return schema;
}

std::string compile_schema(const ordered_json& schema, bool strict, const std::string& what) {
  try {
    JsonSchemaOptions schema_options;
    schema_options.strict = strict;
    return json_schema_to_gbnf(schema, schema_options);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

// The rules under construction: embedded grammars get the prefixes g0-, g1-, ...; the rules named
// here (tool-N, fn-N, param-N-M, call, raw-text...) never start with "g<digit>".
class GbnfBuilder {
 public:
  // Adds `gbnf` under a fresh prefix and returns the name of its root rule.
  std::string embed(const std::string& gbnf) {
    const std::string prefix = "g" + std::to_string(embedded_++) + "-";
    rules_ += prefix_gbnf_rules(gbnf, prefix);
    if (!rules_.empty() && rules_.back() != '\n') rules_ += '\n';
    return prefix + "root";
  }
  void rule(const std::string& name, const std::string& body) { rules_ += name + " ::= " + body + "\n"; }
  void raw(const std::string& text) { rules_ += text; }
  std::string text(const std::string& root_body) const { return "root ::= " + root_body + "\n" + rules_; }

 private:
  std::string rules_;
  int embedded_ = 0;
};

// ---- qwen3-xml -------------------------------------------------------------------------------

constexpr const char* kRawText = "raw-text";  // any text without "\n</parameter>"

bool is_annotation(const std::string& key) {
  static const std::set<std::string> kAnnotations = {"description", "title",    "default",   "examples", "$comment",
                                                     "deprecated",  "readOnly", "writeOnly", "$schema",  "$id"};
  return kAnnotations.count(key) > 0;
}

// A property schema {"$ref": "#/$defs/X"} (or #/definitions/X) with only annotations beside it,
// resolved in the parameters schema; otherwise the schema itself.
const ordered_json& resolve_simple_ref(const ordered_json& schema, const ordered_json& root) {
  if (!schema.is_object() || !schema.contains("$ref") || !schema["$ref"].is_string()) return schema;
  for (const auto& [key, value] : schema.items())
    if (key != "$ref" && !is_annotation(key)) return schema;
  const std::string& ref = schema["$ref"].get_ref<const std::string&>();
  for (const char* container : {"$defs", "definitions"}) {
    const std::string head = std::string("#/") + container + "/";
    if (ref.rfind(head, 0) != 0) continue;
    const std::string name = ref.substr(head.size());
    if (name.find_first_of("/~%") != std::string::npos) return schema;  // escapes and deeper pointers: leave to the compiler
    if (root.contains(container) && root[container].is_object() && root[container].contains(name))
      return root[container][name];
  }
  return schema;
}

bool is_plain_string_type(const ordered_json& schema) {
  return schema.is_object() && schema.contains("type") && schema["type"].is_string() && schema["type"] == "string";
}

// The VALUE of a raw string parameter: the enum/const strings verbatim, or any raw text.
std::string raw_string_value(const ordered_json& schema, const std::string& what) {
  for (const auto& [key, value] : schema.items()) {
    if (key == "type" || key == "enum" || key == "const" || key == "$ref" || is_annotation(key)) continue;
    throw Error(what + ": qwen3-xml writes string values raw, so the string keyword '" + key +
                "' cannot be enforced (only type, enum, const and annotations are supported)");
  }
  if (!schema.contains("enum") && !schema.contains("const")) return kRawText;
  std::vector<std::string> values;
  auto admissible = [&](const ordered_json& v) {
    if (!v.is_string()) return false;
    if (schema.contains("const") && schema["const"] != v) return false;
    if (schema.contains("enum") && schema["enum"].is_array() &&
        std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
      return false;
    return v.get_ref<const std::string&>().find("\n</parameter>") == std::string::npos;
  };
  if (schema.contains("enum") && !schema["enum"].is_array()) throw Error(what + ": enum must be an array");
  const ordered_json candidates = schema.contains("enum") ? schema["enum"] : ordered_json::array({schema["const"]});
  for (const ordered_json& v : candidates)
    if (admissible(v)) values.push_back(v.get<std::string>());
  if (values.empty())
    throw Error(what + ": no string value satisfies its enum/const (values containing \"\\n</parameter>\" cannot be written)");
  std::string out = "(";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? " | " : "") + gbnf_literal(values[i]);
  return out + ")";
}

// A property's schema compiled on its own, with the parameters schema's definitions (so local
// $refs to #/$defs/.. and #/definitions/.. still resolve).
ordered_json standalone_property_schema(const ordered_json& property, const ordered_json& root) {
  if (!property.is_object()) return property;
  ordered_json schema = property;
  for (const char* key : {"$defs", "definitions", "$schema", "$id"})
    if (root.contains(key) && !schema.contains(key)) schema[key] = root[key];
  return schema;
}

// The rule for one function of the qwen3-xml format: <function=NAME>\n PARAM* </function>\n.
std::string qwen3_function(GbnfBuilder& builder, const Tool& tool, size_t index, bool& uses_raw_text) {
  const std::string label = tool_label(tool.name);
  const std::string fn = "fn-" + std::to_string(index);
  std::string body = gbnf_literal("<function=" + tool.name + ">\n");
  const ordered_json schema = tool.parameters.is_null() ? ordered_json::object() : tool.parameters;

  static const std::set<std::string> kTopLevel = {"type", "properties", "required", "additionalProperties",
                                                  "patternProperties", "minProperties", "maxProperties",
                                                  "$defs", "definitions"};
  for (const auto& [key, value] : schema.items()) {
    if (kTopLevel.count(key) || is_annotation(key)) continue;
    throw Error(label + ": qwen3-xml tool calls need a parameters schema that is an object with properties; '" + key +
                "' at its top level is not supported");
  }
  if (schema.contains("type") && !(schema["type"].is_string() && schema["type"] == "object"))
    throw Error(label + ": qwen3-xml tool calls need a parameters schema that is an object with properties (its type is " +
                schema["type"].dump() + ")");
  const ordered_json properties = schema.contains("properties") ? schema["properties"] : ordered_json::object();
  if (!properties.is_object()) throw Error(label + ": the parameters schema's \"properties\" must be an object");
  std::set<std::string> required;
  if (schema.contains("required")) {
    if (!schema["required"].is_array()) throw Error(label + ": the parameters schema's \"required\" must be an array");
    for (const ordered_json& r : schema["required"]) {
      if (!r.is_string()) throw Error(label + ": the parameters schema's \"required\" must list strings");
      if (!properties.contains(r.get<std::string>()))
        throw Error(label + ": required parameter '" + r.get<std::string>() +
                    "' is not in \"properties\" (qwen3-xml calls can only write declared parameters)");
      required.insert(r.get<std::string>());
    }
  }

  // With no declared properties and extra ones allowed (no parameters schema, or {"type":
  // "object"} outside strict mode), any parameters with raw values; otherwise only the declared.
  const ordered_json additional = schema.contains("additionalProperties") ? schema["additionalProperties"] : ordered_json(true);
  const bool open_object = properties.empty() && !tool.strict && additional.is_boolean() && additional.get<bool>();
  size_t optional_count = 0, written = 0;
  if (open_object) {
    uses_raw_text = true;
    builder.rule(fn + "-any-param", "\"<parameter=\" [^>\\n\\r]+ \">\\n\" " + std::string(kRawText) + " \"\\n</parameter>\\n\"");
    body += " " + fn + "-any-param*";
  } else {
    size_t k = 0;
    for (const auto& [name, property] : properties.items()) {
      const std::string what = label + ", parameter '" + name + "'";
      check_name(name, ToolCallFormat::qwen3_xml, what + ": the name");
      if (name.empty() || name.find('\n') != std::string::npos) throw Error(what + ": the name is empty or has a newline");
      const bool is_required = required.count(name) > 0;
      if (property.is_boolean() && !property.get<bool>()) {
        if (is_required) throw Error(what + ": required, but its schema is false");
        continue;
      }
      if (!property.is_object() && !property.is_boolean()) throw Error(what + ": its schema must be an object");
      const ordered_json& resolved = resolve_simple_ref(property, schema);
      std::string value;
      if (is_plain_string_type(resolved)) {
        value = raw_string_value(resolved, what);
        if (value == kRawText) uses_raw_text = true;
      } else {
        value = builder.embed(compile_schema(standalone_property_schema(property, schema), tool.strict, what));
      }
      const std::string param = "param-" + std::to_string(index) + "-" + std::to_string(k++);
      builder.rule(param, gbnf_literal("<parameter=" + name + ">\n") + " " + value + " " + gbnf_literal("\n</parameter>\n"));
      body += " " + param + (is_required ? "" : "?");
      ++written;
      optional_count += is_required ? 0 : 1;
    }
  }
  if (!open_object) {
    const size_t min_written = written - optional_count;
    if (schema.contains("minProperties") &&
        !(schema["minProperties"].is_number() && schema["minProperties"].get<double>() <= static_cast<double>(min_written)))
      throw Error(label + ": minProperties above the number of required parameters is not supported for qwen3-xml");
    if (schema.contains("maxProperties") &&
        !(schema["maxProperties"].is_number() && schema["maxProperties"].get<double>() >= static_cast<double>(written)))
      throw Error(label + ": maxProperties below the number of parameters is not supported for qwen3-xml");
  } else if (schema.contains("minProperties") || schema.contains("maxProperties")) {
    throw Error(label + ": minProperties/maxProperties without declared properties are not supported for qwen3-xml");
  }
  body += " " + gbnf_literal("</function>\n");
  builder.rule(fn, body);
  return fn;
}

}  // namespace

std::string tool_call_gbnf(const ToolCallGrammarOptions& options) {
  std::vector<Tool> tools = read_tools(options);
  if (options.function) {
    std::vector<Tool> chosen;
    std::string known;
    for (Tool& tool : tools) {
      known += (known.empty() ? "'" : ", '") + tool.name + "'";
      if (tool.name == *options.function) chosen.push_back(std::move(tool));
    }
    if (chosen.empty())
      throw Error("tool_choice: function '" + *options.function + "' is not among the tools (" + known + ")");
    tools = std::move(chosen);
  }

  const ToolCallFormat format = options.format;
  GbnfBuilder builder;
  bool uses_raw_text = false;
  std::string any_tool;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Tool& tool = tools[i];
    std::string rule;
    if (format == ToolCallFormat::qwen3_xml) {
      rule = qwen3_function(builder, tool, i, uses_raw_text);
    } else {
      const std::string args = builder.embed(compile_schema(arguments_schema(tool), tool.strict,
                                                            tool_label(tool.name) + ": parameters schema"));
      rule = "tool-" + std::to_string(i);
      if (format == ToolCallFormat::mistral_args) {
        builder.rule(rule, gbnf_literal(tool.name + "[ARGS]") + " " + args);
      } else {
        const char* key = format == ToolCallFormat::llama3_json ? "parameters" : "arguments";
        const std::string head = "{\"name\": " + ordered_json(tool.name).dump() + ", \"" + key + "\": ";
        builder.rule(rule, gbnf_literal(head) + " " + args + " " + gbnf_literal("}"));
      }
    }
    any_tool += (any_tool.empty() ? "" : " | ") + rule;
  }
  if (uses_raw_text) builder.raw(gbnf_text_without("\n</parameter>", kRawText));

  // root ::= open call (separator call)* close
  std::string open, item, separator, close;
  bool parallel = options.parallel;
  switch (format) {
    case ToolCallFormat::hermes:
      item = gbnf_literal("<tool_call>\n") + " (" + any_tool + ") " + gbnf_literal("\n</tool_call>");
      separator = "\n";
      break;
    case ToolCallFormat::qwen3_xml:
      item = gbnf_literal("<tool_call>\n") + " (" + any_tool + ") " + gbnf_literal("</tool_call>");
      separator = "\n";
      break;
    case ToolCallFormat::llama3_json:
      item = any_tool;
      parallel = false;  // Llama 3.1's template: "This model only supports single tool-calls at once!"
      break;
    case ToolCallFormat::mistral:
      open = "[TOOL_CALLS][";
      item = any_tool;
      separator = ", ";
      close = "]";
      break;
    case ToolCallFormat::mistral_args:
      item = gbnf_literal("[TOOL_CALLS]") + " (" + any_tool + ")";
      break;
    case ToolCallFormat::generic:
      open = "{\"tool_calls\": [";
      item = any_tool;
      separator = ", ";
      close = "]}";
      break;
  }
  builder.rule("call", item);
  std::string root;
  if (!open.empty()) root += gbnf_literal(open) + " ";
  root += "call";
  if (parallel) root += " (" + (separator.empty() ? std::string() : gbnf_literal(separator) + " ") + "call)*";
  if (!close.empty()) root += " " + gbnf_literal(close);
  return builder.text(root);
}

std::string with_reasoning_prefix(const std::string& gbnf, bool starts_in_reasoning) {
  std::string out = starts_in_reasoning
                        ? "root ::= think-text \"</think>\" think-ws body-root\n"
                        : "root ::= (\"<think>\" think-text \"</think>\" think-ws)? body-root\n";
  out += "think-ws ::= [ \\n]{0,4}\n";
  out += gbnf_text_without("</think>", "think-text");
  out += prefix_gbnf_rules(gbnf, "body-");
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

}  // namespace nucleus::server
