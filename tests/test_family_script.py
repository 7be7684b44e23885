"""kgen.bench.family (benchmarks/family.py) on the CPU, its subprocesses replaced: a check that runs out of GPU memory beside the
other workers is judged again alone (never recorded as the solution's verdict), --resume keeps what an earlier
call finished and does only the rest, and the table's bandwidth column counts the bytes each kernel must move."""
import json
import sys
from pathlib import Path

import pytest

from kgen.bench import ROOT
from kgen.bench import family, family_table

PROBLEMS = ROOT.parent / "shared" / "kernelbench" / "problems"


def fake_runner(calls, out_of_memory_once=()):
    seen = set()

    def run(cmd, timeout, env=None):
        text = " ".join(map(str, cmd))
        calls.append(text)
        if "kgen.cli emit" in text:
            return 0, ("kgen region 0: GroupNorm  [x [2, 8, 4, 4] -> gn [2, 8, 4, 4]; parameters: none]"
                       if "--explain" in text else ""), 0.1
        if "prebuild" in text:
            return 0, "prebuild: ok", 0.1
        if "kgen.cli validate" in text:
            problem = next(p for p in ("L1-35", "L2-30", "L2-37") if p in text)
            if problem in out_of_memory_once and problem not in seen:
                seen.add(problem)
                return 2, "torch.OutOfMemoryError: CUDA out of memory", 1.0
            return 0, "RESULT: PASS", 1.0
        if "kb_eval" in text:
            return 0, '{"correctness": true, "runtime": 1.0, "ref_runtime": 2.0}', 1.0
        if "--warm-compile" in text:
            return 0, "warm-compile: done", 0.1
        json_path = Path(cmd[cmd.index("--json") + 1])
        json_path.write_text(json.dumps({"forward": {"new_ms": 1.0, "eager_ms": 2.0, "compile_ms": 1.5},
                                         "forward_backward": {"new_ms": 3.0, "eager_ms": 4.0, "compile_ms": 3.5}}))
        return 0, "forward: 1.0\nforward_backward: 3.0", 0.1
    return run


def run_family(monkeypatch, out, calls, *extra, out_of_memory_once=()):
    monkeypatch.setattr(family, "run", fake_runner(calls, out_of_memory_once))
    monkeypatch.setattr(sys, "argv", ["family.py", str(PROBLEMS), str(PROBLEMS.parent), str(out), "--only",
                                      "35,30,37", "--bench", *extra])
    family.main()
    return {row["problem"]: row for row in json.loads((out / "family.json").read_text())}


needs_problems = pytest.mark.skipif(not PROBLEMS.is_dir(), reason="../shared/kernelbench/problems not present")


@needs_problems
def test_out_of_memory_beside_others_is_judged_again_alone(monkeypatch, tmp_path):
    calls = []
    rows = run_family(monkeypatch, tmp_path, calls, "--workers", "3", out_of_memory_once=("L1-35",))
    assert rows["L1-35"]["validate"]["exit"] == 0   # the second, lone check is the one recorded
    assert sum("kgen.cli validate" in c and "L1-35" in c for c in calls) == 2
    assert sum("kgen.cli validate" in c and "L2-30" in c for c in calls) == 1
    assert all(row["kernelbench"]["correctness"] for row in rows.values())


@needs_problems
def test_out_of_memory_alone_is_the_verdict(monkeypatch, tmp_path):
    calls = []
    rows = run_family(monkeypatch, tmp_path, calls, "--workers", "1", out_of_memory_once=("L2-37",))
    assert rows["L2-37"]["validate"]["exit"] == 2
    assert sum("kgen.cli validate" in c and "L2-37" in c for c in calls) == 1


