"""The resident (one block per unit, on chip) path of a fused GroupNorm region, groupnorm/resident/resident.cuh: outputs,
max/min positions, statistics and EVERY gradient (x, gamma, beta, each functor parameter) of eight
instantiations against a float64 PyTorch re-implementation (torch.autograd.grad), at shapes that exercise
each mapping (Linear-like (N, C) with 1, 16 and C groups, C not a multiple of 4, a tile spanning samples, N = 1,
small 3D/4D/5D with windows leaving remainders, a slice of 4624 values, a sample of 37 k values that needs
more than 48 KB of shared memory); affine and not; bitwise determinism; the fit decision; errors."""
import pytest
import torch
import torch.nn.functional as F

from tests.gpu.region_harness_resident import INSTANCES, extension, prologue_ref, reference, run_kernels

pytestmark = pytest.mark.gpu

# (shape, groups, window, affine)
CASES = [
    ((4, 64), 1, [], True),
    ((4, 64), 16, [], False),
    ((4, 64), 64, [], True),          # one channel per group (D = 1)
    ((3, 30), 5, [], True),           # C not a multiple of 4: scalar copies (D = 6)
    ((3, 30), 1, [], False),
    ((3, 30), 30, [], True),
    ((1, 24), 4, [], True),           # N = 1
    ((16, 64), 16, [], True),         # 4-value slices: one tile spans all 16 samples
    ((8, 8192), 16, [], True),        # Linear-like, 512-value slices
    ((8, 8192), 512, [], False),      # Linear-like, 16-value slices
    ((9, 8192), 8, [], True),         # Linear-like, 1024-value slices: the rows forward's largest (8 packs a lane)
    ((6, 256), 8, [], True),          # 32-value slices: rows forward teams of 4 lanes x 2 packs
    ((5, 2048), 8, [], False),        # 256-value slices: teams of 32 lanes x 2 packs
    ((5, 8192), 4, [], True),         # 2048-value slices: past the rows forward, resident tiles
    ((7, 96), 4, [], True),           # 24-value slices: 6 packs, teams of 2 lanes x 3 packs: resident tiles
    ((3, 384), 12, [], True),         # sample reductions: a sub-block of 2 warps, 16 teams for 12 slices
    ((4, 768), 3, [], False),         # sample reductions: two samples a block, 4 teams for 3 slices
    ((7, 96), 12, [], True),          # 8-value slices: teams of 2 lanes x 1 pack
    ((2, 6, 10), 3, [3], True),       # 3D, window leaves one column
    ((2, 12, 5, 7), 3, [2, 3], True),  # 4D, D = 140
    ((2, 12, 5, 7), 4, [2, 3], False),  # 4D, D = 105 (scalar)
    ((3, 8, 3, 4, 5), 2, [2, 2, 2], True),  # 5D
    ((3, 8, 3, 4, 5), 8, [1, 3, 2], False),
    ((2, 128, 17, 17), 8, [2, 2], True),  # 4624-value slices (block teams); samples of 37 k values (> 48 KB)
    ((2, 4, 48, 48), 4, [2, 2], True),   # one 2304-value channel a slice: the backward's passes a block a channel
    ((2, 6, 33, 40), 3, [3, 4], False),  # two 1320-value channels a slice, windows: a block a channel
]


def _case_id(case):
    shape, groups, window, affine = case
    dims = "x".join(map(str, shape))
    return f"{dims}-G{groups}-w{''.join(map(str, window)) or '0'}-{'affine' if affine else 'plain'}"


