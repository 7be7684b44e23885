"""The channels-last region kernels (kgen/templates/cuda/groupnorm/nhwc/nhwc.cuh, `kgen emit --ref --conv fast`).

1. Kernel against kernel: one region of an emitted file fed the same values once channels-last (its NHWC
   kernels) and once NCHW-contiguous (the two-pass or resident kernels, which test_gn_region_*.py and
   `kgen validate` check against float64): output and every gradient within 1e-5 (the same float32 sums in
   another order), at shapes that take partial channel tiles, partial pixel tiles, several splits, the scalar
   (C % 4 != 0) and the 16-byte paths, and groups whose channels straddle a 16-byte vector. The output must come
   back NCHW-contiguous and the input gradient channels-last.
2. The emitted model against the reference handed the same channels-last input (so cuDNN runs the same
   convolution in both; TF32 off): 1e-4, every gradient included; against the reference's own NCHW run and
   float64: 1e-2 (cuDNN may pick another algorithm for the other layout).
3. `kgen validate --no-tf32` on the emitted files at its default 1e-4, every check (float64 included). With
   PyTorch's default TF32, cuDNN's channels-last algorithms round differently from its NCHW ones (L2-21's NCHW
   forward convolution is plain float32, its channels-last one TF32; the channels-last TF32 weight gradient of
   a ConvTranspose2d strays further from float64), which is the convolution's doing, not the region's: on
   the H100, with TF32 on at 1e-2, this test fails only float64 conv-weight checks.
Needs a CUDA device."""
import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kgen.ref.emit import emit_reference
from kgen.ref.ir import RegionStep
from kgen.ref.plan import make_plan
from kgen.ref.trace import load_reference
from tests.solution_loader import import_file

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent.parent
REFERENCES = {
    "conv2d_scale_sigmoid_gn_residual": ROOT / "tests" / "ref" / "references" / "conv2d_scale_sigmoid_gn_residual.py",
    "convt2d_gn_noaffine_tanh_residual": ROOT / "tests" / "ref" / "references" / "convt2d_gn_noaffine_tanh_residual.py",
    "level2_19": ROOT / "kgen" / "specs" / "references" / "level2_19_convtranspose2d_gelu_groupnorm.py",
    "convt3d_swish_gn_hardswish": ROOT / "tests" / "ref" / "references" / "convt3d_swish_gn_hardswish.py",
}
# (reference, init arguments, region input shapes): the channel count is the model's.
KERNEL_CASES = [
    ("conv2d_scale_sigmoid_gn_residual", [5, 24, 3, 6], [(3, 24, 37, 29), (1, 24, 1, 130), (2, 24, 128, 130)]),
    ("conv2d_scale_sigmoid_gn_residual", [5, 36, 3, 9], [(2, 36, 19, 21), (3, 36, 200, 201)]),   # 2 tiles, cpg 4
    ("conv2d_scale_sigmoid_gn_residual", [5, 40, 3, 8], [(2, 40, 33, 7)]),                      # cpg 5
    ("convt2d_gn_noaffine_tanh_residual", [6, 10, 3, 2, 5], [(4, 10, 35, 27), (1, 10, 3, 5), (2, 10, 96, 97)]),
    ("level2_19", [64, 64, 3, 1, 8, 8], [(2, 64, 66, 66), (1, 64, 258, 258)]),
    # 5-D (NDHWC, --conv fast on a ConvTranspose3d): odd volumes; 12 and 16 channels (16-channel tiles) as L2-60
    ("convt3d_swish_gn_hardswish", [3, 12, 3, 2, 4], [(2, 12, 15, 19, 23), (1, 12, 5, 33, 40)]),
    ("convt3d_swish_gn_hardswish", [3, 16, 3, 2, 8], [(2, 16, 31, 17, 13)]),
]
# (reference, init arguments, model input shape) for the model-level checks
MODEL_CASES = [
    ("conv2d_scale_sigmoid_gn_residual", [5, 24, 3, 6], (3, 5, 37, 29)),
    ("conv2d_scale_sigmoid_gn_residual", [3, 36, 3, 9], (2, 3, 64, 70)),
    ("convt2d_gn_noaffine_tanh_residual", [6, 10, 3, 2, 5], (4, 6, 17, 13)),
    ("level2_19", [64, 64, 3, 1, 8, 8], (2, 64, 40, 40)),
    ("level2_19", [32, 96, 4, 2, 8, 12], (3, 32, 17, 23)),
    ("convt3d_swish_gn_hardswish", [3, 12, 3, 2, 4], (2, 3, 7, 9, 11)),
]
_SOLUTIONS: dict = {}


