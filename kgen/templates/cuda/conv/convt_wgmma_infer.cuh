// ---- conv/convt_wgmma_infer.cuh: the forward without autograd (no_grad, or nothing requires a gradient) in ONE
// kernel: convt_wgmma's conv, region prologue and GroupNorm moments on most multiprocessors, the GroupNorm normalise
// and the region epilogue (of y alone) on the rest, sample by sample as the conv completes them ----
//
// Why. The two-kernel forward writes z (2.18 GB at L2-19) and a normalise sweep reads it back from DRAM and writes y
// after the conv's last tile: 1.5 ms on top of the conv kernel's 3.7-3.9. A sample's output is 17 MB and the H100's
// L2 holds 50 MB, so the normalise can read a sample back from L2 soon after the conv has written it, and write y in
// place: DRAM then sees x in and y out. Run inside the conv blocks, between or beside their wgmma, that normalise
// lengthens the main loop by about its own time in every form tried (H100, L2-19): the main loop is bound by the
// shared-memory/L1 data path of its multiprocessor, and any load or store there takes from it. So here the normalise
// runs on multiprocessors of its own, whose data paths the conv never uses:
// - Roles by ticket. Each block (one a multiprocessor: the ring's shared memory allows no second) takes a ticket
//   as it starts; tickets below `conv_blocks` run convt_wgmma's producer and consumers over tiles ticket, ticket +
//   conv_blocks, ... (consecutive tiles: neighbouring pixel tiles of a sample, so samples complete in order), the
//   rest normalise. Tickets go to blocks in the order they start, so every conv role belongs to a running block and
//   the normalisers, which only ever wait for conv work, cannot hold it up (no co-residency assumed).
// - Counting. The epilogue stores the prologue's value itself (moments_value: for GELU erf an erfc 1.5e-7 from the
//   true one, so the stored value is within ~1e-7 |z| of GELU's) with an L2 evict-last hint and writes its partials
//   as the two-kernel path does; at the next tile's epilogue (its stores long landed) the consumers count it done
//   for its sample: a barrier, one thread's fence and atomic (wgmma_count_tile_done). The input's bulk copies take
//   no L2 hint (with evict-first the conv blocks end 0.2-0.3 ms later, H100, L2-19: neighbouring tiles share their
//   halo rows through L2); the 4-byte copies, where the bulk path does not apply, ask L2 to evict first.
// - Normalising. Normaliser r of k takes chunks r, r + k, ... (24 KB of one channel plane each) of every sample in
//   turn, by bulk copies into a ring of up to 8 in shared memory, running on into the next sample as soon as it is
//   complete. On a sample's first chunk it merges the sample's partials in double in convt_moments_finalize_kernel's
//   fixed order (the same mean and rstd, bit for bit: deterministic) and tabulates each channel's scale rstd gamma
//   (rstd without an affine GroupNorm), shift beta (0) and mean (hi, lo), as the two-kernel normalise forms them.
//   Then y = (u - mean) scale + shift, and the region epilogue's value of y, stored in place, evict-first. Planes of
//   odd sizes (no 16-byte chunks) take a register path: items of whole planes by ticket.
// The output is the two-kernel forward's but for GELU's value (above), and mean/rstd are not kept: autograd takes the
// two-kernel path, whose backward needs z.
// Measured (H100, L2-19): a normaliser moves ~56 GB/s (read and written
// together) even alone and from L2: its multiprocessor's link to L2, not latency, bounds it (8 x 24 KB in flight did
// not beat 48 KB). So the normalise costs ~0.6 ms of the GPU against the sweep's 1.5, and the conv beside its traffic
// runs 5-10 % longer: the one launch is 0.1-0.4 ms faster than the two kernels in the same call (5.06 against 5.27 at
// 20 normalisers), 0.07 ms under KernelBench's timing.
namespace kgen {
namespace convt {

struct InferArgs {
  const float* gamma;    // nullptr: GroupNorm(affine=False), scale rstd
  const float* beta;     // nullptr: shift 0
  float* y;              // the prologue's values from the conv's epilogue, normalised in place
  int* counters;         // [batch] tiles done a sample, then the role ticket, then the normalise item ticket (zeroed)
  double eps;
  int conv_blocks;       // tickets below run the conv; the rest normalise
  int tiles_per_sample;  // pixel tiles x channel tiles
  int planes_per_item;   // an item: that many channel planes of a sample, or (pieces > 1) a 1/pieces of one plane
  int pieces;
  int items_per_sample;
  int items;             // batch x items_per_sample
  int stages;            // the bulk path's ring (0: the register path)
  int chunk_floats;      // its chunks
  int ring_offset4;      // where its ring starts in shared memory, in float4s past the channel table
  int store_mode;        // the bulk path: 0 each thread stores its values, evict-first; 2 no stores (timing only)
  unsigned long long* trace;  // for measurements (nullptr: none): each block's start and end (globaltimer, ns) at
                              // [2 ticket], then normaliser 0's wait start, wait end and finish for each sample
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t = 0;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mov.u64 %0, %globaltimer;\n" : "=l"(t));
#endif
  return t;
}

constexpr int kInferItemValues = 1 << 16;  // the register path's items: ~64 K values
constexpr int kInferChunkFloats = 6144;   // the bulk path's chunks: 24 KB, 4 units of 16 bytes a thread
constexpr int kInferBatch = 8;            // the register path: 16-byte loads in flight a thread

__device__ __forceinline__ int load_acquire(const int* p) {
  int v = 0;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
#endif
  return v;
}

// Orders this thread's view of global memory (what it acquired) before its bulk copies that follow.
__device__ __forceinline__ void fence_proxy_async_global() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
#endif
}

// y = (u - mean) scale + shift, as the two-kernel normalise forms it (`coef`: scale, shift, mean hi, mean lo).
__device__ __forceinline__ float infer_value(float u, float4 coef) {
  return centered(u, make_float2(coef.z, coef.w)) * coef.x + coef.y;
}
// The region epilogue's value of that y: an epilogue of y alone (the kernel runs none that reads z or x).
template <class Epi>
__device__ __forceinline__ float infer_output(float u, float4 coef, const Epi& epi) {
  return epi.value(infer_value(u, coef), 0.f, 0.f);
}

// Sample n's channel table: waits for its tiles (one thread, acquire), merges its partials in double in
// convt_moments_finalize_kernel's order (warp w: groups w, w + warps, ...), then scale, shift and mean a channel
// (gamma and beta where the GroupNorm has them).
__device__ __forceinline__ void infer_sample_table(const Moments* __restrict__ partial, const ConvShape& s,
                                                   const WgmmaGeometry& g, const InferArgs& a, int n, float4* table,
                                                   float2* group_mean, float* group_rstd) {
  if (threadIdx.x == 0) {
    while (load_acquire(a.counters + n) < a.tiles_per_sample) __nanosleep(256);
    __threadfence();
  }
  __syncthreads();
  const int per_row = g.tiles * g.channel_tiles, cpg = s.channels_per_group();
  for (int grp = threadIdx.x / kWarpSize; grp < s.groups; grp += blockDim.x / kWarpSize) {
    const int64_t row = int64_t(n) * s.groups + grp;
    const MomentsD m = warp_merge(per_row, [&](int i) {
      const Moments* p = partial + row * per_row + i;
      return Moments{__ldcg(&p->count), __ldcg(&p->mean), __ldcg(&p->m2)};
    });
    if (threadIdx.x % kWarpSize == 0) finish_statistics(m, 0.0, a.eps, kExact, group_mean[grp], group_rstd[grp]);
  }
  __syncthreads();
  for (int c = threadIdx.x; c < s.out_channels; c += blockDim.x) {
    const int grp = c / cpg;
    const float scale = a.gamma ? group_rstd[grp] * __ldg(a.gamma + c) : group_rstd[grp];
    table[c] = make_float4(scale, a.beta ? __ldg(a.beta + c) : 0.f, group_mean[grp].x, group_mean[grp].y);
  }
  __syncthreads();
}

// The bulk path (planes of whole 16-byte units): normaliser r of k takes chunks r, r + k, ... of each sample in
// turn (a chunk: up to kInferChunkFloats of one channel plane), each brought into a ring of `stages` shared-memory
// buffers by one bulk copy, then normalised from there by every thread (the channel's Epi loaded once a chunk) and
// stored, evict-first. Thread 0 keeps the ring full (up to 8 x 24 KB in flight), running on into the next sample's
// chunks as soon as that sample is complete (a check that does not wait), so the ring drains only where the
// normalisers have caught up with the conv.
template <class Epi>
__device__ __forceinline__ void infer_normalise_bulk(const Moments* __restrict__ partial, const ConvShape& s,
                                                     const WgmmaGeometry& g, const InferArgs& a,
                                                     const RegionParams& params, float* smem, uint32_t bars, int r,
                                                     int k) {
  float4* table = reinterpret_cast<float4*>(smem);
  float2* group_mean = reinterpret_cast<float2*>(table + s.out_channels);
  float* group_rstd = reinterpret_cast<float*>(group_mean + s.groups);
  float4* ring = table + a.ring_offset4;
  const uint32_t ring_addr = static_cast<uint32_t>(__cvta_generic_to_shared(ring));
  const int64_t out_plane = s.out_plane();
  const int per_plane = static_cast<int>((out_plane + a.chunk_floats - 1) / a.chunk_floats);
  const int chunks = s.out_channels * per_plane;              // a sample's
  const int mine = chunks > r ? (chunks - r + k - 1) / k : 0;  // this block's, in every sample
  if (mine == 0) return;  // more normalisers than a sample has chunks
  const uint64_t evict_first = l2_policy_evict_first();
  unsigned long long* const trace = a.trace && r == 0 && threadIdx.x == 0 ? a.trace + 2 * gridDim.x : nullptr;
  // Chunk i of this block in a sample: its plane and its [lo, lo + len) floats of the plane (32-bit arithmetic: a
  // 64-bit division a chunk, in every thread, measured ~20 % slower).
  auto locate = [&](int i, int& c, int64_t& lo, int& len) {
    const int j = r + i * k, piece = j % per_plane;
    c = j / per_plane;
    lo = int64_t(piece) * a.chunk_floats;
    len = static_cast<int>(min(int64_t(a.chunk_floats), out_plane - lo));
  };
  // Thread 0: issues chunks into the ring while a stage is free and their sample is complete (`ready`: the samples
  // below it are known to be). The next to issue: chunk fill_i of sample fill_n, into stage fill_stage.
  int fill_n = 0, fill_i = 0, fill_stage = 0, free_stages = a.stages, ready = 0;
  auto fill = [&]() {
    for (; fill_n < s.batch && free_stages > 0; --free_stages) {
      if (fill_n >= ready) {
        if (load_acquire(a.counters + fill_n) < a.tiles_per_sample) return;
        fence_proxy_async_global();  // the acquired values, for the bulk copies (the async proxy) that read them
        ready = fill_n + 1;
      }
      int c, len;
      int64_t lo;
      locate(fill_i, c, lo, len);
      const uint32_t bar = bars + 8u * fill_stage;
      mbar_expect_bytes(bar, 4u * len);
      bulk_copy_to_shared(ring_addr + static_cast<uint32_t>(fill_stage * a.chunk_floats * 4),
                          a.y + (int64_t(fill_n) * s.out_channels + c) * out_plane + lo, 4u * len, bar);
      mbar_arrive(bar);
      if (++fill_stage == a.stages) fill_stage = 0;
      if (++fill_i == mine) fill_i = 0, ++fill_n;
    }
  };
  int stage = 0;
  uint32_t phase = 0;
  for (int n = 0; n < s.batch; ++n) {
    if (trace) trace[3 * n] = global_ns();
    // infer_sample_table waits for the sample (thread 0); the ring's copies of it go out first.
    if (threadIdx.x == 0) {
      while (load_acquire(a.counters + n) < a.tiles_per_sample) __nanosleep(256);
      fill();
    }
    infer_sample_table(partial, s, g, a, n, table, group_mean, group_rstd);
    if (trace) trace[3 * n + 1] = global_ns();
    for (int i = 0; i < mine; ++i) {
      mbar_wait(bars + 8u * stage, phase);
      int c, len;
      int64_t lo;
      locate(i, c, lo, len);
      const float4 coef = table[c];
      const Epi epi = Epi::at(params, c);
      const float4* in = ring + stage * (a.chunk_floats / 4);
      float* out = a.y + (int64_t(n) * s.out_channels + c) * out_plane + lo;
      for (int u = threadIdx.x; u < len / 4; u += blockDim.x) {
        const float4 v = in[u];
        const float4 o = make_float4(infer_output(v.x, coef, epi), infer_output(v.y, coef, epi),
                                     infer_output(v.z, coef, epi), infer_output(v.w, coef, epi));
        if (a.store_mode == 0) store16_policy(out + 4 * u, o, evict_first);
        if (a.store_mode == 2 && o.x == 1234.5f) out[0] = o.y;  // timing only: keeps the arithmetic
      }
      __syncthreads();  // the stage is read: it may be refilled
      if (++stage == a.stages) stage = 0, phase ^= 1;
      if (threadIdx.x == 0) ++free_stages, fill();
    }
    if (trace) trace[3 * n + 2] = global_ns();
  }
}

// The register path (planes of odd sizes, whose chunks a bulk copy cannot take): items (a few channel planes of a
// sample, or a piece of one) by ticket, in order; 8 loads in flight a thread. A range lies in one channel plane, whose
// Epi the caller loads once.
template <class Epi>
__device__ __forceinline__ void infer_normalise_range(float* __restrict__ plane, int64_t lo, int64_t hi, float4 coef,
                                                      const Epi& epi) {
  for (int64_t base = lo + threadIdx.x; base < hi; base += int64_t(kInferBatch) * blockDim.x) {
    float v[kInferBatch];
#pragma unroll
    for (int k = 0; k < kInferBatch; ++k) {
      const int64_t i = base + int64_t(k) * blockDim.x;
      if (i < hi) v[k] = __ldcg(plane + i);
    }
#pragma unroll
    for (int k = 0; k < kInferBatch; ++k) {
      const int64_t i = base + int64_t(k) * blockDim.x;
      if (i < hi) plane[i] = infer_output(v[k], coef, epi);
    }
  }
}

template <class Epi>
__device__ __forceinline__ void infer_normalise_items(const Moments* __restrict__ partial, const ConvShape& s,
                                                      const WgmmaGeometry& g, const InferArgs& a,
                                                      const RegionParams& params, float* smem) {
  float4* table = reinterpret_cast<float4*>(smem);
  float2* group_mean = reinterpret_cast<float2*>(table + s.out_channels);
  float* group_rstd = reinterpret_cast<float*>(group_mean + s.groups);
  __shared__ int item_shared;
  const int64_t out_plane = s.out_plane();
  int cached = -1;  // the sample whose table is in shared memory
  for (;;) {
    if (threadIdx.x == 0) item_shared = atomicAdd(a.counters + s.batch + 1, 1);
    __syncthreads();
    const int item = item_shared;
    if (item >= a.items) break;  // block-uniform
    const int n = item / a.items_per_sample, k = item - n * a.items_per_sample;
    if (n != cached) infer_sample_table(partial, s, g, a, n, table, group_mean, group_rstd);
    cached = n;
    if (a.pieces > 1) {  // a piece of one plane
      const int c = k / a.pieces, piece = k - c * a.pieces;
      const int64_t per_piece = (out_plane + a.pieces - 1) / a.pieces;
      infer_normalise_range(a.y + (int64_t(n) * s.out_channels + c) * out_plane, min(out_plane, per_piece * piece),
                            min(out_plane, per_piece * (piece + 1)), table[c], Epi::at(params, c));
    } else {
      const int c_end = min(s.out_channels, (k + 1) * a.planes_per_item);
      for (int c = k * a.planes_per_item; c < c_end; ++c) {
        infer_normalise_range(a.y + (int64_t(n) * s.out_channels + c) * out_plane, 0, out_plane, table[c],
                              Epi::at(params, c));
      }
    }
    __syncthreads();  // every thread has read item_shared before thread 0 takes the next
  }
}

// Pro: the region prologue (conv/convt_wgmma_consume.cuh's epilogue), Epi: the region epilogue, of y alone.
template <class Pro, class Epi>
__global__ void __launch_bounds__(kWgThreads, 1)
convt_wgmma_infer_kernel(const float* __restrict__ x, const float* __restrict__ wprep, Moments* __restrict__ partial,
                         ConvShape s, WgmmaGeometry g, RegionParams params, InferArgs a) {
  static_assert(!DirectGrads<Epi>::value,
                "kgen: the one-launch forward runs region epilogues of y alone: z and x are not at hand");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  float* staging = smem + g.stages * g.stage_floats;
  int* pos_off = reinterpret_cast<int*>(staging + kEpiFloats);
  // The conv's full and empty barriers, or a normaliser's ring of up to 8 (one arrival and the copy's bytes each).
  __shared__ __align__(8) uint64_t bars[2 * kWgMaxStages + kWgMaxRawSlots];
  __shared__ Moments channel_moments[2][kWgConsumers][kWgChannels];
  __shared__ int ticket_shared;
  const uint32_t full = static_cast<uint32_t>(__cvta_generic_to_shared(bars));
  const uint32_t empty = full + 8 * kWgMaxStages, raw_full = empty + 8 * kWgMaxStages;
  if (threadIdx.x == 0) {
    const int ticket = atomicAdd(a.counters + s.batch, 1);
    ticket_shared = ticket;
    if (ticket < a.conv_blocks) {
      wgmma_init_ring(full, empty, g.stages);
      wgmma_init_raw(raw_full, g.raw_slots);
    } else {
      for (int i = 0; i < a.stages; ++i) mbar_init(full + 8 * i, 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const int ticket = ticket_shared;
  if (a.trace && threadIdx.x == 0) a.trace[2 * ticket] = global_ns();
  if (ticket >= a.conv_blocks) {
    if (a.stages > 0) {
      infer_normalise_bulk<Epi>(partial, s, g, a, params, smem, full, ticket - a.conv_blocks,
                                gridDim.x - a.conv_blocks);
    } else {
      infer_normalise_items<Epi>(partial, s, g, a, params, smem);
    }
  } else if (threadIdx.x < 128 * kWgProducers) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 88;\n" ::: "memory");
    if (g.raw_slots > 0) {
      wgmma_produce_bulk<0>(x, wprep, s, g, smem, full, empty, raw_full, ticket, a.conv_blocks);
    } else {
      wgmma_produce<0, false, true, true>(x, wprep, s, g, smem, pos_off, full, empty, ticket, a.conv_blocks);
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 208;\n" ::: "memory");
    wgmma_consume<Pro, 0, true>(params, a.y, partial, s, g, smem, channel_moments, staging, full, empty, ticket,
                                a.conv_blocks, a.counters);
  }
  if (a.trace && threadIdx.x == (ticket >= a.conv_blocks ? 0 : 128 * kWgProducers)) {
    a.trace[2 * ticket + 1] = global_ns();  // a conv block: its first consumer thread's end
  }
#else
  (void)x, (void)wprep, (void)partial, (void)s, (void)g, (void)params, (void)a;
  __trap();  // never launched: convt_wgmma_available() is false where this was not built for sm_90a
#endif
}

// How many of `sms` multiprocessors normalise, so that the conv and the normalise end together; 0 where the conv is
// too light for the one launch to pay (the normalise would want more than 30 % of them). Alone on all of them the
// conv would take A ~ its FLOPs at ~1.38 TFLOP/s a multiprocessor by the bulk input path, ~1.25 by the 4-byte copies
// (or its DRAM bytes, x and z, at 2.8 TB/s, if more), the normalise D ~ its bytes (z read, y written) at ~44 GB/s a
// multiprocessor: one multiprocessor's L2 link moves ~32 bytes a cycle both ways together (56 GB/s with nothing
// beside it), less with the conv beside it and its waits for each sample. Both end together at a share D / (A + D).
// (H100, L2-19, by the bulk path: 24 of 132; a sweep in one process: 22 4.570 ms, 23 4.444, 24 4.482 and 4.384
// (the default), 25 4.408, 26 4.412; traced, the conv 4 % slower: at 23 the conv blocks end at 4.27-4.33 ms and the
// normalisers at 4.39, at 20 4.16-4.24 and 4.80. By the copies: 20, 5.06-5.13 ms against 5.76-5.92 with 16 and
// 5.23-5.26 with 24. Too few let the normalisers fall behind and read z from DRAM.)
inline int default_infer_normalisers(const ConvShape& s, int sms, bool bulk_input) {
  const double outputs = double(s.batch) * s.out_channels * s.out_plane();
  const double flops = 2.0 * outputs * s.in_channels * s.taps();
  const double conv_bytes = 4.0 * (double(s.batch) * s.in_channels * s.in_plane() + outputs);
  const double conv = std::max(flops / (sms * (bulk_input ? 1.38e12 : 1.25e12)), conv_bytes / 2.8e12);
  const double normalise = 8.0 * outputs / (sms * 44e9);
  const double share = normalise / (conv + normalise);
  if (share > 0.3) return 0;
  return std::min(sms - 1, std::max(1, static_cast<int>(std::lround(share * sms))));
}

// Why convt_wgmma_infer<Pro, Epi> would not take this call ("" where it would), without raising:
// convt_wgmma_unsupported's reasons, gamma and beta (each undefined, or C_out float32 values on x's device), the
// shared memory of the normalise's channel table, the size of a sample.
template <class Pro, class Epi>
std::string convt_wgmma_infer_unsupported(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& gamma,
                                          const at::Tensor& beta, int64_t groups, std::vector<int64_t> padding) {
  std::string why = convt_wgmma_unsupported<Pro>(x, weight, groups, {1, 1}, padding, {0, 0}, {1, 1}, 1);
  if (!why.empty()) return why;
  for (const at::Tensor* affine : {&gamma, &beta}) {
    if (!affine->defined()) continue;
    why = float_cuda_on_one_device({&x, affine});
    if (!why.empty()) return why;
    if (affine->numel() != weight.size(1)) return "gamma or beta is not C_out long";
  }
  if (multiprocessors(x.get_device()) < 2) return "it needs 2 multiprocessors or more";
  const ConvShape s = check_convt(x, weight, groups, {1, 1}, padding, {0, 0});
  const c10::cuda::CUDAGuard device_guard(x.device());
  cudaFuncAttributes attributes{};
  C10_CUDA_CHECK(
      cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(convt_wgmma_infer_kernel<Pro, Epi>)));
  WgmmaGeometry g{};
  why = convt_wgmma_plan(s, g, max_block_smem(x.get_device()), int64_t(attributes.sharedSizeBytes));
  if (!why.empty()) return why;
  if (16 * int64_t(s.out_channels) + 12 * int64_t(s.groups) + 16 > g.smem_bytes) {
    return "its channel table does not fit";
  }
  if (int64_t(s.out_channels) * s.out_plane() >= (int64_t(1) << 31) ||
      int64_t(s.batch) * s.out_channels * (s.out_plane() / kInferItemValues + 1) >= (int64_t(1) << 30)) {
    return "a sample is too large for its normalise items";
  }
  return "";
}

// A float tensor's data, or nullptr where it is undefined (GroupNorm(affine=False)'s gamma and beta).
inline const float* data_or_null(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }
inline at::Tensor contiguous_if_defined(const at::Tensor& t) { return t.defined() ? t.contiguous() : t; }

// The launch itself, for a call convt_wgmma_infer_unsupported has passed (see convt_wgmma_infer).
template <class Pro, class Epi>
at::Tensor convt_wgmma_infer_checked(const at::Tensor& input, const at::Tensor& weight, const RegionParams& params,
                                     const at::Tensor& gamma, const at::Tensor& beta, int64_t groups, double eps,
                                     std::vector<int64_t> padding, int normalisers, int mode, at::Tensor* trace) {
  const ConvShape s = check_convt(input, weight, groups, {1, 1}, padding, {0, 0});
  const c10::cuda::CUDAGuard device_guard(input.device());
  const int device = input.get_device();
  const auto kernel = convt_wgmma_infer_kernel<Pro, Epi>;
  cudaFuncAttributes attributes{};
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
  const auto x = input.contiguous(), gam = contiguous_if_defined(gamma), bet = contiguous_if_defined(beta);
  WgmmaGeometry g{};  // the conv's bulk input path where it applies (mode 7: its 4-byte copies, for comparisons)
  convt_wgmma_plan(s, g, max_block_smem(device), int64_t(attributes.sharedSizeBytes), 4,
                   mode != 7 && is_16_byte_aligned(x.data_ptr<float>()));
  if (g.raw_slots > 0 && 16 * int64_t(s.out_channels) + 12 * int64_t(s.groups) + 16 > g.smem_bytes) {
    // the normalisers' channel table did not fit the bulk path's shared memory: the copies' ring (as checked)
    convt_wgmma_plan(s, g, max_block_smem(device), int64_t(attributes.sharedSizeBytes));
  }
  g.l2_prefetch = false;
  g.chunks_in_flight = 2;
  const int sms = multiprocessors(device);
  if (normalisers < 0) normalisers = std::max(1, default_infer_normalisers(s, sms, g.raw_slots > 0));
  if (normalisers < 1 || normalisers >= sms) {
    const std::string range =
        "kgen: 1 to " + std::to_string(sms - 1) + " normalisers, not " + std::to_string(normalisers);
    TORCH_CHECK(false, range);
  }
  auto y = at::empty({s.batch, s.out_channels, s.out_h, s.out_w}, x.options());
  const auto stream = at::cuda::getCurrentCUDAStream();
  const auto wprep = wgmma_prepared_weights(weight, s, g, stream);
  auto partial = wgmma_moment_partials(s, g, x.options());
  auto counters = at::zeros({int64_t(s.batch) + 2}, x.options().dtype(at::kInt));
  InferArgs a{};
  a.gamma = data_or_null(gam);
  a.beta = data_or_null(bet);
  a.y = y.data_ptr<float>();
  a.counters = counters.data_ptr<int>();
  a.eps = eps;
  a.conv_blocks = static_cast<int>(std::min<int64_t>(g.work, sms - normalisers));
  a.tiles_per_sample = g.tiles * g.channel_tiles;
  const int64_t plane = s.out_plane();
  a.pieces = static_cast<int>(std::max<int64_t>(1, plane / kInferItemValues));
  a.planes_per_item = static_cast<int>(std::max<int64_t>(1, kInferItemValues / plane));
  a.items_per_sample = a.pieces > 1 ? s.out_channels * a.pieces
                                    : static_cast<int>(blocks_for(s.out_channels, a.planes_per_item));
  a.items = s.batch * a.items_per_sample;
  a.store_mode = mode == 2 ? 2 : 0;
  if (trace) {  // for measurements: 2 a block, then 3 a sample
    *trace = at::zeros({2 * int64_t(a.conv_blocks + normalisers) + 3 * int64_t(s.batch)},
                       x.options().dtype(at::kLong));
    a.trace = reinterpret_cast<unsigned long long*>(trace->data_ptr<int64_t>());
  }
  // The bulk path where every plane is whole 16-byte units: a ring of up to 8 chunks of 24 KB past the channel
  // table (at least 2 stages: smaller chunks where shared memory is short).
  a.ring_offset4 = static_cast<int>(s.out_channels + blocks_for(12 * int64_t(s.groups), 16));
  const int64_t ring_bytes = g.smem_bytes - 16 * int64_t(a.ring_offset4);
  a.chunk_floats = mode == 5 ? 2 * kInferChunkFloats : kInferChunkFloats;
  a.stages = 0;
  if (plane % 4 == 0 && ring_bytes >= 2 * 1024 && mode != 3 && mode != 6) {
    a.stages = static_cast<int>(std::min<int64_t>(2 * kWgMaxStages, ring_bytes / (4 * int64_t(a.chunk_floats))));
    if (a.stages < 2) a.stages = 2, a.chunk_floats = static_cast<int>(ring_bytes / 2 / 16 * 4);
  }
  if (mode >= 4 && mode <= 6) a.conv_blocks = 0, a.tiles_per_sample = 0;  // timing only: the normalise alone
  allow_smem(reinterpret_cast<const void*>(kernel), g.smem_bytes);
  kernel<<<static_cast<unsigned>(a.conv_blocks + normalisers), kWgThreads, g.smem_bytes, stream>>>(
      x.data_ptr<float>(), wprep.data_ptr<float>(), reinterpret_cast<Moments*>(partial.data_ptr<float>()), s, g,
      params, a);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

// y = Epi(GroupNorm(Pro(conv_transpose2d(x, weight, padding)))) in one launch (above), for a forward without
// autograd: Pro and Epi a region's prologue and epilogue (groupnorm/region.cuh; Epi of y alone), their parameters in
// params; gamma and beta undefined for GroupNorm(affine=False). A clear error where convt_wgmma_infer_unsupported
// says why not. normalisers: multiprocessors given to the normalise (-1: default_infer_normalisers, at least 1).
// mode, for comparisons: 0 the default; 2 the bulk path without stores, 3 the register path everywhere; timing only,
// the normalise alone on `normalisers` blocks (no conv: y's values as they are, statistics of empty partials): 4 the
// bulk path, 5 with chunks of 48 KB, 6 the register path; 7 the conv's input by 4-byte copies where its bulk input
// path applies. trace: InferArgs::trace, for measurements.
template <class Pro, class Epi>
at::Tensor convt_wgmma_infer(const at::Tensor& input, const at::Tensor& weight, const RegionParams& params,
                             const at::Tensor& gamma, const at::Tensor& beta, int64_t groups, double eps,
                             std::vector<int64_t> padding, int normalisers = -1, int mode = 0,
                             at::Tensor* trace = nullptr) {
  const std::string why = convt_wgmma_infer_unsupported<Pro, Epi>(input, weight, gamma, beta, groups, padding);
  TORCH_CHECK(why.empty(), "kgen: the one-launch wgmma forward does not take this call: ", why);
  return convt_wgmma_infer_checked<Pro, Epi>(input, weight, params, gamma, beta, groups, eps, padding, normalisers,
                                             mode, trace);
}

// The same where it takes the call and default_infer_normalisers predicts a gain; else an undefined tensor (the
// caller runs the two-kernel forward). Each check once.
template <class Pro, class Epi>
at::Tensor convt_wgmma_infer_where_it_pays(const at::Tensor& input, const at::Tensor& weight,
                                           const RegionParams& params, const at::Tensor& gamma,
                                           const at::Tensor& beta, int64_t groups, double eps,
                                           std::vector<int64_t> padding) {
  if (!convt_wgmma_infer_unsupported<Pro, Epi>(input, weight, gamma, beta, groups, padding).empty()) return {};
  const ConvShape s = check_convt(input, weight, groups, {1, 1}, padding, {0, 0});
  if (default_infer_normalisers(s, multiprocessors(input.get_device()), true) == 0) return {};
  return convt_wgmma_infer_checked<Pro, Epi>(input, weight, params, gamma, beta, groups, eps, padding, -1, 0, nullptr);
}

}  // namespace convt
}  // namespace kgen
