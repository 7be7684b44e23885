// ---- convt_wgmma: ConvTranspose2d at stride 1 on Hopper's warpgroup tensor cores (wgmma, sm_90a), reading the
// NCHW input as it is, with the bias, an element-wise op and the GroupNorm moments of op(output) in its epilogue
// (L2-19 `--conv fused`, issue 13; convt_igemm.cuh is the portable mma.sync path for every stride) ----
//
// The conv as a GEMM per sample: D[co, f] = sum over (ci, tap) of W[co, (ci, tap)] * X[(ci, tap), f], where f is an
// output pixel. wgmma wants both operands K-major in shared memory (K = input channels, 4 of them per 16 bytes),
// so a block stages its input the other way round from NCHW: one 16-byte unit per (frame position, 4 channels).
//
// The frame. At stride 1 a transposed conv is a direct conv of the input padded by PH = kH - 1 - pad rows and
// PW = kW - 1 - pad columns with the kernel flipped: z[oh, ow] = sum_{a, b} xpad[oh + a, ow + b] W[kH-1-a, kW-1-b].
// Lay xpad out with a row pitch of Q = W_in + PW and number output pixels f = oh Q + ow in the same pitch: the
// value tap (a, b) reads for pixel f sits at frame position f + a Q + b, for every pixel. So a tap is a constant
// shift of the staged positions, which a wgmma descriptor expresses as a start address: the block stages the
// positions [f0, f0 + P) of its 512 pixels once per chunk of 8 input channels, and every tap multiplies from
// there (P = 512 + (kH - 1) Q + kW - 1). A read past the right edge of a row lands on the next row's left
// padding, which is zero as the true right padding would be. Columns ow >= W_out (pad > 0) and rows past the last
// are computed and dropped.
//
// The block. 2 warpgroups x 256 pixels (N of m64n256k8), 64 output channels (M; more channels take more blocks),
// K in chunks of 8 input channels through kWgStages shared-memory stages. While the tensor cores multiply chunk c
// (wgmma is asynchronous), the threads load chunk c + 1: each lane one frame position of 4 channel planes (a warp
// reads 128 contiguous bytes of each plane) stored as one 16-byte unit (a warp writes 512 contiguous bytes), zeros
// where the position is padding; the weights, laid out and rounded to TF32 once per call by
// convt_wgmma_weights_kernel, as one contiguous run. One barrier per chunk: a stage is refilled only after every
// warpgroup has waited for the wgmma group that read it. The input goes to the tensor cores as raw float bits:
// they drop the low 13 (truncation); the weights are rounded to nearest.
//
// The epilogue: the accumulators go through shared memory ([channel][pixel], over the stages), then a warp takes
// one channel at a time with its lanes along the pixels: z = acc + bias (a separately rounded add, as PyTorch's)
// leaves as 16-byte stores where 4 pixels are contiguous in the output, and op(z) folds into moments shifted by
// op(bias), combined over the warp, then per (sample, group, pixel tile, channel tile) in a fixed order;
// convt_moments_finalize_kernel merges those in double. Deterministic, no atomics.
//
// (v3.0 measured on the H100: 4-byte cp.async copies, one per element, and an epilogue unrolled over the
// accumulators in registers issued about 18 K instructions a warp per tile, 8.8 cycles apart, so the tensor pipe
// was 12 % busy: 11.4 ms at L2-19. benchmarks/convt_fused/README.md, v3.)
namespace kgen {
namespace convt {

constexpr int kWgPixels = 256;                            // N of one wgmma: one warpgroup's pixels
constexpr int kWgWarpgroups = 2;
constexpr int kWgTilePixels = kWgPixels * kWgWarpgroups;  // a block's pixels
constexpr int kWgChannels = 64;                           // M: a block's output channels
constexpr int kWgChunk = 8;                               // K of one wgmma: input channels a stage
constexpr int kWgStages = 3;  // chunk c + 1 loads into the stage of chunk c - 2 while chunk c multiplies
constexpr int kWgThreads = 128 * kWgWarpgroups;
constexpr int kWgTilePitch = kWgTilePixels + 8;           // the epilogue's [channel][pixel] rows: 8-byte stores
                                                          // of a half warp hit 32 distinct banks

// Where a problem's frame and tiles fall; planned on the host.
struct WgmmaGeometry {
  int pitch;          // Q
  int pad_top;        // PH
  int pad_left;       // PW
  int positions;      // P
  int tiles;          // pixel tiles a sample
  int chunks;         // K chunks: ceil(C_in / 8)
  int channel_tiles;  // ceil(C_out / 64)
  int64_t stage_floats;
  int64_t main_floats;  // the stages, or the epilogue's tile where that is larger
  int64_t smem_bytes;
};

__device__ __forceinline__ uint32_t tf32_nearest(float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
#else
  return __float_as_uint(v);
#endif
}

// A shared-memory matrix descriptor without swizzle: 8-row x 16-byte core matrices, `leading` bytes apart along K
// and `stride` bytes apart along M or N.
__device__ __forceinline__ uint64_t smem_desc(uint32_t address, uint32_t leading, uint32_t stride) {
  return uint64_t((address & 0x3FFFF) >> 4) | (uint64_t((leading & 0x3FFFF) >> 4) << 16) |
         (uint64_t((stride & 0x3FFFF) >> 4) << 32);
}

__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}
// Shared-memory writes of this thread (cp.async's included, once waited for) become visible to the tensor cores.
__device__ __forceinline__ void fence_async_shared() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Keeps the compiler from moving reads of an accumulator across a wgmma wait.
__device__ __forceinline__ void fence_register(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// d (64 x 256, this warpgroup's fragment) += A (64 x 8, descriptor) * B (8 x 256, descriptor), TF32 in, float32
// accumulate. The fragment: warp w, lane l holds for i = 0 .. 31 the rows 16 w + l / 4 (d[4 i], d[4 i + 1]) and
// 16 w + l / 4 + 8 (d[4 i + 2], d[4 i + 3]), columns 8 i + 2 (l % 4) and the one after.
__device__ __forceinline__ void wgmma_m64n256k8_tf32(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(1));
#else
  (void)d, (void)desc_a, (void)desc_b;
#endif
}

// The weights as the tensor cores read them: [channel tile][chunk][tap (a, b)][4-channel half][co 64][4 ci], with
// tap (a, b) = weight[ci, co, kH-1-a, kW-1-b], TF32 round-to-nearest, 0 past C_in or C_out.
__global__ void convt_wgmma_weights_kernel(const float* __restrict__ weight, float* __restrict__ out, ConvShape s,
                                           int chunks, int64_t total) {
  const int taps = s.taps();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(i & 3), co = static_cast<int>((i >> 2) & 63), half = static_cast<int>((i >> 8) & 1);
    int64_t rest = i >> 9;
    const int tap = static_cast<int>(rest % taps);
    rest /= taps;
    const int chunk = static_cast<int>(rest % chunks);
    const int ctile = static_cast<int>(rest / chunks);
    const int ci = chunk * kWgChunk + 4 * half + j, cog = ctile * kWgChannels + co;
    const int a = tap / s.kernel_w, b = tap - a * s.kernel_w;
    float v = 0.f;
    if (ci < s.in_channels && cog < s.out_channels) {
      v = weight[((int64_t(ci) * s.out_channels + cog) * s.kernel_h + (s.kernel_h - 1 - a)) * s.kernel_w +
                 (s.kernel_w - 1 - b)];
    }
    out[i] = __uint_as_float(tf32_nearest(v));
  }
}

