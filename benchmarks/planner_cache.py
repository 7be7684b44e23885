"""Forward time of two L1-35 solution files at small shapes, where the one-pass planner's host-side set-up
is a visible share of a call: the file before the planner cached its device queries, and after.

    PYTHONPATH=. python3 benchmarks/planner_cache.py BEFORE.py AFTER.py [--json OUT.json]

Both files are built (load_inline) and run in this process, alternately, on the same inputs; CUDA-event
medians over many calls of ModelNew.forward under no_grad (the planner runs on every forward call).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics

import torch

SHAPES = [(2, 64, 32, 32), (8, 64, 64, 64), (1, 16, 8, 8)]


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def median_ms(fn, reps: int = 2000) -> float:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps // 5):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / (reps // 5))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--json")
    args = parser.parse_args()
    modules = {"before": load(args.before, "before_cache"), "after": load(args.after, "after_cache")}
    rows = []
    for shape in SHAPES:
        x = torch.rand(*shape, device="cuda")
        models = {}
        for key, module in modules.items():
            torch.manual_seed(0)
            models[key] = module.ModelNew(shape[1], 8).cuda()
        with torch.no_grad():
            outs = {key: model(x) for key, model in models.items()}
            assert torch.equal(outs["before"], outs["after"]), "the two files disagree"
            row = {"shape": list(shape)}
            for _ in range(2):  # alternate, twice: a difference smaller than the spread is noise
                for key, model in models.items():
                    row.setdefault(key, []).append(median_ms(lambda: model(x)))
        rows.append(row)
        print(f"{'x'.join(map(str, shape)):>14}  before {min(row['before']) * 1e3:8.2f} us  "
              f"after {min(row['after']) * 1e3:8.2f} us  (runs: {', '.join(f'{v * 1e3:.2f}' for v in row['before'])}"
              f" | {', '.join(f'{v * 1e3:.2f}' for v in row['after'])})", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
