"""One-pass GroupNorm forward (kgen/templates/cuda/groupnorm/onepass/onepass.cuh), built from the .cuh building blocks
into a small test extension: against float64 PyTorch, against the two-pass kernels, bitwise run to run, with
the statistics it saves for backward equal to the two-pass family's (region_forward_onepass and
region_forward_twopass, with a parameterless prologue), and its planner's fallback where a slice does not fit on chip.

Shapes: one block per slice and teams of several blocks, more slices than teams (many rounds of the pipeline),
fewer slices than pipeline stages, the specialised and a generic group count, a large common offset; and where the
planner must decline (two passes run instead): HW % 4 != 0, an unaligned input, a slice too big for the GPU.

`python tests/gpu/test_groupnorm_onepass.py --bench` times one-pass against two-pass at the L1-35 shape."""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from kgen.ref.emit import ONEPASS_PARTS, REGION_BASE_PARTS, TWOPASS_PARTS

pytestmark = pytest.mark.gpu

CUDA_DIR = Path(__file__).resolve().parents[2] / "kgen" / "templates" / "cuda"
PARTS = REGION_BASE_PARTS + ("core/ops.cuh",) + TWOPASS_PARTS + ONEPASS_PARTS
EPS = 1e-5

BINDINGS = r"""
constexpr int kBlock = 256;

// GELU (erf) as a region prologue without parameters.
struct GeluPrologue {
  static constexpr int kParams = 0;
  __device__ static GeluPrologue at(const kgen::RegionParams&, int64_t) { return {}; }
  __device__ __forceinline__ float value(float x) const { return kgen::gelu_erf(x); }
  __device__ __forceinline__ float backward(float x, float dz, float (&)[kgen::kMaxParams]) const {
    return dz * kgen::gelu_erf_grad(x);
  }
};

template <class Pro, int kThreads>
std::vector<at::Tensor> onepass(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int64_t groups,
                                int64_t bps) {
  return kgen::region_forward_onepass<Pro, kgen::NoEpilogue, kgen::ReduceKind::kNone, kThreads>(
      x, w, b, {}, {}, groups, 1e-5, static_cast<int>(bps));
}

template <class Pro>
std::vector<at::Tensor> run(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, int64_t threads, int64_t bps) {
  std::vector<at::Tensor> r;
  if (threads == 1024) r = onepass<Pro, 1024>(x, w, b, groups, bps);
  if (threads == 512) r = onepass<Pro, 512>(x, w, b, groups, bps);
  if (threads == 256) r = onepass<Pro, 256>(x, w, b, groups, bps);
  if (r.empty()) {  // declined, or two passes asked for
    r = kgen::region_forward_twopass<Pro, kgen::NoEpilogue, kgen::ReduceKind::kNone, kgen::ReduceOp::kSum, kBlock, 0>(
        x, w, b, {}, {}, groups, 1e-5, {}, true);
  }
  return {r[0], r[1], r[2]};
}

// threads: 1024, 512 or 256 = one-pass where it fits (bps blocks per SM), 0 = two-pass.
std::vector<at::Tensor> forward(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, int64_t threads, int64_t bps,
                                bool gelu) {
  return gelu ? run<GeluPrologue>(x, w, b, groups, threads, bps) : run<kgen::NoPrologue>(x, w, b, groups, threads, bps);
}

// {feasible, team_size, teams, chunk} of the planner for a contiguous float32 shape.
std::vector<int64_t> plan(int64_t batch, int64_t channels, int64_t groups, int64_t plane, int64_t threads, int64_t bps) {
  const kgen::GroupShape shape{batch, channels, groups, plane};
  const bool vec = plane % 4 == 0;
  using P = kgen::NoPrologue;
  using E = kgen::NoEpilogue;
  const kgen::OnePassPlan p = threads == 1024 ? kgen::plan_onepass<P, E, 1024>(shape, vec, bps)
                            : threads == 512  ? kgen::plan_onepass<P, E, 512>(shape, vec, bps)
                                              : kgen::plan_onepass<P, E, 256>(shape, vec, bps);
  return {p.feasible ? 1 : 0, p.team_size, p.teams, p.chunk};
}
"""
CPP_SOURCE = r"""
std::vector<at::Tensor> forward(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, int64_t threads, int64_t bps,
                                bool gelu);
std::vector<int64_t> plan(int64_t batch, int64_t channels, int64_t groups, int64_t plane, int64_t threads, int64_t bps);
"""


def build_extension(replace: tuple[str, str] | None = None):
    """The test extension; `replace` = (old, new) edits the kernel source first (benchmark variants)."""
    from torch.utils.cpp_extension import load_inline

    source = "\n".join((CUDA_DIR / name).read_text() for name in PARTS) + BINDINGS
    if replace:
        assert replace[0] in source
        source = source.replace(*replace)
    digest = hashlib.sha256((CPP_SOURCE + source).encode()).hexdigest()[:16]
    return load_inline(name="kgen_test_groupnorm_onepass_" + digest, cpp_sources=CPP_SOURCE, cuda_sources=source,
                       functions=["forward", "plan"], extra_cuda_cflags=["-O3"])


@pytest.fixture(scope="module")
def ext():
    return build_extension()


def plane_of(shape):
    n = 1
    for d in shape[2:]:
        n *= d
    return n


SHAPES = [
    # (shape, groups)
    ((2, 64, 16, 16), 8),        # tiny slices: one block per slice, teams = slices
    ((3, 64, 256, 256), 8),      # 2 MB slices: teams of several blocks, several rounds
    ((1, 16, 512, 512), 8),      # 8 slices of 2 MB in 4 teams: 2 rounds each, fewer than the pipeline stages
    ((5, 96, 33, 31), 12),       # generic group count, HW odd: no 16-byte copies, the planner declines
    ((6, 96, 20, 20), 12),       # generic group count, 16-byte path, slices shorter than a block's stride
    ((16, 32, 128, 128), 8),     # more slices than teams: many rounds
    ((2, 8, 512, 520), 1),       # groups = 1: one big slice per sample
    ((4, 64, 24, 24), 64),       # one channel per group
]


