// ---- groupnorm/twopass/backward_pipeline.cuh: the two-pass backward as ONE persistent kernel, its passes an L2 apart ----
//
// The two-pass backward reads x (and dout, ...) twice: a (sample, group) slice's sums of dy and dy (z - mean)
// must be complete before any of its dx can be formed. As two kernels (backward_sweep_kernel), the second
// pass reads everything from DRAM again: 5 units of traffic for kNone against a floor of 3. Here the two
// passes are tasks of one kernel, dealt out by ticket in an order that keeps an item's pass B `lag` items
// behind its pass A:
//
//   tickets 0 .. lag - 1    pass A of items 0 .. lag - 1
//   then, alternately       pass A of item lag + k, pass B of item k
//   then                    pass B of the last lag items
//
// An item is kPipelineRounds rounds (one) of a sweep (kBlock threads x kUnroll packs each) of one plane, or, where
// a plane is at most a round of a smaller team, TEAMS whole planes of one slice, one to each team of kBlock / teams
// threads (as the sweeps' warp teams: on a 28 x 28 plane a block of 256 threads would keep a fifth of its loads in
// flight, and every item pays the hand-over): small, so that what is read and written between an item's pass A and
// its pass B (about lag items of every stream and of dx) stays in L2, and pass B reads there rather than in DRAM. lag
// is at least a slice's items (a slice's sums are whole before its first pass B) plus about the resident blocks (the
// tickets in flight). Pass A's loads ask L2 to keep their lines (evict_last), pass B's loads and dx stores to drop
// theirs first (evict_first).
// Odd planes (S % 4 != 0) take 16-byte packs too, with a chunk's scalar ends (ChunkSpan) after its body.
//
// Hand-over, per slice (the counters zeroed before the launch):
//   pass A   block sums -> gn_partial[item] (and the epilogue's parameter sums); thread 0 adds 1 to
//            arrived[row] (release); the block that completes the count (acquire) merges the slice's
//            partials in double in a fixed order (finish_slice) before its next item, writes plane_sums and
//            coef[row], and releases ready[row]
//   pass B   issues its first loads, then thread 0 acquires ready[row] and reads coef[row] through L2
// (Merging in the slice's first pass B item instead, so that no pass A block waits for its add's result, is
// slower: every pass B item of the slice then waits for the merge. H100, L2-19: 3.44 against 3.06-3.12 ms.)
// One barrier per item besides the block sums' and pass B's hand-over of the coefficients: thread 0 passes the
// next ticket and the slice to merge on through double-buffered shared slots (ncu at L2-61 with three barriers:
// 39% of the warps' stall cycles at barriers; one barrier instead of three gains 0-1%, H100).
// Deadlock-free without co-residency: tickets are taken by running blocks, pass A never waits, and a pass B
// waits only for pass A items of lower tickets (lag >= a slice's items), so the lowest unfinished ticket can
// always finish. A block takes its next ticket while an item's loads are in flight and reads it at the item's
// end. Deterministic: every partial has its slot and is merged in a fixed order, whichever block merges.
namespace kgen {
namespace region_twopass {

// Read and written once per call by the pipelined backward, zeroed before the launch.
struct PipelineSync {
  unsigned* ticket;   // 1: the next ticket
  unsigned* arrived;  // rows: pass A items done
  unsigned* ready;    // rows: 1 once coef[row] is written
};

struct PipelinePlan {
  SplitPlan split;     // a team's part of an item is one (plane, chunk) of this split
  unsigned teams;      // parts of an item, one to each team of kBlock / teams threads; > 1 only where splits = 1
  unsigned items;      // planes * splits / teams
  unsigned per_slice;  // items of one (sample, group) slice: channels per group * splits / teams
  unsigned lag;        // items from an item's pass A ticket to its pass B ticket, per_slice <= lag <= items
  // The partials' (plane, chunk) slots: items * teams.
  __host__ __device__ __forceinline__ unsigned parts() const { return items * teams; }
};

// What thread 0 hands the block at an item's end: its next ticket, and the slice to merge first (-1: none).
// Two slots, item k writing slot (k + 1) % 2, so that one barrier per item suffices.
struct PipelineSlot {
  unsigned ticket;
  int64_t merge_row;
};

// What the pipelined backward reads and writes (coef, plane_sums, gn_partial: written during the kernel,
// read by other blocks through L2).
struct PipelineArgs {
  const float* x;
  const float* dout;
  const float* out;
  const int* aux;
  RegionParams params;
  RegionShape shape;
  Geometry geo;
  const float2* mean;
  const float* rstd;
  const float* gamma;
  const float* beta;
  float2* coef;
  double2* plane_sums;
  float* dx;
  float2* gn_partial;
  float* epi_partial;  // (Epi::kParams, parts)
  float* pro_partial;  // (Pro::kParams, parts)
};

// Pass A's loads keep their lines in L2 for pass B; pass B's loads and stores go first.
// (H100, L2-19, two runs: 3.12 against 3.49 ms without the hints, 3.44 against 3.81.)
constexpr bool kPipelineL2Hints = true;

// Threads of a block of the pipelined backward (an item is kPipelineThreads x kUnroll packs of each stream).
// (H100: 128 / 512 threads 3.20 / 4.23 ms against 3.10 at L2-19; 128 within 1% elsewhere or slower.)
constexpr int kPipelineThreads = 256;

// Whether the backward of a region takes this kernel where its plan applies (pipeline_backward), or always
// the two sweep kernels.
constexpr bool kPipelinedBackward = true;

// ---- L2 eviction priorities (sm_80 and newer; plain accesses below)

template <bool kKeep>
__device__ __forceinline__ uint64_t l2_policy() {
  uint64_t policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kKeep) {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  } else {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  }
#endif
  return policy;
}

template <int W>
__device__ __forceinline__ Pack<W> load_pack_l2(const float* __restrict__ p, int64_t i, uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kPipelineL2Hints) {
    Pack<W> r;
    if constexpr (W == 4) {
      asm("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
          : "=f"(r.v[0]), "=f"(r.v[1]), "=f"(r.v[2]), "=f"(r.v[3])
          : "l"(p + 4 * i), "l"(policy));
    } else {
      asm("ld.global.nc.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(r.v[0]) : "l"(p + i), "l"(policy));
    }
    return r;
  }
#endif
  (void)policy;
  return load_pack<W>(p, i);
}

template <int W>
__device__ __forceinline__ void store_pack_l2(float* __restrict__ p, int64_t i, const Pack<W>& v, uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kPipelineL2Hints) {
    if constexpr (W == 4) {
      asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p + 4 * i), "f"(v.v[0]),
                   "f"(v.v[1]), "f"(v.v[2]), "f"(v.v[3]), "l"(policy)
                   : "memory");
    } else {
      asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" ::"l"(p + i), "f"(v.v[0]), "l"(policy) : "memory");
    }
    return;
  }
