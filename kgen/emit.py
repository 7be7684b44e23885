"""Preset + parameters -> one self-contained solution file: the one renderer.

A preset (kgen/specs/) is a bundled reference plus default options: `kgen emit groupnorm --groups 8` is the
planner (kgen/ref/) on kgen/specs/references/level1_35_groupnorm.py, Model built with 8 groups. The planner renders
every file from the templates under kgen/templates/ (ref/: the Python and the bindings; cuda/: the kernels' building
blocks). Rendering is deterministic: same arguments, same bytes.
"""
from __future__ import annotations

import re
from pathlib import Path

import jinja2

from kgen.params import resolve_params
from kgen.specs import get_spec
from kgen.specs.base import Spec

TEMPLATES = Path(__file__).parent / "templates"

# What KernelBench's static checker rejects anywhere in the file outside `#` / `//` comments; an
# emitted file must never contain them, so a template that would produce one fails at emit time.
_FORBIDDEN = [re.compile(p) for p in (r"\btry\s*:", r"\bexcept\b", r"\bpass\b")]


def environment() -> jinja2.Environment:
    """The Jinja environment every emitted file is rendered in (strict: an undefined name is an error)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def emit_command(spec: Spec, params: dict) -> str:
    flags = " ".join(f"{spec.param(name).flag} {value}" for name, value in params.items())
    return f"kgen emit {spec.name} {flags}".strip()


def static_rule_violation(text: str) -> tuple[int, str] | None:
    """(line number, line) of the first line KernelBench's static checker would reject, or None."""
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0].split("//", 1)[0]
        if any(pattern.search(code) for pattern in _FORBIDDEN):
            return number, line.strip()
    return None


def emit(spec_name: str, given: dict | None = None, output=None, stage=None) -> tuple[str, list[str]]:
    """Resolves and checks the parameters, renders the file. Returns (text, notes for stderr). `output`: the file
    the text is for (None: stdout), which the header names the bundled reference relative to.
    Raises UnknownSpec or ParamError (one-line messages) before anything is rendered, RefError from the planner."""
    spec = get_spec(spec_name)
    params = resolve_params(spec, given or {})
    return emit_preset(spec, params, output, stage)


def emit_preset(spec: Spec, params: dict, output=None, stage=None) -> tuple[str, list[str]]:
    """The planner on the preset's bundled reference (the one this parameter set computes exactly), with the
    preset's options. Returns (text, notes): the preset's own notes, then the plan's."""
    from kgen.ref.emit import PresetCall, emit_reference

    reference = spec.matching_reference_path(params)
    call = PresetCall(name=spec.name, title=spec.title, params=params, command=emit_command(spec, params),
                      init_args=spec.init_args_for(params))
    text, plan_notes, _ = emit_reference(str(reference), params["block_size"], conv=params.get("conv", "exact"),
                                         forward=params.get("forward", "two-pass"), output=output, stage=stage,
                                         display=f"kgen/specs/references/{reference.name}", preset=call)
    return text, spec.notes(params) + plan_notes
