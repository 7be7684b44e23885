"""Does the one-pass GroupNorm forward write every value of y? (initcheck says it does not, and is wrong)

The one-pass forward writes y only with Hopper bulk (TMA) stores. Under `compute-sanitizer --tool initcheck`,
benchmarks/sanitize.py reports PyTorch's elementwise kernels reading a freshly allocated y as reading
uninitialised memory. This probe runs the one-pass (or two-pass) forward into memory first filled with NaN
(the caching allocator hands y that block), reads y with an elementwise kernel (y * 1), and exits 1 unless
no NaN is left and y equals the two-pass result. Every value overwritten means the bulk stores wrote all of
y; initcheck reports 0 here only because the NaN fill marked the memory written. Together: initcheck does not
register bulk-store writes. benchmarks/sanitize.sh runs it beside the sanitizers (the bulk-store-probe row that
kgen.bench.reliability's bulk_stores_explained reads).

    python3 benchmarks/sanitize_bulk_stores.py one-pass|two-pass      (needs sm_90)
"""
import sys
from pathlib import Path

if len(sys.argv) != 2 or sys.argv[1] not in ("one-pass", "two-pass"):
    print(__doc__)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "gpu"))
import test_groupnorm_onepass as onepass  # noqa: E402

mode = sys.argv[1]
ext = onepass.build_extension()
x, w, b = onepass.inputs((2, 64, 64, 64), 7)
threads = 512 if mode == "one-pass" else 0
assert ext.plan(2, 64, 8, 64 * 64, 512, 1)[0] == 1, "the planner must take the one-pass path here"
poison = torch.full_like(x, float("nan"))
del poison  # y gets this block back
y = ext.forward(x, w, b, 8, threads, 1, False)[0]
read = y * 1.0  # an elementwise kernel reads every value of y
want = ext.forward(x, w, b, 8, 0, 1, False)[0]
torch.cuda.synchronize()
unwritten = int(torch.isnan(read).sum())
diff = (read - want).abs().max().item()
print(f"{mode}: y has {y.numel()} values, {unwritten} still NaN, max |y - two-pass| = {diff:.3g}")
sys.exit(0 if unwritten == 0 and diff < 1e-5 else 1)
