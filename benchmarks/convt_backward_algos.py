"""cuDNN's ConvTranspose2d backward at L2-19's shape, the input gradient (dgrad) and the weight gradient (wgrad) timed
apart, for issue 13's backward plan. Session 23 measured dgrad + wgrad at 8.7 ms on channels-last tensors (the
validate profile: wgrad 5.8, dgrad 2.7, 108 and 233 TFLOP/s of their 628 GFLOP each). Here, in one run:

- cuDNN's heuristic choice (torch.backends.cudnn.benchmark off, what the files run today) against its measured
  choice (benchmark on), both with deterministic on: can a flag the file sets around its own call buy a faster
  algorithm, and does it keep the gradients bitwise repeatable?
- the weight gradient asked for as a transposed conv's (what the file does) and as the equivalent direct conv's
  (conv2d(grad_z, W) = grad_x, whose weight gradient with grad_output = x is the same tensor);
- NCHW tensors against channels-last ones, for each.

Each row: median ms of 7 (CUDA events), TFLOP/s of 628 GFLOP, max |difference| from the heuristic channels-last
result, and whether two calls give the same bits.

    PYTHONPATH=. python3 benchmarks/convt_backward_algos.py [--small]
"""
import argparse

import torch

from tests.gpu.timing import median_ms


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", action="store_true", help="batch 8 instead of 128 (a quick look)")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.backends.cudnn.allow_tf32 = True
    batch = 8 if args.small else 128
    x = torch.rand(batch, 64, 256, 256, device="cuda")
    weight = torch.randn(64, 64, 3, 3, device="cuda") * 0.04
    grad_z = torch.randn(batch, 64, 258, 258, device="cuda")
    x_cl = x.contiguous(memory_format=torch.channels_last)
    gz_cl = grad_z.contiguous(memory_format=torch.channels_last)
    flop = 2.0 * batch * 64 * 258 * 258 * 64 * 9

    def convt(gz, inp, mask):
        return torch.ops.aten.convolution_backward(gz, inp, weight, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1,
                                                   mask)

    def direct_wgrad(gz, inp):
        # conv2d(grad_z, W) has output x's shape; its weight gradient for grad_output = x is convT's.
        return torch.ops.aten.convolution_backward(inp, gz, weight, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                                                   [False, True, False])[1]

    def direct_dgrad(gz):
        return torch.nn.functional.conv2d(gz, weight)

    reference_dgrad = convt(gz_cl, x_cl, [True, False, False])[0]
    reference_wgrad = convt(gz_cl, x_cl, [False, True, False])[1]
    rows = {
        "dgrad, convT backward, CL": (lambda: convt(gz_cl, x_cl, [True, False, False])[0], reference_dgrad),
        "dgrad, convT backward, NCHW": (lambda: convt(grad_z, x, [True, False, False])[0], reference_dgrad),
        "dgrad, conv2d(grad_z, W), CL": (lambda: direct_dgrad(gz_cl), reference_dgrad),
        "dgrad, conv2d(grad_z, W), NCHW": (lambda: direct_dgrad(grad_z), reference_dgrad),
        "wgrad, convT backward, CL": (lambda: convt(gz_cl, x_cl, [False, True, False])[1], reference_wgrad),
        "wgrad, convT backward, NCHW": (lambda: convt(grad_z, x, [False, True, False])[1], reference_wgrad),
        "wgrad, conv2d's weight gradient, CL": (lambda: direct_wgrad(gz_cl, x_cl), reference_wgrad),
        "wgrad, conv2d's weight gradient, NCHW": (lambda: direct_wgrad(grad_z, x), reference_wgrad),
        "wgrad, convT, gz CL and x NCHW": (lambda: convt(gz_cl, x, [False, True, False])[1], reference_wgrad),
    }
    print(f"batch {batch}; each row: median ms, TFLOP/s of {flop / 1e9:.0f} GFLOP, max |d| from the heuristic CL "
          "result (its magnitude), bitwise repeatable")
    for benchmark in (False, True):
        with torch.backends.cudnn.flags(enabled=True, benchmark=benchmark, deterministic=True, allow_tf32=True):
            print(f"-- cudnn.benchmark={benchmark}, deterministic=True")
            for name, (fn, ref) in rows.items():
                first = fn()
                second = fn()
                same = torch.equal(first, second)
                diff = (first - ref).abs().max().item()
                ms = median_ms(fn, iters=7)
                print(f"{name:42s} {ms:8.3f} ms {flop / ms / 1e9:7.1f} TFLOP/s  |d| {diff:.3g} "
                      f"(of {ref.abs().max().item():.3g})  repeatable {same}")
                del first, second
    with torch.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=False, allow_tf32=True):
        print("-- cudnn.benchmark=True, deterministic=False (for scale only: not what a deterministic file may run)")
        for name in ("wgrad, convT backward, CL", "dgrad, convT backward, CL"):
            fn, ref = rows[name]
            first, second = fn(), fn()
            ms = median_ms(fn, iters=7)
            print(f"{name:42s} {ms:8.3f} ms {flop / ms / 1e9:7.1f} TFLOP/s  |d| {(first - ref).abs().max().item():.3g}"
                  f"  repeatable {torch.equal(first, second)}")


if __name__ == "__main__":
    main()
