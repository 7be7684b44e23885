"""Two kgen files in one process each run their own kernels with their own launch facts.

GCC gives a function-local static of an inline or template function one copy per process (STB_GNU_UNIQUE), whichever
extension defines it; the one-pass forward caches its device facts (granted shared memory, occupancy) in one, keyed
by the kernel's type. Two files with the same one-pass kernel type (here the groupnorm preset at block sizes 128 and
256: two extensions) then shared one cache, and the second file's cooperative launch failed ("too many blocks in
cooperative launch": its kernel was never granted the shared memory the first one's was). The emitted files build
with -fno-gnu-unique (solution.py.j2's _own_statics_flags); tests/test_build.py checks the built libraries for kgen
symbols of that binding. This test runs both files' one-pass forwards in one child process, against PyTorch."""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from kgen.bench.prebuild import build_one
from kgen.emit import emit

pytestmark = pytest.mark.gpu

CHILD = r"""
import importlib.util, sys
import torch
import torch.nn.functional as F

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

torch.manual_seed(0)
x = torch.randn(4, 64, 256, 256, device="cuda") * 2 + 1    # slices of 8 x 65536 values: one-pass, not resident
for k, path in enumerate(sys.argv[1:]):
    model = load(path, f"solution_{k}").ModelNew(64, 8).cuda()
    with torch.no_grad(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        out = model(x)
        torch.cuda.synchronize()
    kernels = [e.name for e in prof.events() if "onepass" in e.name]
    expected = F.group_norm(x.double(), 8, model.gn.weight.double(), model.gn.bias.double(), model.gn.eps)
    error = (out.double() - expected).abs().max().item()
    print(f"file {k}: one-pass kernels {len(kernels)}, max error {error:.2e}", flush=True)
    assert kernels, "the one-pass forward did not run"
    assert error < 1e-4, error
print("BOTH RAN")
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_two_one_pass_files_in_one_process(tmp_path):
    paths = []
    for size in (256, 128):
        path = tmp_path / f"groupnorm_{size}.py"
        path.write_text(emit("groupnorm", {"block_size": size, "forward": "one-pass"}, output=str(path))[0])
        paths.append(str(path))
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=os.environ.get("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext")))
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", env["TORCH_EXTENSIONS_DIR"])   # the builds below, at once
    with ThreadPoolExecutor(2) as pool:
        for path, code, _, output in pool.map(build_one, map(Path, paths)):
            assert code == 0, f"{path.name} did not build:\n{output[-3000:]}"
    done = subprocess.run([sys.executable, "-c", CHILD, *paths], capture_output=True, text=True, env=env,
                          timeout=1500)
    assert done.returncode == 0 and "BOTH RAN" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
