// ---- conv/convt_igemm.cuh: ConvTranspose2d as an implicit GEMM on the tensor cores, with the bias, an element-wise op
// and the GroupNorm moments of op(output) in its epilogue (L2-19 `--conv fused`) ----
//
// The GEMM. For one sample, output pixel m = (oh, ow) and output channel co:
//   z[co, m] = bias[co] + sum over k = (tap, ci) of A[m, k] * B[k, co]
//   A[m, (tap, ci)] = x[ci, ih, iw] where ih = (oh + pad_h - kh) / stride_h (and the same for w) when that
//                     division is exact and lands inside the input, 0 otherwise     (gathered, never stored)
//   B[(tap, ci), co] = weight[ci, co, kh, kw], taken from `wt`, the weight laid out (tap, ci, co) once per call
// K runs tap-major: one chunk of kBK input channels of one tap at a time, so each thread's pixel, its input
// row and column for the tap, and its validity are computed once per tap, and stepping ci is one add.
//
// The tile. A block owns kBM consecutive output pixels of one sample (a tile may wrap across output rows:
// m is the flat index oh * out_w + ow) and kBN output channels; its warps split that as kWarpsM x kWarpsN,
// each warp a grid of m16n8k8 TF32 mma.sync tiles. Operands go global -> shared memory by cp.async (4-byte
// copies, zero-filled where a tap reads nothing) through kStages buffers: kStages - 1 chunks are in flight
// while the tensor cores work on one, and one barrier per chunk. (Loads staged in registers with one chunk of
// lookahead leave every chunk waiting on its loads: 42.6 TFLOP/s, H100.)
// Each thread rounds the operands it copied to TF32 in place once they land (kRoundNearest: cvt.rna, round
// to nearest, ties away, the nearer to cuDNN's TF32 on the H100; otherwise nothing is done and the tensor
// cores drop the low 13 bits of the raw float bits). Rows are padded by 8 floats, so the fragment loads of a warp hit 32 distinct banks.
//
// The epilogue. The accumulators (+ bias) go through shared memory so that each output channel's kBM
// pixels leave as one coalesced run; on the way every thread folds op(z) of the elements it stores into
// the moments of their GroupNorm group (Welford), the block combines them per group in a fixed tree, and
// writes one partial per (sample, group, pixel tile, channel tile). convt_moments_finalize merges those
// in double in a fixed order (warp_merge): deterministic. z (conv + bias, before op) is what the block
// stores: the normalise sweep and the backward recompute op(z), as the rest of kgen's GroupNorm does.
//
// Portable path: below sm_80 (no TF32 mma) the same tiles are multiplied with FFMA in float32.
namespace kgen {
namespace convt {

__device__ __forceinline__ uint32_t to_tf32(float v, bool round_nearest) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (round_nearest) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
  }
#endif
  (void)round_nearest;
  return __float_as_uint(v);
}

// d += A (16x8, row) * B (8x8, col), TF32 in, float32 accumulate.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// Where accumulator r of a warp's mma tile (i, j) sits in the block tile: the m16n8 C fragment gives lane
// (g, t) rows g and g + 8, columns 2t and 2t + 1.
__device__ __forceinline__ int acc_row(int warp_m, int i, int g, int r) { return warp_m + i * 16 + g + (r >= 2 ? 8 : 0); }
__device__ __forceinline__ int acc_col(int warp_n, int j, int t, int r) { return warp_n + j * 8 + 2 * t + (r & 1); }

template <int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages>
struct Tiles {
  static constexpr int kThreads = kWarpsM * kWarpsN * kWarpSize;
  static constexpr int kWarpM = kBM / kWarpsM, kWarpN = kBN / kWarpsN;  // one warp's tile
  static constexpr int kMmaM = kWarpM / 16, kMmaN = kWarpN / 8;          // its mma tiles
  static constexpr int kPadA = kBM + 8, kPadB = kBN + 8, kPadC = kBM + 4;
  static constexpr int kLoadsA = kBM * kBK / kThreads, kLoadsB = kBK * kBN / kThreads;
  static constexpr int kStageFloats = kBK * kPadA + kBK * kPadB;
  static constexpr int kSmemFloats = kStages * kStageFloats > kBN * kPadC ? kStages * kStageFloats : kBN * kPadC;
  static constexpr int kSmemBytes = kSmemFloats * 4;  // dynamic shared memory of one block
  static_assert(kWarpM % 16 == 0 && kWarpN % 8 == 0 && kBK % 8 == 0, "mma tiles are 16 x 8 x 8");
  static_assert(kThreads % kBM == 0, "each thread gathers A for one fixed pixel");
  static_assert(kThreads % kBN == 0, "each thread loads B for one fixed output channel");
  static_assert((kBM * kBK) % kThreads == 0 && (kBK * kBN) % kThreads == 0, "loads split evenly");
  static_assert(kStages >= 2, "a stage in flight while one is multiplied");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of one block");
};

