"""kgen tune on the CPU: the candidates it enumerates and prunes, the record a file's header keeps and `kgen emit
--choices` takes back (same bytes), the choice of the winner, the budget, and the cache, with the GPU stages
replaced by a runner that returns given verdicts and times."""
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kgen.header import parse_header
from kgen.ref.emit import emit_reference
from kgen.ref.trace import RefError, load_reference
from kgen.tune import TuneResult, choose, table, tune, winner_text
from kgen.tune.target import Target, target_of
from kgen.tune.candidates import KEYS, Choices, candidates, onepass_pruned, parse_choices, two_pass_cliff

ROOT = Path(__file__).resolve().parent.parent
MLP = ROOT / "tests" / "corpus" / "mlp_groupnorm_tiny.py"                                 # no conv, no reduction
L2_19 = ROOT / "kgen" / "specs" / "references" / "level2_19_convtranspose2d_gelu_groupnorm.py"   # a ConvTranspose2d
L2_92 = ROOT / "kgen" / "specs" / "references" / "level2_92_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp.py"


def test_a_plan_without_convolutions_tries_block_sizes_and_the_one_pass_forward():
    found = candidates(load_reference(MLP))
    assert found[0] == Choices() and found[0].is_default()
    assert {c.conv for c in found} == {"exact"}
    assert sorted((c.forward, c.block_size) for c in found if c.region_kernels == "auto" and c.autograd == "cpp") \
        == sorted((f, b) for f in ("two-pass", "one-pass") for b in (128, 256, 512))


@pytest.mark.parametrize("reference", [MLP, L2_92], ids=["mlp", "l2_92"])
def test_the_default_is_tried_with_each_region_a_python_function(reference):
    # the same kernels behind a Python autograd Function, not the default's C++ node: one candidate, the default's
    # options with autograd python, last
    found = candidates(load_reference(reference), block_sizes=(256,))
    assert found[0].autograd == "cpp"
    functions = [c for c in found if c.autograd == "python"]
    assert functions == [Choices(autograd="python")] and found[-1] == functions[0]
    assert functions[0].label() == "block 256, conv exact, two-pass, autograd python"
    assert functions[0].record() == '{"autograd": "python", "block_size": 256}'
    assert not [c for c in candidates(load_reference(MLP), takes=("block_size", "forward")) if c.autograd != "cpp"]


def test_a_region_fed_by_kgens_conv_takes_no_node():
    # --conv fused's region keeps its Python Function (paired with the conv's): the option changes nothing there
    fused = Choices(conv="fused")
    assert [c.autograd for c in candidates(load_reference(L2_19), block_sizes=(256,), takes=("autograd",),
                                           default=fused)] == ["cpp"]


def test_an_element_wise_step_takes_a_node_where_no_region_does(monkeypatch):
    # --autograd python makes each element-wise step a Function too: a plan whose regions all keep their Functions
    # (fed by kgen's conv) still gets the python candidate where it has an element-wise step
    from kgen.ref.ir import PointwiseStep, RegionStep
    module = importlib.import_module("kgen.tune.candidates")   # kgen.tune.candidates is also a function's name
    ref = load_reference(ROOT / "tests" / "corpus" / "resnet_gn_bottleneck_tiny.py")
    steps = module._steps(ref, "exact")
    assert any(isinstance(s, PointwiseStep) for s in steps)
    monkeypatch.setattr(module, "_steps", lambda ref, conv: [s for s in steps if not isinstance(s, RegionStep)])
    assert module.node_takes_a_step(ref, "exact")
    assert [c.autograd for c in candidates(ref, block_sizes=(256,), takes=("autograd",))] == ["cpp", "python"]
    monkeypatch.setattr(module, "_steps", lambda ref, conv: [s for s in steps if not isinstance(s, PointwiseStep)
                                                              and not isinstance(s, RegionStep)])
    assert not module.node_takes_a_step(ref, "exact")


def test_the_region_kernels_are_forced_each_way_at_the_default_block_size():
    found = candidates(load_reference(L2_92))     # a conv's output: planes of 126 x 126 values
    forced = [c for c in found if c.region_kernels != "auto"]
    assert sorted((c.forward, c.region_kernels) for c in forced) == [("two-pass", "resident"), ("two-pass", "two-pass")]
    assert {c.block_size for c in forced} == {256} and len(set(found)) == len(found)
    assert forced[0].label() == "block 256, conv exact, two-pass, region kernels resident"
    assert not two_pass_cliff(load_reference(L2_92), "exact")
    assert not [c for c in candidates(load_reference(MLP), takes=("block_size", "forward"))
                if c.region_kernels != "auto"]   # a preset's: not an option it takes


