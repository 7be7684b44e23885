"""`--conv fast` under compute-sanitizer, and its conv weight gradient's error, on the GPU.

    python3 benchmarks/sanitize_fast_mode.py accuracy      # the conv weight gradient's error, by source
    python3 benchmarks/sanitize_fast_mode.py initcheck     # run under compute-sanitizer initcheck (sanitize.sh does)
    python3 benchmarks/sanitize_fast_mode.py kernels       # likewise

accuracy: at the reliability table's small shape the fast solution's conv weight gradient is ~0.26 from float64
where the reference (NCHW) is ~3e-3. Prints, against float64, the error of: the reference NCHW, the reference fed a
channels-last input (no kgen code at all), and the kgen fast solution; each with TF32 on (PyTorch's default) and
off. The reference fed channels-last input has the fast solution's error: it is cuDNN's channels-last TF32 weight
gradient kernel's.

initcheck: initcheck reports every read of cuDNN's channels-last conv output by our statistics kernel. Does it
report a plain PyTorch kernel reading the same cuDNN output too (then the sanitizer does not see cuDNN's writes,
and the report is not about our code)? Runs the channels-last conv and a PyTorch sum over its output.

kernels: the fast solution's own kernels (layout copies, channels-last GroupNorm forward and backward with the
fused bias) on inputs PyTorch wrote, no cuDNN involved: what initcheck says about OUR kernels in fast mode.
Both sanitizer runs are queued by benchmarks/sanitize.sh; kgen.bench.reliability (library_writes_explained)
reads their verdicts.
"""
from __future__ import annotations

import copy
import importlib.util
import sys
import tempfile
from pathlib import Path

import torch

from kgen.specs import get_spec

SHAPE = (2, 64, 24, 24)
INIT = [64, 64, 3, 1, 8, 8]


def python_functions_file() -> str:
    """The --conv fast file of the preset's reference with each region a Python autograd Function (`--autograd
    python`): the same kernels as generated/convt_gelu_groupnorm_fast.py, their entry points exported."""
    from kgen.ref.emit import emit_reference

    path = Path(tempfile.mkdtemp(prefix="kgen_fast_")) / "convt_gelu_groupnorm_fast_python.py"
    reference = str(get_spec("convt-gelu-groupnorm").reference_path({}))
    path.write_text(emit_reference(reference, conv="fast", autograd="python", output=path)[0])
    return str(path)


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def weight_grad(model, x, dy):
    model.zero_grad(set_to_none=True)
    xi = x.detach().clone().requires_grad_()
    model(xi).backward(dy)
    return model.conv_transpose.weight.grad.detach().double(), xi.grad.detach().double()


def accuracy() -> None:
    reference = load(str(get_spec("convt-gelu-groupnorm").reference_path({})), "reference")
    fast = load("generated/convt_gelu_groupnorm_fast.py", "fast")
    torch.manual_seed(0)
    ref = reference.Model(*INIT).cuda()
    torch.manual_seed(0)
    new = fast.ModelNew(*INIT).cuda()
    x = torch.rand(SHAPE, device="cuda")
    dy = torch.randn(SHAPE[0], 64, SHAPE[2] + 2, SHAPE[3] + 2, device="cuda")
    w64, x64 = weight_grad(copy.deepcopy(ref).double(), x.double(), dy.double())
    print(f"float64 conv weight grad: max |g| {w64.abs().max():.3e}, input grad max |g| {x64.abs().max():.3e}")
    for tf32 in (True, False):
        torch.backends.cudnn.allow_tf32 = tf32
        for label, model, xin in (("reference NCHW", ref, x),
                                  ("reference, channels-last input", ref, x.contiguous(memory_format=torch.channels_last)),
                                  ("kgen fast", new, x)):
            w, g = weight_grad(model, xin, dy)
            print(f"TF32 {'on ' if tf32 else 'off'}  {label:32s} weight grad err {(w - w64).abs().max():.3e}   "
                  f"input grad err {(g - x64).abs().max():.3e}")
    torch.backends.cudnn.allow_tf32 = True


def initcheck() -> None:
    torch.manual_seed(0)
    conv = torch.nn.ConvTranspose2d(64, 64, 3).cuda()
    x = torch.rand(SHAPE, device="cuda").contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        y = torch.nn.functional.conv_transpose2d(x, conv.weight, None)
        total = y.sum()          # a PyTorch reduction reading every element of cuDNN's output
    torch.cuda.synchronize()
    print(f"channels-last conv output {tuple(y.shape)} strides {y.stride()}, sum {total.item():.4f}")


def kernels() -> None:
    ext = load(python_functions_file(), "fast_python")._ext
    gen = torch.Generator(device="cuda").manual_seed(0)
    x_nchw = torch.randn(SHAPE, device="cuda", generator=gen)
    x = ext.to_channels_last(x_nchw)                       # our layout copy, of a PyTorch-written tensor
    assert torch.equal(x, x_nchw)
    conv_bias, gamma, beta = (torch.randn(64, device="cuda", generator=gen) for _ in range(3))
    y, mean, rstd, _ = ext.region0_forward(x, gamma, beta, [conv_bias], [], 8, 1e-5, [], True, 0)
    dy = torch.randn(y.shape, device="cuda", generator=gen)
    dx, dgamma, dbeta, dconv_bias, _ = ext.region0_backward(dy, x, gamma, beta, [conv_bias], [], mean, rstd, y, None, 8,
                                                            [], 0)
    back = ext.to_contiguous_nchw(dx)
    torch.cuda.synchronize()
    finite = all(bool(t.isfinite().all()) for t in (y, dx, dgamma, dbeta, dconv_bias, back))
    print(f"fast-mode kernels on PyTorch-written inputs: y {tuple(y.shape)}, dx {tuple(dx.shape)}, all finite {finite}")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("accuracy", "initcheck", "kernels"):
        print(__doc__)
        sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
    {"accuracy": accuracy, "initcheck": initcheck, "kernels": kernels}[sys.argv[1]]()