@needs_problems
def test_resume_does_only_what_is_missing(monkeypatch, tmp_path):
    first = []
    rows = run_family(monkeypatch, tmp_path, first, "--workers", "2")
    assert all("bench" in row for row in rows.values())
    del rows["L2-37"]["bench"]                      # as if the first call's budget ran out there
    (tmp_path / "family.json").write_text(json.dumps(list(rows.values())))
    second = []
    rows = run_family(monkeypatch, tmp_path, second, "--workers", "2", "--resume")
    assert not any("kgen.cli validate" in c or "kb_eval" in c for c in second)
    timed = [c for c in second if "kgen.bench.timing" in c and "--warm-compile" not in c]
    assert len(timed) == 1 and "L2-37" in timed[0]
    assert rows["L2-37"]["bench"]["forward"]["new_ms"] == 1.0


@needs_problems
def test_skip_kernelbench_validates_and_times_without_the_evaluator(monkeypatch, tmp_path):
    calls = []
    rows = run_family(monkeypatch, tmp_path, calls, "--workers", "2", "--skip-kernelbench")
    assert not any("kb_eval" in c for c in calls)
    assert sum("kgen.cli validate" in c for c in calls) == 3
    assert all(row["validate"]["exit"] == 0 and "kernelbench" not in row and "bench" in row for row in rows.values())


@needs_problems
def test_resume_of_some_problems_keeps_the_other_rows(monkeypatch, tmp_path):
    rows = run_family(monkeypatch, tmp_path, [], "--workers", "2")
    del rows["L2-37"]["bench"]
    (tmp_path / "family.json").write_text(json.dumps(list(rows.values())))
    monkeypatch.setattr(family, "run", fake_runner([]))
    monkeypatch.setattr(sys, "argv", ["family.py", str(PROBLEMS), str(PROBLEMS.parent), str(tmp_path), "--only",
                                      "37", "--bench", "--resume"])
    family.main()
    after = {row["problem"]: row for row in json.loads((tmp_path / "family.json").read_text())}
    assert sorted(after) == ["L1-35", "L2-30", "L2-37"] and "bench" in after["L2-37"]
    assert after["L1-35"] == rows["L1-35"]   # a row this run did not touch, as it was


def test_traffic_counts_each_kernels_input_and_output():
    plan = ["PyTorch: conv (bias taken by the next region)",
            "kgen region 0: add -> GroupNorm  [conv [2, 4, 8, 8] -> group_norm [2, 4, 8, 8]; parameters: conv.bias]",
            "kgen element-wise 0: clamp  [maxpool [2, 4, 2, 2]]",
            "kgen region 1: GroupNorm -> mean over all but the batch  [x [2, 4, 8, 8] -> mean [2]; parameters: none]"]
    one_pass = 4 * ((512 + 512) + (32 + 32) + (512 + 2))
    assert family_table.traffic_bytes(plan, two_pass=False) == one_pass
    assert family_table.traffic_bytes(plan, two_pass=True) == one_pass + 4 * (512 + 512)   # each region reads x again


def test_traffic_of_elementwise_kernels_of_several_tensors():
    """An element-wise step reads each of its tensors at its own size (a broadcast one once) and writes its
    output; its backward reads them and the output's gradient and writes each input's gradient. A rank-1 tensor
    (`[64]`) and a step that names its input as broadcast (`..., the input broadcast]`) count too."""
    plan = ["kgen element-wise 1: mul -> add  [x [2, 4, 8, 8], relu [2, 4, 8, 8], sigmoid [2, 4, 1, 1] -> add_1 "
            "[2, 4, 8, 8]; broadcast: sigmoid; parameters: none]",
            "kgen element-wise 2: tanh -> mul  [sum_1 [64] -> mul_1 [64]; parameters: none]",
            "kgen element-wise 0: add  [getitem [16, 1] -> add [1, 8, 16, 1], the input broadcast]"]
    assert family_table.traffic_bytes(plan, two_pass=False) == 4 * ((512 + 512 + 8 + 512) + (64 + 64) + (16 + 128))
    assert family_table.backward_traffic_bytes(plan) == 4 * ((2 * (512 + 512 + 8) + 512) + (2 * 64 + 64) + (2 * 16 + 128))


