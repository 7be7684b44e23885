"""Test harness of the two-pass GroupNorm region kernels (kgen/templates/cuda/groupnorm/twopass/twopass.cuh): example
functors written as the generator would write them, the instantiations the tests use in a few load_inline
extensions built side by side and called as one (Harness), and a float64 PyTorch re-implementation of a region (outputs and, through autograd, every gradient).

Functors (the same math in CUDA and in the PyTorch reference below):
  SigmoidAffine   z = sigmoid((x + p0[c]) * p1[c])               2 prologue params
  HardswishRes    v = hardswish(y) * p0[c] + z                   1 epilogue param, residual of z; kZeroGradExact
  TanhGateX       v = tanh(y) * p0 + p1[c] * x                   2 epilogue params (p0 may be a scalar), residual of x
  ClampScale      v = clamp(y * p0[c], -0.5, 0.8)                1 epilogue param; kZeroGradExact, no direct gradients
  NoPrologue / NoEpilogue (groupnorm/region.cuh)
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from kgen.ref.emit import REGION_BASE_PARTS, TWOPASS_PARTS

CUDA_DIR = Path(__file__).resolve().parents[2] / "kgen" / "templates" / "cuda"
PARTS = REGION_BASE_PARTS + TWOPASS_PARTS
BLOCK = 256

FUNCTORS = r"""
// ---- example functors, written as kgen's generator writes them ----
struct SigmoidAffine {  // z = sigmoid((x + p0[c]) * p1[c])
  static constexpr int kParams = 2;
  float bias, scale;
  __device__ static SigmoidAffine at(const kgen::RegionParams& p, int64_t c) {
    return SigmoidAffine{p.prologue.at(0, c), p.prologue.at(1, c)};
  }
  __device__ __forceinline__ float value(float x) const {
    const float u = (x + bias) * scale;
    return 1.f / (1.f + expf(-u));
  }
  __device__ __forceinline__ float backward(float x, float dz, float (&dparam)[kgen::kMaxParams]) const {
    const float t = x + bias;
    const float s = 1.f / (1.f + expf(-t * scale));
    const float du = dz * s * (1.f - s);
    dparam[0] += du * scale;
    dparam[1] += du * t;
    return du * scale;
  }
};

struct HardswishRes {  // v = hardswish(y) * p0[c] + z
  static constexpr int kParams = 1;
  static constexpr bool kZeroGradExact = true;  // a window max's first backward pass reads the extremes only
  float w;
  __device__ static HardswishRes at(const kgen::RegionParams& p, int64_t c) { return HardswishRes{p.epilogue.at(0, c)}; }
  __device__ __forceinline__ static float hardswish(float y) { return y * fminf(fmaxf(y + 3.f, 0.f), 6.f) * (1.f / 6.f); }
  __device__ __forceinline__ float value(float y, float z, float) const { return hardswish(y) * w + z; }
  __device__ __forceinline__ void backward(float y, float, float, float dv, float& dy, float& dz, float&,
                                           float (&dparam)[kgen::kMaxParams]) const {
    const float d = y < -3.f ? 0.f : (y <= 3.f ? y / 3.f + 0.5f : 1.f);
    dy = dv * w * d;
    dz += dv;
    dparam[0] += dv * hardswish(y);
  }
};

struct ClampScale {  // v = clamp(y * p0[c], -0.5, 0.8)
  static constexpr int kParams = 1;
  static constexpr bool kZeroGradExact = true;
  static constexpr bool kDirectGrads = false;  // a window max's second backward pass reads each window's dy
  float w;
  __device__ static ClampScale at(const kgen::RegionParams& p, int64_t c) { return ClampScale{p.epilogue.at(0, c)}; }
  __device__ __forceinline__ float value(float y, float, float) const { return fminf(fmaxf(y * w, -0.5f), 0.8f); }
  __device__ __forceinline__ void backward(float y, float, float, float dv, float& dy, float&, float&,
                                           float (&dparam)[kgen::kMaxParams]) const {
    const float u = y * w;
    const float d = (u > -0.5f && u < 0.8f) ? dv : 0.f;
    dy = d * w;
    dparam[0] += d * y;
  }
};

