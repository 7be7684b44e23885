"""One family table from several family.py runs: `python benchmarks/family_merge.py OUT RUN_DIR [RUN_DIR ...]`.

Each RUN_DIR holds a family.json (or family.json.gz); a problem's row is taken from the LAST run that timed it
(the last that has it, where none timed it), and the table names that run beside the problem; a row timed with
--skip-checks takes its verdicts from the last run that checked the problem, and names that run too. Every row's kgen / eager / torch.compile times come from one
run (family.py times the three contenders of a problem back to back), so a row's ratios stay those of one run;
rows of different runs are not compared with each other. Writes OUT/FAMILY.md and OUT/family.json.gz."""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from family import table  # noqa: E402


def load(run: Path) -> list[dict]:
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
    with other emit options (family.py --emit-args) gives rows of their own, after the default ones."""
    rows: dict[tuple, dict] = {}
    checked: dict[tuple, dict] = {}   # the last row of each problem with `kgen validate`'s verdict
    for run in runs:
        for row in load(run):
            key = (row["problem"], row.get("emit_args", ""))
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


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = merge([Path(p) for p in sys.argv[2:]])
    (out / "FAMILY.md").write_text(table(rows))
    (out / "family.json.gz").write_bytes(gzip.compress(json.dumps(rows, indent=1, default=str).encode(), mtime=0))
    print(f"family_merge: {len(rows)} problems -> {out / 'FAMILY.md'}")


if __name__ == "__main__":
    main()
