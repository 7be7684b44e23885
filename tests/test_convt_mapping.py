"""The index math of kgen's tensor-core ConvTranspose2d (kgen/templates/cuda/convt_igemm.cuh), replayed on
the CPU in float64: the implicit GEMM's gather (Gather::at_tap: which input element each (pixel, tap) reads,
with stride, padding and output padding), the tap-major K order with its channel chunks, and the epilogue's
walk over the GroupNorm groups a (pixel tile, channel tile) touches, whose partial moments are then merged.
A mistake in any of them shows here against F.conv_transpose2d and float64 group statistics; what it cannot
show (fragment layouts, the pipeline, races) the GPU tests in tests/gpu/test_convt_igemm.py do."""
import math

import pytest
import torch
import torch.nn.functional as F

BM, BN, BK = 128, 64, 32   # the tile the harness and the L2-19 configuration use


def out_size(n, k, s, p, op):
    return (n - 1) * s - 2 * p + k + op


def gather_tap(x, kh, kw, stride, pad, out_hw):
    """A for one tap: (N, Ho*Wo, C_in), each pixel's input value or 0, as Gather::at_tap decides."""
    n, c, h, w = x.shape
    ho, wo = out_hw
    oh = torch.arange(ho).reshape(-1, 1).expand(ho, wo).reshape(-1)
    ow = torch.arange(wo).reshape(1, -1).expand(ho, wo).reshape(-1)
    th, tw = oh + pad[0] - kh, ow + pad[1] - kw
    valid = (th >= 0) & (tw >= 0) & (th % stride[0] == 0) & (tw % stride[1] == 0)
    ih, iw = torch.div(th, stride[0], rounding_mode="floor"), torch.div(tw, stride[1], rounding_mode="floor")
    valid &= (ih < h) & (iw < w)
    offset = torch.where(valid, ih * w + iw, torch.zeros_like(ih))
    a = x.reshape(n, c, h * w)[:, :, offset].transpose(1, 2)   # (N, M, C_in)
    return a * valid.reshape(1, -1, 1)


def implicit_gemm(x, weight, bias, stride, pad, out_pad):
    n, c_in, h, w = x.shape
    c_out, kh_n, kw_n = weight.shape[1:]
    ho, wo = out_size(h, kh_n, stride[0], pad[0], out_pad[0]), out_size(w, kw_n, stride[1], pad[1], out_pad[1])
    wt = weight.permute(2, 3, 0, 1).contiguous()   # (kH, kW, C_in, C_out), as convt_moments lays it out
    z = torch.zeros(n, ho * wo, c_out, dtype=x.dtype)
    chunks = math.ceil(c_in / BK)
    for tap in range(kh_n * kw_n):                 # K: tap-major, then chunks of BK input channels
        kh, kw = divmod(tap, kw_n)
        a = gather_tap(x, kh, kw, stride, pad, (ho, wo))
        for chunk in range(chunks):
            ci = slice(chunk * BK, min(c_in, (chunk + 1) * BK))
            z += a[:, :, ci] @ wt[kh, kw, ci, :]
    return (z + bias).transpose(1, 2).reshape(n, c_out, ho, wo)


