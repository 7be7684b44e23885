"""Per-kernel time and achieved DRAM bandwidth of an emitted solution, forward and forward+backward.

    python benchmarks/profile_kernels.py generated/groupnorm.py [--json out.json]

Runs the solution at its reference shapes under torch.profiler and reports, for every CUDA kernel, its
median duration and the bandwidth implied by the bytes it must move (the kernel's name says which
tensors it reads and writes: see BYTES). Bandwidth is bytes read + bytes written over time, the same
convention as the 3.0 TB/s device-to-device copy ceiling in shared/PERFORMANCE.md.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from collections import defaultdict

import torch

# kernel-name fragment -> how many tensors of the GroupNorm input's size it reads plus writes
BYTES = {
    "moments_partial_kernel": 1,   # reads x
    "normalize_kernel": 2,         # reads x, writes y
    "backward_partial_kernel": 2,  # reads dy, x
    "backward_apply_kernel": 3,    # reads dy, x, writes dx
}


def load(path):
    spec = importlib.util.spec_from_file_location("solution_under_profile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernel_times(fn, repeats):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = defaultdict(list)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(repeats):
            fn()
        torch.cuda.synchronize()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name].append(event.time_range.elapsed_us() / 1e3)
    return {name: statistics.median(v) for name, v in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("solution")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args()
    module = load(args.solution)
    torch.manual_seed(0)
    model = module.ModelNew(*module.get_init_inputs()).cuda()
    (x,) = [t.cuda() for t in module.get_inputs()]
    x.requires_grad_()
    with torch.no_grad():
        dy = torch.randn_like(model(x))
    tensor_bytes = dy.numel() * dy.element_size()  # the GroupNorm tensor: the model's output

    def forward():
        with torch.no_grad():
            model(x)

    def forward_backward():
        x.grad = None
        model.zero_grad(set_to_none=True)
        model(x).backward(dy)

    report = {"solution": args.solution, "gpu": torch.cuda.get_device_name(), "tensor_bytes": tensor_bytes, "kernels": {}}
    for label, fn in (("forward", forward), ("forward+backward", forward_backward)):
        print(f"\n{label}: kernel, median ms, GB/s (bytes read + written)")
        total = 0.0
        for name, ms in sorted(kernel_times(fn, args.repeats).items(), key=lambda kv: -kv[1]):
            total += ms
            short = name.split("(")[0].split("<")[0].split(" ")[-1]
            multiple = next((m for frag, m in BYTES.items() if frag in name), None)
            gbps = multiple * tensor_bytes / (ms * 1e-3) / 1e9 if multiple else None
            report["kernels"].setdefault(label, []).append({"kernel": name, "ms": ms, "GBps": gbps})
            print(f"  {short[:60]:<60} {ms:8.3f}  {'' if gbps is None else f'{gbps:8.0f}'}")
        print(f"  {'sum of kernel times':<60} {total:8.3f}")
        report.setdefault("kernel_sum_ms", {})[label] = total
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
