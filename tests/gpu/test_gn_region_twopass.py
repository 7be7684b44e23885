"""Two-pass fused GroupNorm region kernels (kgen/templates/cuda/groupnorm/twopass/twopass.cuh), built straight from the
.cuh building blocks into one test harness (every instantiation below, in a few extensions built side by side;
tests/gpu/region_harness_twopass.py),
against a PyTorch re-implementation of the same region in float64: the output, the saved statistics, the
argmax/argmin positions, and every gradient (x, GroupNorm weight and bias, each prologue and epilogue
parameter) through torch.autograd.grad.

Instantiations: kNone (sigmoid-affine prologue, hardswish*w + z epilogue; and plain GroupNorm with a
specialised kGroups), kPlane mean/max, kSample mean/log-sum-exp, kWindow max/mean/min (1D, 2D, 3D windows, sizes
that the window does not divide; max reading only the windows' extremes in its first backward pass, min with an
epilogue that does not allow that; rows longer than a block, many short rows, 1D rows of 10000 windows), kChannel
log-sum-exp/min/sum. Shapes: odd planes (3x5x7, 13x29, 7), C % 4 != 0, C > 128, groups 1 and == C, N = 1, no
spatial dims (plane 1), a plane split over two blocks, 16-byte packs that span rows of a window reduction; affine
and not; per-channel and scalar (stride 0) parameters. Every float64 case runs both backward paths: the pipelined
kernel (groupnorm/twopass/backward_pipeline.cuh, forced also where the plan would not take it) and the two sweep kernels
(for windows, those of groupnorm/twopass/window_backward.cuh); the pipelined one also at sizes that run all its ticket
phases, at two lags, bitwise equal. Also: first-extreme positions on exact ties, bitwise determinism, a large
common offset, empty inputs, clear errors.

`python tests/gpu/test_gn_region_twopass.py --bench` times the kernels at (128, 32, 254, 254)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.gpu import region_harness_twopass as H  # noqa: E402
from tests.gpu.timing import median_ms  # noqa: E402

pytestmark = pytest.mark.gpu
EPS = 1e-5
TOL = 1e-4

# (shape, groups, affine, scalar prologue params)
PLAIN_CASES = [
    ((2, 12, 3, 5, 7), 3, True, False),   # 3D, plane 105 (odd): 16-byte sweeps with scalar ends (kChannel's
                                          # backward scalar)
    ((3, 6, 13, 29), 2, False, True),     # C = 6 (not a multiple of 4), plane 377, affine=False, scalar params
    ((1, 10, 16, 20), 5, True, False),    # N = 1, plane 320: 16-byte sweeps
    ((2, 8, 12, 12), 8, True, False),     # groups == C
    ((2, 4, 130, 130), 1, False, False),  # groups = 1, plane 16900: two blocks per plane
    ((2, 5, 7), 5, True, False),          # 1D, plane 7
    ((4, 6), 3, True, False),             # no spatial dims: plane 1
    ((2, 136, 5, 4), 8, True, False),     # C > 128: channel reductions stage their constants in two tiles
    ((3, 4, 131, 129), 2, True, False),   # plane 16899 (odd), two blocks per plane: every head offset 0-3
]
# (shape, groups, affine, scalar prologue params, window)
WINDOW_CASES = [
    ((3, 6, 13, 29), 2, False, True, (2, 3)),       # floor: the last row and two columns fill no window
    ((1, 10, 16, 20), 5, True, False, (4, 4)),      # divides exactly, 16-byte backward sweeps
    ((2, 4, 130, 130), 1, True, False, (3, 3)),     # two blocks per plane, remainder 1
    ((2, 12, 3, 5, 7), 3, True, False, (2, 2, 3)),  # 3D, remainder in every dim
    ((2, 4, 4, 8, 8), 2, False, False, (2, 2, 2)),  # 3D, 16-byte sweeps
    ((2, 5, 7), 5, True, False, (3,)),              # 1D
    ((2, 4, 6, 2), 2, True, False, (4, 1)),         # 16-byte packs span two rows; rows 4, 5 fill no window
    ((2, 4, 3, 2, 2), 4, False, False, (2, 1, 2)),  # 3D, packs span (d, h) rows
    ((2, 4, 3, 600), 2, True, False, (1, 4)),       # rows longer than a block: a thread's values in one row
    ((1, 2, 3000, 2), 1, True, False, (2, 2)),      # rows of 2: three blocks of 1000 rows a plane
    ((2, 4, 20000), 2, True, False, (2,)),          # 1D, rows of 20000 values, 10000 windows
    ((2, 4, 11, 12), 2, True, False, (5, 5)),       # 25 values a window: the forward loads it in two chunks
]


def all_cases():
    for v in H.VARIANTS:
        if v.kind == "window":
            for shape, groups, affine, scalar, window in WINDOW_CASES:
                yield pytest.param(v, shape, groups, affine, scalar, window,
                                   id=f"{v.name}-{'x'.join(map(str, shape))}-g{groups}-w{'x'.join(map(str, window))}")
        else:
            for shape, groups, affine, scalar in PLAIN_CASES:
                yield pytest.param(v, shape, groups, affine, scalar, (),
                                   id=f"{v.name}-{'x'.join(map(str, shape))}-g{groups}{'' if affine else '-noaffine'}")


@pytest.fixture(scope="module")
def ext():
    return H.build_extension()


def make_inputs(variant, shape, affine, scalar_pro, seed, x=None):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    c = shape[1]

    def randn(*size, scale=1.0, mean=0.0):
        return torch.randn(size, device="cuda", generator=gen) * scale + mean

    if x is None:
        x = randn(*shape, scale=1.5, mean=0.3)
    gamma = randn(c, scale=0.5, mean=1.0) if affine else None
    beta = randn(c, scale=0.5) if affine else None
    pro = []
    if variant.prologue == "SigmoidAffine":
        n = 1 if scalar_pro else c
        pro = [randn(n, scale=0.5), randn(n, scale=0.3, mean=1.2)]
    epi = []
    if variant.epilogue in ("HardswishRes", "ClampScale"):
        epi = [randn(c, scale=0.5, mean=1.0)]
    elif variant.epilogue == "TanhGateX":
        epi = [randn(1, scale=0.2, mean=1.3), randn(c, scale=0.3, mean=0.5)]  # a scalar gate: stride 0
    return x, gamma, beta, pro, epi


def index_of(variant):
    return H.VARIANTS.index(variant)


def close(got, want, what, tol=TOL):
    assert got is not None, what
    got, want = got.double(), want.double()
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    scale = want.abs().max().clamp_min(1.0).item() if want.numel() else 1.0
    torch.testing.assert_close(got, want, rtol=tol, atol=tol * scale, msg=lambda m: f"{what}: {m}")


def saved_positions(variant, aux, want_shape, x, window):
    """The forward's saved positions (aux). A window max / min whose epilogue says kZeroGradExact also saves x
    at each position (aux is (2, *out): positions, then x's bits), which must be x there, bit for bit."""
    assert aux is not None and aux.dtype == torch.int32 and aux.is_contiguous()
    if variant.kind == "window" and variant.epilogue in H.ZERO_GRAD_EXACT:
        assert tuple(aux.shape) == (2, *want_shape), f"aux shape {tuple(aux.shape)}"
        positions, saved_x = aux[0], aux[1].view(torch.float32)
        rows_x = H.to_rows(x, "window", window)
        at = rows_x.gather(1, positions.reshape(-1, 1).long())[:, 0]
        assert torch.equal(saved_x.reshape(-1), at), "the saved x is not x at the saved position"
        return positions
    assert tuple(aux.shape) == want_shape, f"aux shape {tuple(aux.shape)}"
    return aux


def check_region(ext, variant, shape, groups, affine, scalar_pro, window, seed, x=None, backward=None):
    """Forward and backward (`backward`: the extension's entry, region_backward by default) against float64."""
    backward = backward or ext.region_backward
    x, gamma, beta, pro, epi = make_inputs(variant, shape, affine, scalar_pro, seed, x)
    i = index_of(variant)
    out, mean, rstd, aux = ext.region_forward(i, x, gamma, beta, pro, epi, groups, EPS, list(window))
    want_shape = H.out_shape(x.shape, variant.kind, window)
    assert tuple(out.shape) == want_shape and out.dtype == torch.float32 and out.is_contiguous()
    assert mean.shape == (shape[0], groups, 2) and rstd.shape == (shape[0], groups)
    dout = torch.randn(want_shape, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed + 99))

    # float64 reference: leaves with gradients
    xd = x.double().requires_grad_()
    gd = gamma.double().requires_grad_() if affine else None
    bd = beta.double().requires_grad_() if affine else None
    prod = [p.double().requires_grad_() for p in pro]
    epid = [p.double().requires_grad_() for p in epi]

    # statistics of z
    with torch.no_grad():
        z = H.prologue_ref(variant.prologue, xd, prod).reshape(shape[0], groups, -1)
        close(mean.double().sum(-1), z.mean(-1), "mean", tol=1e-5)
        close(rstd, (z.var(-1, unbiased=False) + EPS).rsqrt(), "rstd")

    choice = None
    if variant.op in ("max", "min") and variant.kind != "none":
        positions = saved_positions(variant, aux, want_shape, x, window)
        with torch.no_grad():
            _, rows, _ = H.region_ref(variant, xd, gd, bd, prod, epid, groups, EPS, window)
            ours = positions.reshape(-1).long()
            assert bool(((ours >= 0) & (ours < rows.shape[1])).all()), "aux out of range"
            best = rows.amax(1) if variant.op == "max" else rows.amin(1)
            picked = rows.gather(1, ours[:, None])[:, 0]
            # our position holds an extreme up to float32 rounding ...
            close(picked, best, "value at aux")
            # ... and where the extreme is clear (no near tie), exactly torch's first extreme
            top2 = rows.topk(2, 1, largest=variant.op == "max").values if rows.shape[1] > 1 else None
            if top2 is not None:
                clear = (top2[:, 0] - top2[:, 1]).abs() > 1e-4 * (1 + top2[:, 0].abs())
                torch_pos = rows.argmax(1) if variant.op == "max" else rows.argmin(1)
                assert torch.equal(ours[clear], torch_pos[clear]), "aux differs from torch's argmax/argmin"
        choice = ours
    else:
        assert aux is None

    ref, _, _ = H.region_ref(variant, xd, gd, bd, prod, epid, groups, EPS, window, choice)
    close(out, ref, "out")

    dx, dgamma, dbeta, dpro, depi = backward(i, dout, x, gamma, beta, pro, epi, mean, rstd, out, aux, groups,
                                             list(window))
    leaves = [xd] + ([gd, bd] if affine else []) + prod + epid
    grads = torch.autograd.grad(ref, leaves, dout.double(), allow_unused=True)
    grads = [torch.zeros_like(leaf) if g is None else g for g, leaf in zip(grads, leaves)]
    close(dx, grads[0], "dx")
    k = 1
    if affine:
        close(dgamma, grads[1], "dgamma")
        close(dbeta, grads[2], "dbeta")
        k = 3
    else:
        assert dgamma is None and dbeta is None
    assert tuple(dpro.shape) == (len(pro), shape[1]) and tuple(depi.shape) == (len(epi), shape[1])
    for j, p in enumerate(pro):  # per-channel rows; a scalar parameter's gradient is its row's sum
        close(dpro[j] if p.numel() > 1 else dpro[j].sum(), grads[k + j].reshape(-1 if p.numel() > 1 else ()),
              f"dprologue[{j}]")
    k += len(pro)
    for j, p in enumerate(epi):
        close(depi[j] if p.numel() > 1 else depi[j].sum(), grads[k + j].reshape(-1 if p.numel() > 1 else ()),
              f"depilogue[{j}]")
    return x, dout


