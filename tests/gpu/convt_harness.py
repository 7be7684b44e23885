"""Test harness of kgen's tensor-core ConvTranspose2d (kgen/templates/cuda/conv/convt_igemm.cuh): one load_inline
extension with the instantiations the tests use, built straight from the .cuh building blocks.

  convt_forward(x, w, b, groups, eps, stride, padding, output_padding, variant) -> [z, mean, rstd]
  convt_gn_forward(x, w, b, gamma, beta, groups, eps, stride, padding, output_padding, variant) -> [y, z, mean, rstd]

variant: 0 GELU erf, round-to-nearest TF32 (the L2-19 configuration); 1 GELU erf, truncated TF32;
2 identity (plain conv moments); 3 GELU tanh. Tiles: 128 pixels x 64 channels, K chunks of 32 in 4 cp.async
stages (104 KB of shared memory), 8 warps."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

CUDA_DIR = Path(__file__).resolve().parents[2] / "kgen" / "templates" / "cuda"
PARTS = ("core/common.cuh", "core/sweeps.cuh", "core/unary_ops.cuh", "groupnorm/statistics.cuh", "groupnorm/region.cuh", "groupnorm/op/twopass.cuh", "conv/convt_common.cuh", "conv/convt_igemm.cuh")

BINDINGS = r"""
namespace {
template <class Op, bool kRound>
std::vector<at::Tensor> forward_with(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int64_t groups,
                                     double eps, std::vector<int64_t> stride, std::vector<int64_t> padding,
                                     std::vector<int64_t> output_padding) {
  return kgen::convt::convt_moments<Op, 128, 64, 32, 4, 2, 4, kRound>(x, w, b, groups, eps, stride, padding,
                                                                     output_padding, Op{});
}

template <class Op, bool kRound>
std::vector<at::Tensor> gn_forward_with(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                                        const at::Tensor& gamma, const at::Tensor& beta, int64_t groups, double eps,
                                        std::vector<int64_t> stride, std::vector<int64_t> padding,
                                        std::vector<int64_t> output_padding) {
  auto zs = forward_with<Op, kRound>(x, w, b, groups, eps, stride, padding, output_padding);
  const auto& z = zs[0];
  auto y = at::empty_like(z);
  const kgen::GroupShape shape{z.size(0), z.size(1), groups, z.size(2) * z.size(3)};
  kgen::groupnorm_normalize<Op, 256, 8>(z, zs[1], zs[2], gamma.contiguous(), beta.contiguous(), y, shape, Op{});
  return {y, zs[0], zs[1], zs[2]};
}
}  // namespace

std::vector<at::Tensor> convt_forward(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, double eps,
                                      std::vector<int64_t> stride, std::vector<int64_t> padding,
                                      std::vector<int64_t> output_padding, int64_t variant) {
  switch (variant) {
    case 0: return forward_with<kgen::GeluErf, true>(x, w, b, groups, eps, stride, padding, output_padding);
    case 1: return forward_with<kgen::GeluErf, false>(x, w, b, groups, eps, stride, padding, output_padding);
    case 2: return forward_with<kgen::Identity, true>(x, w, b, groups, eps, stride, padding, output_padding);
    case 3: return forward_with<kgen::GeluTanh, true>(x, w, b, groups, eps, stride, padding, output_padding);
  }
  TORCH_CHECK(false, "kgen test: no variant ", variant);
}

std::vector<at::Tensor> convt_gn_forward(at::Tensor x, at::Tensor w, at::Tensor b, at::Tensor gamma, at::Tensor beta,
                                         int64_t groups, double eps, std::vector<int64_t> stride,
                                         std::vector<int64_t> padding, std::vector<int64_t> output_padding,
                                         int64_t variant) {
  switch (variant) {
    case 0: return gn_forward_with<kgen::GeluErf, true>(x, w, b, gamma, beta, groups, eps, stride, padding, output_padding);
    case 1: return gn_forward_with<kgen::GeluErf, false>(x, w, b, gamma, beta, groups, eps, stride, padding, output_padding);
    case 2: return gn_forward_with<kgen::Identity, true>(x, w, b, gamma, beta, groups, eps, stride, padding, output_padding);
    case 3: return gn_forward_with<kgen::GeluTanh, true>(x, w, b, gamma, beta, groups, eps, stride, padding, output_padding);
  }
  TORCH_CHECK(false, "kgen test: no variant ", variant);
}

