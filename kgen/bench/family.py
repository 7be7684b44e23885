"""The whole GroupNorm family on the GPU: for each KernelBench problem with a GroupNorm, emit from the
reference alone (`kgen emit --ref`), then `kgen validate` (outputs, every gradient, float64), then
KernelBench's own evaluator (fp32, 5 trials), and with `--bench` kgen / eager / torch.compile forward and
forward+backward timed in one process per problem (kgen.bench.timing). Writes one Markdown table and one JSON.

    python3 benchmarks/family.py PROBLEMS_DIR KB_DIR OUT_DIR [--bench] [--only 19,92] [--jobs 8] [--glob "*_*.py"]
                                 [--workers 4] [--skip-checks] [--skip-kernelbench] [--budget S] [--resume]
                                 [--emit-args "--conv fast"] [--precisions fp32,bf16,fp16] [--channels-last]

--precisions runs each problem's checks and timings at each of those precisions, as KernelBench's --precision
does (the model and the inputs moved to that dtype; fp16 and bf16 compared at atol = rtol = 1e-2): `kgen validate
--precision P`, `kb_eval.py --precision P`, kgen / eager / torch.compile timed at P; the table has a row per
problem and precision, from one emitted file. --channels-last lays out the models' and inputs' 4-d and 5-d tensors
channels-last for `kgen validate` and the timings (KernelBench's evaluator runs as it does, NCHW).

Three phases, to fit a short lease: the builds in parallel (kgen.bench.prebuild); the correctness runs,
`--workers` problems at once, each followed (with --bench) by a torch.compile of its reference that only
warms Inductor's on-disk caches; then, one problem at a time on an otherwise idle GPU, the timings, whose
torch.compile now finds its kernels compiled. `--budget` starts no stage after that many seconds and
`--resume` keeps what OUT already holds, so a second call on the warm machine finishes the table (a file emitted
before from the same reference, options and kgen sources is not emitted again: emit_once).

    python3 benchmarks/family_merge.py OUT RUN_DIR [RUN_DIR ...]

One table from several runs (merge_main): each RUN_DIR holds a family.json (or family.json.gz); a problem's row
is taken from the LAST run that timed it (the last that has it, where none timed it), and the table names that
run's folder beside the problem; a row timed with --skip-checks takes its verdicts from the last run that checked
the problem, and names that folder too. Every row's kgen / eager / torch.compile times come from one run (the
three contenders of a problem are timed back to back), so a row's ratios stay those of one run; rows of different
runs are not compared with each other. Writes OUT/FAMILY.md and OUT/family.json.gz.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

from kgen.bench import ROOT
from kgen.bench.family_table import ITEMSIZE, itemsize, row_name, table, traffic_bytes

BENCH = [sys.executable, "-m", "kgen.bench.timing"]      # one problem timed, in a process of its own
PREBUILD = [sys.executable, "-m", "kgen.bench.prebuild"]


def problem_id(path: Path) -> str:
    m = re.match(r"level(\d)_(\d+)_", path.name)
    return f"L{m.group(1)}-{m.group(2)}" if m else path.stem


def precisions(text: str) -> list[str]:
    """--precisions: a comma-separated list of fp32, fp16, bf16 (argparse turns a ValueError into a usage error)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ITEMSIZE]
    if unknown or not names:
        raise ValueError(f"precisions are fp32, fp16 and bf16, not {text!r}")
    return list(dict.fromkeys(names))


def row_key(row: dict) -> tuple:
    """A row's identity: its problem, its emit options, the precision and the layout it was checked and timed at."""
    return row["problem"], row.get("emit_args", ""), row.get("precision", "fp32"), bool(row.get("channels_last"))


def log_name(row: dict) -> str:
    return row_name(row).replace(" ", "_")


def precision_args(row: dict) -> list[str]:
    """`--precision P` (nothing at fp32, their default) and `--channels-last` where the row is, for the validator and
    the timing script."""
    precision = row.get("precision", "fp32")
    return ([] if precision == "fp32" else ["--precision", precision]) + \
        (["--channels-last"] if row.get("channels_last") else [])


def run(cmd, timeout, env=None) -> tuple[int, str, float]:
    start = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout + p.stderr, time.time() - start
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode(errors="ignore") if isinstance(e.stdout, bytes) else str(e.stdout or ""), \
            time.time() - start