// kPart: 0 the whole kernel. For timing only: 1 the main loop alone; 2 the epilogue alone (on zero accumulators);
// 3 the main loop with every tap's descriptor at the stage's aligned start (wrong products); 4 the main loop's
// wgmma alone (no loads after the first chunk).
template <class Op, int kPart = 0>
__global__ void __launch_bounds__(kWgThreads, 1)
convt_wgmma_kernel(const float* __restrict__ x, const float* __restrict__ wprep, const float* __restrict__ bias,
                   float* __restrict__ z, Moments* __restrict__ partial, ConvShape s, WgmmaGeometry g, Op op) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  int* pos_off = reinterpret_cast<int*>(smem + g.main_floats);  // past the stages and the epilogue's tile
  __shared__ Moments channel_moments[kWgChannels];

  const int tid = threadIdx.x, wg = tid / 128, warp = tid / kWarpSize, lane = tid % kWarpSize;
  const int tile = blockIdx.x, ctile = blockIdx.y, n = blockIdx.z;
  const int taps = s.taps();
  const int f0 = tile * kWgTilePixels;
  const int64_t in_plane = s.in_plane();
  const float* xn = x + int64_t(n) * s.in_channels * in_plane;

  // Each staged frame position's offset in an input plane, -1 where it is padding.
  for (int p = tid; p < g.positions; p += kWgThreads) {
    const int at = f0 + p, r = at / g.pitch;
    const int ih = r - g.pad_top, iw = at - r * g.pitch - g.pad_left;  // iw < in_w by the choice of Q
    pos_off[p] = ih >= 0 && ih < s.in_h && iw >= 0 ? ih * s.in_w + iw : -1;
  }
  __syncthreads();

  // Chunk c into a stage. Lanes take consecutive positions: each loads its position in 4 channel planes (a warp
  // reads 128 bytes of each) and stores the 4 as one 16-byte unit (a warp writes 512 consecutive bytes). The
  // weights are one contiguous run.
  auto load_chunk = [&](int c, int stage) {
    float4* xs = reinterpret_cast<float4*>(smem + stage * g.stage_floats);
    float4* ws = xs + 2 * g.positions;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float* plane[4];
      bool has[4];
#pragma unroll
      for (int ch = 0; ch < 4; ++ch) {
        const int ci = c * kWgChunk + 4 * half + ch;
        has[ch] = ci < s.in_channels;
        plane[ch] = xn + (has[ch] ? ci : 0) * in_plane;
      }
#pragma unroll 4
      for (int p = tid; p < g.positions; p += kWgThreads) {
        const int off = pos_off[p];
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (off >= 0) {
          if (has[0]) v.x = __ldg(plane[0] + off);
          if (has[1]) v.y = __ldg(plane[1] + off);
          if (has[2]) v.z = __ldg(plane[2] + off);
          if (has[3]) v.w = __ldg(plane[3] + off);
        }
        xs[half * g.positions + p] = v;
      }
    }
    const float4* wsrc = reinterpret_cast<const float4*>(wprep) + (int64_t(ctile) * g.chunks + c) * taps * 128;
    for (int i = tid; i < taps * 128; i += kWgThreads) ws[i] = __ldg(wsrc + i);
  };

  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  if (kPart != 2) load_chunk(0, 0);
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  // Chunk c + 1 is loaded while the tensor cores work on chunk c: its stage held chunk c + 1 - kWgStages, which every
  // warpgroup has waited for (this one at the end of the last iteration, the other before this barrier).
  for (int c = 0; c < (kPart == 2 ? 0 : g.chunks); ++c) {
    fence_async_shared();
    __syncthreads();
    const uint32_t xs = smem_base + static_cast<uint32_t>((c % kWgStages) * g.stage_floats * 4);
    const uint32_t ws = xs + 32u * g.positions;
    wgmma_fence();
    for (int t = 0; t < taps; ++t) {
      const int a = t / s.kernel_w, b = t - a * s.kernel_w;
      const uint64_t desc_w = smem_desc(ws + 2048u * t, 1024u, 128u);
      const int shift = kPart == 3 ? 0 : a * g.pitch + b;
      const uint64_t desc_x = smem_desc(xs + 16u * (wg * kWgPixels + shift), 16u * g.positions, 128u);
      wgmma_m64n256k8_tf32(acc, desc_w, desc_x);
    }
    wgmma_commit();
    if (kPart != 4 && c + 1 < g.chunks) load_chunk(c + 1, (c + 1) % kWgStages);
    wgmma_wait<1>();
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 128; ++i) fence_register(acc[i]);
  __syncthreads();  // every warpgroup is done with the stages: the epilogue's tile takes their place
  if constexpr (kPart == 1 || kPart == 3 || kPart == 4) {
    float keep = 0.f;
#pragma unroll
    for (int i = 0; i < 128; ++i) keep += acc[i];
    if (keep == 1234.5f) z[tid] = keep;  // keeps the main loop
    return;
  }

  // Epilogue, 1: the accumulators into shared memory as [channel][pixel] (rows 16 (warp % 4) + lane / 4 (+ 8),
  // pixels 256 wg + 8 i + 2 (lane % 4)), and each pixel's offset in an output plane (-1: dropped).
  float* cs = smem;
  int* out_off = pos_off;
