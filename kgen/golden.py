"""The solutions committed under generated/: which spec and parameters each file is. A test re-emits
every one and compares bytes; `python -m kgen.golden` rewrites them after a template change."""
from __future__ import annotations

import sys
from pathlib import Path

from kgen.emit import emit

GENERATED = Path(__file__).resolve().parent.parent / "generated"

# file name -> (spec, parameters given on the command line)
GOLDEN: dict[str, tuple[str, dict]] = {
    "groupnorm.py": ("groupnorm", {}),
    "convt_gelu_groupnorm.py": ("convt-gelu-groupnorm", {}),
    "convt_gelu_groupnorm_tanh.py": ("convt-gelu-groupnorm", {"gelu": "tanh"}),
    "convt_gelu_groupnorm_fast.py": ("convt-gelu-groupnorm", {"conv": "fast"}),
    "conv_gn_tanh_hardswish_res_lse.py": ("conv-gn-tanh-hardswish-res-lse", {}),
}


def render_all() -> dict[str, str]:
    return {name: emit(spec, dict(params))[0] for name, (spec, params) in GOLDEN.items()}


def main() -> int:
    GENERATED.mkdir(exist_ok=True)
    for name, text in render_all().items():
        (GENERATED / name).write_text(text)
        print(f"wrote generated/{name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
