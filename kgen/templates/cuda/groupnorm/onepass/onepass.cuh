// ---- groupnorm/onepass/onepass.cuh: a region's forward with each (sample, group) slice read from DRAM once ----
//
// For a region without a reduction whose epilogue reads y alone (no residual of z or x): prologue, GroupNorm
// and epilogue in one pass, with the two-pass family's statistics (the backward is that family's). Needs
// core/common.cuh, core/sweeps.cuh, groupnorm/statistics.cuh and groupnorm/region.cuh before it.
//
// The two-pass forward (groupnorm/twopass/forward.cuh) reads x twice: once for the statistics, once to normalise.
// Here a TEAM of co-resident blocks holds a slice in shared memory: each block brings its chunk in,
// folds it into Welford moments and publishes them; the team's last block to arrive merges the team's
// moments (double, fixed order: see warp_merge) into the slice's mean and rstd; then every block
// normalises its chunk in shared memory and sends it out. DRAM traffic drops from 2 reads + 1 write of x
// to 1 read + 1 write (L1-35: 22.5 GB -> 15 GB).
//
// What limits it is the wait for a slice's statistics: a trip through L2 to publish, the team's same-
// address atomics, the merge, a trip to fetch, all while DRAM is saturated (measured ~12 us on an H100,
// against ~5 us of DRAM time per 8 MB slice at L1-35). So one block is a pipeline over the team's
// slices, with every wait given to a warp of its own (roles below) so that no other role stalls:
//
//   producer:   bulk-loads the next slices' chunks            (Hopper TMA: no registers, no L1 lines)
//   workers:    fold slice k, hand the moments on; normalise slice k - 1 in place
//   publisher:  slice k's moments out to the team (release), count in (atomic); the last block merges
//   fetcher:    waits for slice k - 1's statistics and hands them to the workers
//   producer:   bulk-stores slice k - 1's y, reloads the stage once the store has read it
//
// Shared memory holds three chunks (normalising/storing, folding/waiting, loading): a slice must be
// done within about a round of the team's last fold, which is what still bounds it (L1-35: 8 us a round,
// 7.2 ms, against 7.55 ms for two passes on an H100; level on an H200, 5.64 against 5.63 ms). Roles meet only at
// mbarriers in shared memory.
//
// Sizing (plan_onepass, per shape and GPU): a slice of D values takes team_size blocks of chunk =
// D / team_size values, three chunks within the shared memory one block may use. The grid is at most as
// many blocks as the GPU keeps resident, launched cooperatively so that they ARE resident together (a
// wait is never on a block that has not started), split into teams; team t handles slices t, t + teams,
// ... The planner declines (the caller then runs the two-pass kernels) where three slices per team do
// not fit in the whole GPU's shared memory, where 16-byte bulk copies are impossible (HW % 4 != 0, an
// unaligned pointer), or where the kernel was not built for sm_90 or newer.
//
// Global synchronisation, per slice, all zeroed before the launch and never reused: one moments slot per
// block, an arrival counter, a ready flag. A publisher writes its slot and adds 1 with acquire-release
// semantics; the block whose add completes the count merges, writes mean and rstd and releases the flag;
// a fetcher acquires the flag before it reads them (through L2: they were written during this kernel).
#include <mutex>

namespace kgen {

// Chunks a block holds in shared memory: one being normalised and stored, one being folded or waiting
// for its statistics, one on its way in.
constexpr int kOnePassStages = 3;

// ---- Hopper bulk copies (the TMA engine) between global and shared memory, and the mbarrier that
// counts a copy's bytes in. Compiled for sm_90 and newer only; the planner declines on older GPUs.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KGEN_BULK_COPY 1
#endif

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

#ifdef KGEN_BULK_COPY
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals) : "memory");
}

// Global -> shared, `bytes` (a multiple of 16) counted into `bar`, which this thread arms first.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
  if (bytes) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(shared_address(dst)), "l"(src), "r"(bytes), "r"(shared_address(bar))
                 : "memory");
  }
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
}

__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, unsigned parity) {
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(shared_address(bar)), "r"(parity) : "memory");
  }
}

