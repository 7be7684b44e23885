"""A region's host time a call, piece by piece, against eager's GroupNorm + SiLU (README.md here). Run from the repository
root on the GPU machine, the files emitted into .devrun/ first (mlp_tiny.py, vae_tiny.py: kgen emit --ref tests/corpus/...)."""
import statistics, sys, time
import torch
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline
sys.path.insert(0, ".")
from kgen.bench.host_profile import load

NOOP = r"""
#include <torch/extension.h>
std::vector<at::Tensor> fwd(at::Tensor x, c10::optional<at::Tensor> weight, c10::optional<at::Tensor> bias, std::vector<at::Tensor> prologue, std::vector<at::Tensor> epilogue, int64_t groups, double eps, std::vector<int64_t> window, bool for_backward, int64_t rounding, bool faithful) {
  return {x, x, x, at::Tensor()};
}
std::vector<at::Tensor> bwd(at::Tensor dout, at::Tensor x, c10::optional<at::Tensor> weight, c10::optional<at::Tensor> bias, std::vector<at::Tensor> prologue, std::vector<at::Tensor> epilogue, at::Tensor mean, at::Tensor rstd, at::Tensor out, c10::optional<at::Tensor> aux, int64_t groups, std::vector<int64_t> window, int64_t rounding, bool faithful) {
  return {x, weight.value(), weight.value(), x, x};
}
std::vector<at::Tensor> sel(at::Tensor s) { return {s[0], s[1], s.narrow(0, 2, 0).contiguous(), s.narrow(0, 2, 0).contiguous()}; }
void nothing() {}
"""
noop = load_inline("kgen_noop_sig", cpp_sources=NOOP, functions=["fwd", "bwd", "sel", "nothing"], verbose=False)


def issue(fn, calls):
    fn(); torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    e = time.perf_counter() - t
    torch.cuda.synchronize()
    return e / calls * 1e6


def rounds(title, cases, n=11, calls=200):
    res = {k: [] for k in cases}
    for _ in range(n):
        for k, fn in cases.items():
            res[k].append(issue(fn, calls))
    print(f"== {title}")
    for k, v in res.items():
        print(f"   {k:44s} {statistics.median(v):8.2f} us  (min {min(v):7.2f})")


class Noop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, groups, eps, window, for_backward):
        ctx.save_for_backward(x, w, b)
        return torch.empty_like(x)

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        return g, None, None, None, None, None, None