def test_the_two_pass_kernels_are_not_forced_on_planes_smaller_than_a_warp():
    # A Linear's output has planes of one value: the two-pass kernels would idle 31 lanes of every warp (100x the
    # rows kernels' time, measured), so only the resident kernels are forced, with each forward.
    ref = load_reference(MLP)
    assert two_pass_cliff(ref, "exact")
    forced = [c for c in candidates(ref) if c.region_kernels != "auto"]
    assert sorted((c.forward, c.region_kernels) for c in forced) == [("one-pass", "resident"), ("two-pass", "resident")]


@pytest.mark.parametrize("kernels, present, absent", [
    ("auto", ["region_resident_pays<kRegion0Reduce>(x, groups, /*backward=*/true)", "rows_half_applies",
              "region_resident_pays<kRegion0Reduce>(x, groups, backward)", "region0_half_resident(x, groups, rounding"],
     ["region_resident_fits<kRegion0Reduce>"]),
    ("resident", ["region_resident_fits<kRegion0Reduce>(x, groups)) {", "rows_half_applies",
                  "region0_half_resident(x, groups, rounding"],
     ["region_resident_pays<kRegion0Reduce>", "cluster_forward_preferred<"]),
    ("two-pass", ["half_sweeps<kRegion0Reduce>(x, rounding);"],
     ["region_resident_pays<kRegion0Reduce>", "region_resident_fits<kRegion0Reduce>", "rows_half_applies<",
      "region_forward_resident<Region0", "region_backward_resident<Region0", "half_resident"]),
])
def test_the_region_kernels_choice_is_the_bindings_dispatch(kernels, present, absent):
    text = emit_reference(str(MLP), region_kernels=kernels)[0]
    for line in present:
        assert line in text, line
    for line in absent:
        assert line not in text, line


def test_conv_modes_are_tried_where_they_move_a_convolution():
    found = candidates(load_reference(L2_19), block_sizes=(256,))
    assert {c.conv for c in found} == {"exact", "fast", "fused"}
    assert len(set(found)) == len(found)


def test_a_region_with_a_reduction_after_it_tries_neither_the_one_pass_forward_nor_another_conv():
    found = candidates(load_reference(L2_92), block_sizes=(256,))
    assert {c.forward for c in found} == {"two-pass"}
    assert {c.conv for c in found} == {"exact"}   # --conv fast and fused take regions without a reduction


@pytest.mark.parametrize("reference", [MLP, L2_19], ids=["mlp", "l2_19"])
def test_the_record_round_trips_through_the_header_and_emit_choices(reference, tmp_path):
    for choices in candidates(load_reference(reference), block_sizes=(128, 512)):
        assert parse_choices(choices.record()) == choices
        path = tmp_path / "solution.py"
        text = emit_reference(str(reference), output=path, **choices.options())[0]
        header = parse_header(text)
        assert parse_choices(json.dumps(header.params)) == choices   # the header's kgen-params is the record
        again = subprocess.run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(reference), "--choices",
                                choices.record(), "-o", str(path)], capture_output=True, text=True, cwd=ROOT)
        assert again.returncode == 0, again.stderr
        assert path.read_text() == text


@pytest.mark.parametrize("record, message", [
    ("{\"block_size\": 500}", "power of two"),
    ("{\"conv\": \"fastest\"}", "conv must be one of"),
    ("{\"block\": 256}", "takes block_size, conv, forward, region_kernels, autograd, not block"),
    ("{\"autograd\": \"c++\"}", "autograd must be one of cpp, python"),
    ("{\"region_kernels\": \"cluster\"}", "region_kernels must be one of auto, resident, two-pass"),
    ("[256]", "a JSON object"),
    ("block_size=256", "JSON object such as"),
])
def test_a_bad_record_is_one_clear_error(record, message):
    with pytest.raises(RefError, match=message):
        parse_choices(record)


