"""kgen's wgmma ConvTranspose2d (kgen/templates/cuda/conv/convt_wgmma.cuh: sm_90a, stride 1) against float64:
z = conv_transpose2d(x, w) (the conv without its bias, which the region prologue adds) within the TF32 bound of each
element (input and weights rounded to nearest: 2^-11 relative each, times sum |x w| of its terms), the fused GroupNorm
statistics of the prologue's op(z + b) against float64 statistics of the kernel's own z, and the normalised output.
Shapes: kernel 1 to 5, padding 0 to 2, input channels 3 to 80 (partial chunks of 8), output channels 24 to 130
(partial and several channel tiles, groups straddling them), batch 1, odd sizes (rows of odd width, scalar stores),
several pixel tiles a sample. Also: bitwise determinism, the distance to cuDNN's TF32, clear errors and declines. The
one-launch forward (conv/convt_wgmma_infer.cuh) with and without GroupNorm's affine parameters and with a region
epilogue. The input gradient (convt_wgmma_input_grad) and the weight gradient (conv/convt_wgrad.cuh) against float64
at their own shapes, what each declines, and the conv backward that picks them or cuDNN (convt_wgmma_conv_backward).

`python tests/gpu/test_convt_wgmma.py --bench` times it at L2-19's shape against cuDNN."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.gpu import convt_wgmma_harness as H  # noqa: E402
from tests.gpu.timing import print_conv_rates  # noqa: E402

pytestmark = pytest.mark.gpu
EPS = 1e-5
TF32_REL = 2.0 ** -11 + 2.0 ** -11   # input and weights rounded to nearest
TF32_TRUNC_REL = 2.0 ** -10 + 2.0 ** -11   # the input truncated, the weights rounded (the input gradient's grad_z)
OPS = {"gelu_erf": F.gelu, "identity": lambda v: v, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
       "gelu_erf_3_in_flight": F.gelu, "gelu_erf_bulk": F.gelu, "gelu_erf_bulk_2_stages": F.gelu}

# (N, C_in, C_out, H, W, kernel, padding, groups)
CASES = [
    (2, 64, 64, 20, 19, 3, 0, 8),      # L2-19's layer at a small size; odd output width
    (1, 3, 24, 17, 13, 1, 0, 6),       # kernel 1, C_in 3, batch 1
    (2, 24, 48, 9, 11, 2, 0, 8),       # kernel 2; even widths: paired stores
    (2, 48, 96, 7, 8, 4, 1, 12),       # kernel 4, padding 1, C_out 96: a second, partial channel tile
    (1, 16, 70, 10, 7, 5, 2, 7),       # kernel 5, padding 2
    (2, 9, 130, 6, 5, 3, 1, 2),        # groups of 65 channels straddling channel tiles
    (1, 33, 64, 31, 29, 3, 1, 16),     # C_in 33: a partial chunk
    (1, 80, 32, 6, 5, 1, 0, 4),        # 10 chunks
    (1, 8, 24, 6, 100, 5, 0, 4),       # kernel 5 on 100-wide rows: shared memory for a ring of 2 stages only
    (2, 16, 32, 9, 16, 3, 1, 4),       # padding 1 on 16-wide rows: the frame pitch 17 padded to 20 (4-pixel stores)
    (2, 64, 64, 62, 64, 3, 0, 8),      # 9 pixel tiles a sample (the determinism and cuDNN checks use it)
    # rows of whole 16-byte units (the bulk input path) with a partial chunk, kernel 5, kernel 1 and C_in 3
    (1, 33, 64, 29, 32, 3, 1, 16),
    (1, 16, 70, 10, 8, 5, 2, 7),
    (2, 3, 24, 13, 16, 1, 0, 6),
]


@pytest.fixture(scope="module")
def ext():
    e = H.build_extension()
    if not e.convt_wgmma_available():
        major, minor = torch.cuda.get_device_capability()
        assert (major, minor) != (9, 0), "an sm_90 GPU must run the sm_90a build"
        pytest.skip("the wgmma conv needs an sm_90 GPU")
    return e


def make(case, seed):
    n, c_in, c_out, h, w, k, pad, groups = case
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.rand(n, c_in, h, w, device="cuda", generator=gen) * 2 - 1
    bound = 1.0 / (c_in * k * k) ** 0.5
    weight = (torch.rand(c_in, c_out, k, k, device="cuda", generator=gen) * 2 - 1) * bound
    bias = (torch.rand(c_out, device="cuda", generator=gen) * 2 - 1) * bound
    gamma = torch.randn(c_out, device="cuda", generator=gen)
    beta = torch.randn(c_out, device="cuda", generator=gen)
    return x, weight, bias, gamma, beta, [pad] * 2, groups


def conv64(x, weight, bias, pad):
    return F.conv_transpose2d(x.double(), weight.double(), None if bias is None else bias.double(), padding=pad)


def biased(z, bias):
    """z + b as the region prologue forms it: one float32 add a value (the kernel's __fadd_rn)."""
    return z + bias.view(1, -1, 1, 1)


def assert_statistics_match(u, mean, rstd, op, groups: int, eps: float) -> None:
    """The fused GroupNorm statistics of op(u), for the kernel's own u = z + b, against float64."""
    v = op(u.double()).reshape(u.shape[0], groups, -1)
    mu, var = v.mean(-1), v.var(-1, unbiased=False)
    got_mean = mean[..., 0].double() + mean[..., 1].double()
    assert torch.allclose(got_mean, mu, atol=1e-6, rtol=1e-6), (got_mean - mu).abs().max()
    assert torch.allclose(rstd.double(), 1 / torch.sqrt(var + eps), atol=1e-5, rtol=1e-5)


def ids(c):
    return f"{c[0]}x{c[1]}x{c[3]}x{c[4]}-co{c[2]}-k{c[5]}p{c[6]}"


@pytest.mark.parametrize("variant", sorted(H.VARIANTS))
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_conv_and_statistics_match_float64(ext, case, variant):
    x, weight, bias, gamma, beta, pad, groups = make(case, seed=hash((case, variant)) % 2**31)
    z, mean, rstd = ext.convt_wgmma_forward(x, weight, bias, groups, EPS, pad, H.VARIANTS[variant])
    exact = conv64(x, weight, None, pad)
    bound = 1.25 * TF32_REL * conv64(x.abs(), weight.abs(), None, pad) + 1e-6
    err = (z.double() - exact).abs()
    assert z.shape == exact.shape
    assert (err <= bound).all(), f"max err {err.max():.3g}, worst excess {(err - bound).max():.3g}"
    assert_statistics_match(biased(z, bias), mean, rstd, OPS[variant], groups, EPS)


@pytest.mark.parametrize("case", CASES[:4], ids=ids)
def test_groupnorm_output_matches_float64(ext, case):
    x, weight, bias, gamma, beta, pad, groups = make(case, seed=7)
    y, z, mean, rstd = ext.convt_wgmma_gn_forward(x, weight, bias, gamma, beta, groups, EPS, pad)
    ref = F.group_norm(F.gelu(biased(z, bias).double()), groups, gamma.double(), beta.double(), EPS)
    assert torch.allclose(y.double(), ref, atol=1e-4, rtol=1e-4), (y.double() - ref).abs().max()


INFER_VARIANTS = {"gelu_erf": 0, "identity": 1, "gelu_tanh": 2, "gelu_erf_scale_epilogue": 3, "gelu_erf_registers": 13,
                  "gelu_erf_copies": 17}
INFER_OPS = {"gelu_erf_scale_epilogue": "gelu_erf", "gelu_erf_registers": "gelu_erf", "gelu_erf_copies": "gelu_erf"}


def infer_reference(z, bias, gamma, beta, groups, op, variant="gelu_erf"):
    """float64 GroupNorm(op(z + b)) of the two-kernel path's own z, times b[c] for the region epilogue y * b[c]."""
    ref = F.group_norm(OPS[op](biased(z, bias).double()), groups, None if gamma is None else gamma.double(),
                       None if beta is None else beta.double(), EPS)
    return ref * bias.double().view(1, -1, 1, 1) if variant == "gelu_erf_scale_epilogue" else ref


@pytest.mark.parametrize("normalisers", [-1, 1, 5])
@pytest.mark.parametrize("variant", sorted(INFER_VARIANTS))
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_one_launch_forward_matches_float64(ext, case, variant, normalisers):
    """convt_wgmma_infer (conv, prologue, moments, the normalise and the region epilogue in one launch, y written in
    place) against float64 GroupNorm(op(z + b)) of the two-kernel path's own z (same main loop: the same z), at 1e-4:
    the stored prologue value (GELU by a 1.5e-7 erfc), the sample's merged statistics, the in-place normalise and the
    epilogue (variant gelu_erf_scale_epilogue: y * b[c]); every element is compared against a fresh random reference
    (an unnormalised or skipped plane would fail)."""
    x, weight, bias, gamma, beta, pad, groups = make(case, seed=hash((case, variant, normalisers)) % 2**31)
    op = INFER_OPS.get(variant, variant)
    z = ext.convt_wgmma_forward(x, weight, bias, groups, EPS, pad, H.VARIANTS[op])[0]
    y = ext.convt_wgmma_infer(x, weight, bias, gamma, beta, groups, EPS, pad, INFER_VARIANTS[variant], normalisers)
    ref = infer_reference(z, bias, gamma, beta, groups, op, variant)
    assert y.shape == ref.shape
    assert torch.allclose(y.double(), ref, atol=1e-4, rtol=1e-4), (y.double() - ref).abs().max()


@pytest.mark.parametrize("affine", ["none", "gamma_only"])
@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[-1]], ids=ids)
def test_one_launch_forward_without_affine_parameters(ext, case, affine):
    """GroupNorm(affine=False) (gamma and beta undefined: scale rstd, shift 0), and gamma without beta, against float64:
    both normalise paths (bulk, and the register path's odd planes)."""
    x, weight, bias, gamma, beta, pad, groups = make(case, seed=29)
    gamma = gamma if affine == "gamma_only" else None
    z = ext.convt_wgmma_forward(x, weight, bias, groups, EPS, pad, 0)[0]
    assert ext.convt_wgmma_infer_unsupported(x, weight, gamma, None, groups, pad) == ""
    for variant in (0, 13):
        y = ext.convt_wgmma_infer(x, weight, bias, gamma, None, groups, EPS, pad, variant, -1)
        ref = infer_reference(z, bias, gamma, None, groups, "gelu_erf")
        assert torch.allclose(y.double(), ref, atol=1e-4, rtol=1e-4), (variant, (y.double() - ref).abs().max())


