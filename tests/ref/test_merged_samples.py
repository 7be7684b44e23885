"""Regions that read a tensor another step computes per (sample, channel), per sample or per channel (a time embedding
through a Linear, FiLM's scale and shift, a per-sample gate), in their prologue or epilogue: the planner takes it in
as a parameter (Param.value) and the region runs on its samples merged into channels (RegionStep.merged; the entry
points of groupnorm/merged.cuh, emulated here as tests/ref/emulated_ext.py's _merged_entries). Checked on the CPU: the plans, and the emitted files' own Python with the kernels emulated
(tests/ref/emulated_ext.py) against the reference in float64, at its shapes and at others, outputs and every gradient
(the per-sample tensor's included, through the Linear that made it)."""
from pathlib import Path

import pytest
import torch

from kgen.ref.emit import emit_reference
from kgen.ref.ir import RegionStep
from kgen.ref.plan import make_plan
from kgen.ref.trace import load_reference
from tests.ref.test_emitted_glue import check_emitted_python

HERE = Path(__file__).parent
UNSEEN = HERE / "unseen"
CORPUS = HERE.parent / "corpus"

# reference -> (region index, the values it reads per sample, its reduction)
MERGED = {
    CORPUS / "diffusion_resblock_tiny.py": (1, ["getitem"], "kNone"),          # h + temb[:, :, None, None] -> norm2
    CORPUS / "adaptive_groupnorm_tiny.py": (0, ["add", "getitem_2"], "kNone"),  # norm(x) * (1 + scale) + shift
    UNSEEN / "adm_resblock_scale_shift.py": (1, ["add", "getitem_3"], "kNone"),  # guided diffusion's scale-shift norm
    UNSEEN / "scale_shift_chunk.py": (0, ["add", "getitem_3"], "kNone"),
    UNSEEN / "gn_film_per_sample_channel.py": (0, ["view", "view_1"], "kNone"),  # viewed by h.size(1) of the norm's out
    UNSEEN / "gn_film_traced_at_batch_one.py": (0, ["add", "unsqueeze_3"], "kNone"),
    UNSEEN / "gn_time_embedding_then_avgpool.py": (0, ["getitem"], "kWindow"),
    UNSEEN / "gn_conditioned_plane_mean.py": (0, ["view"], "kPlane"),
    UNSEEN / "audio_film_conv1d.py": (0, ["getitem", "getitem_1"], "kNone"),    # (N, C, 1) against (N, C, L)
    UNSEEN / "linear_gn_per_sample_bias.py": (0, ["getitem"], "kNone"),         # (N, 1) against (N, C)
    UNSEEN / "gn_per_sample_gate_3d.py": (0, ["view"], "kNone"),                # (N, 1, 1, 1, 1)
    # per (sample, channel), one value, per channel and per sample: every sum of the merged backward (param_grads)
    UNSEEN / "gn_conditioned_every_param_kind.py": (0, ["getitem", "getitem_1"], "kNone"),
}


def regions(path, conv="exact"):
    return [s for s in make_plan(load_reference(path), conv).steps if isinstance(s, RegionStep)]


@pytest.mark.parametrize("path", list(MERGED), ids=lambda p: p.stem)
def test_a_tensor_computed_per_sample_joins_the_region(path):
    index, values, reduce = MERGED[path]
    step = regions(path)[index]
    assert step.merged and [p.label for p in step.params if p.value] == values
    assert step.reduce_kind.cpp == reduce


def test_values_made_from_parameters_or_one_value_are_read_without_merging():
    """`self.log_scale.exp()` and `ref.abs().mean()` are one value, `torch.sigmoid(self.gate).view(1, -1, 1, 1)` is per
    channel whatever the batch (made from parameters alone, though traced at a batch of one): the region reads them as
    it reads a parameter, the whole block one region."""
    path = UNSEEN / "gn_computed_scalar_and_gains.py"
    step, = regions(path)
    assert not step.merged
    assert [(p.label, p.shape) for p in step.params if p.value] == [("mean", ()), ("view", (1, 24, 1, 1)), ("exp", ())]
    assert [n.op for n in step.prologue] == ["mul"] and [n.op for n in step.epilogue] == ["mul", "silu", "mul", "add"]


def test_values_made_from_parameters_compute_the_references_values_and_gradients(monkeypatch):
    path = UNSEEN / "gn_computed_scalar_and_gains.py"
    text = emit_reference(str(path))[0]
    check_emitted_python(path, text, monkeypatch)
    check_emitted_python(path, text, monkeypatch, shapes=[(4, 24, 6, 5), (7,)])


def test_a_strided_per_channel_value_reaches_the_kernels_contiguous(monkeypatch):
    """`self.mix[:, 0][None, :, None, None]` is a strided view: the entry points read contiguous parameters
    (param_table's check, which the emulated entry points make too), so forward hands them a contiguous copy."""
    path = UNSEEN / "gn_gate_from_a_parameter_column.py"
    step, = regions(path)
    assert not step.merged and [p.label for p in step.params if p.value] == ["getitem_1", "getitem_2"]
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch)


def test_a_reduction_across_channels_keeps_the_tensor_a_step_of_its_own():
    step, = regions(UNSEEN / "gn_conditioned_logsumexp_channels.py")
    assert not step.merged and not step.prologue
    assert any("a reduction across channels, which merged samples would mix" in n for n in step.notes)


