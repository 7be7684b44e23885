"""kgen's own kernels against the DRAM copy rate, forward AND backward, for every problem of a directory: emit
(`kgen emit --ref`), build in parallel, then one problem at a time on an otherwise idle GPU: the kgen kernels
of one forward and of one backward (torch.profiler), the bytes they must move at least (from the plan's
shapes, kgen.bench.family_table's traffic_bytes / backward_traffic_bytes), and a device copy of each byte count
timed in the same process. No correctness checks and no eager / torch.compile timings: benchmarks/family.py
does those; this is the short call that covers the whole family's kernel rates.

    python3 benchmarks/kernel_rates.py PROBLEMS_DIR OUT_DIR [--only 19,75] [--jobs 12]
                                                    [--emit-args "--conv fast"] [--build-only]

Writes OUT_DIR/kernel_rates.json and OUT_DIR/KERNEL_RATES.md.

    python3 benchmarks/kernel_rates.py --merge OUT_DIR RUN_DIR [RUN_DIR ...]

One table from several runs' kernel_rates.json: each problem's row from the last run that measured it, the run's
folder named beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from kgen.bench import ROOT
from kgen.bench.family import problem_id
from kgen.bench.family_table import backward_traffic_bytes, own_kernels, traffic_bytes


def measure(solution: str, reference: str, plan: list[str]) -> dict:
    """In its own process: kgen's forward and backward kernels of one problem, their bytes, and the copy rates."""
    import torch

    from kgen.bench.timing import backward_trace, copy_rate, kernel_trace, load

    ref_model, new_model, make_inputs = load(solution, reference, torch.device("cuda"))
    inputs = make_inputs()
    with torch.no_grad():
        forward = own_kernels(kernel_trace(lambda: new_model(*inputs), top=12))
    backward = own_kernels(backward_trace(new_model, make_inputs))
    two_pass = any("twopass" in k["kernel"] or "region_nhwc" in k["kernel"] for k in forward)
    result = {"forward_kernels": forward, "backward_kernels": backward, "two_pass": two_pass}
    for mode, nbytes in (("forward", traffic_bytes(plan, two_pass)), ("backward", backward_traffic_bytes(plan))):
        us = sum(k["us"] for k in result[f"{mode}_kernels"])
        copy = copy_rate(nbytes / 2 / 1e6) if nbytes else None
        result[mode] = {"us": round(us, 1), "bytes": nbytes,
                        "tb_per_s": round(nbytes / us / 1e6, 3) if us and nbytes else None, "copy": copy}
    result["gpu"] = torch.cuda.get_device_name()
    result["torch"] = torch.__version__
    return result


def emit_all(problems: list[Path], out: Path, emit_args: str) -> list[dict]:
    from kgen.ref.emit import emit_reference

    rows = []
    options = {"conv": "fast"} if "--conv fast" in emit_args else {}
    for path in problems:
        row = {"problem": problem_id(path), "reference": str(path), "emit_args": emit_args}
        text, _, plan = emit_reference(str(path), **options)
        solution = out / f"{row['problem']}.py"
        solution.write_text(text)
        row.update(solution=str(solution), plan=plan)
        rows.append(row)
    return rows


def rate(cell: dict | None) -> str:
    if not cell or not cell.get("tb_per_s"):
        return "-"
    text = f"{cell['us'] / 1e3:.3f} ms, {cell['bytes'] / 1e9:.2f} GB, {cell['tb_per_s']:.2f} TB/s"
    copy = cell.get("copy")
    if copy and copy.get("tb_per_s"):
        text += f" ({100 * cell['tb_per_s'] / copy['tb_per_s']:.0f}% of a same-size copy's {copy['tb_per_s']:.2f})"
    return text


def table(rows: list[dict]) -> str:
    lines = ["| problem | kgen's kernels, forward: time, bytes they must move, rate | backward: time, bytes, rate | "
             "backward kernels, longest first (us) |", "|---|---|---|---|"]
    for row in rows:
        result = row.get("result") or {}
        if not result:
            lines.append(f"| {row['problem']} | {row.get('error', 'not run')[:160]} | | |")
            continue
        kernels = "<br>".join(f"`{k['kernel'][:70]}` {k['us']}" for k in result["backward_kernels"][:4])
        lines.append(f"| {row['problem']} | {rate(result.get('forward'))} | {rate(result.get('backward'))} | {kernels} |")
    return "\n".join(lines) + "\n"


def merge(out: Path, runs: list[Path]) -> list[dict]:
    rows: dict[str, dict] = {}
    for run in runs:
        for row in json.loads((run / "kernel_rates.json").read_text()):
            if row.get("result"):
                rows[row["problem"]] = dict(row, problem=f"{row['problem']} ({run.name})")
    merged = [rows[k] for k in sorted(rows)]
    out.mkdir(parents=True, exist_ok=True)
    sources = ", ".join(str(run) for run in runs)
    (out / "KERNEL_RATES.md").write_text("# kgen's kernels against a same-size DRAM copy\n\nMerged from " + sources +
                                         " (benchmarks/kernel_rates.py --merge): each problem from the last run "
                                         "that measured it.\n\n" + table(merged))
    return merged


def main() -> int:
    if len(sys.argv) > 3 and sys.argv[1] == "--merge":
        merge(Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="?")
    parser.add_argument("out", nargs="?")
    parser.add_argument("--only", default="")
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--emit-args", default="")
    parser.add_argument("--build-only", action="store_true", help="emit and build, measure nothing (a call beside "
                        "other work; a later call on the warm machine measures)")
    parser.add_argument("--measure", nargs=3, metavar=("SOLUTION", "REFERENCE", "PLAN_JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        solution, reference, plan = args.measure
        print(json.dumps(measure(solution, reference, json.loads(Path(plan).read_text()))))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wanted = {f"L2-{n}" if not n.startswith("L") else n for n in filter(None, args.only.split(","))}
    problems = [p for p in sorted(Path(args.problems).glob("level*.py"))
                if not wanted or problem_id(p) in wanted or problem_id(p).replace("L1-", "L2-") in wanted]
    rows = emit_all(problems, out, args.emit_args)
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
    build = subprocess.run([sys.executable, "-m", "kgen.bench.prebuild", "-j", str(args.jobs)] +
                           [r["solution"] for r in rows], capture_output=True, text=True, env=env)
    print(build.stdout[-600:] + build.stderr[-600:], flush=True)
    if args.build_only:
        return build.returncode
    for row in rows:
        plan_file = out / f"{row['problem']}.plan.json"
        plan_file.write_text(json.dumps(row["plan"]))
        run = subprocess.run([sys.executable, __file__, "--measure", row["solution"], row["reference"], str(plan_file)],
                             capture_output=True, text=True, env=env, timeout=300)
        if run.returncode == 0:
            row["result"] = json.loads(run.stdout.strip().splitlines()[-1])
            print(f"{row['problem']}: forward {rate(row['result']['forward'])}; backward "
                  f"{rate(row['result']['backward'])}", flush=True)
        else:
            row["error"] = (run.stdout + run.stderr)[-400:]
            print(f"{row['problem']}: FAILED {row['error'][-200:]}", flush=True)
        (out / "kernel_rates.json").write_text(json.dumps(rows, indent=1))
    command = "python3 benchmarks/kernel_rates.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    (out / "KERNEL_RATES.md").write_text(f"# kgen's kernels against a same-size DRAM copy\n\n`{command}`\n\n" + table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
