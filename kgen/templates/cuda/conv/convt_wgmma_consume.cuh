// ---- conv/convt_wgmma_consume.cuh: the consumer warpgroups and the kernel of kgen's wgmma ConvTranspose2d (design:
// conv/convt_wgmma.cuh; producers: conv/convt_wgmma_produce.cuh): the wgmma main loop, the staged epilogue with the
// GroupNorm moments of the region's prologue, convt_wgmma_kernel ----
namespace kgen {
namespace convt {

// The prologue's value as the epilogue's moments take it: Pro::moments_value where the prologue has one, else
// Pro::value. A generated prologue has one where a GELU (erf) is among its ops: libdevice's erff costs about 30
// instructions a value, and the moments, which only steer the normalisation, take gelu_erf_moments (below) instead;
// z, the normalise and the backward take the prologue's value itself.
template <class Pro, class = void>
struct HasMomentsValue : std::false_type {};
template <class Pro>
struct HasMomentsValue<Pro, std::void_t<decltype(std::declval<const Pro&>().moments_value(0.f))>> : std::true_type {};

template <class Pro>
__device__ __forceinline__ float moments_value(const Pro& pro, float x) {
  if constexpr (HasMomentsValue<Pro>::value) {
    return pro.moments_value(x);
  } else {
    return pro.value(x);
  }
}

// The multi-function unit's reciprocal and 2^x as they are (flushing denormals): no range fix-ups around them.
__device__ __forceinline__ float mufu_rcp(float v) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}
__device__ __forceinline__ float mufu_ex2(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}
// GELU (erf) as the epilogue's moments take it: a branch-free erfc (Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7,
// without the range fix-ups of __fdividef and __expf) moves each GELU value by at most 1e-7 |v|.
// GELU(v) = v Phi(v) = max(v, 0) - |v| erfc(|v| / sqrt 2) / 2 for either sign, with the erfc's p / sqrt 2 and its
// halved coefficients folded into the constants: 11 instructions a value, 2 of them the multi-function unit's (the
// select form, v - h or h with h = v q / 2, takes 15).
__device__ __forceinline__ float gelu_erf_moments(float v) {
  const float a = fabsf(v);
  const float t = mufu_rcp(fmaf(0.231641888f, a, 1.f));  // 1 / (1 + p |v| / sqrt 2): the denominator is >= 1
  const float half_poly = t * fmaf(t, fmaf(t, fmaf(t, fmaf(t, 0.5f * 1.061405429f, 0.5f * -1.453152027f),
                                                      0.5f * 1.421413741f), 0.5f * -0.284496736f), 0.5f * 0.254829592f);
  const float half_erfc = half_poly * mufu_ex2(v * v * -0.72134752044448170f);  // exp(-v^2 / 2) = 2^(...)
  return fmaf(-a, half_erfc, fmaxf(v, 0.f));
}

// The conv alone, without GroupNorm moments (the input gradient): a prologue of no parameters whose value is its
// input; the epilogue stores and skips every moments step, and convt_wgmma_moments returns mean and rstd unset.
struct ConvOnly {
  static constexpr int kParams = 0;
  __device__ static ConvOnly at(const RegionParams&, int64_t) { return {}; }
  __device__ __forceinline__ float value(float x) const { return x; }
};
template <class Pro>
constexpr bool kEpilogueMoments = !std::is_same<Pro, ConvOnly>::value;

// The epilogue's staging tile: a consumer warpgroup turns its 64 x 256 accumulators around through shared memory
// in pieces of 64 channels x 32 pixels, so that the code that stores z and folds the prologue's values into the
// moments is one rolled loop over the pieces (a few hundred instructions) instead of 256 unrolled values (an unrolled
// epilogue: 21.9 K SASS instructions a kernel, 59 % of its stall samples waiting for instructions to be fetched).
constexpr int kEpiPixels = 32;                          // a piece's pixels
constexpr int kEpiPieces = kWgPixels / kEpiPixels;      // 8 pieces a tile
constexpr int kEpiPitch = kEpiPixels + 4;               // floats a staged row: 16-byte rows, conflict-free reads
constexpr int kEpiFloats = kWgConsumers * kWgChannels * kEpiPitch;  // both warpgroups' staging tiles

// Writes this thread's accumulators of piece kPiece (steps i = 4 kPiece .. 4 kPiece + 3 of the fragment: channels
// 16 w + l / 4 and that + 8, pixels 8 i + 2 (l % 4) and the one after) to the staging tile: static register indices.
template <int kPiece>
__device__ __forceinline__ void epilogue_stage(const float (&acc)[128], float* tile, int row0, int col0) {
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const int i = 4 * kPiece + s;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      *reinterpret_cast<float2*>(tile + (row0 + 8 * r) * kEpiPitch + 8 * s + col0) =
          make_float2(acc[4 * i + 2 * r], acc[4 * i + 2 * r + 1]);
    }
  }
}

