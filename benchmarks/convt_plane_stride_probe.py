"""Does a power-of-two output plane slow the wgmma conv's epilogue stores? Session 24 measured the input gradient's
epilogue alone at 2.1 ms where the forward's (GELU moments included) takes 1.3-1.4, at about the same pixel count; the
input gradient writes 256 x 256 planes (256 KB apart), the forward 258 x 258. Here, one process, median of 7 (CUDA
events), each kernel whole and its epilogue alone, per million output pixels:

- the forward at input 256 (output 258: its planes 266 KB apart) and at input 254 (output 256: 256 KB);
- the input gradient at grad_z 258 (grad_x 256) and at grad_z 262 (grad_x 260).

    PYTHONPATH=. python3 benchmarks/convt_plane_stride_probe.py
"""
import torch

from tests.gpu import convt_wgmma_harness as H
from tests.gpu.timing import median_ms


def main() -> None:
    ext = H.build_extension()
    torch.backends.cudnn.allow_tf32 = True
    weight = torch.randn(64, 64, 3, 3, device="cuda") * 0.04
    bias = torch.randn(64, device="cuda")
    print(f"{'case':58s} {'ms':>8s} {'ms / M px':>10s}")
    for size in (256, 254):
        x = torch.rand(128, 64, size, size, device="cuda")
        pixels = 128 * 64 * (size + 2) ** 2 / 1e6
        for name, variant in (("whole", 0), ("epilogue alone", 11)):
            ms = median_ms(lambda: ext.convt_wgmma_forward(x, weight, bias, 8, 1e-5, [0, 0], variant), iters=7)
            print(f"{f'forward, output {size + 2}, {name}':58s} {ms:8.3f} {ms / pixels * 1e3:10.3f}")
        del x
    for size in (258, 262):
        gz = torch.randn(128, 64, size, size, device="cuda").contiguous(memory_format=torch.channels_last)
        pixels = 128 * 64 * (size - 2) ** 2 / 1e6
        for name, variant in (("whole", 0), ("epilogue alone", 11)):
            ms = median_ms(lambda: ext.convt_wgmma_input_grad(gz, weight, [0, 0], variant), iters=7)
            print(f"{f'input gradient, output {size - 2}, {name}':58s} {ms:8.3f} {ms / pixels * 1e3:10.3f}")
        del gz


if __name__ == "__main__":
    main()
