"""Element-wise ops of core/ops.cuh whose formula is not PyTorch's, the forms a backward recomputes and
differentiates with (mish_fast: one exp and a division for PyTorch's exp, log1p and tanh; sigmoid_fast, silu_fast:
their divisions as __fdividef; also the forward values of a region that is not faithful; a faithful region's are
PyTorch's formulas, tests/gpu/test_faithful.py), against
float64 over their
whole range: the kernel's error must stay within a few ulp and no larger than PyTorch's own float32
formula's, and the special values (+-inf, NaN, the threshold past which mish is the identity) must come out
as PyTorch's. hardswish's gradient divides by 3 without the IEEE division's slow path (div3): every float
in [-3, 3] against a / 3.f, bit for bit."""
import hashlib
import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.gpu

CUDA_DIR = Path(__file__).resolve().parent.parent.parent / "kgen" / "templates" / "cuda"

KERNELS = r"""
// out (5, n): mish, its gradient, sigmoid, SiLU, its gradient
__global__ void ops_kernel(const float* __restrict__ a, float* __restrict__ out, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = kgen::mish_fast(a[i]);
    out[n + i] = kgen::mish_grad(a[i]);
    out[2 * n + i] = kgen::sigmoid_fast(a[i]);
    out[3 * n + i] = kgen::silu_fast(a[i]);
    out[4 * n + i] = kgen::silu_grad(a[i]);
  }
}
// Over every float32 of [-3, 3] (bit patterns `first` + i): how many a give div3(a) != a / 3.f, or a
// hardswish_grad(a) with other bits than PyTorch's a / 3 + 0.5, and the first such a.
__global__ void div3_kernel(uint32_t first, uint32_t count, unsigned long long* __restrict__ wrong,
                            uint32_t* __restrict__ example) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    const uint32_t bits = first + i;
    const float a = __uint_as_float(bits);
    if (!(fabsf(a) <= 3.f)) continue;
    const float exact = a / 3.f;
    const bool quotient = __float_as_uint(kgen::div3(a)) != __float_as_uint(exact);
    const bool gradient = __float_as_uint(kgen::hardswish_grad(a)) != __float_as_uint(exact + 0.5f);
    if (quotient || gradient) {
      atomicAdd(wrong, 1ull);
      atomicMin(example, bits);
    }
  }
}
std::vector<int64_t> div3_mismatches() {
  auto options = at::TensorOptions().device(at::kCUDA);
  auto wrong = at::zeros({1}, options.dtype(at::kLong));
  auto example = at::full({1}, -1, options.dtype(at::kInt));
  const auto stream = at::cuda::getCurrentCUDAStream();
  // positive then negative floats up to |a| = 3 (0x40400000)
  for (uint32_t sign : {0u, 0x80000000u}) {
    div3_kernel<<<4096, 256, 0, stream>>>(sign, 0x40400001u, reinterpret_cast<unsigned long long*>(wrong.data_ptr<int64_t>()),
                                          reinterpret_cast<uint32_t*>(example.data_ptr<int>()));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return {wrong.item<int64_t>(), int64_t(uint32_t(example.item<int>()))};
}
at::Tensor ops(at::Tensor a) {
  TORCH_CHECK(a.is_cuda() && a.scalar_type() == at::kFloat && a.is_contiguous(), "a float32 CUDA tensor");
  const int64_t n = a.numel();
  auto out = at::empty({5, n}, a.options());
  if (n > 0) {
    ops_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(a.data_ptr<float>(),
                                                                             out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return out;
}
"""


@pytest.fixture(scope="module")
def ext():
    from torch.utils.cpp_extension import load_inline

    cuda = "\n".join(["#include <torch/extension.h>", (CUDA_DIR / "core/common.cuh").read_text(),
                      (CUDA_DIR / "core/ops.cuh").read_text(), KERNELS])
    cpp = "at::Tensor ops(at::Tensor a);\nstd::vector<int64_t> div3_mismatches();"
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    digest = hashlib.sha256((cpp + cuda).encode()).hexdigest()[:12]
    return load_inline(name="kgen_region_ops_" + digest, cpp_sources=cpp, cuda_sources=cuda, functions=["ops", "div3_mismatches"],
                       extra_cuda_cflags=["-O3"])


def mish64(a):
    a = a.double()
    t = torch.tanh(F.softplus(a, threshold=1e9))   # softplus without PyTorch's linear cut-off, in float64
    return a * t, t + a * torch.sigmoid(a) * (1 - t * t)


def ulp_error(got, want):
    """|got - want| in units of float32's spacing at want (at least the smallest normal's)."""
    spacing = torch.finfo(torch.float32).eps * want.abs().clamp_min(torch.finfo(torch.float32).tiny)
    return ((got.double() - want) / spacing).abs()