@pytest.fixture(params=[1, 0], ids=["pipelined", "sweeps"])
def backward_path(request, ext):
    """The two backward paths: the pipelined kernel (wherever it is correct, also where the plan would not take
    it: other reductions, scalar planes) and the two sweep kernels."""
    ext.set_backward_pipeline(request.param)
    yield request.param
    ext.set_backward_pipeline(-1)


@pytest.mark.parametrize("variant, shape, groups, affine, scalar_pro, window", list(all_cases()))
def test_matches_float64(ext, backward_path, variant, shape, groups, affine, scalar_pro, window):
    seed = sum(shape) * 7 + groups + index_of(variant) * 1000 + len(window)
    check_region(ext, variant, shape, groups, affine, scalar_pro, window, seed)


# (variant, shape, groups, window): more items than the resident blocks and a slice's items together, so that the
# pipelined backward's tickets run all three phases (pass A alone, A and B alternating, B alone)
PIPELINE_CASES = [
    ("none_sig_hs", (16, 64, 96, 96), 8, ()),     # plane 9216: 3 items a plane, 24 a slice, 3072 in all
    ("none_plain_g4", (6, 128, 48, 48), 1, ()),   # one group: 128 items a slice
    ("channel_lse", (16, 48, 60, 60), 6, ()),     # dout, out at (n, s): 3 streams
    ("window_max", (8, 32, 66, 66), 4, (3, 3)),   # plane 4356: the last item of a plane is short
    ("none_sig_hs", (12, 24, 45, 47), 3, ()),     # plane 2115 (odd): the scalar path, 3 items a plane
    # items of several planes, one a team (PipelinePlan::teams)
    ("none_sig_hs", (64, 64, 28, 28), 8, ()),     # plane 784: 4 planes an item, 64 threads a plane
    ("none_plain_g4", (32, 256, 14, 14), 1, ()),  # plane 196: 8 planes an item, a warp a plane, 32 items a slice
    ("none_sig_hs", (96, 48, 13, 15), 6, ()),     # plane 195 (odd): scalar ends per team
    ("channel_lse", (64, 48, 20, 20), 12, ()),    # 4 channels a group: 4 planes an item where 8 would fit
]


