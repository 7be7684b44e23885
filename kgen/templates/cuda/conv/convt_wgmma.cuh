// ---- conv/convt_wgmma.cuh: ConvTranspose2d at stride 1 on Hopper's warpgroup tensor cores (wgmma, sm_90a), reading
// the NCHW input as it is, with the GroupNorm moments of a region prologue's values of its output in its epilogue
// (groupnorm/region.cuh: the prologue maps the conv's output, the region's x, to the GroupNorm's input; the conv's bias
// is one of its parameters). The conv itself, without its bias, is what it stores (z below): every later sweep and the
// backward recompute the prologue from it, as the region kernels do from any library op's output ----
//
// The conv as a GEMM per sample: D[co, f] = sum over (ci, tap) of W[co, (ci, tap)] * X[(ci, tap), f], where f is an
// output pixel. wgmma wants both operands K-major in shared memory (K = input channels, 4 of them per 16 bytes),
// so the input is staged the other way round from NCHW: one 16-byte unit per (frame position, 4 channels).
//
// The frame. At stride 1 a transposed conv is a direct conv of the input padded by PH = kH - 1 - pad rows and
// PW = kW - 1 - pad columns with the kernel flipped: z[oh, ow] = sum_{a, b} xpad[oh + a, ow + b] W[kH-1-a, kW-1-b].
// Lay xpad out with a row pitch of Q >= W_in + PW and number output pixels f = oh Q + ow in the same pitch: the
// value tap (a, b) reads for pixel f sits at frame position f + a Q + b, for every pixel. So a tap is a constant
// shift of the staged positions, which a wgmma descriptor expresses as a start address: a tile of 512 pixels
// stages the positions [f0, f0 + P) once per chunk of 8 input channels, and every tap multiplies from there
// (P = 512 + (kH - 1) Q + kW - 1). A read past the right edge of a row lands on the next row's left padding,
// which is zero as the true right padding would be. Columns ow >= W_out (pad > 0) and rows past the last are
// computed and dropped. Where W_out is a multiple of 4 and Q != W_out, Q is the least value from W_in + PW on with
// Q = W_out modulo `pitch_align` (4 or 16): then each 4 pixels the epilogue stores are all inside the output or all
// outside, one 16-byte store, and with 16 a lane quad's 64-byte run starts a 64-byte unit of the output as it does of
// the frame (the input gradient's frame, W_in = W_out + kW - 1, is such a case).
//
// The block: persistent (one a multiprocessor, tiles handed out round-robin) and warp-specialised, 3 warpgroups.
// - The producer warpgroup fills a ring of 2-4 shared-memory stages, one chunk each. A thread takes frame
//   positions tid, tid + 128, ...: 8 four-byte cp.async copies each (a warp reads 128 contiguous bytes of a
//   plane), straight into the position's two 16-byte units, zero-filled where the position is padding. No
//   registers hold the data, so a thread keeps two chunks in flight (three where the ring has 4 stages and the
//   caller asks; measured slower at L2-19): once chunk k's copies have landed (while chunk k + 1's are on their
//   way) it rounds its own units to TF32 in place (to nearest, ties to even, as cuDNN rounds at L2-19's shape: see
//   tf32_nearest) and hands the stage over. The weights, laid out and rounded once per call by
//   convt_wgmma_weights_kernel, arrive as one bulk (TMA) copy. Stages change hands by mbarriers: `full`
//   (128 producer arrivals and the copy's bytes), `empty` (each consumer warp, once its wgmma have read the stage).
//   Where the caller asks and the shape allows, the input takes the bulk path instead (wgmma_produce_bulk:
//   bulk copies of raw NCHW runs into raw slots, then a transposing, rounding sweep): the fused forward and
//   convt_wgmma_infer do (the input gradient keeps the copies).
// - Two consumer warpgroups multiply: 256 pixels each (N of m64n256k8) by 64 output channels (M; more channels
//   take more tiles), every tap of a chunk as one wgmma group.
// - Their epilogue turns the accumulators around through a staging tile in shared memory, 64 channels x 32 pixels
//   at a time, in one rolled loop: the accumulators stored as 16-byte runs, the prologue's values of them folded
//   into per-thread moments shifted by its value at 0 (op(bias) for a prologue op(x + bias)), combined over the
//   lanes of a channel, then over the two warpgroups and the channels of each group in a fixed order: one partial
//   per (sample, group, pixel tile, channel tile), merged in double by convt_moments_finalize_kernel. Deterministic,
//   no atomics. Meanwhile the producer loads the next tile's first chunks.
// - Registers: 168 a thread at launch (65536 / 384); setmaxnreg moves them from the producer (88 where the bulk path
//   is compiled in: its sweep holds 8 positions' 32 values, and at 72 ptxas spilled its per-tile state; else 56, it
//   holds no data) to the consumers (208, or 224: the 128 accumulators and the epilogue's values in flight; no spills
//   at 208, and the conv is no slower there: 3.44 ms against 3.47-3.53 at 72 / 216, H100, L2-19). ptxas
//   allocates each branch of the role split within its own count; 128 x 88 + 256 x 208 (64512) and 128 x 56 + 256 x
//   224 (65536) both fit the launch's 384 x 168.
//
// (Measured on the H100 at L2-19, GELU erf. Every thread staging through registers between its wgmma: 9.4 ms; a
// producer warpgroup with the epilogue unrolled in registers: 5.75 ms, its epilogue waiting on instruction fetch; the
// staged epilogue: 4.47 ms; with the register split and the erfc below: 3.75-3.98 ms. The main loop takes 2.7-2.9 ms
// against 2.0 for its wgmma alone, bound by the shared-memory port (operand reads, the 4-byte copies' bank conflicts,
// the rounding: 0.6 ms of it); the epilogue, which nothing overlaps, is the rest. Chaining the normalise into this
// kernel, so that z is read back from L2, is slower in every form tried. The epilogue's moments are most of it (the
// kernel 4.05 ms, storing z alone 3.57, main loop 3.06), yet taken out of it (into the consumers' main loop, a warp
// of the producer; a fourth warpgroup does not compile) they cost more. The ring's fourth stage is worth 0.6 ms of
// the main loop at L2-19, so the staging tile stays one piece a warpgroup. Without autograd the forward runs this
// conv and the normalise on multiprocessors of their own in one launch: conv/convt_wgmma_infer.cuh.)
//
// Here: the constants, the geometry and the PTX the kernel uses (wgmma, mbarriers, bulk and asynchronous copies);
// the producers in conv/convt_wgmma_produce.cuh, the consumers and convt_wgmma_kernel in conv/convt_wgmma_consume.cuh.
namespace kgen {
namespace convt {

constexpr int kWgPixels = 256;                            // N of one wgmma: one consumer warpgroup's pixels
constexpr int kWgProducers = 1;                           // producer warpgroups
constexpr int kWgConsumers = 2;                           // consumer warpgroups
constexpr int kWgTilePixels = kWgPixels * kWgConsumers;   // a tile's pixels
constexpr int kWgChannels = 64;                           // M: a tile's output channels
constexpr int kWgChunk = 8;                               // K of one wgmma: input channels a stage
constexpr int kWgMinStages = 2, kWgMaxStages = 4;         // the ring: as many as shared memory holds
constexpr int kWgMinRawSlots = 2, kWgMaxRawSlots = 6;     // the bulk input path's raw slots (wgmma_produce_bulk)
constexpr int kRawChannels = 4;                           // a raw slot: half a chunk, one 16-byte unit's channels
constexpr int kPassBatch = 8;                             // the bulk path's sweep: positions a thread has in flight
constexpr int kWgThreads = 128 * (kWgProducers + kWgConsumers);  // the producers first

// Where a problem's frame and tiles fall; planned on the host.
struct WgmmaGeometry {
  int pitch;          // Q
  int pad_top;        // PH
  int pad_left;       // PW
  int positions;      // P
  int tiles;          // pixel tiles a sample
  int chunks;         // K chunks: ceil(C_in / 8)
  int channel_tiles;  // ceil(C_out / 64)
  int stages;         // the ring's length
  int chunks_in_flight;  // a producer thread's chunks of copies in flight as it issues the next: 2 or 3
  bool l2_prefetch;   // channels-last input: each copy asks L2 for the position's 256 bytes (the later chunks');
                      // no faster: 3.80-3.86 ms with or without (H100, L2-19); the kernels emitted leave it off
  int raw_slots;      // > 0: the NCHW input arrives by bulk copies into this many raw slots (wgmma_produce_bulk)
  int raw_pitch;      // floats a channel row of a raw slot: >= P + 3, a multiple of 4
  int64_t raw_offset; // floats from the start of shared memory to the first raw slot
  int64_t work;       // tiles in all: batch x channel tiles x pixel tiles
  int64_t stage_floats;
  int64_t smem_bytes;
};

// float32 -> TF32 (19 bits), to nearest with ties to even, as cuDNN's TF32 kernels round both operands at L2-19's
// shape (H100: cuDNN is 2.5e-6 from a float64 conv of operands so rounded, 4.6e-5
// from ties-away ones, 8e-4 from truncated ones; KernelBench compares at 1e-4). In integer arithmetic: add half a
// TF32 ulp less one, plus the kept last bit, to the magnitude, then drop the 13 low bits (cvt.rna, ties away, is
// itself ~6 instructions in SASS): tf32_nearest_bits. Exact for every finite value and infinity; a NaN whose payload
// lies only in the low 13 bits becomes infinity, as the tensor cores, which ignore those bits, would read it anyway.
__device__ __forceinline__ float tf32_nearest_bits(float v) {
  const uint32_t bits = __float_as_uint(v);
  return __uint_as_float((bits + 0xFFFu + ((bits >> 13) & 1u)) & 0xFFFFE000u);
}
// The same value: on sm_90 by PTX's cvt.rn.tf32.f32, one instruction (F2FP.TF32.F32.PACK_B) against the integer
// form's 4 (the GPU test test_tf32_rounding_by_cvt_rn_keeps_tf32_nearests_value compares the two on ties, edges and
// 4 M random bit patterns).
__device__ __forceinline__ float tf32_nearest(float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t r;
  asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
  return __uint_as_float(r);
#else
  return tf32_nearest_bits(v);
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
    out[i] = tf32_nearest(v);
  }
}

// ---- mbarriers, named barriers, bulk copies (sm_90a; the kernel body is guarded) ----
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t arrivals) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
// The bytes a bulk copy will count down on `bar` in its current phase.
__device__ __forceinline__ void mbar_expect_bytes(uint32_t bar, uint32_t bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.expect_tx.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
// A conv block's ring: `full` (every producer thread, and the weights' bulk copy) and `empty` (every consumer warp)
// barriers of each stage, 8 bytes apart.
__device__ __forceinline__ void wgmma_init_ring(uint32_t full, uint32_t empty, int stages) {
  for (int i = 0; i < stages; ++i) {
    mbar_init(full + 8 * i, 128 * kWgProducers);
    mbar_init(empty + 8 * i, 4 * kWgConsumers);
  }
}
// The bulk input path's raw slots: one arrival (the thread that issues the copies) and their bytes each.
__device__ __forceinline__ void wgmma_init_raw(uint32_t raw_full, int slots) {
  for (int i = 0; i < slots; ++i) mbar_init(raw_full + 8 * i, 1);
}
// Spins until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}
// Whether the phase of parity `parity` has completed, without waiting.
__device__ __forceinline__ bool mbar_test(uint32_t bar, uint32_t parity) {
  uint32_t done = 1;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
#endif
  return done != 0;
}

// global -> shared, one contiguous run (16-byte aligned, a multiple of 16 bytes), completion counted on `bar`.
__device__ __forceinline__ void bulk_copy_to_shared(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
#endif
}
// This thread's arrival on `bar`, and the bytes bulk copies will count down on it in this phase.
__device__ __forceinline__ void mbar_arrive_expect_bytes(uint32_t bar, uint32_t bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
// A barrier among `threads` threads (whole warps) of the block; id 0 is __syncthreads'.
__device__ __forceinline__ void named_barrier(int id, int threads) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}
// A tile of the persistent schedule: sample, channel tile, pixel tile. Consecutive tiles are neighbouring pixel
// tiles of one sample, so blocks running side by side share their halo rows in L2.
struct WgmmaTile {
  int n, ctile, tile, f0;
  __device__ __forceinline__ WgmmaTile(int64_t t, const WgmmaGeometry& g) {
    tile = static_cast<int>(t % g.tiles);
    const int64_t rest = t / g.tiles;
    ctile = static_cast<int>(rest % g.channel_tiles);
    n = static_cast<int>(rest / g.channel_tiles);
    f0 = tile * kWgTilePixels;
  }
};

// kPart: 0 the whole kernel. For timing only: 1 the main loop alone (no epilogue); 2 the epilogue alone (on zero
// accumulators, nothing loaded); the main loop with the producer filling each stage once, then loading only:
// 4 nothing (the wgmma alone), 5 the weights, 6 the input; 7 the whole kernel but the epilogue's stores of z;
// 8 and 9, the bulk input path's main loop with each stage's weights copied once, and without its transposing sweep.

// 4 bytes from shared memory at a 32-bit shared address.
__device__ __forceinline__ float load_shared(uint32_t address) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(address) : "memory");
  return v;
}
// 4 bytes global -> shared without registers; src_bytes 0 writes a zero (padding, a missing channel).
__device__ __forceinline__ void copy4_async(uint32_t dst, const float* src, uint32_t src_bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
#endif
}
// 16 bytes global -> shared (both 16-byte aligned), L2 only; src_bytes 0 writes zeros.
__device__ __forceinline__ void copy16_async(uint32_t dst, const float* src, uint32_t src_bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
#endif
}
// The same, L2 fetching the 256 bytes around src from memory (for the copies of later chunks).
__device__ __forceinline__ void copy16_async_prefetch(uint32_t dst, const float* src, uint32_t src_bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
#endif
}
// An L2 eviction policy for a whole access (createpolicy): evict first, or last.
__device__ __forceinline__ uint64_t l2_policy_evict_first() {
  uint64_t policy = 0;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
#endif
  return policy;
}
__device__ __forceinline__ uint64_t l2_policy_evict_last() {
  uint64_t policy = 0;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
#endif
  return policy;
}
// copy4_async with an L2 eviction policy.
__device__ __forceinline__ void copy4_async_policy(uint32_t dst, const float* src, uint32_t src_bytes,
                                                   uint64_t policy) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], 4, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes), "l"(policy)
               : "memory");
#endif
}
// A 16-byte global store with an L2 eviction policy.
__device__ __forceinline__ void store16_policy(float* dst, float4 v, uint64_t policy) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1, %2, %3, %4}, %5;\n" ::"l"(dst), "f"(v.x), "f"(v.y),
               "f"(v.z), "f"(v.w), "l"(policy)
               : "memory");
#else
  (void)policy;
  *reinterpret_cast<float4*>(dst) = v;
#endif
}
__device__ __forceinline__ void copy_async_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int kPending>
__device__ __forceinline__ void copy_async_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

}  // namespace convt
}  // namespace kgen
