"""CUDA-event timing for the GPU tests' --bench modes: the median of single calls after a warm-up."""
from __future__ import annotations

from typing import Callable

import torch


def median_ms(fn: Callable[[], object], iters: int = 10, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def print_conv_rates(rows: dict[str, Callable[[], object]], flop: float, width: int) -> None:
    """Times each row (median_ms) and prints it with the TFLOP/s it makes of a conv of `flop` operations."""
    for name, fn in rows.items():
        ms = median_ms(fn)
        print(f"{name:{width}s} {ms:8.3f} ms   {flop / ms / 1e9:7.1f} TFLOP/s of the conv")
