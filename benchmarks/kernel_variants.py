"""A/B of template parameters inside one emitted solution: each variant is the file with text substitutions
(a constant changed), built in parallel, then timed in one process on the same inputs: the CUDA time a call of
the kernels whose names match --kernel (each one's launches in a call summed), under torch.profiler, and the output's
distance to the base file's.

    python3 benchmarks/kernel_variants.py SOLUTION.py --kernel rows_forward \\
        --variant "in_flight_4:kRowsPacksInFlight = 8;=>kRowsPacksInFlight = 4;" [--variant ...] [--json OUT]
        [--dtype bf16|fp16]

A variant is NAME:OLD=>NEW[|||OLD=>NEW...]; every OLD must occur in the file (an error otherwise, before any
build). --file NAME=PATH adds another whole file as a variant (the same reference emitted from another checkout, say),
for changes no text substitution expresses. The base file runs as the variant `base`. --backward times forward and
backward calls (the output's gradient fixed) and compares the input's and every parameter's gradient with the base
file's as well;
--rounds R times the variants in turn R times and reports each kernel's median over the rounds (drift
between variants spread evenly).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / ".build" / "variants"
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def parse_variant(spec: str) -> tuple[str, list[tuple[str, str]]]:
    name, _, edits = spec.partition(":")
    pairs = []
    for edit in edits.split("|||"):
        old, sep, new = edit.partition("=>")
        if not sep or not old:
            raise SystemExit(f"variant {name!r}: an edit is OLD=>NEW, got {edit!r}")
        pairs.append((old, new))
    return name, pairs


def write_variants(base: Path, variants: list[tuple[str, list[tuple[str, str]]]]) -> dict[str, Path]:
    text = base.read_text()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    files = {"base": base}
    for name, pairs in variants:
        changed = text
        for old, new in pairs:
            if old not in changed:
                raise SystemExit(f"variant {name!r}: {old!r} is not in {base}")
            changed = changed.replace(old, new)
        path = OUT_DIR / f"{base.stem}__{name}.py"
        path.write_text(changed)
        files[name] = path
    return files


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"variant_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_call(model, inputs, grad) -> None:
    """One forward (no_grad), or forward and backward with the output's gradient `grad`."""
    if grad is None:
        with torch.no_grad():
            model(*inputs)
    else:
        model(*inputs).backward(grad)


def kernel_times(model, inputs, grad, pattern: re.Pattern, calls: int) -> tuple[dict[str, float], dict[str, float]]:
    """GPU us a call of each matching kernel (every launch of it in `calls` calls, over `calls`: a kernel launched
    twice a call counts twice), and its launches a call."""
    for _ in range(3):
        run_call(model, inputs, grad)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            run_call(model, inputs, grad)
        torch.cuda.synchronize()
    times: dict[str, float] = {}
    launches: dict[str, float] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA and pattern.search(event.name):
            times[event.name] = times.get(event.name, 0.0) + event.time_range.elapsed_us() / calls
            launches[event.name] = launches.get(event.name, 0.0) + 1 / calls
    return times, launches


def launch_note(launches: float) -> str:
    """" (N launches)" where a kernel runs other than once a call."""
    return "" if round(launches, 2) == 1 else f" ({round(launches, 2):g} launches)"


def results_of(model, inputs, grad) -> list[torch.Tensor]:
    """The output, or (backward) the output and the gradients of the inputs and every parameter."""
    if grad is None:
        with torch.no_grad():
            return [model(*inputs).float()]
    for t in [*inputs, *model.parameters()]:
        t.grad = None
    out = model(*inputs)
    out.backward(grad)
    grads = [t.grad for t in [*inputs, *model.parameters()] if t.grad is not None]
    return [out.detach().float(), *(g.float() for g in grads)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("solution")
    parser.add_argument("--kernel", required=True, help="regular expression on the kernel names")
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--file", action="append", default=[], metavar="NAME=PATH",
                        help="another emitted file of the same reference, timed as variant NAME")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--backward", action="store_true", help="time forward and backward calls")
    parser.add_argument("--json")
    parser.add_argument("--build-only", action="store_true", help="write and build the variants, time nothing")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32",
                        help="the model and its floating inputs moved to this dtype (as KernelBench's --precision)")
    args = parser.parse_args()
    dtype = DTYPES[args.dtype]
    base = Path(args.solution).resolve()
    files = write_variants(base, [parse_variant(v) for v in args.variant])
    for spec in args.file:
        name, sep, path = spec.partition("=")
        if not sep or not name or name in files or not Path(path).is_file():
            raise SystemExit(f"--file {spec!r}: NAME=PATH, a new name and an existing file")
        files[name] = Path(path).resolve()
    build = subprocess.run([sys.executable, "-m", "kgen.bench.prebuild", "-j", str(len(files)),
                            *map(str, files.values())], cwd=ROOT)
    if build.returncode != 0:
        print("some variants did not build (prebuild's output above); the others are timed", flush=True)
    if args.build_only:
        return
    pattern = re.compile(args.kernel)
    loaded, results, inputs, grad, reference = {}, {}, None, None, None
    for name, path in files.items():
        try:
            module = load(path)
        except Exception as error:  # a variant that does not build is reported and left out
            print(f"{name:24s} not built: {str(error).splitlines()[0][:120]}", flush=True)
            results[name] = {"error": str(error)[:2000]}
            continue
        if inputs is None:
            torch.manual_seed(0)
            inputs = [(t.cuda().to(dtype) if t.is_floating_point() else t.cuda())
                      .requires_grad_(args.backward and t.is_floating_point()) for t in module.get_inputs()]
        torch.manual_seed(1)
        model = module.ModelNew(*module.get_init_inputs()).cuda().to(dtype)
        if args.backward and grad is None:
            with torch.no_grad():
                out = model(*inputs)
            torch.manual_seed(2)
            grad = torch.randn(out.shape, device="cuda").to(out.dtype)
        values = results_of(model, inputs, grad)
        if reference is None:
            reference = values
        diff = max((v - r).abs().max().item() for v, r in zip(values, reference))
        loaded[name] = model
        results[name] = {"max_abs_diff_vs_base": diff, "rounds": []}
    for _ in range(args.rounds):
        for name, model in loaded.items():
            times, launches = kernel_times(model, inputs, grad, pattern, args.calls)
            results[name]["rounds"].append(times)
            results[name]["launches"] = launches
    for name in loaded:
        rounds = results[name]["rounds"]
        times = {k: statistics.median(r.get(k, 0.0) for r in rounds) for k in set().union(*rounds)}
        results[name]["kernels_us"] = times
        total = sum(times.values())
        spread = [sum(r.values()) for r in rounds]
        print(f"{name:24s} {total:9.1f} us (rounds {min(spread):.1f}-{max(spread):.1f})  "
              f"(max|diff| vs base {results[name]['max_abs_diff_vs_base']:.2e})  "
              + ", ".join(f"{k[:60]}: {v:.1f}{launch_note(results[name]['launches'].get(k, 1.0))}"
                          for k, v in sorted(times.items())), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"solution": str(args.solution), "kernel": args.kernel,
                                               "variants": args.variant, "files": args.file,
                                               "backward": args.backward, "dtype": args.dtype,
                                               "rounds": args.rounds, "results": results,
                                               "gpu": torch.cuda.get_device_name(), "torch": torch.__version__},
                                              indent=1))


if __name__ == "__main__":
    main()