def test_one_launch_forward_one_conv_block_many_normalisers(ext):
    """All multiprocessors but one normalise, so they wait on every sample of a single conv block: 9 pixel tiles a
    sample, 3 samples."""
    case = (3, 64, 64, 62, 64, 3, 0, 8)
    x, weight, bias, gamma, beta, pad, groups = make(case, seed=11)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    z = ext.convt_wgmma_forward(x, weight, bias, groups, EPS, pad, 0)[0]
    y = ext.convt_wgmma_infer(x, weight, bias, gamma, beta, groups, EPS, pad, 0, sms - 1)
    ref = infer_reference(z, bias, gamma, beta, groups, "gelu_erf")
    assert torch.allclose(y.double(), ref, atol=1e-4, rtol=1e-4), (y.double() - ref).abs().max()


def test_one_launch_forward_deterministic_and_clear_errors(ext):
    x, weight, bias, gamma, beta, pad, groups = make(CASES[-1], seed=13)
    first = ext.convt_wgmma_infer(x, weight, bias, gamma, beta, groups, EPS, pad, 0, -1)
    assert torch.equal(first, ext.convt_wgmma_infer(x, weight, bias, gamma, beta, groups, EPS, pad, 0, -1))
    assert ext.convt_wgmma_infer_unsupported(x, weight, gamma, beta, groups, pad) == ""
    assert ext.convt_wgmma_infer_unsupported(x, weight, None, None, groups, pad) == ""
    assert "C_out" in ext.convt_wgmma_infer_unsupported(x, weight, gamma[:-1], beta, groups, pad)
    assert "C_out" in ext.convt_wgmma_infer_unsupported(x, weight, None, beta[:-1], groups, pad)
    assert "float32 CUDA" in ext.convt_wgmma_infer_unsupported(x, weight, gamma.cpu(), beta, groups, pad)
    assert ext.convt_wgmma_infer_unsupported(x.double(), weight, gamma, beta, groups, pad) != ""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    with pytest.raises(RuntimeError, match="normalisers"):
        ext.convt_wgmma_infer(x, weight, bias, gamma, beta, groups, EPS, pad, 0, sms)


