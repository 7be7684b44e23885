"""The validation report: what was checked, against what, on what, at which precision; rendered as a table
for people and as JSON for machines (the same data)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kgen.validate.checks import EXIT_BROKEN, EXIT_FAIL, EXIT_NO_CUDA, EXIT_PASS, NOT_RUN_NO_CUDA, Check
from kgen.validate.verdicts import kernelbench_verdict, kgen_verdict

DETAIL_WIDTH = 150


@dataclass
class Report:
    file: str
    reference: str | None = None
    spec: str | None = None
    params: dict | None = None
    settings: dict = field(default_factory=dict)     # trials, atol, rtol, backward, bench, timeout, ...
    info: dict = field(default_factory=dict)         # torch version, GPU, init args, input shapes, ...
    checks: list[Check] = field(default_factory=list)
    bench: dict | None = None
    kernelbench: dict | None = None                  # KernelBench's protocol, as run (stages/kernelbench.py)
    kernels: dict | None = None                      # the profiled kernels (stages/kernels.py)
    runtime_ran: bool = False
    exit_code: int | None = None

    def verdicts(self) -> dict:
        return {"kernelbench": kernelbench_verdict(self.checks, self.kernelbench, self.runtime_ran),
                "kgen": {**kgen_verdict(self.checks, self.exit_code), "precision": precision_text(self.settings)}}

    def to_json(self) -> dict:
        return {"file": self.file, "reference": self.reference, "spec": self.spec, "params": self.params,
                "settings": self.settings, "precision": self.settings.get("precision", "fp32"),
                "autocast": self.settings.get("autocast"), "torch_version": self.info.get("torch_version"),
                "gpu": self.info.get("gpu"), "info": self.info, "runtime_ran": self.runtime_ran,
                "exit_code": self.exit_code, "result": result_word(self.exit_code),
                "verdicts": self.verdicts(), "checks": [c.to_dict() for c in self.checks], "bench": self.bench,
                "kernelbench": self.kernelbench, "kernels": self.kernels}

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2, default=repr) + "\n")


def precision_text(settings: dict) -> str:
    """Which precision the run checked at, in words."""
    precision, autocast = settings.get("precision") or "fp32", settings.get("autocast")
    layout = "; channels-last (4-d and 5-d tensors of model and inputs)" if settings.get("channels_last") else ""
    if autocast:
        return f"autocast {autocast} (float32 model and inputs, every forward under torch.autocast){layout}"
    return ("fp32" if precision == "fp32" else f"{precision} (model and inputs moved to {precision})") + layout


def result_word(code: int | None) -> str | None:
    return {EXIT_PASS: "PASS", EXIT_FAIL: "FAIL", EXIT_BROKEN: "BROKEN", EXIT_NO_CUDA: "NOT RUN"}.get(code)


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= DETAIL_WIDTH else line[: DETAIL_WIDTH - 3] + "..."


def render_table(checks: list[Check]) -> str:
    width = max([len("CHECK")] + [len(c.name) for c in checks])
    lines = [f"{'CHECK':<{width}}  VERDICT  DETAIL", f"{'-' * width}  -------  ------"]
    lines += [f"{c.name:<{width}}  {c.verdict:<7}  {_first_line(c.detail)}" for c in checks]
    return "\n".join(lines)


def render_details(checks: list[Check]) -> str:
    """The full text of failures whose detail does not fit one table row (compiler output, tracebacks)."""
    blocks = []
    for c in checks:
        if c.ok is False and c.detail.strip() != _first_line(c.detail):
            body = "\n".join("    " + line for line in c.detail.rstrip().splitlines())
            blocks.append(f"--- {c.name} ({c.verdict}) ---\n{body}")
    return "\n".join(blocks)


def render_bench(bench: dict) -> str:
    at = precision_text(bench) + "; " if "precision" in bench else ""
    lines = ["benchmark (" + at + bench.get("method", "") + ")"]
    for mode in ("forward", "forward_backward"):
        row = bench.get(mode)
        if not row:
            continue
        cells = []
        for name in ("new", "eager", "compile"):
            ms = row.get(f"{name}_ms")
            cells.append(f"{name} {ms:.3f} ms" if ms is not None else f"{name} n/a")
        for name in ("eager", "compile"):
            speedup = row.get(f"speedup_vs_{name}")
            cells.append(f"{name}/new {speedup:.2f}x" if speedup is not None else f"{name}/new n/a")
        lines.append(f"  {mode:<17} " + ", ".join(cells))
        host = [f"{name} {row[f'{name}_host_ms']:.3f}" for name in ("new", "eager", "compile")
                if row.get(f"{name}_host_ms") is not None]
        if host:
            lines.append(f"  {'':<17} host ms a call (launch-bound where near the time): " + ", ".join(host))
        for name, error in (row.get("errors") or {}).items():
            lines.append(f"  {'':<17} {name}: {error}")
    return "\n".join(lines)


def render_kernels(kernels: dict, top: int = 8) -> str:
    """The profiled kernels of each phase: whose, how many launches, GPU time and share."""
    lines = [f"kernels (torch.profiler, one call after warm-up; attributed by {kernels.get('method', '?')})"]
    for phase, title in (("forward", "forward"), ("backward", "backward"), ("reference_forward", "reference forward")):
        data = kernels.get(phase)
        if not data:
            continue
        mine = "" if phase == "reference_forward" else (f"; the solution's kernels {data['solution_share']:.0%} "
                                                         f"({data['solution_launches']} launches)")
        lines.append(f"  {title}: {data['launches']} launches, {data['total_us'] / 1e3:.3f} ms{mine}")
        for row in data["kernels"][:top]:
            name = row["name"] if len(row["name"]) <= 70 else row["name"][:67] + "..."
            lines.append(f"    {row['owner']:<8} {name:<70} {row['launches']:>4}x {row['us'] / 1e3:9.3f} ms "
                         f"{row['share']:6.1%}")
        if len(data["kernels"]) > top:
            lines.append(f"    ... {len(data['kernels']) - top} more")
    return "\n".join(lines)


def render_verdicts(report: Report) -> str:
    verdicts = report.verdicts()
    kb, kg = verdicts["kernelbench"], verdicts["kgen"]
    return (f"KernelBench verdict: {kb['verdict']} ({kb['summary']})\n"
            f"kgen verdict:        {kg['verdict']} ({kg['summary']})")


def summary_line(report: Report) -> str:
    code = report.exit_code
    failed = [c for c in report.checks if c.ok is False]
    not_run = "" if report.runtime_ran else f"; {NOT_RUN_NO_CUDA}"
    if code == EXIT_PASS:
        return "RESULT: PASS - every check passed (exit 0)"
    if code == EXIT_FAIL:
        return f"RESULT: FAIL - {len(failed)} check(s) failed: {', '.join(c.name for c in failed[:6])}{not_run} (exit 1)"
    if code == EXIT_BROKEN:
        first = next((c for c in failed if c.broken), None)
        what = f"{first.name}: {_first_line(first.detail)}" if first else "broken"
        return f"RESULT: BROKEN - {what} (exit 2)"
    if code == EXIT_NO_CUDA:
        return f"RESULT: {NOT_RUN_NO_CUDA} - static checks passed, correctness NOT established (exit 3)"
    return "RESULT: unknown"


def render(report: Report) -> str:
    head = [f"kgen validate: {report.file}", f"reference:     {report.reference or '-'}"]
    if report.spec:
        head.append(f"spec:          {report.spec} {json.dumps(report.params, sort_keys=True)}")
    env = [report.info.get(k) for k in ("torch_version", "gpu")]
    head.append(f"torch {env[0] or '?'}, GPU {env[1] or 'none'}; atol={report.settings.get('atol')} "
                f"rtol={report.settings.get('rtol')} trials={report.settings.get('trials')} "
                f"backward={report.settings.get('backward')}"
                + ("" if report.settings.get("tf32", True) else "; TF32 off (cuDNN, matmul)"))
    head.append(f"precision:     {precision_text(report.settings)}")
    parts = ["\n".join(head), render_table(report.checks)]
    details = render_details(report.checks)
    if details:
        parts.append(details)
    if report.kernels:
        parts.append(render_kernels(report.kernels))
    if report.bench:
        parts.append(render_bench(report.bench))
    parts.append(render_verdicts(report))
    parts.append(summary_line(report))
    return "\n\n".join(parts) + "\n"
