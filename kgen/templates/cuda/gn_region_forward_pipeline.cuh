// ---- gn_region_forward_pipeline: the two-pass forward as ONE persistent kernel, its passes an L2 apart ----
//
// The sweep kernels' forward (gn_region_twopass_kernels.cuh) reads x twice from DRAM: the statistics, then the
// normalise. Here, as the pipelined backward does (gn_region_twopass_pipeline.cuh, whose tickets this reuses), the
// two passes are tasks of one kernel dealt out by ticket, an item's pass B `lag` items behind its pass A, so that
// pass B reads x in L2: 2 units of DRAM traffic for kNone instead of 3.
//
//   pass A   the moments of z - pilot over the item (chunk_moments, as stats_partial_kernel) -> moments[item];
//            thread 0 adds 1 to arrived[row] (release); the block that completes the count (acquire) merges the
//            slice's moments in double in a fixed order (warp_merge, as stats_finalize_kernel: the same bits),
//            writes mean and rstd, and releases ready[row]
//   pass B   thread 0 acquires ready[row] and reads mean and rstd through L2; the item normalised, epilogued and
//            written (kNone) or reduced to its partial (kPlane, kSample; reduce_finish_kernel merges them after)
//
// An item is one (plane, chunk) of a split of kForwardPipelineRounds rounds (kBlock threads x kUnroll packs each):
// small, so that x between an item's two passes stays in L2. Pass A's loads ask L2 to keep their lines, pass B's
// loads and stores to drop theirs first. 16-byte packs only (odd planes too, with scalar ends per item); scalar
// planes and shapes whose lag does not fit in L2 take the sweep kernels. Deadlock-free and deterministic for the
// pipelined backward's reasons: pass A never waits, pass B waits only on pass A items of lower tickets, and every
// partial has its slot, merged in a fixed order.
namespace kgen {
namespace region_twopass {

// Warps an SM (registers for 3 blocks of 256 threads) and pass A's packs in flight a thread: with DRAM's latency,
// ~100 KB in flight an SM (24 warps x 32 lanes x 8 x 16 bytes = 96 KB).
constexpr int kForwardPipelineWarps = 24;
constexpr int kForwardPipelineLoads = 8;

// x and v through L2 with eviction priorities (kPipelineL2Hints).
struct PolicyAccess {
  uint64_t load_policy, store_policy;
  template <int W>
  __device__ __forceinline__ Pack<W> load(const float* __restrict__ p, int64_t i) const {
    return load_pack_l2<W>(p, i, load_policy);
  }
  template <int W>
  __device__ __forceinline__ void store(float* __restrict__ p, int64_t i, const Pack<W>& v) const {
    store_pack_l2<W>(p, i, v, store_policy);
  }
};

// What the pipelined forward reads and writes (moments, mean, rstd: written during the kernel, read by other
// blocks through L2).
template <ReduceOp O>
struct ForwardPipelineArgs {
  const float* x;
  RegionParams params;
  RegionShape shape;
  const float* gamma;
  const float* beta;
  double eps;
  Moments* moments;                      // per item
  float2* mean;                          // per (sample, group)
  float* rstd;
  float* out;                            // kNone: v
  typename Reducer<O>::T* red_partial;   // kPlane, kSample: per item
};

// The slice's last pass A block, warp 0: the slice's `count` moments (contiguous from `partial`) merged as
// stats_finalize_kernel merges them, around `pilot` (valid in thread 0); mean and rstd written, the slice released.
// Out of line and by value: the rare merge keeps its registers out of the items' loop.
__device__ __forceinline__ void finish_forward_slice(const Moments* partial, int count, float pilot, double eps,
                                                  float2* mean, float* rstd, unsigned* ready) {
  if (threadIdx.x >= kWarpSize) return;
  __threadfence();  // thread 0's acquiring add saw every other block's moments; this extends it to the warp
  const MomentsD m = warp_merge(count, [&](int s) {
    const float* p = reinterpret_cast<const float*>(partial + s);  // written during this kernel: through L2
    return Moments{__ldcg(p), __ldcg(p + 1), __ldcg(p + 2)};
  });
  if (threadIdx.x == 0) {
    finish_statistics(m, double(pilot), eps, *mean, *rstd);
    store_release(ready, 1u);  // orders mean and rstd before the flag
  }
}

// Pass A (kApply = false) or B of one item; thread 0 takes the block's next ticket at the item's start and hands
// it on through `next` with the slice this block completed (pass A), if any. `stats` hands the slice's mean and
// rstd to the block (pass B).
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, bool kVec, bool kApply>
__device__ __forceinline__ void forward_pipeline_item(const ForwardPipelineArgs<O>& a, const PipelinePlan& pipe,
                                                      const PipelineSync& sync, unsigned item, PipelineSlot* next,
                                                      float4* stats) {
  const RegionShape& shape = a.shape;
  const PlaneChunk b(shape, pipe.split, item);
  unsigned ticket = 0;
  if (threadIdx.x == 0) ticket = atomicAdd(sync.ticket, 1u);  // not waited for until the item's end
  if constexpr (kApply) {
    if (threadIdx.x == 0) {
      for (unsigned pause = 32; load_acquire(sync.ready + b.row) == 0; pause = min(2 * pause, 1024u)) __nanosleep(pause);
      const float2 mean = __ldcg(a.mean + b.row);  // written during this kernel: through L2, after the acquire
      *stats = make_float4(mean.x, mean.y, __ldcg(a.rstd + b.row), 0.f);
    }
    __syncthreads();
    const float4 st = *stats;
    // load_channel's values, mean and rstd from the hand-over
    const Channel<Pro, Epi> ch{Pro::at(a.params, b.c), Epi::at(a.params, b.c), make_float2(st.x, st.y),
                               a.gamma != nullptr ? st.z * __ldg(a.gamma + b.c) : st.z,
                               a.beta != nullptr ? __ldg(a.beta + b.c) : 0.f};
    const PolicyAccess access{l2_policy<false>(), l2_policy<false>()};
    const auto acc = chunk_forward<Pro, Epi, R, O, kBlock, kVec>(a.x, ch, shape, b, a.out, access);
    if (threadIdx.x == 0) {
      if constexpr (R != ReduceKind::kNone) a.red_partial[item] = acc;
      next->merge_row = -1;
      next->ticket = ticket;
    }
  } else {
    const float pilot = group_pilot<Pro>(a.x, a.params, shape, b);
    const PolicyAccess access{l2_policy<true>(), l2_policy<true>()};
    const Moments m = chunk_moments<Pro, kBlock, kVec, PolicyAccess, kForwardPipelineLoads>(a.x, a.params, shape, b,
                                                                                             pilot, access);
    if (threadIdx.x == 0) {
      a.moments[item] = m;
      const bool completes = atomic_add_acq_rel(sync.arrived + b.row, 1u) + 1 == pipe.per_slice;
      next->merge_row = completes ? b.row : -1;
      next->ticket = ticket;
    }
  }
}

// The persistent kernel: as many blocks as stay resident, each taking tickets until they run out.

template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, bool kVec>
__global__ void __launch_bounds__(kBlock, min_blocks_for_warps(kForwardPipelineWarps, kBlock))
forward_pipeline_kernel(ForwardPipelineArgs<O> args, PipelinePlan pipe, PipelineSync sync) {
  __shared__ PipelineSlot slots[2];
  __shared__ float4 stats;
  if (threadIdx.x == 0) slots[0] = PipelineSlot{atomicAdd(sync.ticket, 1u), -1};
  __syncthreads();
  const unsigned tickets = 2 * pipe.items;
  for (unsigned k = 0;; ++k) {
    const PipelineSlot slot = slots[k & 1];
    if (slot.merge_row >= 0) {  // the previous item completed its slice
      const RegionShape& shape = args.shape;
      const int64_t row = slot.merge_row, cpg = shape.channels_per_group();
      const int64_t n = row / shape.groups;
      const int64_t first_channel = (row - n * shape.groups) * cpg;
      const int64_t first_plane = n * shape.channels + first_channel;
      float pilot = 0.f;  // z of the slice's first value, as group_pilot
      if (threadIdx.x == 0) pilot = Pro::at(args.params, first_channel).value(__ldg(args.x + first_plane * shape.plane));
      finish_forward_slice(args.moments + first_plane * pipe.split.splits, static_cast<int>(pipe.per_slice), pilot,
                           args.eps, args.mean + row, args.rstd + row, sync.ready + row);
    }
    if (slot.ticket >= tickets) break;
    unsigned item = 0;
    if (ticket_task(slot.ticket, pipe, item)) {
      forward_pipeline_item<Pro, Epi, R, O, kBlock, kVec, true>(args, pipe, sync, item, &slots[(k + 1) & 1], &stats);
    } else {
      forward_pipeline_item<Pro, Epi, R, O, kBlock, kVec, false>(args, pipe, sync, item, &slots[(k + 1) & 1], &stats);
    }
    __syncthreads();  // slot (k + 1) % 2 is written; the item's shared state is consumed
  }
}

}  // namespace region_twopass
}  // namespace kgen