#endif
  (void)policy;
  store_pack<W>(p, i, v);
}

// ---- tickets

// Ticket t's task: pass A (false) or B (true) of item `item`.
__device__ __forceinline__ bool ticket_task(unsigned t, const PipelinePlan& pipe, unsigned& item) {
  const unsigned middle = 2 * (pipe.items - pipe.lag);
  if (t < pipe.lag) {
    item = t;
    return false;
  }
  t -= pipe.lag;
  if (t < middle) {
    item = (t & 1u) ? t >> 1 : pipe.lag + (t >> 1);
    return (t & 1u) != 0;
  }
  item = pipe.items - pipe.lag + (t - middle);
  return true;
}

// One round of a team's loads: kUnroll packs of each stream `team` apart, from pack `base` on (none past `packs`).
template <int W, int kStreams>
__device__ __forceinline__ void load_round(Pack<W> (&v)[kUnroll][kStreams], const float* const (&in)[kStreams],
                                           int64_t base, int64_t packs, int team, uint64_t policy) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t i = base + int64_t(u) * team;
#pragma unroll
    for (int k = 0; k < kStreams; ++k) {
      if (i < packs) v[u][k] = load_pack_l2<W>(in[k], i, policy);
    }
  }
}

// The slice's last pass A block: merges the slice's partials (per plane: its splits in double, lanes then a
// fixed butterfly; the planes gamma-weighted, per warp then in warp order), writes plane_sums and the
// coefficients B, C (groupnorm/statistics.cuh's backward_group_kernel), and releases the slice.
template <int kBlock>
__device__ __noinline__ void finish_slice(const float2* gn_partial, int splits, int64_t cpg, int64_t first_plane,
                                          int64_t first_channel, int64_t plane_elems, const float* gamma, float rstd,
                                          double2* plane_sums, float2* coef, unsigned* ready) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ double2 per_warp[kWarps];
  __threadfence();  // thread 0's acquiring add saw every other block's partials; this extends it to the block
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  double weighted_dy = 0.0, weighted_dy_centered = 0.0;
  for (int64_t k = warp; k < cpg; k += kWarps) {
    const float2* p = gn_partial + (first_plane + k) * splits;
    double s0 = 0.0, s1 = 0.0;
    for (int s = lane; s < splits; s += kWarpSize) {
      const float2 q = __ldcg(p + s);  // written during this kernel: through L2
      s0 += q.x;
      s1 += q.y;
    }
    s0 = warp_sum(s0);
    s1 = warp_sum(s1);
    const double g = gamma != nullptr ? double(__ldg(gamma + first_channel + k)) : 1.0;
    weighted_dy += g * s0;
    weighted_dy_centered += g * s1;
    if (lane == 0) plane_sums[first_plane + k] = make_double2(s0, s1);
  }
  if (lane == 0) per_warp[warp] = make_double2(weighted_dy, weighted_dy_centered);
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum_dy = 0.0, sum_dy_centered = 0.0;
    for (int w = 0; w < kWarps; ++w) {
      sum_dy += per_warp[w].x;
      sum_dy_centered += per_warp[w].y;
    }
    const double r = rstd;
    const double d = double(cpg) * double(plane_elems);
    *coef = make_float2(static_cast<float>(-r * r * r / d * sum_dy_centered), static_cast<float>(-r / d * sum_dy));
    store_release(ready, 1u);  // orders the coefficients before the flag
  }
}