def make_inputs(name, shape, groups, window, affine, seed, scalar_epilogue_param=False):
    pro, epi, kind, op, _ = INSTANCES[name]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    c = shape[1]
    x = 0.4 * torch.randn(shape, device="cuda", generator=gen) + 0.05
    gamma = beta = None
    if affine:
        gamma = 1 + 0.5 * torch.randn(c, device="cuda", generator=gen)
        beta = 0.5 * torch.randn(c, device="cuda", generator=gen)
    pp = [0.1 * torch.randn(c, device="cuda", generator=gen)] if pro != "kgen::NoPrologue" else []
    if pp:
        # The prologue's hardtanh has a kink at +-1 whose gradient is 0 on it: a value within a float32 rounding
        # of it takes one side in the kernel and the other in the float64 reference (33 M values give ~0.4 such;
        # on the H100, dx 0 against 2.92 at one element). Values that close are moved off the kink.
        near_kink = ((x + pp[0].view((1, -1) + (1,) * (len(shape) - 2))).abs() - 1).abs() < 1e-4
        x = torch.where(near_kink, x + 1e-3, x)
    ep = []
    if epi in ("SwishSwishScale", "ScaleResidualX"):
        n = 1 if scalar_epilogue_param else c
        ep = [1 + 0.5 * torch.randn(n, device="cuda", generator=gen)]
    dout = torch.randn(_out_shape(kind, shape, window), device="cuda", generator=gen)
    return x, gamma, beta, pp, ep, dout


def _out_shape(kind, shape, window):
    n, c, spatial = shape[0], shape[1], list(shape[2:])
    return {
        "kNone": list(shape),
        "kChannel": [n] + spatial,
        "kPlane": [n, c],
        "kSample": [n],
        "kWindow": [n, c] + [s // k for s, k in zip(spatial, window)],
    }[kind]


def assert_close(got, want, what, tol=1e-4):
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol * scale, msg=lambda m: f"{what}: {m}")


