"""The resident GroupNorm-region kernels (kgen/templates/cuda/groupnorm/resident/resident.cuh) built as ONE load_inline
extension with hand-written functors of the kind kgen generates, a float64 PyTorch reference of every
instantiation, and a benchmark (`python -m tests.gpu.region_harness_resident`: kNone forward and backward
against F.group_norm, per call with CUDA events, back-to-back, and kernel time from torch.profiler).

Instantiations (name: prologue, epilogue, reduction):
  none_plain     identity, identity, kNone (kGroups = 16: G = 16 runs the specialised kernels)
  none_fused     mish(hardtanh(x + p0[c])), swish(swish(y) * p0[c]), kNone
  channel_min    mish(hardtanh(x + p0[c])), z + hardswish(tanh(y)), kChannel min
  channel_lse    identity, z + hardswish(tanh(y)), kChannel logsumexp
  sample_mean    mish(hardtanh(x + p0[c])), swish(swish(y) * p0[c]), kSample mean
  plane_mean     identity, swish(swish(y) * p0[c]), kPlane mean
  window_max     mish(hardtanh(x + p0[c])), identity, kWindow max
  plane_max_xres mish(hardtanh(x + p0[c])), y * p0[c] + x (a residual of x), kPlane max
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import torch
import torch.nn.functional as F

from kgen.ref.emit import REGION_BASE_PARTS, RESIDENT_PARTS
from tests.gpu.timing import median_ms

ROOT = Path(__file__).resolve().parents[2]
CUDA_DIR = ROOT / "kgen" / "templates" / "cuda"
HEADERS = [*REGION_BASE_PARTS, *RESIDENT_PARTS]

FUNCTORS = r"""
// ---- functors as kgen generates them
struct MishHardtanhBias {  // z = mish(hardtanh(x + p0[c]))
  static constexpr int kParams = 1;
  float b;
  __device__ static MishHardtanhBias at(const kgen::RegionParams& p, int64_t c) { return {p.prologue.at(0, c)}; }
  __device__ __forceinline__ float value(float x) const {
    const float h = fminf(fmaxf(x + b, -1.f), 1.f);
    return h * tanhf(log1pf(expf(h)));
  }
  __device__ __forceinline__ float backward(float x, float dz, float (&dparam)[kgen::kMaxParams]) const {
    const float u = x + b;
    const float h = fminf(fmaxf(u, -1.f), 1.f);
    const float t = tanhf(log1pf(expf(h)));
    const float sig = 1.f / (1.f + expf(-h));
    const float d = (u > -1.f && u < 1.f) ? dz * (t + h * sig * (1.f - t * t)) : 0.f;
    dparam[0] += d;
    return d;
  }
};

struct SwishSwishScale {  // v = swish(swish(y) * p0[c])
  static constexpr int kParams = 1;
  float p;
  __device__ static SwishSwishScale at(const kgen::RegionParams& rp, int64_t c) { return {rp.epilogue.at(0, c)}; }
  __device__ __forceinline__ float value(float y, float, float) const {
    const float t = y / (1.f + expf(-y));
    const float a = t * p;
    return a / (1.f + expf(-a));
  }
  __device__ __forceinline__ void backward(float y, float, float, float dv, float& dy, float&, float&,
                                           float (&dparam)[kgen::kMaxParams]) const {
    const float s1 = 1.f / (1.f + expf(-y));
    const float t = y * s1;
    const float a = t * p;
    const float s2 = 1.f / (1.f + expf(-a));
    const float da = dv * (s2 + a * s2 * (1.f - s2));
    dparam[0] += da * t;
    dy = da * p * (s1 + y * s1 * (1.f - s1));
  }
};

struct ResidualZTanhHardswish {  // v = z + hardswish(tanh(y))
  static constexpr int kParams = 0;
  __device__ static ResidualZTanhHardswish at(const kgen::RegionParams&, int64_t) { return {}; }
  __device__ __forceinline__ float value(float y, float z, float) const {
    const float t = tanhf(y);
    return z + t * fminf(fmaxf(t + 3.f, 0.f), 6.f) * (1.f / 6.f);
  }
  __device__ __forceinline__ void backward(float y, float, float, float dv, float& dy, float& dz, float&,
                                           float (&)[kgen::kMaxParams]) const {
    const float t = tanhf(y);
    const float dh = t < -3.f ? 0.f : (t <= 3.f ? t * (1.f / 3.f) + 0.5f : 1.f);
    dy = dv * dh * (1.f - t * t);
    dz += dv;
  }
};

