#!/usr/bin/env python3
"""Reference chat-template renderer for the tests: Python's jinja2 as Hugging Face's
apply_chat_template runs it (ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, the
loopcontrols extension and transformers' {% generation %} tag; tojson = json.dumps with
ensure_ascii=False and transformers' arguments; raise_exception; strftime_now).

  render_chat_reference.py REQUEST.json   prints JSON results: {"text": rendered} or {"error": message}
  (the template raised or failed).

Two request forms:
  one template, conversations of plain messages (tests/chat_template_reference_test.cpp):
    {"template": path, "bos_token": s, "eos_token": s,
     "cases": [{"messages": [...], "add_generation_prompt": bool, "enable_thinking": bool?}]}
    → a list, one result per case. A case without "enable_thinking" leaves it undefined.
  many templates × many cases in one process (tests/jinja_template_test.cpp):
    {"templates": [{"path": p} or {"source": text}], "date": "YYYY-MM-DD",
     "cases": [{"messages": [...], "add_generation_prompt": bool, "bos_token": s, "eos_token": s,
                "tools": [...]?, "kwargs": {...}?}]}
    → a list per template of one result per case. As transformers does, `tools` and `documents` are
    passed as None when the case has none, and the kwargs (chat_template_kwargs) become variables.
"""
import datetime
import json
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' own tojson (jinja2's escapes HTML characters).
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class GenerationTag(jinja2.ext.Extension):
    """transformers' {% generation %} ... {% endgeneration %} (AssistantTracker): a call block that
    renders its body (the tracking of assistant spans is not needed here)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment(date):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    # A fixed day, so a template that prints today's date renders reproducibly.
    env.globals["strftime_now"] = lambda fmt: date.strftime(fmt)
    return env


def render_all(template, variable_sets):
    results = []
    for variables in variable_sets:
        try:
            results.append({"text": template.render(**variables)})
        except Exception as e:
            results.append({"error": type(e).__name__ + ": " + str(e)})
    return results


def compile_or_error(env, source, n_cases):
    try:
        return env.from_string(source), None
    except Exception as e:  # a template jinja2 cannot compile: every case is an error
        return None, [{"error": "parse: " + str(e)} for _ in range(n_cases)]


def single_template(request):
    env = make_environment(datetime.date(2024, 7, 26))
    with open(request["template"], encoding="utf-8") as f:
        source = f.read()
    template, failed = compile_or_error(env, source, len(request["cases"]))
    if failed:
        return failed
    variable_sets = []
    for case in request["cases"]:
        variables = {"messages": case["messages"], "add_generation_prompt": case["add_generation_prompt"],
                     "bos_token": request["bos_token"], "eos_token": request["eos_token"]}
        if "enable_thinking" in case:
            variables["enable_thinking"] = case["enable_thinking"]
        variable_sets.append(variables)
    return render_all(template, variable_sets)


def template_matrix(request):
    env = make_environment(datetime.date.fromisoformat(request.get("date", "2024-07-26")))
    variable_sets = []
    for case in request["cases"]:
        variables = {"messages": case["messages"], "tools": case.get("tools"), "documents": None,
                     "add_generation_prompt": case["add_generation_prompt"],
                     "bos_token": case.get("bos_token", ""), "eos_token": case.get("eos_token", "")}
        variables.update(case.get("kwargs", {}))
        variable_sets.append(variables)
    out = []
    for entry in request["templates"]:
        if "path" in entry:
            with open(entry["path"], encoding="utf-8") as f:
                source = f.read()
        else:
            source = entry["source"]
        template, failed = compile_or_error(env, source, len(variable_sets))
        out.append(failed if failed else render_all(template, variable_sets))
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        request = json.load(f)
    result = template_matrix(request) if "templates" in request else single_template(request)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