// One consumer warpgroup's epilogue. Piece by piece, its accumulators go to its staging tile and come back as rows:
// a thread keeps the two channels its fragment holds (16 w + c and that + 8, c = l / 4 taken in the order 0 4 1 5
// 2 6 3 7, so that the 8 lanes of a quarter-warp read rows 4 apart: other banks) and takes 4 consecutive pixels at
// 4 (l % 4) and 16 + 4 (l % 4) of each piece. A warp thus reads back only the rows it wrote, and syncs with itself
// alone (__syncwarp; two warpgroup barriers a piece kept its 4 warps in step: 0.07 ms more at L2-19, H100).
// 4 lanes store 64 contiguous bytes of a channel, as 16-byte stores of the accumulators (the conv without its bias),
// and the prologue's value of each, moments_value(pro, acc), folds into per-thread sums shifted by its value at 0. A
// prologue adds the conv's bias as PyTorch does (one separately rounded add, __fadd_rn), so its value is that of
// the reference's biased conv output. Then the 4 lanes of a channel combine (Chan), then both warpgroups and the
// channels of each group in a fixed order: one partial per (sample, group, pixel tile, channel tile), merged in
// double by convt_moments_finalize_kernel. Deterministic, no atomics.
// kInfer (convt_wgmma_infer): what is stored is the moments' value itself (moments_value), with an L2 evict-last hint
// (the tile is counted done later: wgmma_count_tile_done).
template <class Pro, bool kStore, bool kInfer = false>
__device__ __forceinline__ void wgmma_epilogue(const float (&acc)[128], const WgmmaTile& tile, int consumer,
                                               const RegionParams& params, float* __restrict__ z,
                                               Moments* __restrict__ partial, const ConvShape& s,
                                               const WgmmaGeometry& g,
                                               Moments (&channel_moments)[kWgConsumers][kWgChannels], float* staging) {
  const int warp = (threadIdx.x / kWarpSize) % 4, lane = threadIdx.x % kWarpSize;
  const int64_t out_plane = s.out_plane();
  float* const mine = staging + consumer * kWgChannels * kEpiPitch;
  const int row = 16 * warp + (lane / 8) + 4 * ((lane / 4) % 2);  // this thread's first channel in the tile; + 8
  const int col = 4 * (lane % 4);                                   // its first pixel of a piece; + 16
  bool live[2];
  Pro pro[2];  // the prologue of each of the thread's two channels (a dead row takes the last channel's)
  float shift[2], s1[2] = {0.f, 0.f}, s2[2] = {0.f, 0.f};
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int co = tile.ctile * kWgChannels + row + 8 * j;
    live[j] = co < s.out_channels;
    pro[j] = Pro::at(params, min(co, s.out_channels - 1));
    shift[j] = moments_value(pro[j], 0.f);
  }
  // This thread's first channel plane of z; the second is 8 planes on (both exist where live).
  float* const zc = z + (int64_t(tile.n) * s.out_channels + min(tile.ctile * kWgChannels + row, s.out_channels - 1)) *
                            out_plane;
  float count = 0.f;
  // The frame position of this warpgroup's first pixel. Dense: padding 0 (the frame is the output plane), all 256
  // pixels inside it, and planes of whole 16-byte units.
  const int fbase = tile.f0 + kWgPixels * consumer;
  const bool dense = s.out_w == g.pitch && fbase + kWgPixels <= s.out_h * s.out_w && out_plane % 4 == 0;
  const bool quads = g.pitch % 4 == 0 && s.out_w % 4 == 0;  // 4 pixels a store: all in the output or all out
  const int frow = 16 * warp + lane / 4, fcol = 2 * (lane % 4);  // where the fragment puts its first value
  const uint64_t evict_last = kInfer ? l2_policy_evict_last() : 0;  // the stored values stay in L2 for the normalise