// Other tile configurations (GELU erf, TF32 rna), for the benchmark's comparison and their own correctness
// test: the parameters `kgen tune` will search. See CONFIGS below.
std::vector<at::Tensor> convt_forward_config(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, double eps,
                                             std::vector<int64_t> stride, std::vector<int64_t> padding,
                                             std::vector<int64_t> output_padding, int64_t config) {
  using Op = kgen::GeluErf;
  switch (config) {
    case 0: return kgen::convt::convt_moments<Op, 128, 64, 32, 4, 2, 4, true>(x, w, b, groups, eps, stride, padding, output_padding, Op{});
    case 1: return kgen::convt::convt_moments<Op, 128, 64, 16, 4, 2, 4, true>(x, w, b, groups, eps, stride, padding, output_padding, Op{});
    case 2: return kgen::convt::convt_moments<Op, 128, 64, 32, 4, 2, 3, true>(x, w, b, groups, eps, stride, padding, output_padding, Op{});
    case 3: return kgen::convt::convt_moments<Op, 256, 64, 16, 4, 2, 4, true>(x, w, b, groups, eps, stride, padding, output_padding, Op{});
  }
  TORCH_CHECK(false, "kgen test: no configuration ", config);
}
"""

CPP_SOURCE = """
#include <torch/extension.h>
std::vector<at::Tensor> convt_forward(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, double eps,
    std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> output_padding, int64_t variant);
std::vector<at::Tensor> convt_gn_forward(at::Tensor x, at::Tensor w, at::Tensor b, at::Tensor gamma, at::Tensor beta,
    int64_t groups, double eps, std::vector<int64_t> stride, std::vector<int64_t> padding,
    std::vector<int64_t> output_padding, int64_t variant);
std::vector<at::Tensor> convt_forward_config(at::Tensor x, at::Tensor w, at::Tensor b, int64_t groups, double eps,
    std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> output_padding, int64_t config);
"""
FUNCTIONS = ["convt_forward", "convt_gn_forward", "convt_forward_config"]
# convt_forward_config's tiles: (pixels, channels, K chunk, warps along pixels x channels, stages), shared memory
CONFIGS = {0: "128x64, BK 32, 4x2 warps, 4 stages (104 KB; the default)",
           1: "128x64, BK 16, 4x2 warps, 4 stages (52 KB)",
           2: "128x64, BK 32, 4x2 warps, 3 stages (78 KB)",
           3: "256x64, BK 16, 4x2 warps (64x32 each), 4 stages (86 KB)"}
VARIANTS = {"gelu_erf": 0, "gelu_erf_truncated": 1, "identity": 2, "gelu_tanh": 3}


def cuda_source() -> str:
    return "\n".join((CUDA_DIR / name).read_text() for name in PARTS) + BINDINGS


def build_extension(verbose: bool = False):
    from torch.utils.cpp_extension import load_inline

    source = cuda_source()
    digest = hashlib.sha256((CPP_SOURCE + source).encode()).hexdigest()[:16]
    return load_inline(name="kgen_test_convt_igemm_" + digest, cpp_sources=CPP_SOURCE, cuda_sources=source,
                       functions=FUNCTIONS, extra_cuda_cflags=["-O3"],
                       verbose=verbose or bool(os.environ.get("KGEN_VERBOSE_BUILD")))


def assert_statistics_match(z, mean, rstd, op, groups: int, eps: float) -> None:
    """The fused GroupNorm statistics of op(z), for the kernel's own z, against float64."""
    import torch

    u = op(z.double()).reshape(z.shape[0], groups, -1)
    mu, var = u.mean(-1), u.var(-1, unbiased=False)
    got_mean = mean[..., 0].double() + mean[..., 1].double()
    assert torch.allclose(got_mean, mu, atol=1e-6, rtol=1e-6), (got_mean - mu).abs().max()
    assert torch.allclose(rstd.double(), 1 / torch.sqrt(var + eps), atol=1e-5, rtol=1e-5)
