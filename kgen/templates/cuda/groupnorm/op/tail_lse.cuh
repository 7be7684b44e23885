// ---- groupnorm/op/tail_lse.cuh: Conv2d (bias fused) -> GroupNorm -> Tanh -> HardSwish -> residual add -> LogSumExp over C ----
//
// The convolution itself runs in cuDNN WITHOUT its bias; u is its output, (N, C, H, W) contiguous.
// PyTorch's cuDNN path adds the bias in a separate full-size elementwise sweep (output.add_(bias));
// here every kernel forms v = u + bias[c] on the fly instead, the very same single float add, so v is
// bitwise the reference's conv output and is never written. Per element, with (n, g) the group of c:
//   y = (v - mean) * (rstd * gamma[c]) + beta[c]     GroupNorm
//   t = tanh(y),  h = t * relu6(t + 3) / 6,  r = v + h
//   out[n, 0, p] = log sum_c exp(r_c)                 max-shifted, online over the channels
//
// Forward, 2 reads of u and a write of the (N, 1, H, W) output only:
//   moments_partial (groupnorm/op/twopass.cuh) per (sample, channel) plane: Welford moments of u
//   biased_group_moments  per (sample, group): exact (double) combine of its planes' moments, each
//                         shifted by its channel's bias -> mean (hi, lo) and rstd of v
//   tail_lse_forward      one thread per 4 (or 1) pixels of a sample: reads the C channels of its pixels
//                         (consecutive threads read consecutive pixels of one channel plane: coalesced),
//                         keeps (max, sum of shifted exponentials) per pixel and writes only the output
// Backward, recomputing everything from u, the statistics and the saved output (= the LSE):
//   p_c = exp(r_c - out), dr = g p_c, dy = dr * hardswish'(t) * (1 - t^2)
//   tail_backward_partial per plane: sum dy, sum dy (v - mean) (GroupNorm's two sums, laid out as
//                         groupnorm/op/twopass.cuh's backward_partial_kernel lays them out), sum dr, sum (v - mean)
//   backward_group (groupnorm/op/twopass.cuh): the GroupNorm coefficients B, C of each (sample, group)
//   channel_grads         dgamma, dbeta and dbias[c] = sum over (n, pixels) of du, in closed form from the
//                         plane sums
//   tail_backward_apply   du = dr + rstd gamma dy + B (v - mean) + C
// Every reduction is a fixed tree or a fixed-order loop (no float atomics): bitwise reproducible.
namespace kgen {

constexpr int kChannelUnroll = 4;  // channel planes whose loads a forward thread issues before using one

// What one channel needs beyond its value: mean (hi, lo) of its group, rstd * gamma, beta, conv bias.
struct TailChannel {
  float2 mean;
  float scale;
  float shift;
  float bias;
};

// The per-element math is most of these kernels' instructions, so the transcendental functions use the
// hardware's approximate exp2 and reciprocal (MUFU) instead of the branchy, many-instruction accurate
// tanhf / expf: relative error ~1e-6 at worst, far inside the 1e-4 tolerance.
__device__ __forceinline__ float fast_exp(float x) { return __expf(x); }

// tanh(y) = 1 - 2 / (exp(2y) + 1): absolute error ~1e-7, no branch; +-1 for large |y| (exp(2y) = inf gives
// 2 / inf = 0), NaN stays NaN.
__device__ __forceinline__ float fast_tanh(float y) { return 1.f - __fdividef(2.f, fast_exp(2.f * y) + 1.f); }

__device__ __forceinline__ float hardswish(float t) { return t * fminf(fmaxf(t + 3.f, 0.f), 6.f) * (1.f / 6.f); }

// PyTorch's hardswish_backward: 0 below -3, t / 3 + 1/2 up to 3 (inclusive), 1 above.
__device__ __forceinline__ float hardswish_derivative(float t) {
  return t < -3.f ? 0.f : (t <= 3.f ? fmaf(t, 1.f / 3.f, 0.5f) : 1.f);
}

// One element: v = u + bias (the reference's conv output), its centred value and tanh, and r.
struct TailValue {
  float v;
  float centered;
  float t;
  float r;
};

__device__ __forceinline__ TailValue tail_value(float u, const TailChannel& ch) {
  TailValue e;
  e.v = __fadd_rn(u, ch.bias);
  e.centered = centered(e.v, ch.mean);
  e.t = fast_tanh(fmaf(e.centered, ch.scale, ch.shift));
  e.r = e.v + hardswish(e.t);
  return e;
}

// Online log-sum-exp: `m` the running maximum, `s` the sum of exp(r - m). One exponential per value:
// exp(-|r - m|) rescales the sum when r is the new maximum and is the new term otherwise. A NaN
// propagates into s; m starts at -inf, so the first value gives s = 1, m = r.
__device__ __forceinline__ void lse_push(float& m, float& s, float r) {
  const float d = r - m;
  const float e = fast_exp(-fabsf(d));
  const bool up = d > 0.f;
  s = up ? fmaf(s, e, 1.f) : s + e;
  m = up ? r : m;
}

// ---------------------------------------------------------------- forward kernels

// Chan's combine in double, for the few values of one group.
struct DoubleMoments {
  double count;
  double mean;
  double m2;
  __device__ __forceinline__ void merge(double nb, double mb, double qb) {
    const double total = count + nb;
    if (nb == 0.0) return;
    const double delta = mb - mean;
    mean += delta * nb / total;
    m2 += qb + delta * delta * count * nb / total;
    count = total;
  }
};

// One warp per (sample, group): combines the chunk moments of its planes. moments_partial_kernel took
// the moments of u - u[plane start]; adding that start and the channel's bias back (in double) gives
// each chunk's mean of v = u + bias.
__global__ void biased_group_moments_kernel(const float* __restrict__ u, const float* __restrict__ conv_bias,
                                            const Moments* __restrict__ partial, int splits, GroupShape shape,
                                            double eps, float2* __restrict__ mean, float* __restrict__ rstd) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= shape.batch * shape.groups) return;  // warp-uniform
  const int64_t n = row / shape.groups, g = row - n * shape.groups;
  const int64_t cpg = shape.channels_per_group();
  DoubleMoments acc{0.0, 0.0, 0.0};
  for (int64_t i = lane; i < cpg * splits; i += kWarpSize) {
    const int64_t c = g * cpg + i / splits;
    const int64_t plane = n * shape.channels + c;
    const Moments p = partial[plane * splits + i % splits];
    const double start = double(u[plane * shape.plane_elems]) + double(conv_bias[c]);
    acc.merge(p.count, start + double(p.mean), p.m2);
  }
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const double nb = __shfl_xor_sync(0xffffffffu, acc.count, offset);
    const double mb = __shfl_xor_sync(0xffffffffu, acc.mean, offset);
    const double qb = __shfl_xor_sync(0xffffffffu, acc.m2, offset);
    acc.merge(nb, mb, qb);
  }
  if (lane == 0) {
    const double var = acc.count > 0.0 ? fmax(acc.m2 / acc.count, 0.0) : 0.0;  // biased, as nn.GroupNorm
    const float hi = static_cast<float>(acc.mean);
    mean[row] = make_float2(hi, static_cast<float>(acc.mean - double(hi)));
    rstd[row] = static_cast<float>(1.0 / sqrt(var + eps));
  }
}