#pragma unroll 1
  for (int k = 0; k < kEpiPieces; ++k) {
    switch (k) {
      case 0: epilogue_stage<0>(acc, mine, frow, fcol); break;
      case 1: epilogue_stage<1>(acc, mine, frow, fcol); break;
      case 2: epilogue_stage<2>(acc, mine, frow, fcol); break;
      case 3: epilogue_stage<3>(acc, mine, frow, fcol); break;
      case 4: epilogue_stage<4>(acc, mine, frow, fcol); break;
      case 5: epilogue_stage<5>(acc, mine, frow, fcol); break;
      case 6: epilogue_stage<6>(acc, mine, frow, fcol); break;
      default: epilogue_stage<7>(acc, mine, frow, fcol); break;
    }
    __syncwarp();  // a warp reads back only the rows it wrote (its fragment's 16 channels): no wider barrier
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int f = fbase + kEpiPixels * k + col + 16 * q;  // the frame position of these 4 pixels' first
      int quad_oh = 0, quad_ow = 0;  // its row and column of the frame (dense: not needed)
      if (!dense) quad_oh = f / g.pitch, quad_ow = f - quad_oh * g.pitch;
      if (dense || (quads && quad_oh < s.out_h && quad_ow < s.out_w)) {
        const int at = dense ? f : quad_oh * s.out_w + quad_ow;  // the 4 pixels' first in the output plane
        count += 4.f;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float4 a = *reinterpret_cast<const float4*>(mine + (row + 8 * j) * kEpiPitch + col + 16 * q);
          // the prologue's values as the moments take them; kInfer stores them (kept in L2 for the normalise), else
          // the accumulators are stored
          float4 o = a;
          if constexpr (kEpilogueMoments<Pro>) {
            o = make_float4(moments_value(pro[j], a.x), moments_value(pro[j], a.y), moments_value(pro[j], a.z),
                            moments_value(pro[j], a.w));
          }
          if (kInfer && live[j]) {
            store16_policy(zc + 8 * j * out_plane + at, o, evict_last);
          } else if (kStore && live[j]) {
            *reinterpret_cast<float4*>(zc + 8 * j * out_plane + at) = a;
          }
          if constexpr (kEpilogueMoments<Pro>) {
            const float u0 = o.x - shift[j], u1 = o.y - shift[j], u2 = o.z - shift[j], u3 = o.w - shift[j];
            s1[j] += (u0 + u1) + (u2 + u3);
            s2[j] = fmaf(u3, u3, fmaf(u2, u2, fmaf(u1, u1, fmaf(u0, u0, s2[j]))));
          }
        }
      } else if (!quads) {
        // Each pixel's (row, column) of the frame; a column past W_out, or a row past H_out, is dropped. In the
        // output a pixel sits at oh W_out + ow.
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int oh = (f + e) / g.pitch, ow = f + e - oh * g.pitch;
          if (oh >= s.out_h || ow >= s.out_w) continue;
          count += 1.f;
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const float a = mine[(row + 8 * j) * kEpiPitch + col + 16 * q + e];
            const float o = kEpilogueMoments<Pro> ? moments_value(pro[j], a) : a;  // as the moments take it
            if (kStore && live[j]) zc[8 * j * out_plane + oh * s.out_w + ow] = kInfer ? o : a;
            if constexpr (kEpilogueMoments<Pro>) {
              const float u = o - shift[j];
              s1[j] += u, s2[j] += u * u;
            }
          }
        }
      }
    }
    __syncwarp();  // the piece is read: the next may overwrite it
  }
  if constexpr (!kEpilogueMoments<Pro>) return;
  // Each channel's moments: the thread's pixels, then the 4 lanes that share the channel (Chan's combine), then
  // both warpgroups and the channels of a group, in order.
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    Moments m{0.f, 0.f, 0.f};
    if (count > 0.f) m = Moments{count, shift[j] + s1[j] / count, fmaxf(s2[j] - s1[j] * s1[j] / count, 0.f)};