struct TanhGateX {  // v = tanh(y) * p0 + p1[c] * x
  static constexpr int kParams = 2;
  float gate, mix;
  __device__ static TanhGateX at(const kgen::RegionParams& p, int64_t c) {
    return TanhGateX{p.epilogue.at(0, c), p.epilogue.at(1, c)};
  }
  __device__ __forceinline__ float value(float y, float, float x) const { return tanhf(y) * gate + mix * x; }
  __device__ __forceinline__ void backward(float y, float, float x, float dv, float& dy, float&, float& dx,
                                           float (&dparam)[kgen::kMaxParams]) const {
    const float t = tanhf(y);
    dy = dv * gate * (1.f - t * t);
    dx += dv * mix;
    dparam[0] += dv * t;
    dparam[1] += dv * x;
  }
};
"""


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str        # none | channel | plane | sample | window
    op: str          # sum | mean | max | min | lse
    prologue: str    # SigmoidAffine | NoPrologue
    epilogue: str    # HardswishRes | TanhGateX | NoEpilogue
    groups: int = 0  # kGroups template argument


VARIANTS = [
    Variant("none_sig_hs", "none", "sum", "SigmoidAffine", "HardswishRes"),
    Variant("none_plain_g4", "none", "sum", "NoPrologue", "NoEpilogue", groups=4),
    Variant("plane_mean", "plane", "mean", "SigmoidAffine", "HardswishRes"),
    Variant("plane_max", "plane", "max", "NoPrologue", "TanhGateX"),
    Variant("sample_mean", "sample", "mean", "SigmoidAffine", "HardswishRes"),
    Variant("sample_lse", "sample", "lse", "NoPrologue", "TanhGateX"),
    Variant("window_max", "window", "max", "SigmoidAffine", "HardswishRes"),
    Variant("window_mean", "window", "mean", "NoPrologue", "TanhGateX"),
    Variant("window_min", "window", "min", "SigmoidAffine", "TanhGateX"),  # TanhGateX does not say kZeroGradExact
    # ClampScale: the first pass writes each window's dy, the second reads it (window_dy_from_extremes)
    Variant("window_max_clamp", "window", "max", "SigmoidAffine", "ClampScale"),
    Variant("window_min_clamp", "window", "min", "NoPrologue", "ClampScale"),
    Variant("channel_lse", "channel", "lse", "SigmoidAffine", "HardswishRes"),
    Variant("channel_min", "channel", "min", "SigmoidAffine", "HardswishRes"),
    Variant("channel_sum", "channel", "sum", "NoPrologue", "TanhGateX"),
]
BY_NAME = {v.name: v for v in VARIANTS}
# Epilogues whose functor says kZeroGradExact: a window max / min over them saves x at its extremes.
ZERO_GRAD_EXACT = {"HardswishRes", "NoEpilogue", "ClampScale"}

KIND = {"none": "kNone", "channel": "kChannel", "plane": "kPlane", "sample": "kSample", "window": "kWindow"}
OP = {"sum": "kSum", "mean": "kMean", "max": "kMax", "min": "kMin", "lse": "kLogSumExp"}
PARAM_COUNT = {"SigmoidAffine": 2, "HardswishRes": 1, "TanhGateX": 2, "ClampScale": 1, "NoPrologue": 0,
               "NoEpilogue": 0}


def _qualified(functor: str) -> str:
    return "kgen::" + functor if functor.startswith("No") else functor


# The extension is built in PARTS, each a few variants' instantiations in a load_inline module of its own: one
# translation unit of every variant took nvcc over 10 minutes (one core), the parts build side by side on as many
# cores. Tests still see one object (Harness) taking the variant's index in VARIANTS.
PARTS_OF_VARIANTS = [
    ("none_sig_hs", "none_plain_g4"),
    ("plane_mean", "plane_max", "sample_mean", "sample_lse"),
    ("window_max", "window_mean", "window_min"),
    ("window_max_clamp", "window_min_clamp"),
    ("channel_lse", "channel_min", "channel_sum"),
]
assert sorted(n for part in PARTS_OF_VARIANTS for n in part) == sorted(v.name for v in VARIANTS)


def bindings(part: int) -> str:
    """The bindings of one part: its variants numbered 0.. in PARTS_OF_VARIANTS[part]'s order."""
    lines = ["\n// ---- test bindings: one forward and one backward entry, dispatching on the variant index ----"]
    fwd_cases, bwd_cases, cluster_cases = [], [], []
    for i, name in enumerate(PARTS_OF_VARIANTS[part]):
        v = BY_NAME[name]
        targs = (f"{_qualified(v.prologue)}, {_qualified(v.epilogue)}, kgen::ReduceKind::{KIND[v.kind]}, "
                 f"kgen::ReduceOp::{OP[v.op]}, {BLOCK}, {v.groups}")
        fwd_cases.append(f"    case {i}: return kgen::region_forward_twopass<{targs}>(x, gamma, beta, pro, epi, groups, "
                         "eps, window);")
        bwd_cases.append(f"    case {i}: return kgen::region_backward_twopass<{targs}>(dout, x, gamma, beta, pro, epi, "
                         "mean, rstd, out, aux, groups, window);")
        cluster_cases.append(f"    case {i}: taken = kgen::region_backward_cluster<{targs}>(dout, x, gamma, beta, pro, "
                             "epi, mean, rstd, out, aux, groups, window, grads); break;")
    lines += [
        "std::vector<at::Tensor> region_forward(int64_t variant, at::Tensor x, c10::optional<at::Tensor> gamma_opt,",
        "    c10::optional<at::Tensor> beta_opt, std::vector<at::Tensor> pro, std::vector<at::Tensor> epi,",
        "    int64_t groups, double eps, std::vector<int64_t> window) {",
        "  const at::Tensor gamma = gamma_opt.value_or(at::Tensor()), beta = beta_opt.value_or(at::Tensor());",
        "  switch (variant) {", *fwd_cases, "  }",
        '  TORCH_CHECK(false, "kgen test: unknown variant");', "}", "",
        "std::vector<at::Tensor> region_backward(int64_t variant, at::Tensor dout, at::Tensor x,",
        "    c10::optional<at::Tensor> gamma_opt, c10::optional<at::Tensor> beta_opt, std::vector<at::Tensor> pro,",
        "    std::vector<at::Tensor> epi, at::Tensor mean, at::Tensor rstd, c10::optional<at::Tensor> out_opt,",
        "    c10::optional<at::Tensor> aux_opt, int64_t groups, std::vector<int64_t> window) {",
        "  const at::Tensor gamma = gamma_opt.value_or(at::Tensor()), beta = beta_opt.value_or(at::Tensor());",
        "  const at::Tensor out = out_opt.value_or(at::Tensor()), aux = aux_opt.value_or(at::Tensor());",
        "  switch (variant) {", *bwd_cases, "  }",
        '  TORCH_CHECK(false, "kgen test: unknown variant");', "}", "",
        "// the cluster backward (groupnorm/cluster/cluster.cuh), an error where it declines the shape",
        "std::vector<at::Tensor> region_backward_cluster(int64_t variant, at::Tensor dout, at::Tensor x,",
        "    c10::optional<at::Tensor> gamma_opt, c10::optional<at::Tensor> beta_opt, std::vector<at::Tensor> pro,",
        "    std::vector<at::Tensor> epi, at::Tensor mean, at::Tensor rstd, c10::optional<at::Tensor> out_opt,",
        "    c10::optional<at::Tensor> aux_opt, int64_t groups, std::vector<int64_t> window) {",
        "  const at::Tensor gamma = gamma_opt.value_or(at::Tensor()), beta = beta_opt.value_or(at::Tensor());",
        "  const at::Tensor out = out_opt.value_or(at::Tensor()), aux = aux_opt.value_or(at::Tensor());",
        "  std::vector<at::Tensor> grads;",
        "  bool taken = false;",
        "  switch (variant) {", *cluster_cases,
        '    default: TORCH_CHECK(false, "kgen test: unknown variant");', "  }",
        '  TORCH_CHECK(taken, "kgen test: the cluster backward declined this shape");',
        "  return grads;", "}", "",
        "// pipeline_mode (groupnorm/twopass/backward_host.cuh): -1 as planned, 0 the sweeps, 1 the pipelined kernel,",
        "// 2 the pipelined kernel at the smallest lag",
        "void set_backward_pipeline(int64_t mode) { kgen::region_twopass::pipeline_mode().store(static_cast<int>(mode)); }",
        "// cluster_forward_mode (groupnorm/cluster/cluster.cuh): -1 as planned, 0 the sweeps, 1 clusters wherever feasible",
        "void set_forward_cluster(int64_t mode) { kgen::region_cluster::cluster_forward_mode().store(static_cast<int>(mode)); }",
    ]
    return "\n".join(lines) + "\n"


