"""What pybind11's conversion of each kind of argument costs a call: no-op functions of a region entry point's
signature and of smaller ones, built with load_inline for the CPU and called back to back from Python.

    python3 benchmarks/results/cpu/pybind_arguments/bench.py
"""
import time, torch
from torch.utils.cpp_extension import load_inline
src = r"""
#include <torch/extension.h>
at::Tensor f8(at::Tensor x, c10::optional<at::Tensor> w, c10::optional<at::Tensor> b, int64_t g, double eps,
              std::vector<int64_t> window, bool faithful, std::vector<at::Tensor> params) { return x; }
at::Tensor f5(at::Tensor x, at::Tensor w, at::Tensor b, int64_t g, double eps) { return x; }
at::Tensor f1(at::Tensor x) { return x; }
at::Tensor fl(std::vector<at::Tensor> xs) { return xs[0]; }
at::Tensor fopt(at::Tensor x, c10::optional<at::Tensor> w, c10::optional<at::Tensor> b, int64_t g, double eps) { return x; }
at::Tensor fwin(at::Tensor x, at::Tensor w, at::Tensor b, int64_t g, double eps, std::vector<int64_t> window) { return x; }
at::Tensor fbool(at::Tensor x, at::Tensor w, at::Tensor b, int64_t g, double eps, bool f) { return x; }
at::Tensor fvec(at::Tensor x, at::Tensor w, at::Tensor b, int64_t g, double eps, std::vector<at::Tensor> params) { return x; }
"""
m = load_inline("pyb_probe", cpp_sources=src, functions=["f8", "f5", "f1", "fl", "fopt", "fwin", "fbool", "fvec"], verbose=False)
x = torch.randn(4, 4); w = torch.randn(4); b = torch.randn(4); p = [torch.randn(4), torch.randn(4)]
cases = {
  "f1(x)": lambda: m.f1(x),
  "f5(x,w,b,g,eps)": lambda: m.f5(x, w, b, 2, 1e-5),
  "f8(x,w,b,g,eps,(),True,[])": lambda: m.f8(x, w, b, 2, 1e-5, (), True, []),
  "f8(..., [p0,p1])": lambda: m.f8(x, w, b, 2, 1e-5, (), True, p),
  "fopt(x,w,b,g,eps)": lambda: m.fopt(x, w, b, 2, 1e-5),
  "fopt(x,None,None,g,eps)": lambda: m.fopt(x, None, None, 2, 1e-5),
  "fwin(x,w,b,g,eps,())": lambda: m.fwin(x, w, b, 2, 1e-5, ()),
  "fwin(x,w,b,g,eps,[])": lambda: m.fwin(x, w, b, 2, 1e-5, []),
  "fbool(x,w,b,g,eps,True)": lambda: m.fbool(x, w, b, 2, 1e-5, True),
  "fvec(x,w,b,g,eps,[])": lambda: m.fvec(x, w, b, 2, 1e-5, []),
  "fvec(x,w,b,g,eps,[p0,p1])": lambda: m.fvec(x, w, b, 2, 1e-5, p),
  "fl([x,w,b])": lambda: m.fl([x, w, b]),
  "torch.relu(x)": lambda: torch.relu(x),
  "x.view(16)": lambda: x.view(16),
}
for r in range(2):
    for name, fn in cases.items():
        for _ in range(1000): fn()
        t = time.perf_counter()
        for _ in range(20000): fn()
        print(f"{name:32s} {(time.perf_counter()-t)/20000*1e6:6.2f} us")
    print()