// Pass A (kApply = false) or B of one item, each team its part. Thread 0 takes the block's next ticket while the
// item's first loads are in flight and stores it to `next` at the item's end, with the slice this block completed
// (pass A) if any; `coef_shared` hands the slice's coefficients to the block (pass B).
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, bool kVec, bool kApply>
__device__ __forceinline__ void pipeline_item(const PipelineArgs& a, const PipelinePlan& pipe,
                                              const PipelineSync& sync, unsigned item, PipelineSlot* next,
                                              float2* coef_shared) {
  constexpr int W = kVec ? 4 : 1;
  constexpr int kStreams = 1 + backward_streams<R, O>();
  const RegionShape& shape = a.shape;
  const int team = kBlock / static_cast<int>(pipe.teams);
  const int tid = static_cast<int>(threadIdx.x) % team;         // the thread's place in its team
  const unsigned part = item * pipe.teams + threadIdx.x / team;  // the team's (plane, chunk)
  const PlaneChunk b(shape, pipe.split, part);  // every team's plane is in thread 0's slice
  const auto ch = load_channel<Pro, Epi>(a.params, b.c, b.row, a.mean, a.rstd, a.gamma, a.beta);
  const Upstream<R, O> up(shape, a.geo, b.plane, b.n, b.c, a.dout, a.out, a.aux);
  const ValueBackward<Pro, Epi, R, O> value{ch, up, shape, a.geo, b.c, a.dout, a.out, a.aux};
  const float* in[kStreams];
  const float* rest[kStreams > 1 ? kStreams - 1 : 1] = {};
  backward_stream_bases<R, O>(in[0], rest, a.x, a.dout, a.out, a.aux, shape, b);
#pragma unroll
  for (int k = 1; k < kStreams; ++k) in[k] = rest[k - 1];
  const ChunkSpan<W> span(b.plane * shape.plane + b.begin, b.count);  // scalar ends on odd planes
  const float* body[kStreams];
#pragma unroll
  for (int k = 0; k < kStreams; ++k) body[k] = in[k] + span.head;
  const uint64_t policy = l2_policy<!kApply>();
  const int64_t packs = span.packs;

  Pack<W> v[kUnroll][kStreams];
  int64_t base = tid;
  load_round<W, kStreams>(v, body, base, packs, team, policy);
  unsigned ticket = 0;
  if (threadIdx.x == 0) ticket = atomicAdd(sync.ticket, 1u);  // not waited for until the item's end
  float2 bc = make_float2(0.f, 0.f);
  if constexpr (kApply) {
    if (threadIdx.x == 0) {
      for (unsigned pause = 32; load_acquire(sync.ready + b.row) == 0; pause = min(2 * pause, 1024u)) __nanosleep(pause);
      *coef_shared = __ldcg(a.coef + b.row);  // written during this kernel: through L2, after the acquire
    }
    __syncthreads();
    bc = *coef_shared;
  }

  float sum_dy = 0.f, sum_dy_centered = 0.f;
  float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
  float* dst = a.dx + b.plane * shape.plane + b.begin;
  while (base < packs) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + int64_t(u) * team;
      if (i < packs) {
        Pack<W> r;
#pragma unroll
        for (int j = 0; j < W; ++j) {
          const uint32_t s = static_cast<uint32_t>(b.begin + span.head + i * W + j);
          if constexpr (kApply) {
            r.v[j] = value.dx(v[u], j, s, bc, dparam);
          } else {
            value.sums(v[u], j, s, sum_dy, sum_dy_centered, dparam);
          }
        }
        if constexpr (kApply) store_pack_l2<W>(dst + span.head, i, r, policy);
      }
    }
    base += int64_t(team) * kUnroll;
    if (base < packs) load_round<W, kStreams>(v, body, base, packs, team, policy);
  }
  for (int k = tid; k < span.ends(); k += team) {
    const int e = span.end_at(k);
    Pack<1> one[kStreams];
#pragma unroll
    for (int t = 0; t < kStreams; ++t) one[t] = load_pack_l2<1>(in[t], e, policy);
    const uint32_t s = static_cast<uint32_t>(b.begin + e);
    if constexpr (kApply) {
      Pack<1> r;
      r.v[0] = value.dx(one, 0, s, bc, dparam);
      store_pack_l2<1>(dst, e, r, policy);
    } else {
      value.sums(one, 0, s, sum_dy, sum_dy_centered, dparam);
    }
  }

  if constexpr (kApply) {
    if constexpr (Pro::kParams > 0) {
      float sums[Pro::kParams];
#pragma unroll
      for (int k = 0; k < Pro::kParams; ++k) sums[k] = dparam[k];
      team_sums<kBlock, Pro::kParams>(sums, team);
      if (tid == 0) {
#pragma unroll
        for (int k = 0; k < Pro::kParams; ++k) a.pro_partial[int64_t(k) * pipe.parts() + part] = sums[k];
      }
    }
  } else {
    constexpr int kSums = 2 + Epi::kParams;
    float sums[kSums];
    sums[0] = sum_dy;
    sums[1] = sum_dy_centered;
#pragma unroll
    for (int k = 2; k < kSums; ++k) sums[k] = dparam[k - 2];
    team_sums<kBlock, kSums>(sums, team);
    if (tid == 0) {
      a.gn_partial[part] = make_float2(sums[0], sums[1]);
#pragma unroll
      for (int k = 2; k < kSums; ++k) a.epi_partial[int64_t(k - 2) * pipe.parts() + part] = sums[k];
    }
    if (pipe.teams > 1) {  // every team's partials before thread 0's release
      if (tid == 0) __threadfence();
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const bool completes = atomic_add_acq_rel(sync.arrived + b.row, 1u) + 1 == pipe.per_slice;
      next->merge_row = completes ? b.row : -1;
    }
  }
  if (threadIdx.x == 0) {
    if constexpr (kApply) next->merge_row = -1;
    next->ticket = ticket;
  }
}

