// A Jinja interpreter for chat templates: the subset of jinja2 that Hugging Face chat templates use,
// rendered as transformers' apply_chat_template renders them (ImmutableSandboxedEnvironment with
// trim_blocks and lstrip_blocks, the loopcontrols and {% generation %} extensions, tojson =
// json.dumps(ensure_ascii=False), raise_exception and strftime_now as globals).
//
// The contract is jinja2's output, byte for byte, or an Error where jinja2 raises (raise_exception,
// undefined attribute access, type errors). A construct this interpreter does not implement is an
// Error naming it and its line — at parse time for statements and for filter and test names, which
// jinja2 too checks when it compiles — never a silently different rendering.
#pragma once
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_value.h"

namespace nucleus::jinja {

struct RenderOptions {
  // What strftime_now formats: nullopt is the local time when rendering (as transformers'
  // datetime.now()); tests fix a day so renderings are reproducible.
  std::optional<std::tm> now;
};

class JinjaTemplate {
 public:
  // Parses and checks the source; throws Error naming the line of a syntax error or of a statement,
  // filter or test that is not supported.
  explicit JinjaTemplate(std::string_view source);

  // Renders with `variables` as the template's context (messages, add_generation_prompt, bos_token,
  // ...). Throws Error for whatever jinja2 raises on: the message names the line, and for
  // raise_exception carries the template's own message.
  std::string render(const Dict& variables, const RenderOptions& options = {}) const;

 private:
  Body body_;
};

}  // namespace nucleus::jinja
