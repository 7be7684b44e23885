"""Can kgen's GroupNorm be PyTorch's bit for bit at float32, and does that fix KernelBench's fp32 verdict on
conv -> GroupNorm -> conv chains? (cuDNN convolutions round their float32 inputs to TF32 by default: a 1-ulp
difference in a norm's output flips some TF32 roundings.)"""
import importlib.util, json, math, os, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

SRC = r'''
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

struct TW { float mean, m2, nf; long long n; };
template <bool C> __device__ __forceinline__ TW tw_reduce(TW a, float x) {
  const long long nn = a.n + 1; const float nf = (float)nn;
  const float d = __fsub_rn(x, a.mean);
  const float m = __fadd_rn(a.mean, __fdiv_rn(d, nf));
  const float d2 = __fsub_rn(x, m);
  return {m, C ? __fmaf_rn(d, d2, a.m2) : __fadd_rn(a.m2, __fmul_rn(d, d2)), nf, nn};
}
template <bool C> __device__ __forceinline__ TW tw_combine(TW a, TW b) {
  if (a.nf == 0.f) return b;
  if (b.nf == 0.f) return a;
  const float d = __fsub_rn(b.mean, a.mean), cnt = __fadd_rn(a.nf, b.nf), r = __fdiv_rn(b.nf, cnt);
  const float t = __fmul_rn(__fmul_rn(d, d), a.nf), s = __fadd_rn(a.m2, b.m2);
  return {C ? __fmaf_rn(d, r, a.mean) : __fadd_rn(a.mean, __fmul_rn(d, r)),
          C ? __fmaf_rn(t, r, s) : __fadd_rn(s, __fmul_rn(t, r)), cnt, -1};
}
template <bool C> __device__ __forceinline__ TW tw_warp(TW v) {
  for (int o = 16; o > 0; o >>= 1) {
    TW w{__shfl_down_sync(0xffffffff, v.mean, o), __shfl_down_sync(0xffffffff, v.m2, o),
         __shfl_down_sync(0xffffffff, v.nf, o), __shfl_down_sync(0xffffffff, v.n, o)};
    v = tw_combine<C>(v, w);
  }
  return v;
}
__device__ __forceinline__ float ld(const float* p) { return *p; }
__device__ __forceinline__ float ld(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ float ld(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void st(__half* p, float v) { *p = __float2half_rn(v); }
template <class T> __device__ __forceinline__ float rnd(float v) { T t; st(&t, v); return ld(&t); }

// mode bit 0: contract (fma) ; bit 1: round stats to T
template <class T, bool C>
__global__ void moments(const T* x, long long D, float eps, bool round_stats, float* mean, float* rstd) {
  __shared__ TW sh[32];
  const long long i = blockIdx.x;
  TW v{0.f, 0.f, 0.f, 0};
  for (long long j = threadIdx.x; j < D; j += blockDim.x) v = tw_reduce<C>(v, ld(x + i * D + j));
  v = tw_warp<C>(v);
  if (blockDim.x > 32) {
    const int lid = threadIdx.x % 32, wid = threadIdx.x / 32;
    __syncthreads();
    if (lid == 0) sh[wid] = v;
    __syncthreads();
    v = (threadIdx.x < blockDim.x / 32) ? sh[lid] : TW{0.f, 0.f, 0.f, 0};
    if (wid == 0) v = tw_warp<C>(v);
  }
  if (threadIdx.x == 0) {
    const float var = __fdiv_rn(v.m2, v.nf);
    float m = v.mean, r = rsqrtf(__fadd_rn(var, eps));
    if (round_stats) { m = rnd<T>(m); r = rnd<T>(r); }
    mean[i] = m; rstd[i] = r;
  }
}
// form 0: a x + b (gamma or beta), 1: (x - mean) rstd (neither), 2: ((x - mean) rstd) gamma + beta (HxW == 1)
template <class T, bool C>
__global__ void apply(const T* x, const float* mean, const float* rstd, const float* gamma, const float* beta,
                      long long N, long long Cn, long long G, long long HW, int form, T* y) {
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= N * Cn * HW) return;
  const long long nc = idx / HW, c = nc % Cn, n = nc / Cn, ng = n * G + c / (Cn / G);
  const float xv = ld(x + idx), m = mean[ng], r = rstd[ng];
  float out;
  if (form == 1) out = __fmul_rn(__fsub_rn(xv, m), r);
  else if (form == 2) {
    const float t = __fmul_rn(__fsub_rn(xv, m), r);
    const float g = gamma ? gamma[c] : 1.f, b = beta ? beta[c] : 0.f;
    out = C ? __fmaf_rn(t, g, b) : __fadd_rn(__fmul_rn(t, g), b);
  } else {
    const float a = gamma ? __fmul_rn(r, gamma[c]) : r;
    const float bb = beta ? beta[c] : 0.f;
    const float b = C ? __fmaf_rn(-a, m, bb) : __fadd_rn(__fmul_rn(-a, m), bb);
    out = C ? __fmaf_rn(a, xv, b) : __fadd_rn(__fmul_rn(a, xv), b);
  }
  st(y + idx, out);
}
template <class T>
void launch(const at::Tensor& x, const at::Tensor& g, const at::Tensor& b, int64_t G, double eps, bool C, at::Tensor& y) {
  const long long N = x.size(0), Cn = x.size(1), HW = x.numel() / (N * Cn), D = Cn / G * HW;
  auto f = x.options().dtype(at::kFloat);
  at::Tensor mean = at::empty({N * G}, f), rstd = at::empty({N * G}, f);
  const bool half = x.scalar_type() != at::kFloat;
  float e = static_cast<float>(eps);
  if (half) { e = at::scalar_tensor(eps, x.options().dtype(x.scalar_type()).device(at::kCPU)).item<float>(); }
  const int threads = D < 512 ? 32 : 512;
  auto s = c10::cuda::getCurrentCUDAStream();
  const T* xp = reinterpret_cast<const T*>(x.data_ptr());
  if (C) moments<T, true><<<N * G, threads, 0, s>>>(xp, D, e, half, mean.data_ptr<float>(), rstd.data_ptr<float>());
  else moments<T, false><<<N * G, threads, 0, s>>>(xp, D, e, half, mean.data_ptr<float>(), rstd.data_ptr<float>());
  const float* gp = g.defined() ? g.data_ptr<float>() : nullptr;
  const float* bp = b.defined() ? b.data_ptr<float>() : nullptr;
  const int form = HW == 1 ? 2 : (gp || bp ? 0 : 1);
  const long long total = x.numel();
  T* yp = reinterpret_cast<T*>(y.data_ptr());
  if (C) apply<T, true><<<(total + 255) / 256, 256, 0, s>>>(xp, mean.data_ptr<float>(), rstd.data_ptr<float>(), gp, bp, N, Cn, G, HW, form, yp);
  else apply<T, false><<<(total + 255) / 256, 256, 0, s>>>(xp, mean.data_ptr<float>(), rstd.data_ptr<float>(), gp, bp, N, Cn, G, HW, form, yp);
}
at::Tensor gn(at::Tensor x, c10::optional<at::Tensor> g, c10::optional<at::Tensor> b, int64_t G, double eps, bool contract) {
  x = x.contiguous();
  at::Tensor y = at::empty_like(x);
  at::Tensor gg = g.has_value() ? g->to(at::kFloat).contiguous() : at::Tensor();
  at::Tensor bb = b.has_value() ? b->to(at::kFloat).contiguous() : at::Tensor();
  if (x.scalar_type() == at::kFloat) launch<float>(x, gg, bb, G, eps, contract, y);
  else if (x.scalar_type() == at::kBFloat16) launch<__nv_bfloat16>(x, gg, bb, G, eps, contract, y);
  else launch<__half>(x, gg, bb, G, eps, contract, y);
  return y;
}
__global__ void eltw(const float* x, long long n, int op, float* y) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float a = x[i];
  float r;
  if (op == 0) r = a / (1.f + expf(-a));                          // silu, IEEE division
  else if (op == 1) r = 1.f / (1.f + expf(-a));                   // sigmoid
  else if (op == 2) r = a * tanhf(log1pf(expf(a)));               // mish
  else {                                                          // gelu tanh, PyTorch's order
    constexpr float kBeta = M_SQRT2 * M_2_SQRTPI * 0.5f; constexpr float kKappa = 0.044715f;
    const float cube = a * a * a;
    r = 0.5f * a * (1.f + tanhf(kBeta * (a + kKappa * cube)));
  }
  y[i] = r;
}
at::Tensor elementwise(at::Tensor x, int64_t op) {
  at::Tensor y = at::empty_like(x);
  eltw<<<(x.numel() + 255) / 256, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), x.numel(), op, y.data_ptr<float>());
  return y;
}
'''
CPP = "at::Tensor gn(at::Tensor x, c10::optional<at::Tensor> g, c10::optional<at::Tensor> b, int64_t G, double eps, bool contract);\nat::Tensor elementwise(at::Tensor x, int64_t op);"

