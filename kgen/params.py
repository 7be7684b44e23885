"""Resolving and checking `emit` parameters against a spec, before anything is rendered or written."""
from __future__ import annotations

from kgen.specs.base import Spec


class ParamError(ValueError):
    """A one-line, user-facing error about an emit parameter."""


def resolve_params(spec: Spec, given: dict) -> dict:
    """Defaults filled in, types and allowed values checked. `given` holds only what the user set."""
    unknown = [name for name in given if spec.param(name) is None]
    if unknown:
        flags = ", ".join("--" + n.replace("_", "-") for n in unknown)
        taken = ", ".join(p.flag for p in spec.params)
        raise ParamError(f"spec {spec.name!r} does not take {flags} (it takes {taken})")
    resolved = {}
    for p in spec.params:
        value = given.get(p.name, p.default)
        if not isinstance(value, p.type) or isinstance(value, bool):
            value = _coerce(p, value)
        if p.choices is not None and value not in p.choices:
            raise ParamError(f"{p.flag} must be one of {', '.join(map(str, p.choices))}, got {value!r}")
        resolved[p.name] = value
    for p in spec.params:
        if p.check is not None:
            message = p.check(resolved[p.name], resolved, spec)
            if message:
                raise ParamError(message)
    return resolved


def _coerce(p, value):
    if p.type is int:
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        raise ParamError(f"{p.flag} takes an integer, got {value!r}")
    return p.type(value)