#pragma unroll
  for (int i = 0; i < 32; ++i)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = 16 * (warp % 4) + lane / 4 + 8 * r, col = wg * kWgPixels + 8 * i + 2 * (lane % 4);
      *reinterpret_cast<float2*>(cs + row * kWgTilePitch + col) = make_float2(acc[4 * i + 2 * r], acc[4 * i + 2 * r + 1]);
    }
  for (int p = tid; p < kWgTilePixels; p += kWgThreads) {
    const int at = f0 + p, oh = at / g.pitch, ow = at - oh * g.pitch;
    out_off[p] = oh < s.out_h && ow < s.out_w ? oh * s.out_w + ow : -1;
  }
  __syncthreads();

  // Epilogue, 2: a warp per channel at a time, lanes along pixels: z = acc + bias (a separately rounded add, as
  // PyTorch's) stored 16 bytes a lane where 4 pixels are contiguous and aligned; op(z) into moments shifted by
  // op(bias), combined over the warp.
  const int64_t out_plane = s.out_plane();
  const bool vec = out_plane % 4 == 0;
  for (int k = warp; k < kWgChannels; k += kWgThreads / kWarpSize) {
    const int co = ctile * kWgChannels + k;
    if (co >= s.out_channels) break;  // warp-uniform; later k only larger
    const float b = __ldg(bias + co);
    const float shift = op(b);
    float* zc = z + (int64_t(n) * s.out_channels + co) * out_plane;
    float count = 0.f, s1 = 0.f, s2 = 0.f;
#pragma unroll
    for (int j = 0; j < kWgTilePixels / (4 * kWarpSize); ++j) {
      const int p = 4 * lane + 4 * kWarpSize * j;
      const float4 a4 = *reinterpret_cast<const float4*>(cs + k * kWgTilePitch + p);
      const int4 o = *reinterpret_cast<const int4*>(out_off + p);
      const float v[4] = {__fadd_rn(a4.x, b), __fadd_rn(a4.y, b), __fadd_rn(a4.z, b), __fadd_rn(a4.w, b)};
      const int off[4] = {o.x, o.y, o.z, o.w};
      if (vec && o.x >= 0 && o.w == o.x + 3 && o.x % 4 == 0) {
        *reinterpret_cast<float4*>(zc + o.x) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (off[e] >= 0) zc[off[e]] = v[e];
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (off[e] >= 0) {
          const float u = op(v[e]) - shift;
          count += 1.f, s1 += u, s2 += u * u;
        }
      }
    }
    Moments m{count, 0.f, 0.f};
    if (count > 0.f) m = Moments{count, shift + s1 / count, fmaxf(s2 - s1 * s1 / count, 0.f)};
    m = warp_combine(m);
    if (lane == 0) channel_moments[k] = m;
  }
  __syncthreads();

  // One partial per group this channel tile touches: its channels in order.
  const int cpg = s.channels_per_group();
  const int co_lo = ctile * kWgChannels, co_hi = min(s.out_channels, co_lo + kWgChannels);
  const int g_first = co_lo / cpg, g_count = (co_hi - 1) / cpg - g_first + 1;
  if (tid < g_count) {
    const int grp = g_first + tid;
    const int lo = max(co_lo, grp * cpg) - co_lo, hi = min(co_hi, (grp + 1) * cpg) - co_lo;
    Moments m{0.f, 0.f, 0.f};
    for (int c = lo; c < hi; ++c) m = combine(m, channel_moments[c]);
    partial[((int64_t(n) * s.groups + grp) * g.tiles + tile) * g.channel_tiles + ctile] = m;
  }