def test_a_model_traced_channels_last_keeps_its_layout():
    """get_inputs() gives a channels-last input: the NHWC kernels read the conv's output as it lies, which a merged
    region could not (it would read an NCHW copy), so the time embedding stays a step of its own."""
    step, = regions(UNSEEN / "gn_time_embedding_channels_last.py")
    assert not step.merged and not step.prologue   # the add stays PyTorch's, as without per-sample tensors
    assert any("the model's inputs are channels-last" in n for n in step.notes)


def test_a_gate_computed_from_the_regions_own_output_stays_outside():
    """Squeeze-and-excitation: the gate is a mean of the region's output; reading it inside would be a cycle."""
    step, = regions(UNSEEN / "gn_se_gate_mean.py")
    assert not step.merged and [n.op for n in step.epilogue] == ["relu"]


def test_the_region_runs_after_the_values_it_reads():
    """`norm(h) * (1 + scale)`: Python computes `1 + scale` after the GroupNorm; the region's call follows it."""
    text = emit_reference(str(UNSEEN / "scale_shift_chunk.py"))[0]
    forward = text[text.index("    def forward(self, x, t):"):]
    assert forward.index("add = 1 + getitem_2") < forward.index("getitem_3 = ") < forward.index("_ext.region0(x")


@pytest.mark.parametrize("path", list(MERGED), ids=lambda p: p.stem)
def test_the_emitted_file_computes_the_references_values_and_gradients(path, monkeypatch):
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch)


# reference -> input shapes other than get_inputs()'s: another batch, another plane
OTHER_SHAPES = {
    UNSEEN / "gn_film_traced_at_batch_one.py": [(3, 32, 7, 9), (3, 16)],   # traced at batch 1
    UNSEEN / "gn_time_embedding_then_avgpool.py": [(5, 48, 10, 6), (5, 64)],
    UNSEEN / "audio_film_conv1d.py": [(1, 16, 37), (1, 24)],
    UNSEEN / "linear_gn_per_sample_bias.py": [(2, 24), (2,)],
    UNSEEN / "gn_conditioned_every_param_kind.py": [(1, 32, 6, 11), (1, 24)],   # one sample: N * C = C
    CORPUS / "diffusion_resblock_tiny.py": None,
}


@pytest.mark.parametrize("path", [p for p in OTHER_SHAPES if OTHER_SHAPES[p]], ids=lambda p: p.stem)
def test_other_batches_and_planes(path, monkeypatch):
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch, shapes=OTHER_SHAPES[path])


@pytest.mark.parametrize("path", [UNSEEN / "scale_shift_chunk.py", UNSEEN / "gn_film_per_sample_channel.py"],
                         ids=lambda p: p.stem)
def test_a_model_run_channels_last(path, monkeypatch):
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch, channels_last=True)


@pytest.mark.parametrize("path", [UNSEEN / "scale_shift_chunk.py", UNSEEN / "audio_film_conv1d.py"],
                         ids=lambda p: p.stem)
def test_half_precision(path, monkeypatch):
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch, dtype=torch.bfloat16)


def test_merged_regions_read_nchw_and_keep_run_time_group_counts():
    """The NHWC kernels take no merged view (its samples and channels do not merge in a channels-last tensor), and the
    group count a merged call passes is N * groups: no region kernel is instantiated for channels-last input or for
    the traced count."""
    text = emit_reference(str(CORPUS / "diffusion_resblock_tiny.py"))[0]
    assert "constexpr int kRegion1Groups = 0;" in text
    assert "region_forward_nhwc<Region1Prologue" not in text
    step = regions(CORPUS / "diffusion_resblock_tiny.py", conv="fast")[1]
    assert step.merged and not step.channels_last


def test_the_merge_is_the_entry_points_own():
    """ModelNew calls the region as any other; its C++ entry points merge and unmerge (groupnorm/merged.cuh), the
    rows of its gradients summed to each parameter's values along or across the channels in one launch
    (merged::param_grads), for the C++ node and the Python Function alike, the parameters' sizes handed in."""
    text = emit_reference(str(UNSEEN / "audio_film_conv1d.py"))[0]
    assert "static std::vector<at::Tensor> region0_forward_merged(" in text and "namespace merged {" in text
    assert "region0_backward_summed(" in text and "kgen::merged::param_grads(" in text
    assert "kgen_add_param_grad(dparams[0], d[3], params[0]);" in text and "params[0].numel()" in text
    python = emit_reference(str(UNSEEN / "audio_film_conv1d.py"), autograd="python")[0]
    assert "_ext.region0_backward_summed(" in python and '"region0_backward_summed"]' in python
    assert "_param_grad(dparams[slot], params[k])" in python and "region0_backward\"" not in python
    plain = emit_reference(str(UNSEEN / "gn_se_gate_mean.py"))[0]
    assert "namespace merged {" not in plain and "_backward_summed" not in plain
    cpp = emit_reference(str(UNSEEN / "linear_gn_per_sample_bias.py"))[0]
    assert "kRegion0PrologueAlong{true, false};" in cpp   # the (N, 1) value: per sample

