// ---- GroupNorm backward with its input gradient written channels-last ----
//
// --conv fused's conv backward reads the gradient of the conv's output channels-last: kgen's wgmma input gradient
// (16-byte copies of 4 channels a position) and cuDNN's weight gradient (its NHWC kernels are what run either way;
// for NCHW tensors cuDNN first makes its own slower copies). Here the apply sweep writes dx, that gradient, straight
// in that layout, instead of groupnorm/op/twopass.cuh's NCHW sweep followed by core/layout.cuh's copy: one read and one write of the
// whole tensor less (L2-19: 2.2 GB each way). The sums sweep and the coefficients are groupnorm/op/twopass.cuh's.
//
// A block takes one sample, kClTileC channels and a span of kClTileP-position tiles. For each tile it reads dy and x
// along positions (16-byte loads where the plane allows: contiguous in NCHW), computes dx, and turns it through a
// shared tile into stores along channels (16-byte stores of 4 channels: contiguous in NHWC), the way core/layout.cuh's
// batched transpose moves its tiles. A thread reads the same channel rows in every tile of its span, so it loads
// their per-channel constants once and keeps their bias-gradient sums in registers; at the end the block adds each
// row's per-thread sums in thread order (deterministic).
namespace kgen {

constexpr int kClTileC = 32;
constexpr int kClTileP = 64;
constexpr int kClThreads = 256;
constexpr int64_t kClTilesPerSpan = 8;
// Tiles a thread loads before the block's barrier. H100, L2-19's shape, the GroupNorm backward with this sweep:
// 1 tile 4.30 ms, 2 tiles 3.90 (126 registers, 2 blocks an SM), 4 tiles at 2 blocks an SM 4.02; capping 2 tiles at
// 80 registers (3 blocks) spills, 5.03. The NCHW sweep plus core/layout.cuh's copy take 5.17.
constexpr int kClStep = 2;

template <class Op, int kGroups, bool kVec, bool kChannelBias>
__global__ void __launch_bounds__(kClThreads)
backward_apply_channels_last_kernel(const float* __restrict__ dy, const float* __restrict__ x,
                                    const float2* __restrict__ mean, const float* __restrict__ rstd,
                                    const float* __restrict__ gamma, const float2* __restrict__ coef,
                                    float* __restrict__ dx, GroupShape shape, int64_t channel_tiles, int64_t spans,
                                    Op op, const float* __restrict__ channel_bias, float* __restrict__ bias_partial) {
  constexpr int kLanesPerRow = kVec ? kClTileP / 4 : kClTileP;  // threads sharing a channel row of the tile
  constexpr int kRowStep = kClThreads / kLanesPerRow;
  constexpr int kRows = kClTileC / kRowStep;                    // channel rows per thread: 2 (kVec) or 8
  constexpr int W = kVec ? 4 : 1;
  static_assert(kClTileC * kLanesPerRow <= kClStep * kClTileC * (kClTileP + 1), "the row sums reuse the tile");
  __shared__ float tile[kClStep][kClTileC][kClTileP + 1];
  const int64_t span = blockIdx.x % spans;
  const int64_t channel_tile = (blockIdx.x / spans) % channel_tiles;
  const int64_t n = blockIdx.x / (spans * channel_tiles);
  const int64_t C = shape.channels, P = shape.plane_elems;
  const int64_t c0 = channel_tile * kClTileC;
  const int row0 = threadIdx.x / kLanesPerRow;
  const int lane_s = (threadIdx.x % kLanesPerRow) * (kVec ? 4 : 1);

  ChannelOp<Op, kChannelBias> f[kRows];
  float a[kRows], sum[kRows];
  float2 mu[kRows], bc[kRows];
#pragma unroll
  for (int j = 0; j < kRows; ++j) {
    const int64_t c = min(c0 + row0 + j * kRowStep, C - 1);  // rows past C load channel C-1's and store nothing
    const int64_t row = shape.row_of_plane<kGroups>(n * C + c);
    f[j] = channel_op<kChannelBias>(op, channel_bias, c);
    a[j] = rstd[row] * gamma[c];
    mu[j] = mean[row];
    bc[j] = coef[row];
    sum[j] = 0.f;
  }
  const float* dy_n = dy + n * C * P;
  const float* x_n = x + n * C * P;
  float* dx_n = dx + n * P * C;
  const int64_t tiles = (P + kClTileP - 1) / kClTileP;
  const int64_t first = span * kClTilesPerSpan;
  const int64_t last = min(first + kClTilesPerSpan, tiles);
  for (int64_t t = first; t < last; t += kClStep) {
    // Every load of the step's tiles is issued before the first value is used: 2 x kClStep x kRows loads in flight a
    // thread (see kClStep).
    Pack<W> vdy[kClStep][kRows], vx[kClStep][kRows];
#pragma unroll
    for (int u = 0; u < kClStep; ++u) {
      const int64_t p = (t + u) * kClTileP + lane_s;
#pragma unroll
      for (int j = 0; j < kRows; ++j) {
        const int64_t c = c0 + row0 + j * kRowStep;
        if (t + u >= last || c >= C || p >= P) continue;  // P % 4 == 0 with kVec: a float4 is all in or all out
        vdy[u][j] = load_pack<W>(dy_n + c * P + p, 0);
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
          float z, dz_dx;
          f[j].value_and_derivative(vx[u][j].v[k], z, dz_dx);
          const float d = groupnorm_dx(dz_dx, a[j], vdy[u][j].v[k], bc[j], z, mu[j]);
          tile[u][r][lane_s + k] = d;
          if constexpr (kChannelBias) sum[j] += d;
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
  if constexpr (kChannelBias) {
    float* row_sums = &tile[0][0][0];  // [kClTileC][kLanesPerRow]
#pragma unroll
    for (int j = 0; j < kRows; ++j) row_sums[(row0 + j * kRowStep) * kLanesPerRow + threadIdx.x % kLanesPerRow] = sum[j];
    __syncthreads();
    if (threadIdx.x < kClTileC && c0 + threadIdx.x < C) {
      float total = 0.f;
      for (int l = 0; l < kLanesPerRow; ++l) total += row_sums[threadIdx.x * kLanesPerRow + l];
      bias_partial[(n * spans + span) * C + c0 + threadIdx.x] = total;
    }
  }
}

// groupnorm_backward with dx returned channels-last (NHWC / NDHWC strides; the same values).
template <class Op, int kBlock, int kSpecialisedGroups, bool kChannelBias = false>
std::vector<at::Tensor> groupnorm_backward_channels_last(const at::Tensor& grad_out, const at::Tensor& input,
                                                         const at::Tensor& gamma_in, const at::Tensor& mean,
                                                         const at::Tensor& rstd, int64_t groups, Op op,
                                                         const at::Tensor& channel_bias_in = at::Tensor()) {
  const auto format = channels_last_format(input, "GroupNorm input");
  const int64_t channel_tiles = blocks_for(input.size(1), kClTileC);
  const int64_t spans = blocks_for(blocks_for(spatial_size(input), kClTileP), kClTilesPerSpan);
  const int64_t blocks = input.size(0) * channel_tiles * spans;
  TORCH_CHECK(blocks < (int64_t(1) << 31), "kgen: GroupNorm backward of ", str(input.numel()),
              " values needs more blocks than one launch allows");
  auto apply = [&](auto kg, const BackwardOperands& o) {
    const GroupShape& shape = o.shape;
    auto bias_partial = kChannelBias ? at::empty({shape.batch * spans, shape.channels}, o.x.options()) : at::Tensor();
    float* bias_partial_ptr = kChannelBias ? bias_partial.data_ptr<float>() : nullptr;
    const bool vec = shape.plane_elems % 4 == 0 && shape.channels % 4 == 0 &&
                     is_16_byte_aligned(o.x.data_ptr<float>()) && is_16_byte_aligned(o.dy.data_ptr<float>()) &&
                     is_16_byte_aligned(o.dx.data_ptr<float>());
    dispatch_vec(vec, [&](auto kv) {
      backward_apply_channels_last_kernel<Op, decltype(kg)::value, decltype(kv)::value, kChannelBias>
          <<<blocks, kClThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
              o.dy.data_ptr<float>(), o.x.data_ptr<float>(), as_float2(mean), rstd.data_ptr<float>(),
              o.gamma.data_ptr<float>(), as_float2(o.coef), o.dx.data_ptr<float>(), shape, channel_tiles, spans, op,
              o.channel_bias, bias_partial_ptr);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return bias_partial;
  };
  return groupnorm_backward_with<Op, kBlock, kSpecialisedGroups, kChannelBias>(
      grad_out, input, gamma_in, mean, rstd, groups, op, channel_bias_in, format, apply);
}

}  // namespace kgen
