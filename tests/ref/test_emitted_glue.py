"""Every unseen reference and tiny corpus reference run through its emitted file's own Python on the CPU, in float64,
with the kernels emulated by PyTorch's ops (tests/ref/emulated_ext.py): ModelNew's output and every gradient (the
inputs', each parameter's) equal the reference's. This checks what the GPU tests cannot reach without a GPU: the
arguments the file passes its kernels, the gradient rows it sums into each parameter, the biases it peels off a
library call and adds back, the order of its steps."""
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from kgen.ref.emit import emit_reference, mode_plans
from kgen.ref.ir import RegionStep
from kgen.ref.plan import make_plan
from kgen.ref.trace import load_reference
from tests.ref.emulated_ext import NotEmulated, emulated_ext
from tests.ref.test_emitted_python import load_emitted, load_reference_module

HERE = Path(__file__).parent
REFERENCES = sorted((HERE / "unseen").glob("*.py")) + sorted((HERE.parent / "corpus").glob("*_tiny.py"))
OWN = sorted((HERE / "references").glob("*.py")) + sorted((HERE / "probe").glob("*.py"))   # kgen's own, and probes


def _as(value, dtype):
    return value.to(dtype) if isinstance(value, torch.Tensor) and value.is_floating_point() else value


def _flat(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat(v)]
    return []


@pytest.mark.parametrize("faithful, autograd", [("auto", "cpp"), ("none", "cpp"), ("auto", "python")])
@pytest.mark.parametrize("path", [p for p in REFERENCES if p.name != "__init__.py"], ids=lambda p: p.stem)
def test_the_emitted_python_computes_the_references_outputs_and_gradients(path, faithful, autograd, monkeypatch):
    """--faithful none too: the regions then take the biases of the convolutions and Linears before them. And with
    --autograd python: each region a Python Function, whose gradient assembly is the file's own."""
    text = emit_reference(str(path), faithful=faithful, autograd=autograd)[0]
    check_emitted_python(path, text, monkeypatch, faithful)


@pytest.mark.parametrize("path", [p for p in REFERENCES if p.name != "__init__.py"], ids=lambda p: p.stem)
def test_the_emitted_python_in_bfloat16_computes_the_references_outputs_and_gradients(path, monkeypatch):
    """The model and its inputs in bfloat16 (KernelBench's --precision bf16): the file's dtype rules (the output's
    dtype, a Linear's bias kept in the library call and zeros added in its place) against the reference's."""
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch, dtype=torch.bfloat16)


@pytest.mark.parametrize("path", [p for p in REFERENCES if p.name != "__init__.py"], ids=lambda p: p.stem)
def test_the_emitted_python_on_channels_last_tensors_computes_the_references_outputs_and_gradients(path, monkeypatch):
    """The model and its 4-d and 5-d inputs laid out channels-last (as diffusion code runs them), in float64."""
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch, channels_last=True)


MODE_BRANCHING = [HERE / "unseen" / f"{name}.py" for name in ("gn_training_branch", "gn_training_number",
                                                              "gn_eval_pooled_head", "gn_block_with_training_noise")]


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=["float64", "bfloat16"])
@pytest.mark.parametrize("path", MODE_BRANCHING, ids=lambda p: p.stem)
def test_a_forward_that_branches_on_self_training_computes_the_references_values_in_both_modes(path, dtype,
                                                                                             monkeypatch):
    """A plan for each mode (emit.mode_plans): in training mode and in eval mode, the outputs and every gradient are
    the reference's in that mode."""
    assert load_reference(path).other_mode is not None
    text = emit_reference(str(path))[0]
    for training in (True, False):
        check_emitted_python(path, text, monkeypatch, dtype=dtype, training=training)


BUNDLED = sorted((HERE.parents[1] / "kgen" / "specs" / "references").glob("*.py"))


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_the_bundled_kernelbench_references_emitted_python_at_small_shapes(path, monkeypatch):
    """The KernelBench problems kgen bundles (L1-35, L2-19, L2-37, L2-75, L2-85, L2-92...), their file run at a batch
    of 2 and planes of at most 12 x 12 (their own inputs are GBs), float64 and bfloat16."""
    text = emit_reference(str(path))[0]
    shapes = [_small(s) for s in load_reference(path).input_shapes]
    check_emitted_python(path, text, monkeypatch, shapes=shapes)
    check_emitted_python(path, text, monkeypatch, dtype=torch.bfloat16, shapes=shapes)


def _small(shape) -> list:
    return [min(shape[0], 2), *shape[1:2], *(min(d, 12) for d in shape[2:])]


