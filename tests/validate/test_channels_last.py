"""`kgen validate --channels-last`, on the CPU: both models' and the floating inputs' 4-d and 5-d tensors laid out
channels-last (the same values), and whole runs of the child (kgen.validate.runner) on small pure-PyTorch
solutions: a correct one passes, and one that reads its input's memory as NCHW passes without the flag and fails
with it. On a GPU the same code runs with device "cuda"."""
import pytest
import torch
from click.testing import CliRunner

from kgen.validate.checks import EXIT_FAIL, EXIT_PASS, exit_code
from kgen.validate.context import Context, InputSpec, channels_last, make_inputs, to_channels_last
from kgen.validate.runtime import run_child
from kgen.validate.verdicts import kernelbench_verdict
from tests.validate.helpers import RUNTIME_FILES

CONV_REFERENCE = RUNTIME_FILES / "reference_conv_groupnorm.py.txt"
SMALL = {"device": "cpu", "trials": 2, "backward": True, "bench": False, "init_args": [8, 2],
         "input_shapes": [[3, 8, 5, 6]], "atol": 1e-4, "rtol": 1e-4, "reference": str(CONV_REFERENCE)}


def is_channels_last(t: torch.Tensor) -> bool:
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}[t.dim()]
    return t.is_contiguous(memory_format=fmt) and not t.is_contiguous()


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 4, 5, 6)])
def test_four_and_five_dim_tensors_are_laid_out_channels_last_with_their_values(shape):
    x = torch.randn(shape)
    y = channels_last(x)
    assert is_channels_last(y) and torch.equal(x, y)


def test_other_ranks_are_left_as_they_are():
    x = torch.randn(2, 3, 7)
    assert channels_last(x) is x


def test_a_models_conv_weights_are_laid_out_channels_last_and_the_others_left():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Conv3d(4, 4, 3), torch.nn.GroupNorm(2, 4),
                                torch.nn.Linear(4, 2))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    to_channels_last(model)
    assert is_channels_last(model[0].weight) and is_channels_last(model[1].weight)
    assert model[2].weight.is_contiguous() and model[3].weight.is_contiguous()
    assert isinstance(model[0].weight, torch.nn.Parameter)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_inputs_are_the_same_draws_laid_out_channels_last():
    specs = [InputSpec((3, 4, 5, 6), torch.float32), InputSpec((3, 4), torch.float32), InputSpec(None, value=2)]
    plain = make_inputs(specs, "rand", 5, torch.device("cpu"), materialize=lambda: [None, None, 2])
    laid = make_inputs(specs, "rand", 5, torch.device("cpu"), materialize=lambda: [None, None, 2], layout=True)
    assert is_channels_last(laid[0]) and torch.equal(laid[0], plain[0])
    assert laid[1].is_contiguous() and torch.equal(laid[1], plain[1]) and laid[2] == 2


def test_models_are_constructed_channels_last_unless_told_otherwise():
    ctx = Context(config={}, results=None, device=torch.device("cpu"), atol=1e-4, rtol=1e-4, seed=42, layout=True)
    conv = ctx.construct(torch.nn.Conv2d, init=[3, 4, 3])
    assert is_channels_last(conv.weight)
    assert ctx.construct(torch.nn.Conv2d, init=[3, 4, 3], layout=False).weight.is_contiguous()
    torch.manual_seed(42)
    assert torch.equal(conv.weight, torch.nn.Conv2d(3, 4, 3).weight)


def test_bench_stage_times_the_models_and_inputs_channels_last(monkeypatch, tmp_path):
    from kgen.validate import bench, runner
    from kgen.validate.context import Results

    given = {}
    monkeypatch.setattr(bench, "run_bench", lambda ref, new, make, **kw: given.update(
        ref=ref, new=new, inputs=make(), **kw) or {"method": "stub"})
    ctx = Context(config={"channels_last": True}, results=Results(tmp_path / "result.json"),
                  device=torch.device("cpu"), atol=1e-4, rtol=1e-4, seed=42, layout=True,
                  specs=[InputSpec((2, 3, 5, 6), torch.float32)])
    ctx.ref_mod = type("Reference", (), {"get_inputs": staticmethod(lambda: [torch.rand(2, 3, 5, 6)])})
    ctx.ref_model = ctx.new_model = ctx.construct(torch.nn.Conv2d, init=[3, 4, 3])
    runner.stage_bench(ctx)
    assert is_channels_last(given["inputs"][0]) and is_channels_last(given["new"].weight)
    assert ctx.results.data["bench"]["channels_last"] is True


def run(name, **overrides):
    config = {**SMALL, "solution": str(RUNTIME_FILES / f"{name}.py.txt"), **overrides}
    return run_child(config, 240)


def failed(result) -> list[str]:
    return [c.name for c in result.checks if c.ok is False]


def test_correct_solution_passes_channels_last():
    result = run("conv_groupnorm_ok", channels_last=True)
    assert exit_code(result.checks, result.ran) == EXIT_PASS, failed(result)
    assert result.info["channels_last"] is True
    assert "no channels-last" in result.kernelbench["layout_note"]


def test_reading_nchw_memory_passes_contiguous_and_fails_channels_last():
    contiguous = run("conv_groupnorm_reads_nchw_memory")
    assert exit_code(contiguous.checks, contiguous.ran) == EXIT_PASS, failed(contiguous)
    laid = run("conv_groupnorm_reads_nchw_memory", channels_last=True)
    assert exit_code(laid.checks, laid.ran) == EXIT_FAIL
    assert "trial 1 (rand) forward" in failed(laid)
    assert laid.kernelbench["correct"] is True   # KernelBench's protocol runs NCHW, as KernelBench does


def test_kernelbench_verdict_says_it_ran_nchw():
    kernelbench = {"correct": True, "precision": "fp32", "tolerance": 1e-4, "trials": [{"ok": True}],
                   "layout_note": "KernelBench has no channels-last: its protocol ran on models and inputs as "
                                  "constructed (NCHW)"}
    summary = kernelbench_verdict([], kernelbench, True)["summary"]
    assert summary.startswith("forward only, KernelBench has no channels-last"), summary


def test_the_command_takes_the_flag(monkeypatch, tmp_path):
    from kgen import cli
    import kgen.validate

    seen = {}

    def fake_validate(path, **kwargs):
        seen.update(kwargs)
        return 0

    monkeypatch.setattr(kgen.validate, "validate", fake_validate)
    solution = tmp_path / "s.py"
    solution.write_text("x = 1\n")
    result = CliRunner().invoke(cli.main, ["validate", str(solution), "--channels-last", "--quiet"])
    assert result.exit_code == 0, result.output
    assert seen["channels_last"] is True