@pytest.mark.parametrize("mode", [1, 2], ids=["lag_planned", "lag_one_slice"])
@pytest.mark.parametrize("name, shape, groups, window", PIPELINE_CASES,
                         ids=lambda c: c if isinstance(c, str) else None)
def test_pipelined_backward_phases(ext, mode, name, shape, groups, window):
    """The pipelined backward at sizes where pass B trails pass A by lag < all items, at the planned lag and at the
    smallest (a slice: most pass B items wait for their slice): every gradient against float64, and bitwise the
    same at both lags (the slices' partials are merged in a fixed order, whichever block merges)."""
    variant = H.BY_NAME[name]
    seed = 17 + len(shape) + groups
    ext.set_backward_pipeline(mode)
    try:
        x, dout = check_region(ext, variant, shape, groups, True, False, window, seed)
        i = index_of(variant)
        _, gamma, beta, pro, epi = make_inputs(variant, shape, True, False, seed, x)
        out, mean, rstd, aux = ext.region_forward(i, x, gamma, beta, pro, epi, groups, EPS, list(window))
        first = ext.region_backward(i, dout, x, gamma, beta, pro, epi, mean, rstd, out, aux, groups, list(window))
        ext.set_backward_pipeline(3 - mode)
        second = ext.region_backward(i, dout, x, gamma, beta, pro, epi, mean, rstd, out, aux, groups, list(window))
    finally:
        ext.set_backward_pipeline(-1)
    for a, b in zip(first, second):
        assert torch.equal(a, b), "the pipelined backward's result depends on its lag"


