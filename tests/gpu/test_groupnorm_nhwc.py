"""Channels-last (NHWC) GELU/identity -> GroupNorm kernels (kgen/templates/cuda/groupnorm/op/nhwc.cuh), built
straight from the .cuh building blocks into a small test extension, against PyTorch (F.gelu then F.group_norm
on the same channels-last input) in float32 and float64, and against the NCHW kernels' statistics.

The fused conv bias (kChannelBias: op(x + bias[c]), and the bias gradient from backward) is tested on
both layouts against the same PyTorch references fed x + bias, and against the kernels without the flag.

Shapes exercise: the specialised and the generic group count, one channel per group, C % 4 != 0 (scalar
sweeps), groups that straddle a 16-byte vector (C/G = 9), a partial 32-channel tile, a pixel wider than one
block (C > 4 * 256: statistics split over column tiles) and a multi-split problem.

`python tests/gpu/test_groupnorm_nhwc.py --bench` times forward and backward at the L2-19 shape."""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.gpu.timing import median_ms  # noqa: E402

pytestmark = pytest.mark.gpu

CUDA_DIR = Path(__file__).resolve().parents[2] / "kgen" / "templates" / "cuda"
PARTS = ("core/common.cuh", "core/sweeps.cuh", "core/unary_ops.cuh", "groupnorm/statistics.cuh", "groupnorm/region.cuh", "groupnorm/op/twopass.cuh", "groupnorm/op/nhwc.cuh")
BLOCK, SPECIALISED_GROUPS = 256, 8
EPS = 1e-5

