"""A region that a TF32 library op reads (a convolution, a Linear) reproduces PyTorch's GroupNorm forward and its
element-wise ops bit for bit (ref/plan_faithful.py, groupnorm/statistics_torch.cuh), so the op after it sees the
reference's values and its output is the reference's, bit for bit: what KernelBench's float32 check (atol = rtol =
1e-4) needs where cuDNN rounds to TF32 (a correctly rounded GroupNorm fails it there, as torch.compile's does).
Three references: 2-D conv chains with peeled conv biases (SiLU, tanh-GELU), 1-D without affine (mish), rows of one
value per plane before Linears (sigmoid, exact GELU); several shapes each (slices under and over 512 values, one
group, one channel per group), float32 with TF32 on for the ops reading the regions (PyTorch's default for
convolutions; turned on for the Linears), and bfloat16 / float16. Where it is off the regions are kgen's own, which
the last test checks. Needs a CUDA device."""
import contextlib
import textwrap

import pytest
import torch

from kgen.ref.emit import emit_reference
from tests.solution_loader import import_file

pytestmark = pytest.mark.gpu

REFERENCES = {
    "conv2d": ("""
        class Model(nn.Module):
            def __init__(self, channels, groups):
                super().__init__()
                self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
                self.gn1 = nn.GroupNorm(groups, channels)
                self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
                self.gn2 = nn.GroupNorm(groups, channels)
                self.conv3 = nn.Conv2d(channels, 8, 1)

            def forward(self, x):
                h = self.conv2(F.silu(self.gn1(self.conv1(x))))
                return self.conv3(F.gelu(self.gn2(h), approximate="tanh"))
        """, [((2, 32, 8, 8), 8), ((4, 64, 24, 24), 32), ((1, 48, 17, 13), 1), ((3, 16, 5, 7), 16)]),
    "conv1d": ("""
        class Model(nn.Module):
            def __init__(self, channels, groups):
                super().__init__()
                self.gn = nn.GroupNorm(groups, channels, affine=False)
                self.conv = nn.Conv1d(channels, channels, 5, padding=2)

            def forward(self, x):
                return self.conv(F.mish(self.gn(x)))
        """, [((2, 32, 40), 8), ((8, 64, 1000), 4), ((3, 24, 7), 24)]),
    "rows": ("""
        class Model(nn.Module):
            def __init__(self, channels, groups):
                super().__init__()
                self.gn1 = nn.GroupNorm(groups, channels)
                self.fc1 = nn.Linear(channels, channels)
                self.gn2 = nn.GroupNorm(groups, channels)
                self.fc2 = nn.Linear(channels, 16)

            def forward(self, x):
                h = self.fc1(torch.sigmoid(self.gn1(x)))
                return self.fc2(F.gelu(self.gn2(h)))
        """, [((64, 256), 16), ((5, 96), 3), ((300, 1024), 32)]),
}

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
TAIL = "\n\ndef get_inputs():\n    return [torch.randn({shape})]\n\n\ndef get_init_inputs():\n    return [{channels}, {groups}]\n"
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@pytest.fixture(scope="module")
def solutions(tmp_path_factory):
    """name -> (reference module, emitted module)."""
    root = tmp_path_factory.mktemp("faithful")
    out = {}
    for name, (body, cases) in REFERENCES.items():
        shape, groups = cases[0]
        ref_path = root / f"reference_{name}.py"
        ref_path.write_text(HEAD + textwrap.dedent(body) + TAIL.format(shape=list(shape), channels=shape[1],
                                                                        groups=groups))
        text = emit_reference(str(ref_path))[0]
        assert "constexpr bool kRegion0Faithful = true;" in text, "the planner did not see the TF32 reader"
        sol_path = root / f"solution_{name}.py"
        sol_path.write_text(text)
        out[name] = (import_file(ref_path), import_file(sol_path))
    return out


@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("name, case", [(n, i) for n, (_, cases) in REFERENCES.items() for i in range(len(cases))],
                         ids=[f"{n}-{i}" for n, (_, cases) in REFERENCES.items() for i in range(len(cases))])
def test_faithful_region_gives_the_references_bits(solutions, name, case, dtype):
    shape, groups = REFERENCES[name][1][case]
    reference, solution = solutions[name]
    assert torch.backends.cudnn.allow_tf32, "PyTorch's default: cuDNN convolutions round float32 to TF32"
    torch.manual_seed(case)
    ref_model = reference.Model(shape[1], groups).cuda()
    with torch.no_grad():   # affine parameters away from their (1, 0) initialisation
        for module in ref_model.modules():
            if isinstance(module, torch.nn.GroupNorm) and module.affine:
                module.weight.normal_(1.0, 0.5)
                module.bias.normal_(0.0, 0.5)
    new_model = solution.ModelNew(shape[1], groups).cuda()
    new_model.load_state_dict(ref_model.state_dict())
    ref_model, new_model = ref_model.to(DTYPES[dtype]), new_model.to(DTYPES[dtype])
    with tf32(name, True):
        check_bits(ref_model, new_model, name, shape, groups, dtype)


@contextlib.contextmanager
def tf32(name: str, on: bool):
    """The TF32 setting of the ops reading `name`'s regions (the Linears' cuBLAS, the convolutions' cuDNN) at `on`."""
    owner = torch.backends.cuda.matmul if name == "rows" else torch.backends.cudnn
    saved = owner.allow_tf32
    owner.allow_tf32 = on
    yield
    owner.allow_tf32 = saved


def check_bits(ref_model, new_model, name, shape, groups, dtype):
    for trial in range(2):
        x = (torch.randn(shape, device="cuda") * (1 + 2 * trial) + trial).to(DTYPES[dtype])
        with torch.no_grad():
            expected, got = ref_model(x), new_model(x)
        differing = (expected != got).sum().item()
        assert differing == 0, (f"{name} {shape} groups={groups} {dtype} trial {trial}: {differing} of "
                                f"{expected.numel()} values differ, max {(expected - got).abs().max().item():.3g}")


@pytest.mark.parametrize("on", [False, True], ids=["ieee", "tf32"])
@pytest.mark.parametrize("name", ["rows", "conv2d"])
def test_a_region_is_faithful_only_while_an_op_reading_it_rounds_to_tf32(solutions, name, on):
    """Off (PyTorch's default for the Linears; cuDNN's TF32 turned off for the convolutions) the regions take kgen's
    own statistics and kernels, no native_group_norm emulation (kgen::torch_* kernels), and stay within float32
    rounding of the reference; on, they emulate it, and the output is the reference's to the bit."""
    shape, groups = REFERENCES[name][1][-1]
    reference, solution = solutions[name]
    torch.manual_seed(7)
    ref_model = reference.Model(shape[1], groups).cuda()
    new_model = solution.ModelNew(shape[1], groups).cuda()
    new_model.load_state_dict(ref_model.state_dict())
    x = torch.randn(shape, device="cuda")
    with tf32(name, on), torch.no_grad():
        expected = ref_model(x)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            got = new_model(x)
            torch.cuda.synchronize()
    names = [e.name for e in prof.events() if "kgen::" in e.name]
    assert names, "no kgen kernel ran"
    assert any("kgen::torch_" in n for n in names) == on, names
    tolerance = {} if on else {"atol": 1e-4, "rtol": 1e-4}
    torch.testing.assert_close(got, expected, **(tolerance or {"atol": 0, "rtol": 0}))