#pragma unroll
    for (int offset = 1; offset < 4; offset *= 2) {
      const Moments other{__shfl_xor_sync(0xffffffffu, m.count, offset), __shfl_xor_sync(0xffffffffu, m.mean, offset),
                          __shfl_xor_sync(0xffffffffu, m.m2, offset)};
      m = combine(m, other);
    }
    if (lane % 4 == 0) channel_moments[consumer][row + 8 * j] = m;
  }
  named_barrier(2, 128 * kWgConsumers);

  // One partial per group this channel tile touches.
  const int cpg = s.channels_per_group();
  const int co_lo = tile.ctile * kWgChannels, co_hi = min(s.out_channels, co_lo + kWgChannels);
  const int g_first = co_lo / cpg, g_count = (co_hi - 1) / cpg - g_first + 1;
  const int ctid = threadIdx.x - 128 * kWgProducers;
  if (ctid < g_count) {
    const int grp = g_first + ctid;
    const int lo = max(co_lo, grp * cpg) - co_lo, hi = min(co_hi, (grp + 1) * cpg) - co_lo;
    Moments m{0.f, 0.f, 0.f};
    for (int c = lo; c < hi; ++c)
#pragma unroll
      for (int w = 0; w < kWgConsumers; ++w) m = combine(m, channel_moments[w][c]);
    partial[((int64_t(tile.n) * s.groups + grp) * g.tiles + tile.tile) * g.channel_tiles + tile.ctile] = m;
  }
}

// kInfer: counts a tile of sample n done, once every consumer thread's stores of it (values, partials) have been
// made: a barrier of the consumers, then one thread's fence (cumulative over what the barrier ordered before it) and
// atomic. The consumers call it for each tile at the next tile's epilogue, so that the fence, which waits for the
// thread's own stores in flight, finds them long landed instead of stalling its warpgroup (the last tile's at the end).
__device__ __forceinline__ void wgmma_count_tile_done(int* __restrict__ done, int n) {
  named_barrier(3, 128 * kWgConsumers);
  if (threadIdx.x == 128 * kWgProducers) {
    __threadfence();
    atomicAdd(done + n, 1);
  }
}

// A consumer warpgroup: for each of the block's tiles (first, first + step, ...), every chunk's taps as one wgmma
// group as soon as the stage is full, releasing the stage of the chunk before once its group has completed; then
// the epilogue (kInfer: wgmma_epilogue's).
template <class Pro, int kPart, bool kInfer = false>
__device__ __forceinline__ void wgmma_consume(const RegionParams& params, float* __restrict__ z,
                                              Moments* __restrict__ partial, const ConvShape& s,
                                              const WgmmaGeometry& g, const float* smem,
                                              Moments (&channel_moments)[2][kWgConsumers][kWgChannels],
                                              float* staging, uint32_t full, uint32_t empty, int64_t first,
                                              int64_t step, int* done = nullptr) {
  const int consumer = threadIdx.x / 128 - kWgProducers, lane = threadIdx.x % kWarpSize;
  const int taps = s.taps();
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  int stage = 0, parity_buffer = 0;
  uint32_t phase = 0;
  float acc[128];
  int uncounted = -1;  // kInfer: the sample of the block's previous tile, not yet counted done
  for (int64_t t = first; t < g.work; t += step) {
    const WgmmaTile tile(t, g);
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    int last = 0;
    for (int c = 0; c < (kPart == 2 ? 0 : g.chunks); ++c) {
      mbar_wait(full + 8 * stage, phase);
      const uint32_t xs = smem_base + static_cast<uint32_t>(stage * g.stage_floats * 4);
      const uint32_t ws = xs + 32u * g.positions;
      wgmma_fence();
      for (int tap = 0; tap < taps; ++tap) {
        const int a = tap / s.kernel_w, b = tap - a * s.kernel_w;
        const uint64_t desc_w = smem_desc(ws + 2048u * tap, 1024u, 128u);
        const uint64_t desc_x = smem_desc(xs + 16u * (consumer * kWgPixels + a * g.pitch + b), 16u * g.positions, 128u);
        wgmma_m64n256k8_tf32(acc, desc_w, desc_x);
      }
      wgmma_commit();
      wgmma_wait<1>();
      if (c > 0 && lane == 0) mbar_arrive(empty + 8 * last);
      last = stage;
      if (++stage == g.stages) stage = 0, phase ^= 1;
    }
    wgmma_wait<0>();
    if (kPart != 2 && lane == 0) mbar_arrive(empty + 8 * last);
#pragma unroll
    for (int i = 0; i < 128; ++i) fence_register(acc[i]);
    if constexpr (kPart == 1 || (kPart >= 4 && kPart <= 6) || kPart == 8 || kPart == 9) {
      float keep = 0.f;
#pragma unroll
      for (int i = 0; i < 128; ++i) keep += acc[i];
      if (keep == 1234.5f) z[threadIdx.x] = keep;  // keeps the main loop
    } else {
      if constexpr (kInfer) {
        if (uncounted >= 0) wgmma_count_tile_done(done, uncounted);
        uncounted = tile.n;
      }
      wgmma_epilogue<Pro, kPart != 7, kInfer>(acc, tile, consumer, params, z, partial, s, g,
                                              channel_moments[parity_buffer], staging);
      parity_buffer ^= 1;  // the other buffer next tile: this one may still be read by the group threads
    }
  }
  if constexpr (kInfer) {
    if (uncounted >= 0) wgmma_count_tile_done(done, uncounted);
  }
}

