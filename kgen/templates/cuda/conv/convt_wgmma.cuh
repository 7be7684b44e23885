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

// The producer warpgroup: for each of the block's tiles, every frame position's offset in an input plane (-1:
// padding), then every chunk into the next stage of the ring once the consumers have released it. A chunk's
// input arrives by 4-byte asynchronous copies, a thread its own positions (8 channels each, into its two 16-byte
// units); once they have landed the thread rounds those units to TF32 in place and hands the stage over. The
// rounding of chunk k waits until chunk k + 1's copies are issued, so two chunks are in flight a thread.
// kInputCL: the input is channels-last (NHWC), so a position's 4 channels of a unit are 16 contiguous bytes: one
// 16-byte copy a unit (C_in % 4 == 0), unit u = 2 p + half of the chunk a thread's if u = tid mod 128: a warp reads
// 32 contiguous bytes a position. (A quarter-warp filling 128 contiguous bytes of one half instead measured slower:
// H100, the input gradient at L2-19's shape, main loop 3.72 ms against 3.34.)
// kRoundInput false: no rounding sweep, the tensor cores truncate the input (the input gradient's grad_z).
// kEvictFirst: the NCHW input's copies ask L2 to evict their lines first (convt_wgmma_infer keeps its values there).
// The block takes tiles first, first + step, ... (the persistent schedule: blockIdx.x and gridDim.x, or the conv
// blocks' own numbering in convt_wgmma_infer_kernel).
template <int kPart, bool kInputCL, bool kRoundInput, bool kEvictFirst = false>
__device__ __forceinline__ void wgmma_produce(const float* __restrict__ x, const float* __restrict__ wprep,
                                              const ConvShape& s, const WgmmaGeometry& g, float* smem, int* pos_off,
                                              uint32_t full, uint32_t empty, int64_t first, int64_t step) {
  constexpr int kThreads = 128 * kWgProducers;
  const uint64_t evict_first = kEvictFirst ? l2_policy_evict_first() : 0;
  const int tid = threadIdx.x;
  const int taps = s.taps();
  const int in_plane = static_cast<int>(s.in_plane());
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t weight_bytes = 2048u * taps;
  // Rounds this thread's units of a landed stage and hands it to the consumers.
  auto hand_over = [&](int stage) {
    float4* xs = reinterpret_cast<float4*>(smem + stage * g.stage_floats);
    auto round_unit = [&](int at) {
      const float4 v = xs[at];
      xs[at] = make_float4(tf32_nearest(v.x), tf32_nearest(v.y), tf32_nearest(v.z), tf32_nearest(v.w));
    };
    if constexpr (!kRoundInput) {
      (void)round_unit;
    } else if constexpr (kInputCL) {
      for (int u = tid; u < 2 * g.positions; u += kThreads) round_unit((u & 1) * g.positions + (u >> 1));
    } else {
#pragma unroll
      for (int half = 0; half < 2; ++half)
        for (int p = tid; p < g.positions; p += kThreads) round_unit(half * g.positions + p);  // this thread's copies
    }
    fence_async_shared();  // this thread's stores, visible to the tensor cores once the consumers acquire
    mbar_arrive(full + 8 * stage);
  };
  // The stages whose copies are in flight, not yet handed over, oldest first (one commit group each); scalars,
  // not an array, which a run-time index would put in local memory.
  int pending0 = -1, pending1 = -1, pending2 = -1, in_flight = 0;
  auto retire_oldest = [&]() {  // waits for the oldest in-flight chunk's copies, rounds them, hands the stage over
    if (in_flight >= 3) {
      copy_async_wait<2>();
    } else if (in_flight == 2) {
      copy_async_wait<1>();
    } else {
      copy_async_wait<0>();
    }
    hand_over(pending0);
    pending0 = pending1, pending1 = pending2, --in_flight;
  };
  int stage = 0, filled = 0;
  uint32_t phase = 0;
  for (int64_t t = first; t < g.work; t += step) {
    const WgmmaTile tile(t, g);
    named_barrier(1, kThreads);  // every producer thread is done with the previous tile's offsets
    for (int p = tid; p < g.positions; p += kThreads) {
      const int at = tile.f0 + p, r = at / g.pitch;
      const int ih = r - g.pad_top, iw = at - r * g.pitch - g.pad_left;
      pos_off[p] = ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w ? ih * s.in_w + iw : -1;
    }
    named_barrier(1, kThreads);
    const float4* wsrc = reinterpret_cast<const float4*>(wprep) + int64_t(tile.ctile) * g.chunks * taps * 128;
    for (int c = 0; c < g.chunks; ++c) {
      // The stage waited for below held chunk c - S, which the consumers release once they have chunk c - S + 1:
      // that one, and all before it, must have been handed over (at most S - 2 chunks still in flight).
      while (in_flight > g.stages - 2) retire_oldest();
      mbar_wait(empty + 8 * stage, phase ^ 1);  // a fresh barrier counts as released
      const uint32_t full_stage = full + 8 * stage;
      const bool first_fill = filled < g.stages;
      ++filled;
      const uint32_t xs_addr = smem_base + static_cast<uint32_t>(stage * g.stage_floats * 4);
      if ((kPart != 4 && kPart != 6) || first_fill) {
        if (tid == 0) {
          mbar_expect_bytes(full_stage, weight_bytes);
          bulk_copy_to_shared(xs_addr + 32u * g.positions, wsrc + int64_t(c) * taps * 128, weight_bytes, full_stage);
        }
      }
      if (kInputCL && ((kPart != 4 && kPart != 5) || first_fill)) {
        const float* xn = x + int64_t(tile.n) * in_plane * s.in_channels + c * kWgChunk;
        const bool second = c * kWgChunk + 4 < s.in_channels;  // the chunk's channels 4-7 exist (C_in % 4 == 0)
        for (int u = tid; u < 2 * g.positions; u += kThreads) {
          const int p = u >> 1, half = u & 1, off = pos_off[p];
          const bool real = off >= 0 && (half == 0 || second);
          const uint32_t dst = xs_addr + 16u * (half * g.positions + p);
          const float* src = xn + (real ? int64_t(off) * s.in_channels + 4 * half : 0);
          if (g.l2_prefetch) {
            copy16_async_prefetch(dst, src, real ? 16u : 0u);
          } else {
            copy16_async(dst, src, real ? 16u : 0u);
          }
        }
      }
      if (!kInputCL && ((kPart != 4 && kPart != 5) || first_fill)) {
        const float* xc = x + (int64_t(tile.n) * s.in_channels + c * kWgChunk) * in_plane;
        const int channels = min(kWgChunk, s.in_channels - c * kWgChunk);
        for (int p = tid; p < g.positions; p += kThreads) {
          const int off = pos_off[p];
          const float* at = xc + max(off, 0);
#pragma unroll
          for (int ch = 0; ch < kWgChunk; ++ch) {
            const bool real = off >= 0 && ch < channels;
            const uint32_t dst = xs_addr + 16u * ((ch / 4) * g.positions + p) + 4u * (ch % 4);
            if constexpr (kEvictFirst) {
              copy4_async_policy(dst, at + (real ? ch : 0) * in_plane, real ? 4u : 0u, evict_first);
            } else {
              copy4_async(dst, at + (real ? ch : 0) * in_plane, real ? 4u : 0u);
            }
          }
        }
      }
      copy_async_commit();
      if (in_flight == 0) {
        pending0 = stage;
      } else if (in_flight == 1) {
        pending1 = stage;
      } else {
        pending2 = stage;
      }
      ++in_flight;
      while (in_flight >= g.chunks_in_flight) retire_oldest();  // keeps chunks_in_flight - 1 after this one's issue
      if (++stage == g.stages) stage = 0, phase ^= 1;
    }
  }
  while (in_flight > 0) retire_oldest();
}

