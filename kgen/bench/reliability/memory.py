"""Section (b): memory across 1,000 iterations and build-once (kgen.bench.runtime_checks)."""
from __future__ import annotations

import torch

from kgen.bench.reliability.common import first_line, out_of_time
from kgen.golden import GENERATED, GOLDEN


def memory_rows(iterations: int) -> list[dict]:
    from kgen.bench.runtime_checks import memory_check

    rows = []
    for file_name in GOLDEN:
        if out_of_time():
            rows.append({"check": f"memory: {iterations} x forward+backward", "subject": file_name,
                         "verdict": "NOT RUN", "detail": "the time budget ran out first", "data": {}})
            continue
        try:
            r = memory_check(GENERATED / file_name, iterations=iterations)
            rows.append({"check": f"memory: {iterations} x forward+backward", "subject": file_name,
                         "verdict": "PASS" if r["ok"] else "FAIL",
                         "detail": f"allocated after iteration {r['probe']}: {r['allocated_at_probe']} B, after "
                                   f"{iterations}: {r['allocated_at_end']} B ({r['seconds']:.1f} s)", "data": r})
        except Exception as error:
            rows.append({"check": f"memory: {iterations} x forward+backward", "subject": file_name,
                         "verdict": "CRASH", "detail": first_line(error), "data": {}})
        torch.cuda.empty_cache()
    return rows


def build_rows() -> list[dict]:
    from kgen.bench.prebuild import emit_to_file
    from kgen.bench.runtime_checks import build_once, two_files

    rows = []
    try:
        r = build_once(GENERATED / "groupnorm.py")
        rows.append({"check": "build once: same file executed twice in one process", "subject": "groupnorm.py",
                     "verdict": "PASS" if r["ok"] else "FAIL",
                     "detail": f"loads {r['first_load_s']:.2f} s then {r['second_load_s']:.2f} s; ninja runs "
                               f"{r['ninja_runs_first']} then {r['ninja_runs_second']}; extension {r['extension'][1]}",
                     "data": r})
    except Exception as error:
        rows.append({"check": "build once: same file twice", "subject": "groupnorm.py", "verdict": "CRASH",
                     "detail": first_line(error), "data": {}})
    try:
        paths = [emit_to_file("groupnorm", {"groups": 8}), emit_to_file("groupnorm", {"groups": 4})]
        r = two_files(paths)
        rows.append({"check": "build once: two different emitted files in one process",
                     "subject": "groupnorm --groups 8 / --groups 4", "verdict": "PASS" if r["ok"] else "FAIL",
                     "detail": f"extensions {r['extensions']}; max err vs reference "
                               + ", ".join(f"{e:.2e}" for e in r["max_err"]), "data": r})
    except Exception as error:
        rows.append({"check": "build once: two different emitted files", "subject": "groupnorm g8/g4",
                     "verdict": "CRASH", "detail": first_line(error), "data": {}})
    return rows
