"""The probe references of call.sh: GroupNorm then GELU over slices of 1,024 to 8,192 values (below the slices
../README.md measured), where region_resident_pays keeps the resident backward; one KernelBench-format file each.

    python3 benchmarks/results/h200/cliffs/resident_backward_small/probes.py OUT_DIR
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probes import write  # noqa: E402  (../probes.py: GroupNorm then GELU)

# name -> (input shape, groups); the slice (channels per group x plane) in the name
PROBES = {
    "in_2d_1024": ((32, 256, 32, 32), 256),
    "in_2d_4096": ((8, 128, 64, 64), 128),
    "in_2d_4096_rows4k": ((32, 128, 64, 64), 128),
    "in_1d_4096": ((16, 256, 4096), 256),
    "cl_2d_2048": ((16, 256, 32, 32), 128),
    "cl_2d_4096": ((16, 256, 32, 32), 64),
    "cl_2d_6272": ((32, 128, 56, 56), 64),
    "cl_2d_8192": ((8, 512, 32, 32), 64),
}


def main() -> int:
    write(Path(sys.argv[1]), PROBES)
    return 0

if __name__ == "__main__":
    sys.exit(main())