@pytest.fixture(autouse=True)
def exact_fp32_convolutions():
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = saved


def solution(name: str, tmp_path_factory, block_size: int = 256):
    if (name, block_size) not in _SOLUTIONS:
        path = tmp_path_factory.mktemp("nhwc") / f"{name}_fast_{block_size}.py"
        # the region a Python Function (run_region applies it alone), its kernels the default file's
        path.write_text(emit_reference(str(REFERENCES[name]), block_size=block_size, conv="fast",
                                       autograd="python")[0])
        _SOLUTIONS[name, block_size] = (import_file(path), path)
    return _SOLUTIONS[name, block_size]


def channels_last(x):
    return torch.channels_last if x.dim() == 4 else torch.channels_last_3d


def fresh_models(name, module, init, seed):
    """The reference Model and ModelNew with identical, non-trivial parameters."""
    reference = import_file(REFERENCES[name])
    torch.manual_seed(seed)
    ref = reference.Model(*init).cuda()
    torch.manual_seed(seed)
    new = module.ModelNew(*init).cuda()
    with torch.no_grad():
        torch.manual_seed(seed + 1)
        for p in ref.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    new.load_state_dict(ref.state_dict())
    return ref, new


def region_step(name):
    steps = [s for s in make_plan(load_reference(REFERENCES[name]), "fast").steps if isinstance(s, RegionStep)]
    assert len(steps) == 1 and steps[0].channels_last
    return steps[0]