// The pixel a thread gathers A for, and where its input row/column is for the current tap.
struct Gather {
  int oh, ow;     // output pixel
  bool pixel;     // inside the output
  int64_t offset; // x offset of (ci = 0, ih, iw) for the current tap, or -1 when the tap reads nothing

  __device__ __forceinline__ void at_tap(const ConvShape& s, int kh, int kw) {
    offset = -1;
    if (!pixel) return;
    const int th = oh + s.pad_h - kh, tw = ow + s.pad_w - kw;
    if (th < 0 || tw < 0 || th % s.stride_h != 0 || tw % s.stride_w != 0) return;
    const int ih = th / s.stride_h, iw = tw / s.stride_w;
    if (ih >= s.in_h || iw >= s.in_w) return;
    offset = int64_t(ih) * s.in_w + iw;
  }
};

template <class Op, int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages, bool kRoundNearest>
__global__ void __launch_bounds__(Tiles<kBM, kBN, kBK, kWarpsM, kWarpsN, kStages>::kThreads)
convt_forward_kernel(const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ bias,
                     float* __restrict__ z, Moments* __restrict__ partial, ConvShape s, Op op) {
  using T = Tiles<kBM, kBN, kBK, kWarpsM, kWarpsN, kStages>;
  extern __shared__ float4 convt_smem[];
  float* smem = reinterpret_cast<float*>(convt_smem);
  const int tid = threadIdx.x, lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int g = lane >> 2, t = lane & 3;  // mma fragment coordinates
  const int warp_m = (warp % kWarpsM) * T::kWarpM, warp_n = (warp / kWarpsM) * T::kWarpN;
  const int n = blockIdx.z;
  const int64_t m0 = int64_t(blockIdx.x) * kBM;
  const int co0 = blockIdx.y * kBN;
  const int64_t plane = s.out_plane();

  // This thread's A pixel (fixed for the whole K loop) and its B column.
  Gather gather;
  {
    const int64_t m = m0 + tid % kBM;
    gather.pixel = m < plane;
    gather.oh = gather.pixel ? static_cast<int>(m / s.out_w) : 0;
    gather.ow = gather.pixel ? static_cast<int>(m - int64_t(gather.oh) * s.out_w) : 0;
  }
  const int a_k0 = tid / kBM;                 // A rows this thread loads: a_k0 + i * (kThreads / kBM)
  constexpr int kAStep = T::kThreads / kBM;
  const int b_col = tid % kBN, b_k0 = tid / kBN;
  constexpr int kBStep = T::kThreads / kBN;
  const bool b_valid_col = co0 + b_col < s.out_channels;
  const float* x_n = x + int64_t(n) * s.in_channels * s.in_plane();

  float acc[T::kMmaM][T::kMmaN][4];
#pragma unroll
  for (int i = 0; i < T::kMmaM; ++i)
#pragma unroll
    for (int j = 0; j < T::kMmaN; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

  const int ci_chunks = (s.in_channels + kBK - 1) / kBK;
  const int chunks = s.taps() * ci_chunks;

  // Starts chunk `chunk`'s copies into `stage`. Chunks are started in order, so the gather's tap state
  // (set at each tap's first chunk) always belongs to the chunk being started.
  auto start_chunk = [&](int chunk, int stage) {
    float* as = smem + stage * T::kStageFloats;
    float* bs = as + kBK * T::kPadA;
    const int tap = chunk / ci_chunks, ci0 = (chunk - tap * ci_chunks) * kBK;
    if (chunk % ci_chunks == 0) gather.at_tap(s, tap / s.kernel_w, tap % s.kernel_w);
#pragma unroll
    for (int i = 0; i < T::kLoadsA; ++i) {
      const int ci = ci0 + a_k0 + i * kAStep;
      const bool valid = gather.offset >= 0 && ci < s.in_channels;
      copy4_or_zero(as + (a_k0 + i * kAStep) * T::kPadA + tid % kBM,
                    valid ? x_n + int64_t(ci) * s.in_plane() + gather.offset : x_n, valid);
    }
#pragma unroll
    for (int i = 0; i < T::kLoadsB; ++i) {
      const int ci = ci0 + b_k0 + i * kBStep;
      const bool valid = b_valid_col && ci < s.in_channels;
      copy4_or_zero(bs + (b_k0 + i * kBStep) * T::kPadB + b_col,
                    valid ? wt + (int64_t(tap) * s.in_channels + ci) * s.out_channels + co0 + b_col : wt, valid);
    }
  };
  // Rounds this thread's own copies of a landed chunk to TF32 in place (cvt.rna is a few integer
  // instructions: once per element here, not once per warp that reads it as a fragment).
  auto round_chunk = [&](int stage) {
    if (!kRoundNearest) return;
    float* as = smem + stage * T::kStageFloats;
    float* bs = as + kBK * T::kPadA;
#pragma unroll
    for (int i = 0; i < T::kLoadsA; ++i) {
      float* v = as + (a_k0 + i * kAStep) * T::kPadA + tid % kBM;
      *v = __uint_as_float(to_tf32(*v, true));
    }
#pragma unroll
    for (int i = 0; i < T::kLoadsB; ++i) {
      float* v = bs + (b_k0 + i * kBStep) * T::kPadB + b_col;
      *v = __uint_as_float(to_tf32(*v, true));
    }
  };
  auto compute_chunk = [&](int stage) {
    const float* as = smem + stage * T::kStageFloats;
    const float* bs = as + kBK * T::kPadA;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 8) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      uint32_t a[T::kMmaM][4], b[T::kMmaN][2];
#pragma unroll
      for (int i = 0; i < T::kMmaM; ++i) {
        const int m = warp_m + i * 16 + g;
        a[i][0] = __float_as_uint(as[(kk + t) * T::kPadA + m]);
        a[i][1] = __float_as_uint(as[(kk + t) * T::kPadA + m + 8]);
        a[i][2] = __float_as_uint(as[(kk + t + 4) * T::kPadA + m]);
        a[i][3] = __float_as_uint(as[(kk + t + 4) * T::kPadA + m + 8]);
      }
#pragma unroll
      for (int j = 0; j < T::kMmaN; ++j) {
        const int c = warp_n + j * 8 + g;
        b[j][0] = __float_as_uint(bs[(kk + t) * T::kPadB + c]);
        b[j][1] = __float_as_uint(bs[(kk + t + 4) * T::kPadB + c]);
      }
#pragma unroll
      for (int i = 0; i < T::kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < T::kMmaN; ++j) mma_tf32(acc[i][j], a[i], b[j]);
#else
      // FFMA path: the same accumulator ownership as the mma fragments (rows g, g + 8; columns 2t, 2t + 1).
#pragma unroll
      for (int k = 0; k < 8; ++k)
#pragma unroll
        for (int i = 0; i < T::kMmaM; ++i)
#pragma unroll
          for (int j = 0; j < T::kMmaN; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
              acc[i][j][r] = fmaf(as[(kk + k) * T::kPadA + acc_row(warp_m, i, g, r)],
                                  bs[(kk + k) * T::kPadB + acc_col(warp_n, j, t, r)], acc[i][j][r]);
            }
#endif
    }
  };

  // Main loop: chunks c + 1 .. c + kStages - 1 travel global -> shared while the tensor cores multiply
  // chunk c. One commit group per chunk (empty past the last), so "all but the newest kStages - 2 groups
  // done" always means "chunk c has landed". The barrier after that wait also tells every thread that all
  // are done with chunk c - 1, whose stage the next copies then overwrite.
