"""NCHW <-> channels-last copies (kgen/templates/cuda/core/layout.cuh), built from the .cuh building blocks into a
small test extension, against PyTorch's own layout copies: the same values bit for bit, the expected strides,
on shapes that take the 16-byte path, the scalar path (C or HW not a multiple of 4, a misaligned view),
partial tiles, and inputs already in the target layout or in neither.

`python tests/gpu/test_layout.py --bench` times both directions at the L2-19 input shape against PyTorch."""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu

CUDA_DIR = Path(__file__).resolve().parents[2] / "kgen" / "templates" / "cuda"
PARTS = ("core/common.cuh", "core/layout.cuh")

BINDINGS = r"""
at::Tensor to_channels_last(at::Tensor x) { return kgen::to_channels_last(x); }
at::Tensor to_contiguous_nchw(at::Tensor x) { return kgen::to_contiguous_nchw(x); }
"""
CPP_SOURCE = r"""
at::Tensor to_channels_last(at::Tensor x);
at::Tensor to_contiguous_nchw(at::Tensor x);
"""


def build_extension():
    from torch.utils.cpp_extension import load_inline

    source = "\n".join((CUDA_DIR / name).read_text() for name in PARTS) + BINDINGS
    digest = hashlib.sha256((CPP_SOURCE + source).encode()).hexdigest()[:16]
    return load_inline(name="kgen_test_layout_" + digest, cpp_sources=CPP_SOURCE, cuda_sources=source,
                       functions=["to_channels_last", "to_contiguous_nchw"], extra_cuda_cflags=["-O3"])


@pytest.fixture(scope="module")
def ext():
    return build_extension()


SHAPES = [
    (2, 64, 33, 17),     # vector path (C % 4 == 0, HW odd -> scalar), partial tiles
    (3, 64, 32, 32),     # vector path, whole tiles
    (2, 8, 16, 20),      # C smaller than a tile
    (1, 3, 5, 7),        # scalar, tiny
    (4, 96, 20, 20),     # vector, partial R tile (96 = 3 x 32) and partial S tile
    (2, 130, 9, 12),     # C % 4 == 2: scalar
    (1, 1, 1, 1),
    (2, 16, 7, 9, 11),   # 5-D (NDHWC, channels_last_3d): vector, odd volume
    (3, 6, 5, 4, 3),     # 5-D, C = 6: the tiled kernel, scalar
    (3, 3, 33, 65),      # C = 3 (a conv input), several blocks: the narrow kernel
    (2, 4, 9, 17, 19),   # C = 4, 5-D: the narrow kernel at its widest
    (2, 9, 31, 37),      # C = 9: the tiled kernel, scalar
]


def memory_format(x):
    return torch.channels_last if x.dim() == 4 else torch.channels_last_3d


@pytest.mark.parametrize("shape", SHAPES)
def test_to_channels_last_matches_pytorch(ext, shape):
    x = torch.randn(shape, device="cuda") * 3 + 1
    got = ext.to_channels_last(x)
    want = x.contiguous(memory_format=memory_format(x))
    assert got.is_contiguous(memory_format=memory_format(x)) and got.stride() == want.stride()
    assert torch.equal(got, x)


@pytest.mark.parametrize("shape", SHAPES)
def test_to_contiguous_nchw_matches_pytorch(ext, shape):
    x = torch.randn(shape, device="cuda") * 3 - 2
    x = x.contiguous(memory_format=memory_format(x))
    got = ext.to_contiguous_nchw(x)
    assert got.is_contiguous() and torch.equal(got, x)


def test_misaligned_and_strided_inputs(ext):
    base = torch.randn(2 * 64 * 16 * 16 + 1, device="cuda")
    x = base[1:].view(2, 64, 16, 16)                      # storage offset 1: not 16-byte aligned
    assert torch.equal(ext.to_channels_last(x), x)
    y = torch.randn(2, 16, 16, 64, device="cuda").permute(0, 3, 1, 2)   # channels-last view
    assert torch.equal(ext.to_contiguous_nchw(y), y) and ext.to_contiguous_nchw(y).is_contiguous()
    z = torch.randn(2, 64, 16, 32, device="cuda")[..., ::2]             # neither layout
    assert torch.equal(ext.to_channels_last(z), z) and torch.equal(ext.to_contiguous_nchw(z), z)
    w = torch.randn(2, 64, 16, 16, device="cuda").contiguous(memory_format=torch.channels_last)
    assert torch.equal(ext.to_channels_last(w), w)                      # already channels-last
    assert ext.to_channels_last(w).data_ptr() != w.data_ptr()           # a copy, never an alias


def test_bad_inputs_raise_clear_errors(ext):
    with pytest.raises(RuntimeError, match="must have shape \\(N, C, H, W\\) or \\(N, C, D, H, W\\)"):
        ext.to_channels_last(torch.randn(2, 3, 4, device="cuda"))
    with pytest.raises(RuntimeError, match="must have shape \\(N, C, H, W\\) or \\(N, C, D, H, W\\)"):
        ext.to_contiguous_nchw(torch.randn(2, 3, 4, 5, 6, 7, device="cuda"))
    with pytest.raises(RuntimeError, match="must be float32"):
        ext.to_channels_last(torch.randn(2, 3, 4, 5, device="cuda").half())
    with pytest.raises(RuntimeError, match="must be a CUDA tensor"):
        ext.to_contiguous_nchw(torch.randn(2, 3, 4, 5))


def bench() -> None:
    from torch.utils import benchmark

    ext = build_extension()
    x = torch.randn(128, 64, 256, 256, device="cuda")
    xl = x.contiguous(memory_format=torch.channels_last)
    gbytes = 2 * x.numel() * 4 / 1e9
    cases = {
        "kgen to_channels_last": lambda: ext.to_channels_last(x),
        "torch .contiguous(channels_last)": lambda: x.contiguous(memory_format=torch.channels_last),
        "kgen to_contiguous_nchw": lambda: ext.to_contiguous_nchw(xl),
        "torch .contiguous()": lambda: xl.contiguous(),
    }
    for name, fn in cases.items():
        ms = benchmark.Timer("fn()", globals={"fn": fn}).blocked_autorange(min_run_time=1.0).median * 1e3
        print(f"{name:36s} {ms:7.3f} ms  {gbytes / ms:6.2f} TB/s")


if __name__ == "__main__" and "--bench" in sys.argv:
    bench()