// Pro: the region prologue whose values the GroupNorm moments are of (ConvOnly: none). kRoundInput: the producer
// rounds the input to TF32 to nearest (else the tensor cores truncate it).
template <class Pro, int kPart = 0, bool kInputCL = false, bool kRoundInput = true>
__global__ void __launch_bounds__(kWgThreads, 1)
convt_wgmma_kernel(const float* __restrict__ x, const float* __restrict__ wprep, float* __restrict__ z,
                   Moments* __restrict__ partial, ConvShape s, WgmmaGeometry g, RegionParams params) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  float* staging = smem + g.stages * g.stage_floats;                  // past the ring: the epilogue's tiles
  int* pos_off = reinterpret_cast<int*>(staging + kEpiFloats);        // then the producer's offsets
  __shared__ __align__(8) uint64_t full_bars[kWgMaxStages], empty_bars[kWgMaxStages], raw_bars[kWgMaxRawSlots];
  __shared__ Moments channel_moments[2][kWgConsumers][kWgChannels];
  const uint32_t full = static_cast<uint32_t>(__cvta_generic_to_shared(full_bars));
  const uint32_t empty = static_cast<uint32_t>(__cvta_generic_to_shared(empty_bars));
  const uint32_t raw_full = static_cast<uint32_t>(__cvta_generic_to_shared(raw_bars));
  if (threadIdx.x == 0) {
    wgmma_init_ring(full, empty, g.stages);
    wgmma_init_raw(raw_full, g.raw_slots);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  // The bulk input path is compiled in only where the plan may take it (an NCHW input rounded to TF32); the other
  // instantiations (the input gradient) keep the register split they were measured with, 56 / 224.
  constexpr bool kBulk = kPart != 2 && !kInputCL && kRoundInput;
  if (threadIdx.x < 128 * kWgProducers) {
    if constexpr (kBulk) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 88;\n" ::: "memory");
    } else {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n" ::: "memory");
    }
    if constexpr (kBulk) {
      if (g.raw_slots > 0) {
        wgmma_produce_bulk<kPart>(x, wprep, s, g, smem, full, empty, raw_full, blockIdx.x, gridDim.x);
      } else {
        wgmma_produce<kPart, kInputCL, kRoundInput>(x, wprep, s, g, smem, pos_off, full, empty, blockIdx.x,
                                                    gridDim.x);
      }
    } else if constexpr (kPart != 2) {
      wgmma_produce<kPart, kInputCL, kRoundInput>(x, wprep, s, g, smem, pos_off, full, empty, blockIdx.x, gridDim.x);
    }
  } else {
    if constexpr (kBulk) {
      asm volatile("setmaxnreg.inc.sync.aligned.u32 208;\n" ::: "memory");
    } else {
      asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n" ::: "memory");
    }
    wgmma_consume<Pro, kPart>(params, z, partial, s, g, smem, channel_moments, staging, full, empty, blockIdx.x,
                              gridDim.x);
  }
#else
  (void)x, (void)wprep, (void)z, (void)partial, (void)s, (void)g, (void)params;
  __trap();  // never launched: convt_wgmma_available() is false where this was not built for sm_90a
#endif
}

}  // namespace convt
}  // namespace kgen