def check(name, case, seed=0, scalar_epilogue_param=False):
    shape, groups, window, affine = case
    x, gamma, beta, pp, ep, dout = make_inputs(name, shape, groups, window, affine, seed, scalar_epilogue_param)
    out, aux, mean, rstd, grads, _ = run_kernels(name, x, gamma, beta, pp, ep, groups, 1e-5, window, dout)
    out_ref, aux_ref, grads_ref = reference(name, x, gamma, beta, pp, ep, groups, 1e-5, window, dout)
    assert out.dtype == torch.float32 and out.is_contiguous()
    assert_close(out, out_ref, "out")
    if aux_ref is not None:
        assert aux is not None and aux.dtype == torch.int32
        if not torch.equal(aux.long(), aux_ref):
            # Two values within float32 rounding of each other (ties at a clamp, 16 M values): the kernel may pick
            # either. Its pick must be an extreme of the float64 values up to that rounding, and the gradients
            # are then compared with the reference's taken at the kernel's positions.
            at_kernel, _, _ = reference(name, x, gamma, beta, pp, ep, groups, 1e-5, window, dout, positions=aux)
            differ = aux.long() != aux_ref
            assert differ.sum() <= max(2, differ.numel() // 1000), f"{int(differ.sum())} max/min positions differ"
            assert_close(at_kernel[differ], out_ref[differ], "out at the kernel's positions", tol=2e-6)
            out_ref, aux_ref, grads_ref = reference(name, x, gamma, beta, pp, ep, groups, 1e-5, window, dout,
                                                    positions=aux)
    # statistics: (hi, lo) mean pairs and rstd of z
    pro = INSTANCES[name][0]
    with torch.no_grad():
        z = prologue_ref(pro, x.double(), [p.double() for p in pp]).reshape(shape[0], groups, -1)
        assert_close(mean[..., 0].double() + mean[..., 1].double(), z.mean(-1), "mean", tol=1e-6)
        assert_close(rstd, 1 / torch.sqrt(z.var(-1, unbiased=False) + 1e-5), "rstd", tol=2e-5)
    names = ["dx"] + (["dgamma", "dbeta"] if affine else []) + [f"dprologue{k}" for k in range(len(pp))] + \
        [f"depilogue{k}" for k in range(len(ep))]
    assert len(grads) == len(grads_ref) == len(names)
    for g, r, what in zip(grads, grads_ref, names):
        assert_close(g, r, what)


@pytest.fixture(scope="module")
def ext():
    return extension()


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("name", list(INSTANCES))
def test_matches_float64(ext, name, case):
    check(name, case)


# More tiles than the persistent forward grid has blocks (2048 and 1024 tiles): every block takes several, the
# next one's copy in flight in the other shared-memory buffer. (2048, 4096) with 16 groups is the rows forward's
# (256-value slices); 2048-value slices stay on the tiles.
MANY_TILES = [((2048, 4096), 16, [], True), ((2048, 8192), 4, [], True), ((8192, 32, 4, 4), 8, [2, 2], False)]


@pytest.mark.parametrize("case", MANY_TILES, ids=_case_id)
@pytest.mark.parametrize("name", ["none_plain", "none_fused", "channel_lse", "channel_min", "plane_mean",
                                  "window_max"])
def test_many_tiles_per_block(ext, name, case):
    check(name, case, seed=17)


# Linear outputs whose per-sample parameter rows would pass 256 MB and whose slices are past the rows backward
# (2048 values): the backward's slab mode, each block summing its samples' parameter gradients in shared memory.
SLABS = [((16384, 2048), 1, [], True), ((4096, 8192), 4, [], True)]


@pytest.mark.parametrize("case", SLABS, ids=_case_id)
@pytest.mark.parametrize("name", ["none_fused", "none_plain", "plane_mean"])
def test_backward_in_slabs(ext, name, case):
    check(name, case, seed=23)


def test_rows_forward_decision(ext):
    """Linear outputs with short slices take the rows forward (team width L, packs per lane a power of two <= 8);
    planes, slices not a multiple of 4, and long slices keep the resident tiles."""
    lin = lambda c: torch.empty(2, c, device="cuda")
    assert ext.rows_lanes(lin(4096), 64) == 8       # 64-value slices: 8 lanes x 2 packs (L2-37)
    assert ext.rows_lanes(lin(8192), 8) == 32       # 1024 values: 32 x 8
    assert ext.rows_lanes(lin(8192), 16) == 32      # 512 values: 32 x 4
    assert ext.rows_lanes(lin(8192), 64) == 16      # 128 values: 16 x 2
    assert ext.rows_lanes(lin(8192), 256) == 4      # 32 values: 4 x 2
    assert ext.rows_lanes(lin(512), 64) == 1        # 8 values: 1 lane x 2 packs
    assert ext.rows_lanes(lin(64), 16) == 1         # 4 values: 1 lane x 1 pack
    assert ext.rows_lanes(lin(8192), 4) == 0        # 2048 values: 16 packs a lane
    assert ext.rows_lanes(lin(96), 4) == 0          # 6 packs: 2 lanes x 3
    assert ext.rows_lanes(lin(30), 5) == 0          # 6 values
    assert ext.rows_lanes(torch.empty(2, 64, 3, 3, device="cuda"), 8) == 0  # planes


def test_rows_reduce_decision(ext):
    """Reductions over each sample of a Linear output take the rows forward where a sample fills a warp's lanes
    (G x L >= 32), and the resident tiles below that."""
    lin = lambda c: torch.empty(2, c, device="cuda")
    assert ext.rows_reduce_applies(lin(8192), 512)      # L2-75: 512 slices x 2 lanes
    assert ext.rows_reduce_applies(lin(256), 8)         # 8 slices x 4 lanes: one warp a sample
    assert ext.rows_reduce_applies(lin(768), 3)         # 3 slices x 32 lanes
    assert not ext.rows_reduce_applies(lin(96), 12)     # 12 slices x 1 lane
    assert not ext.rows_reduce_applies(lin(64), 16)     # 16 slices x 1 lane
    assert not ext.rows_reduce_applies(lin(8192), 4)    # past the rows forward
    assert not ext.rows_reduce_applies(torch.empty(2, 64, 3, 3, device="cuda"), 8)  # planes


def test_slab_decision(ext):
    """Slabs where the per-sample rows would pass 256 MB, sized to 72 KB blocks; not below, nor with planes."""
    assert ext.slab_parts_kNone(torch.empty(32768, 1024, device="cuda"), 16, 4) == 1
    assert ext.slab_parts_kNone(torch.empty(8192, 4096, device="cuda"), 64, 4) == 2
    assert ext.slab_parts_kNone(torch.empty(8192, 4096, device="cuda"), 64, 2) == 2
    assert ext.slab_parts_kNone(torch.empty(1024, 8192, device="cuda"), 16, 4) == 0   # 134 MB of rows
    assert ext.slab_parts_kPlane(torch.empty(8192, 64, 4, 4, device="cuda"), 8, 4) == 0  # planes


# The rows backward (32- and 64-value slices, 8 and 16 lanes of one pack; 256-, 512- and 1024-value slices,
# teams of 2, 4 and 8 warps that meet in shared memory): thousands of samples, so each team takes many in turn
# and sums its channels' parameter gradients across them in registers.
ROWS_BACKWARD = [((20000, 256), 8, [], True), ((4096, 1024), 16, [], False), ((3000, 2048), 8, [], True),
                 ((2500, 8192), 16, [], True), ((1500, 8192), 8, [], False)]


@pytest.mark.parametrize("case", ROWS_BACKWARD, ids=_case_id)
@pytest.mark.parametrize("name", ["none_fused", "none_plain", "channel_min", "channel_lse", "sample_mean"])
def test_rows_backward_many_samples_a_team(ext, name, case):
    check(name, case, seed=31)


def test_rows_backward_decision(ext):
    """The rows backward's team: a pack a lane, up to a block (256 lanes here); wherever the rows forward
    does not apply, none (the resident tiles)."""
    def lin(c):
        return torch.empty(2, c, device="cuda")
    assert ext.rows_backward_lanes(lin(4096), 64) == 16     # L2-37: 64 values, 16 lanes x 1 pack
    assert ext.rows_backward_lanes(lin(8192), 512) == 4     # L2-75: 16 values, 4 x 1
    assert ext.rows_backward_lanes(lin(2048), 8) == 64      # 256 values: 2 warps x 1 pack
    assert ext.rows_backward_lanes(lin(8192), 16) == 128    # L2-30: 512 values, 4 warps
    assert ext.rows_backward_lanes(lin(8192), 8) == 256     # 1024 values: the whole block
    assert ext.rows_backward_lanes(lin(8192), 4) == 0       # 2048 values: past the rows forward
    assert ext.rows_backward_lanes(lin(96), 4) == 0         # 6 packs
    assert ext.rows_backward_lanes(torch.empty(2, 64, 3, 3, device="cuda"), 8) == 0  # planes


@pytest.mark.parametrize("shape, groups", [((8192, 4096), 64), ((4096, 8192), 16), ((4096, 8192), 4)],
                         ids=["rows", "wide-rows", "slabs"])
def test_backward_with_parameter_rows_is_bitwise_deterministic(ext, shape, groups):
    x, gamma, beta, pp, ep, dout = make_inputs("none_fused", shape, groups, [], True, 9, False)
    first = run_kernels("none_fused", x, gamma, beta, pp, ep, groups, 1e-5, [], dout)
    second = run_kernels("none_fused", x, gamma, beta, pp, ep, groups, 1e-5, [], dout)
    for a, b in zip(first[5], second[5]):
        assert torch.equal(a, b)


@pytest.mark.parametrize("name", ["none_fused", "plane_mean"])
def test_results_do_not_depend_on_the_tiling(ext, name):
    """The forward sizes its tiles from the batch and the GPU (larger tiles where few blocks fit on an SM), and
    a tile never splits a slice: the first samples of a large batch come out bitwise as they do alone."""
    torch.manual_seed(5)
    x = torch.randn(8192, 4096, device="cuda")
    gamma, beta = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    pp = [torch.randn(4096, device="cuda")] if INSTANCES[name][0] != "kgen::NoPrologue" else []
    ep = [torch.randn(4096, device="cuda")]
    fwd = getattr(ext, f"{name}_forward")
    big = fwd(x, gamma, beta, pp, ep, 64, 1e-5, [])
    small = fwd(x[:3].contiguous(), gamma, beta, pp, ep, 64, 1e-5, [])
    for k in range(3):   # out, mean, rstd
        assert torch.equal(big[k][:3], small[k]), k


@pytest.mark.parametrize("name", ["channel_min", "channel_lse", "sample_mean"])
def test_rows_reduce_is_reproducible_and_independent_of_the_batch(ext, name):
    """The rows forward's sample reductions merge a sample's partials in a fixed order whatever the grid: two
    calls agree bitwise, and the first samples of a batch of 2048 (several samples a sub-block) come out as
    they do alone."""
    x, gamma, beta, pp, ep, _ = make_inputs(name, (2048, 4096), 16, [], True, seed=29)
    fwd = getattr(ext, f"{name}_forward")
    big = fwd(x, gamma, beta, pp, ep, 16, 1e-5, [])
    again = fwd(x, gamma, beta, pp, ep, 16, 1e-5, [])
    small = fwd(x[:3].contiguous(), gamma, beta, pp, ep, 16, 1e-5, [])
    for k in range(4 if INSTANCES[name][3] == "kMin" else 3):   # out, mean, rstd (, aux)
        assert torch.equal(big[k], again[k]), k
        assert torch.equal(big[k][:3], small[k]), k


def test_scalar_parameter_rows_sum(ext):
    """A 1-element (stride-0) epilogue parameter: its per-channel gradient rows sum to the reference's."""
    check("sample_mean", ((3, 8, 3, 4, 5), 2, [], True), seed=3, scalar_epilogue_param=True)
    check("plane_mean", ((4, 64), 16, [], True), seed=4, scalar_epilogue_param=True)


def test_large_offset_keeps_precision(ext):
    """x = 1000 + randn: the (hi, lo) mean and the exact two-pass variance lose nothing."""
    torch.manual_seed(5)
    x = 1000 + torch.randn(4, 256, 3, 3, device="cuda")
    gamma, beta = torch.randn(256, device="cuda"), torch.randn(256, device="cuda")
    out = ext.none_plain_forward(x, gamma, beta, [], [], 16, 1e-5, [])[0]
    want = F.group_norm(x.double(), 16, gamma.double(), beta.double(), 1e-5)
    assert_close(out, want, "out")


def test_specialised_groups_match_generic(ext):
    """none_plain is built with kGroups = 16: G = 16 takes the specialised kernels, G = 8 the generic ones."""
    torch.manual_seed(6)
    for groups in (16, 8):
        x = torch.randn(5, 128, 6, 6, device="cuda")
        gamma, beta = torch.randn(128, device="cuda"), torch.randn(128, device="cuda")
        out, mean, rstd, _ = ext.none_plain_forward(x, gamma, beta, [], [], groups, 1e-5, [])
        assert_close(out, F.group_norm(x.double(), groups, gamma.double(), beta.double(), 1e-5), f"G={groups}")


@pytest.mark.parametrize("name", list(INSTANCES))
def test_backward_is_bitwise_deterministic(ext, name):
    shape, groups, window = (6, 64, 9, 9), 4, [2, 2]
    x, gamma, beta, pp, ep, dout = make_inputs(name, shape, groups, window, True, seed=11)
    first = run_kernels(name, x, gamma, beta, pp, ep, groups, 1e-5, window, dout)
    second = run_kernels(name, x, gamma, beta, pp, ep, groups, 1e-5, window, dout)
    for a, b in zip(first[5], second[5]):
        if a is not None:
            assert torch.equal(a, b)
    assert torch.equal(first[0], second[0])


@pytest.mark.parametrize("name", ["none_fused", "sample_mean", "window_max"])
def test_unaligned_pointers(ext, name):
    """x, gamma and beta at odd offsets from 16-byte boundaries: scalar copies and scalar affine loads."""
    shape, groups, window = (5, 256), 16, []
    x, gamma, beta, pp, ep, dout = make_inputs(name, shape, groups, window, True, seed=21)
    shifted = lambda t: torch.cat([torch.zeros(1, device="cuda"), t.flatten()])[1:].view(t.shape)
    x, gamma, beta = shifted(x), shifted(gamma), shifted(beta)
    assert x.data_ptr() % 16 and gamma.data_ptr() % 16
    out, aux, mean, rstd, grads, _ = run_kernels(name, x, gamma, beta, pp, ep, groups, 1e-5, window, dout)
    out_ref, aux_ref, grads_ref = reference(name, x, gamma, beta, pp, ep, groups, 1e-5, window, dout)
    assert_close(out, out_ref, "out")
    for g, r in zip(grads, grads_ref):
        assert_close(g, r, "grad")
    # aligned x, unaligned gamma / beta: the flat path's scalar affine loads
    x = x.contiguous().clone()
    out, aux, mean, rstd, grads, _ = run_kernels(name, x, gamma, beta, pp, ep, groups, 1e-5, window, dout)
    assert_close(out, out_ref, "out (aligned x)")
    for g, r in zip(grads, grads_ref):
        assert_close(g, r, "grad (aligned x)")


def test_fits_decision(ext):
    big = torch.empty(2, 64, 256, 256, device="cuda")
    for kind in ("kNone", "kChannel", "kPlane", "kSample", "kWindow"):
        assert not getattr(ext, f"fits_{kind}")(big, 1), kind  # a 4 M-value slice
    conv = torch.empty(512, 128, 17, 17, device="cuda")
    linear = torch.empty(1024, 8192, device="cuda")
    for kind in ("kNone", "kChannel", "kPlane", "kSample", "kWindow"):
        assert getattr(ext, f"fits_{kind}")(conv, 8), kind
        for groups in (1, 16, 512):
            assert getattr(ext, f"fits_{kind}")(linear, groups), (kind, groups)
    assert ext.fits_kNone(torch.empty(8, 4, 64, 64, device="cuda"), 4)  # 4 k-value slices
    assert not ext.fits_kSample(torch.empty(8, 64, 64, 64, device="cuda"), 64)  # 262 k-value samples
    with pytest.raises(RuntimeError, match="does not fit"):
        ext.none_plain_forward(big, None, None, [], [], 1, 1e-5, [])


def test_pays_decision(ext):
    """The regions take the resident path only where it also pays: a unit so large that one block fills an SM
    (L2-27's 43.7 k-value slices) goes to the two-pass kernels even where it fits; small units stay."""
    conv3d = torch.empty(2, 16, 13, 29, 29, device="cuda")
    for kind in ("kNone", "kPlane", "kWindow"):
        assert not getattr(ext, f"pays_{kind}")(conv3d, 4), kind
    conv = torch.empty(512, 128, 17, 17, device="cuda")
    linear = torch.empty(32768, 4096, device="cuda")
    for kind in ("kNone", "kChannel", "kPlane", "kSample", "kWindow"):
        assert getattr(ext, f"pays_{kind}")(linear, 64), kind  # 64-value slices, 4 k-value samples
        if kind not in ("kChannel", "kSample"):  # there a unit is a 37 k-value sample: one block per SM
            assert getattr(ext, f"pays_{kind}")(conv, 8), kind
    assert not ext.pays_kChannel(conv, 8)
    assert ext.pays_kNone(torch.empty(8, 4, 64, 64, device="cuda"), 4)  # 4 k-value slices, double-buffered
    assert not ext.pays_kNone(torch.empty(2, 64, 256, 256, device="cuda"), 1)  # does not even fit


def test_errors_and_edge_inputs(ext):
    x = torch.randn(2, 12, 4, 4, device="cuda")
    with pytest.raises(RuntimeError, match="not divisible"):
        ext.none_plain_forward(x, None, None, [], [], 5, 1e-5, [])
    with pytest.raises(RuntimeError, match="CUDA"):
        ext.none_plain_forward(x.cpu(), None, None, [], [], 4, 1e-5, [])
    with pytest.raises(RuntimeError, match="float32"):
        ext.none_plain_forward(x.double(), None, None, [], [], 4, 1e-5, [])
    with pytest.raises(RuntimeError, match="window"):
        ext.window_max_forward(x, None, None, [torch.zeros(12, device="cuda")], [], 4, 1e-5, [2])
    with pytest.raises(RuntimeError, match="prologue takes"):
        ext.window_max_forward(x, None, None, [], [], 4, 1e-5, [2, 2])
    empty = torch.empty(0, 16, device="cuda")
    out, mean, rstd, _ = ext.none_plain_forward(empty, None, None, [], [], 4, 1e-5, [])
    assert out.shape == (0, 16) and mean.shape == (0, 4, 2)
    dx = ext.none_plain_backward(empty, empty, None, None, [], [], mean, rstd, None, None, 4, [])[0]
    assert dx.shape == (0, 16)
    # non-contiguous input: taken contiguous
    xt = torch.randn(64, 6, device="cuda").t()
    out = ext.none_plain_forward(xt, None, None, [], [], 2, 1e-5, [])[0]
    assert_close(out, F.group_norm(xt.double(), 2, None, None, 1e-5), "non-contiguous")
