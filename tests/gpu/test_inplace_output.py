"""A caller changes a model's output in place before the backward (`y = model(x); y.mul_(2)`, a UNet's `h += skip`):
the emitted file must give the reference's verdict with its real kernels, in both autograd modes. Where the
reference's backward does not read its output (GroupNorm, SiLU, a mean) the backward runs and its gradients are the
reference's; where it does (a logsumexp's) both raise PyTorch's "modified by an inplace operation". The CPU twin,
with the kernels emulated, is tests/ref/test_emitted_glue.py's test of the same name."""
from __future__ import annotations

import pytest
import torch

from kgen.ref.emit import emit_reference
from tests.solution_loader import build_all, import_file

pytestmark = pytest.mark.gpu

BODIES = {
    # name: (forward body, the reference's backward allows the change)
    "silu": ("F.silu(self.gn(x))", True),
    "mean_over_planes": ("F.silu(self.gn(x)).mean(dim=(2, 3))", True),
    "residual": ("F.silu(self.gn(x)) + x", True),
    "logsumexp_over_channels": ("torch.logsumexp(F.silu(self.gn(x)), dim=1)", False),
}
MODES = ("python", "cpp")
SHAPE = (3, 16, 9, 11)


def _reference_text(body: str) -> str:
    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.gn = nn.GroupNorm(4, 16)\n\n    def forward(self, x):\n"
            f"        return {body}\n\n\ndef get_inputs():\n    return [torch.randn{SHAPE}]\n\n\n"
            "def get_init_inputs():\n    return []\n")


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """(kind, mode) -> (reference module, solution module); the eight files built at once first."""
    folder = tmp_path_factory.mktemp("inplace")
    paths = {}
    for kind, (body, _) in BODIES.items():
        ref = folder / f"inplace_{kind}.py"
        ref.write_text(_reference_text(body))
        for mode in MODES:
            path = paths[kind, mode] = folder / f"inplace_{kind}_{mode}_solution.py"
            path.write_text(emit_reference(str(ref), output=path, autograd=mode)[0])
    build_all(paths.values())
    return {(kind, mode): (import_file(folder / f"inplace_{kind}.py"), import_file(paths[kind, mode]))
            for kind in BODIES for mode in MODES}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(BODIES))
def test_an_in_place_change_of_the_output_gets_the_references_verdict(modules, kind, mode):
    reference, solution = modules[kind, mode]
    allowed = BODIES[kind][1]
    torch.manual_seed(0)
    theirs = reference.Model().cuda()
    with torch.no_grad():   # affine parameters away from 1 and 0, so that their gradients are tested
        theirs.gn.weight.normal_(1.0, 0.5)
        theirs.gn.bias.normal_(0.0, 0.5)
    ours = solution.ModelNew().cuda()
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(SHAPE, device="cuda") * 1.5 + 0.25
    grads = []
    for model in (theirs, ours):
        leaf = x.clone().requires_grad_()
        y = model(leaf)
        y.mul_(2)
        if not allowed:
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.sum().backward()
            continue
        y.backward(torch.linspace(-1, 1, y.numel(), device="cuda").reshape(y.shape))
        grads.append([leaf.grad] + [p.grad for p in model.parameters()])
    for k, (got, want) in enumerate(zip(*grads) if allowed else ()):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, msg=lambda m: f"gradient {k}: {m}")