BINDINGS = r"""
// ---- test bindings: Identity and GeluErf, 256 threads, specialised for 8 groups ----
constexpr int kBlock = 256;
constexpr int kSpecialisedGroups = 8;

std::vector<at::Tensor> nhwc_forward(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, double eps, bool gelu) {
  if (gelu) return kgen::groupnorm_forward_nhwc<kgen::GeluErf, kBlock, kSpecialisedGroups>(x, w, b, groups, eps, kgen::GeluErf{});
  return kgen::groupnorm_forward_nhwc<kgen::Identity, kBlock, kSpecialisedGroups>(x, w, b, groups, eps, kgen::Identity{});
}

std::vector<at::Tensor> nhwc_backward(at::Tensor dy, at::Tensor x, at::Tensor w, at::Tensor mean, at::Tensor rstd,
                                      int64_t groups, bool gelu) {
  if (gelu) return kgen::groupnorm_backward_nhwc<kgen::GeluErf, kBlock, kSpecialisedGroups>(dy, x, w, mean, rstd, groups, kgen::GeluErf{});
  return kgen::groupnorm_backward_nhwc<kgen::Identity, kBlock, kSpecialisedGroups>(dy, x, w, mean, rstd, groups, kgen::Identity{});
}

std::vector<at::Tensor> nchw_forward(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, double eps, bool gelu) {
  if (gelu) return kgen::groupnorm_forward<kgen::GeluErf, kBlock, kSpecialisedGroups>(x, w, b, groups, eps, kgen::GeluErf{});
  return kgen::groupnorm_forward<kgen::Identity, kBlock, kSpecialisedGroups>(x, w, b, groups, eps, kgen::Identity{});
}

// kChannelBias: op(x + conv_bias[c]); backward returns {dx, dw, db, dconv_bias}
std::vector<at::Tensor> nhwc_forward_bias(at::Tensor x, at::Tensor cb, at::Tensor w, at::Tensor b, int64_t groups,
                                          double eps, bool gelu) {
  if (gelu) return kgen::groupnorm_forward_nhwc<kgen::GeluErf, kBlock, kSpecialisedGroups, true>(x, w, b, groups, eps, kgen::GeluErf{}, cb);
  return kgen::groupnorm_forward_nhwc<kgen::Identity, kBlock, kSpecialisedGroups, true>(x, w, b, groups, eps, kgen::Identity{}, cb);
}

std::vector<at::Tensor> nhwc_backward_bias(at::Tensor dy, at::Tensor x, at::Tensor cb, at::Tensor w, at::Tensor mean,
                                           at::Tensor rstd, int64_t groups, bool gelu) {
  if (gelu) return kgen::groupnorm_backward_nhwc<kgen::GeluErf, kBlock, kSpecialisedGroups, true>(dy, x, w, mean, rstd, groups, kgen::GeluErf{}, cb);
  return kgen::groupnorm_backward_nhwc<kgen::Identity, kBlock, kSpecialisedGroups, true>(dy, x, w, mean, rstd, groups, kgen::Identity{}, cb);
}

std::vector<at::Tensor> nchw_forward_bias(at::Tensor x, at::Tensor cb, at::Tensor w, at::Tensor b, int64_t groups,
                                          double eps, bool gelu) {
  if (gelu) return kgen::groupnorm_forward<kgen::GeluErf, kBlock, kSpecialisedGroups, true>(x, w, b, groups, eps, kgen::GeluErf{}, cb);
  return kgen::groupnorm_forward<kgen::Identity, kBlock, kSpecialisedGroups, true>(x, w, b, groups, eps, kgen::Identity{}, cb);
}

std::vector<at::Tensor> nchw_backward_bias(at::Tensor dy, at::Tensor x, at::Tensor cb, at::Tensor w, at::Tensor mean,
                                           at::Tensor rstd, int64_t groups, bool gelu) {
  if (gelu) return kgen::groupnorm_backward<kgen::GeluErf, kBlock, kSpecialisedGroups, true>(dy, x, w, mean, rstd, groups, kgen::GeluErf{}, cb);
  return kgen::groupnorm_backward<kgen::Identity, kBlock, kSpecialisedGroups, true>(dy, x, w, mean, rstd, groups, kgen::Identity{}, cb);
}

// an error raised in this (nvcc-compiled) translation unit, for the error-path test
void throw_from_cuda_unit() { TORCH_CHECK(false, "kgen: raised in the CUDA translation unit"); }

// diagnostic (not a test): a message that streams `count` (1 or 2) integers through std::ostream
void throw_with_integers(int64_t count) {
  if (count == 1) TORCH_CHECK(false, "kgen: integers ", count);
  TORCH_CHECK(false, "kgen: integers ", count, " and ", count + 1);
}

std::vector<at::Tensor> nchw_backward(at::Tensor dy, at::Tensor x, at::Tensor w, at::Tensor mean, at::Tensor rstd,
                                      int64_t groups, bool gelu) {
  if (gelu) return kgen::groupnorm_backward<kgen::GeluErf, kBlock, kSpecialisedGroups>(dy, x, w, mean, rstd, groups, kgen::GeluErf{});
  return kgen::groupnorm_backward<kgen::Identity, kBlock, kSpecialisedGroups>(dy, x, w, mean, rstd, groups, kgen::Identity{});
}
"""

CPP_SOURCE = r"""
std::vector<at::Tensor> nhwc_forward(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, double eps, bool gelu);
std::vector<at::Tensor> nhwc_backward(at::Tensor dy, at::Tensor x, at::Tensor w, at::Tensor mean, at::Tensor rstd,
                                      int64_t groups, bool gelu);
std::vector<at::Tensor> nchw_forward(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, double eps, bool gelu);
std::vector<at::Tensor> nchw_backward(at::Tensor dy, at::Tensor x, at::Tensor w, at::Tensor mean, at::Tensor rstd,
                                      int64_t groups, bool gelu);
std::vector<at::Tensor> nhwc_forward_bias(at::Tensor x, at::Tensor cb, at::Tensor w, at::Tensor b, int64_t groups,
                                          double eps, bool gelu);
std::vector<at::Tensor> nhwc_backward_bias(at::Tensor dy, at::Tensor x, at::Tensor cb, at::Tensor w, at::Tensor mean,
                                           at::Tensor rstd, int64_t groups, bool gelu);
std::vector<at::Tensor> nchw_forward_bias(at::Tensor x, at::Tensor cb, at::Tensor w, at::Tensor b, int64_t groups,
                                          double eps, bool gelu);
std::vector<at::Tensor> nchw_backward_bias(at::Tensor dy, at::Tensor x, at::Tensor cb, at::Tensor w, at::Tensor mean,
                                           at::Tensor rstd, int64_t groups, bool gelu);
void throw_from_cuda_unit();
void throw_with_integers(int64_t count);
// the same, raised in the host-compiled (g++) translation unit
void throw_from_cpp_unit() { TORCH_CHECK(false, "kgen: raised in the C++ translation unit"); }
"""

