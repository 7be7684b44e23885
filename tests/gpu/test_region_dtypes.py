"""Every region family at float16 and bfloat16, through emitted files: one reference per reduction kind (none,
over channels, over the plane, over the sample, over windows), six shapes each, chosen so that the host takes
each kernel family it has for the kind (resident slices, the two-pass sweeps, one-value planes for the rows
kernels, odd and 3-D planes, large slices). The model and its input are moved to the dtype, as KernelBench's
--precision does; the output and every gradient are held to float64 run on the same half-precision values, no
further from it than twice PyTorch's own half-precision run is (plus one rounding of the dtype at the result's
magnitude). Needs a CUDA device."""
import copy
import textwrap

import pytest
import torch

from kgen.ref.emit import emit_reference
from tests.gpu.half_precision import assert_within_half_error as within
from tests.solution_loader import import_file

pytestmark = pytest.mark.gpu

DTYPES = [torch.bfloat16, torch.float16]

HEAD = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels)

    def forward(self, x):
        y = self.gn(x)
        return {body}


def get_inputs():
    return [torch.randn(4, 32, 8, 8)]


def get_init_inputs():
    return [32, 8]
"""

# reduction kind -> (the return expression, shapes (input shape, groups))
KINDS = {
    "none": ("F.silu(y)", [((2, 32, 8, 8), 8), ((4, 64, 96, 96), 8), ((3, 48, 17, 13), 6), ((64, 256), 16),
                           ((2, 16, 5, 6, 7), 4), ((2, 128, 128, 128), 32)]),
    "channel": ("torch.logsumexp(torch.tanh(y), dim=1)",
                [((2, 32, 8, 8), 8), ((4, 64, 96, 96), 8), ((3, 48, 17, 13), 6), ((64, 256), 16),
                 ((2, 16, 5, 6, 7), 4), ((8, 128, 64, 64), 32)]),
    "plane": ("F.relu(y).mean(dim=(2, 3))",
              [((2, 32, 8, 8), 8), ((4, 64, 96, 96), 8), ((3, 48, 17, 13), 6), ((64, 256, 1, 1), 16),
               ((5, 24, 3, 40), 24), ((2, 128, 128, 128), 32)]),
    "sample": ("torch.sigmoid(y).sum(dim=(1, 2, 3))",
               [((2, 32, 8, 8), 8), ((4, 64, 96, 96), 8), ((3, 48, 17, 13), 6), ((64, 256, 1, 1), 16),
                ((5, 24, 3, 40), 1), ((2, 128, 128, 128), 32)]),
    "window": ("F.max_pool2d(F.hardswish(y), 2)",
               [((2, 32, 8, 8), 8), ((4, 64, 96, 96), 8), ((3, 48, 17, 13), 6), ((64, 16, 2, 2), 16),
                ((5, 24, 4, 40), 24), ((2, 128, 128, 128), 32)]),
}


@pytest.fixture(scope="module")
def solutions(tmp_path_factory):
    """kind -> (reference module, emitted module), each emitted once from its reference."""
    out = {}
    root = tmp_path_factory.mktemp("dtypes")
    for kind, (body, _) in KINDS.items():
        ref_path = root / f"reference_{kind}.py"
        ref_path.write_text(textwrap.dedent(HEAD).format(body=body))
        text = emit_reference(str(ref_path))[0]
        sol_path = root / f"solution_{kind}.py"
        sol_path.write_text(text)
        out[kind] = (import_file(ref_path), import_file(sol_path))
    return out


def run(model, x, dout_seed):
    """Output and gradients (input, then each parameter by name) of one forward and backward."""
    x = x.detach().clone().requires_grad_()
    y = model(x)
    dout = torch.randn(y.shape, device=y.device, generator=torch.Generator(device=y.device).manual_seed(dout_seed))
    y.backward(dout.to(y.dtype))
    grads = {"input": x.grad}
    grads.update({name: p.grad.detach().clone() for name, p in model.named_parameters()})
    return y.detach(), grads


@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("kind, case", [(k, i) for k in KINDS for i in range(6)],
                         ids=[f"{k}-{i}" for k in KINDS for i in range(6)])
def test_region_at_half_precision_is_as_accurate_as_pytorch(solutions, kind, case, dtype):
    shape, groups = KINDS[kind][1][case]
    reference, solution = solutions[kind]
    torch.manual_seed(case)
    ref_model = reference.Model(shape[1], groups).cuda()
    with torch.no_grad():   # non-trivial affine parameters
        ref_model.gn.weight.normal_(1.0, 0.5)
        ref_model.gn.bias.normal_(0.0, 0.5)
    new_model = solution.ModelNew(shape[1], groups).cuda()
    new_model.load_state_dict(ref_model.state_dict())
    x = (torch.randn(shape, device="cuda") * 2 + 0.5).to(dtype)
    # each run on its own copy: Module.to converts a parameter's .grad in place, which would alias the runs' gradients
    y_new, g_new = run(new_model.to(dtype), x, case)
    y_half, g_half = run(copy.deepcopy(ref_model).to(dtype), x, case)
    y_exact, g_exact = run(copy.deepcopy(ref_model).double(), x.double(), case)
    assert y_new.dtype == dtype and y_new.shape == y_half.shape
    within(y_new, y_half, y_exact, dtype, "output")
    for name in g_exact:
        within(g_new[name], g_half[name], g_exact[name], dtype, f"gradient of {name}")
