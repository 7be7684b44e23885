"""Summarise a benchmarks/sanitize.sh log directory: one line per (file, tool) run.

    python3 benchmarks/sanitize_summary.py LOGDIR        (writes LOGDIR/summary.txt and prints it)

sanitize.sh leaves LOGDIR/runs.tsv (file or family:NAME target, tool, exit status, seconds per run) and
LOGDIR/STEM.TOOL.log (the sanitizer's output, then the script's; STEM: the file's stem, or family-NAME).
For each run this reads the sanitizer's "ERROR SUMMARY: N errors" and attributes every reported record to a
kernel: ours (a __global__ function of the solution's CUDA source) or a library's (cuDNN, cuBLAS, PyTorch),
or a CUDA API call, so that a report from inside cuDNN is told apart from one in a kgen kernel. No torch
import: cheap to run.
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kgen.bench import ROOT
from kgen.bench.families import is_target, log_stem, target_file  # no torch import

# __launch_bounds__'s arguments may hold one level of parentheses (min_blocks_for_warps(kWarps, kBlock))
GLOBAL_RE = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)\s*)?"
                       r"(?:void\s+)?([A-Za-z_]\w*)\s*\(")
SUMMARY_RE = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")
RACE_SUMMARY_RE = re.compile(r"RACECHECK SUMMARY:.*")
RECORD_RE = re.compile(r"^========= (?!ERROR SUMMARY|RACECHECK SUMMARY|COMPUTE-SANITIZER|Saved host|Target application"
                       r"|Device Frame|Host Frame|\s)(\S.*)$")
FRAME_RE = re.compile(r"\bat\s+(?:0x[0-9a-fA-F]+\s+in\s+)?(?:\S+:\d+:)?(?:void\s+)?([A-Za-z_][\w:]*)\s*[<(]")


def our_kernels(solution: Path) -> list[str]:
    """The __global__ function names in a solution file's text."""
    try:
        return sorted(set(GLOBAL_RE.findall(solution.read_text())))
    except OSError:
        return []


@dataclass
class Run:
    file: str
    tool: str
    exit: int | None
    seconds: float | None
    errors: int | None                         # the sanitizer's ERROR SUMMARY (None: no summary line)
    racecheck: str = ""                        # racecheck's own summary line, if any
    ours: dict = field(default_factory=dict)   # kernel -> records attributed to it
    library: dict = field(default_factory=dict)
    api: dict = field(default_factory=dict)
    other: int = 0                             # records with no kernel or API call named
    log: str = ""
    script_line: str = ""                      # sanitize.py's own line (shapes, finite?)

    @property
    def clean(self) -> bool:
        return self.exit == 0 and self.errors == 0

    def where(self) -> str:
        parts = []
        if self.ours:
            parts.append("OURS: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.ours.items())))
        if self.library:
            parts.append("library: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.library.items())))
        if self.api:
            parts.append("API: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.api.items())))
        if self.other:
            parts.append(f"unattributed x{self.other}")
        return "; ".join(parts)

    def line(self) -> str:
        errors = "no summary" if self.errors is None else f"{self.errors} errors"
        seconds = "?" if self.seconds is None else f"{self.seconds:.0f} s"
        text = f"{self.file:40s} {self.tool:9s} exit {self.exit!s:>4} {errors:>12s} {seconds:>6s}"
        where = self.where()
        return text + (f"  [{where}]" if where else "")


def parse_log(text: str, ours: list[str]) -> dict:
    """ERROR SUMMARY count and the records attributed to kernels (ours or the library's) or API calls."""
    found = SUMMARY_RE.findall(text)
    race = RACE_SUMMARY_RE.findall(text)
    counts = {"ours": Counter(), "library": Counter(), "api": Counter(), "other": 0}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        record = RECORD_RE.match(line)
        if not record:
            continue
        body = record.group(1)
        api = re.search(r"Program hit (\w+)", body)
        if api:
            call = re.search(r"API call to (\w+)", " ".join(lines[i:i + 2]))
            counts["api"][api.group(1) + (f" in {call.group(1)}" if call else "")] += 1
            continue
        name = None
        for follow in [body] + lines[i + 1:i + 6]:
            frame = FRAME_RE.search(follow)
            if frame and frame.group(1) not in ("void",):
                name = frame.group(1)
                break
        if name is None:
            counts["other"] += 1
            continue
        short = name.split("::")[-1]
        mine = short in ours or name.startswith("kgen::")      # the emitted kernels live in namespace kgen
        (counts["ours"] if mine else counts["library"])[short if mine else name] += 1
    errors = int(found[-1]) if found else None
    if errors is None and race:   # racecheck ends with "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
        race_errors = re.search(r"\((\d+) errors?", race[-1])
        errors = int(race_errors.group(1)) if race_errors else None
    return {"errors": errors, "racecheck": race[-1].strip() if race else "",
            "ours": dict(counts["ours"]), "library": dict(counts["library"]), "api": dict(counts["api"]),
            "other": counts["other"]}


def summarize(logdir: Path) -> list[Run]:
    runs = []
    table = logdir / "runs.tsv"
    if not table.exists():
        return runs
    for row in table.read_text().splitlines():
        parts = row.split("\t")
        if len(parts) < 4:
            continue
        file, tool, code, seconds = parts[:4]
        log = logdir / f"{log_stem(file)}.{tool}.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        parsed = parse_log(text, our_kernels(target_file(file) if is_target(file) else ROOT / file))
        script = next((l for l in text.splitlines() if l.startswith("sanitize.py ")), "")
        runs.append(Run(file, tool, int(code) if code.lstrip("-").isdigit() else None,
                        float(seconds) if seconds else None, log=log.name, script_line=script, **parsed))
    return runs


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv if argv is None else argv
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print("usage: python3 benchmarks/sanitize_summary.py LOGDIR\n\n" + __doc__.splitlines()[0],
              file=sys.stderr)
        return 0 if argv[1:] in (["-h"], ["--help"]) else 2
    logdir = Path(argv[1])
    runs = summarize(logdir)
    lines = [r.line() for r in runs]
    clean = sum(r.clean for r in runs)
    lines.append(f"{clean}/{len(runs)} runs clean (exit 0, 0 errors)")
    (logdir / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if runs and clean == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
