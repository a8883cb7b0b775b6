#!/usr/bin/env python3
"""Oracle for tests/core/chat_template_test.cpp: renders chat templates with Python's jinja2 the
way Hugging Face transformers' apply_chat_template does (ImmutableSandboxedEnvironment,
loopcontrols, the `generation` tag, tojson = json.dumps(ensure_ascii=False), raise_exception,
strftime_now). Reads one JSON job on stdin:
  {"template": str, "trim_blocks": bool, "lstrip_blocks": bool,
   "cases": [{"messages": [...], "add_generation_prompt": bool, "bos_token": str,
              "eos_token": str, "extra": {...}, "now": epoch_seconds}]}
and prints a JSON array with {"ok": true, "output": str} or {"ok": false, "error": str} per case.
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    """transformers' AssistantTracker without the tracking: {% generation %} renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def main():
    job = json.load(sys.stdin)
    env = ImmutableSandboxedEnvironment(trim_blocks=job["trim_blocks"], lstrip_blocks=job["lstrip_blocks"],
                                        extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    results = []
    try:
        template = env.from_string(job["template"])
    except Exception as e:  # noqa: BLE001 - report any compile error per case
        print(json.dumps([{"ok": False, "error": "compile: %s" % e}] * len(job["cases"])))
        return
    for case in job["cases"]:
        now = case.get("now", 0)
        env.globals["strftime_now"] = lambda fmt, now=now: datetime.fromtimestamp(now).strftime(fmt)
        try:
            out = template.render(messages=case["messages"], add_generation_prompt=case["add_generation_prompt"],
                                  bos_token=case["bos_token"], eos_token=case["eos_token"], **case.get("extra", {}))
            results.append({"ok": True, "output": out})
        except Exception as e:  # noqa: BLE001
            results.append({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
