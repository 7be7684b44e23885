"""The spec registry. Every module in this package that defines `SPEC` is registered, in file-name order:
adding a preset means adding a spec module and its bundled reference, nothing else."""
from __future__ import annotations

import importlib
import pkgutil

from kgen.specs.base import Spec

DEFAULT_SPEC = "convt-gelu-groupnorm"


def _discover() -> dict[str, Spec]:
    found: dict[str, Spec] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name in ("base", "references"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        spec = getattr(module, "SPEC", None)
        if isinstance(spec, Spec):
            found[spec.name] = spec
    return found


REGISTRY: dict[str, Spec] = _discover()


class UnknownSpec(KeyError):
    def __str__(self) -> str:
        return f"unknown spec {self.args[0]!r}; known: {', '.join(sorted(REGISTRY))}"


def get_spec(name: str) -> Spec:
    if name not in REGISTRY:
        raise UnknownSpec(name)
    return REGISTRY[name]
