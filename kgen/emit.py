"""Preset + parameters -> one self-contained solution file.

A preset (kgen/specs/) is a bundled reference plus default options: `kgen emit groupnorm --groups 8` is the
planner (kgen/ref/) on kgen/specs/references/level1_35_groupnorm.py, Model built with 8 groups. The one option
the planner does not take yet, L2-19's `--conv fused` (kgen's wgmma ConvTranspose2d), renders the preset's own
templates: its CUDA is assembled from building blocks (kgen/templates/cuda/) followed by the preset's bindings
template, the Python around it a Jinja template extending kgen/templates/solution.py.j2. Rendering is
deterministic: same arguments, same bytes.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import jinja2

from kgen import __version__
from kgen.header import render_header_fields
from kgen.params import resolve_params
from kgen.specs import get_spec
from kgen.specs.base import Spec

TEMPLATES = Path(__file__).parent / "templates"

# What KernelBench's static checker rejects anywhere in the file outside `#` / `//` comments; an
# emitted file must never contain them, so a template that would produce one fails at emit time.
_FORBIDDEN = [re.compile(p) for p in (r"\btry\s*:", r"\bexcept\b", r"\bpass\b")]


class TemplateError(RuntimeError):
    """A template rendered into something an emitted file must not be (a kgen bug, not a user error)."""


def _environment() -> jinja2.Environment:
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


def cuda_source(spec: Spec, params: dict, env: jinja2.Environment) -> str:
    parts = [(TEMPLATES / "cuda" / name).read_text() for name in spec.cuda_parts_for(params)]
    parts.append(env.get_template(spec.bindings).render(**params, **spec.template_context(params)))
    return "\n".join(parts)


def render(spec: Spec, params: dict) -> str:
    """Renders an already-resolved parameter set (see kgen.params.resolve_params)."""
    env = _environment()
    context = dict(
        spec.template_context(params),
        spec=spec,
        params=params,
        version=__version__,
        command=emit_command(spec, params),
        params_line=" ".join(f"{k}={v}" for k, v in params.items()),
        summary=spec.summary_for(params),
        notes=spec.notes(params),
        header_fields=render_header_fields(spec.name, params, __version__),
        cuda_source=cuda_source(spec, params, env),
        functions=json.dumps(spec.functions_for(params)),
        input_shapes=[list(shape) for shape in spec.input_shapes],
        init_args=repr(spec.init_args_for(params)),
    )
    text = env.get_template(spec.template).render(**context)
    _check_static_rules(text)
    return text


def static_rule_violation(text: str) -> tuple[int, str] | None:
    """(line number, line) of the first line KernelBench's static checker would reject, or None."""
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0].split("//", 1)[0]
        if any(pattern.search(code) for pattern in _FORBIDDEN):
            return number, line.strip()
    return None


def _check_static_rules(text: str) -> None:
    violation = static_rule_violation(text)
    if violation is not None:
        number, line = violation
        raise TemplateError(f"emitted line {number} would fail KernelBench's static checker (try / except / "
                            f"pass): {line}")


def emit(spec_name: str, given: dict | None = None, output=None, stage=None) -> tuple[str, list[str]]:
    """Resolves and checks the parameters, renders the file. Returns (text, notes for stderr). `output`: the file
    the text is for (None: stdout), which the header names the bundled reference relative to.
    Raises UnknownSpec or ParamError (one-line messages) before anything is rendered, RefError from the planner."""
    spec = get_spec(spec_name)
    params = resolve_params(spec, given or {})
    if not spec.planned(params):
        return render(spec, params), spec.notes(params)
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