def test_mish_and_its_gradient_against_float64(ext):
    gen = torch.Generator(device="cuda").manual_seed(3)
    a = torch.cat([torch.linspace(-110, 60, 2_000_001, device="cuda"),
                   torch.randn(1_000_000, device="cuda", generator=gen) * 3,
                   torch.tensor([0.0, -0.0, 1e-30, -1e-30, 19.99, 20.0, 20.01, -1.1924, 44.5, 88.0, 89.0],
                                device="cuda")])
    value, grad = ext.ops(a)[:2]
    want_value, want_grad = mish64(a)
    leaf = a.clone().requires_grad_()
    torch_value = F.mish(leaf)
    (torch_grad,) = torch.autograd.grad(torch_value.sum(), leaf)
    # the value: relative, in ulp, where it is a normal float; absolute below (denormals, past a = -87)
    tiny = torch.finfo(torch.float32).tiny
    normal = want_value.abs() >= tiny
    ours, theirs = ulp_error(value, want_value)[normal], ulp_error(torch_value.detach(), want_value)[normal]
    ours_sub = (value.double() - want_value)[~normal].abs().max().item()
    theirs_sub = (torch_value.detach().double() - want_value)[~normal].abs().max().item()
    print(f"mish value: {ours.max().item():.2f} ulp (PyTorch's formula {theirs.max().item():.2f}); below the "
          f"normals {ours_sub:.3g} (PyTorch's {theirs_sub:.3g})")
    assert ours.max() <= max(4.0, theirs.max().item())
    assert ours_sub <= max(8 * 2.0 ** -149, theirs_sub)
    # the gradient crosses 0 near a = -1.19, where t and a sigmoid (1 - t^2) cancel: errors on the scale of t
    scale = want_grad.abs() + (want_value / a.double()).abs().nan_to_num(0)
    ours_g = ((grad.double() - want_grad).abs() / scale.clamp_min(1e-30))
    theirs_g = ((torch_grad.double() - want_grad).abs() / scale.clamp_min(1e-30))
    finite = scale > 1e-30
    print(f"mish gradient: {ours_g[finite].max().item() / torch.finfo(torch.float32).eps:.2f} ulp of its terms' "
          f"scale (PyTorch's formula {theirs_g[finite].max().item() / torch.finfo(torch.float32).eps:.2f})")
    assert ours_g[finite].max() <= max(8 * torch.finfo(torch.float32).eps, theirs_g[finite].max().item())


def test_mish_special_values_match_pytorch(ext):
    a = torch.tensor([float("inf"), float("-inf"), float("nan"), 20.0, 20.5, 30.0, 1e30, -1e30, 0.0],
                     device="cuda")
    value, grad = ext.ops(a)[:2]
    leaf = a.clone().requires_grad_()
    want = F.mish(leaf)
    (want_grad,) = torch.autograd.grad(want.sum(), leaf)
    torch.testing.assert_close(value, want.detach(), equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(grad, want_grad, equal_nan=True, rtol=0, atol=0)


def test_sigmoid_and_silu_against_float64(ext):
    gen = torch.Generator(device="cuda").manual_seed(5)
    a = torch.cat([torch.linspace(-120, 120, 2_000_001, device="cuda"),
                   torch.randn(1_000_000, device="cuda", generator=gen) * 4,
                   torch.tensor([0.0, -0.0, 1e-30, -1e-30, 87.0, -87.0, 88.5, -88.5, 89.0, -89.0], device="cuda")])
    _, _, sig, silu, silu_grad = ext.ops(a)
    a64 = a.double()
    s64 = torch.sigmoid(a64)
    want = {"sigmoid": s64, "silu": a64 * s64, "silu gradient": s64 * (1 + a64 * (1 - s64))}
    leaf = a.clone().requires_grad_()
    torch_silu = F.silu(leaf)
    (torch_silu_grad,) = torch.autograd.grad(torch_silu.sum(), leaf)
    theirs = {"sigmoid": torch.sigmoid(a), "silu": torch_silu.detach(), "silu gradient": torch_silu_grad}
    ours = {"sigmoid": sig, "silu": silu, "silu gradient": silu_grad}
    # Past a = -87.3 the denominator passes 2^126 and __fdividef gives 0: below 1.2e-38 (sigmoid), 1.1e-36 (SiLU)
    floor = 1e-30
    # SiLU's gradient s (1 + a (1 - s)) crosses 0 near a = -1.28: errors on the scale of its terms there
    terms = s64.abs() + (s64 * a64 * (1 - s64)).abs()
    ours_g = ((silu_grad.double() - want.pop("silu gradient")).abs() / terms.clamp_min(1e-30))[terms > floor]
    theirs_g = ((torch_silu_grad.double() - s64 * (1 + a64 * (1 - s64))).abs() / terms.clamp_min(1e-30))[terms > floor]
    eps = torch.finfo(torch.float32).eps
    print(f"silu gradient: {ours_g.max().item() / eps:.2f} ulp of its terms' scale (PyTorch's {theirs_g.max().item() / eps:.2f})")
    assert ours_g.max() <= max(8 * eps, theirs_g.max().item())
    for name, w in want.items():
        big = w.abs() >= floor
        o, t = ulp_error(ours[name], w)[big].max().item(), ulp_error(theirs[name], w)[big].max().item()
        small = (ours[name].double() - w)[~big].abs().max().item() if (~big).any() else 0.0
        print(f"{name}: {o:.2f} ulp (PyTorch's {t:.2f}); below {floor:g} at most {small:.3g} off")
        assert o <= max(4.0, t), name
        assert small <= 2e-36, name
    # special values as PyTorch's
    special = torch.tensor([float("inf"), float("-inf"), float("nan"), 1e30, -1e30], device="cuda")
    _, _, sig, silu, silu_grad = ext.ops(special)
    leaf = special.clone().requires_grad_()
    want_silu = F.silu(leaf)
    (want_grad,) = torch.autograd.grad(want_silu.sum(), leaf)
    torch.testing.assert_close(sig, torch.sigmoid(special), equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(silu, want_silu.detach(), equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(silu_grad, want_grad, equal_nan=True, rtol=0, atol=0)


def test_division_by_three_is_exact_on_every_float_of_its_range(ext):
    """div3 (hardswish's gradient, a / 3 + 0.5 as PyTorch's hardswish_backward) against the IEEE division for all
    2^31 or so floats in [-3, 3], denormals, zeros and the ends included: not one bit may differ."""
    wrong, example = ext.div3_mismatches()
    assert wrong == 0, f"{wrong} floats differ, the first bit pattern 0x{example:08x}"