// Shared memory of tail_lse_forward_kernel: the TailChannel of every channel of the block's sample.
inline size_t tail_forward_shared_bytes(int64_t channels) {
  return size_t(channels) * (sizeof(float4) + sizeof(float));
}

// Block b covers kBlock * W consecutive pixels of sample b / blocks_per_sample; each thread walks the
// C channel planes of its W pixels, kChannelUnroll planes' loads in flight at a time.
template <int kBlock, int W>
__global__ void __launch_bounds__(kBlock)
tail_lse_forward_kernel(const float* __restrict__ u, const float* __restrict__ conv_bias,
                        const float2* __restrict__ mean, const float* __restrict__ rstd,
                        const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ out,
                        GroupShape shape, int64_t blocks_per_sample) {
  extern __shared__ __align__(16) unsigned char tail_shared[];
  float4* affine = reinterpret_cast<float4*>(tail_shared);        // (mean hi, mean lo, scale, shift)
  float* bias = reinterpret_cast<float*>(affine + shape.channels);
  const int64_t channels = shape.channels, hw = shape.plane_elems;
  const int64_t n = blockIdx.x / blocks_per_sample;
  for (int64_t c = threadIdx.x; c < channels; c += kBlock) {
    const int64_t row = n * shape.groups + c / shape.channels_per_group();
    const float2 mu = mean[row];
    affine[c] = make_float4(mu.x, mu.y, rstd[row] * gamma[c], beta[c]);
    bias[c] = conv_bias[c];
  }
  __syncthreads();
  const int64_t pack = (blockIdx.x % blocks_per_sample) * kBlock + threadIdx.x;
  if (pack >= hw / W) return;
  const float* column = u + n * channels * hw + pack * W;
  float m[W], s[W];
#pragma unroll
  for (int j = 0; j < W; ++j) {
    m[j] = -INFINITY;
    s[j] = 0.f;
  }
  for (int64_t c0 = 0; c0 < channels; c0 += kChannelUnroll) {
    Pack<W> v[kChannelUnroll];
#pragma unroll
    for (int k = 0; k < kChannelUnroll; ++k) {
      if (c0 + k < channels) v[k] = load_pack<W>(column + (c0 + k) * hw, 0);
    }
#pragma unroll
    for (int k = 0; k < kChannelUnroll; ++k) {
      if (c0 + k < channels) {
        const float4 a = affine[c0 + k];
        const TailChannel ch{make_float2(a.x, a.y), a.z, a.w, bias[c0 + k]};
#pragma unroll
        for (int j = 0; j < W; ++j) lse_push(m[j], s[j], tail_value(v[k].v[j], ch).r);
      }
    }
  }
  Pack<W> result;
#pragma unroll
  for (int j = 0; j < W; ++j) result.v[j] = m[j] + logf(s[j]);
  store_pack<W>(out + n * hw + pack * W, 0, result);
}