def test_bulk_input_path_equals_the_copies_bit_for_bit(ext):
    """The bulk input path (raw NCHW slots by bulk copies, then a transposing, rounding pass) stages the same TF32
    operands as the 4-byte copies' path, so z, the statistics and the one launch's y are equal bit for bit; the shapes
    whose rows are whole 16-byte units take it where its slots fit (convt_wgmma_ring says so), the others and a
    misaligned input keep the copies."""
    bulk = 0
    for case in CASES:
        x, weight, bias, gamma, beta, pad, groups = make(case, seed=17)
        stages, raw_slots = ext.convt_wgmma_ring(x, weight, groups, pad)
        assert case[3] * case[4] % 4 == 0 or raw_slots == 0, (case, stages, raw_slots)
        bulk += raw_slots > 0
        want = ext.convt_wgmma_forward(x, weight, bias, groups, EPS, pad, 0)
        for variant in (30, 32):
            for got, expected in zip(ext.convt_wgmma_forward(x, weight, bias, groups, EPS, pad, variant), want):
                assert torch.equal(got, expected), (case, variant, (got - expected).abs().max())
        y = ext.convt_wgmma_infer(x, weight, bias, gamma, beta, groups, EPS, pad, 0, -1)
        assert torch.equal(y, ext.convt_wgmma_infer(x, weight, bias, gamma, beta, groups, EPS, pad, 17, -1)), case
    assert bulk >= 6
    # a contiguous input 4 bytes off a 16-byte boundary: the copies' path, still right
    x, weight, bias, gamma, beta, pad, groups = make(CASES[-1], seed=19)
    shifted = torch.empty(x.numel() + 1, device="cuda")[1:].view_as(x)
    shifted.copy_(x)
    assert ext.convt_wgmma_ring(shifted, weight, groups, pad)[1] == 0
    for got, want in zip(ext.convt_wgmma_forward(shifted, weight, bias, groups, EPS, pad, 30),
                         ext.convt_wgmma_forward(x, weight, bias, groups, EPS, pad, 0)):
        assert torch.equal(got, want)


