"""kgen.bench.family.merge (benchmarks/family_merge.py): one family table from several runs, each problem's row
from the last run that timed it (a later run that only checked a problem does not replace an earlier timed row),
the run's folder named."""
import gzip
import json

from kgen.bench import family as family_merge


def row(problem, new_ms=None, verdict=0):
    r = {"problem": problem, "reference": f"{problem}.py", "emit": 0, "emit_error": "",
         "plan": ["kgen region 0: GroupNorm  [x [2, 8, 4, 4] -> gn [2, 8, 4, 4]; parameters: none]"],
         "validate": {"exit": verdict, "seconds": 1.0, "tail": []}}
    if new_ms is not None:
        r["bench"] = {"forward": {"new_ms": new_ms, "eager_ms": 9.0, "compile_ms": 8.0},
                      "forward_backward": {"new_ms": 2 * new_ms, "eager_ms": 19.0, "compile_ms": 18.0}}
    return r


def test_last_timed_run_wins(tmp_path):
    first, second, third = tmp_path / "first", tmp_path / "second_a", tmp_path / "second_b"
    for d in (first, second, third):
        d.mkdir()
    (first / "family.json.gz").write_bytes(gzip.compress(json.dumps(
        [row("L1-35", 7.5), row("L2-19", 8.6), row("L2-37", 6.7)]).encode()))
    (second / "family.json").write_text(json.dumps([row("L2-37", 6.4), row("L2-30", 2.7)]))
    (third / "family.json").write_text(json.dumps([row("L2-30", None, verdict=1), row("L2-37", 6.1)]))
    rows = family_merge.merge([first, second, third])
    by = {r["problem"].split()[0]: r for r in rows}
    assert [r["problem"] for r in rows] == ["L1-35 (first)", "L2-19 (first)", "L2-30 (second_a)", "L2-37 (second_b)"]
    assert by["L2-37"]["bench"]["forward"]["new_ms"] == 6.1
    assert by["L2-30"]["validate"]["exit"] == 0          # the untimed later row did not replace the timed one
    out = tmp_path / "merged"
    assert family_merge.merge_main([str(out), str(first), str(second), str(third)]) == 0
    table = (out / "FAMILY.md").read_text()
    assert "| L2-37 (second_b) |" in table and "6.100 / 9.000 / 8.000" in table
    assert len(json.loads(gzip.decompress((out / "family.json.gz").read_bytes()))) == 4


def test_a_problem_only_checked_anywhere_still_has_its_row(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "family.json").write_text(json.dumps([row("L2-11", None, verdict=2)]))
    (b / "family.json").write_text(json.dumps([row("L2-11", None, verdict=0)]))
    rows = family_merge.merge([a, b])
    assert len(rows) == 1 and rows[0]["problem"] == "L2-11 (b)" and rows[0]["validate"]["exit"] == 0


def test_rows_of_other_emit_options_stand_beside_the_default_ones(tmp_path):
    a, b = tmp_path / "exact", tmp_path / "fast"
    a.mkdir(), b.mkdir()
    (a / "family.json").write_text(json.dumps([row("L2-19", 8.6), row("L2-21", 2.9)]))
    (b / "family.json").write_text(json.dumps([dict(row("L2-19", 6.9), emit_args="--conv fast")]))
    rows = family_merge.merge([a, b])
    assert [r["problem"] for r in rows] == ["L2-19 (exact)", "L2-19 (fast)", "L2-21 (exact)"]
    assert [r["bench"]["forward"]["new_ms"] for r in rows] == [8.6, 6.9, 2.9]
    assert family_merge.merge_main([str(tmp_path / "merged"), str(a), str(b)]) == 0
    table = (tmp_path / "merged" / "FAMILY.md").read_text()
    assert "| L2-19 (fast) (--conv fast) |" in table and "| L2-19 (exact) |" in table


def test_a_timing_run_without_checks_shows_the_last_checks(tmp_path):
    """A run timed with --skip-checks has no verdicts: its row takes those of the last run that checked the
    problem (a later one than the row's own timing), and the table names both runs."""
    checks, timing = tmp_path / "checks", tmp_path / "timing"
    checks.mkdir(), timing.mkdir()
    checked = dict(row("L2-75", None, verdict=0), kernelbench={"correctness": True, "runtime": 2.7, "ref_runtime": 3.1})
    (checks / "family.json").write_text(json.dumps([checked]))
    unchecked = row("L2-75", 2.7)
    del unchecked["validate"]
    (timing / "family.json").write_text(json.dumps([unchecked]))
    (merged,) = family_merge.merge([checks, timing])
    assert merged["problem"] == "L2-75 (timing; checks checks)" and merged["validate"]["exit"] == 0
    assert merged["kernelbench"]["correctness"] and merged["bench"]["forward"]["new_ms"] == 2.7
    (alone,) = family_merge.merge([timing])
    assert alone["problem"] == "L2-75 (timing)" and not alone.get("validate")


def test_the_host_column_shows_the_steps_gpu_time_where_the_bench_measured_it():
    from kgen.bench.family_table import _host
    bench = {"forward_backward": {"new_host_ms": 0.934, "eager_host_ms": 0.798}}
    assert _host({"bench": bench}) == "0.934 / 0.798"
    bench["gpu_us_per_step"] = {"kgen": {"forward": 140.0, "forward_backward": 1210.5},
                                "eager": {"forward": 130.0, "forward_backward": 790.0}}
    assert _host({"bench": bench}) == "0.934 / 0.798; GPU 1.210 / 0.790"
    assert _host({"bench": {}}) == "-"
