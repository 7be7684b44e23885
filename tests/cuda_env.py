"""Environment for building CUDA extensions on a machine with nvcc but no GPU (CI): the toolkit that the
`nvcc` on PATH belongs to, the headers torch's CUDA wheels install, and the target architectures."""
from __future__ import annotations

import os
import re
import shutil
import site
from pathlib import Path

BUILD_ARCHS = "8.0;9.0"


def toolkit_root() -> Path | None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    path = Path(nvcc).resolve()
    text = path.read_text(errors="ignore") if path.stat().st_size < 4096 else ""
    wrapped = re.search(r"(/\S+)/bin/nvcc", text)  # a wrapper script: `exec /usr/local/cuda-13.0/bin/nvcc "$@"`
    if wrapped:
        return Path(wrapped.group(1))
    return path.parent.parent


def build_environment() -> dict[str, str]:
    root = toolkit_root()
    env = {"TORCH_CUDA_ARCH_LIST": BUILD_ARCHS}
    if root is not None:
        env["CUDA_HOME"] = str(root)
    includes = [str(p / "nvidia" / "cu13" / "include") for p in map(Path, site.getsitepackages())
                if (p / "nvidia" / "cu13" / "include").is_dir()]
    env["CPATH"] = os.pathsep.join(includes + [os.environ.get("CPATH", "")]).strip(os.pathsep)
    return env