def test_tf32_rounding_by_cvt_rn_keeps_tf32_nearests_value(ext):
    """cvt.rn.tf32.f32 (one instruction on sm_90a) against tf32_nearest (4): the same TF32 value, i.e. the same upper
    19 bits, for ties (a low 13-bit pattern of exactly 0x1000, odd and even kept bits), values just either side,
    subnormals, zeros, the largest finite values (rounding up to infinity), infinities, and 4 M random bit patterns
    that are not NaN. Reports whether cvt.rn also clears the low 13 bits (the tensor cores ignore them either way)."""
    gen = torch.Generator(device="cuda").manual_seed(23)
    bits = torch.randint(-2 ** 31, 2 ** 31, (1 << 22,), device="cuda", dtype=torch.int64, generator=gen)
    base = torch.randint(0, 1 << 19, (4096,), device="cuda", dtype=torch.int64, generator=gen) << 13
    edges = torch.cat([base | 0x1000, base | 0x0FFF, base | 0x1001, base, base | 0x1FFF,
                       torch.tensor([0, 1, 0x1000, 0x7FFFFF, 0x7F7FFFFF, 0x7F7FF000, 0x7F7FEFFF, 0x7F800000,
                                     0x3F800000, 0x3F801000, 0x3F803000], device="cuda")])
    edges = torch.cat([edges, edges | (1 << 31)])
    patterns = torch.cat([bits, edges]).to(torch.int64)
    patterns = torch.where(patterns >= 2 ** 31, patterns - 2 ** 32, patterns).to(torch.int32)
    x = patterns.view(torch.float32)
    x = x[~torch.isnan(x)]
    nearest, cvt_rn = ext.tf32_roundings(x)
    mask = torch.tensor(-8192, device="cuda", dtype=torch.int32)  # 0xFFFFE000: the TF32 value's bits
    differ = (nearest & mask) != (cvt_rn & mask)
    assert not differ.any(), (f"{int(differ.sum())} of {x.numel()} differ, e.g. "
                              f"{[hex(int(v) & 0xFFFFFFFF) for v in x.view(torch.int32)[differ][:5]]}")
    print(f"cvt.rn.tf32.f32 clears the low 13 bits: {bool(((cvt_rn & ~mask) == 0).all())}")


def test_bitwise_deterministic(ext):
    x, weight, bias, gamma, beta, pad, groups = make(CASES[-1], seed=3)
    first = ext.convt_wgmma_gn_forward(x, weight, bias, gamma, beta, groups, EPS, pad)
    again = ext.convt_wgmma_gn_forward(x, weight, bias, gamma, beta, groups, EPS, pad)
    for a, b in zip(first, again):
        assert torch.equal(a, b)


def test_distance_to_cudnn_tf32(ext, capsys):
    """Reported: kgen's z + b and cuDNN's TF32 conv with its bias, each against float64, and against each other."""
    x, weight, bias, gamma, beta, pad, groups = make(CASES[-1], seed=5)
    torch.backends.cudnn.allow_tf32 = True
    cudnn = F.conv_transpose2d(x, weight, bias, padding=pad)
    z = biased(ext.convt_wgmma_forward(x, weight, bias, groups, EPS, pad, 0)[0], bias)
    exact = conv64(x, weight, bias, pad)
    with capsys.disabled():
        print(f"\n  max |kgen - float64| {(z.double() - exact).abs().max():.3g}, "
              f"|cuDNN TF32 - float64| {(cudnn.double() - exact).abs().max():.3g}, "
              f"|kgen - cuDNN| {(z - cudnn).abs().max():.3g}")


# (N, C_in, C_out, H, W, kernel, padding) of the forward conv whose input gradient is taken: grad_z has C_out channels
# (a multiple of 4: read 4 at a time), grad_x C_in.
INPUT_GRAD_CASES = [
    (2, 64, 64, 20, 19, 3, 0),     # L2-19's layer at a small size
    (1, 24, 12, 17, 13, 1, 0),     # kernel 1; C_out 12: a half chunk
    (2, 48, 36, 9, 11, 2, 0),      # kernel 2; C_out 36
    (2, 96, 48, 7, 8, 4, 1),       # kernel 4, padding 1; grad_x 96 channels: a second, partial channel tile
    (1, 3, 16, 10, 7, 5, 2),       # kernel 5, padding 2; grad_x 3 channels
    (2, 64, 64, 62, 64, 3, 0),     # several pixel tiles a sample
]


@pytest.mark.parametrize("case", INPUT_GRAD_CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[3]}x{c[4]}-co{c[2]}-k{c[5]}p{c[6]}")
@pytest.mark.parametrize("layout", ["channels_last", "nchw"])
@pytest.mark.parametrize("variant", sorted(H.INPUT_GRAD_VARIANTS))
def test_input_grad_matches_float64(ext, case, layout, variant):
    """grad_x of conv_transpose2d(x, w, padding) = conv2d(grad_z, w, padding), by the wgmma kernel reading grad_z
    channels-last (an NCHW grad_z is copied so first), against float64, within the TF32 bound of the forward's test
    (grad_z truncated by the tensor cores by default: 2^-10 for it; rounded to nearest in grad_z_rounded); unwritten
    outputs would fail (the output is poisoned by nothing: every element is compared)."""
    n, c_in, c_out, h, w, k, pad = case
    gen = torch.Generator(device="cuda").manual_seed(hash(case) % 2**31)
    weight = (torch.rand(c_in, c_out, k, k, device="cuda", generator=gen) * 2 - 1) / (c_out * k * k) ** 0.5
    out_h, out_w = h + k - 1 - 2 * pad, w + k - 1 - 2 * pad
    grad_z = torch.randn(n, c_out, out_h, out_w, device="cuda", generator=gen)
    if layout == "channels_last":
        grad_z = grad_z.contiguous(memory_format=torch.channels_last)
    assert ext.convt_wgmma_input_grad_unsupported(grad_z, weight, [pad, pad]) == ""
    grad_x = ext.convt_wgmma_input_grad(grad_z, weight, [pad, pad], H.INPUT_GRAD_VARIANTS[variant])
    exact = F.conv2d(grad_z.double(), weight.double(), padding=pad)
    assert grad_x.shape == (n, c_in, h, w) and grad_x.is_contiguous()
    rel = TF32_REL if variant == "grad_z_rounded" else TF32_TRUNC_REL
    bound = 1.25 * rel * F.conv2d(grad_z.double().abs(), weight.double().abs(), padding=pad) + 1e-6
    err = (grad_x.double() - exact).abs()
    assert (err <= bound).all(), f"max err {err.max():.3g}, worst excess {(err - bound).max():.3g}"


