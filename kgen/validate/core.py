"""`validate(...)`: the whole validation of one solution file, and its exit code.

    static checks (in this process, no GPU)  ->  runtime checks (a child process, needs CUDA)  ->  report

Exit codes: 0 every check passed; 1 a check failed; 2 the file is broken (does not parse, lacks ModelNew /
get_inputs / get_init_inputs, does not build or import, crashes, hangs); 3 no CUDA device, so only the
static checks ran and nothing about correctness is known. A static failure without CUDA is still 1.
"""
from __future__ import annotations

import sys
from pathlib import Path

from kgen.validate.checks import NOT_RUN_NO_CUDA, broken, exit_code, skipped
from kgen.validate.report import Report, render
from kgen.validate.runtime import run_child
from kgen.validate.static import static_checks


RUNTIME_DEVICE = "cuda"   # the tests run the runtime path on "cpu" (with cuda_available patched)


class NoReference(Exception):
    """The reference could not be determined (no header and no --ref, unknown spec, bad header)."""


def resolve_reference(source: str, ref, solution: Path | None = None) -> tuple[Path, object]:
    """The reference's path, and the solution's kgen header (or None). A file emitted with
    `kgen emit --ref` names its reference and the SHA-256 of its text: it is looked up from the solution's
    folder first, then the other places _reference_candidates lists, and must still have that text."""
    from kgen.header import parse_header

    try:
        header = parse_header(source)
    except ValueError as error:
        header = None
        if ref is None:
            raise NoReference(f"unreadable kgen header ({error}): pass --ref REFERENCE.py") from None
    if ref is not None:
        return Path(ref), header
    if header is None:
        raise NoReference("no kgen header: pass --ref REFERENCE.py")
    if header.reference is not None:
        return _emitted_reference(header, solution), header
    from kgen.specs import UnknownSpec, get_spec

    try:
        return Path(get_spec(header.spec).reference_path(header.params)), header
    except UnknownSpec as error:
        raise NoReference(f"kgen header names {error}; pass --ref REFERENCE.py") from None


def _emitted_reference(header, solution: Path | None) -> Path:
    """The first place holding the reference with the text the header's SHA-256 names, whichever working folder
    `kgen validate` runs from. A file there with other text is the error only where no place has the right one."""
    written = Path(header.reference)
    found = [p for p in _reference_candidates(header, solution) if p.is_file()]
    if not found:
        raise NoReference(f"the reference this file was emitted from, {written}, is not there (nor beside the "
                          "file): pass --ref REFERENCE.py")
    if not header.reference_sha256:
        return _tidy(found[0])
    digests = {p: _text_digest(p) for p in found}
    match = next((p for p in found if digests[p] == header.reference_sha256), None)
    if match is None:
        changed = found[0]
        raise NoReference(f"{changed} has changed since this file was emitted from it (SHA-256 "
                          f"{(digests[changed] or 'unreadable')[:12]}..., header {header.reference_sha256[:12]}...): "
                          "re-emit, or pass --ref REFERENCE.py")
    return _tidy(match)


def _tidy(path: Path) -> Path:
    """`out/../refs/model.py` as `refs/model.py` for the report, where both name the same file (a `..` after a
    symbolic link need not)."""
    import os

    short = Path(os.path.normpath(path))
    return short if short.is_file() and os.path.samefile(short, path) else path


def _text_digest(path: Path) -> str | None:
    """SHA-256 of the file's text as `kgen emit --ref` hashed it (trace.load_reference); None if unreadable."""
    import hashlib

    try:
        return hashlib.sha256(path.read_text().encode()).hexdigest()
    except (OSError, UnicodeDecodeError):
        return None


def _reference_candidates(header, solution: Path | None) -> list[Path]:
    """Where the reference a header names may be, in order: relative to the solution's folder (how `emit -o FILE`
    records it); as written, from the working folder; its absolute path (recorded by an emit to stdout); relative to
    each folder above the solution's (an emit to stdout, redirected into a folder below the one it ran in, as
    files from older kgen versions name it); beside the solution under its own name (the pair copied together)."""
    written = Path(header.reference)
    places = [written]
    if header.reference_abspath:
        places.append(Path(header.reference_abspath))
    if solution is not None:
        folder = solution.parent
        places = [folder / written] + places + [above / written for above in folder.resolve().parents] + \
            [folder / written.name]
    return list(dict.fromkeys(places))


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _torch_version() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.__version__


