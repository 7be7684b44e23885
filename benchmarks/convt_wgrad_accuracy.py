"""How far kgen's wgmma weight gradient (conv/convt_wgrad.cuh) and input gradient (convt_wgmma_input_grad) lie from
float64, against cuDNN's, at L2-19's layer (64 -> 64 channels, kernel 3) on 256 x 256 inputs at a reduced batch,
and at a small shape: the weight gradient with x truncated by the tensor cores (the default) or rounded to nearest,
the input gradient with grad_z truncated (the default) or rounded; cuDNN in TF32 (channels-last and NCHW) and in
float32. Prints, for each, the largest error over the largest |result| and the RMS error over the RMS of the result,
and the mean signed relative error (a truncation bias would show there).

    python benchmarks/convt_wgrad_accuracy.py"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.gpu import convt_wgmma_harness as H  # noqa: E402


def cudnn_weight_grad(grad_z, x, weight):
    return torch.ops.aten.convolution_backward(grad_z, x, weight, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1,
                                               [False, True, False])[1]


def cudnn_input_grad(grad_z, x, weight):
    return torch.ops.aten.convolution_backward(grad_z, x, weight, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1,
                                               [True, False, False])[0]


def report(name, got, exact):
    err = got.double() - exact
    rel_max = err.abs().max() / exact.abs().max()
    rel_rms = err.pow(2).mean().sqrt() / exact.pow(2).mean().sqrt()
    bias = (err * exact.sign()).sum() / exact.abs().sum()
    print(f"  {name:48s} max {rel_max:.3e}   rms {rel_rms:.3e}   signed {bias:+.3e}")


def main() -> None:
    ext = H.build_extension()
    for n, size in ((8, 256), (2, 32)):
        gen = torch.Generator(device="cuda").manual_seed(n * 1000 + size)
        x = torch.rand(n, 64, size, size, device="cuda", generator=gen) * 2 - 1
        grad_z = torch.randn(n, 64, size + 2, size + 2, device="cuda", generator=gen)
        weight = torch.empty(64, 64, 3, 3, device="cuda")
        gz_cl = grad_z.contiguous(memory_format=torch.channels_last)
        exact = cudnn_weight_grad(grad_z.double(), x.double(), weight.double())
        print(f"{n}x64x{size}x{size} -> 64 channels, kernel 3 (|dW| up to {exact.abs().max():.3g}):")
        report("kgen, x truncated by the tensor cores (default)", ext.convt_wgmma_weight_grad(gz_cl, x, weight, [0, 0],
                                                                                               0), exact)
        report("kgen, x rounded to nearest", ext.convt_wgmma_weight_grad(gz_cl, x, weight, [0, 0], 1), exact)
        torch.backends.cudnn.allow_tf32 = True
        report("cuDNN TF32, channels-last", cudnn_weight_grad(gz_cl, x.contiguous(memory_format=torch.channels_last),
                                                              weight), exact)
        report("cuDNN TF32, NCHW", cudnn_weight_grad(grad_z, x, weight), exact)
        torch.backends.cudnn.allow_tf32 = False
        report("cuDNN float32, NCHW", cudnn_weight_grad(grad_z, x, weight), exact)
        torch.backends.cudnn.allow_tf32 = True
        weight = (torch.rand(64, 64, 3, 3, device="cuda", generator=gen) * 2 - 1) / 24
        exact = cudnn_input_grad(grad_z.double(), x.double(), weight.double())
        print(f"  input gradient (|grad_x| up to {exact.abs().max():.3g}):")
        report("kgen, grad_z truncated by the tensor cores (default)", ext.convt_wgmma_input_grad(gz_cl, weight,
                                                                                                  [0, 0], 0), exact)
        report("kgen, grad_z rounded to nearest", ext.convt_wgmma_input_grad(gz_cl, weight, [0, 0], 4), exact)
        report("cuDNN TF32, channels-last", cudnn_input_grad(gz_cl, x.contiguous(memory_format=torch.channels_last),
                                                             weight), exact)
        torch.backends.cudnn.allow_tf32 = False
        report("cuDNN float32, NCHW", cudnn_input_grad(grad_z, x, weight), exact)
        torch.backends.cudnn.allow_tf32 = True


if __name__ == "__main__":
    main()