def test_input_grad_declines_what_it_does_not_take(ext):
    weight = torch.randn(8, 6, 3, 3, device="cuda")
    assert "4 at a time" in ext.convt_wgmma_input_grad_unsupported(torch.randn(1, 6, 9, 9, device="cuda"), weight,
                                                                  [0, 0])
    assert "shapes" in ext.convt_wgmma_input_grad_unsupported(torch.randn(1, 8, 9, 9, device="cuda"), weight, [0, 0])
    grad_z = torch.randn(1, 8, 9, 9, device="cuda")
    assert "padding below the kernel size" in ext.convt_wgmma_input_grad_unsupported(grad_z, weight.transpose(0, 1),
                                                                                    [3, 3])
    assert "float32 CUDA" in ext.convt_wgmma_input_grad_unsupported(grad_z.cpu(), weight.transpose(0, 1), [0, 0])
    assert "shared memory" in ext.convt_wgmma_input_grad_unsupported(torch.randn(1, 8, 9, 400, device="cuda"),
                                                                    torch.randn(8, 8, 5, 5, device="cuda"), [0, 0])
    with pytest.raises(RuntimeError, match="4 at a time"):
        ext.convt_wgmma_input_grad(torch.randn(1, 6, 9, 9, device="cuda"), weight, [0, 0], 0)


# (N, C_in, C_out, H, W, kernel, padding) of the forward conv whose weight gradient is taken: W and C_out multiples of
# 4 (x's rows and grad_z's channels are copied 4 at a time).
WEIGHT_GRAD_CASES = [
    (2, 64, 64, 20, 20, 3, 0),     # L2-19's layer at a small size
    (1, 24, 12, 17, 16, 1, 0),     # kernel 1: one consumer warpgroup, one accumulator
    (2, 48, 36, 9, 12, 2, 0),      # kernel 2; C_out 36: a partial channel tile
    (2, 96, 68, 7, 8, 3, 1),       # padding 1; 2 x 2 channel tile pairs
    (1, 3, 16, 10, 72, 3, 2),      # C_in 3, padding 2; a second, partial strip of columns
    (3, 64, 64, 33, 132, 3, 0),    # 3 strips a sample, the last partial; many blocks, runs across strips
    (1, 8, 8, 5, 4, 2, 1),         # fewer row steps than multiprocessors
]


def weight_grad64(grad_z, x, weight_shape, pad):
    """dW of conv_transpose2d(x, W, padding) for grad_z, in float64, by autograd."""
    w = torch.zeros(weight_shape, dtype=torch.float64, device=x.device, requires_grad=True)
    out = F.conv_transpose2d(x.double(), w, padding=pad)
    return torch.autograd.grad(out, w, grad_z.double())[0]


@pytest.mark.parametrize("case", WEIGHT_GRAD_CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[3]}x{c[4]}-co{c[2]}-k{c[5]}p{c[6]}")
@pytest.mark.parametrize("layout", ["channels_last", "nchw"])
@pytest.mark.parametrize("variant", sorted(H.WEIGHT_GRAD_VARIANTS))
def test_weight_grad_matches_float64(ext, case, layout, variant):
    """dW of conv_transpose2d(x, w, padding) by the wgmma kernel (x NCHW, grad_z read channels-last: an NCHW one is
    copied so first) against float64, every element within the TF32 bound of its terms: grad_z rounded to nearest
    (2^-11), x truncated by the tensor cores (2^-10) or rounded to nearest (2^-11); bitwise repeatable."""
    n, c_in, c_out, h, w, k, pad = case
    gen = torch.Generator(device="cuda").manual_seed(hash(case) % 2**31)
    x = torch.rand(n, c_in, h, w, device="cuda", generator=gen) * 2 - 1
    weight = torch.empty(c_in, c_out, k, k, device="cuda")
    out_h, out_w = h + k - 1 - 2 * pad, w + k - 1 - 2 * pad
    grad_z = torch.randn(n, c_out, out_h, out_w, device="cuda", generator=gen)
    if layout == "channels_last":
        grad_z = grad_z.contiguous(memory_format=torch.channels_last)
    assert ext.convt_wgmma_weight_grad_unsupported(grad_z, x, weight, [pad, pad]) == ""
    grad_w = ext.convt_wgmma_weight_grad(grad_z, x, weight, [pad, pad], H.WEIGHT_GRAD_VARIANTS[variant])
    exact = weight_grad64(grad_z, x, weight.shape, pad)
    assert grad_w.shape == weight.shape and grad_w.is_contiguous()
    rel = (2.0 ** -11 if variant == "x_rounded" else 2.0 ** -10) + 2.0 ** -11
    bound = 1.25 * rel * weight_grad64(grad_z.abs(), x.abs(), weight.shape, pad) + 1e-6
    err = (grad_w.double() - exact).abs()
    assert (err <= bound).all(), f"max err {err.max():.3g}, worst excess {(err - bound).max():.3g}"
    assert torch.equal(grad_w, ext.convt_wgmma_weight_grad(grad_z, x, weight, [pad, pad],
                                                           H.WEIGHT_GRAD_VARIANTS[variant])), "not deterministic"


