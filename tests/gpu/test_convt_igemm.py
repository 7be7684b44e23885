"""kgen's tensor-core ConvTranspose2d (kgen/templates/cuda/conv/convt_igemm.cuh) against float64: the
conv output z = conv_transpose2d(x, w) + b within the TF32 bound of each element (2 x 2^-11 relative per
operand rounding, times sum |x w| of its terms), the fused GroupNorm statistics of op(z) against float64
statistics of the kernel's own z, and the normalised output. Shapes: kernel 1, 2, 3, 4, 5; stride 1, 2, 3;
padding and output padding; input channels 3 to 64; output channels 24, 48, 64, 70 (two channel tiles, the
second partial), 96 and 130 (groups straddling channel tiles); batch 1; odd spatial sizes (tiles wrapping
rows, the last tile partial). Also: bitwise determinism, TF32 rounding against cuDNN's, clear errors.

`python tests/gpu/test_convt_igemm.py --bench` times it at L2-19's shape against cuDNN."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.gpu import convt_harness as H  # noqa: E402
from tests.gpu.timing import print_conv_rates  # noqa: E402

pytestmark = pytest.mark.gpu
EPS = 1e-5
TF32_REL = 2.0 ** -11   # round-to-nearest TF32: half an ulp of a 10-bit mantissa
OPS = {"gelu_erf": F.gelu, "gelu_erf_truncated": F.gelu, "identity": lambda v: v,
       "gelu_tanh": lambda v: F.gelu(v, approximate="tanh")}

# (N, C_in, C_out, H, W, kernel, stride, padding, output_padding, groups)
CASES = [
    (2, 64, 64, 20, 19, 3, 1, 0, 0, 8),        # L2-19's layer at a small spatial size
    (1, 3, 24, 17, 13, 1, 1, 0, 0, 6),         # kernel 1, C_in 3, batch 1
    (2, 24, 48, 9, 11, 2, 2, 0, 0, 8),         # kernel 2, stride 2
    (2, 48, 96, 7, 8, 4, 3, 1, 2, 12),         # kernel 4, stride 3, padding, output padding
    (1, 16, 70, 10, 7, 5, 2, 2, 1, 7),         # kernel 5, C_out 70: a second, partial channel tile
    (2, 9, 130, 6, 5, 3, 2, 1, 1, 2),          # groups of 65 channels straddling channel tiles
    (1, 33, 64, 31, 29, 3, 1, 1, 0, 16),       # C_in 33: a partial input-channel chunk; plane 961
    (1, 80, 32, 6, 5, 1, 1, 0, 0, 4),          # kernel 1, C_in 80: three chunks, fewer than the pipeline's stages
]


@pytest.fixture(scope="module")
def ext():
    return H.build_extension()


def make(case, seed):
    n, c_in, c_out, h, w, k, stride, pad, out_pad, groups = case
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.rand(n, c_in, h, w, device="cuda", generator=gen)
    bound = 1.0 / (c_in * k * k) ** 0.5
    weight = (torch.rand(c_in, c_out, k, k, device="cuda", generator=gen) * 2 - 1) * bound
    bias = (torch.rand(c_out, device="cuda", generator=gen) * 2 - 1) * bound
    gamma = torch.randn(c_out, device="cuda", generator=gen)
    beta = torch.randn(c_out, device="cuda", generator=gen)
    return x, weight, bias, gamma, beta, [stride] * 2, [pad] * 2, [out_pad] * 2, groups


def conv64(x, weight, bias, stride, pad, out_pad):
    return F.conv_transpose2d(x.double(), weight.double(), None if bias is None else bias.double(), stride=stride,
                              padding=pad, output_padding=out_pad)


@pytest.mark.parametrize("variant", ["gelu_erf", "gelu_erf_truncated", "identity", "gelu_tanh"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[3]}x{c[4]}-co{c[2]}-k{c[5]}s{c[6]}")
def test_conv_and_statistics_match_float64(ext, case, variant):
    x, weight, bias, gamma, beta, stride, pad, out_pad, groups = make(case, seed=hash(case) % 2**31)
    z, mean, rstd = ext.convt_forward(x, weight, bias, groups, EPS, stride, pad, out_pad, H.VARIANTS[variant])
    exact = conv64(x, weight, bias, stride, pad, out_pad)
    magnitude = conv64(x.abs(), weight.abs(), None, stride, pad, out_pad)   # sum |x w| of each output
    rel = TF32_REL * (2 if variant == "gelu_erf_truncated" else 1)
    bound = 2.5 * rel * magnitude + 1e-6
    err = (z.double() - exact).abs()
    assert z.shape == exact.shape
    assert (err <= bound).all(), f"max err {err.max():.3g}, worst excess {(err - bound).max():.3g}"
    # the statistics of op(z) for the kernel's own z, against float64
    H.assert_statistics_match(z, mean, rstd, OPS[variant], groups, EPS)


@pytest.mark.parametrize("case", CASES[:4], ids=lambda c: f"{c[0]}x{c[1]}x{c[3]}x{c[4]}-co{c[2]}-k{c[5]}s{c[6]}")
def test_groupnorm_output_matches_float64(ext, case):
    x, weight, bias, gamma, beta, stride, pad, out_pad, groups = make(case, seed=7)
    y, z, mean, rstd = ext.convt_gn_forward(x, weight, bias, gamma, beta, groups, EPS, stride, pad, out_pad, 0)
    ref = F.group_norm(F.gelu(z.double()), groups, gamma.double(), beta.double(), EPS)
    assert torch.allclose(y.double(), ref, atol=1e-4, rtol=1e-4), (y.double() - ref).abs().max()


@pytest.mark.parametrize("config", sorted(H.CONFIGS))
def test_tile_configurations_match_float64(ext, config):
    """Every tile configuration the benchmark compares computes the same conv and statistics: against float64
    at a geometry with partial pixel tiles, a partial K chunk and more chunks than stages."""
    case = (2, 40, 64, 13, 11, 3, 2, 1, 1, 8)
    x, weight, bias, gamma, beta, stride, pad, out_pad, groups = make(case, seed=30 + config)
    z, mean, rstd = ext.convt_forward_config(x, weight, bias, groups, EPS, stride, pad, out_pad, config)
    exact = conv64(x, weight, bias, stride, pad, out_pad)
    bound = 2.5 * TF32_REL * conv64(x.abs(), weight.abs(), None, stride, pad, out_pad) + 1e-6
    err = (z.double() - exact).abs()
    assert (err <= bound).all(), f"{H.CONFIGS[config]}: max err {err.max():.3g}"
    u = F.gelu(z.double()).reshape(z.shape[0], groups, -1)
    got_mean = mean[..., 0].double() + mean[..., 1].double()
    assert torch.allclose(got_mean, u.mean(-1), atol=1e-6, rtol=1e-6), H.CONFIGS[config]
    assert torch.allclose(rstd.double(), 1 / torch.sqrt(u.var(-1, unbiased=False) + EPS), atol=1e-5, rtol=1e-5)


def test_bitwise_deterministic(ext):
    x, weight, bias, gamma, beta, stride, pad, out_pad, groups = make(CASES[0], seed=3)
    first = ext.convt_gn_forward(x, weight, bias, gamma, beta, groups, EPS, stride, pad, out_pad, 0)
    again = ext.convt_gn_forward(x, weight, bias, gamma, beta, groups, EPS, stride, pad, out_pad, 0)
    for a, b in zip(first, again):
        assert torch.equal(a, b)


def test_tf32_rounding_against_cudnn(ext, capsys):
    """Which TF32 rounding is nearer cuDNN's TF32 conv (reported; both must be within the TF32 bound)."""
    x, weight, bias, gamma, beta, stride, pad, out_pad, groups = make(CASES[0], seed=5)
    torch.backends.cudnn.allow_tf32 = True
    cudnn = F.conv_transpose2d(x, weight, bias)
    for name in ("gelu_erf", "gelu_erf_truncated"):
        z = ext.convt_forward(x, weight, bias, groups, EPS, stride, pad, out_pad, H.VARIANTS[name])[0]
        with capsys.disabled():
            print(f"\n  {name}: max |z - cuDNN TF32| = {(z - cudnn).abs().max():.3g}")


