#!/usr/bin/env python3
"""Reference chat-template renderer for the tests: Python's jinja2 as Hugging Face's
apply_chat_template runs it (trim_blocks, lstrip_blocks, tojson = json.dumps with
ensure_ascii=False, raise_exception, strftime_now).

  render_chat_reference.py REQUEST.json   prints a JSON list, one entry per case:
  {"text": rendered} or {"error": message} (the template raised or failed).

REQUEST: {"template": path, "bos_token": s, "eos_token": s,
          "cases": [{"messages": [...], "add_generation_prompt": bool, "enable_thinking": bool?}]}
A case without "enable_thinking" leaves it undefined, as a caller that does not pass it.
"""
import datetime
import json
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(value, indent=None, ensure_ascii=False, sort_keys=False):
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        request = json.load(f)
    with open(request["template"], encoding="utf-8") as f:
        source = f.read()
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    # A fixed day, so a template that prints today's date renders reproducibly.
    env.globals["strftime_now"] = lambda fmt: datetime.date(2024, 7, 26).strftime(fmt)
    results = []
    try:
        template = env.from_string(source)
    except Exception as e:  # a template jinja2 cannot parse: every case is an error
        print(json.dumps([{"error": "parse: " + str(e)} for _ in request["cases"]], ensure_ascii=False))
        return
    for case in request["cases"]:
        variables = {"messages": case["messages"], "add_generation_prompt": case["add_generation_prompt"],
                     "bos_token": request["bos_token"], "eos_token": request["eos_token"]}
        if "enable_thinking" in case:
            variables["enable_thinking"] = case["enable_thinking"]
        try:
            results.append({"text": template.render(**variables)})
        except Exception as e:
            results.append({"error": type(e).__name__ + ": " + str(e)})
    print(json.dumps(results, ensure_ascii=False))


if __name__ == "__main__":
    main()