#pragma unroll
  for (int c = 0; c < kStages - 1; ++c) {
    if (c < chunks) start_chunk(c, c);
    copies_commit();
  }
  for (int c = 0; c < chunks; ++c) {
    copies_wait<kStages - 2>();
    round_chunk(c % kStages);
    __syncthreads();
    const int ahead = c + kStages - 1;
    if (ahead < chunks) start_chunk(ahead, ahead % kStages);
    copies_commit();
    compute_chunk(c % kStages);
  }
  copies_done();
  __syncthreads();  // the epilogue reuses the stages

  // Epilogue: z = acc + bias into shared memory as [channel][pixel].
  float* cs = smem;
#pragma unroll
  for (int i = 0; i < T::kMmaM; ++i)
#pragma unroll
    for (int j = 0; j < T::kMmaN; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int c = acc_col(warp_n, j, t, r);
        const float b = co0 + c < s.out_channels ? __ldg(bias + co0 + c) : 0.f;
        // a separately rounded add, as PyTorch's bias add after the convolution
        cs[c * T::kPadC + acc_row(warp_m, i, g, r)] = __fadd_rn(acc[i][j][r], b);
      }
  __syncthreads();

  // Store z (each channel's pixels as one run) and fold op(z) into the moments of its group. The groups
  // this tile touches are walked in order; every thread takes the same (channel, pixel) elements in each,
  // so the per-group block combine is a fixed tree: bitwise reproducible.
  const int cpg = s.channels_per_group();
  const int c_end = min(kBN, s.out_channels - co0);
  const int valid_m = plane - m0 < kBM ? static_cast<int>(plane - m0) : kBM;
  const int tiles_m = static_cast<int>((plane + kBM - 1) / kBM), tiles_n = gridDim.y;
  for (int c_begin = 0; c_begin < c_end;) {
    const int grp = (co0 + c_begin) / cpg;
    const int c_stop = min(c_end, (grp + 1) * cpg - co0);
    Moments mom{0.f, 0.f, 0.f};
    const int elems = (c_stop - c_begin) * kBM;
    for (int e = tid; e < elems; e += T::kThreads) {
      const int c = c_begin + e / kBM, m = e % kBM;
      if (m < valid_m) {
        const float v = cs[c * T::kPadC + m];
        z[(int64_t(n) * s.out_channels + co0 + c) * plane + m0 + m] = v;
        accumulate1(mom, op(v));
      }
    }
    mom = block_combine<T::kThreads>(mom);
    if (tid == 0) {
      partial[((int64_t(n) * s.groups + grp) * tiles_m + blockIdx.x) * tiles_n + blockIdx.y] = mom;
    }
    c_begin = c_stop;
    __syncthreads();  // block_combine's shared slots are reused by the next group
  }
}

