"""The DRAM copy rate on this GPU at the sizes kgen's kernels move: `out.copy_(x)` (read + write, CUDA events,
median of 50 after warm-up) for tensors of the given sizes in MB, printed as one JSON line per size. The floor a
small kernel is judged against: a 67 MB transfer (L2-88's read + write) does not reach the rate of a 4 GB one.

    python benchmarks/copy_rate.py 16.8 33.5 134 1074 4295
"""
import json
import sys

import torch


def copy_rate(megabytes: float, repeats: int = 50) -> dict:
    n = int(megabytes * 1e6 / 4)
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    for _ in range(5):
        out.copy_(x)
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out.copy_(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    ms = sorted(times)[len(times) // 2]
    moved = 2 * n * 4
    return {"tensor_mb": round(n * 4 / 1e6, 1), "moved_gb": round(moved / 1e9, 4), "ms": round(ms, 4),
            "tb_per_s": round(moved / ms / 1e9, 3)}


if __name__ == "__main__":
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}))
    for size in sys.argv[1:] or ["33.5", "4295"]:
        print(json.dumps(copy_rate(float(size))))