def test_table_shows_the_kernels_where_compile_is_faster():
    trace = {"kgen": [{"kernel": "nchwToNhwcKernel", "us": 1400.0}], "eager": [],
             "compile": [{"kernel": "sm90_xmma_dgrad_nhwc", "us": 2800.0}]}
    slower = {"problem": "L2-19", "plan": ["kgen region 0: GroupNorm"], "emit": 0,
              "bench": {"forward": {"new_ms": 8.6, "eager_ms": 12.3, "compile_ms": 8.5}, "forward_kernels": trace}}
    faster = dict(slower, problem="L2-92",
                  bench={"forward": {"new_ms": 1.2, "eager_ms": 4.3, "compile_ms": 1.5}, "forward_kernels": trace})
    text = family_table.table([slower, faster])
    assert "### L2-19: torch.compile's forward is faster" in text and "sm90_xmma_dgrad_nhwc" in text
    assert "### L2-92" not in text


def test_rate_leaves_the_channels_last_copy_of_the_conv_input_out():
    plan = ["PyTorch: conv (channels-last; bias taken by the next region)",
            "kgen region 0 (channels-last input): add -> GroupNorm  [conv [2, 4, 8, 8] -> group_norm [2, 4, 8, 8]; "
            "parameters: conv.bias]"]
    own = [{"kernel": "void kgen::region_nhwc::stats_partial_kernel<R, 256, true>", "us": 1.0},
           {"kernel": "void kgen::region_nhwc::apply_kernel<R, E, 256, true>", "us": 2.0},
           {"kernel": "void kgen::batched_transpose_kernel<true>", "us": 990.0},
           {"kernel": "kgen::narrow_transpose_kernel(float const*, float*, long, long, long)", "us": 10.0},
           {"kernel": "sm90_xmma_fprop_nhwc", "us": 5000.0}]
    row = {"problem": "L2-21", "plan": plan, "bench": {"forward_kernels": {"kgen": own}}}
    rate = family_table._bandwidth(row)
    nbytes = 4 * (2 * 512 + 512)   # two reads of the region's input, one write
    assert rate == f"0.003 ms, {nbytes / 1e9:.2f} GB (two-pass), {nbytes / 3.0 / 1e6:.2f} TB/s; " \
                   "+ 1.000 ms copying the conv input channels-last"


@needs_problems
def test_each_precision_is_checked_and_timed_from_one_file(monkeypatch, tmp_path):
    """--precisions fp32,bf16: one emit a problem, then kgen validate, KernelBench and the timing at each precision
    (--precision on the validator and the timing script at bf16, none at fp32; KernelBench's always); a row each."""
    calls = []
    monkeypatch.setattr(family, "run", fake_runner(calls))
    monkeypatch.setattr(sys, "argv", ["family.py", str(PROBLEMS), str(PROBLEMS.parent), str(tmp_path), "--only",
                                      "35", "--bench", "--precisions", "fp32,bf16"])
    family.main()
    rows = json.loads((tmp_path / "family.json").read_text())
    assert [(r["problem"], r["precision"]) for r in rows] == [("L1-35", "fp32"), ("L1-35", "bf16")]
    assert sum("--ref" in c and "--explain" not in c for c in calls) == 1
    validates = [c for c in calls if "kgen.cli validate" in c]
    assert len(validates) == 2 and "--precision bf16" in validates[1] and "--precision" not in validates[0]
    assert [c.split("--precision ")[1].split()[0] for c in calls if "kb_eval" in c] == ["fp32", "bf16"]
    benches = [c for c in calls if "--copy-bytes" in c]
    assert "--precision bf16" in benches[1] and "--precision" not in benches[0]
    fp32_bytes, bf16_bytes = (int(c.split("--copy-bytes ")[1].split()[0]) for c in benches)
    assert bf16_bytes * 2 == fp32_bytes   # the traffic of 2-byte elements
    table = (tmp_path / "FAMILY.md").read_text()
    assert "| L1-35 |" in table and "| L1-35 bf16 |" in table


