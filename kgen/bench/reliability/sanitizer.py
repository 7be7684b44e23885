"""Sections (d) and (d2): compute-sanitizer's runs (benchmarks/sanitize.sh) and the evidence that explains a
report not about kgen's kernels."""
from __future__ import annotations

from pathlib import Path

from kgen.bench.reliability.common import BULK_STORE_PROBE, FAST_MODE_PROBE, SANITIZER_TOOLS
from kgen.golden import GENERATED, GOLDEN


def _sanitizer_row(r) -> dict:
    return {"file": r.file, "tool": r.tool, "exit": r.exit, "errors": r.errors, "seconds": r.seconds,
            "verdict": "CLEAN" if r.clean else "REPORTED", "where": r.where(), "racecheck": r.racecheck,
            "log": r.log, "script": r.script_line, "ours": sum(r.ours.values())}


def sanitizer_rows(logdir: Path | None) -> list[dict]:
    """The runs of the files (generated/, .build/) in a sanitize.sh log directory and their probes; the kernel
    families' runs (family:NAME) are family_sanitizer_rows'."""
    from kgen.bench.families import is_target
    from kgen.bench.sanitizer_logs import summarize

    if logdir is None:
        return []
    rows = [_sanitizer_row(r) for r in summarize(logdir) if not is_target(r.file)]
    library_writes_explained(rows)
    bulk_stores_explained(rows)
    done = {(r["file"], r["tool"]) for r in rows}
    for file_name in GOLDEN:   # a run that never finished (the step's time limit) is a row too, not a gap
        for tool in SANITIZER_TOOLS:
            if (f"generated/{file_name}", tool) not in done:
                rows.append({"file": f"generated/{file_name}", "tool": tool, "exit": None, "errors": None,
                             "seconds": None, "verdict": "NOT RUN", "where": "", "racecheck": "", "log": "",
                             "script": ""})
    return rows


def library_writes_explained(rows: list[dict]) -> None:
    """initcheck cannot see cuDNN's writes of a channels-last conv output (H100: sm90 kernels), so every read
    of it is reported, by whichever kernel reads it. The verdict of the --conv fast initcheck run becomes
    LIBRARY-WRITES, not a failure, only when both probes agree: PyTorch's own reduction over that output is
    reported too, AND our fast-mode kernels on PyTorch-written inputs report 0 errors."""
    probes = {r["tool"]: r for r in rows if r["file"].endswith(FAST_MODE_PROBE)}
    pytorch, kernels = probes.get("initcheck-probe-pytorch"), probes.get("initcheck-probe-kernels")
    for r in probes.values():   # a probe is evidence, not a verdict on a solution
        r["verdict"] = "PROBE"
    if not (pytorch and kernels and (pytorch["errors"] or 0) > 0 and kernels["errors"] == 0):
        return
    for r in rows:
        if r["file"].endswith("_fast.py") and r["tool"] == "initcheck" and r["verdict"] == "REPORTED":
            r["verdict"] = "LIBRARY-WRITES"
            r["where"] += ("; the same reads are reported for PyTorch's own sum over cuDNN's channels-last output "
                           f"(probe: {pytorch['errors']} errors) and our fast-mode kernels on PyTorch-written "
                           "inputs report 0: initcheck does not see cuDNN's writes")


BULK_STORE = "cp.async.bulk.global.shared"


def bulk_stores_explained(rows: list[dict], root: Path = GENERATED.parent) -> None:
    """initcheck does not register the writes of Hopper bulk (TMA) stores (benchmarks/sanitize_bulk_stores.py:
    y prefilled with NaN comes back all overwritten). The one-pass GroupNorm forward writes y only that way, so
    PyTorch's kernels reading y afterwards are reported. The verdict of such an initcheck run becomes
    BULK-STORES, not a failure, only when all three hold: the file's kernels do use bulk stores and no report
    names one of our kernels; the two-pass build of the same kernels (.build/<name>_twopass.py) is CLEAN under
    initcheck in the same run; and the bulk-store probe (sanitize_bulk_stores.py one-pass, every value
    of a NaN-filled y overwritten and equal to the two-pass result) exited 0 in the same run."""
    probe = next((r for r in rows if r["file"].endswith(BULK_STORE_PROBE)), None)
    if probe is not None:
        probe["verdict"] = "PROBE"
    clean = {(r["file"], r["tool"]) for r in rows if r["verdict"] == "CLEAN"}
    for r in rows:
        if r["tool"] != "initcheck" or r["verdict"] != "REPORTED" or "OURS" in r["where"]:
            continue
        path = root / r["file"]
        twopass = f".build/{path.stem}_twopass.py"
        uses_bulk = path.is_file() and BULK_STORE in path.read_text()
        if uses_bulk and (twopass, "initcheck") in clean and probe is not None and probe["exit"] == 0:
            r["verdict"] = "BULK-STORES"
            r["where"] += (f"; y is written only by bulk (TMA) stores, which initcheck does not register: {twopass} "
                           "(the same kernels, two passes) is clean and the bulk-store probe finds every value of "
                           "y written")


PROBE_TOOLS = ("initcheck-library-probe", "initcheck-reference-probe", "bulk-store-probe")