# (variant, shape, groups): kNone slices the cluster forward holds (K = 2 .. 8 blocks of up to 72 KB), planes of
# whole packs and odd ones (the scalar path), a slice that fills 8 blocks to the byte, one group
CLUSTER_FORWARD_CASES = [
    ("none_sig_hs", (3, 24, 40, 40), 3),        # 12.8 K values a slice: K = 2
    ("none_plain_g4", (2, 16, 33, 35), 4),      # plane 1155 (odd): copies and packs of one value
    ("none_sig_hs", (2, 64, 64, 64), 4),        # 64 K values a slice: K = 4
    ("none_plain_g4", (1, 16, 96, 96), 1),      # 147 K values, one group: K = 8 of exactly 72 KB
]


def ran_kernel(fn, name: str) -> bool:
    """Whether a CUDA kernel whose name contains `name` ran in fn()."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return any(name in event.name for event in prof.events())


@pytest.mark.parametrize("name, shape, groups", CLUSTER_FORWARD_CASES, ids=lambda c: c if isinstance(c, str) else None)
def test_cluster_forward(ext, name, shape, groups):
    """The kNone forward on clusters (each slice read once, groupnorm/cluster/cluster.cuh): it runs at these shapes, its
    output and statistics against float64 (and the backward from them), and within float32 rounding of the two-pass
    sweeps' (the moments are folded in another order)."""
    variant = H.BY_NAME[name]
    seed = 23 + sum(shape) + groups
    i = index_of(variant)
    ext.set_forward_cluster(1)
    try:
        x, _ = check_region(ext, variant, shape, groups, True, False, (), seed)
        _, gamma, beta, pro, epi = make_inputs(variant, shape, True, False, seed, x)
        run = lambda: ext.region_forward(i, x, gamma, beta, pro, epi, groups, EPS, [])  # noqa: E731
        assert ran_kernel(run, "cluster_forward_kernel"), "the cluster forward did not run"
        clustered = run()
        ext.set_forward_cluster(0)
        assert not ran_kernel(run, "cluster_forward_kernel")
        swept = run()
    finally:
        ext.set_forward_cluster(-1)
    close(clustered[0], swept[0], "out against the sweeps'", tol=1e-5)
    close(clustered[1].sum(-1), swept[1].sum(-1), "mean against the sweeps'", tol=1e-6)
    close(clustered[2], swept[2], "rstd against the sweeps'", tol=1e-6)