// ---------------------------------------------------------------- backward kernels

// One (sample, channel) plane's constants, as every kernel of both directions forms them.
template <int kGroups>
__device__ __forceinline__ TailChannel tail_channel(int64_t plane, const GroupShape& shape,
                                                    const float* __restrict__ conv_bias,
                                                    const float2* __restrict__ mean, const float* __restrict__ rstd,
                                                    const float* __restrict__ gamma,
                                                    const float* __restrict__ beta) {
  const int64_t c = plane % shape.channels;
  const int64_t row = shape.row_of_plane<kGroups>(plane);
  return TailChannel{mean[row], rstd[row] * gamma[c], beta[c], conv_bias[c]};
}

// dr = g exp(r - lse) (the softmax over channels times the upstream gradient) and dy, the gradient
// that reaches the GroupNorm output through HardSwish and Tanh.
__device__ __forceinline__ void tail_gradients(const TailValue& e, float g, float lse, float& dr, float& dy) {
  dr = g * fast_exp(e.r - lse);
  dy = dr * hardswish_derivative(e.t) * (1.f - e.t * e.t);
}

// Blocks as groupnorm/op/twopass.cuh's backward kernels: plane * splits + split. `gn_partial` gets
// (sum dy, sum dy (v - mean)) exactly where backward_group_kernel reads them; `extra_partial` gets
// (sum dr, sum (v - mean)) for the conv-bias gradient.
template <int kGroups, int kBlock, bool kVec>
__global__ void __launch_bounds__(kBlock)
tail_backward_partial_kernel(const float* __restrict__ grad_out, const float* __restrict__ u,
                             const float* __restrict__ lse, const float* __restrict__ conv_bias,
                             const float2* __restrict__ mean, const float* __restrict__ rstd,
                             const float* __restrict__ gamma, const float* __restrict__ beta, GroupShape shape,
                             SplitPlan plan, float2* __restrict__ gn_partial, float2* __restrict__ extra_partial) {
  constexpr int W = kVec ? 4 : 1;
  const int64_t plane = blockIdx.x / plan.splits;
  const int64_t begin = (blockIdx.x % plan.splits) * plan.chunk;
  const int64_t count = min(plan.chunk, shape.plane_elems - begin);
  const TailChannel ch = tail_channel<kGroups>(plane, shape, conv_bias, mean, rstd, gamma, beta);
  const int64_t pixel = (plane / shape.channels) * shape.plane_elems + begin;
  const float* in[3] = {u + plane * shape.plane_elems + begin, grad_out + pixel, lse + pixel};
  float2 gn = make_float2(0.f, 0.f), extra = make_float2(0.f, 0.f);
  sweep<kBlock, W, 3>(in, count / W, [&](int64_t, const Pack<W>(&v)[3]) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const TailValue e = tail_value(v[0].v[j], ch);
      float dr, dy;
      tail_gradients(e, v[1].v[j], v[2].v[j], dr, dy);
      gn.x += dy;
      gn.y += dy * e.centered;
      extra.x += dr;
      extra.y += e.centered;
    }
  });
  gn = block_sum<kBlock>(gn);
  __syncthreads();  // block_sum's shared scratch is reused by the second reduction
  extra = block_sum<kBlock>(extra);
  if (threadIdx.x == 0) {
    gn_partial[blockIdx.x] = gn;
    extra_partial[blockIdx.x] = extra;
  }
}