class FakeRunner:
    """Builds, verdicts and times as given, per candidate label; counts its calls."""

    def __init__(self, verdicts=None, times=None, broken=(), raising=None):
        self.verdicts, self.times, self.broken = verdicts or {}, times or {}, set(broken)
        self.raising = raising or {}   # label: the error a timed call of it raises
        self.rounds = {}               # label: [(forward, forward+backward) a timing round]
        self.calls = {"build": 0, "validate": 0, "time": 0}
        self.labels = {}

    def gpu(self):
        return "Fake GPU"

    def build(self, paths):
        self.calls["build"] += 1
        return {p: ("error: no\n" if self.label(p) in self.broken else "") for p in paths}

    def validate(self, path):
        self.calls["validate"] += 1
        return {"result": self.verdicts.get(self.label(path), "PASS"), "exit_code": 0, "summary": "checked"}

    def time(self, paths):
        self.calls["time"] += 1
        rows = [{"forward": self.times.get(self.label(p), (1.0, 3.0))[0],
                 "forward_backward": self.times.get(self.label(p), (1.0, 3.0))[1], "error": None}
                if self.label(p) not in self.raising else
                {"forward": None, "forward_backward": None, "error": self.raising[self.label(p)]} for p in paths]
        rounds = [[{"forward": f, "forward_backward": b} for f, b in self.rounds.get(self.label(p), [])] for p in paths]
        return {"candidates": rows, "rounds": rounds, "eager": {"forward": 1.5, "forward_backward": 4.0},
                "compile": {"forward": 1.2, "forward_backward": 3.5}}

    def label(self, path):
        params = parse_header(Path(path).read_text()).params
        return parse_choices(json.dumps({k: v for k, v in params.items() if k in KEYS})).label()


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KGEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_fastest_passing_candidate_wins_and_a_second_tune_reads_the_cache(tmp_path, cache_dir):
    fastest_but_wrong, fastest = "block 128, conv exact, two-pass", "block 512, conv exact, one-pass"
    runner = FakeRunner(verdicts={fastest_but_wrong: "FAIL"}, broken={"block 256, conv exact, one-pass"},
                        times={fastest_but_wrong: (0.1, 0.2), fastest: (0.9, 2.0)})
    result = tune(target_of(str(MLP)), runner, tmp_path / "work")
    rows = {row["label"]: row for row in result.rows}
    assert result.rows[result.winner]["label"] == fastest and not result.cached and result.complete
    assert rows[fastest_but_wrong]["verdict"] == "FAIL" and rows[fastest_but_wrong]["forward_ms"] is None
    assert rows["block 256, conv exact, one-pass"]["verdict"] == "BROKEN"
    assert runner.calls == {"build": 1, "validate": 8, "time": 1}   # 9 candidates (two-pass not forced), 1 broken
    assert list(cache_dir.glob("tune/*.json"))
    again = FakeRunner(verdicts={"anything": "FAIL"})
    cached = tune(target_of(str(MLP)), again, tmp_path / "work2")
    assert cached.cached and cached.rows[cached.winner]["label"] == fastest
    assert again.calls == {"build": 0, "validate": 0, "time": 0}
    lines = table(cached)
    assert any(fastest + " (winner)" in line and "1.50" in line for line in lines)   # 3.0 / 2.0 forward+backward
    text = winner_text(target_of(str(MLP)), cached, None)
    assert text == emit_reference(str(MLP), block_size=512, forward="one-pass")[0]


def test_without_a_faster_candidate_the_default_is_the_file_and_the_table_says_so(tmp_path, cache_dir):
    result = tune(target_of(str(MLP)), FakeRunner(), tmp_path / "work", block_sizes=(256, 512))
    assert result.winner == 0 and result.rows[0]["choices"] == Choices().record()
    assert table(result)[-1] == "No candidate beat the default in every timing round: the default is the file."


def test_a_spent_budget_validates_nothing_more_and_caches_nothing(tmp_path, cache_dir):
    runner = FakeRunner()
    result = tune(target_of(str(MLP)), runner, tmp_path / "work", budget=1e-9)
    assert not result.complete and runner.calls["validate"] == 0 and result.winner == 0
    assert all(row["summary"] == "not validated: the budget was spent" for row in result.rows)
    assert not list(cache_dir.glob("tune/*.json"))


def test_choose_prefers_the_default_on_a_tie_and_takes_the_forward_without_gradients():
    row = {"verdict": "PASS", "forward_ms": 1.0, "forward_backward_ms": None}
    assert choose([dict(row), dict(row)]) == 0
    assert choose([dict(row), dict(row, forward_ms=0.5)]) == 1
    assert choose([dict(row, verdict="FAIL"), dict(row, forward_ms=2.0)]) == 1
    assert choose([dict(row, verdict="FAIL", forward_ms=None)]) == 0
    assert TuneResult([dict(row, choices="{}")]).as_json()["winner_choices"] == "{}"


