"""cuDNN's ConvTranspose2d backward at L2-19's shape, NCHW (what --conv fused runs today: cuDNN copies both tensors to
NHWC itself) against channels-last tensors handed to it, for issue 13's backward plan: each one's time (median of
7, CUDA events), the layout copies' time, and how far the channels-last gradients are from the NCHW ones (the
reference's). TF32 as PyTorch's default.

    PYTHONPATH=. python3 benchmarks/convt_backward_probe.py
"""
import torch

from tests.gpu.timing import median_ms


def main() -> None:
    torch.manual_seed(0)
    torch.backends.cudnn.allow_tf32 = True
    x = torch.rand(128, 64, 256, 256, device="cuda")
    weight = torch.randn(64, 64, 3, 3, device="cuda") * 0.04
    grad_z = torch.randn(128, 64, 258, 258, device="cuda")

    def backward(gz, inp):
        return torch.ops.aten.convolution_backward(gz, inp, weight, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1,
                                                   [True, True, False])

    grad_x, grad_w, _ = backward(grad_z, x)
    x_cl = x.contiguous(memory_format=torch.channels_last)
    gz_cl = grad_z.contiguous(memory_format=torch.channels_last)
    grad_x_cl, grad_w_cl, _ = backward(gz_cl, x_cl)
    print(f"channels-last grad_x is channels-last: {grad_x_cl.is_contiguous(memory_format=torch.channels_last)}")
    print(f"|grad_x cl - nchw| max {(grad_x_cl - grad_x).abs().max():.3g} (|grad_x| up to {grad_x.abs().max():.3g})")
    print(f"|grad_w cl - nchw| max {(grad_w_cl - grad_w).abs().max():.3g} (|grad_w| up to {grad_w.abs().max():.3g})")
    rows = {
        "conv backward, NCHW tensors (cuDNN's own layout copies)": lambda: backward(grad_z, x),
        "conv backward, channels-last tensors": lambda: backward(gz_cl, x_cl),
        "  x to channels-last (PyTorch's copy)": lambda: x.contiguous(memory_format=torch.channels_last),
        "  grad_z to channels-last (PyTorch's copy)": lambda: grad_z.contiguous(memory_format=torch.channels_last),
        "  grad_x back to NCHW (PyTorch's copy)": lambda: grad_x_cl.contiguous(),
    }
    for name, fn in rows.items():
        print(f"{name:58s} {median_ms(fn, iters=7):8.3f} ms")


if __name__ == "__main__":
    main()
