// ---- groupnorm/op/twopass.cuh: forward and backward kernels, side by side, templated on an input op ----
//
// Layout: x is (N, C, *) contiguous, so one (sample, group) slice is ONE contiguous run of
// D = (C / G) * HW values, and one (sample, channel) plane is a contiguous run of HW values.
// `Op` is applied to x on the fly (Identity for plain GroupNorm, GELU for a fused GELU->GroupNorm):
// its result z = op(x) is never stored, every kernel recomputes it from x.
//
// Forward, 2 reads + 1 write of x:
//   moments_partial   Welford moments of z over chunks of each slice, many blocks per slice
//   moments_finalize  exact (double) combine of the chunks -> mean, rstd per (sample, group)
// The moments are taken of z - K, K the slice's first value, and the mean is kept as a float pair
// (hi, lo) with hi + lo = the double mean: with data like 1e4 + 1e-2 randn, a float mean alone would
// be off by a sizeable fraction of the spread, and z - mean is formed as (z - hi) - lo, exactly.
//   normalize         y = (z - mean) * (rstd * gamma[c]) + beta[c], 16-byte loads and stores
// Backward, 2 reads, then 2 reads + 1 write:
//   backward_partial  per (sample, channel) plane: sum dy and sum dy * (z - mean)
//   backward_group    per (sample, group): the two coefficients of dz (below); plane sums kept
//   param_grad        dgamma[c] = sum_n rstd * sum dy (z - mean),  dbeta[c] = sum_n sum dy
//   backward_apply    dx = op'(x) * (rstd gamma[c] dy + B (z - mean) + C)
// with, over a group of D values, B = -rstd^3 / D * sum gamma dy (z - mean) and
// C = -rstd / D * sum gamma dy. Summing dy (z - mean) rather than dy z keeps a large common offset
// in the data from cancelling. Every reduction is a fixed tree: results are bitwise reproducible.
//
// kChannelBias (a convolution's bias fused in, see ChannelOp in core/unary_ops.cuh): every kernel reads
// u = x + bias[c] instead of x, so z = op(u). moments_partial then takes (sample, channel) planes
// rather than whole slices, one channel and one bias per block; backward_apply also sums the dx it
// writes per block (dx is the conv output's gradient, so its sum over n, h, w is the bias gradient),
// and column_sums adds those block sums per channel, in double and in a fixed order. Without the flag
// the kernels are exactly the plain GroupNorm ones.
//
// Needs core/common.cuh, core/sweeps.cuh, core/unary_ops.cuh and groupnorm/statistics.cuh before it.
namespace kgen {

template <class Op>
__device__ __forceinline__ void accumulate(Moments& acc, const Pack<4>& x, const Op& op, float shift) {
  accumulate4(acc, op(x.v[0]) - shift, op(x.v[1]) - shift, op(x.v[2]) - shift, op(x.v[3]) - shift);
}

template <class Op>
__device__ __forceinline__ void accumulate(Moments& acc, const Pack<1>& x, const Op& op, float shift) {
  accumulate1(acc, op(x.v[0]) - shift);
}

// ---------------------------------------------------------------- forward kernels

// kChannelBias: each "slice" is a (sample, channel) plane (slice_elems = H W) whose values get that
// channel's bias. All planes of a group share the group's pilot op(first value + its bias); the blocks
// of the group's first plane write that biased first value to `pilots` (one per (sample, group)), for
// moments_finalize. A group's chunks stay contiguous in `partial`: (row C/G + k) splits + split.
template <class Op, int kBlock, bool kVec, bool kChannelBias = false>
__global__ void __launch_bounds__(kBlock)
moments_partial_kernel(const float* __restrict__ x, int64_t slice_elems, SplitPlan plan,
                       Moments* __restrict__ partial, Op op, const float* __restrict__ channel_bias = nullptr,
                       GroupShape shape = GroupShape{}, float* __restrict__ pilots = nullptr) {
  constexpr int W = kVec ? 4 : 1;
  const int64_t slice = blockIdx.x / plan.splits;
  const int64_t begin = (blockIdx.x % plan.splits) * plan.chunk;
  const int64_t count = min(plan.chunk, slice_elems - begin);
  const int64_t c = kChannelBias ? slice % shape.channels : 0;
  float pilot;
  if constexpr (kChannelBias) {
    const int64_t k = c % shape.channels_per_group();  // channel within the group
    const float first = __fadd_rn(x[(slice - k) * slice_elems], __ldg(channel_bias + (c - k)));
    pilot = op(first);
    if (k == 0 && begin == 0 && threadIdx.x == 0) pilots[slice / shape.channels_per_group()] = first;
  } else {
    pilot = op(x[slice * slice_elems]);
  }
  const auto f = channel_op<kChannelBias>(op, channel_bias, c);
  const float* in[1] = {x + slice * slice_elems + begin};
  Moments acc{0.f, 0.f, 0.f};
  sweep<kBlock, W, 1>(in, count / W, [&](int64_t, const Pack<W>(&v)[1]) { accumulate(acc, v[0], f, pilot); });
  acc = block_combine<kBlock>(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// One warp per (sample, group): combines that slice's chunk moments in double.
template <class Op, int kBlock>
__global__ void __launch_bounds__(kBlock)
moments_finalize_kernel(const float* __restrict__ x, int64_t slice_elems, const Moments* __restrict__ partial,
                        int splits, int64_t rows, double eps, float2* __restrict__ mean, float* __restrict__ rstd,
                        Op op) {
  const int64_t row = (int64_t(blockIdx.x) * kBlock + threadIdx.x) / kWarpSize;
  if (row >= rows) return;  // warp-uniform
  const MomentsD m = warp_merge(splits, [&](int s) { return partial[row * splits + s]; });
  if (threadIdx.x % kWarpSize == 0) {
    // the partial kernel's pilot back
    finish_statistics(m, double(op(x[row * slice_elems])), eps, mean[row], rstd[row]);
  }
}

template <class Op, int kGroups, int kBlock, bool kVec, bool kChannelBias>
__global__ void __launch_bounds__(kBlock)
normalize_kernel(const float* __restrict__ x, const float2* __restrict__ mean, const float* __restrict__ rstd,
                 const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ y,
                 GroupShape shape, SplitPlan plan, Op op, const float* __restrict__ channel_bias) {
  constexpr int W = kVec ? 4 : 1;
  const int64_t plane = blockIdx.x / plan.splits;
  const int64_t begin = (blockIdx.x % plan.splits) * plan.chunk;
  const int64_t count = min(plan.chunk, shape.plane_elems - begin);
  const int64_t c = plane % shape.channels;
  const int64_t row = shape.row_of_plane<kGroups>(plane);
  const float2 mu = mean[row];
  const float scale = rstd[row] * gamma[c];
  const float shift = beta[c];
  const auto f = channel_op<kChannelBias>(op, channel_bias, c);
  const int64_t offset = plane * shape.plane_elems + begin;
  const float* in[1] = {x + offset};
  float* out = y + offset;
  sweep<kBlock, W, 1>(in, count / W, [&](int64_t i, const Pack<W>(&v)[1]) {
    Pack<W> r;
#pragma unroll
    for (int j = 0; j < W; ++j) r.v[j] = centered(f(v[0].v[j]), mu) * scale + shift;
    store_pack<W>(out, i, r);
  });
}

// ---------------------------------------------------------------- backward kernels

template <class Op, int kGroups, int kBlock, bool kVec, bool kChannelBias>
__global__ void __launch_bounds__(kBlock)
backward_partial_kernel(const float* __restrict__ dy, const float* __restrict__ x, const float2* __restrict__ mean,
                        GroupShape shape, SplitPlan plan, float2* __restrict__ partial, Op op,
                        const float* __restrict__ channel_bias) {
  constexpr int W = kVec ? 4 : 1;
  const int64_t plane = blockIdx.x / plan.splits;
  const int64_t begin = (blockIdx.x % plan.splits) * plan.chunk;
  const int64_t count = min(plan.chunk, shape.plane_elems - begin);
  const float2 mu = mean[shape.row_of_plane<kGroups>(plane)];
  const auto f = channel_op<kChannelBias>(op, channel_bias, kChannelBias ? plane % shape.channels : 0);
  const int64_t offset = plane * shape.plane_elems + begin;
  const float* in[2] = {dy + offset, x + offset};
  float2 sums = make_float2(0.f, 0.f);
  sweep<kBlock, W, 2>(in, count / W, [&](int64_t, const Pack<W>(&v)[2]) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      sums.x += v[0].v[j];
      sums.y += v[0].v[j] * centered(f(v[1].v[j]), mu);
    }
  });
  sums = block_sum<kBlock>(sums);
  if (threadIdx.x == 0) partial[blockIdx.x] = sums;
}

// kChannelBias: the block also sums the dx it writes, into bias_partial[(n splits + split) C + c]
// (one row of C values per (sample, split), as column_sums reads them).
template <class Op, int kGroups, int kBlock, bool kVec, bool kChannelBias>
__global__ void __launch_bounds__(kBlock)
backward_apply_kernel(const float* __restrict__ dy, const float* __restrict__ x, const float2* __restrict__ mean,
                      const float* __restrict__ rstd, const float* __restrict__ gamma,
                      const float2* __restrict__ coef, float* __restrict__ dx, GroupShape shape, SplitPlan plan,
                      Op op, const float* __restrict__ channel_bias, float* __restrict__ bias_partial) {
  constexpr int W = kVec ? 4 : 1;
  const int64_t plane = blockIdx.x / plan.splits;
  const int64_t split = blockIdx.x % plan.splits;
  const int64_t begin = split * plan.chunk;
  const int64_t count = min(plan.chunk, shape.plane_elems - begin);
  const int64_t row = shape.row_of_plane<kGroups>(plane);
  const int64_t c = plane % shape.channels;
  const float2 mu = mean[row];
  const float a = rstd[row] * gamma[c];
  const float2 bc = coef[row];
  const auto f = channel_op<kChannelBias>(op, channel_bias, c);
  const int64_t offset = plane * shape.plane_elems + begin;
  const float* in[2] = {dy + offset, x + offset};
  float* out = dx + offset;
  float dx_sum = 0.f;
  sweep<kBlock, W, 2>(in, count / W, [&](int64_t i, const Pack<W>(&v)[2]) {
    Pack<W> r;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      float z, dz_dx;
      f.value_and_derivative(v[1].v[j], z, dz_dx);
      r.v[j] = groupnorm_dx(dz_dx, a, v[0].v[j], bc, z, mu);
      if constexpr (kChannelBias) dx_sum += r.v[j];
    }
    store_pack<W>(out, i, r);
  });
  if constexpr (kChannelBias) {
    dx_sum = block_sum<kBlock>(dx_sum);
    const int64_t n = plane / shape.channels;
    if (threadIdx.x == 0) bias_partial[(n * plan.splits + split) * shape.channels + c] = dx_sum;
  }
}