out = {}
t0 = time.time()
ext = load_inline("faithful_probe", CPP, cuda_sources=SRC, functions=["gn", "elementwise"], extra_cuda_cflags=["-O3"], verbose=False)
print(f"build {time.time() - t0:.0f} s", flush=True)

# Part B: bitwise against F.group_norm
shapes = [(16, 64, 56, 56, 32), (4, 32, 7, 7, 8), (2, 48, 5, 3, 3), (8, 256, 1, 1, 32), (3, 30, 1, 1, 5), (2, 64, 16, 16, 1),
          (1, 96, 33, 31, 32), (16, 128, 8, 8, 128), (2, 8, 4, 4, 2), (4, 64, 8, 8, 4)]
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    for contract in (True, False):
        for affine in ("both", "none", "weight"):
            worst = []
            for (N, C, H, W, G) in shapes:
                for trial in range(2):
                    x = (torch.randn(N, C, H, W, device="cuda") * (1 + 3 * trial) + 2 * trial).to(dtype)
                    w = (torch.randn(C, device="cuda") * 0.5 + 1).to(dtype) if affine != "none" else None
                    b = (torch.randn(C, device="cuda") * 0.5).to(dtype) if affine == "both" else None
                    ref = F.group_norm(x, G, w, b, 1e-5)
                    new = ext.gn(x, w, b, G, 1e-5, contract)
                    diff = (ref.float().view(-1) != new.float().view(-1)).float().mean().item()
                    worst.append(diff)
            key = f"{str(dtype)[6:]} contract={contract} affine={affine}"
            out[key] = max(worst)
            print(f"GN bitwise {key}: worst fraction differing {max(worst):.2e}  per shape {[f'{v:.0e}' for v in worst]}", flush=True)

