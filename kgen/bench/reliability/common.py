"""The reliability table's shared parts: the judge of one solution against its reference and float64
(output and every gradient), the row type, loading and building, and the time budget."""
from __future__ import annotations

import importlib.util
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch


ATOL = RTOL = 1e-4


SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")


# The sanitizer runs' evidence scripts under benchmarks/ (benchmarks/sanitize.sh queues them):
FAST_MODE_PROBE = "sanitize_fast_mode.py"      # initcheck on cuDNN's channels-last output and on our fast kernels


BULK_STORE_PROBE = "sanitize_bulk_stores.py"   # the one-pass forward's y in NaN-filled memory, every value overwritten


@dataclass
class Row:
    solution: str
    case: str
    verdict: str
    err_ref: float | None = None
    err_fp64: float | None = None
    ref_err_fp64: float | None = None
    message: str = ""
    tol: float | None = None


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(cls, init, seed=0):
    torch.manual_seed(seed)
    return cls(*init).cuda()


def tolerance_for(params: dict) -> float:
    """1e-4, or 1e-2 for a variant whose header says it is not equivalent at 1e-4 (--conv fast; --conv fused,
    judged in the "tf32" mode: judge_mode)."""
    return 1e-2 if params.get("conv") in ("fast", "fused") else ATOL


def judge_mode(params: dict) -> str:
    """"tf32" for --conv fused (kgen's TF32 convolution, where cuDNN's reference picks float32 algorithms at small
    shapes: compared with float64 at TF32's tolerance, compare_tensor), else "default"."""
    return TF32 if params.get("conv") == "fused" else "default"


def max_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| (in float64) over the elements where both are finite."""
    if a.numel() == 0:
        return 0.0
    both = torch.isfinite(a) & torch.isfinite(b)
    d = (a.double() - b.double()).abs()[both]
    return float(d.max()) if d.numel() else 0.0


def special_pattern(t: torch.Tensor) -> torch.Tensor:
    """0 finite, 1 NaN, 2 +Inf, 3 -Inf, per element."""
    return t.isnan().to(torch.int8) + 2 * t.isposinf().to(torch.int8) + 3 * t.isneginf().to(torch.int8)


def forward_backward(model, x, dtype, seed: int = 1) -> tuple[torch.Tensor, dict]:
    """Output and {name: gradient} (every floating-point input and every parameter), with an upstream gradient
    drawn from its own generator in float32 (the same numbers for every model and dtype). x: one tensor, or the
    list of a model's inputs (Python numbers passed as they are)."""
    many = isinstance(x, (list, tuple))
    given = list(x) if many else [x]
    args = [t.detach().clone().to(dtype).requires_grad_() if isinstance(t, torch.Tensor) and t.is_floating_point()
            else t for t in given]
    y = model(*args)
    generator = torch.Generator(device=y.device)
    generator.manual_seed(seed)
    upstream = torch.randn(y.shape, generator=generator, device=y.device, dtype=torch.float32).to(dtype)
    y.backward(upstream)
    tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
    grads = {("input" if len(tensors) == 1 else f"input {i}"): a.grad for i, a in tensors}
    grads.update({name: p.grad for name, p in model.named_parameters()})
    model.zero_grad(set_to_none=True)
    return y.detach(), grads


TF32 = "tf32"


TF32_TOL, TF32_PARAM_TOL = 1e-2, 3e-2


