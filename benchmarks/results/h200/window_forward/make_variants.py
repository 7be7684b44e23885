"""The window forward kernel with more of a window's loads in flight: BASE.py's window_forward_kernel rewritten with
K loads a round instead of 4, one file per K (what kernel_variants.py times against the base).

    python3 make_variants.py BASE.py OUT_DIR K [K ...]
"""
import sys
from pathlib import Path

OLD_LOADS = ("w0 += 4) {\n    float v[4];\n#pragma unroll\n    for (int u = 0; u < 4; ++u) {\n"
             "      if (w0 + u < geo.window_elems) {\n        v[u] = load1(")
OLD_PUSH = "    for (int u = 0; u < 4; ++u) {\n      if (w0 + u < geo.window_elems) {\n        Red::push("

if __name__ == "__main__":
    base, out, ks = Path(sys.argv[1]), Path(sys.argv[2]), [int(k) for k in sys.argv[3:]]
    text = base.read_text()
    assert text.count(OLD_LOADS) == 1 and text.count(OLD_PUSH) == 1, "the window forward kernel changed: update me"
    out.mkdir(parents=True, exist_ok=True)
    for k in ks:
        new = text.replace(OLD_LOADS, OLD_LOADS.replace("4", str(k))).replace(OLD_PUSH, OLD_PUSH.replace("4", str(k)))
        (out / f"loads{k}.py").write_text(new)
        print(out / f"loads{k}.py")