@pytest.mark.parametrize("name, shape, groups, window", [
    ("plane_max", (2, 6, 9, 11), 3, ()),
    ("window_max", (2, 6, 9, 11), 3, (2, 3)),
    ("window_max", (1, 4, 4, 6, 6), 2, (2, 2, 3)),
    ("channel_min", (2, 8, 5, 7), 4, ()),
])
def test_first_extreme_on_exact_ties(ext, name, shape, groups, window):
    """Integer-valued inputs: equal x in one channel give bitwise-equal v, so there are exact ties; the
    kernels must report the first one, as torch (argmax/argmin, MaxPool) does."""
    variant = H.BY_NAME[name]
    gen = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randint(0, 3, shape, device="cuda", generator=gen).float()
    _, gamma, beta, pro, epi = make_inputs(variant, shape, True, True, 5, x)  # scalar prologue parameters
    if name == "channel_min":  # the same parameters in every channel: channels of a group tie too
        gamma, beta = torch.ones_like(gamma), torch.zeros_like(beta)
        epi = [torch.ones_like(epi[0])]
    out, mean, rstd, aux = H_forward(ext, variant, x, gamma, beta, pro, epi, groups, window)
    with torch.no_grad():
        _, rows, _ = H.region_ref(variant, x.double(), gamma.double(), beta.double(), [p.double() for p in pro],
                                  [p.double() for p in epi], groups, EPS, window)
        rows = rows.cpu()
        want = rows.argmax(1) if variant.op == "max" else rows.argmin(1)
        best = rows.amax(1) if variant.op == "max" else rows.amin(1)
        ties = ((rows == best[:, None]).sum(1) > 1).sum().item()
    assert ties > 0, "the input was meant to have ties"
    ours = saved_positions(variant, aux, out.shape, x, window).reshape(-1).long().cpu()
    # where fp32 rounding and fp64 agree on the tie set, the first position must match
    same = rows.gather(1, ours[:, None])[:, 0] == best
    assert bool(same.all()), "aux is not an extreme"
    assert torch.equal(ours, want)


def H_forward(ext, variant, x, gamma, beta, pro, epi, groups, window):
    return ext.region_forward(index_of(variant), x, gamma, beta, pro, epi, groups, EPS, list(window))


@pytest.mark.parametrize("variant", H.VARIANTS, ids=lambda v: v.name)
def test_bitwise_deterministic(ext, variant):
    shape, groups = (2, 4, 132, 130), 2  # two blocks per plane
    window = (3, 4) if variant.kind == "window" else ()
    x, gamma, beta, pro, epi = make_inputs(variant, shape, True, False, 11)
    i = index_of(variant)
    first = ext.region_forward(i, x, gamma, beta, pro, epi, groups, EPS, list(window))
    second = ext.region_forward(i, x, gamma, beta, pro, epi, groups, EPS, list(window))
    for a, b in zip(first, second):
        assert (a is None and b is None) or torch.equal(a, b)
    out, mean, rstd, aux = first
    dout = torch.randn_like(out)
    g1 = ext.region_backward(i, dout, x, gamma, beta, pro, epi, mean, rstd, out, aux, groups, list(window))
    g2 = ext.region_backward(i, dout, x, gamma, beta, pro, epi, mean, rstd, out, aux, groups, list(window))
    for a, b in zip(g1, g2):
        assert torch.equal(a, b)


@pytest.mark.parametrize("name", ["none_plain_g4", "plane_mean"])
def test_large_common_offset(ext, name):
    """x = 1e4 + 1e-2 randn: statistics around a pilot value keep the spread's precision."""
    variant = H.BY_NAME[name]
    shape = (2, 8, 33, 31)
    gen = torch.Generator(device="cuda").manual_seed(3)
    x = 1e4 + 1e-2 * torch.randn(shape, device="cuda", generator=gen)
    if name == "none_plain_g4":
        check_region(ext, variant, shape, 4, True, False, (), 3, x=x)
    else:  # the sigmoid saturates at 1e4: its bias parameter brings the input back (x + bias is exact)
        _, gamma, beta, pro, epi = make_inputs(variant, shape, True, False, 3, x)
        pro = [pro[0] - 1e4, pro[1]]
        out, mean, rstd, _ = H_forward(ext, variant, x, gamma, beta, pro, epi, 4, ())
        ref, _, _ = H.region_ref(variant, x.double(), gamma.double(), beta.double(), [p.double() for p in pro],
                                 [e.double() for e in epi], 4, EPS, ())
        # z = sigmoid(u) spreads over ~3e-3 only: its float32 rounding (3e-8) is ~1e-5 of the spread
        close(out, ref, "out", tol=1e-3)


