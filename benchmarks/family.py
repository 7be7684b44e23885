"""The whole GroupNorm family on the GPU: for each KernelBench problem with a GroupNorm, emit from the
reference alone (`kgen emit --ref`), then `kgen validate` (outputs, every gradient, float64), then
KernelBench's own evaluator (fp32, 5 trials), and with `--bench` kgen / eager / torch.compile forward and
forward+backward timed in one process per problem (benchmarks/bench_problem.py). Writes one Markdown table
and one JSON.

    PYTHONPATH=. python3 benchmarks/family.py PROBLEMS_DIR KB_DIR OUT_DIR [--bench] [--only 19,92] [--jobs 8]
                                              [--workers 4] [--skip-checks]

Three phases, to fit a short lease: the builds in parallel (benchmarks/prebuild.py); the correctness runs,
`--workers` problems at once, each followed (with --bench) by a torch.compile of its reference that only
warms Inductor's on-disk caches; then, one problem at a time on an otherwise idle GPU, the timings, whose
torch.compile now finds its kernels compiled.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks" / "bench_problem.py"


def problem_id(path: Path) -> str:
    m = re.match(r"level(\d)_(\d+)_", path.name)
    return f"L{m.group(1)}-{m.group(2)}" if m else path.stem


def run(cmd, timeout, env=None) -> tuple[int, str, float]:
    start = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout + p.stderr, time.time() - start
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode(errors="ignore") if isinstance(e.stdout, bytes) else str(e.stdout or ""), \
            time.time() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problems")
    parser.add_argument("kb")
    parser.add_argument("out")
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=400)
    parser.add_argument("--min-run-time", type=float, default=0.5, help="seconds of timing per contender and mode")
    parser.add_argument("--skip-checks", action="store_true",
                        help="no kgen validate and no KernelBench run: emit, build and (with --bench) time only, e.g. "
                             "in a second device call after a first one ran the checks")
    parser.add_argument("--workers", type=int, default=1,
                        help="problems judged at once (>1 for correctness only: timings then share the GPU)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(ROOT / ".build" / "inductor"))   # shared by the phases
    emitted = ROOT / ".build" / "family"
    emitted.mkdir(parents=True, exist_ok=True)
    problems = sorted(Path(args.problems).glob("level*.py"))
    if args.only:
        wanted = set(args.only.split(","))
        problems = [p for p in problems if problem_id(p).split("-")[1] in wanted]
    rows = []
    files = []
    for ref in problems:
        pid = problem_id(ref)
        sol = emitted / f"{pid}.py"
        code, text, _ = run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(ref), "-o", str(sol)], 120)
        plan = run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(ref), "--explain"], 120)[1]
        rows.append({"problem": pid, "reference": ref.name, "emit": code, "emit_error": text.strip()[-400:],
                     "plan": [l for l in plan.splitlines() if l and "Warn" not in l]})
        if code == 0:
            files.append(str(sol))
    t0 = time.time()
    build = run([sys.executable, str(ROOT / "benchmarks" / "prebuild.py"), "-j", str(args.jobs), *files], 900)
    print(build[1][-3000:], flush=True)
    print(f"prebuild: exit {build[0]} in {time.time() - t0:.0f} s", flush=True)
    (out / "family_prebuild.log").write_text(build[1])
    from concurrent.futures import ThreadPoolExecutor

    def judge(pair):
        row, ref = pair
        if row["emit"] != 0:
            return row
        sol = emitted / f"{row['problem']}.py"
        if args.skip_checks:
            return row
        vjson = out / f"validate_{row['problem']}.json"
        cmd = [sys.executable, "-m", "kgen.cli", "validate", str(sol), "--trials", str(args.trials), "--json",
               str(vjson), "--timeout", str(args.timeout)]
        code, text, secs = run(cmd, args.timeout + 60)
        row["validate"] = {"exit": code, "seconds": round(secs, 1), "tail": text.strip().splitlines()[-40:]}
        (out / f"validate_{row['problem']}.log").write_text(text)
        if vjson.is_file():
            row["validate"]["json"] = json.loads(vjson.read_text())
        code, text, secs = run([sys.executable, str(Path(args.kb) / "kb_eval.py"), str(sol), str(ref), "--trials", "5"],
                               args.timeout)
        lines = [l for l in text.splitlines() if l.startswith("{")]
        record = json.loads(lines[-1]) if lines else {}
        row["kernelbench"] = {"exit": code, "correctness": record.get("correctness"),
                              "runtime": record.get("runtime"), "ref_runtime": record.get("ref_runtime"),
                              "metadata": record.get("metadata"), "tail": text.strip().splitlines()[-5:]}
        print(f"{row['problem']}: validate exit {row['validate']['exit']} ({row['validate']['seconds']} s), "
              f"KernelBench correct={record.get('correctness')} {record.get('runtime')} vs {record.get('ref_runtime')} ms"
              f" (timed {'alone' if args.workers == 1 else 'beside other runs: not a speed figure'})", flush=True)
        if args.bench:
            run([sys.executable, str(BENCH), str(sol), str(ref), "--warm-compile"], args.timeout)
        return row

    lock = threading.Lock()

    def save() -> None:   # after every problem: a lease that ends early still leaves a table
        with lock:
            (out / "family.json").write_text(json.dumps(rows, indent=1, default=str))
            (out / "FAMILY.md").write_text(table(rows))

    def judge_and_save(pair):
        judge(pair)
        save()

    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        list(pool.map(judge_and_save, list(zip(rows, problems))))
    if args.bench:   # alone on the GPU, one problem at a time
        for row, ref in zip(rows, problems):
            if row["emit"] != 0:
                continue
            bjson = out / f"bench_{row['problem']}.json"
            code, text, secs = run([sys.executable, str(BENCH), str(emitted / f"{row['problem']}.py"), str(ref),
                                    "--json", str(bjson), "--min-run-time", str(args.min_run_time)], args.timeout)
            row["bench"] = json.loads(bjson.read_text()) if bjson.is_file() and code == 0 else {"error": text[-600:]}
            print(f"{row['problem']}: bench exit {code} ({secs:.0f} s) {text.strip().splitlines()[-2:]}", flush=True)
            save()
    (out / "family.json").write_text(json.dumps(rows, indent=1, default=str))
    (out / "FAMILY.md").write_text(table(rows))
    print(table(rows))


def _bench(row, mode):
    times = (row.get("bench") or {}).get(mode) or {}
    def ms(key):
        value = times.get(key)
        return f"{value:.3f}" if isinstance(value, (int, float)) else "-"
    return f"{ms('new_ms')} / {ms('eager_ms')} / {ms('compile_ms')}"


def table(rows) -> str:
    lines = ["| problem | plan (kgen kernels; PyTorch library ops) | kgen validate | KernelBench fp32 (5 trials) | "
             "fwd kgen / eager / compile ms | fwd+bwd kgen / eager / compile ms |", "|---|---|---|---|---|---|"]
    for row in rows:
        plan = "<br>".join(row["plan"])
        v = row.get("validate") or {}
        verdict = {0: "PASS", 1: "FAIL", 2: "BROKEN", 3: "NO CUDA"}.get(v.get("exit"), f"exit {v.get('exit')}") \
            if row["emit"] == 0 else f"emit failed: {row['emit_error'][:120]}"
        kb = row.get("kernelbench") or {}
        kb_text = (f"{'correct' if kb.get('correctness') else 'INCORRECT'}, {kb.get('runtime')} vs "
                   f"{kb.get('ref_runtime')} ms" if kb else "-")
        lines.append(f"| {row['problem']} | {plan} | {verdict} | {kb_text} | {_bench(row, 'forward')} | "
                     f"{_bench(row, 'forward_backward')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