def compare_tensor(name: str, new, ref, exact, tol: float, mode: str = "default") -> tuple[bool, float, float, float, str]:
    """(ok, err vs reference, err vs float64, reference's err vs float64, problem) for one tensor.
    mode "tf32" (a TF32 convolution the reference does not run: --conv fused, whose cuDNN reference picks float32
    algorithms at small shapes): the tensor within 1e-2 of float64 (atol and rtol), a parameter gradient (a sum
    over the batch) within 3e-2 of float64 times max(1, its largest magnitude), as tests/gpu/test_convt_gelu_groupnorm.py
    holds it."""
    if isinstance(new, str):   # "only-solution" / "only-reference": a parameter the other model lacks
        return False, math.nan, math.nan, math.nan, f"{name}: a parameter only in the {new[5:]}"
    if new is None or ref is None or exact is None:
        if new is None and ref is None:
            return True, 0.0, 0.0, 0.0, ""
        return False, math.nan, math.nan, math.nan, f"{name}: gradient missing in the " + (
            "solution" if new is None else "reference" if ref is None else "float64 reference")
    if new.shape != ref.shape or new.shape != exact.shape:
        return False, math.nan, math.nan, math.nan, f"{name}: shape {tuple(new.shape)} vs reference {tuple(ref.shape)}"
    pattern = special_pattern(new)
    pattern_ok = torch.equal(pattern, special_pattern(ref)) or torch.equal(pattern, special_pattern(exact))
    err_ref, err_64, ref_64 = max_err(new, ref), max_err(new, exact), max_err(ref, exact)
    if mode == TF32:
        parameter = name.startswith("grad ") and not name.startswith("grad input")
        finite = torch.isfinite(new) & torch.isfinite(exact)
        scale = float(exact[finite].abs().max()) if bool(finite.any()) else 0.0
        rtol = TF32_PARAM_TOL if parameter else TF32_TOL
        atol = rtol * max(1.0, scale) if parameter else rtol
        close = torch.allclose(new[finite].double(), exact[finite].double(), atol=atol, rtol=rtol)
        beyond = f"{name}: max err {err_64:.2e} vs float64 beyond TF32's {atol:.1e} + {rtol:.0e} x |value|"
    else:
        finite = torch.isfinite(new) & torch.isfinite(ref)
        close = torch.allclose(new[finite], ref[finite], atol=tol, rtol=tol) or err_64 <= 2 * ref_64 + tol
        beyond = f"{name}: max err {err_ref:.2e} vs reference, {err_64:.2e} vs float64 (reference {ref_64:.2e})"
    ok = pattern_ok and close
    problem = "" if ok else (
        f"{name}: NaN/Inf where neither the reference nor float64 has them (or missing)" if not pattern_ok else beyond)
    return ok, err_ref, err_64, ref_64, problem


def judge(new_model, ref_model, x, tol: float = ATOL, reference_channels_last: bool = False,
          mode: str = "default") -> tuple[str, float, float, float, str]:
    """Forward and backward of the solution, the reference and a float64 copy of the reference on x (a tensor,
    or the list of the models' inputs): the output and every gradient (inputs and parameters, matched by name)
    compared. reference_channels_last: the float32 reference gets 4-D inputs in channels-last memory, so it runs
    the same cuDNN kernels as a --conv fast solution (whose TF32 weight gradient differs from the NCHW one; the
    float64 copy stays NCHW). mode: "default", or "tf32" (compare_tensor)."""
    new_y, new_g = forward_backward(new_model, x, torch.float32)

    def channels_last(t):
        return t.contiguous(memory_format=torch.channels_last) if isinstance(t, torch.Tensor) and t.dim() == 4 else t

    x_ref = x
    if reference_channels_last:
        x_ref = [channels_last(t) for t in x] if isinstance(x, (list, tuple)) else channels_last(x)
    ref_y, ref_g = forward_backward(ref_model, x_ref, torch.float32)
    y64, g64 = forward_backward(_double_copy(ref_model), x, torch.float64)
    tensors = [("output", new_y, ref_y, y64)]
    for key in list(ref_g) + [k for k in new_g if k not in ref_g]:
        if key not in new_g or key not in ref_g:
            where = "solution" if key in new_g else "reference"
            tensors.append((f"grad {key}", "only-" + where, None, None))
            continue
        tensors.append((f"grad {key}", new_g[key], ref_g[key], g64.get(key)))
    oks, problems, errs = [], [], []
    for name, new, ref, exact in tensors:
        ok, e_ref, e_64, r_64, problem = compare_tensor(name, new, ref, exact, tol, mode)
        oks.append(ok)
        errs.append((e_ref, e_64, r_64))
        if problem:
            problems.append(problem)
    def worst(i: int) -> float:
        values = [e[i] for e in errs]
        return math.nan if any(math.isnan(v) for v in values) else max(values)

    verdict = "PASS" if all(oks) else "WRONG"
    message = "; ".join(problems[:3]) if problems else f"{len(tensors)} tensors compared (output + gradients)"
    return verdict, worst(0), worst(1), worst(2), message


def _double_copy(model):
    import copy

    return copy.deepcopy(model).double()


def settle() -> None:
    """Wait for the device and free cached memory; a sticky CUDA error surfaces in the next row instead."""
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except Exception as error:
        print(f"reliability: device error after a case: {first_line(error)}", flush=True)


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:160]


_DEADLINE = math.inf


def set_budget(seconds: float | None) -> None:
    """Sections stop starting new files or families `seconds` from now (the rest: NOT RUN rows)."""
    global _DEADLINE
    _DEADLINE = math.inf if seconds is None else time.monotonic() + seconds


def out_of_time() -> bool:
    return time.monotonic() > _DEADLINE
