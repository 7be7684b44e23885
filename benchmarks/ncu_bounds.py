"""What bounds each of kgen's kernels, from ncu's counters: for every solution file, one forward and one backward
at its own shapes under `ncu --replay-mode application` (the buffers are GBs), and for every kgen kernel of that
call its time, the DRAM bytes it actually moved (read and written), its DRAM rate against a same-size device copy
timed in this process, its issue-slot use and its warps' occupancy. The table classifies each kernel:

  DRAM      moving >= 80 % of the copy's rate on the bytes it moved: memory-bound, at the floor
  issue     issue slots >= 70 % busy: bound by its own instruction stream (its arithmetic), not by DRAM
  latency   neither: waiting on loads with too few warps (or on barriers) to fill the slots or the DRAM

    python3 benchmarks/ncu_bounds.py OUT_DIR FILE.py [FILE.py ...] [--label NAME=FILE ...]

Writes OUT_DIR/ncu_bounds.json and OUT_DIR/NCU_BOUNDS.md (and each file's raw ncu CSV). The files must be
prebuilt (benchmarks/prebuild.py): ncu replays each call several times and a build inside it would be timed.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent   # the repository root

METRICS = {
    "gpu__time_duration.sum": "ns",
    "dram__bytes_read.sum": "read",
    "dram__bytes_write.sum": "written",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "lts__t_sector_op_read_hit_rate.pct": "l2_read_hit_pct",
}
DRAM_BOUND = 0.80   # of the copy's rate
ISSUE_BOUND = 70.0  # % of issue slots


def _number(text: str) -> float:
    return float(text.replace(",", "")) if text not in ("", "n/a") else float("nan")


def profile(solution: Path, out: Path, timeout: float) -> list[dict]:
    """ncu's counters of every kgen kernel of one forward + backward call of `solution` (in launch order)."""
    cmd = ["ncu", "--replay-mode", "application", "--csv", "--page", "raw", "--kernel-name-base", "demangled",
           "--kernel-name", "regex:kgen::",
           "--metrics", ",".join(METRICS), sys.executable, str(ROOT / "benchmarks" / "run_solution_once.py"),
           str(solution), "--backward", "--calls", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
    (out / f"{solution.stem}_ncu.csv").write_text(p.stdout + "\n---- stderr\n" + p.stderr[-4000:])
    lines = p.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise RuntimeError(f"ncu gave no table for {solution} (exit {p.returncode}): {p.stderr[-400:]}")
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    kernels = []
    if rows and not rows[0]["ID"].strip().isdigit():  # the units row
        rows = rows[1:]
    for row in rows:
        entry = {"kernel": row["Kernel Name"]}
        for metric, key in METRICS.items():
            entry[key] = _number(row.get(metric, ""))
        kernels.append(entry)
    return kernels


def classify(kernel: dict, copy_tb_per_s: float) -> str:
    if kernel["rate_tb_per_s"] >= DRAM_BOUND * copy_tb_per_s:
        return "DRAM"
    if kernel["issue_pct"] >= ISSUE_BOUND:
        return "issue"
    return "latency"


def short(name: str) -> str:
    """A kernel's name without its template arguments: `kgen::region_twopass::backward_sweep_kernel`."""
    name = name.split("(")[0]
    return name.split("<")[0].replace("void ", "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--min-us", type=float, default=20.0, help="kernels shorter than this are listed, not classified")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import torch

    from kgen.bench.timing import copy_rate

    gpu = torch.cuda.get_device_name()
    report = {"gpu": gpu, "torch": torch.__version__, "problems": {}}
    copies: dict[int, float] = {}
    for path in map(Path, args.files):
        kernels = profile(path, out, args.timeout)
        for k in kernels:
            moved = k["read"] + k["written"]
            k["us"] = k["ns"] / 1e3
            k["rate_tb_per_s"] = moved / k["ns"] / 1e3 if k["ns"] > 0 else 0.0
            size_mb = max(16, int(moved / 2 / 1e6))  # a copy moving the same bytes (read + write)
            bucket = 1 << (size_mb.bit_length() - 1)
            if bucket not in copies:
                copies[bucket] = copy_rate(bucket)["tb_per_s"]
            k["copy_tb_per_s"] = copies[bucket]
            k["bound"] = classify(k, copies[bucket]) if k["us"] >= args.min_us else "-"
        report["problems"][path.stem] = kernels
        print(f"{path.stem}: {len(kernels)} kernels", flush=True)
    (out / "ncu_bounds.json").write_text(json.dumps(report, indent=1))
    lines = [f"# What bounds kgen's kernels (ncu, {gpu}, torch {torch.__version__})", "",
             f"One forward + backward call per file at its own shapes. DRAM: >= {DRAM_BOUND:.0%} of a same-size copy's "
             f"rate on the bytes the kernel moved; issue: >= {ISSUE_BOUND:.0f} % of issue slots busy; latency: neither. "
             "Kernels under 20 us are not classified.", "",
             "| file | kernel | us | DRAM read / written GB | TB/s (copy's) | DRAM % of peak | issue % | warps % | L2 read hit % | bound |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for stem, kernels in report["problems"].items():
        for k in kernels:
            lines.append(f"| {stem} | `{short(k['kernel'])}` | {k['us']:.1f} | {k['read'] / 1e9:.3f} / {k['written'] / 1e9:.3f} | "
                         f"{k['rate_tb_per_s']:.2f} ({k['copy_tb_per_s']:.2f}) | {k['dram_pct']:.0f} | {k['issue_pct']:.0f} | "
                         f"{k['occupancy_pct']:.0f} | {k['l2_read_hit_pct']:.0f} | {k['bound']} |")
    (out / "NCU_BOUNDS.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