# Defects in a file's glue this check must find: with Python Functions, a parameter's gradient row not summed where
# it is one value, a prologue row doubled; with either autograd, the bias peeled from a Linear and not added back, in
# bfloat16 that bias dropped from the library call as well, a region called with another eps, and an element-wise
# node handed its inputs in another order.
DEFECTS = [
    ("gn_scalar_gate", "return row.sum().reshape(param.shape)", "return (row.sum() * 0.5).reshape(param.shape)",
     torch.float64, "python"),
    ("gn_1d_no_spatial", "_accumulate(grads, k, _param_grad(dprologue[slot], params[k]))",
     "_accumulate(grads, k, _param_grad(dprologue[slot] * 2, params[k]))", torch.float64, "python"),
    ("gn_1d_no_spatial", "def _peeled_bias(bias, x):\n", "def _peeled_bias(bias, x):\n    return bias * 0\n",
     torch.float64, "cpp"),
    ("gn_1d_no_spatial", "return bias if bias is not None and _stores_half(x) else None", "return None",
     torch.bfloat16, "cpp"),
    ("gn_1d_no_spatial", "self.gn.eps, (), [", "self.gn.eps * 1e3, (), [", torch.float64, "cpp"),
    ("poolformer_block_tiny", "_ext.pointwise0([x, norm1, pool], [])", "_ext.pointwise0([x, pool, norm1], [])",
     torch.float64, "cpp"),
]


@pytest.mark.parametrize("stem, right, wrong, dtype, autograd", DEFECTS,
                         ids=[d[0] + "-" + str(i) for i, d in enumerate(DEFECTS)])
def test_a_defect_in_the_glue_is_found(stem, right, wrong, dtype, autograd, monkeypatch):
    path = next(p for p in REFERENCES if p.stem == stem)
    text = emit_reference(str(path), autograd=autograd)[0]
    assert right in text
    check_emitted_python(path, text, monkeypatch, dtype=dtype)
    with pytest.raises(AssertionError):
        check_emitted_python(path, text.replace(right, wrong), monkeypatch, dtype=dtype)


def check_emitted_python(path, text: str, monkeypatch, faithful: str = "auto", dtype=torch.float64,
                         channels_last: bool = False, shapes: list | None = None, training: bool = False) -> None:
    """In float64 every output and gradient equals the reference's (1e-7; 1e-5 where a region holds a float32
    cast); in a half precision each is, as a whole,
    no further from the reference's float64 value (same rounded parameters, inputs and upstream gradients) than four
    times the reference's own error at that precision, plus 1% (sums rounded to 8 bits in another order, and a max
    whose winner ties, move single elements far where the tensor as a whole stays put). Both models in eval mode, or
    with `training` in training mode."""
    solution = load_emitted(text, monkeypatch)
    if dtype != torch.float64:
        _bias_after_convolutions(monkeypatch)
    plans = mode_plans(load_reference(path), "exact", faithful)
    try:
        solution._ext = emulated_ext(plans, solution)
    except NotEmulated as why:
        pytest.skip(f"not emulated: {why}")
    reference = load_reference_module(path)
    init = reference.get_init_inputs()
    torch.manual_seed(0)
    theirs = reference.Model(*init).to(dtype).train(training)
    torch.manual_seed(0)
    ours = solution.ModelNew(*init)
    ours.load_state_dict(theirs.state_dict())
    ours = ours.to(dtype).train(training)
    torch.manual_seed(1)
    inputs = [_as(x, dtype) for x in (reference.get_inputs() if shapes is None else
                                      [torch.randn(s) for s in shapes])]
    if channels_last:
        theirs, ours = _channels_last(theirs), _channels_last(ours)
        inputs = [_channels_last(x) for x in inputs]
    try:
        want = _run(theirs, inputs, seed=2)
    except RuntimeError as error:   # e.g. its backward reads a value it wrote in place, or mixes dtypes
        pytest.skip(f"the reference itself cannot run so: {str(error).splitlines()[0][:120]}")
    got = _run(ours, inputs, seed=2)
    assert [k for k, _ in got] == [k for k, _ in want]
    for (what, g), (_, w) in zip(got, want):   # contiguous where the reference's is (kgen validate checks it too)
        assert not what.startswith("output") or g.is_contiguous() or not w.is_contiguous(), f"{what}: not contiguous"
    torch.manual_seed(2)   # the draws _run's (dropout in training mode)
    with torch.no_grad():   # each step's forward alone (_call), nothing saved for a backward; a library op may
        plain = _flat(ours(*inputs))   # take another path there (MultiheadAttention's fast path): not bit for bit
    for i, o in enumerate(plain):
        with_grad = dict(got)[f"output {i}"]
        error = float((o.double() - with_grad.double()).nan_to_num().norm())
        assert error <= (1e-9 if dtype == torch.float64 else 1e-2) * float(with_grad.double().nan_to_num().norm()) \
            + 1e-9, f"output {i} under no_grad: {error:.3g} from the output with autograd"
    if dtype == torch.float64:
        # a float32 cast inside a region (plan_dtype.py): what is computed through float32 ops, which the fused
        # kernels round once and the reference after each, is as close as float32 allows
        tol = 1e-5 if any(isinstance(s, RegionStep) and s.out_dtype for plan in plans for s in plan.steps) else 1e-7
        for (what, g), (_, w) in zip(got, want):
            if w is None:
                assert g is None or not g.any(), f"{what}: a gradient where the reference has none"
                continue
            assert g is not None, f"{what}: no gradient"
            assert g.shape == w.shape and g.dtype == w.dtype, what
            torch.testing.assert_close(g, w, atol=tol, rtol=tol, equal_nan=True, msg=lambda m: f"{what}: {m}")
        return
    exact_model = reference.Model(*init).double().train(training)
    exact_model.load_state_dict({k: v.double() for k, v in theirs.state_dict().items()})
    exact = _run(exact_model, [_as(x, torch.float64) for x in inputs], seed=2, upstream_dtype=dtype)
    for (what, g), (_, w), (_, e) in zip(got, want, exact):
        if w is None:
            assert g is None or not g.any(), f"{what}: a gradient where the reference has none"
            continue
        assert g is not None and g.shape == w.shape and g.dtype == w.dtype, what
        if not g.is_floating_point():   # indices (a max's): rounding moves only near-ties, as the reference's own
            agree, exact_agree = float((g == e).double().mean()), float((w == e).double().mean())
            assert agree >= exact_agree - 0.05, f"{what}: {agree:.3f} of kgen's equal float64's, the reference's " \
                                                f"{exact_agree:.3f}"
            continue
        ours_error, theirs_error = float((g.double() - e).norm()), float((w.double() - e).norm())
        assert ours_error <= 4 * theirs_error + 1e-2 * float(e.norm()) + 1e-6, \
            f"{what}: |kgen - float64| = {ours_error:.3g}, |reference - float64| = {theirs_error:.3g}"