// The bulk input path, for an NCHW input rounded to TF32 whose planes are whole 16-byte units
// (H_in W_in % 4 == 0) and a frame of at most 4096 positions a tile. The positions [f0, f0 + P) a tile stages are,
// where they are not padding, one contiguous run of each input plane (frame rows are input rows plus padding
// columns): tile_input_run finds it. One producer thread (the issuer) copies the runs of a half chunk (4 channels:
// one 16-byte unit a position), one bulk copy a channel, into a raw slot ([4 channels][raw_pitch], from the 16-byte
// unit that holds the run's first float), `raw_slots` half chunks ahead. The producer warpgroup then turns each
// landed slot into its half of the K-major stage the consumers read, a position at a time, kPassBatch positions a
// thread in flight: 4 loads of 4 bytes, 4 roundings (one F2FP each), one 16-byte store; a thread's positions are
// tid + 128 k, their raw offsets stepped by constants with a per-tile bit mask of the steps that wrap a row, padding
// positions zeroed from another. Against wgmma_produce's 4-byte copies, which land a warp's 32 positions of a channel
// 16 bytes apart (4-way bank conflicts), and its read-round-write sweep over every unit, the copies in flight are the
// raw slots', so the K-major ring keeps 3 stages (2 where 3 do not fit beside 2 slots).
// Measured (H100, L2-19): with this sweep (~20 instructions a position and half chunk, 8 in flight) the main loop
// takes 2.63 ms, against 2.08 without the sweep and 2.77 by the 4-byte copies: conv + moments 3.46 against 3.72. A
// sweep of quads (16-byte loads transposed in registers, stores rotated against bank conflicts, a division a quad:
// ~930 instructions a chunk a warp) holds the main loop at 3.49-3.67 ms against the copies' 2.94-3.00.
// The run of input positions (plane offsets) [lo, hi) a tile's frame positions read; empty where hi <= lo.
__device__ __forceinline__ void tile_input_run(const WgmmaTile& tile, const ConvShape& s, const WgmmaGeometry& g,
                                               int& lo, int& hi) {
  const int in_plane = static_cast<int>(s.in_plane());
  auto plane_offset = [&](int at, int column_bump) {  // of the first input position at or after frame position at
    const int r = at / g.pitch, ih = r - g.pad_top;
    const int iw = min(max(at - r * g.pitch - g.pad_left + column_bump, 0), s.in_w);
    return ih < 0 ? 0 : (ih >= s.in_h ? in_plane : ih * s.in_w + iw);
  };
  lo = plane_offset(tile.f0, 0);
  hi = plane_offset(tile.f0 + g.positions - 1, 1);  // one past the last position's
}

