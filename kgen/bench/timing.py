"""Time one solution against its reference eager and under torch.compile, forward and forward+backward, in
one process: the figures `kgen validate --bench` reports (kgen.validate.bench.run_bench), without the
validator's checks. For benchmarks/family.py, whose correctness pass has run `kgen validate` already.

    python3 benchmarks/bench_problem.py SOLUTION REFERENCE [--json PATH] [--min-run-time S] [--warm-compile]
                                        [--copy-bytes N] [--precision fp32|fp16|bf16]

--precision times all three contenders with the models and the floating-point inputs moved to that dtype, as
KernelBench's --precision runs them.

The JSON also lists the kernels one forward of each contender launches, longest first (`forward_kernels`):
where torch.compile wins by running a library op in another layout or algorithm, it shows there; and the
kernels of one backward of kgen's model (`backward_kernels`), for its kernels' rate. With
--copy-bytes N it holds `copy`, a device copy moving N bytes timed in the same process: the rate kgen's kernels
are held to at their size (a 67 MB transfer does not reach a 4 GB one's rate).

`gpu_us_per_step` holds the GPU time of one timed step (every kernel of kgen's and eager's forward, and
forward+backward, summed): beside the step's time and its host time, whether it is bound by the GPU, by the host,
or ran the two one after the other.

The JSON's `phases_s` holds the wall seconds of each phase (loading, the timings with their torch.compile, the
traces, the copy): where a bench's time goes.

--warm-compile compiles the reference (forward, and forward+backward) once and times nothing: run beside
other work, it leaves Inductor's on-disk caches (TORCHINDUCTOR_CACHE_DIR) warm for a later timing run in
another process, whose torch.compile then takes seconds instead of tens of seconds.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from kgen.validate.bench import forward_backward_step, forward_step, run_bench
from kgen.validate.context import channels_last, import_file, to_channels_last

SEED = 42
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def copy_rate(megabytes: float, repeats: int = 50) -> dict:
    """The DRAM copy rate at a size: `out.copy_(x)` of a float32 tensor of `megabytes` MB (read + write, CUDA
    events, the median of `repeats` after warm-up). The floor a kernel moving that many bytes is judged against:
    a 67 MB transfer does not reach the rate of a 4 GB one."""
    n = int(megabytes * 1e6 / 4)
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    for _ in range(5):
        out.copy_(x)
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out.copy_(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    ms = sorted(times)[len(times) // 2]
    moved = 2 * n * 4
    return {"tensor_mb": round(n * 4 / 1e6, 1), "moved_gb": round(moved / 1e9, 4), "ms": round(ms, 4),
            "tb_per_s": round(moved / ms / 1e9, 3)}


def load(solution: str, reference: str, device: torch.device, dtype: torch.dtype = torch.float32,
         layout: bool = False):
    """Both models from the same seed on `device`, moved to `dtype`, and the reference's inputs (floating-point ones
    in `dtype`); with `layout`, their 4-d and 5-d tensors channels-last (kgen.validate.context.channels_last)."""
    ref_mod = import_file(reference, "bench_reference")
    new_mod = import_file(solution, "bench_solution")
    init = list(ref_mod.get_init_inputs())
    torch.manual_seed(SEED)
    ref_model = ref_mod.Model(*init).to(device=device, dtype=dtype)
    torch.manual_seed(SEED)
    new_model = new_mod.ModelNew(*init).to(device=device, dtype=dtype)
    if layout:
        ref_model, new_model = to_channels_last(ref_model), to_channels_last(new_model)

    def make_inputs() -> list:
        torch.manual_seed(SEED + 1)
        inputs = [x.to(device=device, dtype=dtype if x.is_floating_point() else x.dtype)
                  if isinstance(x, torch.Tensor) else x for x in ref_mod.get_inputs()]
        return [channels_last(x) if layout and isinstance(x, torch.Tensor) and x.is_floating_point() else x
                for x in inputs]
    return ref_model, new_model, make_inputs


def warm_compile(ref_model, inputs: list) -> None:
    compiled = torch.compile(ref_model)
    with torch.no_grad():
        compiled(*inputs)
    leaves = [x.detach().requires_grad_(True) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x in inputs]
    out = compiled(*leaves)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]
    torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
    torch.cuda.synchronize()


def kernel_times(fn, calls: int = 3) -> dict[str, float]:
    """Every CUDA kernel (and memcpy / memset) one call of fn runs, by name: its mean GPU time per call, us
    (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    totals: dict[str, float] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[event.name] = totals.get(event.name, 0.0) + event.time_range.elapsed_us() / calls
    return totals


def kernel_trace(fn, calls: int = 3, top: int = 8) -> list[dict]:
    """The `top` longest kernels of kernel_times, longest first: what each contender runs, e.g. which convolution
    algorithm and layout."""
    rows = sorted(kernel_times(fn, calls).items(), key=lambda item: -item[1])
    return [{"kernel": name[:160], "us": round(us, 1)} for name, us in rows[:top]]


def step_gpu_us(ref_model, new_model, make_inputs) -> dict:
    """The GPU time of one timed step (every kernel's, summed), kgen and eager, forward without grad and
    forward+backward as kgen.validate.bench times them: a step whose time exceeds both this and its host time ran
    the two one after the other."""
    inputs = make_inputs()
    with torch.no_grad():
        out = ref_model(*inputs)
    upstream = [torch.randn_like(o) for o in (out if isinstance(out, (tuple, list)) else [out])
                if isinstance(o, torch.Tensor)]
    leaves = [x.detach().requires_grad_(True) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x in inputs]
    steps = {}
    for name, model in (("kgen", new_model), ("eager", ref_model)):
        steps[name] = {"forward": round(sum(kernel_times(forward_step(model, inputs)).values()), 1),
                       "forward_backward": round(sum(kernel_times(
                           forward_backward_step(model, leaves, upstream)).values()), 1)}
    return steps


def forward_traces(ref_model, new_model, make_inputs) -> dict:
    """kernel_trace of one no-grad forward of kgen, eager and torch.compile (its kernels already compiled)."""
    inputs = make_inputs()
    compiled = torch.compile(ref_model)
    traces = {}
    with torch.no_grad():
        for name, model in (("kgen", new_model), ("eager", ref_model), ("compile", compiled)):
            traces[name] = kernel_trace(lambda: model(*inputs))
    return traces


def backward_trace(new_model, make_inputs) -> list[dict]:
    """kernel_trace of one backward of kgen's model (its forward run once, outside the trace, the graph kept):
    the backward kernels' times, for their rate against the bytes they must move."""
    inputs = [x.requires_grad_(True) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x in make_inputs()]
    out = new_model(*inputs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor)]
    grads = [torch.randn_like(o) for o in outs]
    return kernel_trace(lambda: torch.autograd.backward(outs, grads, retain_graph=True), top=12)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("solution")
    parser.add_argument("reference")
    parser.add_argument("--json")
    parser.add_argument("--min-run-time", type=float, default=1.0)
    parser.add_argument("--warm-compile", action="store_true")
    parser.add_argument("--precision", choices=sorted(DTYPES), default="fp32",
                        help="the dtype the models and the floating-point inputs are moved to")
    parser.add_argument("--channels-last", action="store_true",
                        help="the models' and the floating-point inputs' 4-d and 5-d tensors laid out channels-last")
    parser.add_argument("--copy-bytes", type=int, default=0,
                        help="also time a device copy moving this many bytes (read + write): the DRAM rate a kernel "
                             "moving them can reach at that size (copy_rate)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_problem: no CUDA device", file=sys.stderr)
        return 3
    device = torch.device("cuda")
    phases, mark = {}, [time.perf_counter()]

    def phase(name: str) -> None:   # seconds since the previous phase ended (where a bench's minutes go)
        now = time.perf_counter()
        phases[name] = round(now - mark[0], 2)
        mark[0] = now

    ref_model, new_model, make_inputs = load(args.solution, args.reference, device, DTYPES[args.precision],
                                             args.channels_last)
    phase("load")
    if args.warm_compile:
        warm_compile(ref_model, make_inputs())
        print("warm-compile: done")
        return 0
    result = run_bench(ref_model, new_model, make_inputs, backward=True, device=device,
                       min_run_time=args.min_run_time, log=lambda line: None)
    phase("timings")
    try:   # a trace is an aid: the timings above stand without it
        result["forward_kernels"] = forward_traces(ref_model, new_model, make_inputs)
    except Exception as error:  # noqa: BLE001
        result["forward_kernels_error"] = f"{type(error).__name__}: {error}"[:300]
    phase("forward_traces")
    try:
        result["backward_kernels"] = backward_trace(new_model, make_inputs)
    except Exception as error:  # noqa: BLE001
        result["backward_kernels_error"] = f"{type(error).__name__}: {error}"[:300]
    phase("backward_trace")
    try:
        result["gpu_us_per_step"] = step_gpu_us(ref_model, new_model, make_inputs)
    except Exception as error:  # noqa: BLE001
        result["gpu_us_per_step_error"] = f"{type(error).__name__}: {error}"[:300]
    phase("gpu_us_per_step")
    if args.copy_bytes > 0:
        result["copy"] = copy_rate(args.copy_bytes / 2 / 1e6)
        phase("copy")
    result["phases_s"] = phases
    result["gpu"] = torch.cuda.get_device_name(device)
    result["torch"] = torch.__version__
    result["precision"] = args.precision
    result["channels_last"] = args.channels_last
    text = json.dumps(result, indent=1, default=str)
    if args.json:
        Path(args.json).write_text(text)
    for mode in ("forward", "forward_backward"):
        row = result.get(mode, {})
        print(f"{mode}: kgen {row.get('new_ms')} eager {row.get('eager_ms')} compile {row.get('compile_ms')} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