// The per-channel gradients, one warp per channel, lanes over the batch, a fixed tree:
//   dgamma[c] = sum_n rstd * sum dy (v - mean),  dbeta[c] = sum_n sum dy      (as param_grad_kernel)
//   dbias[c]  = sum_n sum_pixels du, the plane sum of du being sum dr + scale * sum dy + B * sum (v - mean)
//               + C * HW (the apply kernel's formula summed over the plane, with the same float coefficients).
// groupnorm/op/twopass.cuh's param_grad_kernel (one thread per channel, a serial loop over the batch) takes 50 us at
// the reference shape; here the batch is spread over the lanes.
template <int kGroups>
__global__ void channel_grads_kernel(const float2* __restrict__ extra_partial, int splits,
                                     const double2* __restrict__ plane_sums, const float* __restrict__ rstd,
                                     const float* __restrict__ gamma, const float2* __restrict__ coef,
                                     GroupShape shape, float* __restrict__ dbias, float* __restrict__ dgamma,
                                     float* __restrict__ dbeta) {
  const int64_t c = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (c >= shape.channels) return;  // warp-uniform
  double total = 0.0, dg = 0.0, db = 0.0;
  for (int64_t n = lane; n < shape.batch; n += kWarpSize) {
    const int64_t plane = n * shape.channels + c;
    const int64_t row = shape.row_of_plane<kGroups>(plane);
    double sum_dr = 0.0, sum_centered = 0.0;
    for (int s = 0; s < splits; ++s) {
      const float2 p = extra_partial[plane * splits + s];
      sum_dr += p.x;
      sum_centered += p.y;
    }
    const float scale = rstd[row] * gamma[c];
    const float2 bc = coef[row];
    const double2 gn = plane_sums[plane];
    total += sum_dr + double(scale) * gn.x + double(bc.x) * sum_centered + double(bc.y) * double(shape.plane_elems);
    dg += double(rstd[row]) * gn.y;
    db += gn.x;
  }
  total = warp_sum(total);
  dg = warp_sum(dg);
  db = warp_sum(db);
  if (lane == 0) {
    dbias[c] = static_cast<float>(total);
    dgamma[c] = static_cast<float>(dg);
    dbeta[c] = static_cast<float>(db);
  }
}

