"""Does compute-sanitizer's initcheck see memory written by Hopper bulk (TMA) stores?

The one-pass GroupNorm forward writes y with cp.async.bulk stores. initcheck flagged PyTorch's own
elementwise kernels reading such a y. This probe runs the one-pass and the two-pass forward on the same
input and reads y with y.clone() (a PyTorch copy kernel) after each; run it under
`compute-sanitizer --tool initcheck`: reports only after the one-pass forward mean initcheck does not
track bulk-store writes (the values are right: the script compares both outputs and exits 1 if they differ).

    python benchmarks/diagnose_initcheck_bulk_store.py one-pass|two-pass"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "gpu"))
import test_groupnorm_onepass as onepass  # noqa: E402

mode = sys.argv[1]
ext = onepass.build_extension()
x, w, b = onepass.inputs((2, 64, 64, 64), 7)
threads = 512 if mode == "one-pass" else 0
assert ext.plan(2, 64, 8, 64 * 64, 512, 1)[0] == 1, "the planner must take the one-pass path here"
y = ext.forward(x, w, b, 8, threads, 1, False)[0]
copy = y.clone()
want = ext.forward(x, w, b, 8, 0, 1, False)[0]
torch.cuda.synchronize()
diff = (copy - want).abs().max().item()
print(f"{mode}: y has {y.numel()} values, max |one-pass - two-pass| = {diff:.3g}")
sys.exit(0 if diff < 1e-5 else 1)
