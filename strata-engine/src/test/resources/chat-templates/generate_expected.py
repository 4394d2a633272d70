#!/usr/bin/env python3
"""Regenerates expected.json: every case of cases.json rendered by the reference renderer (the
model templates' cases, and the small inline templates that pin single features).

The reference is Python's jinja2 set up the way Hugging Face transformers' apply_chat_template
sets it up: an immutable sandboxed environment with trim_blocks and lstrip_blocks, the
loopcontrols extension, tojson as json.dumps(ensure_ascii=False), raise_exception raising a
TemplateError, strftime_now, and render(messages=..., tools=..., documents=None,
add_generation_prompt=..., bos_token=..., eos_token=..., **kwargs).

Not run by the build; run it by hand (python3 generate_expected.py, Jinja2 3.1.x) after changing
cases.json or a template, and commit the result.
"""
import json
import os
from datetime import datetime

from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "..", "..", "..", "main", "resources", "dev", "strata", "engine", "synth", "chat-templates")


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def case_name(case):
    name = case["conversation"] + ("-gen" if case["add_generation_prompt"] else "-nogen")
    if case.get("tools"):
        name += "-tools"
    for key, value in sorted(case.get("kwargs", {}).items()):
        if key != "date_string":
            name += "-" + key + "=" + json.dumps(value)
    return name


def main():
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as f:
        cases = json.load(f)
    env = environment()
    expected = {}
    for template_name, spec in cases["templates"].items():
        with open(os.path.join(TEMPLATES, template_name + ".jinja"), encoding="utf-8", newline="") as f:
            template = env.from_string(f.read())
        out = {}
        for case in spec["cases"]:
            variables = dict(case.get("kwargs", {}))
            variables.update(messages=cases["conversations"][case["conversation"]],
                             tools=cases["tools"] if case.get("tools") else None, documents=None,
                             add_generation_prompt=case["add_generation_prompt"],
                             bos_token=spec["bos_token"], eos_token=spec["eos_token"])
            try:
                out[case_name(case)] = {"text": template.render(**variables)}
            except TemplateError as e:
                out[case_name(case)] = {"error": str(e)}
        expected[template_name] = out
    inline = {}
    for name, spec in cases["inline"].items():
        try:
            inline[name] = {"text": env.from_string(spec["template"]).render(**spec["vars"])}
        except TemplateError as e:
            inline[name] = {"error": str(e)}
    expected["inline"] = inline
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