def run_region(module, step, model, x, dout):
    """Region 0 of `module` on x (its layout kept), backward with dout: (out, dx, {parameter: grad})."""
    scope = {"self": model}
    gn = [eval(step.gn_args[k], {}, scope) for k in ("weight", "bias", "groups", "eps")]
    params = [eval(p.expr, {}, scope) for p in step.params]
    model.zero_grad(set_to_none=True)
    leaf = x.detach().clone(memory_format=torch.preserve_format).requires_grad_()
    out = module._Region0.apply(leaf, *gn, (), True, *params)  # True: for_backward
    out.backward(dout)
    return out.detach(), leaf.grad, {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


# Other block sizes change every tile's geometry (Tile<kBlock, W, kC>: 32 to 256 pixels, 1 to 16 row steps, 1 to
# 32 channels per warp): one shape with partial tiles each, the 16-byte path (L2-19), the scalar one (C = 10) and
# the 16-channel tiles (C = 16; at block 1024 the 32-channel ones take it).
BLOCK_CASES = [(block, case) for block in (32, 128, 1024) for case in (
    ("level2_19", [64, 64, 3, 1, 8, 8], [(2, 64, 66, 66)]),
    ("convt2d_gn_noaffine_tanh_residual", [6, 10, 3, 2, 5], [(3, 10, 35, 27)]),
    ("convt3d_swish_gn_hardswish", [3, 16, 3, 2, 8], [(2, 16, 9, 11, 13)]))]


@pytest.mark.parametrize("name, init, shapes", KERNEL_CASES, ids=lambda v: str(v))
def test_channels_last_kernels_equal_the_nchw_kernels(name, init, shapes, tmp_path_factory):
    check_against_nchw(name, init, shapes, tmp_path_factory, 256)


@pytest.mark.parametrize("block, case", BLOCK_CASES, ids=lambda v: str(v))
def test_channels_last_kernels_equal_the_nchw_kernels_at_other_block_sizes(block, case, tmp_path_factory):
    check_against_nchw(*case, tmp_path_factory, block)


def check_against_nchw(name, init, shapes, tmp_path_factory, block_size):
    module, _ = solution(name, tmp_path_factory, block_size)
    step = region_step(name)
    _, model = fresh_models(name, module, init, 3)
    for shape in shapes:
        x = torch.randn(shape, device="cuda") * 2.0 + 0.5
        dout = torch.randn(shape, device="cuda")
        x_cl = x.contiguous(memory_format=channels_last(x))
        out, dx, g = run_region(module, step, model, x_cl, dout)
        out_ref, dx_ref, g_ref = run_region(module, step, model, x, dout)
        assert out.is_contiguous(), "the channels-last kernels write the output NCHW"
        assert dx.is_contiguous(memory_format=channels_last(x)) and not dx.is_contiguous(), \
            "the channels-last path returns a channels-last input gradient"
        torch.testing.assert_close(out, out_ref, atol=1e-5, rtol=1e-5, msg=f"{shape}: output")
        torch.testing.assert_close(dx, dx_ref, atol=1e-5, rtol=1e-5, msg=f"{shape}: input gradient")
        assert sorted(g) == sorted(g_ref) and g, f"{shape}: gradients of {sorted(g)} vs {sorted(g_ref)}"
        for key in g:
            scale = max(1.0, g_ref[key].abs().max().item())
            torch.testing.assert_close(g[key], g_ref[key], atol=1e-5 * scale, rtol=1e-4, msg=f"{shape}: {key}")


def model_grads(model, x, dy):
    model.zero_grad(set_to_none=True)
    leaf = x.detach().clone(memory_format=torch.preserve_format).requires_grad_()
    y = model(leaf)
    y.backward(dy)
    return y.detach(), leaf.grad, {n: p.grad for n, p in model.named_parameters()}


def assert_grads_close(got, want, tol, what):
    (y, dx, g), (y_want, dx_want, g_want) = got, want
    torch.testing.assert_close(y.double(), y_want.double(), atol=tol, rtol=tol, msg=f"{what}: output")
    torch.testing.assert_close(dx.double(), dx_want.double(), atol=tol, rtol=tol, msg=f"{what}: input gradient")
    assert sorted(g) == sorted(g_want)
    for key in g:
        assert g[key] is not None, f"{what}: {key}.grad was not filled"
        scale = max(1.0, g_want[key].abs().max().item())
        torch.testing.assert_close(g[key].double(), g_want[key].double(), atol=tol * scale, rtol=tol,
                                   msg=f"{what}: {key} gradient")


@pytest.mark.parametrize("name, init, shape", MODEL_CASES, ids=lambda v: str(v))
def test_model_equals_the_reference_run_channels_last(name, init, shape, tmp_path_factory):
    module, _ = solution(name, tmp_path_factory)
    ref, new = fresh_models(name, module, init, 7)
    x = torch.rand(shape, device="cuda")
    dy = torch.randn(ref(x).shape, device="cuda")
    got = model_grads(new, x, dy)
    assert got[0].is_contiguous() and got[1].is_contiguous(), "output and input gradient come back NCHW"
    assert_grads_close(got, model_grads(ref, x.contiguous(memory_format=channels_last(x)), dy), 1e-4,
                       "vs the reference run channels-last")
    assert_grads_close(got, model_grads(ref, x, dy), 1e-2, "vs the reference NCHW")
    assert_grads_close(got, model_grads(copy.deepcopy(ref).double(), x.double(), dy.double()), 1e-2,
                       "vs the reference in float64")


VALIDATE_CASES = [
    ("conv2d_scale_sigmoid_gn_residual", []),
    ("convt2d_gn_noaffine_tanh_residual", ["--init-args", "[6, 20, 4, 3, 4]", "--input-shape", "[2, 6, 11, 9]"]),
    ("level2_19", ["--input-shape", "[4, 64, 48, 48]"]),
    ("convt3d_swish_gn_hardswish", []),
]


@pytest.mark.parametrize("name, extra", VALIDATE_CASES, ids=lambda v: str(v))
def test_kgen_validate_passes(name, extra, tmp_path_factory):
    _, path = solution(name, tmp_path_factory)
    result = subprocess.run([sys.executable, "-m", "kgen.cli", "validate", str(path), "--ref", str(REFERENCES[name]),
                             "--trials", "2", "--no-tf32", *extra],
                            capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


@pytest.mark.parametrize("name, init, shape", [MODEL_CASES[0], MODEL_CASES[2], MODEL_CASES[5]], ids=lambda v: str(v))
def test_a_default_file_reads_a_model_run_channels_last_as_it_lies(name, init, shape, tmp_path):
    """Without --conv fast the model and its input moved channels-last (as diffusion code runs): the region reads the
    conv's channels-last output with its NHWC kernels (no copy to NCHW), forward and backward, and the model equals
    the reference run the same way (cuDNN's same channels-last convolution, TF32 off) within 1e-4."""
    path = tmp_path / f"{name}_exact.py"
    path.write_text(emit_reference(str(REFERENCES[name]))[0])
    module = import_file(path)
    ref, new = fresh_models(name, module, init, 11)
    layout = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    ref, new = ref.to(memory_format=layout), new.to(memory_format=layout)
    x = torch.rand(shape, device="cuda").contiguous(memory_format=layout)
    dy = torch.randn(ref(x).shape, device="cuda")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        got = model_grads(new, x, dy)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if "kgen::" in e.name]
    assert any("region_nhwc" in n for n in names), names
    assert_grads_close(got, model_grads(ref, x, dy), 1e-4, "vs the reference run channels-last")
