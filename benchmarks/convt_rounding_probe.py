"""How cuDNN's TF32 ConvTranspose2d rounds its operands at L2-19's shape, against kgen's wgmma conv (issue 13).

KernelBench compares kgen's --conv fused output with the reference's cuDNN TF32 conv at 1e-4. At a small shape kgen
(operands rounded to nearest, ties away) is 1.8e-6 from cuDNN, at L2-19's 1.2e-4 on z. This times nothing: it runs
cuDNN and kgen once at L2-19's shape (cuDNN picks its algorithm by shape), then float64 convolutions of two samples
with the operands rounded each way, and prints how far cuDNN and kgen are from each, and where kgen and cuDNN
differ most (a tile boundary would be a bug, not rounding).

    PYTHONPATH=. python3 benchmarks/convt_rounding_probe.py [batch]
"""
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.gpu import convt_wgmma_harness as H  # noqa: E402


def tf32(t: torch.Tensor, mode: str) -> torch.Tensor:
    """float32 -> the TF32 value (19 bits), as float32: rna (nearest, ties away), rne (ties to even), trunc."""
    bits = t.contiguous().view(torch.int32)
    if mode == "rna":
        bits = bits + 0x1000
    elif mode == "rne":
        bits = bits + 0xFFF + ((bits >> 13) & 1)
    elif mode != "trunc":
        raise ValueError(mode)
    return (bits & ~0x1FFF).view(torch.float32)


def main() -> None:
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    torch.manual_seed(0)
    ext = H.build_extension()
    torch.backends.cudnn.allow_tf32 = True
    x = torch.rand(batch, 64, 256, 256, device="cuda")
    layer = torch.nn.ConvTranspose2d(64, 64, 3).cuda()
    weight, bias = layer.weight.detach(), layer.bias.detach()
    z_cudnn = F.conv_transpose2d(x, weight, bias)
    z_kgen = ext.convt_wgmma_forward(x, weight, bias, 8, 1e-5, [0, 0], 1)[0]  # identity op: z = conv + bias
    diff = (z_kgen - z_cudnn).abs()
    print(f"batch {batch}: max |kgen - cuDNN| {diff.max():.3g}, mean {diff.mean():.3g}, "
          f"> 1e-5: {(diff > 1e-5).sum().item()}, > 3e-5: {(diff > 3e-5).sum().item()} of {diff.numel()}")
    top = torch.topk(diff.flatten(), 8)
    for value, index in zip(top.values.tolist(), top.indices.tolist()):
        n, rest = divmod(index, 64 * 258 * 258)
        c, rest = divmod(rest, 258 * 258)
        h, w = divmod(rest, 258)
        print(f"  |d| {value:.3g} at n {n} c {c} h {h} w {w}: kgen {z_kgen[n, c, h, w]:.6f} cuDNN {z_cudnn[n, c, h, w]:.6f}")
    rows = diff.amax(dim=(0, 1, 3))
    cols = diff.amax(dim=(0, 1, 2))
    print(f"  max over rows 0,1,2,...,255,256,257: {rows[:3].tolist()} ... {rows[-3:].tolist()}")
    print(f"  max over cols 0,1,2,...,255,256,257: {cols[:3].tolist()} ... {cols[-3:].tolist()}")
    del diff
    samples = slice(0, 2)
    for x_mode in ("exact", "rna", "rne", "trunc"):
        for w_mode in ("exact", "rna", "rne", "trunc"):
            xs = x[samples] if x_mode == "exact" else tf32(x[samples], x_mode)
            ws = weight if w_mode == "exact" else tf32(weight, w_mode)
            ref = F.conv_transpose2d(xs.double(), ws.double(), bias.double())
            d_cudnn = (z_cudnn[samples].double() - ref).abs()
            d_kgen = (z_kgen[samples].double() - ref).abs()
            print(f"x {x_mode:5s} w {w_mode:5s}: cuDNN max {d_cudnn.max():.3g} mean {d_cudnn.mean():.3g} | "
                  f"kgen max {d_kgen.max():.3g} mean {d_kgen.mean():.3g}")


if __name__ == "__main__":
    main()