def test_a_preset_tunes_the_options_it_takes_from_its_own_defaults(tmp_path, cache_dir):
    groupnorm = target_of("groupnorm")            # --block-size and --forward, one-pass by default
    found = candidates(groupnorm.load(), takes=groupnorm.takes, default=groupnorm.default)
    assert found[0] == Choices(256, "exact", "one-pass") and {c.conv for c in found} == {"exact"}
    assert {(c.block_size, c.forward) for c in found} == {(b, f) for b in (128, 256, 512)
                                                          for f in ("two-pass", "one-pass")}
    lse = target_of("conv-gn-tanh-hardswish-res-lse")   # --block-size only
    assert lse.takes == ("block_size",) and lse.init_args is not None
    fastest = "block 512, conv exact, two-pass"
    result = tune(groupnorm, FakeRunner(times={fastest: (0.5, 1.0)}), tmp_path / "work")
    assert result.rows[result.winner]["label"] == fastest
    path = tmp_path / "tuned.py"
    text = winner_text(groupnorm, result, str(path))
    command = groupnorm.command(parse_choices(result.rows[result.winner]["choices"]), str(path))
    assert command == f"kgen emit groupnorm --groups 8 --block-size 512 --forward two-pass -o {path}"
    again = subprocess.run([sys.executable, "-m", "kgen.cli", *command.split()[1:]], capture_output=True, text=True,
                           cwd=ROOT)
    assert again.returncode == 0, again.stderr
    assert path.read_text() == text


def test_a_target_that_is_neither_a_file_nor_a_preset_is_one_clear_error():
    with pytest.raises(RefError, match="kgen tune takes a reference file or a preset .*not 'nosuch.py'"):
        target_of("nosuch.py")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message where no CUDA device is present")
def test_kgen_tune_without_a_gpu_is_one_clear_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "kgen.cli", "tune", str(MLP), "-o", str(tmp_path / "out.py")],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and not (tmp_path / "out.py").exists()
    assert done.stderr.strip().splitlines()[-1] == "kgen: error: kgen tune needs a CUDA device: it times the " \
                                                   "candidates on it"


def test_a_candidate_whose_timed_call_raises_never_wins_and_the_table_says_why(tmp_path, cache_dir):
    raising = "block 512, conv exact, one-pass"
    runner = FakeRunner(raising={raising: "CUDA error: invalid argument"}, times={raising: (0.1, 0.1)})
    result = tune(target_of(str(MLP)), runner, tmp_path / "work")
    rows = {row["label"]: row for row in result.rows}
    assert result.rows[result.winner]["label"] != raising and rows[raising]["forward_ms"] is None
    assert f"{raising}: passed kgen validate, but a timed call raised: CUDA error: invalid argument" in table(result)


def test_a_candidate_wins_only_where_every_round_beats_every_round_of_the_default(tmp_path, cache_dir):
    default, lucky, steady = ("block 256, conv exact, two-pass", "block 128, conv exact, two-pass",
                              "block 512, conv exact, two-pass")
    runner = FakeRunner(times={default: (1.0, 2.0), lucky: (0.5, 1.0), steady: (0.9, 1.8)})
    runner.rounds = {default: [(1.0, 2.0), (1.0, 1.9), (1.0, 2.1)],
                     lucky: [(0.5, 1.0), (0.5, 2.5), (0.5, 0.9)],     # its median the least, one round the slowest
                     steady: [(0.9, 1.8), (0.9, 1.85), (0.9, 1.7)]}
    result = tune(target_of(str(MLP)), runner, tmp_path / "work", block_sizes=(128, 256, 512))
    assert result.rows[result.winner]["label"] == steady
    assert any(steady + " (winner)" in line and "1.700-1.850" in line for line in table(result))
    runner.rounds[steady] = [(0.9, 1.8), (0.9, 1.95), (0.9, 1.7)]    # overlaps the default's fastest round
    again = tune(target_of(str(MLP)), runner, tmp_path / "work2", block_sizes=(128, 256, 512), use_cache=False)
    assert again.winner == 0


def test_one_pass_is_tried_only_where_a_region_runs_it_at_the_tunes_tf32_settings(monkeypatch):
    # Both of diffusion_resblock_tiny's regions feed a convolution: faithful while cuDNN rounds to TF32 (PyTorch's
    # default), native_group_norm's statistics whatever the forward option, so a one-pass candidate is the two-pass
    # one again. With TF32 off for convolutions they take the one-pass forward, and it is tried.
    ref = load_reference(str(ROOT / "tests" / "corpus" / "diffusion_resblock_tiny.py"))
    assert {c.forward for c in candidates(ref)} == {"two-pass"}
    assert onepass_pruned(ref)
    monkeypatch.setattr("kgen.ref.tf32.tf32_now", lambda op: False)
    assert {c.forward for c in candidates(ref)} == {"two-pass", "one-pass"}
    assert not onepass_pruned(ref) and not onepass_pruned(load_reference(MLP))
