"""Section (c): the validator on every adversarial file of tests/validate/adversarial.py."""
from __future__ import annotations

from kgen.bench.reliability.common import first_line, out_of_time


def validator_rows(on_row=lambda rows: None) -> list[dict]:
    """One row per adversarial file; every file is listed from the start as NOT RUN and `on_row(rows)` is
    called after each run, so a step cut by its time limit still leaves a complete table."""
    from tests.validate.adversarial import all_cases, judge as judge_case, run_case

    cases = list(all_cases())
    rows = [{"file": case.path.name, "mode": case.mode, "defect": case.defect, "expected": case.exit,
             "observed": None, "seconds": None, "leftover": None, "verdict": "NOT RUN", "failed_checks": [],
             "detail": "the step's time ran out first"} for case in cases]
    for index, case in enumerate(cases):
        if out_of_time():
            break   # the rest stay NOT RUN
        try:
            outcome = run_case(case)
            problems = judge_case(case, outcome.code, outcome.failed)
            if outcome.leftovers:
                problems.append(f"leftover processes {outcome.leftovers}")
            rows[index] = {"file": case.path.name, "mode": case.mode, "defect": case.defect,
                           "expected": case.exit, "observed": outcome.code, "seconds": round(outcome.seconds, 1),
                           "leftover": bool(outcome.leftovers), "verdict": "OK" if not problems else "MISMATCH",
                           "failed_checks": outcome.failed, "detail": "; ".join(problems) or outcome.detail}
        except Exception as error:
            rows[index] = {"file": case.path.name, "mode": case.mode, "defect": case.defect, "expected": case.exit,
                           "observed": None, "seconds": None, "leftover": None, "verdict": "CRASH",
                           "failed_checks": [], "detail": first_line(error)}
        print(f"validator {case.mode:7s} {case.path.name:45s} expected {case.exit} observed "
              f"{rows[index]['observed']} {rows[index]['verdict']}", flush=True)
        on_row(rows)
    return rows
