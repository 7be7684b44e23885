"""GroupNorm regions whose output feeds a TF32 convolution: kgen's verdict beside KernelBench's, on a GPU.

    python3 benchmarks/tf32_verdicts.py KB_DIR OUT_DIR [--trials 3] [--jobs 8]

KB_DIR is KernelBench's evaluator (../shared/kernelbench copied into the checkout, see its README). For each
reference of REFERENCES: `kgen emit --ref`, `kgen validate` (its report gives both verdicts, and KernelBench's
with the measured floor when it fails) and KernelBench's own evaluator (fp32, 5 trials). Then the
adversarial file: the first reference's solution emitted from a copy whose first GroupNorm output is 1e-3
off (inside the region, before the convolution), judged against the true reference; it must FAIL both.
Writes OUT_DIR/TF32_VERDICTS.md, OUT_DIR/tf32_verdicts.json and each validate report (.txt, .json).
Exit status 1 when a correct file fails kgen's verdict or the adversarial file passes either.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCES = ROOT / "tests" / "ref" / "references"
NAMES = ("gn_relu_conv_gn_residual", "unet_resblock_time_embedding", "conv1d_audio_gn_stack")
ADVERSARIAL = ("gn_relu_conv_gn_residual", "self.norm1(x)", "(self.norm1(x) + 1e-3)")
KGEN = [sys.executable, "-c", "import sys; from kgen.cli import main; sys.argv[0] = 'kgen'; main()"]


def run(cmd: list[str], timeout: float = 900) -> tuple[int, str]:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def emit(reference: Path, out: Path) -> None:
    code, text = run(KGEN + ["emit", "--ref", str(reference), "-o", str(out)])
    if code != 0:
        sys.exit(f"emit {reference.name} failed: {text.strip()}")


def kernelbench(kb: Path, solution: Path, reference: Path) -> dict:
    code, text = run([sys.executable, str(kb / "kb_eval.py"), str(solution), str(reference), "--trials", "5"])
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    record = lines[-1] if lines else {"error": text.strip().splitlines()[-1:]}
    return {"exit": code, "correctness": record.get("correctness"), "metadata": record.get("metadata")}


def judge(name: str, solution: Path, reference: Path, kb: Path, out: Path, trials: int) -> dict:
    start = time.time()
    report = out / f"validate_{name}.json"
    code, text = run(KGEN + ["validate", str(solution), "--ref", str(reference), "--trials", str(trials),
                      "--json", str(report), "--quiet"])
    (out / f"validate_{name}.txt").write_text(text)
    data = json.loads(report.read_text()) if report.is_file() else {}
    verdicts = data.get("verdicts", {})
    row = {"name": name, "exit": code, "kgen": verdicts.get("kgen", {}).get("verdict"),
           "kernelbench_in_validate": verdicts.get("kernelbench", {}), "seconds": round(time.time() - start, 1),
           "kernelbench_evaluator": kernelbench(kb, solution, reference)}
    print(f"{name}: kgen {row['kgen']}, KernelBench (validate) {row['kernelbench_in_validate'].get('verdict')}, "
          f"KernelBench evaluator correctness={row['kernelbench_evaluator']['correctness']}", flush=True)
    return row


def table(rows: list[dict]) -> str:
    lines = ["| file | expected | kgen verdict | KernelBench verdict (kgen validate), with its measured reason | "
             "KernelBench's evaluator (fp32, 5 trials) |", "|---|---|---|---|---|"]
    for r in rows:
        kb = r["kernelbench_in_validate"]
        evaluator = r["kernelbench_evaluator"]
        lines.append(f"| {r['name']} | {r['expected']} | {r['kgen']} | {kb.get('verdict')}: {kb.get('summary', '')} | "
                     f"{'correct' if evaluator['correctness'] else 'INCORRECT'} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kb", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=8)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(name, args.out / f"{name}.py", REFERENCES / f"{name}.py", "PASS") for name in NAMES]
    base, before, after = ADVERSARIAL
    text = (REFERENCES / f"{base}.py").read_text()
    assert before in text
    wrong_ref = args.out / f"{base}_offset_reference.py"
    wrong_ref.write_text(text.replace(before, after, 1))
    jobs.append((f"{base}_offset", args.out / f"{base}_offset.py", REFERENCES / f"{base}.py", "FAIL"))
    for name, solution, reference, _ in jobs:
        emit(wrong_ref if name.endswith("_offset") else reference, solution)
    code, text = run([sys.executable, "-m", "kgen.bench.prebuild", "-j", str(args.jobs)]
                     + [str(j[1]) for j in jobs], timeout=1800)
    print(text.strip().splitlines()[-1] if text.strip() else f"prebuild exit {code}", flush=True)
    rows = []
    for name, solution, reference, expected in jobs:
        rows.append({**judge(name, solution, reference, args.kb, args.out, args.trials), "expected": expected})
    (args.out / "tf32_verdicts.json").write_text(json.dumps(rows, indent=1))
    (args.out / "TF32_VERDICTS.md").write_text(table(rows))
    print(table(rows))
    bad = [r["name"] for r in rows if (r["expected"] == "PASS") != (r["kgen"] == "PASS")
           or (r["expected"] == "FAIL" and r["kernelbench_evaluator"]["correctness"])]
    if bad:
        print("unexpected verdicts: " + ", ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
