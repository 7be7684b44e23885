"""The probe references of cliffs.sh: GroupNorm then GELU at slice sizes on either side of the kernel-choice rules,
one KernelBench-format file each, written into a folder.

    python3 benchmarks/results/h200/cliffs/probes.py OUT_DIR
"""
import sys
from pathlib import Path

# name -> (input shape, groups); the slice (channels per group x plane) in the name
PROBES = {
    "cl_1d_12799": ((8, 512, 12799), 512),
    "cl_2d_1024": ((32, 256, 16, 16), 64),
    "cl_2d_6272": ((32, 128, 56, 56), 64),
    "cl_2d_9216": ((16, 128, 48, 48), 32),
    "cl_2d_12544": ((32, 64, 56, 56), 16),
    "cl_2d_16384": ((8, 256, 64, 64), 64),
    "cl_3d_16384": ((4, 64, 16, 32, 32), 64),
}

REFERENCE = '''"""GroupNorm then GELU, {shape}, {groups} groups: a kernel-choice probe."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return F.gelu(self.norm(x))


def get_inputs():
    return [torch.randn{shape}]


def get_init_inputs():
    return [{channels}, {groups}]
'''


def write(out: Path, probes: dict) -> None:
    """One reference file a probe, `name.py` in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    for name, (shape, groups) in probes.items():
        (out / f"{name}.py").write_text(REFERENCE.format(shape=shape, channels=shape[1], groups=groups))


def main() -> int:
    write(Path(sys.argv[1]), PROBES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
