"""Does a persisting-L2 set-aside change the pipelined backward? (session 20)

The pipelined backward (groupnorm/twopass/backward_pipeline.cuh) marks pass A's loads L2::evict_last so that pass B finds
them in L2. The CUDA guide ties "persisting" accesses to a set-aside of L2 (cudaLimitPersistingL2CacheSize, 0 by
default). This times the backward's kernels of one emitted solution in one process: with the set-aside at 0, at
the device's maximum, and at 0 again (a context-wide limit: the rounds cannot interleave in one process as
kernel_variants does, so the first and third rounds bracket the drift).

    python3 benchmarks/l2_persist_probe.py SOLUTION.py [--kernel REGEX] [--calls 10]
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import re
import statistics

import torch

from run_solution_once import load_solution  # benchmarks/ is the script's own folder

CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
CUDA_DEV_ATTR_MAX_PERSISTING_L2_CACHE_SIZE = 108


def cudart():
    lib_dirs = [os.path.join(os.path.dirname(torch.__file__), "lib")]
    lib_dirs += glob.glob(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "nvidia", "*", "lib"))
    for d in lib_dirs:
        for path in sorted(glob.glob(os.path.join(d, "libcudart.so*"))):
            return ctypes.CDLL(path)
    return ctypes.CDLL("libcudart.so")


def set_persisting(rt, size: int) -> int:
    err = rt.cudaDeviceSetLimit(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(size))
    got = ctypes.c_size_t(0)
    rt.cudaDeviceGetLimit(ctypes.byref(got), CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE)
    if err:
        print("cudaDeviceSetLimit error", err)
    return got.value


def backward_kernel_us(model, inputs, grad, pattern, calls) -> float:
    for _ in range(2):
        model(*inputs).backward(grad)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            model(*inputs).backward(grad)
        torch.cuda.synchronize()
    times = [e.device_time_total for e in prof.events() if pattern.search(e.name)]
    total = sum(times) / calls
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("solution")
    parser.add_argument("--kernel", default="backward_pipeline")
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    module = load_solution(args.solution, "probe_solution")
    torch.manual_seed(0)
    model = module.ModelNew(*module.get_init_inputs()).cuda()
    inputs = [t.cuda().requires_grad_(t.is_floating_point()) for t in module.get_inputs()]
    grad = torch.randn_like(model(*inputs))
    pattern = re.compile(args.kernel)
    rt = cudart()
    most = ctypes.c_int(0)
    rt.cudaDeviceGetAttribute(ctypes.byref(most), CUDA_DEV_ATTR_MAX_PERSISTING_L2_CACHE_SIZE, 0)
    for label, size in (("set-aside 0", 0), (f"set-aside max ({most.value >> 20} MB)", most.value),
                        ("set-aside 0 again", 0)):
        got = set_persisting(rt, size)
        us = backward_kernel_us(model, inputs, grad, pattern, args.calls)
        print(f"{os.path.basename(args.solution)}  {label:28s} (limit {got >> 20} MB): {us:9.1f} us")


if __name__ == "__main__":
    main()