def inputs(shape, seed, offset=0.0, spread=2.0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(shape, device="cuda", generator=gen) * spread + offset
    w = torch.randn(shape[1], device="cuda", generator=gen) * 0.5 + 1.0
    b = torch.randn(shape[1], device="cuda", generator=gen) * 0.5
    return x, w, b


CONFIGS = [(1024, 1), (512, 1), (256, 2)]   # (threads per block, blocks per SM)


@pytest.mark.parametrize("threads,bps", CONFIGS)
@pytest.mark.parametrize("shape,groups", SHAPES)
def test_onepass_matches_float64_and_two_pass(ext, shape, groups, threads, bps):
    feasible, team_size, teams, chunk = ext.plan(shape[0], shape[1], groups, plane_of(shape), threads, bps)
    assert feasible == (plane_of(shape) % 4 == 0)
    if feasible:
        assert team_size >= 1 and teams >= 1 and chunk % 4 == 0 and team_size * chunk >= shape[1] // groups * plane_of(shape)
    for seed, gelu in ((1, False), (2, True)):
        x, w, b = inputs(shape, seed)
        y, mean, rstd = ext.forward(x, w, b, groups, threads, bps, gelu)
        z = F.gelu(x.double()) if gelu else x.double()
        want = F.group_norm(z, groups, w.double(), b.double(), EPS)
        assert (y.double() - want).abs().max().item() < 2e-5
        y2, mean2, rstd2 = ext.forward(x, w, b, groups, 0, 1, gelu)
        assert (y - y2).abs().max().item() < 2e-5
        assert torch.allclose(mean, mean2, atol=1e-6, rtol=1e-6) and torch.allclose(rstd, rstd2, rtol=1e-5)
        assert torch.equal(y, ext.forward(x, w, b, groups, threads, bps, gelu)[0])   # bitwise deterministic


def test_large_offset_keeps_precision(ext):
    x, w, b = inputs((2, 64, 128, 128), 3, offset=1e4, spread=1e-2)
    y = ext.forward(x, w, b, 8, 1024, 1, False)[0]
    want = F.group_norm(x.double(), 8, w.double(), b.double(), EPS)
    assert (y.double() - want).abs().max().item() < 5e-3   # float32 inputs hold 1e4 + 1e-2 to ~1e-3 / 1e-2


def test_mean_pair_and_rstd_are_the_exact_statistics(ext):
    x, w, b = inputs((2, 64, 64, 64), 4, offset=3.0)
    _, mean, rstd = ext.forward(x, w, b, 8, 512, 1, False)
    rows = x.double().reshape(2, 8, -1)
    full_mean = mean.double()[..., 0] + mean.double()[..., 1]
    assert torch.allclose(full_mean, rows.mean(-1), atol=2e-6, rtol=0)   # float32 partial moments
    assert torch.allclose(rstd.double(), 1 / torch.sqrt(rows.var(-1, unbiased=False) + EPS), rtol=1e-6)


def test_unaligned_input_falls_back_to_two_passes(ext):
    x, w, b = inputs((2, 64, 64, 64), 6)
    storage = torch.empty(x.numel() + 1, device="cuda")
    shifted = storage[1:].view_as(x)   # contiguous, but 4 bytes past a 16-byte boundary
    shifted.copy_(x)
    y = ext.forward(shifted, w, b, 8, 512, 1, False)[0]
    want = F.group_norm(x.double(), 8, w.double(), b.double(), EPS)
    assert (y.double() - want).abs().max().item() < 2e-5


def test_slice_too_large_for_the_gpu_falls_back_to_two_passes(ext):
    plane = 4096 * 4096   # one 64 MB group slice: more than any GPU's shared memory in total
    assert ext.plan(1, 1, 1, plane, 1024, 1)[0] == 0
    x, w, b = inputs((1, 1, 4096, 4096), 5)
    y = ext.forward(x, w, b, 1, 1024, 1, False)[0]
    want = F.group_norm(x.double(), 1, w.double(), b.double(), EPS)
    assert (y.double() - want).abs().max().item() < 2e-5


def bench() -> None:
    """One-pass thread shapes against two passes and eager, at the L1-35 shape."""
    from torch.utils import benchmark

    x, w, b = inputs((112, 64, 512, 512), 0)
    gbytes = 2 * x.numel() * 4 / 1e9

    def time_ms(fn, seconds=1.0):
        return benchmark.Timer("fn()", globals={"fn": fn}).blocked_autorange(min_run_time=seconds).median * 1e3

    ext = build_extension()
    with torch.no_grad():
        for threads, bps in CONFIGS + [(256, 1), (0, 1)]:
            if threads:
                print(f"plan {threads} threads x {bps} per SM (feasible, team_size, teams, chunk):",
                      ext.plan(112, 64, 8, 512 * 512, threads, bps))
            ms = time_ms(lambda: ext.forward(x, w, b, 8, threads, bps, False))
            name = "one-pass" if threads else "two-pass"
            print(f"threads {threads:5d} x {bps} ({name}): {ms:7.3f} ms  {gbytes / ms:5.2f} TB/s counting 1 read + 1 write")
        print(f"eager F.group_norm: {time_ms(lambda: F.group_norm(x, 8, w, b, EPS), 2.0):7.3f} ms")


if __name__ == "__main__" and "--bench" in sys.argv:
    bench()