_CONVOLUTIONS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def _bias_after_convolutions(monkeypatch) -> None:
    """Every convolution adds its bias after the unbiased convolution, each result rounded, as CUDA's do at half
    precision (cuDNN convolves without the bias and PyTorch adds it in a pass of its own:
    benchmarks/results/h200/precision/bias_and_straddle.txt, 100% of values). The CPU's add it inside, rounding once,
    so a half-precision reference run here would not be the reference kgen's files reproduce on the GPU (a region that
    takes a conv's bias rounds as CUDA stores it; relu(conv + bias) then flips on other values than the CPU's)."""
    for name in _CONVOLUTIONS:
        def bias_after(input, weight, bias=None, *args, _convolution=getattr(F, name), **kwargs):
            out = _convolution(input, weight, None, *args, **kwargs)
            # (in the output's dtype: autocast casts the bias with the weight)
            return out if bias is None else out + bias.to(out.dtype).reshape(1, -1, *([1] * (out.dim() - 2)))
        monkeypatch.setattr(F, name, bias_after)


def _channels_last(value):
    """A module's 4-d / 5-d parameters, or a 4-d / 5-d tensor, laid out channels-last."""
    if isinstance(value, torch.nn.Module):
        for module in value.modules():
            for name, p in list(module.named_parameters(recurse=False)):
                if p.dim() in (4, 5):
                    p.data = _channels_last(p.data)
        return value
    if isinstance(value, torch.Tensor) and value.dim() in (4, 5):
        return value.contiguous(memory_format=torch.channels_last if value.dim() == 4 else torch.channels_last_3d)
    return value


def _run(model, inputs: list, seed: int, upstream_dtype=None) -> list:
    """[(name, tensor)]: the outputs, then (with a random upstream gradient of each differentiable output, drawn in
    `upstream_dtype` where given) every floating input's gradient and every parameter's."""
    leaves = [x.clone().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x in inputs]
    torch.manual_seed(seed)   # the same random draws in each model (dropout in training mode)
    outputs = _flat(model(*leaves))
    generator = torch.Generator().manual_seed(seed)
    upstream = [torch.randn(o.shape, generator=generator, dtype=upstream_dtype or o.dtype).to(o.dtype)
                if o.is_floating_point() else None for o in outputs]   # an integer output (indices) has none
    pairs = [(o, u) for o, u in zip(outputs, upstream) if o.requires_grad]
    if pairs:
        torch.autograd.backward([o for o, _ in pairs], [u for _, u in pairs])
    found = [(f"output {i}", o.detach()) for i, o in enumerate(outputs)]
    found += [(f"input {i}", x.grad) for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and
              x.is_floating_point()]
    found += [(name, p.grad) for name, p in model.named_parameters()]
    return found