def test_specialised_group_count_any_groups(ext):
    """none_plain_g4 is instantiated with kGroups = 4: other counts still run, with the same results."""
    variant = H.BY_NAME["none_plain_g4"]
    for groups in (4, 2, 8):
        check_region(ext, variant, (2, 8, 10, 10), groups, True, False, (), 17 + groups)


@pytest.mark.parametrize("name", ["none_sig_hs", "plane_max", "sample_lse", "channel_min", "window_mean"])
def test_empty_input(ext, name):
    variant = H.BY_NAME[name]
    window = (2, 2) if variant.kind == "window" else ()
    shape = (0, 4, 6, 6)
    x, gamma, beta, pro, epi = make_inputs(variant, shape, True, False, 1, torch.empty(shape, device="cuda"))
    i = index_of(variant)
    out, mean, rstd, aux = ext.region_forward(i, x, gamma, beta, pro, epi, 2, EPS, list(window))
    assert tuple(out.shape) == H.out_shape(shape, variant.kind, window)
    dx, dgamma, dbeta, dpro, depi = ext.region_backward(i, torch.zeros_like(out), x, gamma, beta, pro, epi, mean,
                                                        rstd, out, aux, 2, list(window))
    assert dx.shape == x.shape and float(dgamma.abs().sum()) == 0.0 and float(depi.abs().sum()) == 0.0
    # a reduction over nothing: sum 0 and log-sum-exp -inf, as torch; max/min an error
    if name == "sample_lse":
        e = torch.empty((2, 0, 3), device="cuda")
        o = ext.region_forward(i, e, None, None, pro[:0] + [], [torch.ones(1, device="cuda")] * 2, 1, EPS, [])
        assert bool(torch.isneginf(o[0]).all()) and o[0].shape == (2,)
    if name == "plane_max":
        e = torch.empty((2, 4, 0), device="cuda")
        with pytest.raises(RuntimeError, match="kgen: max/min of an empty"):
            ext.region_forward(i, e, None, None, [], [torch.ones(1, device="cuda")] * 2, 1, EPS, [])


# float16 and bfloat16 x and dx (kNone's output too), and dout where it lies at x's positions or is one value a plane
# or sample: loads and stores in the storage type, float arithmetic; kChannel's and kWindow's dout read as float32
# (SweepDout). Against float64 from the same rounded x and dout, within a few units of the storage type's roundoff
# (2^-9 bfloat16, 2^-12 float16: the output and dx are rounded once).
HALF_TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3}
HALF_CASES = [PLAIN_CASES[k] for k in (0, 1, 2, 3, 4, 5, 6, 8)]


def half_window(variant, shape):
    """A window for a window reduction (2 along each spatial dim, 1 where the dim is shorter), else ()."""
    return tuple(2 if size >= 2 else 1 for size in shape[2:]) if variant.kind == "window" else ()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("variant, shape, groups, affine, scalar_pro", [
    pytest.param(v, *case, id=f"{v.name}-{'x'.join(map(str, case[0]))}-g{case[1]}")
    for v in H.VARIANTS for case in HALF_CASES if v.kind != "window" or len(case[0]) > 2])
