"""Every unseen reference and tiny corpus reference run through its emitted file's own Python on the CPU, in float64,
with the kernels emulated by PyTorch's ops (tests/ref/emulated_ext.py): ModelNew's output and every gradient (the
inputs', each parameter's) equal the reference's. This checks what the GPU tests cannot reach without a GPU: the
arguments the file passes its kernels, the gradient rows it sums into each parameter, the biases it peels off a
library call and adds back, the order of its steps."""
from pathlib import Path

import pytest
import torch

from kgen.ref.emit import emit_reference
from kgen.ref.plan import make_plan
from kgen.ref.trace import load_reference
from tests.ref.emulated_ext import NotEmulated, emulated_ext
from tests.ref.test_emitted_python import load_emitted, load_reference_module

HERE = Path(__file__).parent
REFERENCES = sorted((HERE / "unseen").glob("*.py")) + sorted((HERE.parent / "corpus").glob("*_tiny.py"))


def _double(value):
    return value.double() if isinstance(value, torch.Tensor) and value.is_floating_point() else value


def _flat(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat(v)]
    return []


@pytest.mark.parametrize("faithful", ["auto", "none"])
@pytest.mark.parametrize("path", [p for p in REFERENCES if p.name != "__init__.py"], ids=lambda p: p.stem)
def test_the_emitted_python_computes_the_references_outputs_and_gradients(path, faithful, monkeypatch):
    """--faithful none too: the regions then take the biases of the convolutions and Linears before them."""
    check_emitted_python(path, emit_reference(str(path), faithful=faithful)[0], monkeypatch, faithful)


# Defects in a file's glue this check must find: a parameter's gradient row not summed where it is one value,
# prologue and epilogue rows swapped, the bias peeled from a Linear and not added back.
DEFECTS = [
    ("gn_scalar_gate", "return row.sum().reshape(param.shape)", "return (row.sum() * 0.5).reshape(param.shape)"),
    ("gn_1d_no_spatial", "_accumulate(grads, k, _param_grad(dprologue[slot], params[k]))",
     "_accumulate(grads, k, _param_grad(dprologue[slot] * 2, params[k]))"),
    ("gn_1d_no_spatial", "def _peeled_bias(bias, x):\n", "def _peeled_bias(bias, x):\n    return bias * 0\n"),
]


@pytest.mark.parametrize("stem, right, wrong", DEFECTS, ids=[d[0] + "-" + str(i) for i, d in enumerate(DEFECTS)])
def test_a_defect_in_the_glue_is_found(stem, right, wrong, monkeypatch):
    path = next(p for p in REFERENCES if p.stem == stem)
    text = emit_reference(str(path))[0]
    assert right in text
    with pytest.raises(AssertionError):
        check_emitted_python(path, text.replace(right, wrong), monkeypatch)


def check_emitted_python(path, text: str, monkeypatch, faithful: str = "auto") -> None:
    solution = load_emitted(text, monkeypatch)
    try:
        solution._ext = emulated_ext(make_plan(load_reference(path), "exact", faithful), solution)
    except NotEmulated as why:
        pytest.skip(f"not emulated: {why}")
    reference = load_reference_module(path)
    init = reference.get_init_inputs()
    torch.manual_seed(0)
    theirs = reference.Model(*init).double().eval()
    torch.manual_seed(0)
    ours = solution.ModelNew(*init)
    ours.load_state_dict(theirs.state_dict())
    ours = ours.double().eval()
    torch.manual_seed(1)
    inputs = [_double(x) for x in reference.get_inputs()]
    for_them = [x.clone().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                for x in inputs]
    for_us = [x.clone().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x in inputs]
    want, got = _flat(theirs(*for_them)), _flat(ours(*for_us))
    assert len(got) == len(want)
    torch.manual_seed(2)
    upstream = [torch.randn_like(w) for w in want]
    for w, g in zip(want, got):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g, w, atol=1e-7, rtol=1e-7, equal_nan=True)
    differentiable = [(w, g, u) for w, g, u in zip(want, got, upstream) if w.requires_grad]
    if not differentiable:
        return
    torch.autograd.backward([w for w, _, _ in differentiable], [u for _, _, u in differentiable])
    torch.autograd.backward([g for _, g, _ in differentiable], [u for _, _, u in differentiable])
    for i, (a, b) in enumerate(zip(for_them, for_us)):
        if isinstance(a, torch.Tensor) and a.grad is not None:
            torch.testing.assert_close(b.grad, a.grad, atol=1e-7, rtol=1e-7, msg=lambda m: f"input {i}: {m}")
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        if p.grad is None:
            assert mine[name].grad is None or not mine[name].grad.any(), name
        else:
            assert mine[name].grad is not None, f"{name}: no gradient"
            torch.testing.assert_close(mine[name].grad, p.grad, atol=1e-7, rtol=1e-7, msg=lambda m: f"{name}: {m}")