// kPart as wgmma_produce's (0, 1, 7), and for timing only: 8 the main loop with each stage's weights copied once;
// 9 the main loop without the transposing sweep (the raw slots still copied and waited for).
template <int kPart>
__device__ __forceinline__ void wgmma_produce_bulk(const float* __restrict__ x, const float* __restrict__ wprep,
                                                   const ConvShape& s, const WgmmaGeometry& g, float* smem,
                                                   uint32_t full, uint32_t empty, uint32_t raw_full, int64_t first,
                                                   int64_t step) {
  constexpr int kThreads = 128 * kWgProducers;
  constexpr int kIssuer = kThreads - 1;  // the thread that issues the bulk copies (in the warp with least to transpose)
  const int tid = threadIdx.x;
  const int taps = s.taps();
  const int64_t in_plane = s.in_plane();
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t weight_bytes = 2048u * taps;
  const int slot_floats = kRawChannels * g.raw_pitch;
  const int halves = 2 * g.chunks;  // raw items a tile: half chunks
  const int64_t items = first < g.work ? ((g.work - 1 - first) / step + 1) * halves : 0;
  // A thread's frame positions: tid + 128 k, k < mine. From one to the next: the frame row + row_step, the column
  // + col_step (one row more where it passes the pitch), the raw-slot offset + o_step (+ wrap_step more then).
  const int mine = max(0, min(32, (g.positions - tid + kThreads - 1) / kThreads));
  const int row_step = kThreads / g.pitch, col_step = kThreads - row_step * g.pitch;
  const int o_step = row_step * s.in_w + col_step, wrap_step = s.in_w - g.pitch;
  const uint32_t row_bytes = 4u * static_cast<uint32_t>(g.raw_pitch);  // a raw slot's channel rows apart
  // The issuer's cursor: the next item's tile, half chunk, raw slot, and its tile's run.
  int64_t next_item = 0, next_t = first;
  int next_h = 0, next_slot = 0, next_lo_unit = 0, next_n = 0;
  uint32_t next_bytes = 0;
  auto issue_next = [&]() {  // the runs of the next item into its raw slot
    if (next_h == 0) {  // a new tile: its sample and run, once
      const WgmmaTile tile(next_t, g);
      int lo, hi;
      tile_input_run(tile, s, g, lo, hi);
      next_n = tile.n;
      next_lo_unit = lo & ~3;
      next_bytes = hi > lo ? 4u * static_cast<uint32_t>((hi - next_lo_unit + 3) & ~3) : 0u;
    }
    const int channels = max(0, min(kRawChannels, s.in_channels - next_h * kRawChannels));
    const uint32_t bar = raw_full + 8 * next_slot;
    mbar_arrive_expect_bytes(bar, next_bytes * channels);
    if (next_bytes > 0) {
      const float* src = x + (int64_t(next_n) * s.in_channels + next_h * kRawChannels) * in_plane + next_lo_unit;
      const uint32_t dst = smem_base + 4u * static_cast<uint32_t>(g.raw_offset + next_slot * slot_floats);
      for (int ch = 0; ch < channels; ++ch) {
        bulk_copy_to_shared(dst + 4u * ch * g.raw_pitch, src + ch * in_plane, next_bytes, bar);
      }
    }
    ++next_item;
    if (++next_slot == g.raw_slots) next_slot = 0;
    if (++next_h == halves) next_h = 0, next_t += step;
  };
  if (tid == kIssuer) {
    while (next_item < min(int64_t(g.raw_slots), items)) issue_next();
  }
  int stage = 0, filled = 0, raw_slot = 0;
  uint32_t phase = 0, raw_phase = 0;
  for (int64_t t = first; t < g.work; t += step) {
    const WgmmaTile tile(t, g);
    int lo, hi;
    tile_input_run(tile, s, g, lo, hi);
    const int lo_unit = lo & ~3;
    // This thread's frame positions are tid + 128 k, k < `mine` (<= 32: P <= 4096 on this path). Each one's raw-slot
    // offset (input row x W_in + input column - the run's first unit) follows from the previous one's by o_step, or
    // by o_step + wrap_step where the frame column passes the pitch: bit k of `wraps`, tabulated once a tile with
    // `skip` (the padding among them, whose units are zeroed instead, and the bits from `mine` on), so that the sweep
    // steps without a division or a comparison.
    const int at_first = tile.f0 + tid;
    const int row_first = at_first / g.pitch, col_first = at_first - row_first * g.pitch;
    const int o_first = (row_first - g.pad_top) * s.in_w + col_first - g.pad_left - lo_unit;
    uint32_t padding = 0, wraps = 0;
    {
      int row = row_first, col = col_first;
      for (int k = 0; k < mine; ++k) {
        if (static_cast<unsigned>(row - g.pad_top) >= static_cast<unsigned>(s.in_h) ||
            static_cast<unsigned>(col - g.pad_left) >= static_cast<unsigned>(s.in_w)) {
          padding |= 1u << k;
        }
        col += col_step, row += row_step;
        if (col >= g.pitch) col -= g.pitch, ++row, wraps |= 2u << k;  // (bit 32 never read: k + 1 < mine <= 32)
      }
    }
    const uint32_t skip = padding | (mine < 32 ? ~0u << mine : 0u);
    const float4* wsrc = reinterpret_cast<const float4*>(wprep) + int64_t(tile.ctile) * g.chunks * taps * 128;
    for (int c = 0; c < g.chunks; ++c) {
      mbar_wait(empty + 8 * stage, phase ^ 1);  // a fresh barrier counts as released
      const uint32_t full_stage = full + 8 * stage;
      const uint32_t xs_addr = smem_base + static_cast<uint32_t>(stage * g.stage_floats * 4);
      const bool first_fill = filled < g.stages;
      ++filled;
      if (tid == kIssuer && (kPart != 8 || first_fill)) {
        mbar_expect_bytes(full_stage, weight_bytes);
        bulk_copy_to_shared(xs_addr + 32u * g.positions, wsrc + int64_t(c) * taps * 128, weight_bytes, full_stage);
      }
      float4* xs = reinterpret_cast<float4*>(smem + stage * g.stage_floats);
      for (uint32_t bits = kPart == 9 ? 0u : padding; bits != 0; bits &= bits - 1) {  // zeros: padding positions
        const int p = tid + (__ffs(bits) - 1) * kThreads;
        xs[p] = make_float4(0.f, 0.f, 0.f, 0.f);
        xs[g.positions + p] = make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll 1
      for (int half = 0; half < 2; ++half) {
        mbar_wait(raw_full + 8 * raw_slot, raw_phase);
        const float* raw = smem + g.raw_offset + raw_slot * slot_floats;
        const int channels = min(kRawChannels, s.in_channels - c * kWgChunk - half * kRawChannels);
        float4* unit = xs + half * g.positions;
        // The sweep, a position at a time, kPassBatch positions a thread in flight: 4 loads of 4 bytes (one a
        // channel row; a warp reads 32 consecutive floats of each, conflict-free), rounded to TF32 (one F2FP each),
        // one 16-byte store of the position's unit (a warp's 32 units are consecutive: conflict-free). Padding
        // positions are skipped (zeroed above). ~20 instructions a position and half chunk, against ~57 for a sweep
        // of quads (16-byte loads, a transpose in registers, a per-lane rotation of the stores against bank
        // conflicts, a division a quad).
        const uint32_t raw_addr = smem_base + 4u * static_cast<uint32_t>(raw - smem);
        auto stage_half = [&](auto all_channels) {
          constexpr bool kAllChannels = decltype(all_channels)::value;
          int o = o_first;
#pragma unroll 1
          for (int k = 0; k < mine; k += kPassBatch) {
            float v[kPassBatch][kRawChannels];
#pragma unroll
            for (int u = 0; u < kPassBatch; ++u) {
              if (u > 0 || k > 0) o += (wraps >> (k + u)) & 1u ? o_step + wrap_step : o_step;
              if (!((skip >> (k + u)) & 1u)) {
                const uint32_t at = raw_addr + 4u * static_cast<uint32_t>(o);
#pragma unroll
                for (int j = 0; j < kRawChannels; ++j) {
                  v[u][j] = kAllChannels || j < channels ? load_shared(at + j * row_bytes) : 0.f;
                }
              }
            }
#pragma unroll
            for (int u = 0; u < kPassBatch; ++u) {
              if (!((skip >> (k + u)) & 1u)) {
                unit[tid + (k + u) * kThreads] = make_float4(tf32_nearest(v[u][0]), tf32_nearest(v[u][1]),
                                                             tf32_nearest(v[u][2]), tf32_nearest(v[u][3]));
              }
            }
          }
        };
        if constexpr (kPart != 9) {  // timing only: 9 skips the sweep
          if (channels == kRawChannels) {
            stage_half(std::true_type{});
          } else {
            stage_half(std::false_type{});
          }
        }
        named_barrier(1, kThreads);  // every producer thread is done with the raw slot
        if (tid == kIssuer && next_item < items) issue_next();
        if (++raw_slot == g.raw_slots) raw_slot = 0, raw_phase ^= 1;
      }
      fence_async_shared();  // this thread's stores, visible to the tensor cores once the consumers acquire
      mbar_arrive(full_stage);
      if (++stage == g.stages) stage = 0, phase ^= 1;
    }
  }
}

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