CPP_SOURCE = r"""
std::vector<at::Tensor> region_forward(int64_t variant, at::Tensor x, c10::optional<at::Tensor> gamma_opt,
    c10::optional<at::Tensor> beta_opt, std::vector<at::Tensor> pro, std::vector<at::Tensor> epi,
    int64_t groups, double eps, std::vector<int64_t> window);
std::vector<at::Tensor> region_backward(int64_t variant, at::Tensor dout, at::Tensor x,
    c10::optional<at::Tensor> gamma_opt, c10::optional<at::Tensor> beta_opt, std::vector<at::Tensor> pro,
    std::vector<at::Tensor> epi, at::Tensor mean, at::Tensor rstd, c10::optional<at::Tensor> out_opt,
    c10::optional<at::Tensor> aux_opt, int64_t groups, std::vector<int64_t> window);
std::vector<at::Tensor> region_backward_cluster(int64_t variant, at::Tensor dout, at::Tensor x,
    c10::optional<at::Tensor> gamma_opt, c10::optional<at::Tensor> beta_opt, std::vector<at::Tensor> pro,
    std::vector<at::Tensor> epi, at::Tensor mean, at::Tensor rstd, c10::optional<at::Tensor> out_opt,
    c10::optional<at::Tensor> aux_opt, int64_t groups, std::vector<int64_t> window);
void set_backward_pipeline(int64_t mode);
void set_forward_cluster(int64_t mode);
"""
FUNCTIONS = ["region_forward", "region_backward", "region_backward_cluster", "set_backward_pipeline",
             "set_forward_cluster"]


