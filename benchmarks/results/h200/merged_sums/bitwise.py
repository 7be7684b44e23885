"""The merged references of tests/gpu/test_autograd_cpp.py alone: each emitted --autograd python and as the default C++
node, built in parallel first, then compared to the bit (fp32, bf16) as that test compares them.

    python3 benchmarks/results/h200/merged_sums/bitwise.py OUT_DIR
"""
import subprocess
import sys
from pathlib import Path

import torch

from kgen.ref.emit import emit_reference
from kgen.validate.stages.determinism import library_setting
from tests.gpu.test_autograd_cpp import ROOT, _compare, _load

MERGED = ["tests/corpus/diffusion_resblock_tiny.py", "tests/ref/unseen/gn_conditioned_every_param_kind.py"]


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for ref in MERGED:
        for mode in ("python", "cpp"):
            path = paths[ref, mode] = out / f"{Path(ref).stem}_{mode}.py"
            path.write_text(emit_reference(str(ROOT / ref), output=path, autograd=mode)[0])
    subprocess.run([sys.executable, "benchmarks/prebuild.py", "-j", "4", *map(str, paths.values())], check=True)
    failed = 0
    for k, ref in enumerate(MERGED):
        pair = (_load(ROOT / ref, f"bitwise_ref_{k}"),
                *(_load(paths[ref, mode], f"bitwise_{mode}_{k}") for mode in ("python", "cpp")))
        for dtype in (torch.float32, torch.bfloat16):
            with library_setting("cudnn.deterministic"):
                try:
                    _compare(pair, dtype)
                    print(f"{Path(ref).stem} {dtype}: the C++ node and the Python Function equal to the bit")
                except AssertionError as error:
                    failed += 1
                    print(f"{Path(ref).stem} {dtype}: DIFFER: {error}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