template <int kGroups, int kBlock, bool kVec>
__global__ void __launch_bounds__(kBlock)
tail_backward_apply_kernel(const float* __restrict__ grad_out, const float* __restrict__ u,
                           const float* __restrict__ lse, const float* __restrict__ conv_bias,
                           const float2* __restrict__ mean, const float* __restrict__ rstd,
                           const float* __restrict__ gamma, const float* __restrict__ beta,
                           const float2* __restrict__ coef, GroupShape shape, SplitPlan plan,
                           float* __restrict__ grad_u) {
  constexpr int W = kVec ? 4 : 1;
  const int64_t plane = blockIdx.x / plan.splits;
  const int64_t begin = (blockIdx.x % plan.splits) * plan.chunk;
  const int64_t count = min(plan.chunk, shape.plane_elems - begin);
  const TailChannel ch = tail_channel<kGroups>(plane, shape, conv_bias, mean, rstd, gamma, beta);
  const float2 bc = coef[shape.row_of_plane<kGroups>(plane)];
  const int64_t pixel = (plane / shape.channels) * shape.plane_elems + begin;
  const int64_t offset = plane * shape.plane_elems + begin;
  const float* in[3] = {u + offset, grad_out + pixel, lse + pixel};
  float* dst = grad_u + offset;
  sweep<kBlock, W, 3>(in, count / W, [&](int64_t i, const Pack<W>(&v)[3]) {
    Pack<W> r;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const TailValue e = tail_value(v[0].v[j], ch);
      float dr, dy;
      tail_gradients(e, v[1].v[j], v[2].v[j], dr, dy);
      r.v[j] = dr + (ch.scale * dy + bc.x * e.centered + bc.y);
    }
    store_pack<W>(dst, i, r);
  });
}

// ---------------------------------------------------------------- host side

// Checks shared by both directions; returns the GroupNorm shape of the conv output.
inline GroupShape check_tail_input(const at::Tensor& u, const at::Tensor& conv_bias, const at::Tensor& gamma,
                                   const at::Tensor& beta, int64_t groups) {
  check_float_cuda(u, "convolution output");
  TORCH_CHECK(u.dim() == 4, "kgen: the convolution output must have shape (N, C, H, W), got ", str(u.sizes()));
  const GroupShape shape = check_groupnorm_input(u, gamma, beta, groups);
  check_float_cuda(conv_bias, "convolution bias");
  TORCH_CHECK(conv_bias.dim() == 1 && conv_bias.size(0) == shape.channels,
              "kgen: convolution bias must have shape (", str(shape.channels), "), got ", str(conv_bias.sizes()));
  TORCH_CHECK(conv_bias.device() == u.device(), "kgen: convolution bias is on ", conv_bias.device(),
              " but the convolution output is on ", u.device());
  TORCH_CHECK(shape.channels <= 2048, "kgen: at most 2048 channels are supported (shared-memory staging), got ",
              str(shape.channels));
  return shape;
}

