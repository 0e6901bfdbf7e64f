#include "structured/constraint.h"

#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "structured/json_schema_to_gbnf.h"
#include "structured/regex_to_gbnf.h"

namespace nucleus {

std::string ConstraintSpec::kind_name() const {
  switch (kind) {
    case Kind::none: return "none";
    case Kind::json_object: return "json_object";
    case Kind::json_schema: return "json_schema";
    case Kind::grammar: return "grammar";
    case Kind::regex: return "regex";
    case Kind::choice: return "choice";
  }
  return "none";
}

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);  // UTF-8 bytes pass through: the parser decodes them
    }
  }
  return out + "\"";
}

std::string json_object_gbnf() {
  return R"(root ::= object
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws ::= | " " | "\n" [ \t]{0,20}
)";
}

std::string constraint_to_gbnf(const ConstraintSpec& spec) {
  switch (spec.kind) {
    case ConstraintSpec::Kind::none: throw Error("internal: compiling an empty constraint");
    case ConstraintSpec::Kind::json_object: return json_object_gbnf();
    case ConstraintSpec::Kind::grammar: return spec.text;
    case ConstraintSpec::Kind::regex: return regex_to_gbnf(spec.text);
    case ConstraintSpec::Kind::choice: {
      if (spec.choices.empty()) throw Error("choice: the list of choices is empty");
      std::string out = "root ::= ";
      for (size_t i = 0; i < spec.choices.size(); ++i) {
        if (spec.choices[i].empty()) throw Error("choice: choice " + std::to_string(i) + " is the empty string");
        out += (i ? " | " : "") + gbnf_literal(spec.choices[i]);
      }
      return out + "\n";
    }
    case ConstraintSpec::Kind::json_schema: {
      JsonSchemaOptions options;
      options.strict = spec.strict;
      return json_schema_text_to_gbnf(spec.text, options);  // keeps the schema's property order
    }
  }
  throw Error("internal: unknown constraint kind");
}

ConstraintCompiler::Compiled ConstraintCompiler::compile(const ConstraintSpec& spec) {
  std::string key = spec.kind_name() + (spec.strict ? "/strict/" : "/") + spec.text;
  for (const std::string& c : spec.choices) key += '\0' + c;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      order_.splice(order_.begin(), order_, it->second.second);
      return Compiled{it->second.first, 0.0, true};
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::string gbnf = constraint_to_gbnf(spec);
  Grammar grammar;
  try {
    grammar = parse_gbnf(gbnf);
  } catch (const Error& e) {
    if (spec.kind == ConstraintSpec::Kind::grammar) throw;
    throw Error(spec.kind_name() + ": internal: the generated grammar does not parse: " + e.what());
  }
  auto compiled = std::make_shared<const Grammar>(std::move(grammar));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!cache_.count(key)) {
    order_.push_front(key);
    cache_.emplace(key, std::make_pair(compiled, order_.begin()));
    while (cache_.size() > capacity_) {
      cache_.erase(order_.back());
      order_.pop_back();
    }
  }
  return Compiled{compiled, seconds, false};
}

}  // namespace nucleus
