"""The backward of `--conv fused` at L2-19's shape, part by part, in one run (median of 7, CUDA events): the GroupNorm
backward writing grad_z NCHW against writing it channels-last, the conv's gradients (convt_fused_conv_backward: the
input and weight gradients by kgen's wgmma kernels, together and each alone), and the whole autograd backward of the
emitted file's FusedConvTransposeGeluGroupNorm.

    PYTHONPATH=. python3 benchmarks/convt_fused_backward_parts.py [FILE] [--batch N]
"""
import argparse
import importlib.util

import torch

from tests.gpu.timing import median_ms


def load(path):
    spec = importlib.util.spec_from_file_location("fused_solution", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file", nargs="?", default="generated/convt_gelu_groupnorm_fused.py")
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.backends.cudnn.allow_tf32 = True
    solution = load(args.file)
    ext = solution._ext
    model = solution.ModelNew(*solution.get_init_inputs()).cuda()
    conv, gn = model.conv_transpose, model.group_norm
    x = torch.rand(args.batch, *solution.get_inputs()[0].shape[1:], device="cuda")
    assert model.fused_conv_unsupported(x) == "", model.fused_conv_unsupported(x)
    padding = list(conv.padding)
    y, z, mean, rstd = ext.convt_fused_forward(x, conv.weight, conv.bias, gn.weight, gn.bias, gn.num_groups, gn.eps,
                                               padding)
    dy = torch.randn_like(y)
    args_gn = (dy, z, conv.bias, gn.weight, mean, rstd, gn.num_groups)
    dz_cl = ext.groupnorm_backward_channels_last(*args_gn)[0]
    dz = ext.groupnorm_backward(*args_gn)[0]
    print(f"grad_z channels-last equals the NCHW kernels' bit for bit: {torch.equal(dz_cl, dz)}")

    def conv_backward(input_grad, weight_grad):
        return lambda: ext.convt_fused_conv_backward(dz_cl, x, conv.weight, padding, input_grad, weight_grad)
    xr = x.detach().requires_grad_()
    weight = conv.weight.detach().requires_grad_()
    out = solution.FusedConvTransposeGeluGroupNorm.apply(xr, weight, conv.bias, gn.weight, gn.bias, gn.num_groups,
                                                         gn.eps, padding)

    def whole_backward():
        torch.autograd.grad(out, (xr, weight), dy, retain_graph=True)

    rows = {
        "GroupNorm backward, grad_z NCHW": lambda: ext.groupnorm_backward(*args_gn),
        "GroupNorm backward, grad_z written channels-last": lambda: ext.groupnorm_backward_channels_last(*args_gn),
        "conv gradients (kgen's wgmma kernels)": conv_backward(True, True),
        "  input gradient alone": conv_backward(True, False),
        "  weight gradient alone": conv_backward(False, True),
        "the file's whole backward (autograd.grad)": whole_backward,
    }
    for name, fn in rows.items():
        print(f"{name:52s} {median_ms(fn, iters=7):8.3f} ms")


if __name__ == "__main__":
    main()