def source_digest() -> str:
    """What an emitted file depends on besides its reference and the emit options: kgen's own sources (Python,
    templates, specs) and the PyTorch that traces the reference."""
    digest = hashlib.sha256(importlib.metadata.version("torch").encode())
    for path in sorted((ROOT / "kgen").rglob("*")):
        if path.is_file() and path.suffix in (".py", ".j2", ".cuh", ".cu", ".h", ".json"):
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def emit_once(ref: Path, sol: Path, emit_args: list[str], sources: str) -> tuple[int, str, str]:
    """`kgen emit --ref REF -o SOL` and its --explain: (exit code, emit's output, the plan's text). Emit is
    deterministic, so where SOL and its record (SOL.emit.json) were made from the same reference bytes, options and
    sources, they are taken as they are: a resumed family run on a warm machine spends no minute re-emitting."""
    record = sol.with_suffix(".emit.json")
    key = hashlib.sha256(sources.encode() + ref.read_bytes() + shlex.join(emit_args).encode()).hexdigest()
    if sol.is_file() and record.is_file():
        done = json.loads(record.read_text())
        if done.get("key") == key:
            return done["code"], done["text"], done["plan"]
    record.unlink(missing_ok=True)
    code, text, _ = run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(ref), *emit_args, "-o", str(sol)],
                        120)
    plan = run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(ref), *emit_args, "--explain"], 120)[1]
    if code == 0:
        record.write_text(json.dumps({"key": key, "code": code, "text": text, "plan": plan}))
    return code, text, plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems")
    parser.add_argument("kb")
    parser.add_argument("out")
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated problem numbers (19,92) or file stems")
    parser.add_argument("--glob", default="level*.py",
                        help="which files of PROBLEMS_DIR are references (tests/corpus: \"*_*.py\")")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=400)
    parser.add_argument("--min-run-time", type=float, default=0.5, help="seconds of timing per contender and mode")
    parser.add_argument("--skip-checks", action="store_true",
                        help="no kgen validate and no KernelBench run: emit, build and (with --bench) time only")
    parser.add_argument("--skip-kernelbench", action="store_true",
                        help="kgen validate without KernelBench's evaluator (its verdicts kept from a run that had it)")
    parser.add_argument("--workers", type=int, default=1,
                        help="problems judged at once (>1 for correctness only: timings then share the GPU)")
    parser.add_argument("--budget", type=float, default=0,
                        help="seconds: start no new stage after this (a lease's call ends cleanly, table saved)")
    parser.add_argument("--emit-args", default="",
                        help="more options of `kgen emit --ref`, e.g. \"--conv fast\": the table's rows name them")
    parser.add_argument("--precisions", default="fp32", type=precisions,
                        help="comma-separated precisions to check and time each problem at: fp32, fp16, bf16")
    parser.add_argument("--channels-last", action="store_true",
                        help="models' and inputs' 4-d and 5-d tensors channels-last in kgen validate and the timings")
    parser.add_argument("--resume", action="store_true",
                        help="keep what OUT/family.json already holds (checks, KernelBench, timings) and do the rest: "
                             "a second device call on the warm machine finishes what the first had no time for")
    args = parser.parse_args()
    deadline = time.time() + args.budget if args.budget else float("inf")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(ROOT / ".build" / "inductor"))   # shared by the phases
    emit_args = shlex.split(args.emit_args)
    emitted = ROOT / ".build" / ("family" + "".join(re.sub(r"\W+", "_", a) for a in emit_args))
    emitted.mkdir(parents=True, exist_ok=True)
    problems = sorted(p for p in Path(args.problems).glob(args.glob) if not p.name.startswith(("_", "test_")))
    if args.only:
        wanted = set(args.only.split(","))
        problems = [p for p in problems if problem_id(p).split("-")[-1] in wanted or p.stem in wanted]
    earlier = {}
    if args.resume and (out / "family.json").is_file():
        earlier = {row_key(row): row for row in json.loads((out / "family.json").read_text())}
        print(f"resume: {len(earlier)} problems in {out / 'family.json'}", flush=True)
    from concurrent.futures import ThreadPoolExecutor

    sources = source_digest()

    def emit(ref: Path) -> list[dict]:
        pid = problem_id(ref)
        sol = emitted / f"{pid}.py"
        code, text, plan = emit_once(ref, sol, emit_args, sources)
        rows = []
        for precision in args.precisions:   # one file, checked and timed at each precision
            row = {"problem": pid, "reference": ref.name, "emit": code, "emit_error": text.strip()[-400:],
                   "plan": [l for l in plan.splitlines() if l and "Warn" not in l and not l.startswith("kgen: ")],
                   "emit_args": args.emit_args, "precision": precision, "channels_last": args.channels_last}
            before = earlier.get(row_key(row), {})
            if before.get("emit") == 0 and code == 0:   # the file is the same bytes (emit is deterministic)
                row.update({k: before[k] for k in ("validate", "kernelbench", "warmed", "bench") if k in before})
            rows.append(row)
        return rows

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:   # each emit is a CPU-bound trace: in parallel
        emitted_rows = list(pool.map(emit, problems))
    rows = [row for per_problem in emitted_rows for row in per_problem]
    references = [ref for ref, per_problem in zip(problems, emitted_rows) for _ in per_problem]
    # a resumed run of some problems (--only) keeps the table's other rows as they were
    others = [row for key, row in earlier.items() if key not in {row_key(r) for r in rows}]

    def table_rows() -> list[dict]:
        return others + rows
    files = sorted({str(emitted / f"{row['problem']}.py") for row in rows if row["emit"] == 0})
    print(f"emit: {len(files)} of {len(rows)} files in {time.time() - t0:.0f} s", flush=True)
    t0 = time.time()
    # a stage started runs to its end (--budget starts none later): a build cut short leaves a resumed call to build
    # again what it had half done
    build = run([*PREBUILD, "-j", str(args.jobs), *files], 900.0)
    print(build[1][-3000:], flush=True)
    print(f"prebuild: exit {build[0]} in {time.time() - t0:.0f} s", flush=True)
    (out / "family_prebuild.log").write_text(build[1])

    def left(limit: float) -> float:
        return max(1.0, min(limit, deadline - time.time()))

    def judge(row, ref):
        sol = emitted / f"{row['problem']}.py"
        if "validate" not in row:
            vjson = out / f"validate_{log_name(row)}.json"
            cmd = [sys.executable, "-m", "kgen.cli", "validate", str(sol), "--trials", str(args.trials), "--json",
                   str(vjson), "--timeout", str(args.timeout), *precision_args(row)]
            code, text, secs = run(cmd, left(args.timeout + 60))
            if code == 124 and time.time() >= deadline:
                return   # cut by the budget, not by the problem: left for a resumed run
            if crowded(row, text):
                return
            row["validate"] = {"exit": code, "seconds": round(secs, 1), "tail": text.strip().splitlines()[-40:]}
            (out / f"validate_{log_name(row)}.log").write_text(text)
            if vjson.is_file():
                row["validate"]["json"] = json.loads(vjson.read_text())
            if args.skip_kernelbench:
                print(f"{row_name(row)}: validate exit {code} ({secs:.0f} s)", flush=True)
        if "kernelbench" not in row and not args.skip_kernelbench and time.time() < deadline:
            code, text, secs = run([sys.executable, str(Path(args.kb) / "kb_eval.py"), str(sol), str(ref),
                                    "--trials", "5", "--precision", row["precision"]], left(args.timeout))
            if code == 124 and time.time() >= deadline:
                return
            if crowded(row, text):
                return
            lines = [l for l in text.splitlines() if l.startswith("{")]
            record = json.loads(lines[-1]) if lines else {}
            row["kernelbench"] = {"exit": code, "correctness": record.get("correctness"),
                                  "runtime": record.get("runtime"), "ref_runtime": record.get("ref_runtime"),
                                  "metadata": record.get("metadata"), "tail": text.strip().splitlines()[-5:]}
            print(f"{row_name(row)}: validate exit {row['validate']['exit']} ({row['validate']['seconds']} s), "
                  f"KernelBench correct={record.get('correctness')} {record.get('runtime')} vs "
                  f"{record.get('ref_runtime')} ms (timed {'beside other runs: not a speed figure' if parallel[0] else 'alone'})",
                  flush=True)

    # A check that ran out of GPU memory beside the other workers' (L1-35 takes 35 GB for its float64 copy)
    # says nothing of the solution: it is judged again after the parallel phase, alone on the GPU.
    alone: list[str] = []
    parallel = [args.workers > 1]

    def crowded(row, text: str) -> bool:
        if not parallel[0] or "OutOfMemoryError" not in text:
            return False
        with lock:
            alone.append(row_key(row))
        print(f"{row_name(row)}: out of GPU memory beside other runs; judged again alone", flush=True)
        return True

    def warm(row, ref):
        code, _, _ = run([*BENCH, str(emitted / f"{row['problem']}.py"), str(ref),
                          "--warm-compile", *precision_args(row)], left(args.timeout))
        if code == 0:
            row["warmed"] = True

    lock = threading.Lock()

    def save() -> None:   # after every problem: a lease that ends early still leaves a table
        with lock:
            (out / "family.json").write_text(json.dumps(table_rows(), indent=1, default=str))
            (out / "FAMILY.md").write_text(table(table_rows()))

    def check_and_save(pair):
        row, ref = pair
        if row["emit"] != 0 or time.time() >= deadline:
            return
        if not args.skip_checks:
            judge(row, ref)
        if args.bench and "bench" not in row and not row.get("warmed") and time.time() < deadline:
            warm(row, ref)
        save()

    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        list(pool.map(check_and_save, list(zip(rows, references))))
    parallel[0] = False
    for row, ref in zip(rows, references):
        if row_key(row) in alone:
            check_and_save((row, ref))
    if args.bench:   # alone on the GPU, one problem at a time
        for row, ref in zip(rows, references):
            if row["emit"] != 0 or ("bench" in row and "error" not in row["bench"]):
                continue
            if time.time() >= deadline:
                print(f"{row_name(row)}: bench not run (budget spent)", flush=True)
                continue
            bjson = out / f"bench_{log_name(row)}.json"
            code, text, secs = run([*BENCH, str(emitted / f"{row['problem']}.py"), str(ref),
                                    "--json", str(bjson), "--min-run-time", str(args.min_run_time),
                                    "--copy-bytes", str(traffic_bytes(row["plan"], False, itemsize(row))),
                                    *precision_args(row)], left(args.timeout))
            if code == 124 and time.time() >= deadline:
                print(f"{row_name(row)}: bench cut by the budget", flush=True)
                continue
            row["bench"] = json.loads(bjson.read_text()) if bjson.is_file() and code == 0 else {"error": text[-600:]}
            print(f"{row_name(row)}: bench exit {code} ({secs:.0f} s) {text.strip().splitlines()[-2:]}", flush=True)
            save()
    save()
    print(table(table_rows()))