def run_validation(report: Report, path: Path, ref, settings: dict, timeout: float, out=sys.stdout,
                   progress=None) -> None:
    """Fill the report's checks (and info, bench); the exit code is derived from them afterwards."""
    try:
        source = path.read_text()
    except OSError as error:
        report.checks.append(broken("read solution", f"cannot read {path}: {error.strerror or error}"))
        return
    try:
        ref_path, header = resolve_reference(source, ref, Path(path))
    except NoReference as error:
        report.checks.append(broken("reference", str(error)))
        return
    report.reference = str(ref_path)
    if header is not None:
        report.spec, report.params = header.spec, header.params
    try:
        ref_source = ref_path.read_text()
    except OSError as error:
        report.checks.append(broken("reference", f"cannot read {ref_path}: {error.strerror or error}"))
        return
    report.checks += static_checks(source, ref_source)
    if any(c.ok is False and c.broken for c in report.checks):
        report.checks.append(skipped("runtime checks", "not run: the file is broken"))
        return
    if not cuda_available():
        report.checks.append(skipped("runtime checks", NOT_RUN_NO_CUDA))
        return
    config = {"solution": str(path.resolve()), "reference": str(ref_path.resolve()), "device": RUNTIME_DEVICE,
              **settings}
    out.write(f"kgen validate: {path}: building and running in a child process (timeout {timeout:g} s)...\n")
    out.flush()
    result = run_child(config, timeout, progress=progress)
    report.runtime_ran = result.ran
    report.checks += result.checks
    report.info.update(result.info)
    report.bench = result.bench
    report.kernelbench = result.kernelbench
    report.kernels = result.kernels


def validate(path, ref=None, trials=3, atol=None, rtol=None, backward=True, bench=False, json_path=None,
             timeout=900.0, init_args=None, input_shapes=None, tf32=True, precision=None, autocast=None,
             channels_last=False, out=sys.stdout, progress=None) -> int:
    """Validate one solution file against its reference; print the report on `out`, write it as JSON to
    `json_path` if given, and return the exit code (0 pass, 1 fail, 2 broken, 3 runtime not run).
    `progress`: a text stream (the CLI gives stderr) on which the stages are shown as they start.
    `tf32=False`: the child turns TF32 off for cuDNN and matmuls before anything runs (reference, solution,
    KernelBench's protocol and the timings alike).
    `precision` "fp16" | "bf16": every check (and the timings) with both models and the floating inputs moved to
    that dtype; `autocast` "fp16" | "bf16": float32 models and inputs, every forward under torch.autocast; one of
    the two at most (arguments.ArgumentError). `channels_last`: both models' and the floating inputs' 4-d and 5-d
    tensors laid out channels-last (torch.channels_last, channels_last_3d) for every check and the timings.
    `atol`, `rtol` None: KernelBench's tolerance for the dtype the run
    computes in (1e-4 at fp32, 1e-2 at fp16 and bf16)."""
    from kgen.validate.arguments import default_tolerance, run_precision

    precision, autocast = run_precision(precision, autocast)
    tol = default_tolerance(precision, autocast)
    settings = {"trials": int(trials), "atol": float(tol if atol is None else atol),
                "rtol": float(tol if rtol is None else rtol), "backward": bool(backward),
                "bench": bool(bench), "init_args": None if init_args is None else list(init_args),
                "input_shapes": None if input_shapes is None else [list(s) for s in input_shapes],
                "tf32": bool(tf32), "precision": precision, "autocast": autocast,
                "channels_last": bool(channels_last)}
    report = Report(file=str(path), settings={**settings, "timeout": float(timeout)},
                    info={"torch_version": _torch_version()})
    run_validation(report, Path(path), ref, settings, float(timeout), out, progress)
    report.exit_code = exit_code(report.checks, report.runtime_ran)
    out.write(render(report))
    out.flush()
    if json_path is not None:
        report.write_json(json_path)
    return report.exit_code