// Shared -> global; a bulk group per call. Shared writes that feed it must be fenced to the async proxy.
__device__ __forceinline__ void bulk_store(void* dst, const void* src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(shared_address(src)),
               "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until every bulk store this thread issued has finished READING shared memory.
__device__ __forceinline__ void bulk_stores_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void bulk_stores_done() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void fence_to_async_proxy() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#endif

// The channel of successive offsets within a slice (32-bit: the planner keeps slices under 2^31 values),
// for offsets that only grow: a compare per step, a division only on a jump past a whole plane. It starts
// before any channel, so the first advance() always reports a move: nothing is read for a thread that
// has no pack (its offset may lie past the slice).
struct ChannelCursor {
  int first_channel;  // the slice's first channel
  int plane;
  int channel = -1;   // channel of the last offset seen
  int next = 0;       // slice offset where channel + 1 begins

  __device__ __forceinline__ ChannelCursor(int first, int plane_elems) : first_channel(first), plane(plane_elems) {}

  // Moves to `offset` (never below the last one); true if the channel changed.
  __device__ __forceinline__ bool advance(int offset) {
    if (offset < next) return false;
    if (channel < 0 || offset - next >= plane) {
      channel = first_channel + offset / plane;
      next = (offset / plane + 1) * plane;
    } else {
      ++channel;
      next += plane;
    }
    return true;
  }
};

struct OnePassPlan {
  bool feasible;
  int threads;        // per block
  int team_size;      // blocks per slice
  int teams;          // slices in flight
  int64_t chunk;      // values per block, a multiple of 4
  size_t smem_bytes;  // dynamic shared memory per block: kOnePassStages chunks
};

// Per-slice synchronisation state; every array is indexed by (sample, group) row.
struct OnePassSync {
  Moments* published;  // rows x team_size: each block's moments of its chunk
  unsigned* arrivals;  // rows: blocks that have published
  unsigned* ready;     // rows: 1 once mean and rstd are written
};

// The team's last block, one warp: merges the team's moments of slice `row` (lane 0's acquiring add saw
// every other block's released moments; the fence extends that to the other lanes), writes mean and
// rstd, and releases the slice's flag. Out of line, so that its double-precision registers do not
// crowd the streaming loop.
__device__ __noinline__ void merge_team_moments(const OnePassSync& sync, int64_t row, int team_size, float pilot,
                                                double eps, int rounding, float2* mean_out, float* rstd_out) {
  __threadfence();
  const Moments* slots = sync.published + row * team_size;
  // __ldcg: through L2, the slots were written during this kernel
  const MomentsD m = warp_merge(team_size, [&](int s) {
    return Moments{__ldcg(&slots[s].count), __ldcg(&slots[s].mean), __ldcg(&slots[s].m2)};
  });
  if (threadIdx.x % kWarpSize == 0) {
    finish_statistics(m, double(pilot), eps, rounding, mean_out[row], rstd_out[row]);
    store_release(sync.ready + row, 1u);  // orders the two writes above before the flag
  }
}

// Barrier among the worker warps only (id 1; id 0 is __syncthreads).
template <int kCount>
__device__ __forceinline__ void workers_barrier() {
  asm volatile("bar.sync 1, %0;" ::"n"(kCount) : "memory");
}

// z = Pro(x) (channel c's prologue parameters), y = GroupNorm(z) (gamma, beta: null without an affine), out =
// Epi(y). Warp roles: all but the last three warps are WORKERS (fold and normalise the chunks); then the
// PUBLISHER (sends the block's moments of each slice to the team, merges as the team's last block), the
// FETCHER (waits for each slice's statistics and hands them to the workers), and the PRODUCER (its first
// thread issues the bulk loads of x and bulk stores of y). They meet only at mbarriers in shared memory:
// no role waits on another's trips to L2.
template <class Pro, class Epi, int kThreads>
__global__ void __launch_bounds__(kThreads, 1)
groupnorm_onepass_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                         const float* __restrict__ beta, float* __restrict__ y, float2* mean_out, float* rstd_out,
                         OnePassSync sync, GroupShape shape, OnePassPlan plan, double eps, RegionParams params) {
#ifdef KGEN_BULK_COPY
  constexpr int kWorkers = kThreads - 3 * kWarpSize;
  constexpr int kWorkerWarps = kWorkers / kWarpSize;
  static_assert(kWorkerWarps >= 1 && kWorkerWarps <= kWarpSize, "3 + 1..29 warps per block");
  constexpr int kPublisher = kWorkerWarps, kFetcher = kWorkerWarps + 1, kProducer = kWorkerWarps + 2;
  extern __shared__ float4 stages[];  // kOnePassStages chunks of plan.chunk / 4 packs
  // Each mbarrier completes one phase per use. A use is waited on by parity, so no barrier may complete
  // two phases before its waiters saw the first: the per-round ones alternate between two barriers.
  __shared__ uint64_t loaded[kOnePassStages];      // a chunk has landed (producer -> workers)
  __shared__ uint64_t normalised[kOnePassStages];  // a chunk holds y (workers -> producer)
  __shared__ uint64_t partial_ready[2];            // s_partial[k & 1] is set (workers -> publisher)
  __shared__ uint64_t stats_ready[2];              // s_stats[j & 1] is set (fetcher -> workers)
  __shared__ Moments s_warp[2][kWorkerWarps];
  __shared__ Moments s_partial[2];
  __shared__ float4 s_stats[2];  // mean hi, mean lo, rstd

  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int team = blockIdx.x / plan.team_size;
  const int rank = blockIdx.x % plan.team_size;
  const int64_t rows = shape.batch * shape.groups;
  const int slice_elems = static_cast<int>(shape.slice_elems());
  const int cpg = static_cast<int>(shape.channels_per_group());
  const int plane = static_cast<int>(shape.plane_elems);
  const int groups = static_cast<int>(shape.groups);
  const int chunk_packs = static_cast<int>(plan.chunk / 4);
  const int begin = rank * chunk_packs * 4;
  const int packs = max(0, min(chunk_packs * 4, slice_elems - begin)) / 4;
  const unsigned bytes = static_cast<unsigned>(packs) * 16u;
  const int64_t rounds = team < rows ? (rows - team + plan.teams - 1) / plan.teams : 0;

  const auto row_of = [&](int64_t k) { return team + k * plan.teams; };
  const auto first_channel = [&](int64_t row) { return static_cast<int>(row % groups) * cpg; };
  const auto slot = [&](int64_t k) { return static_cast<int>(k % kOnePassStages); };
  const auto use = [&](int64_t k) { return static_cast<unsigned>((k / kOnePassStages) & 1); };
  const auto stage = [&](int64_t k) { return stages + slot(k) * chunk_packs; };
  // The moments are of z - pilot, pilot the slice's first z: see groupnorm/twopass/forward.cuh's stats_partial_kernel.
  const auto pilot_of = [&](int64_t k) {
    const int64_t row = row_of(k);
    return Pro::at(params, first_channel(row)).value(__ldg(x + row * slice_elems));
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < kOnePassStages; ++s) {
      mbarrier_init(&loaded[s], 1);
      mbarrier_init(&normalised[s], kWorkerWarps);
    }
    for (int s = 0; s < 2; ++s) {
      mbarrier_init(&partial_ready[s], 1);
      mbarrier_init(&stats_ready[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();  // the only block-wide barrier

  if (warp == kProducer) {
    // PRODUCER: three chunks ahead; a stage is reloaded once its y has been read out of it.
    if (lane == 0) {
      const auto load = [&](int64_t k) {
        bulk_load(stage(k), x + row_of(k) * slice_elems + begin, bytes, &loaded[slot(k)]);
      };
      for (int64_t k = 0; k < rounds && k < kOnePassStages; ++k) load(k);
      for (int64_t j = 0; j < rounds; ++j) {
        mbarrier_wait(&normalised[slot(j)], use(j));
        if (bytes) bulk_store(y + row_of(j) * slice_elems + begin, stage(j), bytes);
        if (j + kOnePassStages < rounds) {
          bulk_stores_read();
          load(j + kOnePassStages);
        }
      }
      bulk_stores_done();
    }
    return;
  }

  if (warp == kFetcher) {
    // FETCHER: the statistics of each slice, once its team's last block has merged them.
    if (lane == 0) {
      for (int64_t j = 0; j < rounds; ++j) {
        const int64_t row = row_of(j);
        while (load_acquire(sync.ready + row) == 0u) __nanosleep(32);
        const float2 mu = __ldcg(mean_out + row);
        s_stats[j & 1] = make_float4(mu.x, mu.y, __ldcg(rstd_out + row), 0.f);
        mbarrier_arrive(&stats_ready[j & 1]);
      }
    }
    return;
  }

  if (warp == kPublisher) {
    // PUBLISHER: this block's moments of each slice out to the team; the last block to arrive merges.
    for (int64_t k = 0; k < rounds; ++k) {
      const int64_t row = row_of(k);
      mbarrier_wait(&partial_ready[k & 1], static_cast<unsigned>((k >> 1) & 1));
      unsigned last = 0;
      if (lane == 0) {
        sync.published[row * plan.team_size + rank] = s_partial[k & 1];
        last = atomic_add_acq_rel(sync.arrivals + row, 1u) == unsigned(plan.team_size - 1);
      }
      if (__shfl_sync(0xffffffffu, last, 0)) {
        merge_team_moments(sync, row, plan.team_size, pilot_of(k), eps, params.statistics, mean_out, rstd_out);
      }
    }
    return;
  }

  // WORKERS: fold chunk k, then normalise chunk k - 1 in place (its statistics arrive meanwhile).
  float pilot = rounds > 0 ? pilot_of(0) : 0.f;
  for (int64_t k = 0; k <= rounds; ++k) {
    if (k < rounds) {
      const int64_t row = row_of(k);
      float4* held = stage(k);
      mbarrier_wait(&loaded[slot(k)], use(k));
      Moments acc{0.f, 0.f, 0.f};
      ChannelCursor cursor(first_channel(row), plane);
      Pro pro{};
      for (int i = threadIdx.x; i < packs; i += kWorkers) {
        if (cursor.advance(begin + 4 * i)) pro = Pro::at(params, cursor.channel);
        const float4 v = held[i];
        const float4 z = make_float4(pro.value(v.x), pro.value(v.y), pro.value(v.z), pro.value(v.w));
        accumulate4(acc, z.x - pilot, z.y - pilot, z.z - pilot, z.w - pilot);
        if constexpr (!std::is_same<Pro, NoPrologue>::value) held[i] = z;
      }
      // The workers' tree combine (as block_combine), handed to the publisher.
      acc = warp_combine(acc);
      if (lane == 0) s_warp[k & 1][warp] = acc;
      workers_barrier<kWorkers>();
      if (warp == 0) {
        acc = warp_combine(lane < kWorkerWarps ? s_warp[k & 1][lane] : Moments{0.f, 0.f, 0.f});
        if (lane == 0) {
          s_partial[k & 1] = acc;
          mbarrier_arrive(&partial_ready[k & 1]);
        }
      }
      if (k + 1 < rounds) pilot = pilot_of(k + 1);
    }
    if (k >= 1) {
      const int64_t j = k - 1;
      const int64_t row = row_of(j);
      float4* held = stage(j);
      mbarrier_wait(&stats_ready[j & 1], static_cast<unsigned>((j >> 1) & 1));
      const float4 stats = s_stats[j & 1];
      const float2 mu = make_float2(stats.x, stats.y);
      ChannelCursor cursor(first_channel(row), plane);
      float scale = 0.f, shift = 0.f;
      Epi epi{};
      // v of one value: the epilogue reads y alone (see the header), so z and x are passed as 0.
      const auto out = [&](float z) { return epi.value(__fmaf_rn(centered(z, mu), scale, shift), 0.f, 0.f); };
      for (int i = threadIdx.x; i < packs; i += kWorkers) {
        if (cursor.advance(begin + 4 * i)) {
          scale = gamma ? stats.z * __ldg(gamma + cursor.channel) : stats.z;
          shift = beta ? __ldg(beta + cursor.channel) : 0.f;
          epi = Epi::at(params, cursor.channel);
        }
        const float4 z = held[i];
        held[i] = make_float4(out(z.x), out(z.y), out(z.z), out(z.w));
      }
      fence_to_async_proxy();  // the producer's bulk store reads these values
      __syncwarp();
      if (lane == 0) mbarrier_arrive(&normalised[slot(j)]);
    }
  }
#endif
}

// What the planner needs to know of a device and of the kernel built for it, queried once per device
// (the first forward call on it) instead of on every call: the SM count and shared-memory limits, the
// kernel's binary and static shared memory, and, per dynamic shared-memory size asked for, the
// occupancy. `max_dynamic_smem` is the largest dynamic size already granted to the kernel on the device,
// so cudaFuncSetAttribute runs only when a larger one is needed.
struct OnePassDeviceFacts {
  bool known = false;
  int sms = 0, optin = 0, per_sm_bytes = 0;
  bool cooperative = false;
  int binary_version = 0, ptx_version = 0;
  int64_t static_smem = 0;
  size_t max_dynamic_smem = 0;
  std::vector<std::pair<size_t, int>> occupancy;  // (dynamic smem bytes, blocks per SM), few entries
};

template <class Pro, class Epi, int kThreads>
struct OnePassDeviceCache {
  static std::mutex& lock() {
    static std::mutex m;
    return m;
  }
  static std::vector<OnePassDeviceFacts>& facts() {
    static std::vector<OnePassDeviceFacts> f;
    return f;
  }
  static const void* kernel() {
    return reinterpret_cast<const void*>(groupnorm_onepass_kernel<Pro, Epi, kThreads>);
  }

  // The facts of `device`, queried on first use. Call with lock() held.
  static OnePassDeviceFacts& of(int device) {
    auto& all = facts();
    if (int(all.size()) <= device) all.resize(device + 1);
    OnePassDeviceFacts& f = all[device];
    if (!f.known) {
      int cooperative = 0;
      C10_CUDA_CHECK(cudaDeviceGetAttribute(&f.sms, cudaDevAttrMultiProcessorCount, device));
      C10_CUDA_CHECK(cudaDeviceGetAttribute(&f.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
      C10_CUDA_CHECK(cudaDeviceGetAttribute(&f.per_sm_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
      C10_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
      f.cooperative = cooperative != 0;
      cudaFuncAttributes attributes;
      C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel()));
      f.binary_version = attributes.binaryVersion;
      f.ptx_version = attributes.ptxVersion;
      f.static_smem = int64_t(attributes.sharedSizeBytes);
      f.known = true;
    }
    return f;
  }

  // Blocks per SM at `smem` dynamic bytes, granting the kernel that much first. Call with lock() held.
  static int occupancy(OnePassDeviceFacts& f, size_t smem) {
    for (const auto& entry : f.occupancy) {
      if (entry.first == smem) return entry.second;
    }
    if (smem > f.max_dynamic_smem) {
      C10_CUDA_CHECK(cudaFuncSetAttribute(kernel(), cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      f.max_dynamic_smem = smem;
    }
    int per_sm = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel(), kThreads, smem));
    if (f.occupancy.size() < 64) f.occupancy.emplace_back(smem, per_sm);
    return per_sm;
  }
};

// Team sizes for one slice on this device, or feasible = false. blocks_per_sm blocks share each SM's
// shared memory: with more than one, one block's waits overlap another's copies and stores.
template <class Pro, class Epi, int kThreads>
inline OnePassPlan plan_onepass(const GroupShape& shape, bool vec, int blocks_per_sm) {
  OnePassPlan plan{false, kThreads, 0, 0, 0, 0};
  const int64_t rows = shape.batch * shape.groups;
  const int64_t slice = shape.slice_elems();
  // 16-byte loads only; offsets within a slice are 32-bit.
  if (!vec || rows == 0 || slice == 0 || slice % 4 || slice >= (int64_t(1) << 31) || blocks_per_sm < 1) {
    return plan;
  }
  using Cache = OnePassDeviceCache<Pro, Epi, kThreads>;
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> guard(Cache::lock());
  OnePassDeviceFacts& f = Cache::of(device);
  if (!f.cooperative) return plan;
  // The kernel's body exists only in code built for sm_90 or newer (bulk copies): not in code built for an
  // older GPU, nor in older PTX compiled just in time for this one.
  if (f.binary_version < 90 || f.ptx_version < 90) return plan;
  // What one block may hold: its share of the SM, less its static arrays and the 1 KB the runtime
  // reserves per block; kOnePassStages chunks of it.
  constexpr int64_t kReservedPerBlock = 1024;
  const int64_t share = int64_t(f.per_sm_bytes) / blocks_per_sm - kReservedPerBlock;
  const int64_t budget = std::min<int64_t>(f.optin, share) - f.static_smem;
  const int64_t chunk_budget = budget / kOnePassStages / 16 * 16;
  if (chunk_budget <= 0) return plan;
  const int64_t smallest_team = (slice * 4 + chunk_budget - 1) / chunk_budget;
  const int64_t resident = int64_t(blocks_per_sm) * f.sms;
  const int64_t teams = std::min<int64_t>(rows, resident / smallest_team);
  if (teams < 1) return plan;
  // Spread the teams over every resident block: smaller chunks, all SMs busy.
  const int64_t team_target = std::max<int64_t>(smallest_team, resident / teams);
  const int64_t chunk = ((slice + team_target - 1) / team_target + 3) / 4 * 4;
  const int64_t team_size = (slice + chunk - 1) / chunk;
  const size_t smem = size_t(kOnePassStages) * size_t(chunk) * sizeof(float);
  const int per_sm = Cache::occupancy(f, smem);
  // Fewer teams if fewer blocks fit than asked for (registers): a team must never wait on a block that
  // cannot be resident.
  const int64_t fitting_teams = std::min<int64_t>(teams, int64_t(per_sm) * f.sms / team_size);
  if (fitting_teams < 1) return plan;
  return OnePassPlan{true, kThreads, int(team_size), int(fitting_teams), chunk, smem};
}

// One-pass forward of Pro -> GroupNorm -> Epi into y (contiguous, same shape as x); mean and rstd as the
// two-pass forward leaves them. gamma, beta: undefined without an affine. Returns false, having launched
// nothing, where the planner declines.
template <class Pro, class Epi, int kThreads>
bool groupnorm_forward_onepass(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, at::Tensor& y,
                               at::Tensor& mean, at::Tensor& rstd, const GroupShape& shape, double eps,
                               RegionParams params, int blocks_per_sm) {
  static_assert(!DirectGrads<Epi>::value, "this forward takes epilogues of y alone");
  const bool vec = shape.plane_elems % 4 == 0 && is_16_byte_aligned(x.data_ptr<float>()) &&
                   is_16_byte_aligned(y.data_ptr<float>());
  const OnePassPlan plan = plan_onepass<Pro, Epi, kThreads>(shape, vec, blocks_per_sm);
  if (!plan.feasible) return false;
  const int64_t rows = shape.batch * shape.groups;
  const int64_t moment_words = rows * int64_t(plan.team_size) * int64_t(sizeof(Moments) / sizeof(float));
  auto published = at::empty({moment_words}, x.options());
  auto flags = at::zeros({2 * rows}, x.options().dtype(at::kInt));  // arrivals, then ready
  auto* flag_ptr = reinterpret_cast<unsigned*>(flags.data_ptr<int>());
  OnePassSync sync{reinterpret_cast<Moments*>(published.data_ptr<float>()), flag_ptr, flag_ptr + rows};
  const float* x_ptr = x.data_ptr<float>();
  const float* gamma_ptr = gamma.defined() ? gamma.data_ptr<float>() : nullptr;
  const float* beta_ptr = beta.defined() ? beta.data_ptr<float>() : nullptr;
  float* y_ptr = y.data_ptr<float>();
  float2* mean_ptr = as_float2(mean);
  float* rstd_ptr = rstd.data_ptr<float>();
  void* args[] = {&x_ptr, &gamma_ptr, &beta_ptr, &y_ptr, &mean_ptr, &rstd_ptr, &sync,
                  const_cast<GroupShape*>(&shape), const_cast<OnePassPlan*>(&plan), &eps, &params};
  const void* kernel = reinterpret_cast<const void*>(groupnorm_onepass_kernel<Pro, Epi, kThreads>);
  C10_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(plan.teams * plan.team_size), dim3(kThreads), args,
                                             plan.smem_bytes, at::cuda::getCurrentCUDAStream()));
  return true;
}

}  // namespace kgen