def family_sanitizer_rows(logdir: Path | None) -> list[dict]:
    """The kernel families' runs (targets family:NAME) in a sanitize.sh log directory, their probes, and the
    PyTorch probe of sanitize_fast_mode.py; every family x tool that did not run is a NOT RUN row."""
    from kgen.bench.families import FAMILIES, is_target
    from kgen.bench.sanitizer_logs import summarize

    if logdir is None:
        return []
    rows = [_sanitizer_row(r) for r in summarize(logdir)
            if is_target(r.file) or (r.file.endswith(FAST_MODE_PROBE) and r.tool == "initcheck-probe-pytorch")]
    family_reports_explained(rows)
    done = {(r["file"], r["tool"]) for r in rows}
    for f in FAMILIES:
        for tool in SANITIZER_TOOLS:
            if (f.target, tool) not in done:
                rows.append({"file": f.target, "tool": tool, "exit": None, "errors": None, "seconds": None,
                             "verdict": "NOT RUN", "where": "", "racecheck": "", "log": "", "script": "", "ours": 0})
    order = {f.target: i for i, f in enumerate(FAMILIES)}
    tools = list(SANITIZER_TOOLS) + list(PROBE_TOOLS)
    rows.sort(key=lambda r: (order.get(r["file"], -1), tools.index(r["tool"]) if r["tool"] in tools else 99))
    return rows


def library_kernels(where: str) -> set[str]:
    """The library kernels a row's "where" names ("library: a x200, b x3; ..." -> {a, b})."""
    if not where.startswith("library: "):
        return set()
    listed = where[len("library: "):].split(";")[0]
    return {part.strip().rsplit(" x", 1)[0] for part in listed.split(",") if part.strip()}


def family_reports_explained(rows: list[dict], file_of=None) -> None:
    """initcheck reports a family's run may carry that are not about its kernels, explained only with the evidence
    of the same sanitize.sh run (probes are evidence, not verdicts: PROBE):
    LIBRARY-WRITES (families with the "library-writes" probe, --conv fast): initcheck does not see cuDNN's writes
      (H100: sm90 kernels), so every read of a cuDNN output is reported, whichever kernel reads it. Explained when
      PyTorch's own sum over cuDNN's channels-last output is reported too (sanitize_fast_mode.py, errors > 0) AND
      the family's run with every cuDNN output (and gradient) copied by PyTorch before a kgen kernel reads it
      (sanitize.py --probe library-writes, under initcheck) finished and reports none of our kernels.
    LIBRARY-OWN (families with the "reference" probe): reports that name only library kernels (cuDNN, PyTorch),
      none of ours, explained when the reference alone (sanitize.py --probe reference, PyTorch without any kgen
      kernel, same init, inputs and calls) is reported by initcheck in every library kernel the family's run names.
    BULK-STORES (families with the "bulk-store" probe): initcheck does not register Hopper bulk (TMA) stores.
      Explained when no report names our kernels, the file's kernels use bulk stores, the counterpart family (the
      same file at a shape its planner takes without them) is CLEAN under initcheck, and the family's bulk-store
      probe (sanitize.py --probe bulk-store: y in NaN-filled memory, every value overwritten and equal to the
      reference) exited 0.
    file_of: a target's emitted file (default: reliability_families.target_file)."""
    from kgen.bench.families import family, is_target, target_file

    file_of = file_of or target_file
    by = {(r["file"], r["tool"]): r for r in rows}
    pytorch = next((r for r in rows if r["tool"] == "initcheck-probe-pytorch"), None)
    for r in rows:
        if r["tool"] in PROBE_TOOLS or r["tool"] == "initcheck-probe-pytorch":
            r["verdict"] = "PROBE"
    for r in rows:
        if not is_target(r["file"]) or r["tool"] != "initcheck" or r["verdict"] != "REPORTED":
            continue
        f = family(r["file"])
        if "library-writes" in f.probes:
            probe = by.get((r["file"], "initcheck-library-probe"))
            if (pytorch is not None and (pytorch["errors"] or 0) > 0 and probe is not None and probe["exit"] in (0, 9)
                    and probe["script"] and not probe["ours"] and "NOT FINITE" not in probe["script"]):
                r["verdict"] = "LIBRARY-WRITES"
                r["where"] += ("; with cuDNN's outputs and gradients copied by PyTorch before our kernels read them, "
                               f"none of our kernels is reported (probe: {probe['errors']} reports, all in library "
                               "kernels), and PyTorch's own sum over cuDNN's channels-last output is reported "
                               f"(probe: {pytorch['errors']}): initcheck does not see cuDNN's writes")
        if "reference" in f.probes and not r["ours"]:
            probe = by.get((r["file"], "initcheck-reference-probe"))
            named = library_kernels(r["where"])
            if named and probe is not None and probe["exit"] == 9 and named <= library_kernels(probe["where"]):
                r["verdict"] = "LIBRARY-OWN"
                r["where"] += (f"; the reference alone, PyTorch without any kgen kernel, is reported in the same library "
                               f"kernels (probe: {probe['errors']} reports): the library's own reads")
        if "bulk-store" in f.probes and f.counterpart and not r["ours"]:
            path = file_of(r["file"])
            counterpart = by.get((f"family:{f.counterpart}", "initcheck"))
            probe = by.get((r["file"], "bulk-store-probe"))
            uses_bulk = path.is_file() and BULK_STORE in path.read_text()
            if uses_bulk and counterpart is not None and counterpart["verdict"] == "CLEAN" and probe is not None \
                    and probe["exit"] == 0:
                r["verdict"] = "BULK-STORES"
                r["where"] += (f"; y is written only by bulk (TMA) stores, which initcheck does not register: "
                               f"family:{f.counterpart} (the same file, the planner's two-pass kernels) is clean and "
                               "the bulk-store probe finds every value of y written")