def test_half_storage_matches_float64(ext, dtype, variant, shape, groups, affine, scalar_pro):
    x, gamma, beta, pro, epi = make_inputs(variant, shape, affine, scalar_pro, 11)
    x = x.to(dtype)
    window = half_window(variant, shape)
    i = index_of(variant)
    out, mean, rstd, aux = ext.region_forward(i, x, gamma, beta, pro, epi, groups, EPS, list(window))
    assert out.dtype == (dtype if variant.kind == "none" else torch.float32)
    want_shape = H.out_shape(x.shape, variant.kind, window)
    dout = torch.randn(want_shape, device="cuda", generator=torch.Generator(device="cuda").manual_seed(5)).to(dtype)
    xd = x.double().requires_grad_()
    gd = gamma.double().requires_grad_() if affine else None
    bd = beta.double().requires_grad_() if affine else None
    prod = [p.double().requires_grad_() for p in pro]
    epid = [p.double().requires_grad_() for p in epi]
    choice = None
    if variant.op in ("max", "min") and variant.kind != "none":
        choice = saved_positions(variant, aux, want_shape, x.float(), window).reshape(-1).long()
    ref, _, _ = H.region_ref(variant, xd, gd, bd, prod, epid, groups, EPS, window, choice)
    tol = HALF_TOL[dtype]
    close(out, ref, "out", tol=tol)
    dx, dgamma, dbeta, dpro, depi = ext.region_backward(i, dout, x, gamma, beta, pro, epi, mean, rstd, out, aux, groups,
                                                        list(window))
    assert dx.dtype == dtype and dx.shape == x.shape
    leaves = [xd] + ([gd, bd] if affine else []) + prod + epid
    grads = torch.autograd.grad(ref, leaves, dout.double(), allow_unused=True)
    grads = [torch.zeros_like(leaf) if g is None else g for g, leaf in zip(grads, leaves)]
    close(dx, grads[0], "dx", tol=tol)
    got = ([dgamma, dbeta] if affine else []) + [dpro[j] if p.numel() > 1 else dpro[j].sum() for j, p in enumerate(pro)] \
        + [depi[j] if p.numel() > 1 else depi[j].sum() for j, p in enumerate(epi)]
    for k, (g, want) in enumerate(zip(got, grads[1:])):
        close(g, want.reshape(g.shape), f"parameter gradient {k}", tol=tol)


