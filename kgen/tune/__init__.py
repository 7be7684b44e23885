"""`kgen tune`: the emit options chosen by measurement on this GPU, the winner written as the file.

    kgen tune REFERENCE.py|PRESET [-o FILE] [--budget S] [--precision fp32|fp16|bf16] [--block-sizes 128,256,512]
              [--json P] [--no-cache]

1. candidates.py: every combination of block size, conv mode and forward that changes this plan's file (and the
   region kernels forced, the steps as Python autograd Functions, at the default's other options), the
   default first.
2. Each candidate is emitted, all are built at once, each is `kgen validate`d (a candidate that fails is never
   timed, and never wins), and the passing ones are timed together in one process against eager and
   torch.compile (measure.py, timing.py). `--budget` starts no validation after that many seconds; the timing
   then runs on what passed.
3. The winner: the fastest forward+backward (forward where the reference has no gradient) of the candidates faster
   than the default in every timing round, the default where none is. Its file is what `kgen emit --ref REFERENCE --choices RECORD` writes (its header's kgen-params; a
   preset's, `kgen emit PRESET` with the options): tuning adds nothing to the file but the choice.
4. What was measured is cached (cache.py) under the reference, its inputs, the GPU, the versions, the precision, the
   TF32 settings (they decide which regions are faithful) and the candidates: the same tune again emits the winner
   without a build.
"""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kgen import __version__
from kgen.ref.tf32 import tf32_now
from kgen.ref.trace import RefError
from kgen.tune import cache
from kgen.tune.candidates import (DEFAULT_BLOCK_SIZES, TWO_PASS_MIN_PLANE, Choices, candidates, onepass_pruned,
                                  parse_choices, two_pass_cliff)
from kgen.tune.measure import GpuRunner
from kgen.tune.target import Target, target_of


@dataclass
class TuneResult:
    rows: list[dict]                  # a row a candidate: choices, label, build, verdict, summary, forward_ms, ...
    eager: dict = field(default_factory=dict)     # {"forward": ms, "forward_backward": ms}
    compile: dict = field(default_factory=dict)
    winner: int = 0                   # index into rows
    cached: bool = False              # read from the cache, nothing built
    complete: bool = True             # every candidate measured (not cut by the budget)
    key: str = ""

    def as_json(self) -> dict:
        return {"rows": self.rows, "eager": self.eager, "compile": self.compile, "winner": self.winner,
                "winner_choices": self.rows[self.winner]["choices"], "cached": self.cached,
                "complete": self.complete, "key": self.key}


def tune(target: Target, runner, work: Path, precision: str = "fp32", budget: float | None = None,
         block_sizes=DEFAULT_BLOCK_SIZES, use_cache: bool = True, log=lambda line: None) -> TuneResult:
    """Measures (or reads from the cache) every candidate of `target`; `work` holds the candidates' files."""
    started = time.monotonic()
    ref = target.load()
    found = candidates(ref, block_sizes, target.takes, target.default)
    gpu = runner.gpu()
    if not gpu:
        raise RefError("kgen tune needs a CUDA device: it times the candidates on it")
    import torch
    # each candidate by all its options, not its record (the options that differ from the defaults), so that a
    # result measured under other defaults is never read for these
    key = cache.cache_key(ref.sha256, ref.input_shapes, gpu, torch.__version__, __version__, precision,
                          [json.dumps(c.options(), sort_keys=True) for c in found],
                          {**target.key_fields(), "tf32": {op: bool(tf32_now(op)) for op in ("conv", "matmul")}})
    known = cache.load(key) if use_cache else None
    if known is not None:
        log(f"{len(found)} candidates, measured before on this GPU (cache {key}): nothing to build")
        result = TuneResult(known["rows"], known["eager"], known["compile"], cached=True, key=key)
        result.winner = choose(result.rows)
        return result
    log(f"{len(found)} candidates: {'; '.join(c.label() for c in found)}")
    if onepass_pruned(ref, target.takes):
        log("the one-pass forward is not tried: every region that takes it feeds an op rounding to TF32 at these "
            "settings, so it runs PyTorch's GroupNorm statistics whatever the option")
    if "region_kernels" in target.takes and two_pass_cliff(ref, "exact"):
        log(f"the two-pass region kernels are not forced: a region's planes hold fewer than {TWO_PASS_MIN_PLANE} "
            "values, where they idle most of each warp (the planner gives such planes other kernels)")
    result = measure(target, found, runner, work, started, budget, log)
    result.key = key
    result.winner = choose(result.rows)
    if result.complete:
        cache.store(key, {"rows": result.rows, "eager": result.eager, "compile": result.compile})
    return result


