"""Which half of kgen's region makes its forward+backward cost more than eager's: each ext call alone in a Function (split.log;
the files in .devrun/ as README.md says)."""
import statistics, sys, time
import torch
import torch.nn.functional as F
sys.path.insert(0, ".")
from kgen.bench.host_profile import load


def issue(fn, calls):
    fn(); torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    e = time.perf_counter() - t
    torch.cuda.synchronize()
    return e / calls * 1e6


def gpu(fn, calls):
    fn(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(calls):
        fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / calls * 1e3


def rounds(title, cases, n=15, calls=300):
    res = {k: [] for k in cases}
    for _ in range(n):
        for k, fn in cases.items():
            res[k].append(issue(fn, calls))
    print(f"== {title}")
    for k, v in res.items():
        print(f"   {k:44s} median {statistics.median(v):7.1f} min {min(v):7.1f} | " + " ".join(f"{x:.0f}" for x in v))


def main(path, shape, groups, eps, faithful):
    m = load(path, "k" + path.replace("/", "_").replace(".", "_"))
    ext = m._ext
    h = torch.randn(*shape, device="cuda")
    C = shape[1]
    w = torch.randn(C, device="cuda", requires_grad=True)
    b = torch.randn(C, device="cuda", requires_grad=True)
    hg = h.clone().requires_grad_(True)
    g = torch.randn_like(h)
    out, mean, rstd, aux = ext.region0_forward(h, w, b, [], [], groups, eps, [], True, 0, faithful)
    dx, dw, db, _, _ = ext.region0_backward(g, h, w, b, [], [], mean, rstd, out, aux, groups, [], 0, faithful)

    class FwdOnly(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            o, mu, rs, a = ext.region0_forward(x, w, b, [], [], groups, eps, [], True, 0, faithful)
            ctx.save_for_backward(x, w, b, mu, rs, o)
            return o

        @staticmethod
        def backward(ctx, d):
            ctx.saved_tensors
            return dx, dw, db

    class BwdOnly(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w, b, mean, rstd, out)
            return torch.empty_like(x)

        @staticmethod
        def backward(ctx, d):
            x, w, b, mu, rs, o = ctx.saved_tensors
            r = ext.region0_backward(d, x, w, b, [], [], mu, rs, o, None, groups, [], 0, faithful)
            return r[0], r[1], r[2]

    class Both(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            o, mu, rs, a = ext.region0_forward(x, w, b, [], [], groups, eps, [], True, 0, faithful)
            ctx.save_for_backward(x, w, b, mu, rs, o)
            return o

        @staticmethod
        def backward(ctx, d):
            x, w, b, mu, rs, o = ctx.saved_tensors
            r = ext.region0_backward(d, x, w, b, [], [], mu, rs, o, None, groups, [], 0, faithful)
            return r[0], r[1], r[2]

    class Neither(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w, b, mean, rstd, out)
            return torch.empty_like(x)

        @staticmethod
        def backward(ctx, d):
            ctx.saved_tensors
            return dx, dw, db

    bw = torch.autograd.backward
    cases = {
        "eager F.silu(F.group_norm)": lambda: bw([F.silu(F.group_norm(hg, groups, w, b, eps))], [g]),
        "kgen _Region0 (the emitted Function)": lambda: bw([m._Region0.apply(hg, w, b, groups, eps, (), True)], [g]),
        "lean Function, both ext calls": lambda: bw([Both.apply(hg, w, b)], [g]),
        "lean Function, forward ext call only": lambda: bw([FwdOnly.apply(hg, w, b)], [g]),
        "lean Function, backward ext call only": lambda: bw([BwdOnly.apply(hg, w, b)], [g]),
        "lean Function, no ext call": lambda: bw([Neither.apply(hg, w, b)], [g]),
    }
    title = f"{path} {tuple(shape)} G={groups} faithful={faithful}"
    rounds(title + ": host us a forward+backward", cases)
    print("   GPU us a call (events): " + ", ".join(f"{k}: {gpu(fn, 300):.1f}" for k, fn in cases.items()))


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    main(".devrun/mlp_tiny.py", (16, 256), 8, 1e-5, False)
    torch.backends.cudnn.allow_tf32 = True
    main(".devrun/vae_tiny.py", (2, 64, 8, 8), 8, 1e-6, True)