FUNCTIONS = ["nhwc_forward", "nhwc_backward", "nchw_forward", "nchw_backward", "nhwc_forward_bias",
             "nhwc_backward_bias", "nchw_forward_bias", "nchw_backward_bias", "throw_from_cuda_unit",
             "throw_from_cpp_unit", "throw_with_integers"]


def cuda_source() -> str:
    return "\n".join((CUDA_DIR / name).read_text() for name in PARTS) + BINDINGS


def build_extension(verbose: bool = False, extra_cuda_cflags: tuple[str, ...] = ()):
    """Builds (or reuses) the test extension; the module name carries a hash of the sources."""
    from torch.utils.cpp_extension import load_inline

    source = cuda_source()
    digest = hashlib.sha256((CPP_SOURCE + source + " ".join(extra_cuda_cflags)).encode()).hexdigest()[:16]
    return load_inline(
        name="kgen_test_groupnorm_nhwc_" + digest,
        cpp_sources=CPP_SOURCE,
        cuda_sources=source,
        functions=FUNCTIONS,
        extra_cuda_cflags=["-O3", *extra_cuda_cflags],
        verbose=verbose,
    )


@pytest.fixture(scope="module")
def ext():
    return build_extension()


SHAPES = [
    # (shape, groups)
    ((2, 64, 33, 17), 8),        # specialised group count, odd plane
    ((4, 96, 20, 20), 12),       # generic group count
    ((2, 64, 8, 8), 64),         # one channel per group: a 16-byte vector spans 4 groups
    ((3, 6, 5, 7), 3),           # C % 4 != 0: scalar sweeps, a partial channel tile
    ((8, 64, 130, 130), 8),      # many tiles and splits
    ((2, 36, 9, 11), 4),         # C/G = 9: groups straddle vectors; a partial tile on the 16-byte path
    ((1, 1040, 3, 5), 8),        # pixel wider than one statistics block: column tiles, split groups
]


