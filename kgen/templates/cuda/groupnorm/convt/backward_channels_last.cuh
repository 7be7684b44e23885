// ---- groupnorm/convt/backward_channels_last.cuh: a region's backward with dx written channels-last, for the conv
// before it (kgen's wgmma ConvTranspose2d, conv/convt_wgmma.cuh) ----
//
// The conv's backward reads the gradient of its output channels-last: kgen's wgmma input gradient (16-byte copies of
// 4 channels a position) and cuDNN's weight gradient where kgen's does not apply (its NHWC kernels are what run either
// way; for NCHW tensors cuDNN first makes its own slower copies). So the region's apply sweep writes dx, that
// gradient, straight in that layout, instead of the NCHW sweep followed by core/layout.cuh's copy: one read and one
// write of the whole tensor less (L2-19: 2.2 GB each way). The sums sweep before it, the group coefficients and the
// parameter sums are the two-pass backward's (groupnorm/twopass/backward.cuh); so is each value's arithmetic
// (value_dx), from the same coefficients. A region without a reduction (kNone).
//
// A block takes one sample, kClTileC channels and a span of kClTileP-position tiles. For each tile it reads dout
// and x along positions (16-byte loads where the plane allows: contiguous in NCHW), computes dx, and turns it through
// a shared tile into stores along channels (16-byte stores of 4 channels: contiguous in NHWC), the way
// core/layout.cuh's batched transpose moves its tiles. A thread reads the same channel rows in every tile of its
// span, so it loads their constants (functors, statistics, coefficients) once and keeps their prologue parameter
// gradients in registers; at the end the block adds each row's per-thread sums in thread order (deterministic).
namespace kgen {
namespace region_convt {

constexpr int kClTileC = 32;
constexpr int kClTileP = 64;
constexpr int kClThreads = 256;
constexpr int64_t kClTilesPerSpan = 8;
// Tiles a thread loads before the block's barrier. H100, L2-19's shape, the GroupNorm backward with this sweep:
// 1 tile 4.30 ms, 2 tiles 3.90 (126 registers, 2 blocks an SM), 4 tiles at 2 blocks an SM 4.02; capping 2 tiles at
// 80 registers (3 blocks) spills, 5.03. The NCHW sweep plus core/layout.cuh's copy take 5.17.
constexpr int kClStep = 2;

template <class Pro, class Epi, bool kVec>
__global__ void __launch_bounds__(kClThreads)
backward_apply_channels_last_kernel(const float* __restrict__ x, const float* __restrict__ dout, RegionParams params,
                                    RegionShape shape, const float2* __restrict__ mean, const float* __restrict__ rstd,
                                    const float* __restrict__ gamma, const float* __restrict__ beta,
                                    const float2* __restrict__ coef, float* __restrict__ dx, int64_t channel_tiles,
                                    int64_t spans, float* __restrict__ pro_partial) {
  namespace rt = region_twopass;
  constexpr int kLanesPerRow = kVec ? kClTileP / 4 : kClTileP;  // threads sharing a channel row of the tile
  constexpr int kRowStep = kClThreads / kLanesPerRow;
  constexpr int kRows = kClTileC / kRowStep;                    // channel rows per thread: 2 (kVec) or 8
  constexpr int W = kVec ? 4 : 1;
  static_assert(kClTileC * kLanesPerRow <= kClStep * kClTileC * (kClTileP + 1), "the row sums reuse the tile");
  __shared__ float tile[kClStep][kClTileC][kClTileP + 1];
  const int64_t span = blockIdx.x % spans;
  const int64_t channel_tile = (blockIdx.x / spans) % channel_tiles;
  const int64_t n = blockIdx.x / (spans * channel_tiles);
  const int64_t C = shape.channels, P = shape.plane, cpg = shape.channels_per_group();
  const int64_t c0 = channel_tile * kClTileC;
  const int row0 = threadIdx.x / kLanesPerRow;
  const int lane_s = (threadIdx.x % kLanesPerRow) * (kVec ? 4 : 1);

  rt::Channel<Pro, Epi> ch[kRows];
  float2 bc[kRows];
  float dparam[kRows][kMaxParams];
#pragma unroll
  for (int j = 0; j < kRows; ++j) {
    const int64_t c = min(c0 + row0 + j * kRowStep, C - 1);  // rows past C load channel C-1's and store nothing
    const int64_t row = n * shape.groups + c / cpg;
    ch[j] = rt::load_channel<Pro, Epi>(params, c, row, mean, rstd, gamma, beta);
    bc[j] = coef[row];
#pragma unroll
    for (int k = 0; k < kMaxParams; ++k) dparam[j][k] = 0.f;
  }
  const float* dout_n = dout + n * C * P;
  const float* x_n = x + n * C * P;
  float* dx_n = dx + n * P * C;
  const int64_t tiles = (P + kClTileP - 1) / kClTileP;
  const int64_t first = span * kClTilesPerSpan;
  const int64_t last = min(first + kClTilesPerSpan, tiles);
  for (int64_t t = first; t < last; t += kClStep) {
    // Every load of the step's tiles is issued before the first value is used: 2 x kClStep x kRows loads in flight a
    // thread (see kClStep).
    Pack<W> vdout[kClStep][kRows], vx[kClStep][kRows];
#pragma unroll
    for (int u = 0; u < kClStep; ++u) {
      const int64_t p = (t + u) * kClTileP + lane_s;
#pragma unroll
      for (int j = 0; j < kRows; ++j) {
        const int64_t c = c0 + row0 + j * kRowStep;
        if (t + u >= last || c >= C || p >= P) continue;  // P % 4 == 0 with kVec: a float4 is all in or all out
        vdout[u][j] = load_pack<W>(dout_n + c * P + p, 0);
        vx[u][j] = load_pack<W>(x_n + c * P + p, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < kClStep; ++u) {
#pragma unroll
      for (int j = 0; j < kRows; ++j) {
        const int r = row0 + j * kRowStep;
        if (t + u >= last || c0 + r >= C || (t + u) * kClTileP + lane_s >= P) continue;
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const float xv = vx[u][j].v[k];
          const float z = ch[j].pro.value(xv);
          const float zc = centered(z, ch[j].mean);
          const float y = __fmaf_rn(zc, ch[j].scale, ch[j].shift);  // kCentred, as the forward
          tile[u][r][lane_s + k] = rt::value_dx(ch[j], xv, z, zc, y, vdout[u][j].v[k], bc[j], dparam[j]);
        }
      }
    }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < kClStep; ++u) {
      if (t + u >= last) break;
      const int64_t p0 = (t + u) * kClTileP;
      if constexpr (kVec) {  // C % 4 == 0: 4 channels are all in or all out
        constexpr int kStoresPerPos = kClTileC / 4;
        for (int k = threadIdx.x; k < kClTileP * kStoresPerPos; k += kClThreads) {
          const int s = k / kStoresPerPos, r = (k % kStoresPerPos) * 4;
          if (p0 + s < P && c0 + r < C) {
            *reinterpret_cast<float4*>(dx_n + (p0 + s) * C + c0 + r) =
                make_float4(tile[u][r][s], tile[u][r + 1][s], tile[u][r + 2][s], tile[u][r + 3][s]);
          }
        }
      } else {
        for (int k = threadIdx.x; k < kClTileP * kClTileC; k += kClThreads) {
          const int s = k / kClTileC, r = k % kClTileC;
          if (p0 + s < P && c0 + r < C) dx_n[(p0 + s) * C + c0 + r] = tile[u][r][s];
        }
      }
    }
    __syncthreads();
  }
  // The prologue's parameter gradients, one at a time: each row's per-thread sums in thread order, one partial per
  // (parameter, sample, channel, span), laid out as region_twopass::param_sums reads them (spans as its splits).
  float* row_sums = &tile[0][0][0];  // [kClTileC][kLanesPerRow]
#pragma unroll
  for (int k = 0; k < Pro::kParams; ++k) {
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
      row_sums[(row0 + j * kRowStep) * kLanesPerRow + threadIdx.x % kLanesPerRow] = dparam[j][k];
    }
    __syncthreads();
    if (threadIdx.x < kClTileC && c0 + threadIdx.x < C) {
      float total = 0.f;
      for (int l = 0; l < kLanesPerRow; ++l) total += row_sums[threadIdx.x * kLanesPerRow + l];
      const int64_t entries = shape.batch * C * spans;
      pro_partial[k * entries + (n * C + c0 + threadIdx.x) * spans + span] = total;
    }
    __syncthreads();
  }
}

// A kNone region's backward with dx channels-last (NHWC strides; the same values as region_backward_twopass's):
// {dx, dgamma (C), dbeta (C) (both undefined when affine=False), dprologue (Kp, C), depilogue (Ke, C)}.
template <class Pro, class Epi, int kBlock>
std::vector<at::Tensor> region_backward_channels_last(const at::Tensor& dout_in, const at::Tensor& input,
                                                      const at::Tensor& gamma_in, const at::Tensor& beta_in,
                                                      const std::vector<at::Tensor>& prologue_params,
                                                      const std::vector<at::Tensor>& epilogue_params,
                                                      const at::Tensor& mean, const at::Tensor& rstd, int64_t groups) {
  namespace rt = region_twopass;
  constexpr ReduceKind R = ReduceKind::kNone;
  constexpr ReduceOp O = ReduceOp::kSum;
  const rt::BackwardInputs in = rt::backward_inputs<Pro, Epi, R, O>(dout_in, input, gamma_in, beta_in, prologue_params,
                                                                    epilogue_params, mean, rstd, at::Tensor(),
                                                                    at::Tensor(), groups, {});
  TORCH_CHECK(input.dim() == 4, "kgen: the channels-last region backward takes (N, C, H, W) inputs, got ",
              str(input.dim()), " dims");
  const c10::cuda::CUDAGuard device_guard(input.device());
  const RegionShape& shape = in.shape;
  const auto options = in.x.options();
  auto dx = at::empty_like(in.x, at::MemoryFormat::ChannelsLast);
  at::Tensor dgamma, dbeta, dprologue, depilogue;
  std::tie(dgamma, dbeta, dprologue, depilogue) =
      rt::param_grad_buffers<Pro, Epi>(shape.channels, in.affine, options, in.x.numel() == 0);
  if (in.x.numel() == 0) return {dx, dgamma, dbeta, dprologue, depilogue};

  // The sums sweep and the group coefficients, as the two-pass backward runs them.
  const auto stream = at::cuda::getCurrentCUDAStream();
  const SplitPlan plan = plan_split<kBlock>(shape.plane);
  const int64_t blocks = shape.batch * shape.channels * plan.splits;
  rt::check_grid(blocks, "sweep");
  const int64_t channel_tiles = blocks_for(shape.channels, kClTileC);
  const int64_t spans = blocks_for(blocks_for(shape.plane, kClTileP), kClTilesPerSpan);
  const int64_t apply_blocks = shape.batch * channel_tiles * spans;
  rt::check_grid(apply_blocks, "channels-last apply");
  const GroupShape gshape{shape.batch, shape.channels, shape.groups, shape.plane};
  const rt::Geometry geo = rt::geometry(shape);
  rt::SweepScratch t(in, blocks, shape.batch * shape.channels * spans, Epi::kParams, Pro::kParams);
  const float* gamma_ptr = rt::data_or_null(in.gamma);
  const float* beta_ptr = rt::data_or_null(in.beta);
  const bool vec = rt::backward_vec<R>(in, in.x);
  dispatch_vec(vec, [&](auto kv) {
    rt::backward_sweep_kernel<Pro, Epi, R, O, kBlock, decltype(kv)::value, false><<<blocks, kBlock, 0, stream>>>(
        in.x.data_ptr<float>(), in.dout.data_ptr<float>(), nullptr, nullptr, in.params, shape, geo, plan,
        as_float2(mean), rstd.data_ptr<float>(), gamma_ptr, beta_ptr, nullptr, static_cast<float*>(nullptr),
        as_float2(t.gn_partial), t.epi_ptr(), blocks);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  rt::group_backward<kBlock>(t.gn_partial, plan.splits, t.gamma_or_ones, rstd, gshape, t.plane_sums, t.coef, dgamma,
                             dbeta);

  // The apply sweep, dx channels-last.
  const bool vec_cl = shape.plane % 4 == 0 && shape.channels % 4 == 0 && rt::aligned(in.x) && rt::aligned(in.dout) &&
                      rt::aligned(dx);
  dispatch_vec(vec_cl, [&](auto kv) {
    backward_apply_channels_last_kernel<Pro, Epi, decltype(kv)::value><<<apply_blocks, kClThreads, 0, stream>>>(
        in.x.data_ptr<float>(), in.dout.data_ptr<float>(), in.params, shape, as_float2(mean), rstd.data_ptr<float>(),
        gamma_ptr, beta_ptr, as_float2(t.coef), dx.data_ptr<float>(), channel_tiles, spans, t.pro_ptr());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const at::Tensor none;
  rt::param_sums(t.epi_partial, Epi::kParams, none, 0, blocks, plan.splits, shape, depilogue, dprologue);
  rt::param_sums(none, 0, t.pro_partial, Pro::kParams, shape.batch * shape.channels * spans, static_cast<int>(spans),
                 shape, depilogue, dprologue);
  return {dx, dgamma, dbeta, dprologue, depilogue};
}

}  // namespace region_convt
}  // namespace kgen