def tile_moments(z, groups, op):
    """The epilogue: per (sample, group) the partials of every (pixel tile, channel tile), as the kernel
    writes them (count 0 where a channel tile does not touch the group), merged as convt_moments_finalize."""
    n, c_out = z.shape[:2]
    u = op(z).reshape(n, c_out, -1)
    plane = u.shape[2]
    cpg = c_out // groups
    tiles_m, tiles_n = math.ceil(plane / BM), math.ceil(c_out / BN)
    partial = torch.zeros(n, groups, tiles_m * tiles_n, 3, dtype=torch.float64)
    for tm in range(tiles_m):
        m0, valid_m = tm * BM, min(BM, plane - tm * BM)
        for tn in range(tiles_n):
            co0 = tn * BN
            c_end = min(BN, c_out - co0)
            c_begin = 0
            while c_begin < c_end:                      # the kernel's walk over the groups of the tile
                grp = (co0 + c_begin) // cpg
                c_stop = min(c_end, (grp + 1) * cpg - co0)
                v = u[:, co0 + c_begin:co0 + c_stop, m0:m0 + valid_m].reshape(n, -1)
                partial[:, grp, tm * tiles_n + tn] = torch.stack(
                    [torch.full((n,), float(v.shape[1]), dtype=torch.float64), v.mean(1),
                     ((v - v.mean(1, keepdim=True)) ** 2).sum(1)], 1)
                c_begin = c_stop
    count, mean, m2 = torch.zeros(n, groups, dtype=torch.float64), torch.zeros(n, groups, dtype=torch.float64), \
        torch.zeros(n, groups, dtype=torch.float64)
    for i in range(partial.shape[2]):               # Chan's merge, skipping empty partials
        nb, mb, qb = partial[:, :, i].unbind(-1)
        total = count + nb
        delta = mb - mean
        safe = torch.where(total > 0, total, torch.ones_like(total))
        mean = torch.where(total > 0, mean + delta * nb / safe, mean)
        m2 = torch.where(total > 0, m2 + qb + delta * delta * count * nb / safe, m2)
        count = total
    return count, mean, m2 / count


CASES = [   # (N, C_in, C_out, H, W, k, stride, pad, output_pad, groups)
    (2, 8, 16, 9, 7, 3, (1, 1), (0, 0), (0, 0), 4),      # L2-19's geometry, small
    (1, 3, 24, 10, 11, (1, 1), (1, 1), (0, 0), (0, 0), 6),   # kernel 1, 3 input channels
    (2, 5, 48, 6, 6, 2, (2, 2), (0, 0), (0, 0), 8),      # kernel 2, stride 2
    (1, 17, 96, 5, 9, 4, (3, 3), (1, 1), (2, 0), 12),    # kernel 4, stride 3, padding, output padding
    (2, 20, 70, 7, 5, 5, (2, 3), (2, 1), (1, 2), 7),     # kernel 5, uneven strides; C_out = 70: two channel tiles
    (1, 4, 130, 3, 4, (3, 2), (1, 2), (0, 1), (0, 1), 2),  # groups of 65 channels straddle the channel tiles
    (1, 33, 32, 16, 16, 3, (1, 1), (1, 1), (0, 0), 32),  # 2 channel chunks (C_in = 33), groups == channels
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:5])) + f"-k{c[5]}-s{c[6]}")
def test_implicit_gemm_and_tile_moments_match_float64(case):
    n, c_in, c_out, h, w, k, stride, pad, out_pad, groups = case
    kernel = (k, k) if isinstance(k, int) else k
    gen = torch.Generator().manual_seed(sum(map(hash, map(str, case))) % 2**31)
    x = torch.rand(n, c_in, h, w, generator=gen, dtype=torch.float64)
    weight = torch.randn(c_in, c_out, *kernel, generator=gen, dtype=torch.float64) * 0.2
    bias = torch.randn(c_out, generator=gen, dtype=torch.float64)
    z = implicit_gemm(x, weight, bias, stride, pad, out_pad)
    ref = F.conv_transpose2d(x, weight, bias, stride=stride, padding=pad, output_padding=out_pad)
    assert z.shape == ref.shape
    assert torch.allclose(z, ref, atol=1e-12, rtol=1e-12)
    count, mean, var = tile_moments(z, groups, F.gelu)
    u = F.gelu(ref).reshape(n, groups, -1)
    assert torch.equal(count, torch.full_like(count, float(u.shape[2])))
    assert torch.allclose(mean, u.mean(-1), atol=1e-12, rtol=1e-12)
    assert torch.allclose(var, u.var(-1, unbiased=False), atol=1e-12, rtol=1e-12)
