"""Presets (one `Spec` per bundled problem), in the manner of CUTLASS's operation descriptions: a preset names its
bundled reference, its default init arguments and input shapes, and the options it takes with their defaults. The
planner renders it (kgen/emit.py: emit_preset)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REFERENCES = Path(__file__).parent / "references"


@dataclass(frozen=True)
class Param:
    """One template parameter: `kgen emit --<name> VALUE`."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple | None = None
    # Returns an error message for a bad value, or None; sees every resolved parameter of the spec.
    check: Callable[[Any, dict, "Spec"], str | None] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def power_of_two_block(value: int, params: dict, spec: "Spec") -> str | None:
    if value < 32 or value > 1024 or value & (value - 1):
        return f"--block-size must be a power of two in [32, 1024], got {value}"
    return None


def groups_divide_channels(value: int, params: dict, spec: "Spec") -> str | None:
    channels = spec.init_args[spec.channels_arg]
    if value < 1:
        return f"--groups must be positive, got {value}"
    if channels % value:
        return f"{spec.channels_arg}={channels} is not divisible by --groups {value}"
    return None


def block_size_param(default: int) -> Param:
    return Param("block_size", int, default, "threads per block of every kernel (power of two, 32..1024)",
                 check=power_of_two_block)


BLOCK_SIZE = block_size_param(256)

# The one-pass forward's block shape (groupnorm/onepass/onepass.cuh), for the planner and the fused preset alike:
# 512 threads, one block an SM, the fastest of the shapes measured at L1-35 on an H100 (7.20 ms, against 7.55 for
# two passes; `git show 9668871:benchmarks/h100/onepass_pipeline/README.md` has every shape tried).
ONEPASS_THREADS = 512
ONEPASS_BLOCKS_PER_SM = 1

# The forward's modes, for the presets' --forward and kgen emit --ref's alike.
FORWARDS = ("two-pass", "one-pass")

# How a region's autograd runs: "cpp", one C++ autograd node (ref/autograd.cpp.j2), the default (decision 39: the same
# kernels, less host time a call); "python", a torch.autograd.Function in the file.
AUTOGRAD_MODES = ("cpp", "python")
DEFAULT_AUTOGRAD = "cpp"


def forward_param(default: str) -> Param:
    return Param("forward", str, default,
                 "one-pass: each (sample, group) slice held in the shared memory of a team of blocks where the "
                 "planner finds it fits this GPU (Hopper bulk copies: sm_90 and newer; two passes elsewhere); "
                 "two-pass: statistics sweep, then normalise sweep. Channels-last input (--conv fast) always "
                 "takes two passes", choices=FORWARDS)


# L2-19 keeps two passes by default: one pass is slower there (H200: 7.310 against 7.082 ms,
# benchmarks/results/h200/presets/README.md).
FORWARD = forward_param("two-pass")


def groups_param(default: int) -> Param:
    return Param("groups", int, default, "GroupNorm group count the kernels are specialised for",
                 check=groups_divide_channels)


@dataclass(frozen=True)
class Spec:
    name: str
    title: str                      # e.g. "KernelBench L1-35: GroupNorm"
    reference_file: str             # a file in kgen/specs/references/, KernelBench format
    init_args: dict                 # the reference's get_init_inputs(), by __init__ argument name, in order
    input_shapes: tuple             # the reference's get_inputs() shapes
    channels_arg: str               # which init argument is the GroupNorm channel count
    groups_arg: str                 # which init argument is the GroupNorm group count
    params: tuple = field(default_factory=tuple)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def reference_path(self, params: dict) -> Path:
        """The reference an emitted file must equal (a spec may pick a variant by its parameters)."""
        return REFERENCES / self.reference_file

    def matching_reference_path(self, params: dict) -> Path:
        """The reference this parameter set computes exactly: reference_path, unless a variant is a
        deliberate approximation of it with a reference of its own (e.g. --gelu tanh)."""
        return self.reference_path(params)

    def init_args_for(self, params: dict) -> list:
        """get_init_inputs() of the emitted file: the reference's, with the group count the user asked for."""
        args = dict(self.init_args)
        args[self.groups_arg] = params["groups"]
        return list(args.values())

    def notes(self, params: dict) -> list[str]:
        """Warnings `emit` prints on stderr and writes into the header (e.g. a non-equivalent variant)."""
        return []
