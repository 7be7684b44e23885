"""Where the one-launch forward's time goes (conv/convt_wgmma_infer.cuh, InferArgs::trace), at L2-19's shape on the GPU:
the conv blocks' end, and for normaliser 0, per sample, how long it waited for the sample and how long it took.

    python benchmarks/convt_infer_trace.py [normalisers ...] [--modes MODE ...]

(modes as convt_wgmma_infer's: 0 the default, 2 without y's stores, 7 the conv's input by 4-byte copies, 8 its bulk
copies without the evict-first hint; default 0 2)"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.gpu import convt_wgmma_harness as H  # noqa: E402


def main(counts, modes=(0, 2)) -> None:
    ext = H.build_extension()
    x = torch.rand(128, 64, 256, 256, device="cuda")
    weight = torch.randn(64, 64, 3, 3, device="cuda") * 0.04
    bias, gamma, beta = (torch.randn(64, device="cuda") for _ in range(3))
    for r in counts:
        for mode in modes:
            for _ in range(2):  # the second call is the one reported
                y, trace = ext.convt_wgmma_infer_trace(x, weight, bias, gamma, beta, 8, 1e-5, [0, 0], r, mode)
            torch.cuda.synchronize()
            t = trace.cpu().double()
            blocks = (t.numel() - 3 * 128) // 2
            conv = blocks - r
            starts, ends = t[0:2 * blocks:2], t[1:2 * blocks:2]
            t0 = starts.min()
            per = t[2 * blocks:].view(128, 3) - t0
            waits = per[:, 1] - per[:, 0]
            works = per[:, 2] - per[:, 1]
            print(f"{r} normalisers, mode {mode}: conv blocks end {((ends[:conv] - t0) / 1e6).min():.3f}-"
                  f"{((ends[:conv] - t0) / 1e6).max():.3f} ms, normalisers end {((ends[conv:] - t0) / 1e6).max():.3f}"
                  f" ms; normaliser 0 per sample: wait median {waits.median() / 1e3:.1f} us (samples waited > 1 us: "
                  f"{int((waits > 1e3).sum())}), work median {works.median() / 1e3:.1f} us; sample 64 ready at "
                  f"{per[64, 1] / 1e6:.3f} ms, sample 127 at {per[127, 1] / 1e6:.3f} ms")


if __name__ == "__main__":
    args = sys.argv[1:]
    split = args.index("--modes") if "--modes" in args else len(args)
    main([int(a) for a in args[:split]] or [6, 12, 20], tuple(int(a) for a in args[split + 1:]) or (0, 2))
