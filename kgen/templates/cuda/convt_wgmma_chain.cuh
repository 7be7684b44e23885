// ---- convt_wgmma_chain: the GroupNorm normalise chained into convt_wgmma's persistent kernel (issue 13, v3.10) ----
//
// Without it the forward is two sweeps of z: the conv kernel writes z (2.18 GB at L2-19) and a normalise kernel reads
// it back and writes y (2 x 2.18 GB, 1.5 ms at the DRAM rate), after the conv's last tile. Yet a sample's z is 17 MB,
// which fits in the H100's 50 MB of L2, and the conv finishes a sample's tiles about a wave (~30 us) after it began
// them. So the kernel normalises each sample itself, as soon as it is complete, while its z is still in L2:
// - Counting. Each tile's epilogue, once its GroupNorm partials are written, counts itself done for its sample
//   (one atomic a tile, warp 0 of the consumers). The tile that completes the sample merges the sample's partials
//   in double, in the fixed order of convt_moments_finalize_kernel (so the same mean and rstd bit for bit), writes
//   them, and marks the sample ready (count + 1).
// - Normalising. The producer warpgroup, whose copies run asynchronously, normalises the block's own earlier tiles
//   in order, one part of a tile (1 / chunks of it) after issuing each chunk's copies, so the work hides in the
//   main loop instead of following it. A tile starts once its sample is ready: a non-blocking check, broadcast
//   by a named barrier; after the block's last tile, the producer waits for the rest. The tile's 64 channels of
//   scale, shift and mean go to a shared table first.
// - In place or not. Without autograd, z (with its bias) is written into y's memory and normalised where it lies:
//   its lines, still dirty in L2, are overwritten before they reach DRAM, so the forward moves x in and y out,
//   4.3 GB. For backward z (without its bias) is kept and y is a separate tensor: 6.5 GB, still below what the
//   main loop takes.
// Progress: every block is resident (one a multiprocessor, grid <= multiprocessors) and a block's conv work waits on
// nothing but its own pipeline, so every sample completes; only the final drain waits for other blocks.
namespace kgen {
namespace convt {

// What the chained normalise reads and writes; `done` (one counter a sample) starts at zero.
struct ChainArgs {
  const float* gamma;
  const float* beta;
  float* y;            // holds z + bias or op(z + bias) from the epilogue, normalised in place
  int* done;           // tiles counted a sample; tiles_per_sample + 1 once its mean and rstd are written
  float2* mean;        // (N, G) as (hi, lo)
  float* rstd;         // (N, G)
  double eps;
  int tiles_per_sample;  // pixel tiles x channel tiles
};

// Where op is applied: by the normalise (the epilogue stores z + bias and folds moments_value's faster erf into the
// moments, as the unchained kernel does), or by the epilogue (it stores op(z + bias) and folds op itself; the
// normalise only scales and shifts).
constexpr int kChainNone = 0, kChainOpInNormalise = 1, kChainOpInEpilogue = 2;
constexpr int kChainBatch = 4;  // units a consumer thread has in flight while it normalises

__device__ __forceinline__ int load_relaxed(const int* p) {
  int v;
  asm volatile("ld.relaxed.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void fence_acq_rel() { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }

// Warp 0 of the consumers, after this tile's partials (written by its lanes): counts the tile for its sample.
__device__ __forceinline__ void chain_tile_done(const ChainArgs& ch, int n) {
  __threadfence();  // this lane's partials, before the count
  __syncwarp();
  if (threadIdx.x % kWarpSize == 0) atomicAdd(ch.done + n, 1);
}

// Sample n's mean and rstd from its partials (every tile counted), merged in double in the fixed order of
// convt_moments_finalize_kernel: the same bits. Warp `warp` of `warps` takes groups warp, warp + warps, ...
__device__ __forceinline__ void chain_merge_sample(const ChainArgs& ch, const Moments* partial, int per_row, int n,
                                                   int groups, int warp, int warps) {
  for (int grp = warp; grp < groups; grp += warps) {
    const int64_t row = int64_t(n) * groups + grp;
    const MomentsD m = warp_merge(per_row, [&](int i) {
      const Moments* p = partial + row * per_row + i;
      return Moments{__ldcg(&p->count), __ldcg(&p->mean), __ldcg(&p->m2)};
    });
    if (threadIdx.x % kWarpSize == 0) finish_statistics(m, 0.0, ch.eps, ch.mean[row], ch.rstd[row]);
  }
  __threadfence();  // this lane's statistics, before the sample is marked ready
}

// The table of a tile's channels (first `rows` of channel tile ctile of sample n): scale = rstd gamma, shift = beta,
// and the group's mean, as normalize_kernel forms them. Threads tid < rows write one row each.
__device__ __forceinline__ void chain_load_table(const ChainArgs& ch, const ConvShape& s, int n, int ctile, int tid,
                                                 float4* table) {
  const int co = ctile * 64 + tid;
  if (tid >= 64 || co >= s.out_channels) return;
  const int64_t row = int64_t(n) * s.groups + co / s.channels_per_group();
  const float2 mu = __ldcg(ch.mean + row);
  table[tid] = make_float4(__ldcg(ch.rstd + row) * __ldg(ch.gamma + co), __ldg(ch.beta + co), mu.x, mu.y);
}

// y = (u - mean) * scale + shift, u = op(v) (kApplyOp) or v: normalize_kernel's arithmetic.
template <bool kApplyOp, class Op>
__device__ __forceinline__ float chain_value(const Op& op, float v, float4 c) {
  return centered(kApplyOp ? op(v) : v, make_float2(c.z, c.w)) * c.x + c.y;
}

// One tile's normalise: its channel rows (of channel tile ctile) over its frame positions [f0, f0 + pixels),
// positions past the output's columns or rows dropped, as the epilogue drops them. Units of 4 pixels where the
// epilogue stores them so (dense rows, or pitch and W_out multiples of 4), else of one. It runs in steps of
// kChainBatch units a thread: each thread copies its units of a step into its own slots of shared memory by
// cp.async (fetch), and a step later, the copies long landed, normalises them from there (apply): no thread waits
// on a load, and none touches another's slots, so no barrier.
struct ChainTile {
  int64_t first_plane;  // n * C_out + the channel tile's first channel
  int ctile, f0, width, row_shift, units;  // units a channel row: 1 << row_shift
  bool dense;

  __device__ __forceinline__ void init(const ConvShape& s, int pitch, int n, int ctile_, int f0_, int pixels) {
    ctile = ctile_, f0 = f0_;
    first_plane = int64_t(n) * s.out_channels + ctile * 64;
    dense = s.out_w == pitch && s.out_plane() % 4 == 0;
    width = dense || (pitch % 4 == 0 && s.out_w % 4 == 0) ? 4 : 1;
    row_shift = __ffs(pixels / width) - 1;  // pixels / width: a power of two
    units = min(64, s.out_channels - ctile * 64) << row_shift;
  }
  __device__ __forceinline__ int steps(int threads) const {
    return (units + kChainBatch * threads - 1) / (kChainBatch * threads);
  }
  // The output offset of unit u and its channel row; -1 outside the output (or past the tile's units).
  __device__ __forceinline__ int64_t offset(int u, int& row, const ConvShape& s, int pitch) const {
    row = u >> row_shift;
    if (u >= units) return -1;
    const int f = f0 + (u - (row << row_shift)) * width;
    int64_t at;
    if (dense) {
      if (f >= s.out_plane()) return -1;
      at = f;
    } else {
      const int oh = f / pitch, ow = f - oh * pitch;
      if (oh >= s.out_h || ow >= s.out_w) return -1;
      at = int64_t(oh) * s.out_w + ow;
    }
    return (first_plane + row) * s.out_plane() + at;
  }
  // Step `step`'s units of this thread into its slots (float4 slots [k threads + tid]), one commit group.
  __device__ __forceinline__ void fetch(const float* z, const ConvShape& s, int pitch, int step, float4* slots,
                                        int tid, int threads) const {
    const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(slots));
#pragma unroll
    for (int k = 0; k < kChainBatch; ++k) {
      int row;
      const int64_t off = offset((step * kChainBatch + k) * threads + tid, row, s, pitch);
      const uint32_t dst = base + 16u * (k * threads + tid);
      if (off >= 0 && width == 4) copy16_async(dst, z + off, 16u);
      if (off >= 0 && width == 1) copy4_async(dst, z + off, 4u);
    }
    copy_async_commit();
  }
  // Waits for this thread's fetch of `step` and writes its units of y (kApplyOp: op applied first).
  template <bool kApplyOp, class Op>
  __device__ __forceinline__ void apply(const ChainArgs& ch, const ConvShape& s, int pitch, int step,
                                        const float4* slots, const float4* table, Op op, int tid,
                                        int threads) const {
    copy_async_wait<0>();
#pragma unroll
    for (int k = 0; k < kChainBatch; ++k) {
      int row;
      const int64_t off = offset((step * kChainBatch + k) * threads + tid, row, s, pitch);
      if (off < 0) continue;
      const float4 c = table[row], v = slots[k * threads + tid];
      if (width == 4) {  // y's lines may leave L2 first
        store16_policy(ch.y + off,
                       make_float4(chain_value<kApplyOp>(op, v.x, c), chain_value<kApplyOp>(op, v.y, c),
                                   chain_value<kApplyOp>(op, v.z, c), chain_value<kApplyOp>(op, v.w, c)),
                       l2_policy_evict_first());
      } else {
        ch.y[off] = chain_value<kApplyOp>(op, v.x, c);
      }
    }
  }
};

}  // namespace convt
}  // namespace kgen