def test_weight_grad_declines_what_it_does_not_take(ext):
    x = torch.randn(1, 8, 9, 12, device="cuda")
    weight = torch.empty(8, 8, 3, 3, device="cuda")
    grad_z = torch.randn(1, 8, 11, 14, device="cuda")
    assert ext.convt_wgmma_weight_grad_unsupported(grad_z, x, weight, [0, 0]) == ""
    assert "4 at a time" in ext.convt_wgmma_weight_grad_unsupported(grad_z[..., :13], x[..., :11], weight, [0, 0])
    assert "4 at a time" in ext.convt_wgmma_weight_grad_unsupported(grad_z[:, :6], x, weight[:, :6], [0, 0])
    assert "up to 3 x 3" in ext.convt_wgmma_weight_grad_unsupported(torch.randn(1, 8, 12, 15, device="cuda"), x,
                                                                    torch.empty(8, 8, 4, 4, device="cuda"), [0, 0])
    assert "stride-1 output" in ext.convt_wgmma_weight_grad_unsupported(grad_z, x, weight, [1, 1])
    assert "padding below the kernel size" in ext.convt_wgmma_weight_grad_unsupported(grad_z, x, weight, [3, 3])
    assert "shapes" in ext.convt_wgmma_weight_grad_unsupported(grad_z, x, weight[:4], [0, 0])
    assert "float32 CUDA" in ext.convt_wgmma_weight_grad_unsupported(grad_z.cpu(), x, weight, [0, 0])
    with pytest.raises(RuntimeError, match="up to 3 x 3"):
        ext.convt_wgmma_weight_grad(torch.randn(1, 8, 12, 15, device="cuda"), x, torch.empty(8, 8, 4, 4, device="cuda"),
                                    [0, 0], 0)


def test_conv_backward_takes_kgens_kernels_or_cudnn(ext):
    """convt_wgmma_conv_backward: where kgen's kernels take the call its gradients are theirs, bit for bit; where they
    decline (C_out 6: grad_z's channels are read 4 at a time) cuDNN's, within TF32 of float64; a gradient not asked
    for is None."""
    n, c_in, c_out, h, w, k, pad = WEIGHT_GRAD_CASES[0]
    gen = torch.Generator(device="cuda").manual_seed(31)
    x = torch.rand(n, c_in, h, w, device="cuda", generator=gen) * 2 - 1
    weight = (torch.rand(c_in, c_out, k, k, device="cuda", generator=gen) * 2 - 1) / (c_out * k * k) ** 0.5
    grad_z = torch.randn(n, c_out, h + k - 1 - 2 * pad, w + k - 1 - 2 * pad, device="cuda", generator=gen)
    grad_z = grad_z.contiguous(memory_format=torch.channels_last)
    grad_x, grad_w = ext.convt_wgmma_conv_backward(grad_z, x, weight, [pad, pad], True, True)
    assert torch.equal(grad_x, ext.convt_wgmma_input_grad(grad_z, weight, [pad, pad], 0))
    assert torch.equal(grad_w, ext.convt_wgmma_weight_grad(grad_z, x, weight, [pad, pad], 0))
    assert ext.convt_wgmma_conv_backward(grad_z, x, weight, [pad, pad], False, True)[0] is None
    assert ext.convt_wgmma_conv_backward(grad_z, x, weight, [pad, pad], True, False)[1] is None
    declined_w, declined_z = weight[:, :6].contiguous(), grad_z[:, :6].contiguous(memory_format=torch.channels_last)
    assert ext.convt_wgmma_input_grad_unsupported(declined_z, declined_w, [pad, pad]) != ""
    assert ext.convt_wgmma_weight_grad_unsupported(declined_z, x, declined_w, [pad, pad]) != ""
    grad_x, grad_w = ext.convt_wgmma_conv_backward(declined_z, x, declined_w, [pad, pad], True, True)
    assert grad_x.shape == x.shape and grad_x.is_contiguous() and grad_w.shape == declined_w.shape
    exact_x = F.conv2d(declined_z.double(), declined_w.double(), padding=pad)
    exact_w = weight_grad64(declined_z, x, declined_w.shape, pad)
    for got, exact in ((grad_x, exact_x), (grad_w, exact_w)):
        assert (got.double() - exact).abs().max() <= 2e-3 * exact.abs().max() + 1e-6