# ---- one table from several runs ----------------------------------------------------------------------------

def load_run(run: Path) -> list[dict]:
    """The rows of one family.py run: RUN/family.json, or RUN/family.json.gz."""
    plain, packed = run / "family.json", run / "family.json.gz"
    if plain.is_file():
        return json.loads(plain.read_text())
    if packed.is_file():
        return json.loads(gzip.decompress(packed.read_bytes()))
    raise SystemExit(f"family_merge: no family.json(.gz) in {run}")


def timed(row: dict) -> bool:
    bench = row.get("bench") or {}
    return bool(bench) and "error" not in bench


def merge(runs: list[Path]) -> list[dict]:
    """A problem's row from the last run that timed it, or where none did, from the last run that has it. A run
    with other emit options (--emit-args) gives rows of their own, after the default ones."""
    rows: dict[tuple, dict] = {}
    checked: dict[tuple, dict] = {}   # the last row of each problem with `kgen validate`'s verdict
    for run in runs:
        for row in load_run(run):
            key = row_key(row)
            before = rows.get(key)
            if before is None or timed(row) or not timed(before):
                rows[key] = dict(row, run=run.name)
            if row.get("validate"):
                checked[key] = dict(row, run=run.name)
    # A timing run with --skip-checks shows the verdicts of the last run that checked the same problem, and
    # names both runs.
    for key, row in rows.items():
        if not row.get("validate") and key in checked:
            check = checked[key]
            row.update(validate=check["validate"], kernelbench=check.get("kernelbench"),
                       run=f"{row['run']}; checks {check['run']}")
    return [dict(rows[k], problem=f"{k[0]} ({rows[k]['run']})") for k in sorted(rows)]


def merge_main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print("usage: python3 benchmarks/family_merge.py OUT RUN_DIR [RUN_DIR ...]\n\n"
              "One family table from several runs of benchmarks/family.py: each problem's row from the last run "
              "that timed it. Writes OUT/FAMILY.md and OUT/family.json.gz.")
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    rows = merge([Path(p) for p in argv[1:]])
    (out / "FAMILY.md").write_text(table(rows))
    (out / "family.json.gz").write_bytes(gzip.compress(json.dumps(rows, indent=1, default=str).encode(), mtime=0))
    print(f"family_merge: {len(rows)} problems -> {out / 'FAMILY.md'}")
    return 0


if __name__ == "__main__":
    main()
