"""The autograd engine's cost of a Python node against a C++ node, and kgen's region both ways (us a call). Its cpp rows
(nodes.log) are the node built on torch::autograd::Function, which ref/autograd.cpp.j2 no longer uses; the files in .devrun/
as README.md says."""
import statistics, sys, time
import torch
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline
sys.path.insert(0, ".")
from kgen.bench.host_profile import load

NODE = r"""
#include <torch/extension.h>
struct NoopNode : public torch::autograd::Function<NoopNode> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, at::Tensor x, at::Tensor w, at::Tensor b) {
    ctx->save_for_backward({x, w, b});
    return at::empty_like(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto s = ctx->get_saved_variables();
    return {grads[0], at::empty_like(s[1]), at::empty_like(s[2])};
  }
};
at::Tensor noop_node(at::Tensor x, at::Tensor w, at::Tensor b) { return NoopNode::apply(x, w, b); }
"""
cpp = load_inline("kgen_noop_node", cpp_sources=NODE, functions=["noop_node"], verbose=False)


class Noop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w, b)
        return torch.empty_like(x)

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        return g, torch.empty_like(w), torch.empty_like(b)


def issue(fn, calls):
    fn(); torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    e = time.perf_counter() - t
    torch.cuda.synchronize()
    return e / calls * 1e6


def rounds(title, cases, n=15, calls=300):
    res = {k: [] for k in cases}
    for _ in range(n):
        for k, fn in cases.items():
            res[k].append(issue(fn, calls))
    print(f"== {title}")
    for k, v in res.items():
        print(f"   {k:48s} median {statistics.median(v):8.2f} us   min {min(v):8.2f}")


def main():
    m = load(".devrun/mlp_tiny.py", "kgen_py")
    mc = load(".devrun/mlp_tiny_cpp.py", "kgen_cpp")
    dev = "cuda"
    h = torch.randn(16, 256, device=dev)
    w = torch.randn(256, device=dev, requires_grad=True)
    b = torch.randn(256, device=dev, requires_grad=True)
    hg = h.clone().requires_grad_(True)
    g = torch.randn_like(h)
    G, eps = 8, 1e-5
    bw = torch.autograd.backward
    rounds("one node's forward+backward", {
        "C++ builtin: hg * 2": lambda: bw([hg * 2], [g]),
        "C++ builtin: hg * w (2 grads)": lambda: bw([hg * w], [g]),
        "no-op Python Function (3 grads)": lambda: bw([Noop.apply(hg, w, b)], [g]),
        "no-op C++ autograd Function (3 grads)": lambda: bw([cpp.noop_node(hg, w, b)], [g]),
        "eager F.silu(F.group_norm)": lambda: bw([F.silu(F.group_norm(hg, G, w, b, eps))], [g]),
        "kgen region, Python Function": lambda: bw([m._Region0.apply(hg, w, b, G, eps, (), True)], [g]),
        "kgen region, C++ node (--autograd cpp)": lambda: bw([mc._ext.region0(hg, w, b, G, eps, [], False, [])], [g]),
    })
    rounds("one node's forward in grad mode", {
        "no-op Python Function": lambda: Noop.apply(hg, w, b),
        "no-op C++ autograd Function": lambda: cpp.noop_node(hg, w, b),
        "eager F.silu(F.group_norm)": lambda: F.silu(F.group_norm(hg, G, w, b, eps)),
        "kgen region, Python Function": lambda: m._Region0.apply(hg, w, b, G, eps, (), True),
        "kgen region, C++ node": lambda: mc._ext.region0(hg, w, b, G, eps, [], False, []),
    })
    r = load("tests/corpus/mlp_groupnorm_tiny.py", "ref")
    torch.manual_seed(0); a = r.Model(*r.get_init_inputs()).cuda()
    torch.manual_seed(0); k = m.ModelNew(*r.get_init_inputs()).cuda()
    torch.manual_seed(0); kc = mc.ModelNew(*r.get_init_inputs()).cuda()
    x = [t.cuda().requires_grad_(True) for t in r.get_inputs()]
    go = torch.randn_like(a(*x))
    rounds("mlp_groupnorm_tiny forward+backward", {"eager": lambda: bw([a(*x)], [go]), "kgen": lambda: bw([k(*x)], [go]),
                                                   "kgen --autograd cpp": lambda: bw([kc(*x)], [go])})


if __name__ == "__main__":
    main()