inline GroupShape check_groupnorm_input(const at::Tensor& x, const at::Tensor& gamma,
                                        const at::Tensor& beta, int64_t groups) {
  check_float_cuda(x, "input");
  TORCH_CHECK(x.dim() >= 2, "kgen: GroupNorm input must have shape (N, C, *), got ", str(x.sizes()));
  const int64_t channels = x.size(1);
  TORCH_CHECK(groups > 0 && channels % groups == 0, "kgen: ", str(channels),
              " channels are not divisible into ", str(groups), " groups");
  for (const auto* t : {&gamma, &beta}) {
    check_float_cuda(*t, "GroupNorm weight/bias");
    TORCH_CHECK(t->dim() == 1 && t->size(0) == channels, "kgen: GroupNorm weight/bias must have shape (",
                str(channels), "), got ", str(t->sizes()));
    TORCH_CHECK(t->device() == x.device(), "kgen: GroupNorm weight/bias are on ", t->device(),
                " but the input is on ", x.device());
  }
  const int64_t plane_elems = x.dim() > 2 ? x.numel() / (x.size(0) * channels) : 1;
  return GroupShape{x.size(0), channels, groups, plane_elems};
}

// The fused conv bias: C float32 values on the input's device.
inline void check_channel_bias(const at::Tensor& bias, int64_t channels, const at::Device& device) {
  check_float_cuda(bias, "convolution bias");
  TORCH_CHECK(bias.dim() == 1 && bias.size(0) == channels, "kgen: convolution bias must have shape (", str(channels),
              "), got ", str(bias.sizes()));
  TORCH_CHECK(bias.device() == device, "kgen: convolution bias is on ", bias.device().str(), " but the input is on ",
              device.str());
}

