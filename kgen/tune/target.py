"""What `kgen tune` tunes: a reference file (`kgen emit --ref`) or a preset (`kgen emit SPEC`), each able to trace its
plan, emit a candidate and say how to write the same bytes again."""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from kgen.ref.emit import emit_reference
from kgen.ref.trace import RefError, load_reference
from kgen.tune.candidates import KEYS, Choices


@dataclass
class Target:
    name: str                       # as the user gave it: a reference's path or a preset's name
    reference: str                  # the reference file the candidates are validated and timed against
    init_args: list | None = None   # Model's arguments where they are not the reference's get_init_inputs()
    takes: tuple = KEYS             # the options a candidate may set
    default: Choices = field(default_factory=Choices)   # the file `kgen emit` writes without options
    spec: str = ""                  # a preset's name ("" for a reference)
    params: dict = field(default_factory=dict)         # a preset's parameters besides the tuned ones

    def load(self):
        return load_reference(self.reference, init_args=self.init_args)

    def emit(self, choices: Choices, output) -> str:
        if not self.spec:
            return emit_reference(self.reference, output=output, **choices.options())[0]
        from kgen.emit import emit
        return emit(self.spec, {**self.params, **self.given(choices)}, output=output)[0]

    def given(self, choices: Choices) -> dict:
        """A preset's options for `choices`: those it takes."""
        return {k: v for k, v in choices.options().items() if k in self.takes}

    def command(self, choices: Choices, output: str | None = None) -> str:
        """The command that writes the same bytes again."""
        out = f" -o {shlex.quote(output)}" if output else ""
        if not self.spec:
            return f"kgen emit --ref {shlex.quote(self.name)} --choices {shlex.quote(choices.record())}{out}"
        flags = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in {**self.params, **self.given(choices)}.items())
        return f"kgen emit {self.spec} {flags}{out}"

    def key_fields(self) -> dict:
        return {"spec": self.spec, "params": self.params, "init_args": self.init_args}


def target_of(name: str) -> Target:
    """A reference file where `name` is one, else a preset of that name at its defaults; a clear error for neither."""
    if Path(name).is_file():
        return Target(name=name, reference=name)
    from kgen.specs import REGISTRY
    if name not in REGISTRY:
        raise RefError(f"kgen tune takes a reference file or a preset ({', '.join(REGISTRY)}), not {name!r}: no "
                       f"such file or preset")
    from kgen.params import resolve_params
    spec = REGISTRY[name]
    resolved = resolve_params(spec, {})
    takes = tuple(k for k in KEYS if spec.param(k) is not None)
    default = Choices(**{k: resolved[k] for k in takes})
    others = {k: v for k, v in resolved.items() if k not in takes}
    return Target(name=name, reference=str(spec.matching_reference_path(resolved)),
                  init_args=spec.init_args_for(resolved), takes=takes, default=default, spec=name, params=others)