def cuda_source(part: int) -> str:
    return "\n".join((CUDA_DIR / name).read_text() for name in PARTS) + FUNCTORS + bindings(part)


def build_part(part: int, verbose: bool = False):
    """Builds (or reuses) one part's extension; its name carries a hash of its sources."""
    from torch.utils.cpp_extension import load_inline

    source = cuda_source(part)
    digest = hashlib.sha256((CPP_SOURCE + source).encode()).hexdigest()[:16]
    return load_inline(
        name=f"kgen_test_gn_region_twopass_{part}_{digest}",
        cpp_sources=CPP_SOURCE,
        cuda_sources=source,
        functions=FUNCTIONS,
        extra_cuda_cflags=["-O3"],
        verbose=verbose or bool(os.environ.get("KGEN_VERBOSE_BUILD")),
    )


class Harness:
    """The parts as one extension: region_forward / region_backward / region_backward_cluster take the variant's
    index in VARIANTS; the mode setters set every part's (each extension keeps its own statics)."""

    def __init__(self, modules):
        self._modules = modules
        self._where = {}
        for part, names in enumerate(PARTS_OF_VARIANTS):
            for local, name in enumerate(names):
                self._where[VARIANTS.index(BY_NAME[name])] = (part, local)

    def _route(self, entry: str, variant: int, *args):
        if variant not in self._where:
            raise RuntimeError(f"kgen test: unknown variant {variant}")
        part, local = self._where[variant]
        return getattr(self._modules[part], entry)(local, *args)

    def region_forward(self, variant, *args):
        return self._route("region_forward", variant, *args)

    def region_backward(self, variant, *args):
        return self._route("region_backward", variant, *args)

    def region_backward_cluster(self, variant, *args):
        return self._route("region_backward_cluster", variant, *args)

    def set_backward_pipeline(self, mode: int) -> None:
        for module in self._modules:
            module.set_backward_pipeline(mode)

    def set_forward_cluster(self, mode: int) -> None:
        for module in self._modules:
            module.set_forward_cluster(mode)