# kChannel's and kWindow's kernels on a float16 / bfloat16 x run the float arithmetic of the float32 kernels on the
# same values (x converts exactly; their dout is read as float32 either way), so they give the same bits: out, mean,
# rstd, aux (with the window's saved extremes) and every parameter gradient equal, dx the float32 dx rounded once.
HALF_BITWISE_CASES = [
    ((3, 8, 12, 12), 2, (2, 2)),
    ((2, 12, 9, 7), 3, (3, 3)),          # odd planes: the scalar paths
    ((2, 6, 4, 10, 10), 3, (2, 2, 2)),   # 3-d
    ((4, 16, 33, 31), 4, (4, 4)),        # windows that leave a remainder
    ((2, 8, 64, 64), 8, (2, 2)),
    ((3, 10, 7, 9), 5, (1, 1)),
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("variant, shape, groups, window", [
    pytest.param(v, shape, groups, window if v.kind == "window" else (),
                 id=f"{v.name}-{'x'.join(map(str, shape))}-g{groups}")
    for v in H.VARIANTS if v.kind in ("window", "channel") for shape, groups, window in HALF_BITWISE_CASES])
def test_half_channel_and_window_kernels_are_the_float32_kernels(ext, dtype, variant, shape, groups, window):
    x, gamma, beta, pro, epi = make_inputs(variant, shape, True, False, sum(shape) + groups)
    x = x.to(dtype)
    i = index_of(variant)
    half = ext.region_forward(i, x, gamma, beta, pro, epi, groups, EPS, list(window))
    full = ext.region_forward(i, x.float(), gamma, beta, pro, epi, groups, EPS, list(window))
    assert half[0].dtype == torch.float32 and half[0].shape == full[0].shape
    for k, name in enumerate(("out", "mean", "rstd", "aux")):
        assert (half[k] is None) == (full[k] is None), name
        if full[k] is not None:
            assert torch.equal(half[k], full[k]), f"{name} differs from the float32 forward's"
    dout = torch.randn(full[0].shape, device="cuda", generator=torch.Generator(device="cuda").manual_seed(7))
    dout = dout.to(dtype)
    got = ext.region_backward(i, dout, x, gamma, beta, pro, epi, *half[1:3], half[0], half[3], groups, list(window))
    want = ext.region_backward(i, dout.float(), x.float(), gamma, beta, pro, epi, *full[1:3], full[0], full[3],
                               groups, list(window))
    assert got[0].dtype == dtype and torch.equal(got[0], want[0].to(dtype)), "dx is not the float32 dx rounded"
    for k, name in enumerate(("dgamma", "dbeta", "dprologue", "depilogue"), start=1):
        assert torch.equal(got[k], want[k]), f"{name} differs from the float32 backward's"


def test_clear_errors(ext):
    v = H.BY_NAME["none_sig_hs"]
    i = index_of(v)
    x, gamma, beta, pro, epi = make_inputs(v, (2, 4, 5, 5), True, False, 2)
    cases = [
        ((x.cpu(), gamma, beta, pro, epi, 2), "must be a CUDA tensor"),
        ((x.double(), gamma, beta, pro, epi, 2), "must be float32"),
        ((x[0, 0, 0], gamma, beta, pro, epi, 2), r"shape \(N, C, \*spatial\)"),
        ((x, gamma, beta, pro, epi, 3), "not divisible into 3 groups"),
        ((x, gamma, None, pro, epi, 2), "both be given"),
        ((x, gamma[:3], beta, pro, epi, 2), "weight/bias must have shape"),
        ((x, gamma, beta, pro[:1], epi, 2), "the prologue takes 2 parameters, got 1"),
        ((x, gamma, beta, pro, [torch.ones(3, device="cuda")], 2), "expected 1 or 4"),
    ]
    for args, message in cases:
        with pytest.raises(RuntimeError, match=message):
            ext.region_forward(i, *args, EPS, [])
    w = H.BY_NAME["window_max"]
    with pytest.raises(RuntimeError, match="one size per spatial dim"):
        ext.region_forward(index_of(w), x, gamma, beta, pro, epi, 2, EPS, [2])
    out, mean, rstd, aux = ext.region_forward(i, x, gamma, beta, pro, epi, 2, EPS, [])
    with pytest.raises(RuntimeError, match="output gradient has shape"):
        ext.region_backward(i, out[:1], x, gamma, beta, pro, epi, mean, rstd, out, aux, 2, [])
    m = H.BY_NAME["channel_min"]
    out, mean, rstd, aux = ext.region_forward(index_of(m), x, gamma, beta, pro, epi, 2, EPS, [])
    with pytest.raises(RuntimeError, match="aux"):
        ext.region_backward(index_of(m), out, x, gamma, beta, pro, epi, mean, rstd, out, None, 2, [])
    # a window max that saves its extremes' x wants both planes back, not the positions alone
    xw, gw, bw, pw, ew = make_inputs(w, (2, 4, 6, 6), True, False, 3)
    out, mean, rstd, aux = ext.region_forward(index_of(w), xw, gw, bw, pw, ew, 2, EPS, [2, 2])
    assert tuple(aux.shape) == (2, 2, 4, 3, 3)
    with pytest.raises(RuntimeError, match=r"aux\) must be the forward's int32 tensor of shape \[2, 2, 4, 3, 3\]"):
        ext.region_backward(index_of(w), out, xw, gw, bw, pw, ew, mean, rstd, out, aux[0], 2, [2, 2])


# ---------------------------------------------------------------- timing (not a test)

def bench():
    ext = H.build_extension()
    shape, groups = (128, 32, 254, 254), 8
    gb = torch.empty(shape).numel() * 4 / 1e9

    print(f"device: {torch.cuda.get_device_name()}, x {shape} = {gb:.2f} GB")
    x0 = torch.randn(shape, device="cuda")
    t = median_ms(lambda: x0.clone())
    print(f"copy (x.clone): {t:.3f} ms, {2 * gb / t * 1e3:.0f} GB/s")
    # bytes moved, in units of x (full-size tensors only; out/dout of a reduction are small)
    for name, window, fwd_bytes, bwd_bytes in [
        ("none_sig_hs", (), 3, 5),    # fwd: 2 reads + v written; bwd: (x, dout) then (x, dout, dx)
        ("none_plain_g4", (), 3, 5),
        ("plane_mean", (), 2, 3),     # fwd: 2 reads; bwd: x, then (x, dx)
        ("channel_lse", (), 2, 3),
        ("window_max", (2, 2), 2, 3),
    ]:
        v = H.BY_NAME[name]
        x, gamma, beta, pro, epi = make_inputs(v, shape, True, False, 1, x0)
        i = index_of(v)
        fwd = lambda: ext.region_forward(i, x, gamma, beta, pro, epi, groups, EPS, list(window))  # noqa: E731
        out, mean, rstd, aux = fwd()
        dout = torch.randn_like(out)
        bwd = lambda: ext.region_backward(i, dout, x, gamma, beta, pro, epi, mean, rstd, out, aux, groups,  # noqa: E731
                                          list(window))
        tf, tb = median_ms(fwd), median_ms(bwd)
        print(f"{name:14s} forward {tf:7.3f} ms ({fwd_bytes * gb / tf * 1e3:5.0f} GB/s)   "
              f"backward {tb:7.3f} ms ({bwd_bytes * gb / tb * 1e3:5.0f} GB/s)")
        del out, dout, mean, rstd, aux
        torch.cuda.empty_cache()


if __name__ == "__main__":
    if "--bench" in sys.argv:
        bench()