x = torch.randn(1 << 24, device="cuda") * 6
refs = {0: F.silu(x), 1: torch.sigmoid(x), 2: F.mish(x), 3: F.gelu(x, approximate="tanh")}
for op, name in enumerate(["silu", "sigmoid", "mish", "gelu_tanh"]):
    new = ext.elementwise(x, op)
    frac = (new != refs[op]).float().mean().item()
    out[f"eltw {name}"] = frac
    print(f"elementwise {name}: fraction differing {frac:.2e}", flush=True)

# Part A: KernelBench's fp32 check (atol = rtol = 1e-4) on corpus chains, GroupNorm re-implemented three ways
def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

class EmulatedGN(nn.Module):
    def __init__(self, gn, how):
        super().__init__(); self.gn, self.how = gn, how
    def forward(self, x):
        g = self.gn
        if self.how == "emulated":
            return ext.gn(x, g.weight, g.bias, g.num_groups, g.eps, True)
        return F.group_norm(x.double(), g.num_groups, g.weight.double(), g.bias.double(), g.eps).float()

def swap(model, how):
    for name, child in list(model.named_children()):
        if isinstance(child, nn.GroupNorm):
            setattr(model, name, EmulatedGN(child, how))
        else:
            swap(child, how)
    return model

import copy
for stem in ["resnet_gn_bottleneck_mid", "diffusion_resblock_mid", "unet3d_block_mid", "audio_encoder_1d_mid", "vae_decoder_up_large"]:
    m = load(f"tests/corpus/{stem}.py")
    torch.manual_seed(0)
    model = m.Model(*m.get_init_inputs()).cuda().eval()
    variants = {"float64-GN": swap(copy.deepcopy(model), "float64"), "emulated-GN": swap(copy.deepcopy(model), "emulated")}
    for tf32 in (True, False):
        torch.backends.cudnn.allow_tf32 = tf32
        row = []
        for trial in range(3):
            torch.manual_seed(100 + trial)
            inputs = [t.cuda() if torch.is_tensor(t) else t for t in m.get_inputs()]
            with torch.no_grad():
                ref = model(*inputs)
                for name, v in variants.items():
                    new = v(*inputs)
                    row.append((name, trial, bool(torch.allclose(ref, new, atol=1e-4, rtol=1e-4)), (ref - new).abs().max().item()))
        print(f"{stem} cudnn.allow_tf32={tf32}: " + "; ".join(f"{n} t{t} {'ok' if ok else 'FAIL'} {d:.1e}" for n, t, ok, d in row), flush=True)
        out[f"{stem} tf32={tf32}"] = row
    torch.backends.cudnn.allow_tf32 = True
    compiled = torch.compile(model)
    torch.manual_seed(100)
    inputs = [t.cuda() if torch.is_tensor(t) else t for t in m.get_inputs()]
    with torch.no_grad():
        ref = model(*inputs); new = compiled(*inputs)
    ok = bool(torch.allclose(ref, new, atol=1e-4, rtol=1e-4))
    print(f"{stem} torch.compile vs eager: {'ok' if ok else 'FAIL'} max {(ref - new).abs().max().item():.1e}", flush=True)
    out[f"{stem} compile"] = [ok, (ref - new).abs().max().item()]
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "faithful_probe.json"), "w"), indent=1)
print(f"total {time.time() - t0:.0f} s")
