"""Variants of the cluster backward (kgen/templates/cuda/gn_region_cluster.cuh) timed side by side, one process
per (problem, variant): each problem's solution is emitted once, then copied with one of the kernel's constants
changed in its CUDA text, built in parallel, and measured as benchmarks/kernel_rates.py measures (kgen's backward
kernels from a torch.profiler trace, against the same-size copy rate of that process).

    PYTHONPATH=. python3 benchmarks/cluster_probe.py PROBLEMS_DIR OUT_DIR --only 85,92 [--variants base,t512]

Writes OUT_DIR/cluster_probe.json and prints one line per (problem, variant)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.family import problem_id  # noqa: E402
from benchmarks.kernel_rates import emit_all, rate  # noqa: E402

# name -> (constant's line as the template writes it, its replacement); "base" is the template as it is
VARIANTS = {
    "base": None,
    "b100": ("constexpr int64_t kClusterBlockBytes = 64 * 1024;", "constexpr int64_t kClusterBlockBytes = 100 * 1024;"),
    "b32": ("constexpr int64_t kClusterBlockBytes = 64 * 1024;", "constexpr int64_t kClusterBlockBytes = 32 * 1024;"),
    "twopass": ("constexpr int64_t kClusterMinPlane = 512;", "constexpr int64_t kClusterMinPlane = int64_t(1) << 62;"),
}


def variant_text(text: str, name: str) -> str:
    change = VARIANTS[name]
    if change is None:
        return text
    old, new = change
    assert text.count(old) == 1, f"variant {name}: '{old}' not found once in the solution"
    return text.replace(old, new) + f"\n# cluster_probe variant: {name}\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("problems")
    parser.add_argument("out")
    parser.add_argument("--only", required=True)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--jobs", type=int, default=8)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wanted = {f"L2-{n}" if not n.startswith("L") else n for n in args.only.split(",")}
    problems = [p for p in sorted(Path(args.problems).glob("level*.py")) if problem_id(p) in wanted]
    runs = []
    for row in emit_all(problems, out, ""):
        text = Path(row["solution"]).read_text()
        for name in args.variants.split(","):
            path = out / f"{row['problem']}_{name}.py"
            path.write_text(variant_text(text, name))
            runs.append(dict(row, variant=name, solution=str(path)))
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
    build = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "prebuild.py"), "-j", str(args.jobs)] +
                           [r["solution"] for r in runs], capture_output=True, text=True, env=env)
    print(build.stdout[-400:] + build.stderr[-400:], flush=True)
    for run in runs:
        plan_file = out / f"{run['problem']}.plan.json"
        plan_file.write_text(json.dumps(run["plan"]))
        done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "kernel_rates.py"), "--measure",
                               run["solution"], run["reference"], str(plan_file)],
                              capture_output=True, text=True, env=env, timeout=300)
        if done.returncode == 0:
            run["result"] = json.loads(done.stdout.strip().splitlines()[-1])
            kernels = ", ".join(f"{k['kernel'].split('(')[0].split('<')[0].split('::')[-1]} {k['us']}"
                                for k in run["result"]["backward_kernels"][:3])
            print(f"{run['problem']} {run['variant']:8s} backward {rate(run['result']['backward'])}  [{kernels}]",
                  flush=True)
        else:
            run["error"] = (done.stdout + done.stderr)[-400:]
            print(f"{run['problem']} {run['variant']}: FAILED {run['error'][-200:]}", flush=True)
        (out / "cluster_probe.json").write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