@needs_problems
def test_channels_last_reaches_the_validator_and_the_timings_not_kernelbench(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(family, "run", fake_runner(calls))
    monkeypatch.setattr(sys, "argv", ["family.py", str(PROBLEMS), str(PROBLEMS.parent), str(tmp_path), "--only",
                                      "35", "--bench", "--channels-last"])
    family.main()
    rows = json.loads((tmp_path / "family.json").read_text())
    assert [(r["problem"], r["channels_last"]) for r in rows] == [("L1-35", True)]
    for what in ("kgen.cli validate", "--copy-bytes", "--warm-compile"):
        assert all("--channels-last" in c for c in calls if what in c) and any(what in c for c in calls), what
    assert not any("--channels-last" in c for c in calls if "kb_eval" in c or "kgen.cli emit" in c)
    assert "| L1-35 channels-last |" in (tmp_path / "FAMILY.md").read_text()


def test_precisions_are_checked():
    assert family.precisions("fp32, bf16,bf16") == ["fp32", "bf16"]
    with pytest.raises(ValueError, match="fp32, fp16 and bf16"):
        family.precisions("fp8")


def test_glob_takes_a_corpus_of_references_and_only_names_their_stems(monkeypatch, tmp_path):
    """--glob picks the references of a directory that is not KernelBench's (tests/corpus), leaving out packages'
    and tests' own files; --only takes file stems there. (The fake runner answers every check PASS.)"""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("block_tiny.py", "block_large.py", "__init__.py", "test_corpus.py", "generate.py"):
        (corpus / name).write_text("")
    calls = []
    monkeypatch.setattr(family, "run", fake_runner(calls))
    monkeypatch.setattr(sys, "argv", ["family.py", str(corpus), str(tmp_path), str(tmp_path / "out"), "--glob",
                                      "*_*.py", "--only", "block_tiny,block_large", "--skip-checks"])
    family.main()
    rows = json.loads((tmp_path / "out" / "family.json").read_text())
    assert sorted(row["problem"] for row in rows) == ["block_large", "block_tiny"]
    emitted = [c for c in calls if "kgen.cli emit" in c and "--explain" not in c]
    assert len(emitted) == 2 and not any("__init__" in c or "test_corpus" in c for c in emitted)


def test_emit_is_reused_only_for_the_same_reference_options_and_sources(monkeypatch, tmp_path):
    """A resumed run re-emits nothing that would come out the same bytes; another reference, other options or other
    sources emit again."""
    calls = []

    def run(cmd, timeout, env=None):
        calls.append(cmd)
        if "-o" in cmd:
            Path(cmd[cmd.index("-o") + 1]).write_text("# emitted\n")
        return 0, "kgen region 0: GroupNorm" if "--explain" in cmd else "", 0.1
    monkeypatch.setattr(family, "run", run)
    ref, sol = tmp_path / "ref.py", tmp_path / "out" / "L1-1.py"
    sol.parent.mkdir()
    ref.write_text("class Model: ...\n")
    first = family.emit_once(ref, sol, [], "sources-a")
    assert len(calls) == 2 and first == (0, "", "kgen region 0: GroupNorm")
    assert family.emit_once(ref, sol, [], "sources-a") == first and len(calls) == 2
    family.emit_once(ref, sol, ["--conv", "fast"], "sources-a")
    family.emit_once(ref, sol, ["--conv", "fast"], "sources-b")
    ref.write_text("class Model: pass_through = 1\n")
    family.emit_once(ref, sol, ["--conv", "fast"], "sources-b")
    assert len(calls) == 8
    sol.unlink()   # the file gone: emitted again whatever the record says
    family.emit_once(ref, sol, ["--conv", "fast"], "sources-b")
    assert len(calls) == 10
