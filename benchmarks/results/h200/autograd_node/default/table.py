"""The table of README.md from the cmp_*.json files call.sh leaves: python Function (old) / C++ node (new) / eager, ms.
python3 table.py DIR"""
import json, sys
from pathlib import Path

rows = sorted(Path(sys.argv[1]).glob("cmp_*.json"), key=lambda p: (not p.stem[4:].startswith("L"), p.stem))
print("| reference | forward ms python / cpp / eager | cpp vs python | forward+backward ms python / cpp / eager "
      "| cpp vs python | cpp vs eager, fwd+bwd | bitwise |")
print("|---|---|---|---|---|---|---|")
for p in rows:
    r = json.loads(p.read_text())
    f, b = r["forward"], r["forward_backward"]
    bits = "yes" if r["bitwise_equal"] else f"no ({len(r['differ'])}, max {max(r['max_abs']):.1e})"
    print(f"| {p.stem[4:]} | {f['old']:.3f} / {f['new']:.3f} / {f['eager']:.3f} | {f['new'] / f['old'] - 1:+.1%} "
          f"| {b['old']:.3f} / {b['new']:.3f} / {b['eager']:.3f} | {b['new'] / b['old'] - 1:+.1%} "
          f"| {b['eager'] / b['new']:.2f}x | {bits} |")