_BUILD_ONE = "import sys; sys.path.insert(0, sys.argv[1]); from tests.gpu import region_harness_twopass as H; " \
             "H.build_part(int(sys.argv[2]))"


def build_extension(verbose: bool = False) -> Harness:
    """Builds (or reuses) every part, side by side in child processes (each load_inline is one nvcc at a time),
    then loads them here; a part's build error is raised with its output."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[2])
    children = [subprocess.Popen([sys.executable, "-c", _BUILD_ONE, root, str(part)], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True) for part in range(len(PARTS_OF_VARIANTS))]
    for part, child in enumerate(children):
        output, _ = child.communicate()
        if child.returncode != 0:
            raise RuntimeError(f"kgen test: harness part {part} failed to build:\n{output[-4000:]}")
    return Harness([build_part(part, verbose) for part in range(len(PARTS_OF_VARIANTS))])


# ---------------------------------------------------------------- PyTorch reference (any dtype)

def prologue_ref(name, x, params):
    if name == "NoPrologue":
        return x
    bias, scale = (p.reshape(-1) for p in params)
    shape = (1, -1) + (1,) * (x.dim() - 2)
    return torch.sigmoid((x + bias.reshape(shape)) * scale.reshape(shape))


def epilogue_ref(name, y, z, x, params):
    shape = (1, -1) + (1,) * (x.dim() - 2)
    if name == "NoEpilogue":
        return y
    if name == "HardswishRes":
        (w,) = params
        return F.hardswish(y) * w.reshape(-1).reshape(shape) + z
    if name == "ClampScale":
        (w,) = params
        return torch.clamp(y * w.reshape(-1).reshape(shape), -0.5, 0.8)
    gate, mix = (p.reshape(-1) for p in params)
    return torch.tanh(y) * gate.reshape(shape if gate.numel() > 1 else ()) + mix.reshape(shape) * x


def to_rows(v, kind, window):
    """v (N, C, *spatial) -> (outputs, extent), each row one output's values in the reduction's order."""
    n, c = v.shape[:2]
    spatial = v.shape[2:]
    if kind == "plane":
        return v.reshape(n * c, -1)
    if kind == "sample":
        return v.reshape(n, -1)
    if kind == "channel":
        return v.reshape(n, c, -1).transpose(1, 2).reshape(-1, c)
    if kind == "window":
        dims = len(spatial)
        pooled = [s // k for s, k in zip(spatial, window)]
        crop = v[(slice(None), slice(None)) + tuple(slice(0, p * k) for p, k in zip(pooled, window))]
        split = [n, c]
        for p, k in zip(pooled, window):
            split += [p, k]
        t = crop.reshape(split)
        order = [0, 1] + [2 + 2 * d for d in range(dims)] + [3 + 2 * d for d in range(dims)]
        return t.permute(order).reshape(-1, int(torch.tensor(window).prod()))
    raise ValueError(kind)


def out_shape(x_shape, kind, window):
    n, c, *spatial = x_shape
    return {"none": tuple(x_shape), "plane": (n, c), "sample": (n,), "channel": (n, *spatial),
            "window": (n, c, *[s // k for s, k in zip(spatial, window)])}[kind]


def region_ref(variant, x, gamma, beta, pro, epi, groups, eps, window, choice=None):
    """Forward of the region in x's dtype. `choice` ((outputs,) long): for max/min, the in-row position to
    route the result (and the gradient) through; torch's own argmax/argmin if None. Returns (out, rows, pos)."""
    z = prologue_ref(variant.prologue, x, pro)
    y = F.group_norm(z, groups, gamma, beta, eps)
    v = epilogue_ref(variant.epilogue, y, z, x, epi)
    if variant.kind == "none":
        return v, None, None
    rows = to_rows(v, variant.kind, window)
    shape = out_shape(x.shape, variant.kind, window)
    if variant.op in ("sum", "mean"):
        red = rows.sum(1) if variant.op == "sum" else rows.mean(1)
        return red.reshape(shape), rows, None
    if variant.op == "lse":
        return torch.logsumexp(rows, 1).reshape(shape), rows, None
    pos = (rows.argmax(1) if variant.op == "max" else rows.argmin(1)) if choice is None else choice
    return rows.gather(1, pos[:, None]).reshape(shape), rows, pos