// conv_transpose2d(x, weight, bias) -> z, and the GroupNorm statistics of op(z): {z, mean (N, G, 2), rstd (N, G)}.
template <class Op, int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages, bool kRoundNearest>
std::vector<at::Tensor> convt_moments(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                                      int64_t groups, double eps, std::vector<int64_t> stride,
                                      std::vector<int64_t> padding, std::vector<int64_t> output_padding, Op op) {
  using T = Tiles<kBM, kBN, kBK, kWarpsM, kWarpsN, kStages>;
  const ConvShape s = check_convt(input, weight, bias, groups, stride, padding, output_padding);
  const c10::cuda::CUDAGuard device_guard(input.device());
  const auto x = input.contiguous();
  const auto wt = weight.permute({2, 3, 0, 1}).contiguous();  // (kH, kW, C_in, C_out): B's rows contiguous in co
  const auto b = bias.contiguous();
  auto z = at::empty({s.batch, s.out_channels, s.out_h, s.out_w}, x.options());
  auto mean = at::empty({s.batch, s.groups, 2}, x.options());
  auto rstd = at::empty({s.batch, s.groups}, x.options());
  if (s.batch == 0) return {z, mean, rstd};
  const int64_t tiles_m = (s.out_plane() + kBM - 1) / kBM, tiles_n = (s.out_channels + kBN - 1) / kBN;
  TORCH_CHECK(tiles_m <= 2147483647 && tiles_n <= 65535, "kgen: ConvTranspose2d output too large for one launch");
  const int64_t per_row = tiles_m * tiles_n;
  TORCH_CHECK(per_row <= 2147483647, "kgen: too many output tiles per sample");
  // Partials a channel tile never writes (it does not touch the group) must read as empty: zeroed.
  auto partial = at::zeros({int64_t(s.batch) * s.groups * per_row * int64_t(sizeof(Moments) / sizeof(float))},
                           x.options());
  auto* partial_ptr = reinterpret_cast<Moments*>(partial.data_ptr<float>());
  const auto stream = at::cuda::getCurrentCUDAStream();
  const dim3 grid(static_cast<unsigned>(tiles_m), static_cast<unsigned>(tiles_n), static_cast<unsigned>(s.batch));
  const auto kernel = convt_forward_kernel<Op, kBM, kBN, kBK, kWarpsM, kWarpsN, kStages, kRoundNearest>;
  TORCH_CHECK(T::kSmemBytes <= max_block_smem(x.get_device()), "kgen: this ConvTranspose2d configuration takes ",
              str(T::kSmemBytes), " bytes of shared memory per block; this GPU allows ",
              str(max_block_smem(x.get_device())), " (fewer stages or a smaller BK fit)");
  if (T::kSmemBytes > 48 * 1024) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes));
  }
  kernel<<<grid, T::kThreads, T::kSmemBytes, stream>>>(x.data_ptr<float>(), wt.data_ptr<float>(), b.data_ptr<float>(),
                                                      z.data_ptr<float>(), partial_ptr, s, op);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  finalize_moments(partial_ptr, per_row, s, eps, mean, rstd, stream);
  return {z, mean, rstd};
}

}  // namespace convt
}  // namespace kgen