@pytest.mark.parametrize("path", [p for p in OWN if p.name != "__init__.py"], ids=lambda p: p.stem)
def test_kgens_own_and_probe_references_emitted_python(path, monkeypatch):
    """tests/ref/references/ and probe/ (references written to find gaps), float64."""
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch)


# A caller's in-place change of the output before the backward: allowed after PyTorch's GroupNorm and activations
# (their backward reads their inputs), caught after its logsumexp (whose backward reads its output), and the same for
# the file: a region saves its output only where its kernels read it (codegen.reads_output).
IN_PLACE_AFTER = {
    "silu": ("F.silu(self.gn(x))", True),
    "mean_over_planes": ("F.silu(self.gn(x)).mean(dim=(2, 3))", True),
    "logsumexp_over_channels": ("torch.logsumexp(F.silu(self.gn(x)), dim=1)", False),
}


@pytest.mark.parametrize("kind", list(IN_PLACE_AFTER))
def test_an_in_place_change_of_the_output_before_the_backward_gets_the_references_verdict(kind, tmp_path, monkeypatch):
    body, allowed = IN_PLACE_AFTER[kind]
    path = tmp_path / f"inplace_{kind}.py"
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.gn = nn.GroupNorm(2, 8)\n\n    def forward(self, x):\n"
                    f"        return {body}\n\n\ndef get_inputs():\n    return [torch.randn(2, 8, 5, 5)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    solution = load_emitted(emit_reference(str(path))[0], monkeypatch)
    solution._ext = emulated_ext(make_plan(load_reference(path), "exact"), solution)
    reference = load_reference_module(path)
    torch.manual_seed(0)
    theirs = reference.Model().double()
    ours = solution.ModelNew().double()
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(2, 8, 5, 5, dtype=torch.float64)
    grads = []
    for model in (theirs, ours):
        leaf = x.clone().requires_grad_()
        y = model(leaf)
        y.mul_(2)
        if not allowed:
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.sum().backward()
            continue
        y.sum().backward()
        grads.append([leaf.grad] + [p.grad for p in model.parameters()])
    for got, want in zip(*grads) if allowed else ():
        torch.testing.assert_close(got, want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("stem", ["conv_split_two_groupnorms_gate", "conv1d_chunk_gate_one_norm"])
def test_a_region_reading_a_channel_piece_copies_it_once_for_forward_and_backward(stem, monkeypatch):
    """A region whose input is a piece of a chunk (not contiguous) gets what its kernels read once, in the forward
    (region_input), and its backward reads that saved copy: the kernels' entry points see contiguous inputs both ways,
    and the outputs and gradients are still the reference's."""
    path = HERE / "references" / f"{stem}.py"
    solution = load_emitted(emit_reference(str(path))[0], monkeypatch)
    ext = emulated_ext(make_plan(load_reference(path)), solution)
    seen, copies = [], []
    for name in [n for n in vars(ext) if n.startswith("region") and n[6].isdigit()]:
        def recording(*args, _entry=getattr(ext, name), _name=name):
            x = args[0] if _name.endswith("_forward") else args[1]
            seen.append((_name, x.is_contiguous()))
            return _entry(*args)
        setattr(ext, name, recording)
    ext.region_input = lambda x, channels_last, _copy=ext.region_input: copies.append(x.shape) or _copy(x, channels_last)
    solution._ext = ext
    reference = load_reference_module(path)
    torch.manual_seed(0)
    theirs = reference.Model(*reference.get_init_inputs()).double()
    ours = solution.ModelNew(*reference.get_init_inputs())
    ours.load_state_dict(theirs.state_dict())
    ours = ours.double()
    torch.manual_seed(1)
    inputs = [_as(x, torch.float64) for x in reference.get_inputs()]
    got, want = _run(ours, inputs, seed=2), _run(theirs, inputs, seed=2)
    regions = sum(1 for name, _ in seen if name.endswith("_forward"))
    assert regions and len(copies) == regions, f"{len(copies)} copies for {regions} region calls"
    assert all(contiguous for _, contiguous in seen), seen
    assert sum(1 for name, _ in seen if name.endswith("_backward")) == regions
    for (what, g), (_, w) in zip(got, want):
        if w is not None:
            torch.testing.assert_close(g, w, atol=1e-7, rtol=1e-7, msg=lambda m: f"{what}: {m}")