def test_declines_what_it_does_not_take(ext):
    x, weight, bias, gamma, beta, pad, groups = make(CASES[0], seed=37)
    assert ext.convt_wgmma_unsupported(x, weight, groups, [1, 1], pad, [0, 0], [1, 1], 1) == ""
    assert "stride 1" in ext.convt_wgmma_unsupported(x, weight, groups, [2, 2], pad, [0, 0], [1, 1], 1)
    assert "stride 1" in ext.convt_wgmma_unsupported(x, weight, groups, [1, 1], pad, [1, 1], [1, 1], 1)
    assert "shapes" in ext.convt_wgmma_unsupported(x, weight, 7, [1, 1], pad, [0, 0], [1, 1], 1)
    assert "shapes" in ext.convt_wgmma_unsupported(x, weight[:3], groups, [1, 1], pad, [0, 0], [1, 1], 1)
    assert "float32 CUDA" in ext.convt_wgmma_unsupported(x.cpu(), weight, groups, [1, 1], pad, [0, 0], [1, 1], 1)
    assert "padding <= kernel size - 1" in ext.convt_wgmma_unsupported(x, weight, groups, [1, 1], [3, 3], [0, 0],
                                                                      [1, 1], 1)


def test_clear_errors(ext):
    x, weight, bias, gamma, beta, pad, groups = make(CASES[0], seed=1)
    with pytest.raises(RuntimeError, match="CUDA"):
        ext.convt_wgmma_forward(x.cpu(), weight, bias, groups, EPS, pad, 0)
    with pytest.raises(RuntimeError, match="weight"):
        ext.convt_wgmma_forward(x, weight[:3], bias, groups, EPS, pad, 0)
    with pytest.raises(RuntimeError, match="divisible"):
        ext.convt_wgmma_forward(x, weight, bias, 7, EPS, pad, 0)
    with pytest.raises(RuntimeError, match="padding <= kernel size - 1"):
        ext.convt_wgmma_forward(x, weight, bias, groups, EPS, [3, 3], 0)