// A bias tensor's data for the kernels: nullptr without kChannelBias (the kernels never read it then).
template <bool kChannelBias>
inline const float* channel_bias_data(const at::Tensor& bias) {
  if constexpr (kChannelBias) {
    return bias.data_ptr<float>();
  } else {
    return nullptr;
  }
}

// {dx, dgamma, dbeta}, and with kChannelBias the conv bias gradient after them.
template <bool kChannelBias>
inline std::vector<at::Tensor> backward_result(const at::Tensor& dx, const at::Tensor& dgamma,
                                               const at::Tensor& dbeta, const at::Tensor& dchannel_bias) {
  if constexpr (kChannelBias) {
    return {dx, dgamma, dbeta, dchannel_bias};
  } else {
    return {dx, dgamma, dbeta};
  }
}

// Statistics of op(x) per (sample, group): returns {mean (N, G, 2) as (hi, lo) pairs, rstd (N, G)}.
// kChannelBias: of op(x + channel_bias[c]); the chunks are cut per (sample, channel) plane, the rows of
// moments_finalize are still (sample, group), over C/G times as many chunks.
template <class Op, int kBlock, bool kChannelBias = false>
std::vector<at::Tensor> groupnorm_moments(const at::Tensor& x, const GroupShape& shape, double eps, Op op,
                                          const float* channel_bias = nullptr) {
  auto stats_options = x.options().dtype(at::kFloat);
  const int64_t rows = shape.batch * shape.groups;
  auto mean = at::empty({shape.batch, shape.groups, 2}, stats_options);
  auto rstd = at::empty({shape.batch, shape.groups}, stats_options);
  const int64_t slice = kChannelBias ? shape.plane_elems : shape.slice_elems();
  const int64_t slices = kChannelBias ? shape.batch * shape.channels : rows;
  const SplitPlan plan = plan_split<kBlock>(slice);
  const int64_t chunks_per_row = plan.splits * (kChannelBias ? shape.channels_per_group() : 1);
  auto partial = at::empty({slices * plan.splits * int64_t(sizeof(Moments) / sizeof(float))}, stats_options);
  auto* partial_ptr = reinterpret_cast<Moments*>(partial.data_ptr<float>());
  auto pilots = kChannelBias ? at::empty({rows}, stats_options) : at::Tensor();
  float* pilots_ptr = kChannelBias ? pilots.data_ptr<float>() : nullptr;
  const auto stream = at::cuda::getCurrentCUDAStream();
  const bool vec = slice % 4 == 0 && is_16_byte_aligned(x.data_ptr<float>());
  dispatch_vec(vec, [&](auto kv) {
    moments_partial_kernel<Op, kBlock, decltype(kv)::value, kChannelBias><<<slices * plan.splits, kBlock, 0, stream>>>(
        x.data_ptr<float>(), slice, plan, partial_ptr, op, channel_bias, shape, pilots_ptr);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  // With kChannelBias the pilots array stands in for x, one value per row: moments_finalize reads op(pilots[row]).
  const float* pilot_source = kChannelBias ? pilots_ptr : x.data_ptr<float>();
  moments_finalize_kernel<Op, kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
      pilot_source, kChannelBias ? 1 : slice, partial_ptr, static_cast<int>(chunks_per_row), rows, eps,
      as_float2(mean), rstd.data_ptr<float>(), op);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {mean, rstd};
}

// y = (op(x [+ channel_bias]) - mean) * rstd * gamma + beta, written into `y` (same shape as x, contiguous).
template <class Op, int kBlock, int kSpecialisedGroups, bool kChannelBias = false>
void groupnorm_normalize(const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                         const at::Tensor& gamma, const at::Tensor& beta, at::Tensor& y,
                         const GroupShape& shape, Op op, const float* channel_bias = nullptr) {
  const SplitPlan plan = plan_split<kBlock>(shape.plane_elems);
  const int64_t planes = shape.batch * shape.channels;
  const bool vec = shape.plane_elems % 4 == 0 && is_16_byte_aligned(x.data_ptr<float>()) &&
                   is_16_byte_aligned(y.data_ptr<float>());
  const auto stream = at::cuda::getCurrentCUDAStream();
  dispatch_groups<kSpecialisedGroups>(shape.groups, [&](auto kg) {
    dispatch_vec(vec, [&](auto kv) {
      normalize_kernel<Op, decltype(kg)::value, kBlock, decltype(kv)::value, kChannelBias>
          <<<planes * plan.splits, kBlock, 0, stream>>>(x.data_ptr<float>(), as_float2(mean),
                                                       rstd.data_ptr<float>(), gamma.data_ptr<float>(),
                                                       beta.data_ptr<float>(), y.data_ptr<float>(), shape, plan, op,
                                                       channel_bias);
    });
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// One pass per slice when it fits on chip (groupnorm/onepass/onepass.cuh); false, launching nothing, if not.
template <class Pro, class Epi, int kThreads>
bool groupnorm_forward_onepass(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, at::Tensor& y,
                               at::Tensor& mean, at::Tensor& rstd, const GroupShape& shape, double eps,
                               RegionParams params, int blocks_per_sm);

// op(x + bias[c]) as a region prologue (groupnorm/region.cuh), for the one-pass forward: the bias is its one
// parameter.
template <class Op, bool kChannelBias>
struct OpPrologue {
  static constexpr int kParams = kChannelBias ? 1 : 0;
  float bias;
  __device__ static OpPrologue at(const RegionParams& p, int64_t c) { return {kChannelBias ? p.prologue.at(0, c) : 0.f}; }
  __device__ __forceinline__ float value(float x) const { return Op{}(kChannelBias ? x + bias : x); }
};

// Forward of op -> GroupNorm: returns {y, mean, rstd}. kChannelBias: of op(x + channel_bias[c]).
// kOnePassThreads > 0: the one-pass kernel, that many threads per block and `onepass_blocks_per_sm` blocks
// per SM, wherever the planner finds that a slice fits on chip; the two-pass kernels elsewhere.
template <class Op, int kBlock, int kSpecialisedGroups, bool kChannelBias = false, int kOnePassThreads = 0>
std::vector<at::Tensor> groupnorm_forward(const at::Tensor& input, const at::Tensor& gamma_in,
                                             const at::Tensor& beta_in, int64_t groups, double eps, Op op,
                                             const at::Tensor& channel_bias_in = at::Tensor(),
                                             int onepass_blocks_per_sm = 1) {
  const GroupShape shape = check_groupnorm_input(input, gamma_in, beta_in, groups);
  if constexpr (kChannelBias) check_channel_bias(channel_bias_in, shape.channels, input.device());
  const c10::cuda::CUDAGuard device_guard(input.device());
  const auto x = input.contiguous();
  const auto gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
  const auto channel_bias = kChannelBias ? channel_bias_in.contiguous() : at::Tensor();
  auto y = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (x.numel() == 0) {
    return {y, at::zeros({shape.batch, shape.groups, 2}, x.options()), at::zeros({shape.batch, shape.groups}, x.options())};
  }
  const float* bias = channel_bias_data<kChannelBias>(channel_bias);
  if constexpr (kOnePassThreads > 0) {
    auto mean = at::empty({shape.batch, shape.groups, 2}, x.options());
    auto rstd = at::empty({shape.batch, shape.groups}, x.options());
    RegionParams params{};
    params.prologue.ptr[0] = bias;
    params.prologue.stride[0] = 1;
    if (groupnorm_forward_onepass<OpPrologue<Op, kChannelBias>, NoEpilogue, kOnePassThreads>(
            x, gamma, beta, y, mean, rstd, shape, eps, params, onepass_blocks_per_sm)) {
      return {y, mean, rstd};
    }
  }
  auto stats = groupnorm_moments<Op, kBlock, kChannelBias>(x, shape, eps, op, bias);
  groupnorm_normalize<Op, kBlock, kSpecialisedGroups, kChannelBias>(x, stats[0], stats[1], gamma, beta, y, shape, op,
                                                                    bias);
  return {y, stats[0], stats[1]};
}

// The checks of a backward call's arguments (the forward's saved statistics among them); returns the shape.
inline GroupShape check_groupnorm_backward(const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& gamma,
                                           const at::Tensor& mean, const at::Tensor& rstd, int64_t groups) {
  const GroupShape shape = check_groupnorm_input(input, gamma, gamma, groups);
  check_float_cuda(grad_out, "gradient of the output");
  TORCH_CHECK(grad_out.sizes() == input.sizes(), "kgen: output gradient has shape ", str(grad_out.sizes()),
              ", expected ", str(input.sizes()));
  const int64_t rows = shape.batch * shape.groups;
  for (const auto* t : {&mean, &rstd}) check_float_cuda(*t, "saved GroupNorm statistics");
  TORCH_CHECK(mean.is_contiguous() && mean.numel() == rows * 2 && rstd.is_contiguous() && rstd.numel() == rows,
              "kgen: saved statistics must be the forward's (N, G, 2) mean and (N, G) rstd");
  return shape;
}

// Backward's sums sweep and what follows from it, for contiguous dy and x: the coefficients B, C of dx per (sample,
// group) into coef (N * G float2), and the parameter gradients into dgamma and dbeta.
template <class Op, int kGroups, int kBlock, bool kChannelBias>
void groupnorm_backward_sums(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& mean,
                             const at::Tensor& rstd, const GroupShape& shape, Op op, const float* channel_bias,
                             float2* coef, at::Tensor& dgamma, at::Tensor& dbeta) {
  const SplitPlan plan = plan_split<kBlock>(shape.plane_elems);
  const int64_t planes = shape.batch * shape.channels;
  const int64_t rows = shape.batch * shape.groups;
  auto partial = at::empty({planes * plan.splits, 2}, x.options());
  auto plane_sums = at::empty({planes, 2}, x.options().dtype(at::kDouble));
  auto* partial_ptr = as_float2(partial);
  auto* plane_sums_ptr = reinterpret_cast<double2*>(plane_sums.data_ptr<double>());
  const bool vec = shape.plane_elems % 4 == 0 && is_16_byte_aligned(x.data_ptr<float>()) &&
                   is_16_byte_aligned(dy.data_ptr<float>());
  const auto stream = at::cuda::getCurrentCUDAStream();
  dispatch_vec(vec, [&](auto kv) {
    backward_partial_kernel<Op, kGroups, kBlock, decltype(kv)::value, kChannelBias>
        <<<planes * plan.splits, kBlock, 0, stream>>>(dy.data_ptr<float>(), x.data_ptr<float>(), as_float2(mean),
                                                     shape, plan, partial_ptr, op, channel_bias);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  backward_group_kernel<kGroups, kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
      partial_ptr, plan.splits, gamma.data_ptr<float>(), rstd.data_ptr<float>(), shape, plane_sums_ptr, coef);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  param_grad_kernel<kGroups><<<shape.channels, kParamGradThreads, 0, stream>>>(
      plane_sums_ptr, rstd.data_ptr<float>(), shape, dgamma.data_ptr<float>(), dbeta.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// One backward call's contiguous operands and its dx (allocated in the entry's memory format), for an apply sweep.
struct BackwardOperands {
  GroupShape shape;
  at::Tensor dy, x, gamma, coef, dx;
  const float* channel_bias;  // nullptr without kChannelBias
};

// What every backward entry shares around its apply sweep: the checks, contiguous operands, the outputs (dx in
// `dx_format`), the sums sweep and its coefficients, and the bias gradient summed per channel. apply(kg, operands)
// launches the entry's apply sweep (kg: the group count, a compile-time constant as dispatch_groups gives it) and
// returns its (rows, C) bias-gradient partials with kChannelBias (else an undefined tensor). Returns {dx, dgamma,
// dbeta}, and with kChannelBias (op(x + channel_bias[c])) the bias gradient, sum over n, h, w of dx, fourth.
template <class Op, int kBlock, int kSpecialisedGroups, bool kChannelBias, class Apply>
std::vector<at::Tensor> groupnorm_backward_with(const at::Tensor& grad_out, const at::Tensor& input,
                                                const at::Tensor& gamma_in, const at::Tensor& mean,
                                                const at::Tensor& rstd, int64_t groups, Op op,
                                                const at::Tensor& channel_bias_in, at::MemoryFormat dx_format,
                                                Apply&& apply) {
  const GroupShape shape = check_groupnorm_backward(grad_out, input, gamma_in, mean, rstd, groups);
  if constexpr (kChannelBias) check_channel_bias(channel_bias_in, shape.channels, input.device());
  const c10::cuda::CUDAGuard device_guard(input.device());
  const auto dy = grad_out.contiguous();
  const auto x = input.contiguous();
  const auto gamma = gamma_in.contiguous();
  const auto channel_bias = kChannelBias ? channel_bias_in.contiguous() : at::Tensor();
  auto dx = at::empty_like(x, dx_format);
  auto dgamma = at::zeros_like(gamma);
  auto dbeta = at::zeros_like(gamma);
  auto dchannel_bias = kChannelBias ? at::zeros_like(channel_bias) : at::Tensor();
  if (x.numel() == 0) return backward_result<kChannelBias>(dx, dgamma, dbeta, dchannel_bias);

  auto coef = at::empty({shape.batch * shape.groups, 2}, x.options());
  const BackwardOperands operands{shape, dy, x, gamma, coef, dx, channel_bias_data<kChannelBias>(channel_bias)};
  at::Tensor bias_partial;
  dispatch_groups<kSpecialisedGroups>(shape.groups, [&](auto kg) {
    groupnorm_backward_sums<Op, decltype(kg)::value, kBlock, kChannelBias>(
        dy, x, gamma, mean, rstd, shape, op, operands.channel_bias, as_float2(coef), dgamma, dbeta);
    bias_partial = apply(kg, operands);
  });
  if constexpr (kChannelBias) column_sums<kBlock>(bias_partial, dchannel_bias);
  return backward_result<kChannelBias>(dx, dgamma, dbeta, dchannel_bias);
}

// Backward of op -> GroupNorm, dx NCHW-contiguous (groupnorm_backward_with says what it returns).
template <class Op, int kBlock, int kSpecialisedGroups, bool kChannelBias = false>
std::vector<at::Tensor> groupnorm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                                              const at::Tensor& gamma_in, const at::Tensor& mean,
                                              const at::Tensor& rstd, int64_t groups, Op op,
                                              const at::Tensor& channel_bias_in = at::Tensor()) {
  auto apply = [&](auto kg, const BackwardOperands& o) {
    const GroupShape& shape = o.shape;
    const SplitPlan plan = plan_split<kBlock>(shape.plane_elems);
    const int64_t planes = shape.batch * shape.channels;
    auto bias_partial =
        kChannelBias ? at::empty({shape.batch * plan.splits, shape.channels}, o.x.options()) : at::Tensor();
    float* bias_partial_ptr = kChannelBias ? bias_partial.data_ptr<float>() : nullptr;
    const bool vec = shape.plane_elems % 4 == 0 && is_16_byte_aligned(o.x.data_ptr<float>()) &&
                     is_16_byte_aligned(o.dy.data_ptr<float>()) && is_16_byte_aligned(o.dx.data_ptr<float>());
    dispatch_vec(vec, [&](auto kv) {
      backward_apply_kernel<Op, decltype(kg)::value, kBlock, decltype(kv)::value, kChannelBias>
          <<<planes * plan.splits, kBlock, 0, at::cuda::getCurrentCUDAStream()>>>(
              o.dy.data_ptr<float>(), o.x.data_ptr<float>(), as_float2(mean), rstd.data_ptr<float>(),
              o.gamma.data_ptr<float>(), as_float2(o.coef), o.dx.data_ptr<float>(), shape, plan, op, o.channel_bias,
              bias_partial_ptr);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return bias_partial;
  };
  return groupnorm_backward_with<Op, kBlock, kSpecialisedGroups, kChannelBias>(
      grad_out, input, gamma_in, mean, rstd, groups, op, channel_bias_in, at::MemoryFormat::Contiguous, apply);
}

}  // namespace kgen
