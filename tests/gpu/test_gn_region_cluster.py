"""The cluster backward of a fused GroupNorm region (kgen/templates/cuda/groupnorm/cluster/cluster.cuh): each slice held
in the shared memory of a thread-block cluster, x read once. Built into the two-pass test extension
(tests/gpu/region_harness_twopass.py, entry `region_backward_cluster`, an error where the cluster backward
declines), checked like the two-pass kernels: forward by the two-pass kernels, then every gradient against
float64 through torch.autograd.grad (test_gn_region_twopass.check_region).

It takes the reductions over a plane or a sample (kPlane, kSample). Shapes are chosen for the cluster size
cluster_plan takes (K blocks of at most 64 KB of x): K = 2 to 16, ranges that end inside a plane, odd planes
(scalar path) with and without 16-byte copies in, 3D planes. Also: bitwise determinism, and what the cluster
backward declines (slices past 16 blocks, planes under 512 values, the other reductions)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.gpu import region_harness_twopass as H  # noqa: E402
from tests.gpu.test_gn_region_twopass import EPS, check_region, index_of, make_inputs  # noqa: E402

pytestmark = pytest.mark.gpu

# (shape, groups, affine, scalar prologue params); K
PLAIN_CASES = [
    ((2, 8, 40, 40), 2, True, False),      # D = 6400: K 2, 16-byte, ranges end inside a plane
    ((2, 6, 23, 29), 3, False, True),      # plane 667 (odd), D % 4 == 2: scalar copies in and out
    ((2, 8, 23, 29), 2, True, False),      # plane 667 (odd), D % 4 == 0: 16-byte copies in, scalar work
    ((1, 8, 80, 80), 2, True, False),      # D = 25600: K 2
    ((1, 8, 160, 160), 2, True, False),    # D = 102400: K 8
    ((2, 4, 9, 10, 12), 2, True, False),   # 3D, plane 1080
    ((3, 10, 24, 32), 5, True, False),     # C % 4 != 0, N = 3
]
LARGE = ((1, 4, 230, 230), 1, True, False)  # D = 211600: K 16
TAKEN = [v for v in H.VARIANTS if v.kind in ("plane", "sample")]


def cases():
    for v in TAKEN:
        for shape, groups, affine, scalar in PLAIN_CASES + [LARGE]:
            yield pytest.param(v, shape, groups, affine, scalar, (),
                               id=f"{v.name}-{'x'.join(map(str, shape))}-g{groups}{'' if affine else '-noaffine'}")


@pytest.fixture(scope="module")
def ext():
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("thread-block clusters need sm_90 or newer")
    return H.build_extension()


@pytest.mark.parametrize("variant, shape, groups, affine, scalar_pro, window", list(cases()))
def test_cluster_backward_matches_float64(ext, variant, shape, groups, affine, scalar_pro, window):
    seed = sum(shape) * 5 + groups + index_of(variant) * 1000 + len(window)
    check_region(ext, variant, shape, groups, affine, scalar_pro, window, seed, backward=ext.region_backward_cluster)


@pytest.mark.parametrize("name", ["plane_mean", "plane_max", "sample_mean", "sample_lse"])
def test_cluster_backward_bitwise_deterministic_and_near_two_pass(ext, name):
    variant = H.BY_NAME[name]
    shape, groups = (2, 8, 80, 80), 2
    window = []
    x, gamma, beta, pro, epi = make_inputs(variant, shape, True, False, 17)
    i = index_of(variant)
    out, mean, rstd, aux = ext.region_forward(i, x, gamma, beta, pro, epi, groups, EPS, window)
    dout = torch.randn_like(out)
    args = (i, dout, x, gamma, beta, pro, epi, mean, rstd, out, aux, groups, window)
    first, second = ext.region_backward_cluster(*args), ext.region_backward_cluster(*args)
    for a, b in zip(first, second):
        assert torch.equal(a, b)
    for got, want in zip(first, ext.region_backward(*args)):  # the two-pass sweeps, same float32 math
        scale = want.abs().max().clamp_min(1.0).item() if want.numel() else 1.0
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("name, shape, groups, window", [
    ("plane_mean", (1, 2, 512, 520), 1, []),    # D = 532480: more than 16 blocks of 64 KB
    ("sample_lse", (2, 8, 20, 20), 2, []),      # plane 400 < 512
    ("none_sig_hs", (1, 8, 80, 80), 2, []),     # the other reductions: the two-pass sweeps
    ("window_max", (1, 8, 80, 80), 2, [4, 4]),
    ("channel_lse", (1, 8, 80, 80), 2, []),
])
def test_cluster_backward_declines(ext, name, shape, groups, window):
    variant = H.BY_NAME[name]
    x, gamma, beta, pro, epi = make_inputs(variant, shape, True, False, 3)
    i = index_of(variant)
    out, mean, rstd, aux = ext.region_forward(i, x, gamma, beta, pro, epi, groups, EPS, window)
    with pytest.raises(RuntimeError, match="declined"):
        ext.region_backward_cluster(i, torch.randn_like(out), x, gamma, beta, pro, epi, mean, rstd, out, aux, groups,
                                    window)
