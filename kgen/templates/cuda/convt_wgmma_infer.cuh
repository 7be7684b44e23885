// ---- convt_wgmma_infer: the forward without autograd (no_grad, or nothing requires a gradient) in ONE kernel:
// convt_wgmma's conv, bias, op and GroupNorm moments on most multiprocessors, the GroupNorm normalise on the rest,
// sample by sample as the conv completes them (issue 13) ----
//
// Why. The two-kernel forward writes z (2.18 GB at L2-19) and a normalise sweep reads it back from DRAM and writes y
// after the conv's last tile: 1.5 ms on top of the conv kernel's 3.7-3.9. A sample's output is 17 MB and the H100's
// L2 holds 50 MB, so the normalise can read a sample back from L2 soon after the conv has written it, and write y in
// place: DRAM then sees x in and y out. Session 26 ran that normalise inside the conv blocks, between or beside their
// wgmma, and every form lengthened the main loop by about the normalise's own time: the main loop is bound by the
// shared-memory/L1 data path of its multiprocessor, and any load or store there takes from it. So here the normalise
// runs on multiprocessors of its own, whose data paths the conv never uses:
// - Roles by ticket. Each block (one a multiprocessor: the ring's shared memory allows no second) takes a ticket
//   as it starts; tickets below `conv_blocks` run convt_wgmma's producer and consumers over tiles ticket, ticket +
//   conv_blocks, ... (consecutive tiles: neighbouring pixel tiles of a sample, so samples complete in order), the
//   rest normalise. Tickets go to blocks in the order they start, so every conv role belongs to a running block and
//   the normalisers, which only ever wait for conv work, cannot hold it up (no co-residency assumed).
// - Counting. The epilogue stores op(z + bias) itself (moments_value: for GELU erf an erfc 1.5e-7 from the true one,
//   so the stored value is within ~1e-7 |z| of GELU's) with an L2 evict-last hint, writes its GroupNorm partials as
//   the two-kernel path does, and counts its tile done for its sample (each consumer thread fences, a consumer
//   barrier, one atomic). The input's copies ask L2 to evict first.
// - Normalising. A normaliser takes items (a slab of one sample's channel planes, ~64 K values) by a second ticket,
//   in order. On its first item of a sample it waits for the sample's count (one thread, acquire), merges the
//   sample's partials in double in convt_moments_finalize_kernel's fixed order (the same mean and rstd, bit for bit:
//   deterministic), and tabulates each channel's scale rstd gamma, shift beta and mean (hi, lo), as normalize_kernel
//   forms them. Then y = (u - mean) scale + shift in place, 8 loads of 16 bytes in flight a thread from L2, y's
//   stores evict-first.
// The output is the two-kernel forward's but for GELU's value (above), and mean/rstd are not kept: autograd takes the
// two-kernel path, whose backward needs z.
namespace kgen {
namespace convt {

struct InferArgs {
  const float* gamma;
  const float* beta;
  float* y;              // op(z + bias) from the epilogue, normalised in place
  int* counters;         // [batch] tiles done a sample, then the role ticket, then the normalise item ticket (zeroed)
  double eps;
  int conv_blocks;       // tickets below run the conv; the rest normalise
  int tiles_per_sample;  // pixel tiles x channel tiles
  int planes_per_item;   // an item: that many channel planes of a sample, or (pieces > 1) a 1/pieces of one plane
  int pieces;
  int items_per_sample;
  int items;             // batch x items_per_sample
};

constexpr int kInferBatch = 8;  // 16-byte loads in flight a normaliser thread
constexpr int kInferItemValues = 1 << 16;

__device__ __forceinline__ int load_acquire(const int* p) {
  int v = 0;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
#endif
  return v;
}

// y[i] = (y[i] - mean) scale + shift over [lo, hi) of one channel plane (`coef`: scale, shift, mean hi, mean lo);
// vec: the plane holds whole 16-byte units (lo, hi multiples of 4). 8 loads in flight a thread, then the stores.
__device__ __forceinline__ void infer_normalise_range(float* __restrict__ plane, int64_t lo, int64_t hi, bool vec,
                                                      float4 coef, uint64_t evict_first) {
  const float2 mu = make_float2(coef.z, coef.w);
  auto value = [&](float u) { return centered(u, mu) * coef.x + coef.y; };
  if (vec) {
    float4* p = reinterpret_cast<float4*>(plane);
    const int64_t end = hi / 4;
    for (int64_t base = lo / 4 + threadIdx.x; base < end; base += int64_t(kInferBatch) * blockDim.x) {
      float4 v[kInferBatch];
#pragma unroll
      for (int k = 0; k < kInferBatch; ++k) {
        const int64_t i = base + int64_t(k) * blockDim.x;
        if (i < end) v[k] = __ldcg(p + i);
      }
#pragma unroll
      for (int k = 0; k < kInferBatch; ++k) {
        const int64_t i = base + int64_t(k) * blockDim.x;
        if (i < end) {
          store16_policy(plane + 4 * i, make_float4(value(v[k].x), value(v[k].y), value(v[k].z), value(v[k].w)),
                         evict_first);
        }
      }
    }
  } else {
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) plane[i] = value(__ldcg(plane + i));
  }
}

// A normaliser block: items in ticket order until none is left. `smem`: C_out float4s (the channel table), then
// the groups' mean (float2) and rstd.
__device__ __forceinline__ void infer_normalise(const Moments* __restrict__ partial, const ConvShape& s,
                                                const WgmmaGeometry& g, const InferArgs& a, float* smem) {
  float4* table = reinterpret_cast<float4*>(smem);
  float2* group_mean = reinterpret_cast<float2*>(table + s.out_channels);
  float* group_rstd = reinterpret_cast<float*>(group_mean + s.groups);
  __shared__ int item_shared;
  const int64_t out_plane = s.out_plane();
  const bool vec = out_plane % 4 == 0;
  const int per_row = g.tiles * g.channel_tiles, cpg = s.channels_per_group();
  const int warp = threadIdx.x / kWarpSize, warps = blockDim.x / kWarpSize;
  const uint64_t evict_first = l2_policy_evict_first();
  int cached = -1;  // the sample whose table is in shared memory
  for (;;) {
    if (threadIdx.x == 0) item_shared = atomicAdd(a.counters + s.batch + 1, 1);
    __syncthreads();
    const int item = item_shared;
    if (item >= a.items) break;  // block-uniform
    const int n = item / a.items_per_sample, k = item - n * a.items_per_sample;
    if (n != cached) {
      if (threadIdx.x == 0) {
        while (load_acquire(a.counters + n) < a.tiles_per_sample) __nanosleep(256);
        __threadfence();
      }
      __syncthreads();
      for (int grp = warp; grp < s.groups; grp += warps) {
        const int64_t row = int64_t(n) * s.groups + grp;
        const MomentsD m = warp_merge(per_row, [&](int i) {
          const Moments* p = partial + row * per_row + i;
          return Moments{__ldcg(&p->count), __ldcg(&p->mean), __ldcg(&p->m2)};
        });
        if (threadIdx.x % kWarpSize == 0) finish_statistics(m, 0.0, a.eps, group_mean[grp], group_rstd[grp]);
      }
      __syncthreads();
      for (int c = threadIdx.x; c < s.out_channels; c += blockDim.x) {
        const int grp = c / cpg;
        table[c] = make_float4(group_rstd[grp] * __ldg(a.gamma + c), __ldg(a.beta + c), group_mean[grp].x,
                               group_mean[grp].y);
      }
      __syncthreads();
      cached = n;
    }
    if (a.pieces > 1) {  // a piece of one plane, in 16-byte units where the plane has them
      const int c = k / a.pieces, piece = k - c * a.pieces;
      const int64_t unit = vec ? 4 : 1, units = (out_plane + unit - 1) / unit;
      const int64_t per_piece = (units + a.pieces - 1) / a.pieces;
      const int64_t lo = min(units, per_piece * piece) * unit, hi = min(units, per_piece * (piece + 1)) * unit;
      infer_normalise_range(a.y + (int64_t(n) * s.out_channels + c) * out_plane, lo, min(hi, out_plane), vec,
                            table[c], evict_first);
    } else {
      const int c_end = min(s.out_channels, (k + 1) * a.planes_per_item);
      for (int c = k * a.planes_per_item; c < c_end; ++c) {
        infer_normalise_range(a.y + (int64_t(n) * s.out_channels + c) * out_plane, 0, out_plane, vec, table[c],
                              evict_first);
      }
    }
    __syncthreads();  // every thread has read item_shared before thread 0 takes the next
  }
}

template <class Op>
__global__ void __launch_bounds__(kWgThreads, 1)
convt_wgmma_infer_kernel(const float* __restrict__ x, const float* __restrict__ wprep, const float* __restrict__ bias,
                         Moments* __restrict__ partial, ConvShape s, WgmmaGeometry g, Op op, InferArgs a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  float* staging = smem + g.stages * g.stage_floats;
  int* pos_off = reinterpret_cast<int*>(staging + kEpiFloats);
  __shared__ __align__(8) uint64_t full_bars[kWgMaxStages], empty_bars[kWgMaxStages];
  __shared__ Moments channel_moments[2][kWgConsumers][kWgChannels];
  __shared__ int ticket_shared;
  const uint32_t full = static_cast<uint32_t>(__cvta_generic_to_shared(full_bars));
  const uint32_t empty = static_cast<uint32_t>(__cvta_generic_to_shared(empty_bars));
  if (threadIdx.x == 0) {
    ticket_shared = atomicAdd(a.counters + s.batch, 1);
    for (int i = 0; i < g.stages; ++i) {
      mbar_init(full + 8 * i, 128 * kWgProducers);
      mbar_init(empty + 8 * i, 4 * kWgConsumers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const int ticket = ticket_shared;
  if (ticket >= a.conv_blocks) {
    infer_normalise(partial, s, g, a, smem);
  } else if (threadIdx.x < 128 * kWgProducers) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n" ::: "memory");
    wgmma_produce<0, false, true, true>(x, wprep, s, g, smem, pos_off, full, empty, ticket, a.conv_blocks);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n" ::: "memory");
    wgmma_consume<Op, 0, true>(bias, a.y, partial, s, g, op, smem, channel_moments, staging, full, empty, ticket,
                               a.conv_blocks, a.counters);
  }
#else
  (void)x, (void)wprep, (void)bias, (void)partial, (void)s, (void)g, (void)op, (void)a;
  __trap();  // never launched: convt_wgmma_available() is false where this was not built for sm_90a
#endif
}

// The normalisers a GPU of `sms` multiprocessors gets by default: about 1 in 11 (12 of the H100's 132).
inline int default_infer_normalisers(int sms) { return std::max(1, (sms + 5) / 11); }

// y = GroupNorm(op(conv_transpose2d(x, weight, padding) + bias)) in one launch (above), for a forward without
// autograd. normalisers: multiprocessors given to the normalise (-1: default_infer_normalisers). A clear error where
// the GPU or the shape is not this kernel's: convt_wgmma_infer_unsupported says which, without raising.
template <class Op>
std::string convt_wgmma_infer_unsupported(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                          const at::Tensor& gamma, const at::Tensor& beta, int64_t groups,
                                          std::vector<int64_t> padding) {
  std::string why = convt_wgmma_unsupported<Op>(x, weight, bias, groups, {1, 1}, padding, {0, 0}, {1, 1}, 1);
  if (!why.empty()) return why;
  why = float_cuda_on_one_device({&x, &gamma, &beta});
  if (!why.empty()) return why;
  if (gamma.numel() != weight.size(1) || beta.numel() != weight.size(1)) return "gamma or beta is not C_out long";
  if (multiprocessors(x.get_device()) < 2) return "it needs 2 multiprocessors or more";
  const ConvShape s = check_convt(x, weight, bias, groups, {1, 1}, padding, {0, 0});
  const c10::cuda::CUDAGuard device_guard(x.device());
  cudaFuncAttributes attributes{};
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(convt_wgmma_infer_kernel<Op>)));
  WgmmaGeometry g{};
  why = convt_wgmma_plan(s, g, max_block_smem(x.get_device()), int64_t(attributes.sharedSizeBytes));
  if (!why.empty()) return why;
  if (16 * int64_t(s.out_channels) + 12 * int64_t(s.groups) > g.smem_bytes) return "its channel table does not fit";
  if (int64_t(s.out_channels) * s.out_plane() >= (int64_t(1) << 31) ||
      int64_t(s.batch) * s.out_channels * (s.out_plane() / kInferItemValues + 1) >= (int64_t(1) << 30)) {
    return "a sample is too large for its normalise items";
  }
  return "";
}

template <class Op>
at::Tensor convt_wgmma_infer(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                             const at::Tensor& gamma, const at::Tensor& beta, int64_t groups, double eps,
                             std::vector<int64_t> padding, Op op, int normalisers = -1) {
  const std::string why = convt_wgmma_infer_unsupported<Op>(input, weight, bias, gamma, beta, groups, padding);
  TORCH_CHECK(why.empty(), "kgen: the one-launch wgmma forward does not take this call: ", why);
  const ConvShape s = check_convt(input, weight, bias, groups, {1, 1}, padding, {0, 0});
  const c10::cuda::CUDAGuard device_guard(input.device());
  const int device = input.get_device();
  const auto kernel = convt_wgmma_infer_kernel<Op>;
  cudaFuncAttributes attributes{};
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
  WgmmaGeometry g{};
  convt_wgmma_plan(s, g, max_block_smem(device), int64_t(attributes.sharedSizeBytes));
  g.z_with_bias = true;
  g.l2_prefetch = false;
  g.chunks_in_flight = 2;
  const int sms = multiprocessors(device);
  if (normalisers < 0) normalisers = default_infer_normalisers(sms);
  TORCH_CHECK(normalisers >= 1 && normalisers < sms, "kgen: 1 to ", sms - 1, " normalisers, not ", normalisers);
  const auto x = input.contiguous(), w = weight.contiguous(), b = bias.contiguous();
  const auto gam = gamma.contiguous(), bet = beta.contiguous();
  auto y = at::empty({s.batch, s.out_channels, s.out_h, s.out_w}, x.options());
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t wtotal = int64_t(g.channel_tiles) * g.chunks * s.taps() * 512;
  auto wprep = at::empty({wtotal}, x.options());
  convt_wgmma_weights_kernel<<<static_cast<unsigned>(std::min<int64_t>(blocks_for(wtotal, 256), 4096)), 256, 0,
                               stream>>>(w.data_ptr<float>(), wprep.data_ptr<float>(), s, g.chunks,
                                         wtotal);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const int64_t per_row = int64_t(g.tiles) * g.channel_tiles;
  auto partial = at::zeros({int64_t(s.batch) * s.groups * per_row * int64_t(sizeof(Moments) / sizeof(float))},
                           x.options());
  auto counters = at::zeros({int64_t(s.batch) + 2}, x.options().dtype(at::kInt));
  InferArgs a{};
  a.gamma = gam.data_ptr<float>();
  a.beta = bet.data_ptr<float>();
  a.y = y.data_ptr<float>();
  a.counters = counters.data_ptr<int>();
  a.eps = eps;
  a.conv_blocks = static_cast<int>(std::min<int64_t>(g.work, sms - normalisers));
  a.tiles_per_sample = static_cast<int>(per_row);
  const int64_t plane = s.out_plane();
  a.pieces = static_cast<int>(std::max<int64_t>(1, plane / kInferItemValues));
  a.planes_per_item = static_cast<int>(std::max<int64_t>(1, kInferItemValues / plane));
  a.items_per_sample = a.pieces > 1 ? s.out_channels * a.pieces
                                    : static_cast<int>(blocks_for(s.out_channels, a.planes_per_item));
  a.items = s.batch * a.items_per_sample;
  allow_smem(reinterpret_cast<const void*>(kernel), g.smem_bytes);
  kernel<<<static_cast<unsigned>(a.conv_blocks + normalisers), kWgThreads, g.smem_bytes, stream>>>(
      x.data_ptr<float>(), wprep.data_ptr<float>(), b.data_ptr<float>(), reinterpret_cast<Moments*>(partial.data_ptr<float>()), s, g, op, a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

}  // namespace convt
}  // namespace kgen