struct ScaleResidualX {  // v = y * p0[c] + x
  static constexpr int kParams = 1;
  float p;
  __device__ static ScaleResidualX at(const kgen::RegionParams& rp, int64_t c) { return {rp.epilogue.at(0, c)}; }
  __device__ __forceinline__ float value(float y, float, float x) const { return y * p + x; }
  __device__ __forceinline__ void backward(float y, float, float, float dv, float& dy, float&, float& dx,
                                           float (&dparam)[kgen::kMaxParams]) const {
    dy = dv * p;
    dx += dv;
    dparam[0] += dv * y;
  }
};
"""

# name -> (prologue, epilogue, ReduceKind, ReduceOp, kGroups)
INSTANCES = {
    "none_plain": ("kgen::NoPrologue", "kgen::NoEpilogue", "kNone", "kSum", 16),
    "none_fused": ("MishHardtanhBias", "SwishSwishScale", "kNone", "kSum", 0),
    "channel_min": ("MishHardtanhBias", "ResidualZTanhHardswish", "kChannel", "kMin", 0),
    "channel_lse": ("kgen::NoPrologue", "ResidualZTanhHardswish", "kChannel", "kLogSumExp", 0),
    "sample_mean": ("MishHardtanhBias", "SwishSwishScale", "kSample", "kMean", 0),
    "plane_mean": ("kgen::NoPrologue", "SwishSwishScale", "kPlane", "kMean", 0),
    "window_max": ("MishHardtanhBias", "kgen::NoEpilogue", "kWindow", "kMax", 0),
    "plane_max_xres": ("MishHardtanhBias", "ScaleResidualX", "kPlane", "kMax", 0),
}
KINDS = ["kNone", "kChannel", "kPlane", "kSample", "kWindow"]
BLOCK = 256

_FORWARD_ARGS = ("torch::Tensor x, c10::optional<torch::Tensor> gamma, c10::optional<torch::Tensor> beta, "
                 "std::vector<torch::Tensor> pp, std::vector<torch::Tensor> ep, int64_t groups, double eps, "
                 "std::vector<int64_t> window")
_BACKWARD_ARGS = ("torch::Tensor dout, torch::Tensor x, c10::optional<torch::Tensor> gamma, "
                  "c10::optional<torch::Tensor> beta, std::vector<torch::Tensor> pp, std::vector<torch::Tensor> ep, "
                  "torch::Tensor mean, torch::Tensor rstd, c10::optional<torch::Tensor> out, "
                  "c10::optional<torch::Tensor> aux, int64_t groups, std::vector<int64_t> window")


def _bindings() -> tuple[str, str, list[str]]:
    cuda = [FUNCTORS, "static at::Tensor opt(const c10::optional<at::Tensor>& t) { return t ? *t : at::Tensor(); }"]
    cpp = []
    names = []
    for name, (pro, epi, kind, op, groups) in INSTANCES.items():
        targs = f"{pro}, {epi}, kgen::ReduceKind::{kind}, kgen::ReduceOp::{op}, {BLOCK}, {groups}"
        cuda.append(
            f"std::vector<at::Tensor> {name}_forward({_FORWARD_ARGS}) {{\n"
            f"  return kgen::region_forward_resident<{targs}>(x, opt(gamma), opt(beta), pp, ep, groups, eps,\n"
            f"                                                  window);\n}}\n"
            f"std::vector<at::Tensor> {name}_backward({_BACKWARD_ARGS}) {{\n"
            f"  return kgen::region_backward_resident<{targs}>(dout, x, opt(gamma), opt(beta), pp, ep, mean, rstd,\n"
            f"                                                   opt(out), opt(aux), groups, window);\n}}\n")
        cpp.append(f"std::vector<torch::Tensor> {name}_forward({_FORWARD_ARGS});")
        cpp.append(f"std::vector<torch::Tensor> {name}_backward({_BACKWARD_ARGS});")
        names += [f"{name}_forward", f"{name}_backward"]
    for kind in KINDS:
        for decision in ("fits", "pays"):
            cuda.append(f"bool {decision}_{kind}(torch::Tensor x, int64_t groups) {{\n"
                        f"  return kgen::region_resident_{decision}<kgen::ReduceKind::{kind}>(x, groups);\n}}\n")
            cpp.append(f"bool {decision}_{kind}(torch::Tensor x, int64_t groups);")
            names.append(f"{decision}_{kind}")
        cuda.append(f"int64_t slab_parts_{kind}(torch::Tensor x, int64_t groups, int64_t k) {{\n"
                    f"  using namespace kgen::resident_detail;\n"
                    f"  const kgen::ResidentPlan p = slab_plan<kgen::ReduceKind::{kind}>(region_dims(x), groups,\n"
                    f"      std::vector<int64_t>(x.dim() - 2, 1), {BLOCK}, 4, static_cast<int>(k), smem_budget(x));\n"
                    f"  return p.feasible ? p.parts : 0;\n}}\n")
        cpp.append(f"int64_t slab_parts_{kind}(torch::Tensor x, int64_t groups, int64_t k);")
        names.append(f"slab_parts_{kind}")
    cuda.append("int64_t rows_lanes(torch::Tensor x, int64_t groups) {\n"
                "  return kgen::rows_lanes(x.size(1), x.numel() / (x.size(0) * x.size(1)), groups);\n}\n")
    cpp.append("int64_t rows_lanes(torch::Tensor x, int64_t groups);")
    names.append("rows_lanes")
    cuda.append("int64_t rows_backward_lanes(torch::Tensor x, int64_t groups) {\n"
                "  return kgen::resident_detail::rows_backward_lanes(x.size(1), x.numel() / (x.size(0) * x.size(1)),"
                f" groups, {BLOCK});\n}}\n")
    cpp.append("int64_t rows_backward_lanes(torch::Tensor x, int64_t groups);")
    names.append("rows_backward_lanes")
    cuda.append("bool rows_reduce_applies(torch::Tensor x, int64_t groups) {\n"
                "  const int lanes = kgen::rows_lanes(x.size(1), x.numel() / (x.size(0) * x.size(1)), groups);\n"
                "  return kgen::resident_detail::rows_reduce_applies(groups, lanes);\n}\n")
    cpp.append("bool rows_reduce_applies(torch::Tensor x, int64_t groups);")
    names.append("rows_reduce_applies")
    return "\n".join(cpp), "\n".join(cuda), names


def cuda_source() -> str:
    parts = ["#include <torch/extension.h>"] + [(CUDA_DIR / h).read_text() for h in HEADERS]
    return "\n".join(parts) + "\n" + _bindings()[1]


_EXT = None


def extension():
    """Builds (once per process; ninja reuses an unchanged build) and returns the extension."""
    global _EXT
    if _EXT is None:
        from torch.utils.cpp_extension import load_inline

        cpp, _, names = _bindings()
        cuda = cuda_source()
        digest = hashlib.sha256((cpp + cuda).encode()).hexdigest()[:12]
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
        _EXT = load_inline(name="kgen_region_resident_" + digest, cpp_sources=cpp, cuda_sources=cuda,
                           functions=names, extra_cuda_cflags=["-O3"],
                           verbose=bool(os.environ.get("KGEN_VERBOSE_BUILD")))
    return _EXT


# ---------------------------------------------------------------- float64 reference

def _per_channel(p, ndim):
    return p.view((1, -1) + (1,) * (ndim - 2)) if p.numel() > 1 else p.view(())


def prologue_ref(name, x, pp):
    if name == "kgen::NoPrologue":
        return x
    h = F.hardtanh(x + _per_channel(pp[0], x.dim()))
    return F.mish(h)


def epilogue_ref(name, y, z, x, ep):
    if name == "kgen::NoEpilogue":
        return y
    if name == "SwishSwishScale":
        return F.silu(F.silu(y) * _per_channel(ep[0], y.dim()))
    if name == "ResidualZTanhHardswish":
        return z + F.hardswish(torch.tanh(y))
    if name == "ScaleResidualX":
        return y * _per_channel(ep[0], y.dim()) + x
    raise KeyError(name)


def _windows(v, window):
    """(N, C, *pooled, window_elems): each window's values in scan order d, h, w."""
    n, c = v.shape[:2]
    spatial = v.shape[2:]
    dims = len(spatial)
    pooled = [s // k for s, k in zip(spatial, window)]
    v = v[(slice(None), slice(None)) + tuple(slice(0, p * k) for p, k in zip(pooled, window))]
    shape = [n, c]
    for p, k in zip(pooled, window):
        shape += [p, k]
    v = v.reshape(shape)
    order = [0, 1] + [2 + 2 * i for i in range(dims)] + [3 + 2 * i for i in range(dims)]
    return v.permute(order).reshape([n, c] + pooled + [-1])


def reduce_ref(kind, op, v, window, positions=None):
    """out and, for max/min, the positions (aux); `positions` given, max/min take the values there instead."""
    if kind == "kNone":
        return v, None
    if kind == "kChannel":
        t, dim = v, 1
    elif kind == "kPlane":
        t, dim = v.reshape(v.shape[0], v.shape[1], -1), 2
    elif kind == "kSample":
        t, dim = v.reshape(v.shape[0], -1), 1
    else:
        t, dim = _windows(v, window), -1
    if op == "kSum":
        return t.sum(dim), None
    if op == "kMean":
        return t.mean(dim), None
    if op == "kLogSumExp":
        return torch.logsumexp(t, dim), None
    if positions is not None:
        return t.gather(dim, positions.long().unsqueeze(dim)).squeeze(dim), positions.long()
    r = t.max(dim) if op == "kMax" else t.min(dim)
    return r.values, r.indices


def reference(name, x, gamma, beta, pp, ep, groups, eps, window, dout, positions=None):
    """float64 outputs, aux and gradients {x, gamma, beta, pp..., ep...} of instance `name` (max/min: at
    `positions` where given)."""
    pro, epi, kind, op, _ = INSTANCES[name]
    inputs = [x] + ([gamma, beta] if gamma is not None else []) + pp + ep
    leaves = [t.detach().double().requires_grad_() for t in inputs]
    x64 = leaves[0]
    rest = leaves[1:]
    g64, b64 = (rest[0], rest[1]) if gamma is not None else (None, None)
    rest = rest[2:] if gamma is not None else rest
    pp64, ep64 = rest[:len(pp)], rest[len(pp):]
    z = prologue_ref(pro, x64, pp64)
    y = F.group_norm(z, groups, g64, b64, eps)
    v = epilogue_ref(epi, y, z, x64, ep64)
    out, aux = reduce_ref(kind, op, v, window, positions)
    grads = torch.autograd.grad(out, leaves, dout.double(), allow_unused=True)
    grads = [g if g is not None else torch.zeros_like(l) for g, l in zip(grads, leaves)]
    return out.detach(), aux, grads


def run_kernels(name, x, gamma, beta, pp, ep, groups, eps, window, dout):
    """Forward and backward through the extension: (out, aux, mean, rstd, grads in reference's order, raw)."""
    ext = extension()
    fwd = getattr(ext, f"{name}_forward")
    bwd = getattr(ext, f"{name}_backward")
    out, mean, rstd, aux = fwd(x, gamma, beta, pp, ep, groups, eps, window)
    dx, dgamma, dbeta, dpro, depi = bwd(dout, x, gamma, beta, pp, ep, mean, rstd, out, aux, groups, window)
    grads = [dx] + ([dgamma, dbeta] if gamma is not None else [])
    for k, p in enumerate(pp):
        grads.append(dpro[k] if p.numel() > 1 else dpro[k].sum().view(p.shape))
    for k, p in enumerate(ep):
        grads.append(depi[k] if p.numel() > 1 else depi[k].sum().view(p.shape))
    return out, aux, mean, rstd, grads, (dx, dgamma, dbeta, dpro, depi)


# ---------------------------------------------------------------- benchmark

def _time_stream(fn, calls=20, reps=11):
    """Median over reps of (events around `calls` back-to-back calls) / calls: the GPU never waits on the host."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    times.sort()
    return times[len(times) // 2]


def _kernel_time(fn, iters=20):
    """Mean GPU kernel time per call (torch.profiler), in ms; None if the profiler is unavailable."""
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(iters):
                fn()
            torch.cuda.synchronize()
        total = sum(e.time_range.elapsed_us() for e in prof.events() if e.device_type == DeviceType.CUDA)
        return total / iters / 1e3 if total else None
    except Exception as error:  # noqa: BLE001 - a measurement aid only
        print("profiler unavailable:", error)
        return None


def _report(label, nbytes, fn):
    single, stream, kernel = median_ms(fn, iters=50, warmup=10), _time_stream(fn), _kernel_time(fn)
    kernel_text = f"kernels {kernel * 1e3:7.1f} us ({nbytes / kernel / 1e6:5.0f} GB/s)" if kernel else "kernels ?"
    print(f"  {label:34s} single call {single * 1e3:7.1f} us ({nbytes / single / 1e6:5.0f} GB/s)   "
          f"back-to-back {stream * 1e3:7.1f} us ({nbytes / stream / 1e6:5.0f} GB/s)   {kernel_text}")
    return single, stream, kernel


def bench():
    ext = extension()
    torch.manual_seed(0)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}; GB/s = bytes of x read + out written")
    for shape, groups in [((1024, 8192), 16), ((1024, 8192), 512), ((1024, 8192), 1), ((4096, 8192), 16),
                          ((32768, 4096), 64), ((512, 128, 17, 17), 8)]:   # (32768, 4096) G=64: L2-37's
        x = torch.randn(shape, device="cuda")
        c = shape[1]
        gamma = torch.randn(c, device="cuda")
        beta = torch.randn(c, device="cuda")
        nbytes = 2 * x.numel() * 4
        err = (ext.none_plain_forward(x, gamma, beta, [], [], groups, 1e-5, [])[0] -
               F.group_norm(x, groups, gamma, beta, 1e-5)).abs().max().item()
        print(f"x {tuple(shape)} G={groups} kNone forward (max|diff| vs F.group_norm {err:.1e}):")
        ours = _report("kgen resident", nbytes,
                       lambda: ext.none_plain_forward(x, gamma, beta, [], [], groups, 1e-5, []))
        theirs = _report("F.group_norm", nbytes, lambda: F.group_norm(x, groups, gamma, beta, 1e-5))
        print(f"  speed-up: single call {theirs[0] / ours[0]:.2f}x, back-to-back {theirs[1] / ours[1]:.2f}x")
        dout = torch.randn_like(x)
        fw = ext.none_plain_forward(x, gamma, beta, [], [], groups, 1e-5, [])
        xr = x.clone().requires_grad_()
        gr, br = gamma.clone().requires_grad_(), beta.clone().requires_grad_()
        yr = F.group_norm(xr, groups, gr, br, 1e-5)
        _report("backward kgen (dx, dgamma, dbeta)", 3 * x.numel() * 4,
                lambda: ext.none_plain_backward(dout, x, gamma, beta, [], [], fw[1], fw[2], None, None, groups, []))
        _report("backward PyTorch autograd", 3 * x.numel() * 4,
                lambda: torch.autograd.grad(yr, [xr, gr, br], dout, retain_graph=True))
    for name, groups, shape in [("none_fused", 16, (1024, 8192)), ("channel_lse", 16, (1024, 8192)),
                                ("sample_mean", 512, (1024, 8192)), ("plane_mean", 16, (1024, 8192)),
                                ("none_fused", 64, (32768, 4096))]:
        x = torch.randn(shape, device="cuda")
        c = shape[1]
        gamma, beta = torch.randn(c, device="cuda"), torch.randn(c, device="cuda")
        pro, epi = INSTANCES[name][:2]
        pp = [torch.randn(c, device="cuda")] if pro != "kgen::NoPrologue" else []
        ep = [torch.randn(c, device="cuda")] if epi in ("SwishSwishScale", "ScaleResidualX") else []
        fwd, bwd = getattr(ext, f"{name}_forward"), getattr(ext, f"{name}_backward")
        nbytes = x.numel() * 4 * (2 if INSTANCES[name][2] == "kNone" else 1)
        _report(f"{name} {shape} G={groups} fwd", nbytes, lambda: fwd(x, gamma, beta, pp, ep, groups, 1e-5, []))
        if INSTANCES[name][2] == "kNone":
            fw = fwd(x, gamma, beta, pp, ep, groups, 1e-5, [])
            dout = torch.randn_like(x)
            _report(f"{name} {shape} G={groups} bwd", 3 * x.numel() * 4,
                    lambda: bwd(dout, x, gamma, beta, pp, ep, fw[1], fw[2], None, None, groups, []))


if __name__ == "__main__":
    bench()