def channels_last_input(shape, seed, scale=2.0, offset=0.0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(shape, device="cuda", generator=gen) * scale + offset
    return x.contiguous(memory_format=torch.channels_last)


def affine(channels, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed + 1000)
    w = torch.randn(channels, device="cuda", generator=gen) * 0.5 + 1.0
    b = torch.randn(channels, device="cuda", generator=gen) * 0.5
    return w, b


def reference(x, w, b, dy, groups, gelu, dtype):
    xr, wr, br = (t.detach().to(dtype).requires_grad_() for t in (x, w, b))
    assert xr.is_contiguous(memory_format=torch.channels_last) or xr.shape[1] == 1
    z = F.gelu(xr) if gelu else xr
    y = F.group_norm(z, groups, wr, br, EPS)
    y.backward(dy.to(dtype))
    return y.detach(), xr.grad, wr.grad, br.grad


def rel_err(a, b):
    return ((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-30)).item()


@pytest.mark.parametrize("gelu", [False, True], ids=["identity", "gelu"])
@pytest.mark.parametrize("shape, groups", SHAPES)
def test_forward_and_backward_match_pytorch(ext, shape, groups, gelu):
    seed = sum(shape) + groups + int(gelu)
    x = channels_last_input(shape, seed)
    w, b = affine(shape[1], seed)
    dy = torch.randn(shape, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed + 7))

    y, mean, rstd = ext.nhwc_forward(x, w, b, groups, EPS, gelu)
    assert y.shape == x.shape and y.is_contiguous()
    assert mean.shape == (shape[0], groups, 2) and rstd.shape == (shape[0], groups)
    dx, dw, db = ext.nhwc_backward(dy, x, w, mean, rstd, groups, gelu)
    assert dx.shape == x.shape and dx.is_contiguous(memory_format=torch.channels_last)

    # statistics agree with the NCHW kernels on the same values
    y_nchw, mean_nchw, rstd_nchw = ext.nchw_forward(x.contiguous(), w, b, groups, EPS, gelu)
    torch.testing.assert_close(mean.double().sum(-1), mean_nchw.double().sum(-1), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(rstd, rstd_nchw, atol=0, rtol=1e-5)
    torch.testing.assert_close(y, y_nchw, atol=1e-5, rtol=1e-5)

    for dtype in (torch.float32, torch.float64):
        yr, dxr, dwr, dbr = reference(x, w, b, dy, groups, gelu, dtype)
        torch.testing.assert_close(y.double(), yr.double(), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(dx.double(), dxr.double(), atol=1e-4, rtol=1e-4)
        for got, want in ((dw, dwr), (db, dbr)):
            scale = max(1.0, want.abs().max().item())
            torch.testing.assert_close(got.double(), want.double(), atol=1e-4 * scale, rtol=1e-4)
        if dtype == torch.float64:
            z = F.gelu(x.double()) if gelu else x.double()
            zg = z.reshape(shape[0], groups, -1)
            torch.testing.assert_close(mean.double().sum(-1), zg.mean(-1), atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(rstd.double(), (zg.var(-1, unbiased=False) + EPS).rsqrt(), atol=0, rtol=1e-5)


def conv_bias(channels, seed, scale=2.0):
    gen = torch.Generator(device="cuda").manual_seed(seed + 2000)
    return torch.randn(channels, device="cuda", generator=gen) * scale


def reference_with_bias(x, cb, w, b, dy, groups, gelu, dtype):
    """PyTorch on u = x + cb[c]; returns (y, dx, dw, db, dcb)."""
    xr, cbr, wr, br = (t.detach().to(dtype).requires_grad_() for t in (x, cb, w, b))
    u = xr + cbr.view(1, -1, 1, 1)
    z = F.gelu(u) if gelu else u
    y = F.group_norm(z, groups, wr, br, EPS)
    y.backward(dy.to(dtype))
    return y.detach(), xr.grad, wr.grad, br.grad, cbr.grad


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
@pytest.mark.parametrize("gelu", [False, True], ids=["identity", "gelu"])
@pytest.mark.parametrize("shape, groups", SHAPES)
def test_fused_channel_bias_matches_pytorch(ext, shape, groups, gelu, layout):
    """kChannelBias kernels: output, statistics and every gradient (x, weight, bias, conv bias) against
    PyTorch on x + bias in float32 and float64, and against the kernels without the flag fed x + bias
    (the same float add: only the statistics' chunking may differ, in the last bits)."""
    seed = sum(shape) + groups + int(gelu) + 100
    x = channels_last_input(shape, seed)
    if layout == "nchw":
        x = x.contiguous()
    w, b = affine(shape[1], seed)
    cb = conv_bias(shape[1], seed)
    dy = torch.randn(shape, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed + 7))
    forward, backward = (ext.nhwc_forward_bias, ext.nhwc_backward_bias) if layout == "nhwc" else (
        ext.nchw_forward_bias, ext.nchw_backward_bias)
    plain_forward, plain_backward = (ext.nhwc_forward, ext.nhwc_backward) if layout == "nhwc" else (
        ext.nchw_forward, ext.nchw_backward)

    y, mean, rstd = forward(x, cb, w, b, groups, EPS, gelu)
    assert y.shape == x.shape and y.is_contiguous()
    grads = backward(dy, x, cb, w, mean, rstd, groups, gelu)
    assert len(grads) == 4
    dx, dw, db, dcb = grads
    assert dcb.shape == cb.shape
    if layout == "nhwc":
        assert dx.is_contiguous(memory_format=torch.channels_last)

    u = (x + cb.view(1, -1, 1, 1)).contiguous(memory_format=torch.channels_last if layout == "nhwc" else
                                             torch.contiguous_format)
    y_u, mean_u, rstd_u = plain_forward(u, w, b, groups, EPS, gelu)
    dx_u, dw_u, db_u = plain_backward(dy, u, w, mean_u, rstd_u, groups, gelu)
    torch.testing.assert_close(mean.double().sum(-1), mean_u.double().sum(-1), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(rstd, rstd_u, atol=0, rtol=1e-5)
    torch.testing.assert_close(y, y_u, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dx, dx_u, atol=1e-5, rtol=1e-5)
    for got, want in ((dw, dw_u), (db, db_u), (dcb, dx_u.double().sum((0, 2, 3)).float())):
        scale = max(1.0, want.abs().max().item())
        torch.testing.assert_close(got, want, atol=1e-5 * scale, rtol=1e-5)

    for dtype in (torch.float32, torch.float64):
        yr, dxr, dwr, dbr, dcbr = reference_with_bias(x, cb, w, b, dy, groups, gelu, dtype)
        torch.testing.assert_close(y.double(), yr.double(), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(dx.double(), dxr.double(), atol=1e-4, rtol=1e-4)
        for got, want in ((dw, dwr), (db, dbr), (dcb, dcbr)):
            scale = max(1.0, want.abs().max().item())
            torch.testing.assert_close(got.double(), want.double(), atol=1e-4 * scale, rtol=1e-4)


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_fused_channel_bias_carries_the_offset(ext, layout):
    """x small around 0 and a bias of 1e4 (+ 1e-2 randn per channel): u = x + bias is 1e4 + O(1e-2), so the
    statistics' pilot must include the bias, or the variance loses its digits."""
    shape, groups = (2, 64, 33, 17), 8
    x = channels_last_input(shape, 17, scale=1e-2)
    if layout == "nchw":
        x = x.contiguous()
    w, b = affine(64, 17)
    cb = 1e4 + conv_bias(64, 17, scale=1e-2)
    forward = ext.nhwc_forward_bias if layout == "nhwc" else ext.nchw_forward_bias
    y, _, _ = forward(x, cb, w, b, groups, EPS, False)
    u = (x + cb.view(1, -1, 1, 1)).double()  # the float add the kernels do, then exact
    y64 = F.group_norm(u, groups, w.double(), b.double(), EPS)
    assert rel_err(y, y64) < 1e-3


def test_any_gradient_layout(ext):
    shape, groups = (2, 64, 33, 17), 8
    x = channels_last_input(shape, 11)
    w, b = affine(64, 11)
    _, mean, rstd = ext.nhwc_forward(x, w, b, groups, EPS, True)
    dy = torch.randn(shape, device="cuda")
    reference_grads = ext.nhwc_backward(dy, x, w, mean, rstd, groups, True)
    for layout in (dy.contiguous(memory_format=torch.channels_last), dy.transpose(2, 3).contiguous().transpose(2, 3)):
        for got, want in zip(ext.nhwc_backward(layout, x, w, mean, rstd, groups, True), reference_grads):
            assert torch.equal(got, want)


def test_large_offset_small_spread(ext):
    """1e4 + 1e-2 randn: the pilot shift and the (hi, lo) mean keep the variance's digits."""
    shape, groups = (2, 64, 33, 17), 8
    x = channels_last_input(shape, 12, scale=1e-2, offset=1e4)
    w, b = affine(64, 12)
    y, _, _ = ext.nhwc_forward(x, w, b, groups, EPS, False)
    y64 = F.group_norm(x.double(), groups, w.double(), b.double(), EPS)
    assert rel_err(y, y64) < 1e-3


def test_deterministic(ext):
    shape, groups = (4, 64, 40, 40), 8
    x = channels_last_input(shape, 13)
    w, b = affine(64, 13)
    cb = conv_bias(64, 13)
    dy = torch.randn(shape, device="cuda")
    runs = []
    for _ in range(2):
        y, mean, rstd = ext.nhwc_forward(x, w, b, groups, EPS, True)
        run = [y, mean, rstd, *ext.nhwc_backward(dy, x, w, mean, rstd, groups, True)]
        y, mean, rstd = ext.nhwc_forward_bias(x, cb, w, b, groups, EPS, True)
        run += [y, mean, rstd, *ext.nhwc_backward_bias(dy, x, cb, w, mean, rstd, groups, True)]
        xc = x.contiguous()
        y, mean, rstd = ext.nchw_forward_bias(xc, cb, w, b, groups, EPS, True)
        run += [y, mean, rstd, *ext.nchw_backward_bias(dy, xc, cb, w, mean, rstd, groups, True)]
        runs.append(run)
    for first, second in zip(*runs):
        assert torch.equal(first, second)


# Error paths run in a child process each: a crash while raising (seen on one machine) then fails one
# test with its exit status instead of taking the whole session down.
ROOT = Path(__file__).resolve().parents[2]
_CHILD = """
import sys
sys.path.insert(0, {root!r})
import pytest, torch
from tests.gpu.test_groupnorm_nhwc import EPS, affine, build_extension, channels_last_input
ext = build_extension()
CL = torch.channels_last
w, b = affine(64, 14)
x = channels_last_input((2, 64, 8, 8), 15)
dy = torch.randn(2, 64, 8, 8, device="cuda")
_, mean, rstd = ext.nhwc_forward(x, w, b, 8, EPS, True)
with pytest.raises(RuntimeError, match={message!r}):
    {call}
print("RAISED AS EXPECTED")
"""


def run_child(call: str, message: str):
    import os
    import subprocess

    code = _CHILD.format(root=str(ROOT), message=message, call=call)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, PYTHONFAULTHANDLER="1"))
    assert result.returncode == 0 and "RAISED AS EXPECTED" in result.stdout, (
        f"exit status {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}")


@pytest.mark.parametrize(
    "call, message",
    [
        ("ext.throw_from_cpp_unit()", "C\\+\\+ translation unit"),
        ("ext.throw_from_cuda_unit()", "CUDA translation unit"),
        ("ext.nchw_forward(torch.rand(64, device='cuda'), w, b, 8, EPS, True)", "shape"),
        ("ext.nhwc_forward(torch.rand(2, 64, 8, 8, device='cuda'), w, b, 8, EPS, True)", "channels-last"),
        ("ext.nhwc_forward(torch.rand(2, 64, 8, 8).contiguous(memory_format=CL), w, b, 8, EPS, True)", "CUDA"),
        ("ext.nhwc_forward(x.double(), w, b, 8, EPS, True)", "float32"),
        ("ext.nhwc_forward(torch.rand(2, 64, 8, device='cuda'), w, b, 8, EPS, True)", "shape"),
        ("ext.nhwc_forward(channels_last_input((2, 32, 8, 8), 16), w, b, 8, EPS, True)", "weight/bias must have shape"),
        ("ext.nhwc_forward(x, w, b, 7, EPS, True)", "divisible"),
        ("ext.nhwc_backward(dy, x.contiguous(), w, mean, rstd, 8, True)", "channels-last"),
        ("ext.nhwc_backward(dy[:, :, :4], x, w, mean, rstd, 8, True)", "output gradient has shape"),
        ("ext.nhwc_backward(dy, x, w, mean[:1], rstd, 8, True)", "saved statistics"),
        ("ext.nhwc_forward_bias(x, w[:32], w, b, 8, EPS, True)", "convolution bias must have shape"),
        ("ext.nchw_backward_bias(dy, x.contiguous(), w.cpu(), w, mean, rstd, 8, True)", "CUDA"),
    ],
    ids=["cpp-unit", "cuda-unit", "nchw-1d", "not-channels-last", "cpu", "float64", "3d", "weight-shape",
         "groups", "bwd-not-channels-last", "bwd-grad-shape", "bwd-stats", "conv-bias-shape", "conv-bias-cpu"],
)
def test_bad_input_is_a_clear_error(ext, call, message):
    run_child(call, message)


@pytest.mark.xfail(reason="on the H100 test machine (PyTorch 2.11) a TORCH_CHECK that streams an integer from the "
                          "test bindings crashed while raising (SIGSEGV); the kernels' own checks avoid that form",
                   strict=False)
def test_streamed_integer_message_from_cuda_unit(ext):
    """Documents the environment problem that groupnorm/op/nhwc.cuh's error_text() works around."""
    run_child("ext.throw_with_integers(2)", "integers 2 and 3")


# ---------------------------------------------------------------- timing (not a test)

def bench(shape=(128, 64, 258, 258), groups=8, gelu=True, profile=True):
    ext = build_extension()
    print("device:", torch.cuda.get_device_name(), "| torch", torch.__version__)
    x = channels_last_input(shape, 21)
    w, b = affine(shape[1], 21)
    dy = torch.randn(shape, device="cuda")
    tensor_bytes = x.numel() * 4
    y, mean, rstd = ext.nhwc_forward(x, w, b, groups, EPS, gelu)
    rows = []

    def report(name, fn, tensors):
        ms = median_ms(fn)
        gbs = tensors * tensor_bytes / ms / 1e6
        rows.append((name, ms, gbs))
        print(f"{name:44s} {ms:8.3f} ms  {gbs:7.0f} GB/s  ({tensors} x {tensor_bytes / 1e9:.2f} GB)", flush=True)

    copy_dst = torch.empty_like(dy)
    report("copy (d2d, read + write)", lambda: copy_dst.copy_(dy), 2)
    report("nhwc forward (2 reads + 1 write)", lambda: ext.nhwc_forward(x, w, b, groups, EPS, gelu), 3)
    report("nhwc backward (2+2 reads + 1 write)", lambda: ext.nhwc_backward(dy, x, w, mean, rstd, groups, gelu), 5)
    del copy_dst
    x_nchw = x.contiguous()
    _, mean_nchw, rstd_nchw = ext.nchw_forward(x_nchw, w, b, groups, EPS, gelu)
    report("nchw forward (reference kernels)", lambda: ext.nchw_forward(x_nchw, w, b, groups, EPS, gelu), 3)
    report("nchw backward (reference kernels)",
           lambda: ext.nchw_backward(dy, x_nchw, w, mean_nchw, rstd_nchw, groups, gelu), 5)
    del x_nchw
    if profile:
        from torch.profiler import ProfilerActivity, profile as torch_profile

        with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                ext.nhwc_forward(x, w, b, groups, EPS, gelu)
                ext.nhwc_backward(dy, x, w, mean, rstd, groups, gelu)
            torch.cuda.synchronize()
        events = [e for e in prof.key_averages() if getattr(e, "self_device_time_total", 0) > 0]
        print("\nper-kernel, mean per call (3 forward + 3 backward calls):")
        for e in sorted(events, key=lambda e: -e.self_device_time_total):
            ms = e.self_device_time_total / e.count / 1e3
            print(f"  {ms:8.3f} ms x{e.count:<3d} {tensor_bytes / ms / 1e6:6.0f} GB/s per tensor  {e.key[:100]}")
    return rows


if __name__ == "__main__":
    if "--bench" in sys.argv:
        bench()
    else:
        build_extension(verbose="--verbose" in sys.argv,
                        extra_cuda_cflags=("-Xptxas=-v",) if "--ptxas" in sys.argv else ())
        print("BUILT")