def measure(target: Target, found: list[Choices], runner, work: Path, started: float, budget: float | None,
            log) -> TuneResult:
    work.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, choices in enumerate(found):
        path = work / f"candidate_{k}.py"
        path.write_text(target.emit(choices, path))
        paths.append(path)
    rows = [{"choices": c.record(), "label": c.label(), "build": "", "verdict": "not run", "summary": "",
             "forward_ms": None, "forward_backward_ms": None} for c in found]
    built = runner.build(paths)
    log(f"built {sum(not e for e in built.values())} of {len(paths)}")
    complete = True

    def validate(k: int) -> None:
        nonlocal complete
        if budget is not None and time.monotonic() - started > budget:
            complete = False
            rows[k]["summary"] = "not validated: the budget was spent"
            return
        verdict = runner.validate(paths[k])
        rows[k].update(verdict=verdict["result"], summary=verdict["summary"][:200])
        log(f"[{k + 1}/{len(paths)}] {found[k].label()}: kgen validate {verdict['result']}")

    for k, path in enumerate(paths):
        if built[path]:
            rows[k].update(build="failed", verdict="BROKEN", summary=built[path].splitlines()[-1][:200])
    # Validations run a few at a time (each a child process, light on the GPU); timing never overlaps them.
    with ThreadPoolExecutor(getattr(runner, "validate_jobs", 1)) as pool:
        list(pool.map(validate, [k for k, path in enumerate(paths) if not built[path]]))
    passing = [k for k in range(len(paths)) if rows[k]["verdict"] == "PASS"]
    timing = runner.time([paths[k] for k in passing]) if passing else {}
    if "error" in timing:
        raise RefError(f"kgen tune: {timing['error']}")
    rounds_of = timing.get("rounds", []) + [[]] * len(passing)   # a timing without rounds: none recorded
    for k, ms, rounds in zip(passing, timing.get("candidates", []), rounds_of):
        rows[k].update(forward_ms=ms["forward"], forward_backward_ms=ms["forward_backward"])
        for mode in ("forward", "forward_backward"):
            rows[k][f"{mode}_rounds"] = [t[mode] for t in rounds if t.get(mode) is not None]
        if ms.get("error"):
            rows[k]["timing_error"] = ms["error"][:200]
            log(f"{found[k].label()}: a timed call raised: {ms['error'][:200]}")
    for k in passing:
        best = rows[choose(rows)]["label"]
        log(f"{found[k].label()}: forward {_ms(rows[k]['forward_ms'])}, forward+backward "
            f"{_ms(rows[k]['forward_backward_ms'])} ms (best: {best})")
    return TuneResult(rows, timing.get("eager", {}), timing.get("compile", {}), complete=complete)


def choose(rows: list[dict]) -> int:
    """The passing row with the least forward+backward time (forward time where no row has one) among those CLEARLY
    faster than the default row (index 0): each of its timing rounds faster than every round of the default's, so
    that a host-bound reference, whose times move by tens of percent between rounds, keeps its default rather than
    the luckiest candidate. The default where none is, and where no row passed or was timed."""
    timed = [k for k, row in enumerate(rows) if row["verdict"] == "PASS" and row["forward_ms"] is not None]
    if not timed:
        return 0
    metric = "forward_backward_ms" if all(rows[k]["forward_backward_ms"] is not None for k in timed) else "forward_ms"
    if 0 in timed:
        timed = [k for k in timed if k == 0 or _clearly_faster(rows[k], rows[0], metric)]
    return min(timed, key=lambda k: (rows[k][metric], k))


def _clearly_faster(row: dict, base: dict, metric: str) -> bool:
    """Every round of `row` under every round of `base` (their medians where the rounds are not recorded)."""
    mode = metric[:-len("_ms")]
    mine = row.get(f"{mode}_rounds") or [row[metric]]
    theirs = base.get(f"{mode}_rounds") or [base[metric]]
    return max(mine) < min(theirs)


def winner(result: TuneResult) -> Choices:
    return parse_choices(result.rows[result.winner]["choices"])


def winner_text(target: Target, result: TuneResult, output: str | None) -> str:
    """The winner's file, as `target.command(winner, output)` writes it."""
    return target.emit(winner(result), output)


def table(result: TuneResult) -> list[str]:
    """The report: a row a candidate, its verdict and times, and each time against the default's and eager's."""
    base = result.rows[0]
    lines = ["| candidate | kgen validate | forward ms | x default | forward+backward ms | x default | "
             "rounds, forward+backward |", "|---|---|---|---|---|---|---|"]
    for k, row in enumerate(result.rows):
        mark = " (winner)" if k == result.winner else ""
        lines.append(f"| {row['label']}{mark} | {row['verdict']} | {_ms(row['forward_ms'])} | "
                     f"{_ratio(base['forward_ms'], row['forward_ms'])} | {_ms(row['forward_backward_ms'])} | "
                     f"{_ratio(base['forward_backward_ms'], row['forward_backward_ms'])} | "
                     f"{_span(row.get('forward_backward_rounds'))} |")
    for name, times in (("eager", result.eager), ("torch.compile", result.compile)):
        if times:
            lines.append(f"| {name} | - | {_ms(times.get('forward'))} | - | {_ms(times.get('forward_backward'))} | - "
                         f"| - |")
    for row in result.rows:
        if row.get("timing_error"):
            lines.append(f"{row['label']}: passed kgen validate, but a timed call raised: {row['timing_error']}")
    if result.winner == 0:
        lines.append("No candidate beat the default in every timing round: the default is the file.")
    return lines


def _span(rounds) -> str:
    """`min-max` of a row's rounds, `-` where it has none."""
    return f"{min(rounds):.3f}-{max(rounds):.3f}" if rounds else "-"


def _ms(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ratio(base, value) -> str:
    return "-" if not base or not value else f"{base / value:.2f}"
