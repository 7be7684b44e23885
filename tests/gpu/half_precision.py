"""What the half-precision GPU tests share: the bar they hold kgen's results to (no further from float64 than twice
PyTorch's own float16 / bfloat16 run is, plus one rounding of the dtype at the result's magnitude), and the tools of the
tests that compare a kernel family's 2-byte path with its float32 path on the same file (an input off its pack
boundary takes the float32 path): the emitted files, the misaligned input, the kernels a call ran."""
from pathlib import Path

import torch

from kgen.ref.emit import emit_reference
from tests.solution_loader import import_file


def assert_within_half_error(new, half, exact, dtype, what):
    """new (kgen's result) against half (PyTorch's at `dtype`), both judged by their distance to exact (float64)."""
    exact = exact.double()
    err_new = (new.double() - exact).abs().max().item()
    err_half = (half.double() - exact).abs().max().item()
    ulp = torch.finfo(dtype).eps * max(exact.abs().max().item(), 1e-6)
    assert err_new <= 2 * err_half + ulp, f"{what}: kgen {err_new:.3g} from float64, PyTorch at {dtype} {err_half:.3g}"


def emitted_modules(folder: Path, reference: str, bodies: dict) -> dict:
    """name -> the imported file emitted from `reference` with its {body} set to bodies[name]."""
    modules = {}
    for name, body in bodies.items():
        ref = folder / f"{name}_ref.py"
        ref.write_text(reference.format(body=body))
        path = folder / f"{name}.py"
        path.write_text(emit_reference(str(ref), output=path)[0])
        modules[name] = import_file(path)
    return modules


def misaligned(x: torch.Tensor) -> torch.Tensor:
    """x's values in a contiguous tensor 2 bytes past an 8-byte boundary: the 2-byte paths that read 8-byte packs
    decline it, so the same file runs its float32 path."""
    base = torch.empty(x.numel() + 1, dtype=x.dtype, device=x.device)
    out = base[1:].view(x.shape)
    out.copy_(x)
    assert out.data_ptr() % 8 != 0 and out.is_contiguous()
    return out


def kernel_names(fn) -> list:
    """The names of the CUDA kernels fn() launches (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
