"""Element-wise steps (pointwise/pointwise.cuh) at float16 and bfloat16, through emitted files: the model and its
inputs moved to the dtype, as KernelBench's --precision does. The kernels read and write that dtype (every
pointwise_ kernel launched is the 2-byte instantiation), and the output and every gradient stay within twice
PyTorch's own half-precision error of float64 run on the same values (plus one rounding of the dtype at the result's
magnitude). The references cover an add -> relu of two tensors, a step with a parameter, rank-1 inputs and an input
broadcast to the output. Needs a CUDA device."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from kgen.ref.emit import emit_reference
from tests.gpu.half_precision import assert_within_half_error as _within
from tests.solution_loader import build_all, import_file

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
REFERENCES = [
    "tests/corpus/resnet_gn_bottleneck_tiny.py",                # add -> relu of two tensors
    "tests/ref/references/conv2d_gn_input_residual_gate.py",    # steps, one with a parameter
    "tests/ref/references/linear_gn_input_gate_rank1.py",       # rank-1 inputs
    "tests/ref/references/linear_gn_max_broadcast_transpose.py",   # two parameters, an input broadcast
]
DTYPES = [torch.bfloat16, torch.float16]


@pytest.fixture(scope="module")
def solutions(tmp_path_factory):
    """reference -> (reference module, emitted module), the files built at once first."""
    folder = tmp_path_factory.mktemp("pointwise_dtypes")
    paths = {}
    for ref in REFERENCES:
        path = paths[ref] = folder / f"{Path(ref).stem}_solution.py"
        path.write_text(emit_reference(str(ROOT / ref), output=path)[0])
    build_all(paths.values())
    return {ref: (import_file(ROOT / ref), import_file(paths[ref])) for ref in REFERENCES}


def _run(model, inputs, upstream_seed):
    """Output and gradients (each floating input, then each parameter by name) of one forward and backward."""
    leaves = [x.detach().clone().requires_grad_() if x.is_floating_point() else x for x in inputs]
    out = model(*leaves)
    upstream = torch.randn(out.shape, device=out.device,
                           generator=torch.Generator(device=out.device).manual_seed(upstream_seed))
    out.backward(upstream.to(out.dtype))
    grads = {f"input {k}": x.grad for k, x in enumerate(leaves) if x.is_floating_point()}
    grads.update({name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None})
    return out.detach(), grads


@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("ref", REFERENCES, ids=[Path(r).stem for r in REFERENCES])
def test_elementwise_steps_at_half_precision(solutions, ref, dtype):
    reference, solution = solutions[ref]
    init = reference.get_init_inputs()
    torch.manual_seed(0)
    ref_model = reference.Model(*init).cuda()
    new_model = solution.ModelNew(*init).cuda()
    new_model.load_state_dict(ref_model.state_dict())
    new_model = new_model.to(dtype)
    torch.manual_seed(1)
    inputs = [(x * 2 + 0.5).cuda() if x.is_floating_point() else x.cuda() for x in reference.get_inputs()]
    cast = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    y_half, g_half = _run(copy.deepcopy(ref_model).to(dtype), cast, 7)
    y_exact, g_exact = _run(copy.deepcopy(ref_model).double(),
                            [x.to(dtype).double() if x.is_floating_point() else x for x in inputs], 7)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        y_new, g_new = _run(new_model, cast, 7)
        torch.cuda.synchronize()
    storage = "__nv_bfloat16" if dtype == torch.bfloat16 else "__half"
    kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    pointwise = [k for k in kernels if "kgen::pointwise_" in k]
    assert pointwise and all(storage in k for k in pointwise), pointwise
    assert y_new.dtype == dtype and y_new.shape == y_half.shape
    _within(y_new, y_half, y_exact, dtype, "output")
    for name, exact in g_exact.items():
        _within(g_new[name], g_half[name], exact, dtype, f"gradient of {name}")