def test_clear_errors(ext):
    x, weight, bias, gamma, beta, stride, pad, out_pad, groups = make(CASES[0], seed=1)
    with pytest.raises(RuntimeError, match="CUDA"):
        ext.convt_forward(x.cpu(), weight, bias, groups, EPS, stride, pad, out_pad, 0)
    with pytest.raises(RuntimeError, match="weight"):
        ext.convt_forward(x, weight[:3], bias, groups, EPS, stride, pad, out_pad, 0)
    with pytest.raises(RuntimeError, match="divisible"):
        ext.convt_forward(x, weight, bias, 7, EPS, stride, pad, out_pad, 0)
    with pytest.raises(RuntimeError, match="float32"):
        ext.convt_forward(x.half(), weight, bias, groups, EPS, stride, pad, out_pad, 0)


def bench() -> None:
    """L2-19's shape: kgen's conv (+ moments) and conv + GroupNorm against cuDNN NCHW and channels-last."""
    ext = H.build_extension()
    torch.backends.cudnn.allow_tf32 = True
    x = torch.rand(128, 64, 256, 256, device="cuda")
    weight = torch.randn(64, 64, 3, 3, device="cuda") * 0.04
    bias, gamma, beta = (torch.randn(64, device="cuda") for _ in range(3))
    flop = 2 * 128 * 64 * 258 * 258 * 64 * 9

    x_cl = x.to(memory_format=torch.channels_last)
    rows = {
        "kgen conv + moments (TF32 rna)": lambda: ext.convt_forward(x, weight, bias, 8, EPS, [1, 1], [0, 0], [0, 0], 0),
        "kgen conv + GELU + GroupNorm": lambda: ext.convt_gn_forward(x, weight, bias, gamma, beta, 8, EPS, [1, 1],
                                                                     [0, 0], [0, 0], 0),
        "cuDNN conv NCHW (TF32)": lambda: F.conv_transpose2d(x, weight, bias),
        "cuDNN conv channels-last (TF32)": lambda: F.conv_transpose2d(x_cl, weight, bias),
    }
    for config, text in H.CONFIGS.items():   # the tile configurations, conv + moments each
        rows[f"kgen conv + moments, {text}"] = (
            lambda c=config: ext.convt_forward_config(x, weight, bias, 8, EPS, [1, 1], [0, 0], [0, 0], c))
    print_conv_rates(rows, flop, 72)


if __name__ == "__main__":
    if "--bench" in sys.argv:
        bench()