// The persistent kernel: as many blocks as stay resident, each taking tickets until they run out.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, bool kVec>
__global__ void __launch_bounds__(kBlock, min_blocks_for_warps(kSweepBackwardWarps, kBlock))
backward_pipeline_kernel(PipelineArgs args, PipelinePlan pipe, PipelineSync sync) {
  __shared__ PipelineSlot slots[2];
  __shared__ float2 coef_shared;
  if (threadIdx.x == 0) slots[0] = PipelineSlot{atomicAdd(sync.ticket, 1u), -1};
  __syncthreads();
  const unsigned tickets = 2 * pipe.items;
  const RegionShape& shape = args.shape;
  for (unsigned k = 0;; ++k) {
    const PipelineSlot slot = slots[k & 1];
    if (slot.merge_row >= 0) {  // the previous item completed its slice
      const int64_t cpg = shape.channels_per_group();
      const int64_t n = slot.merge_row / shape.groups;
      const int64_t first_channel = (slot.merge_row - n * shape.groups) * cpg;
      finish_slice<kBlock>(args.gn_partial, pipe.split.splits, cpg, n * shape.channels + first_channel, first_channel,
                           shape.plane, args.gamma, __ldg(args.rstd + slot.merge_row), args.plane_sums,
                           args.coef + slot.merge_row, sync.ready + slot.merge_row);
    }
    if (slot.ticket >= tickets) break;
    unsigned item = 0;
    if (ticket_task(slot.ticket, pipe, item)) {
      pipeline_item<Pro, Epi, R, O, kBlock, kVec, true>(args, pipe, sync, item, &slots[(k + 1) & 1], &coef_shared);
    } else {
      pipeline_item<Pro, Epi, R, O, kBlock, kVec, false>(args, pipe, sync, item, &slots[(k + 1) & 1], &coef_shared);
    }
    __syncthreads();  // slot (k + 1) % 2 is written; the item's shared state is consumed
  }
}

}  // namespace region_twopass
}  // namespace kgen
