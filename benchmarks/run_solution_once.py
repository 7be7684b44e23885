"""Runs an emitted solution file's forward (and with --backward its backward) a few times at its own
input shapes: a target for ncu / compute-sanitizer.

    python3 benchmarks/run_solution_once.py generated/FILE.py [--backward] [--calls 3] [--dtype bf16]

--dtype moves the model and its floating inputs to that dtype (as KernelBench's --precision does)."""
import argparse
import importlib.util

import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def load_solution(path: str, name: str = "solution_once"):
    """The emitted file at `path` as a module."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("solution")
    parser.add_argument("--backward", action="store_true")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    args = parser.parse_args()
    dtype = DTYPES[args.dtype]
    module = load_solution(args.solution)
    torch.manual_seed(0)
    model = module.ModelNew(*module.get_init_inputs()).cuda().to(dtype)
    inputs = [t.cuda().to(dtype).requires_grad_(args.backward) if t.is_floating_point() else t.cuda()
              for t in module.get_inputs()]
    for _ in range(args.calls):
        out = model(*inputs)
        if args.backward:
            out.backward(torch.ones_like(out))
    torch.cuda.synchronize()
    print("ran", args.calls, "calls of", args.solution)


if __name__ == "__main__":
    main()