def region(path, shape, groups, eps, faithful):
    m = load(path, path.replace("/", "_").replace(".", "_"))
    dev = "cuda"
    h = torch.randn(*shape, device=dev)
    C = shape[1]
    N = shape[0]
    hw = h[0, 0].numel()
    w = torch.randn(C, device=dev, requires_grad=True)
    b = torch.randn(C, device=dev, requires_grad=True)
    hg = h.clone().requires_grad_(True)
    g = torch.randn_like(h)
    torch.backends.cudnn.allow_tf32 = faithful
    torch.backends.cuda.matmul.allow_tf32 = faithful
    out, mean, rstd, aux = m._ext.region0_forward(h, w, b, [], [], groups, eps, [], True, 0, faithful)
    gmean, grstd = torch.native_group_norm(h, w, b, N, C, hw, groups, eps)[1:]
    ng = torch.no_grad

    def eager_nograd():
        with ng():
            F.silu(F.group_norm(h, groups, w, b, eps))

    def native_nograd():
        with ng():
            torch.native_group_norm(h, w, b, N, C, hw, groups, eps)

    def raw_fwd():
        with ng():
            m._ext.region0_forward(h, w, b, [], [], groups, eps, [], False, 0, faithful)

    def noop_fwd():
        with ng():
            noop.fwd(h, w, b, [], [], groups, eps, [], False, 0, faithful)

    def call_nograd():
        with ng():
            m._call(m._Region0, h, w, b, groups, eps, (), False)

    def eager_grad_fwd():
        F.silu(F.group_norm(hg, groups, w, b, eps))

    def kgen_grad_fwd():
        m._Region0.apply(hg, w, b, groups, eps, (), True)

    def noopfn_grad_fwd():
        Noop.apply(hg, w, b, groups, eps, (), True)

    def eager_fb():
        torch.autograd.backward([F.silu(F.group_norm(hg, groups, w, b, eps))], [g])

    def kgen_fb():
        torch.autograd.backward([m._Region0.apply(hg, w, b, groups, eps, (), True)], [g])

    def noopfn_fb():
        torch.autograd.backward([Noop.apply(hg, w, b, groups, eps, (), True)], [g])

    def native_bwd():
        torch.ops.aten.native_group_norm_backward(g, h, gmean, grstd, w, N, C, hw, groups, [True, True, True])
        torch.ops.aten.silu_backward(g, h)

    def raw_bwd():
        m._ext.region0_backward(g, h, w, b, [], [], mean, rstd, out, aux, groups, [], 0, faithful)

    def noop_bwd():
        noop.bwd(g, h, w, b, [], [], mean, rstd, out, aux, groups, [], 0, faithful)

    sums = torch.randn(2, C, device=dev)
    title = f"{path} region0 {tuple(shape)} G={groups} faithful={faithful}"
    rounds(title + ": forward, no grad", {"eager F.silu(F.group_norm)": eager_nograd, "torch.native_group_norm": native_nograd,
                                          "kgen _ext.region0_forward": raw_fwd, "pybind no-op, same signature": noop_fwd,
                                          "kgen _call (Function bypassed)": call_nograd})
    rounds(title + ": forward, grad mode (graph recorded)", {"eager": eager_grad_fwd, "kgen _Region0.apply": kgen_grad_fwd,
                                                             "no-op Python Function": noopfn_grad_fwd})
    rounds(title + ": backward entry points alone", {"native_group_norm_backward + silu_backward": native_bwd,
                                                     "kgen _ext.region0_backward": raw_bwd,
                                                     "pybind no-op, same signature": noop_bwd,
                                                     "select x2, narrow+contiguous x2": lambda: noop.sel(sums),
                                                     "pybind nothing()": noop.nothing})
    rounds(title + ": forward+backward (torch.autograd.backward)", {"eager": eager_fb, "kgen": kgen_fb,
                                                                     "no-op Python Function": noopfn_fb})


def model(path, ref):
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = False
    m = load(path, "kgen_" + path.replace("/", "_").replace(".", "_"))
    r = load(ref, "ref_" + ref.replace("/", "_").replace(".", "_"))
    torch.manual_seed(0)
    a = r.Model(*r.get_init_inputs()).cuda()
    torch.manual_seed(0)
    k = m.ModelNew(*r.get_init_inputs()).cuda()
    x = [t.cuda() for t in r.get_inputs()]
    xg = [t.clone().requires_grad_(True) for t in x]
    g = torch.randn_like(a(*x))

    def nograd(mod):
        def f():
            with torch.no_grad():
                mod(*x)
        return f

    def fb(mod):
        return lambda: torch.autograd.backward([mod(*xg)], [g])

    rounds(f"{ref}: whole model", {"eager forward": nograd(a), "kgen forward": nograd(k),
                                   "eager forward+backward": fb(a), "kgen forward+backward": fb(k)})


if __name__ == "__main__":
    region(".devrun/mlp_tiny.py", (16, 256), 8, 1e-5, False)
    region(".devrun/vae_tiny.py", (2, 64, 8, 8), 8, 1e-6, True)
    region(".devrun/vae_tiny.py", (2, 64, 8, 8), 8, 1e-6, False)
    model(".devrun/mlp_tiny.py", "tests/corpus/mlp_groupnorm_tiny.py")
    model(".devrun/vae_tiny.py", "tests/corpus/vae_decoder_up_tiny.py")
