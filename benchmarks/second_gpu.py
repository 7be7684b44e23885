"""The device guard of every generated solution: model and input on cuda:1 while the current device is cuda:0.

    PYTHONPATH=. python3 benchmarks/second_gpu.py          (needs two GPUs)

For each file in generated/, builds ModelNew and its reference on cuda:1 (same seed), runs forward and
backward on a small cuda:1 input WITHOUT making cuda:1 the current device, and compares the output and every
gradient with the reference's at the file's tolerance (the --conv fast file: 1e-2, reference fed channels-last,
as in benchmarks/reliability.py). Kernels launched on the wrong device, or on cuda:0's stream, would fail or
differ. Prints one line per file; exit 1 if any differs or raises.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from benchmarks.reliability import forward_backward, load, small_problem, tolerance_for
from kgen.golden import GENERATED, GOLDEN
from kgen.header import parse_header
from kgen.specs import get_spec


def check(file_name: str) -> tuple[bool, str]:
    header = parse_header((GENERATED / file_name).read_text())
    spec = get_spec(header.spec)
    module = load(GENERATED / file_name, "second_gpu_" + Path(file_name).stem)
    reference = load(spec.matching_reference_path(header.params), "second_gpu_ref_" + Path(file_name).stem)
    init, shape = small_problem(header.spec, header.params)
    torch.manual_seed(0)
    new = module.ModelNew(*init).to("cuda:1")
    torch.manual_seed(0)
    ref = reference.Model(*init).to("cuda:1")
    x = torch.rand(shape, device="cuda:1")
    new_y, new_g = forward_backward(new, x, torch.float32)
    x_ref = x.contiguous(memory_format=torch.channels_last) if header.params.get("conv") == "fast" else x
    ref_y, ref_g = forward_backward(ref, x_ref, torch.float32)
    torch.cuda.synchronize(1)
    tol = tolerance_for(header.params)
    worst, bad = 0.0, []
    for name, a, b in [("output", new_y, ref_y)] + [(k, new_g[k], ref_g[k]) for k in ref_g]:
        assert a.device == torch.device("cuda:1"), f"{name} on {a.device}"
        err = float((a.double() - b.double()).abs().max())
        worst = max(worst, err)
        if not torch.allclose(a, b, atol=tol, rtol=tol):
            bad.append(f"{name} max err {err:.2e}")
    assert torch.cuda.current_device() == 0
    return not bad, f"max err {worst:.2e} at tolerance {tol:g}" + ("; " + "; ".join(bad) if bad else "")


def main() -> int:
    if torch.cuda.device_count() < 2:
        print("second_gpu.py: needs two CUDA devices")
        return 3
    print(f"{torch.cuda.get_device_name(1)} x {torch.cuda.device_count()}, PyTorch {torch.__version__}; "
          f"current device {torch.cuda.current_device()}, models and inputs on cuda:1")
    failed = 0
    for file_name in GOLDEN:
        try:
            ok, detail = check(file_name)
        except Exception as error:   # reported as a failure; this is a test script, not a solution file
            ok, detail = False, f"raised {type(error).__name__}: {str(error).splitlines()[0][:200]}"
        failed += not ok
        print(f"{file_name:36s} {'PASS' if ok else 'FAIL'}  {detail}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
