"""The op table's forward formulas (kgen/ref/ops.py) for ops PyTorch computes in one kernel each (addcmul's
`a + value * (b * c)`, addcdiv's `a + value * (b / c)`, lerp's two-sided formula, exp2, log2, log10, tan, atan, sinh,
cosh), compiled as a region compiles them and compared with PyTorch's kernel bit for bit over random values: where
nvcc contracts PyTorch's `a + w * q` into one fma, the table's fmaf must be that fma, and a libdevice function must be
the one PyTorch calls. Needs a CUDA device."""
import hashlib
import os

import pytest
import torch

from kgen.ref import ops

pytestmark = pytest.mark.gpu

N = 1 << 20
# name -> (the formula's operands, as the kernel reads them, and its constants; PyTorch's own call)
CASES = {
    "addcdiv_half": (ops.OPS["addcdiv"].value.format(a="a[i]", b="b[i]", c="c[i]", value="0.5f"),
                     lambda a, b, c: torch.addcdiv(a, b, c, value=0.5)),
    "addcdiv_odd": (ops.OPS["addcdiv"].value.format(a="a[i]", b="b[i]", c="c[i]", value="-1.37f"),
                    lambda a, b, c: torch.addcdiv(a, b, c, value=-1.37)),
    "addcdiv_one": (ops.OPS["addcdiv"].value.format(a="a[i]", b="b[i]", c="c[i]", value="1.f"),
                    lambda a, b, c: torch.addcdiv(a, b, c)),
    "lerp_small_weight": (ops.OPS["lerp"].value.format(a="a[i]", b="b[i]", c="0.3f"),
                          lambda a, b, c: torch.lerp(a, b, 0.3)),
    "lerp_large_weight": (ops.OPS["lerp"].value.format(a="a[i]", b="b[i]", c="-0.7f"),
                          lambda a, b, c: torch.lerp(a, b, -0.7)),
    "lerp_tensor_weight": (ops.OPS["lerp"].value.format(a="a[i]", b="b[i]", c="c[i]"),
                           lambda a, b, c: torch.lerp(a, b, c)),
    "addcmul_odd": (ops.OPS["addcmul"].value.format(a="a[i]", b="b[i]", c="c[i]", value="-0.37f"),
                    lambda a, b, c: torch.addcmul(a, b, c, value=-0.37)),
    "addcmul_one": (ops.OPS["addcmul"].value.format(a="a[i]", b="b[i]", c="c[i]", value="1.f"),
                    lambda a, b, c: torch.addcmul(a, b, c)),
    **{name: (ops.OPS[name].value.format(a="a[i]"), lambda a, b, c, f=getattr(torch, name): f(a))
       for name in ("exp2", "log2", "log10", "tan", "atan", "sinh", "cosh")},
}


def _source() -> str:
    kernels = []
    for k, (expression, _) in enumerate(CASES.values()):
        kernels.append(f"""
__global__ void case{k}(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c,
                        float* __restrict__ out, int64_t n) {{
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = {expression};
}}""")
    calls = "\n".join(f"  if (which == {k}) case{k}<<<blocks, 256, 0, stream>>>(a.data_ptr<float>(), "
                      f"b.data_ptr<float>(), c.data_ptr<float>(), out.data_ptr<float>(), n);"
                      for k in range(len(CASES)))
    return "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n" + "\n".join(kernels) + f"""
at::Tensor run(int64_t which, at::Tensor a, at::Tensor b, at::Tensor c) {{
  auto out = at::empty_like(a);
  const int64_t n = a.numel();
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int blocks = int((n + 255) / 256);
{calls}
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}}
"""


@pytest.fixture(scope="module")
def ext():
    from torch.utils.cpp_extension import load_inline

    cuda = _source()
    cpp = "at::Tensor run(int64_t which, at::Tensor a, at::Tensor b, at::Tensor c);"
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    digest = hashlib.sha256((cpp + cuda).encode()).hexdigest()[:12]
    # the flags a region's extension is built with (kgen/templates/ref/solution.py.j2): -O3, nvcc's default fma
    return load_inline(name="kgen_op_table_bits_" + digest, cpp_sources=cpp, cuda_sources=cuda, functions=["run"],
                       extra_cuda_cflags=["-O3"])


@pytest.mark.parametrize("name", list(CASES))
def test_the_formula_is_pytorchs_kernel_bit_for_bit(ext, name):
    gen = torch.Generator(device="cuda").manual_seed(7)
    a = torch.randn(N, device="cuda", generator=gen) * 3
    b = torch.randn(N, device="cuda", generator=gen) * 3
    c = torch.randn(N, device="cuda", generator=gen)      # divisors and weights near 0, past +-0.5 and +-1
    got = ext.run(list(CASES).index(name), a, b, c)
    want = CASES[name][1](a, b, c)
    same = (got == want) | (got.isnan() & want.isnan())
    assert bool(same.all()), \
        f"{int((~same).sum())} of {N} differ, e.g. {got[~same][:3].tolist()} vs {want[~same][:3].tolist()}"
