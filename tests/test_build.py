"""Every file in generated/ compiles with nvcc for sm_80 and sm_90, exactly as a user's load_inline
would build it. Needs nvcc (CI has it), no GPU: the build runs in a child process with the toolkit,
the headers of torch's CUDA wheels, and TORCH_CUDA_ARCH_LIST set (tests/cuda_env.py)."""
import os
import subprocess
import sys

import pytest

from kgen.golden import GENERATED, GOLDEN, GOLDEN_REF
from tests.cuda_env import BUILD_ARCHS, build_environment, build_problem

pytestmark = pytest.mark.build

_BUILD = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("solution_under_build", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print("BUILT", module._ext.__name__)
"""


# One file per kernel family and variant: every --ref golden, the L2-92 preset (the channel log-sum-exp region) and
# the --conv fused preset (kgen's wgmma conv, built for sm_90a besides the targets). The other presets are the planner on their bundled
# references with kernels these files already build (L1-35: the one-pass and two-pass regions of
# ref_level2_19_..._onepass.py; L2-19 exact, tanh and fast: the same regions and the channels-last one of
# ref_level2_19_..._fast.py); the GPU machine builds every file (benchmarks/device_run.sh presets-bench).
BUILT = sorted(GOLDEN_REF) + ["conv_gn_tanh_hardswish_res_lse.py", "convt_gelu_groupnorm_fused.py"]


def test_every_built_file_is_a_golden():
    assert set(BUILT) <= set(GOLDEN) | set(GOLDEN_REF)


@pytest.mark.skipif(build_problem() is not None, reason=build_problem() or "")
@pytest.mark.parametrize("name", BUILT)
def test_generated_file_builds_for_sm80_and_sm90(name, tmp_path):
    env = dict(os.environ, **build_environment(), TORCH_EXTENSIONS_DIR=str(tmp_path), MAX_JOBS="2")
    result = subprocess.run([sys.executable, "-c", _BUILD, str(GENERATED / name)], env=env,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "BUILT" in result.stdout
    flags = " ".join(p.read_text() for p in tmp_path.rglob("build.ninja"))
    for arch in BUILD_ARCHS.split(";"):
        assert f"sm_{arch.replace('.', '')}" in flags, f"not built for {arch}"
    for library in tmp_path.rglob("*.so"):   # each extension keeps its own statics (solution.py.j2's flags)
        unique = _gnu_unique_kgen_symbols(library)
        assert not unique, f"kgen statics shared by every extension of a process: {unique[:3]}"
    if "fused" in name:
        assert "sm_90a" in flags, "kgen's wgmma conv was not built for sm_90a"


def _gnu_unique_kgen_symbols(library) -> list[str]:
    """kgen's symbols that the dynamic linker would make one per process (nm's `u`): [] where nm is missing."""
    import shutil
    if shutil.which("nm") is None:
        return []
    listed = subprocess.run(["nm", "-DC", "--defined-only", str(library)], capture_output=True, text=True).stdout
    return [line for line in listed.splitlines() if " u " in line and "kgen::" in line]