// Forward: returns {out (N, 1, H, W), mean (N, G, 2) as (hi, lo) pairs, rstd (N, G)}.
template <int kBlock>
std::vector<at::Tensor> gn_tail_lse_forward(const at::Tensor& u_in, const at::Tensor& conv_bias_in,
                                            const at::Tensor& gamma_in, const at::Tensor& beta_in, int64_t groups,
                                            double eps) {
  const GroupShape shape = check_tail_input(u_in, conv_bias_in, gamma_in, beta_in, groups);
  const c10::cuda::CUDAGuard device_guard(u_in.device());
  const auto u = u_in.contiguous();
  const auto conv_bias = conv_bias_in.contiguous(), gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
  auto out = at::empty({shape.batch, 1, u.size(2), u.size(3)}, u.options());
  if (u.numel() == 0) {  // no pixels, or no channels: log of an empty sum, as torch.logsumexp
    return {out.fill_(-INFINITY), at::zeros({shape.batch, shape.groups, 2}, u.options()),
            at::zeros({shape.batch, shape.groups}, u.options())};
  }
  auto mean = at::empty({shape.batch, shape.groups, 2}, u.options());
  auto rstd = at::empty({shape.batch, shape.groups}, u.options());
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t planes = shape.batch * shape.channels;
  const int64_t rows = shape.batch * shape.groups;

  // Statistics: Welford moments per plane (groupnorm/op/twopass.cuh's kernel), combined per group with the bias.
  const SplitPlan plan = plan_split<kBlock>(shape.plane_elems);
  auto partial = at::empty({planes * plan.splits * int64_t(sizeof(Moments) / sizeof(float))}, u.options());
  auto* partial_ptr = reinterpret_cast<Moments*>(partial.data_ptr<float>());
  const bool vec = shape.plane_elems % 4 == 0 && is_16_byte_aligned(u.data_ptr<float>());
  dispatch_vec(vec, [&](auto kv) {
    moments_partial_kernel<Identity, kBlock, decltype(kv)::value><<<planes * plan.splits, kBlock, 0, stream>>>(
        u.data_ptr<float>(), shape.plane_elems, plan, partial_ptr, Identity{});
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  biased_group_moments_kernel<<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
      u.data_ptr<float>(), conv_bias.data_ptr<float>(), partial_ptr, plan.splits, shape, eps, as_float2(mean),
      rstd.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();

  // The fused tail: one sweep over the channels of every pixel.
  const bool vec_out = vec && is_16_byte_aligned(out.data_ptr<float>());
  dispatch_vec(vec_out, [&](auto kv) {
    constexpr int W = decltype(kv)::value ? 4 : 1;
    const int64_t blocks_per_sample = blocks_for(shape.plane_elems / W, kBlock);
    tail_lse_forward_kernel<kBlock, W>
        <<<shape.batch * blocks_per_sample, kBlock, tail_forward_shared_bytes(shape.channels), stream>>>(
            u.data_ptr<float>(), conv_bias.data_ptr<float>(), as_float2(mean), rstd.data_ptr<float>(),
            gamma.data_ptr<float>(), beta.data_ptr<float>(), out.data_ptr<float>(), shape, blocks_per_sample);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out, mean, rstd};
}

// Backward: returns {grad of the conv output (without bias), grad conv bias, grad gamma, grad beta}.
template <int kBlock, int kSpecialisedGroups>
std::vector<at::Tensor> gn_tail_lse_backward(const at::Tensor& grad_out_in, const at::Tensor& u_in,
                                             const at::Tensor& conv_bias_in, const at::Tensor& gamma_in,
                                             const at::Tensor& beta_in, const at::Tensor& mean,
                                             const at::Tensor& rstd, const at::Tensor& out_in, int64_t groups) {
  const GroupShape shape = check_tail_input(u_in, conv_bias_in, gamma_in, beta_in, groups);
  const std::vector<int64_t> out_shape{shape.batch, 1, u_in.size(2), u_in.size(3)};
  check_float_cuda(grad_out_in, "gradient of the output");
  check_float_cuda(out_in, "saved output");
  TORCH_CHECK(grad_out_in.sizes().equals(out_shape) && out_in.sizes().equals(out_shape),
              "kgen: the output and its gradient must have shape ", str(out_shape), ", got ",
              str(out_in.sizes()), " and ", str(grad_out_in.sizes()));
  const int64_t rows = shape.batch * shape.groups;
  for (const auto* t : {&mean, &rstd}) check_float_cuda(*t, "saved GroupNorm statistics");
  TORCH_CHECK(mean.is_contiguous() && mean.numel() == rows * 2 && rstd.is_contiguous() && rstd.numel() == rows,
              "kgen: saved statistics must be the forward's (N, G, 2) mean and (N, G) rstd");
  const c10::cuda::CUDAGuard device_guard(u_in.device());
  const auto g = grad_out_in.contiguous(), u = u_in.contiguous(), lse = out_in.contiguous();
  const auto conv_bias = conv_bias_in.contiguous(), gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
  auto grad_u = at::empty_like(u, at::MemoryFormat::Contiguous);
  if (u.numel() == 0) return {grad_u, at::zeros_like(conv_bias), at::zeros_like(gamma), at::zeros_like(gamma)};
  auto dbias = at::empty_like(conv_bias), dgamma = at::empty_like(gamma), dbeta = at::empty_like(gamma);

  const SplitPlan plan = plan_split<kBlock>(shape.plane_elems);
  const int64_t planes = shape.batch * shape.channels;
  auto gn_partial = at::empty({planes * plan.splits, 2}, u.options());
  auto extra_partial = at::empty({planes * plan.splits, 2}, u.options());
  auto plane_sums = at::empty({planes, 2}, u.options().dtype(at::kDouble));
  auto coef = at::empty({rows, 2}, u.options());
  auto* plane_sums_ptr = reinterpret_cast<double2*>(plane_sums.data_ptr<double>());
  const bool vec = shape.plane_elems % 4 == 0 && is_16_byte_aligned(u.data_ptr<float>()) &&
                   is_16_byte_aligned(g.data_ptr<float>()) && is_16_byte_aligned(lse.data_ptr<float>()) &&
                   is_16_byte_aligned(grad_u.data_ptr<float>());
  const auto stream = at::cuda::getCurrentCUDAStream();
  dispatch_groups<kSpecialisedGroups>(shape.groups, [&](auto kg) {
    constexpr int kGroups = decltype(kg)::value;
    dispatch_vec(vec, [&](auto kv) {
      tail_backward_partial_kernel<kGroups, kBlock, decltype(kv)::value>
          <<<planes * plan.splits, kBlock, 0, stream>>>(
              g.data_ptr<float>(), u.data_ptr<float>(), lse.data_ptr<float>(), conv_bias.data_ptr<float>(),
              as_float2(mean), rstd.data_ptr<float>(), gamma.data_ptr<float>(), beta.data_ptr<float>(), shape, plan,
              as_float2(gn_partial), as_float2(extra_partial));
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    backward_group_kernel<kGroups, kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
        as_float2(gn_partial), plan.splits, gamma.data_ptr<float>(), rstd.data_ptr<float>(), shape, plane_sums_ptr,
        as_float2(coef));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    channel_grads_kernel<kGroups><<<blocks_for(shape.channels * kWarpSize, 128), 128, 0, stream>>>(
        as_float2(extra_partial), plan.splits, plane_sums_ptr, rstd.data_ptr<float>(), gamma.data_ptr<float>(),
        as_float2(coef), shape, dbias.data_ptr<float>(), dgamma.data_ptr<float>(), dbeta.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    dispatch_vec(vec, [&](auto kv) {
      tail_backward_apply_kernel<kGroups, kBlock, decltype(kv)::value>
          <<<planes * plan.splits, kBlock, 0, stream>>>(
              g.data_ptr<float>(), u.data_ptr<float>(), lse.data_ptr<float>(), conv_bias.data_ptr<float>(),
              as_float2(mean), rstd.data_ptr<float>(), gamma.data_ptr<float>(), beta.data_ptr<float>(),
              as_float2(coef), shape, plan, grad_u.data_ptr<float>());
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {grad_u, dbias, dgamma, dbeta};
}

}  // namespace kgen
