"""Environment for building CUDA extensions on a machine with nvcc but no GPU (CI).

The CUDA headers come from the toolkit whose nvcc compiles: torch passes `-I $CUDA_HOME/include` and
nvcc adds its own CCCL (`include/cccl`). pip's torch may ship newer CUDA headers
(`site-packages/nvidia/cu13/include`, e.g. CUDA 13.2 and CCCL 13.3 with torch 2.15), and a minimal toolkit
may lack some library headers that torch's ATen includes (cuBLAS, cuSPARSE, cuSOLVER...). Only THOSE
headers — the ones the toolkit does not have — are offered, through a directory of links to them on
CPATH, which the compiler searches after every `-I` directory: a header the toolkit has always wins, so
the compiler never meets headers of another CUDA version (CCCL refuses that with "CUDA compiler and CUDA
toolkit headers are incompatible").

`build_problem()` says in one line why nothing can be built here (no nvcc, a CPU-only torch, or a torch
built for another CUDA major version than the nvcc on PATH), or None when builds can run."""
from __future__ import annotations

import hashlib
import re
import shutil
import site
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

BUILD_ARCHS = "8.0;9.0"


@lru_cache(maxsize=None)
def toolkit_root() -> Path | None:
    """The CUDA toolkit the `nvcc` on PATH belongs to (through a wrapper script if it is one)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    path = Path(nvcc).resolve()
    text = path.read_text(errors="ignore") if path.stat().st_size < 4096 else ""
    wrapped = re.search(r"(/\S+)/bin/nvcc", text)  # a wrapper script: `exec /usr/local/cuda-13.0/bin/nvcc "$@"`
    if wrapped:
        return Path(wrapped.group(1))
    return path.parent.parent


@lru_cache(maxsize=None)
def nvcc_version() -> tuple[int, int] | None:
    root = toolkit_root()
    if root is None:
        return None
    out = subprocess.run([str(root / "bin" / "nvcc"), "--version"], capture_output=True, text=True).stdout
    found = re.search(r"release (\d+)\.(\d+)", out)
    return (int(found.group(1)), int(found.group(2))) if found else None


def build_problem() -> str | None:
    """One line saying why CUDA extensions cannot be built here, or None."""
    import torch

    if toolkit_root() is None:
        return "nvcc is not installed here"
    version = nvcc_version()
    if version is None:
        return f"cannot read the CUDA version of {toolkit_root()}/bin/nvcc"
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU-only build: it cannot build CUDA extensions"
    torch_major = int(torch.version.cuda.split(".")[0])
    if torch_major != version[0]:
        return (f"torch {torch.__version__} is built for CUDA {torch.version.cuda}, the nvcc here is "
                f"{version[0]}.{version[1]}: no compatible nvcc")
    return None


def _pip_cuda_includes() -> list[Path]:
    dirs = []
    for base in map(Path, site.getsitepackages()):
        nvidia = base / "nvidia"
        if nvidia.is_dir():
            dirs += sorted(p for p in nvidia.glob("*/include") if p.is_dir())
    return dirs


def missing_headers_dir() -> Path | None:
    """A directory of links to the headers pip's CUDA packages ship and the toolkit lacks (top-level
    files only; the toolkit's own subdirectories, CCCL included, are never shadowed). None if none."""
    root = toolkit_root()
    if root is None:
        return None
    toolkit_include = root / "include"
    have = {p.name for p in toolkit_include.iterdir()} if toolkit_include.is_dir() else set()
    links = {}
    for include in _pip_cuda_includes():
        for header in sorted(include.iterdir()):
            if header.is_file() and header.name not in have:
                links.setdefault(header.name, header)
    if not links:
        return None
    key = hashlib.sha256("\n".join(f"{k}={v}" for k, v in sorted(links.items())).encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"kgen-cuda-missing-headers-{key}"
    if not target.is_dir():
        staging = Path(tempfile.mkdtemp(prefix="kgen-cuda-headers-"))
        for name, header in links.items():
            (staging / name).symlink_to(header)
        staging.rename(target) if not target.exists() else shutil.rmtree(staging)
    return target


def build_environment() -> dict[str, str]:
    """Variables for a child process that builds with load_inline: CUDA_HOME = the nvcc's toolkit,
    the target architectures, and CPATH holding only headers that toolkit lacks (see above)."""
    env = {"TORCH_CUDA_ARCH_LIST": BUILD_ARCHS}
    root = toolkit_root()
    if root is not None:
        env["CUDA_HOME"] = str(root)
    extra = missing_headers_dir()
    env["CPATH"] = str(extra) if extra is not None else ""
    return env