def bench(only=()) -> None:
    """L2-19's shape: kgen's wgmma conv (+ moments), and with GELU + GroupNorm, against cuDNN NCHW and
    channels-last (TF32), one process; `only`: the rows whose names hold one of these words."""
    ext = H.build_extension()
    print("wgmma available:", ext.convt_wgmma_available())
    torch.backends.cudnn.allow_tf32 = True
    x = torch.rand(128, 64, 256, 256, device="cuda")
    weight = torch.randn(64, 64, 3, 3, device="cuda") * 0.04
    bias, gamma, beta = (torch.randn(64, device="cuda") for _ in range(3))
    flop = 2 * 128 * 64 * 258 * 258 * 64 * 9
    x_cl = x.to(memory_format=torch.channels_last)
    z = biased(ext.convt_wgmma_forward(x, weight, bias, 8, EPS, [0, 0], 0)[0], bias)
    ref = F.conv_transpose2d(x, weight, bias)
    print(f"max |kgen - cuDNN TF32| at L2-19's shape: {(z - ref).abs().max():.3g} (|z| up to {ref.abs().max():.3g})")
    del z, ref
    gz_cl = torch.randn(128, 64, 258, 258, device="cuda").contiguous(memory_format=torch.channels_last)
    gx = ext.convt_wgmma_input_grad(gz_cl, weight, [0, 0], 0)
    gx_ref = torch.ops.aten.convolution_backward(gz_cl, x_cl, weight, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1,
                                                 [True, False, False])[0]
    print(f"max |kgen - cuDNN TF32| of the input gradient: {(gx - gx_ref).abs().max():.3g} "
          f"(|grad_x| up to {gx_ref.abs().max():.3g})")
    del gx, gx_ref
    gw = ext.convt_wgmma_weight_grad(gz_cl, x, weight, [0, 0], 0)
    gw_ref = torch.ops.aten.convolution_backward(gz_cl, x_cl, weight, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1,
                                                 [False, True, False])[1]
    print(f"max |kgen - cuDNN TF32| of the weight gradient: {(gw - gw_ref).abs().max():.3g} "
          f"(|grad_w| up to {gw_ref.abs().max():.3g})")
    del gw, gw_ref
    y_two = ext.convt_wgmma_gn_forward(x, weight, bias, gamma, beta, 8, EPS, [0, 0])[0]
    y_one = ext.convt_wgmma_infer(x, weight, bias, gamma, beta, 8, EPS, [0, 0], 0, -1)
    print(f"max |one launch - two kernels| of y at L2-19's shape: {(y_one - y_two).abs().max():.3g} "
          f"(|y| up to {y_two.abs().max():.3g})")
    del y_two, y_one
    def conv(variant):  # a row of the wgmma conv (+ moments) at L2-19's layer, by convt_wgmma_forward's variant number
        return lambda: ext.convt_wgmma_forward(x, weight, bias, 8, EPS, [0, 0], variant)

    rows = {
        "kgen wgmma conv + moments": conv(0),
        "kgen wgmma conv + moments, 3 chunks in flight a producer thread": conv(16),
        "kgen wgmma conv + moments (again)": conv(0),
        "kgen wgmma conv + moments, bulk input": conv(30),
        "  its main loop alone, bulk input (timing only)": conv(31),
        "kgen wgmma conv + moments, bulk input, K-major ring of 2": conv(32),
        "  its main loop alone, bulk input, K-major ring of 2 (timing only)": conv(33),
        "  main loop alone, bulk input, weights once a stage (timing only)": conv(34),
        "  main loop alone, bulk input, no transposing sweep (timing only)": conv(35),
        "kgen wgmma conv + moments of z + b (identity op)": conv(1),
        "  its main loop alone (timing only)": conv(10),
        "  its epilogue alone (timing only)": conv(11),
        "  the conv storing z, no moments (timing only)": conv(19),
        "  its epilogue alone, storing z, no moments (timing only)": conv(20),
        "  moments without storing z (timing only)": conv(21),
        "  without the rounding sweep: x truncated (timing only)": conv(17),
        "  its main loop alone without the rounding sweep (timing only)": conv(18),
        "  main loop's wgmma alone, no loads (timing only)": conv(13),
        "  main loop loading only the weights (timing only)": conv(14),
        "  main loop loading only the input (timing only)": conv(15),
        "kgen one launch (conv + GELU + GroupNorm), the default normalisers": lambda: ext.convt_wgmma_infer(
            x, weight, bias, gamma, beta, 8, EPS, [0, 0], 0, -1),
        "kgen one launch, the conv's input by 4-byte copies": lambda: ext.convt_wgmma_infer(
            x, weight, bias, gamma, beta, 8, EPS, [0, 0], 17, -1),
        **{f"kgen one launch (conv + GELU + GroupNorm), {r} normalisers": (
            lambda r=r: ext.convt_wgmma_infer(x, weight, bias, gamma, beta, 8, EPS, [0, 0], 0, r))
           for r in (22, 23, 24, 25, 26)},
        **{f"  normalise alone on {r} blocks, {what} (timing only)": (
            lambda r=r, v=v: ext.convt_wgmma_infer(x, weight, bias, gamma, beta, 8, EPS, [0, 0], v, r))
           for r, what, v in ((6, "bulk", 14), (20, "bulk", 14), (66, "bulk", 14), (131, "bulk", 14),
                              (6, "48 KB chunks", 15), (20, "48 KB chunks", 15), (6, "register path", 16),
                              (131, "register path", 16))},
        "kgen wgmma conv + GELU + GroupNorm (the harness's plain normalise sweep)": lambda: (
            ext.convt_wgmma_gn_forward(x, weight, bias, gamma, beta, 8, EPS, [0, 0])),
        "kgen wgmma input gradient (grad_z channels-last, truncated -> grad_x NCHW)": lambda: (
            ext.convt_wgmma_input_grad(gz_cl, weight, [0, 0], 0)),
        "  with the L2::256B prefetch hint": lambda: ext.convt_wgmma_input_grad(gz_cl, weight, [0, 0], 1),
        "  frame pitch 258 (scalar epilogue stores)": lambda: ext.convt_wgmma_input_grad(gz_cl, weight, [0, 0], 2),
        "  frame pitch 272 (= W_out mod 16: aligned 64-byte runs)": lambda: ext.convt_wgmma_input_grad(
            gz_cl, weight, [0, 0], 3),
        "  input gradient's main loop alone (timing only)": lambda: ext.convt_wgmma_input_grad(gz_cl, weight, [0, 0],
                                                                                                 10),
        "  input gradient's epilogue alone (timing only)": lambda: ext.convt_wgmma_input_grad(gz_cl, weight, [0, 0],
                                                                                                11),
        "  input gradient, grad_z rounded to nearest (as cuDNN)": lambda: ext.convt_wgmma_input_grad(
            gz_cl, weight, [0, 0], 4),
        "  its main loop alone, grad_z rounded (timing only)": lambda: ext.convt_wgmma_input_grad(
            gz_cl, weight, [0, 0], 12),
        "kgen wgmma weight gradient (x NCHW truncated, grad_z channels-last)": lambda: ext.convt_wgmma_weight_grad(
            gz_cl, x, weight, [0, 0], 0),
        "  x rounded to nearest in shared memory": lambda: ext.convt_wgmma_weight_grad(gz_cl, x, weight, [0, 0], 1),
        "  its wgmma and A loads alone (timing only)": lambda: ext.convt_wgmma_weight_grad(gz_cl, x, weight, [0, 0],
                                                                                             14),
        "cuDNN weight gradient, channels-last (TF32)": lambda: torch.ops.aten.convolution_backward(
            gz_cl, x_cl, weight, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1, [False, True, False]),
        "cuDNN weight gradient, x NCHW and grad_z channels-last (TF32)": lambda: torch.ops.aten.convolution_backward(
            gz_cl, x, weight, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1, [False, True, False]),
        "cuDNN input gradient, channels-last (TF32)": lambda: torch.ops.aten.convolution_backward(
            gz_cl, x_cl, weight, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1, [True, False, False]),
        "cuDNN conv NCHW (TF32)": lambda: F.conv_transpose2d(x, weight, bias),
        "cuDNN conv channels-last (TF32)": lambda: F.conv_transpose2d(x_cl, weight, bias),
    }
    if only:
        rows = {name: run for name, run in rows.items() if any(word in name for word in only)}
    print_conv_rates(rows, flop, 58)


if __name__ == "__main__":
    if "--bench" in sys.argv:
        # --bench [WORD ...]: only the rows whose names hold one of the words
        bench(sys.argv[sys.argv.index("--bench") + 1:])