#else
  (void)x, (void)wprep, (void)bias, (void)z, (void)partial, (void)s, (void)g, (void)op;
  __trap();  // never launched: convt_wgmma_available() is false where this was not built for sm_90a
#endif
}

// 1 where the build for the running GPU has the sm_90a instructions, 0 otherwise.
__global__ void convt_wgmma_probe_kernel(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

// Whether convt_wgmma_kernel runs on this device (compute capability 9.0 and an sm_90a build), asked once.
inline bool convt_wgmma_available(int device) {
  static std::mutex lock;
  static std::map<int, bool> known;
  const std::lock_guard<std::mutex> guard(lock);
  auto found = known.find(device);
  if (found != known.end()) return found->second;
  bool ok = cached_attribute<cudaDevAttrComputeCapabilityMajor>(device) == 9 &&
            cached_attribute<cudaDevAttrComputeCapabilityMinor>(device) == 0;
  if (ok) {
    const c10::cuda::CUDAGuard guard_device(device);
    auto flag = at::zeros({1}, at::TensorOptions().device(at::kCUDA, device).dtype(at::kInt));
    convt_wgmma_probe_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(flag.data_ptr<int>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    ok = flag.item<int>() == 1;
  }
  known[device] = ok;
  return ok;
}

// The frame and tiles of a checked shape; "" where this kernel takes it, else why not.
inline std::string convt_wgmma_plan(const ConvShape& s, WgmmaGeometry& g, int64_t smem_limit) {
  if (s.stride_h != 1 || s.stride_w != 1) return "it takes stride 1 only";
  if (s.pad_h > s.kernel_h - 1 || s.pad_w > s.kernel_w - 1) return "it takes padding <= kernel size - 1 only";
  if (s.out_h != s.in_h + s.kernel_h - 1 - 2 * s.pad_h || s.out_w != s.in_w + s.kernel_w - 1 - 2 * s.pad_w) {
    return "it takes output_padding 0 only";
  }
  g.pad_top = s.kernel_h - 1 - s.pad_h;
  g.pad_left = s.kernel_w - 1 - s.pad_w;
  g.pitch = s.in_w + g.pad_left;
  const int64_t frame = int64_t(s.out_h) * g.pitch;
  const int64_t positions = kWgTilePixels + int64_t(s.kernel_h - 1) * g.pitch + s.kernel_w - 1;
  if (positions >= (1 << 14) || s.in_plane() >= (int64_t(1) << 31)) return "the input rows are too long for it";
  g.positions = static_cast<int>(positions);
  g.tiles = static_cast<int>((frame + kWgTilePixels - 1) / kWgTilePixels);
  g.chunks = (s.in_channels + kWgChunk - 1) / kWgChunk;
  g.channel_tiles = (s.out_channels + kWgChannels - 1) / kWgChannels;
  g.stage_floats = 8 * positions + 512 * int64_t(s.taps());
  const int64_t tile_floats = int64_t(kWgChannels) * kWgTilePitch;
  g.main_floats = std::max<int64_t>(kWgStages * g.stage_floats, tile_floats);
  g.smem_bytes = 4 * (g.main_floats + std::max<int64_t>(positions, kWgTilePixels));
  if (g.smem_bytes > smem_limit) {
    return "it would take " + std::to_string(g.smem_bytes) + " bytes of shared memory a block; the GPU allows " +
           std::to_string(smem_limit);
  }
  if (frame + positions >= (int64_t(1) << 31) || g.channel_tiles > 65535) return "the output is too large for one launch";
  return "";
}

// conv_transpose2d(x, weight, bias) at stride 1 -> z, and the GroupNorm statistics of op(z):
// {z, mean (N, G, 2), rstd (N, G)}. A clear error where the GPU or the shape is not this kernel's.
template <class Op, int kPart = 0>
std::vector<at::Tensor> convt_wgmma_moments(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                                            int64_t groups, double eps, std::vector<int64_t> padding, Op op) {
  const ConvShape s = check_convt(input, weight, bias, groups, {1, 1}, padding, {0, 0});
  const c10::cuda::CUDAGuard device_guard(input.device());
  const int device = input.get_device();
  TORCH_CHECK(convt_wgmma_available(device), "kgen: the wgmma ConvTranspose2d needs an sm_90 GPU (H100/H200) and a "
              "build for sm_90a");
  WgmmaGeometry g{};
  const std::string why = convt_wgmma_plan(s, g, max_block_smem(device));
  TORCH_CHECK(why.empty(), "kgen: the wgmma ConvTranspose2d does not take this shape: ", why);
  TORCH_CHECK(s.batch <= 65535, "kgen: batch above 65535");
  const auto x = input.contiguous();
  auto z = at::empty({s.batch, s.out_channels, s.out_h, s.out_w}, x.options());
  auto mean = at::empty({s.batch, s.groups, 2}, x.options());
  auto rstd = at::empty({s.batch, s.groups}, x.options());
  if (s.batch == 0) return {z, mean, rstd};
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t wtotal = int64_t(g.channel_tiles) * g.chunks * s.taps() * 512;
  auto wprep = at::empty({wtotal}, x.options());
  convt_wgmma_weights_kernel<<<static_cast<unsigned>(std::min<int64_t>(blocks_for(wtotal, 256), 4096)), 256, 0,
                               stream>>>(weight.contiguous().data_ptr<float>(), wprep.data_ptr<float>(), s, g.chunks,
                                         wtotal);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const int64_t per_row = int64_t(g.tiles) * g.channel_tiles;
  // Partials a channel tile never writes (it does not touch the group) must read as empty: zeroed.
  auto partial = at::zeros({int64_t(s.batch) * s.groups * per_row * int64_t(sizeof(Moments) / sizeof(float))},
                           x.options());
  auto* partial_ptr = reinterpret_cast<Moments*>(partial.data_ptr<float>());
  const auto kernel = convt_wgmma_kernel<Op, kPart>;
  allow_smem(reinterpret_cast<const void*>(kernel), g.smem_bytes);
  const dim3 grid(static_cast<unsigned>(g.tiles), static_cast<unsigned>(g.channel_tiles),
                  static_cast<unsigned>(s.batch));
  kernel<<<grid, kWgThreads, g.smem_bytes, stream>>>(x.data_ptr<float>(), wprep.data_ptr<float>(),
                                                     bias.contiguous().data_ptr<float>(), z.data_ptr<float>(),
                                                     partial_ptr, s, g, op);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  finalize_moments(partial_ptr, per_row, s, eps, mean, rstd, stream);
  return {z, mean, rstd};
}

}  // namespace convt
}  // namespace kgen
