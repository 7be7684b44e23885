"""`kgen validate`'s arguments, checked before anything runs: a bad one is a one-line `ArgumentError` (the
command line prints it as `kgen: error: ...`, exit 2), not a traceback from the middle of the run or a report
followed by a crash.

    init_args(text)                  --init-args: a JSON list
    input_shape(text)                --input-shape: a JSON list of non-negative ints
    check_input_shapes(...)          as many shapes as the reference's tensor inputs, each of the same rank
    check_output_folder(path)        --json: its folder exists (the report is written after the whole run)
    run_precision(precision, autocast)   --precision and --autocast: one of the two at most
    default_tolerance(precision, autocast)   KernelBench's tolerance for the run's dtype (--atol, --rtol unset)
"""
from __future__ import annotations

import json
import os
from pathlib import Path

# The name the reference is imported under to read its input shapes (removed from sys.modules afterwards).
_PROBE_MODULE = "kgen_validate_arguments_reference"

PRECISIONS = ("fp32", "fp16", "bf16")    # --precision: the dtype the models and floating inputs are moved to
AUTOCAST_DTYPES = ("fp16", "bf16")       # --autocast: the dtype every forward autocasts to
# kernelbench/eval.py get_tolerance_for_precision: atol = rtol, by the dtype the run computes in
KERNELBENCH_TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}


class ArgumentError(ValueError):
    """A bad command-line argument: a one-line message."""


def _json(text: str, option: str, example: str):
    try:
        return json.loads(text)
    except ValueError as error:
        raise ArgumentError(f"{option} {text!r} is not JSON ({error.msg}): give a JSON list, e.g. {example}") from None


def init_args(text: str | None) -> list | None:
    """--init-args: the arguments Model(*...) is built with, so a JSON list (None: the reference's own)."""
    if text is None:
        return None
    value = _json(text, "--init-args", "'[96, 12]'")
    if not isinstance(value, list):
        raise ArgumentError(f"--init-args {text!r} is a JSON {type(value).__name__}, not a list: give "
                            "get_init_inputs()'s list, e.g. '[96, 12]'")
    return value


def input_shape(text: str) -> list[int]:
    """--input-shape: one tensor's shape, a JSON list of non-negative ints (bools are no sizes)."""
    value = _json(text, "--input-shape", "'[4, 96, 33, 17]'")
    if not isinstance(value, list) or not all(type(size) is int and size >= 0 for size in value):
        raise ArgumentError(f"--input-shape {text!r} is not a list of non-negative integers: give a tensor's "
                            "shape, e.g. '[4, 96, 33, 17]'")
    return value


def check_output_folder(path: str | None, option: str = "--json") -> None:
    """A file written at the end of the run needs its folder now: found missing afterwards, the whole run is lost."""
    if path is None:
        return
    folder = Path(path).parent
    if not folder.is_dir():
        raise ArgumentError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ArgumentError(f"{option} {path}: the folder {folder} is not writable")


def run_precision(precision: str | None, autocast: str | None) -> tuple[str, str | None]:
    """(--precision, --autocast) as the run takes them: (the precision, fp32 where not given; the autocast dtype
    or None). The two together are refused: --precision moves the model and its inputs to the dtype, --autocast
    keeps them float32 and casts inside each forward."""
    if precision is not None and autocast is not None:
        raise ArgumentError(f"--precision {precision} and --autocast {autocast} together: --precision moves the model "
                            "and its inputs to that dtype, --autocast keeps them float32 and runs each forward under "
                            "torch.autocast; give one")
    if precision is not None and precision not in PRECISIONS:
        raise ArgumentError(f"--precision {precision!r}: give one of {', '.join(PRECISIONS)}")
    if autocast is not None and autocast not in AUTOCAST_DTYPES:
        raise ArgumentError(f"--autocast {autocast!r}: give one of {', '.join(AUTOCAST_DTYPES)}")
    return precision or "fp32", autocast


def default_tolerance(precision: str, autocast: str | None) -> float:
    """atol = rtol where --atol / --rtol are not given: KernelBench's for the dtype the run computes in."""
    return KERNELBENCH_TOLERANCE[autocast or precision]


def check_input_shapes(shapes: list[list[int]], reference_shapes: list | None) -> None:
    """As many --input-shape as the reference's get_inputs() has tensors, each of the rank of the tensor it
    replaces. `reference_shapes`: those tensors' shapes in order, or None where the reference could not be read
    here (the run itself then says what is wrong with it)."""
    if not shapes or reference_shapes is None:
        return
    if len(shapes) != len(reference_shapes):
        raise ArgumentError(f"{len(shapes)} --input-shape given, and the reference's get_inputs() returns "
                            f"{len(reference_shapes)} tensor{'s' if len(reference_shapes) != 1 else ''} "
                            f"{_listed(reference_shapes)}: give one per tensor, in order")
    for number, (given, theirs) in enumerate(zip(shapes, reference_shapes), 1):
        if len(given) != len(theirs):
            raise ArgumentError(f"--input-shape {json.dumps(given)} has rank {len(given)}, and the reference's tensor "
                                f"input {number} is {list(theirs)} (rank {len(theirs)}): give a shape of rank "
                                f"{len(theirs)}")


def _listed(shapes: list) -> str:
    return ", ".join(str(list(s)) for s in shapes) if shapes else "(none)"


def reference_tensor_shapes(file: str, ref: str | None) -> list | None:
    """The shapes of the tensors among the reference's get_inputs(), found on the meta device (nothing is
    allocated), or None where the reference cannot be found or imported here."""
    import sys

    from kgen.validate.context import describe_inputs, import_file
    from kgen.validate.core import NoReference, resolve_reference

    try:
        path, _ = resolve_reference(Path(file).read_text(), ref, Path(file))
    except (OSError, ValueError, NoReference):
        return None
    try:
        module = import_file(path, _PROBE_MODULE)
        specs = describe_inputs(module.get_inputs)
    except Exception:  # noqa: BLE001 (a reference that does not import is the run's to report)
        return None
    finally:
        sys.modules.pop(_PROBE_MODULE, None)
    return [list(s.shape) for s in specs if s.is_tensor]
