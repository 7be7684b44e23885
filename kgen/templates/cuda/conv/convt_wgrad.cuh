// ---- conv/convt_wgrad.cuh: the weight gradient of ConvTranspose2d at stride 1 on Hopper's warpgroup tensor cores
// (wgmma, sm_90a), from x in NCHW and grad_z channels-last, as the forward and the region backward leave them; and
// the conv's whole backward (convt_wgmma_conv_backward: this kernel, conv/convt_wgmma_host.cuh's input gradient, or
// cuDNN where they decline) ----
//
// The GEMM. With y[n, co, r, c] = sum x[n, ci, h, w] W[ci, co, kh, kw] over r = h - pad + kh, c = w - pad + kw:
//   dW[ci, co, kh, kw] = sum over (n, h, w) of gz[n, co, h - pad + kh, w - pad + kw] * x[n, ci, h, w]
// one GEMM a tap, M = 64 output channels, N = 64 input channels, K = the pixels (n, h, w). wgmma takes its TF32
// B operand K-major from shared memory: x's rows are K-major as NCHW stores them (4 pixels of one channel per
// 16 bytes), so x is staged as it lies, once. The tap's shift lands on A, which wgmma also takes from registers:
// each thread loads its A fragment from the staged grad_z row at any 4-byte offset (a descriptor could shift only
// by whole 16-byte units), so grad_z is staged once too, and no tap needs a copy of its own.
//
// The schedule. A consumer warpgroup per kernel column kw, holding kH accumulators of 64 x 64 (one a kernel row).
// The block walks grad_z rows r of a 64-column strip (kWgradCols x columns; grad_z's kW - 1 halo columns with it):
// for each k-step of 8 pixels a warpgroup loads A from grad_z row r shifted by kw once, and multiplies it with the
// x rows r + pad - kh, kh = 0 .. kH - 1: kH wgmma for one A load. x rows stay staged while a later grad_z row
// needs them (a ring of x rows: the newest kH form the window), so each x and grad_z element is copied into
// shared memory once per block (the window's first kH - 1 rows again where a block's run or a strip starts).
// - The producer warpgroup stages rows by 16-byte cp.async (x: [4-pixel group][channel][4], the no-swizzle
//   K-major layout; grad_z: [pixel][channel] with a pitch of 72 floats, so a warp's A loads hit 32 banks), zero
//   where a row, column or channel lies outside, and hands them over by mbarriers as conv/convt_wgmma_produce.cuh's producer
//   does (`full`: the 128 producer threads; `empty`: every consumer warp). A (grad_z) is rounded to TF32 to
//   nearest as it is loaded; x goes to the tensor cores as it lies, which drop its low 13 bits (truncation), unless
//   round_x asks for an in-place rounding sweep. Measured (H100, 8x64x256x256):
//   the sweep costs 0.63 ms of 2.99 and moves the largest error from 3.5e-4 to 2.5e-4 of max |dW|; cuDNN's own TF32
//   weight gradient, which truncates both operands (a mean signed error of -7.4e-4), is 6.7e-4 from float64.
// - K is split over the grid: each block takes a contiguous run of (sample, strip, grad_z row) steps of one channel
//   tile pair and writes its own partial dW; convt_wgrad_reduce_kernel adds the partials in block order
//   (deterministic, no atomics).
// Counted at L2-19's shape (H100): 628 GFLOP, 1.3 ms at the dense TF32 rate; x and grad_z read once, 4.4 GB,
// 1.4 ms at 3.1 TB/s. Shared memory a k-step of all three warpgroups: 18 KB of B reads and 6 KB of A loads against
// 288 tensor-core cycles, ~85 bytes a cycle of the port's 128, plus the staging.
namespace kgen {
namespace convt {

constexpr int kWgradCols = 64;            // x columns a strip: K of a row step (8 k-steps of 8 pixels)
constexpr int kWgradKSteps = kWgradCols / 8;
constexpr int kWgradChannels = 64;        // M (grad_z's channels) and N (x's channels) of a block
constexpr int kWgradMaxKernel = 3;        // consumer warpgroups (kernel columns) and accumulators (kernel rows)
constexpr int kWgradGzPitch = 72;         // floats a staged grad_z pixel: 72 = 8 mod 32, conflict-free A loads
constexpr int kWgradXSlotBytes = kWgradCols * kWgradChannels * 4;
constexpr int kWgradMaxXSlots = kWgradMaxKernel + 3, kWgradMaxGzSlots = 4;
constexpr int kWgradMaxThreads = 128 * (1 + kWgradMaxKernel);

struct WgradGeometry {
  int col_tiles;          // strips a sample: ceil(W_in / 64)
  int co_tiles, ci_tiles;
  int pairs;              // co_tiles x ci_tiles: a block works on one pair
  int blocks_per_pair;    // K split: partial dW a pair
  int64_t steps;          // row steps of a pair: batch x col_tiles x out_h
  int gz_cols;            // staged grad_z pixels a row: 64 + kW - 1
  int x_slots, gz_slots;  // the rings
  int64_t gz_slot_bytes;
  int64_t smem_bytes;
  bool round_x;           // round x to TF32 to nearest in shared memory (default: the tensor cores truncate it)
};

// d (64 x 64, this warpgroup's fragment) += A (64 x 8, registers) * B (8 x 64, descriptor), TF32 in, float32
// accumulate. A's fragment, as mma.m16n8k8's: warp w, lane l = 4 g + t holds rows 16 w + g (a0, a2) and
// 16 w + g + 8 (a1, a3), columns t (a0, a1) and t + 4 (a2, a3). d: rows 16 w + g (d[4 i], d[4 i + 1]) and
// 16 w + g + 8 (d[4 i + 2], d[4 i + 3]), columns 8 i + 2 t and the one after.
__device__ __forceinline__ void wgmma_m64n64k8_tf32_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "
      "%23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
#else
  (void)d, (void)a, (void)desc_b;
#endif
}

// A ring of shared-memory slots handed over by a full and an empty mbarrier each; both sides walk it in the same
// order, so a count of fills gives the slot and the parity.
struct WgradRing {
  uint32_t base, slot_bytes, full, empty;
  int slots, slot = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ WgradRing(uint32_t base_, uint32_t slot_bytes_, uint32_t full_, uint32_t empty_,
                                       int slots_)
      : base(base_), slot_bytes(slot_bytes_), full(full_), empty(empty_), slots(slots_) {}
  __device__ __forceinline__ void advance() {
    if (++slot == slots) slot = 0, phase ^= 1;
  }
  // The slot `back` fills before the current one (0 <= back < slots).
  __device__ __forceinline__ int before(int back) const { return slot >= back ? slot - back : slot - back + slots; }
  __device__ __forceinline__ uint32_t address(int at) const { return base + static_cast<uint32_t>(at) * slot_bytes; }
};

// A row step of a pair: sample, strip, grad_z row.
struct WgradStep {
  int n, strip, r;
  __device__ __forceinline__ WgradStep(int64_t i, const ConvShape& s, const WgradGeometry& g) {
    r = static_cast<int>(i % s.out_h);
    const int64_t rest = i / s.out_h;
    strip = static_cast<int>(rest % g.col_tiles);
    n = static_cast<int>(rest / g.col_tiles);
  }
};

// A producer thread's 16-byte unit u of an x slot: 4 pixels (group kg) of channel ci, at byte 1024 kg + 16 ci. A warp's
// 32 units are 8 channels x 4 groups: 64-byte runs of global memory, 128-byte runs of shared memory.
struct WgradXUnit {
  int kg, ci;
  __device__ __forceinline__ explicit WgradXUnit(int u)
      : kg(((u >> 5) & 3) * 4 + (u & 3)), ci((u >> 7) * 8 + ((u >> 2) & 7)) {}
  __device__ __forceinline__ uint32_t offset() const { return 1024u * kg + 16u * ci; }
};

// kPart: 0 the whole kernel; for timing only, 4 the producer filling each slot once and then handing slots over
// without copying (the wgmma and A loads alone).
template <int kPart>
__device__ __forceinline__ void wgrad_produce(const float* __restrict__ x, const float* __restrict__ gz,
                                              const ConvShape& s, const WgradGeometry& g, int co0, int ci0,
                                              int64_t begin, int64_t end, WgradRing xr, WgradRing zr) {
  constexpr int kThreads = 128;
  const int tid = threadIdx.x;
  // Up to 3 fills in flight (one commit group each), oldest first: the full barrier, and the x slot to round
  // (kNone: a grad_z slot, or nothing copied); scalars, not arrays (no local memory).
  constexpr uint32_t kNone = ~0u;
  uint32_t pend_bar0 = 0, pend_bar1 = 0, pend_bar2 = 0, pend_x0 = kNone, pend_x1 = kNone, pend_x2 = kNone;
  int in_flight = 0, x_filled = 0, gz_filled = 0;
  auto retire_oldest = [&]() {
    if (in_flight >= 3) {
      copy_async_wait<2>();
    } else if (in_flight == 2) {
      copy_async_wait<1>();
    } else {
      copy_async_wait<0>();
    }
    if (pend_x0 != kNone && g.round_x) {  // this thread's own units of an x slot, rounded in place
      for (int u = tid; u < kWgradCols * kWgradChannels / 4; u += kThreads) {
        float4* at = reinterpret_cast<float4*>(__cvta_shared_to_generic(pend_x0 + WgradXUnit(u).offset()));
        const float4 v = *at;
        *at = make_float4(tf32_nearest(v.x), tf32_nearest(v.y), tf32_nearest(v.z), tf32_nearest(v.w));
      }
    }
    fence_async_shared();  // visible to the tensor cores once the consumers acquire the slot
    mbar_arrive(pend_bar0);
    pend_bar0 = pend_bar1, pend_x0 = pend_x1, pend_bar1 = pend_bar2, pend_x1 = pend_x2, --in_flight;
  };
  auto push = [&](uint32_t bar, uint32_t x_slot) {
    copy_async_commit();
    if (in_flight == 0) {
      pend_bar0 = bar, pend_x0 = x_slot;
    } else if (in_flight == 1) {
      pend_bar1 = bar, pend_x1 = x_slot;
    } else {
      pend_bar2 = bar, pend_x2 = x_slot;
    }
    ++in_flight;
    while (in_flight > 2) retire_oldest();
  };
  // Takes the ring's current slot once the consumers have released it. Waiting with fills of its own still
  // unhanded could wait on the consumers waiting on those: hand them over first.
  auto acquire = [&](WgradRing& ring) {
    const uint32_t bar = ring.empty + 8u * ring.slot;
    if (!mbar_test(bar, ring.phase ^ 1)) {  // a fresh barrier counts as released
      while (in_flight > 0) retire_oldest();
      mbar_wait(bar, ring.phase ^ 1);
    }
  };
  auto fill_x = [&](int n, int strip, int h) {
    acquire(xr);
    const uint32_t dst = xr.address(xr.slot);
    if (kPart != 4 || x_filled < g.x_slots) {
      const int w0 = strip * kWgradCols;
      const bool row = h >= 0 && h < s.in_h;
      const float* xrow = x + ((int64_t(n) * s.in_channels + ci0) * s.in_h + (row ? h : 0)) * s.in_w + w0;
      for (int u = tid; u < kWgradCols * kWgradChannels / 4; u += kThreads) {
        const WgradXUnit unit(u);
        const bool real = row && ci0 + unit.ci < s.in_channels && w0 + 4 * unit.kg < s.in_w;
        copy16_async(dst + unit.offset(),
                     xrow + (real ? int64_t(unit.ci) * s.in_h * s.in_w + 4 * unit.kg : 0), real ? 16u : 0u);
      }
    }
    ++x_filled;
    push(xr.full + 8u * xr.slot, (kPart != 4 || x_filled <= g.x_slots) ? dst : kNone);
    xr.advance();
  };
  auto fill_gz = [&](int n, int strip, int r) {
    acquire(zr);
    const uint32_t dst = zr.address(zr.slot);
    if (kPart != 4 || gz_filled < g.gz_slots) {
      const int c0 = strip * kWgradCols - s.pad_w;
      const float* zrow = gz + (int64_t(n) * s.out_h + r) * s.out_w * s.out_channels + co0;
      for (int u = tid; u < g.gz_cols * (kWgradChannels / 4); u += kThreads) {
        const int px = u >> 4, q = u & 15, c = c0 + px;
        const bool real = c >= 0 && c < s.out_w && co0 + 4 * q < s.out_channels;
        copy16_async(dst + 4u * kWgradGzPitch * px + 16u * q, zrow + (real ? int64_t(c) * s.out_channels + 4 * q : 0),
                     real ? 16u : 0u);
      }
    }
    ++gz_filled;
    push(zr.full + 8u * zr.slot, kNone);
    zr.advance();
  };
  const int kh_taps = s.kernel_h;
  for (int64_t i = begin; i < end; ++i) {
    const WgradStep step(i, s, g);
    const int newest = step.r + s.pad_h;  // the x row of kernel row 0
    if (i == begin || step.r == 0) {      // a fresh window: its kH - 1 older rows first
      for (int back = kh_taps - 1; back >= 1; --back) fill_x(step.n, step.strip, newest - back);
    }
    fill_x(step.n, step.strip, newest);
    fill_gz(step.n, step.strip, step.r);
  }
  while (in_flight > 0) retire_oldest();
}

// A consumer warpgroup (kernel column kw): per row step, 8 k-steps of one A load and kH wgmma each; then the
// grad_z slot is released, and the window's oldest x row (all of them where the window ends). Its partial dW
// (kH taps of 64 x 64) goes to partial once the block's run is done.
template <int KH, int kPart>
__device__ __forceinline__ void wgrad_consume(float* __restrict__ partial, const ConvShape& s,
                                              const WgradGeometry& g, int64_t begin, int64_t end, WgradRing xr,
                                              WgradRing zr) {
  const int kw = threadIdx.x / 128 - 1, warp = (threadIdx.x / kWarpSize) & 3, lane = threadIdx.x % kWarpSize;
  const int g8 = lane >> 2, t4 = lane & 3;
  float acc[KH][32];
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
#pragma unroll
    for (int i = 0; i < 32; ++i) acc[kh][i] = 0.f;
  }
  // This lane's A elements in a staged grad_z row, as byte offsets from the pixel of the k-step's first column.
  const uint32_t a_row = 4u * (16 * warp + g8);
  const uint32_t a_off[4] = {a_row + 4u * kWgradGzPitch * (t4 + kw), a_row + 32u + 4u * kWgradGzPitch * (t4 + kw),
                             a_row + 4u * kWgradGzPitch * (t4 + kw + 4),
                             a_row + 32u + 4u * kWgradGzPitch * (t4 + kw + 4)};
  for (int64_t i = begin; i < end; ++i) {
    const WgradStep step(i, s, g);
    if (i == begin || step.r == 0) {  // the window's older rows, filled first
      for (int back = KH - 1; back >= 1; --back) {
        mbar_wait(xr.full + 8u * xr.slot, xr.phase);
        xr.advance();
      }
    }
    mbar_wait(xr.full + 8u * xr.slot, xr.phase);
    mbar_wait(zr.full + 8u * zr.slot, zr.phase);
    const uint32_t gz_slot = zr.address(zr.slot);
    // The x rows r + pad - kh: zero where outside the input, and multiplied all the same (a branch around a
    // wgmma makes ptxas fence each one on its own).
    uint32_t x_slot[KH];
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) x_slot[kh] = xr.address(xr.before(kh));
    uint32_t a[2][4];
#pragma unroll
    for (int k = 0; k < kWgradKSteps; ++k) {
      const uint32_t at = gz_slot + 4u * kWgradGzPitch * 8 * k;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float v;
        asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(at + a_off[j]));
        a[k & 1][j] = __float_as_uint(tf32_nearest(v));
      }
      wgmma_fence();
#pragma unroll
      for (int kh = 0; kh < KH; ++kh) {
        wgmma_m64n64k8_tf32_rs(acc[kh], a[k & 1], smem_desc(x_slot[kh] + 2048u * k, 1024u, 128u));
      }
      wgmma_commit();
      wgmma_wait<1>();  // the k-step before's group is done: its A registers may be loaded again
    }
    wgmma_wait<0>();
    const bool window_ends = step.r == s.out_h - 1 || i == end - 1;
    if (lane == 0) {
      mbar_arrive(zr.empty + 8u * zr.slot);
      for (int back = KH - 1; back >= (window_ends ? 0 : KH - 1); --back) mbar_arrive(xr.empty + 8u * xr.before(back));
    }
    zr.advance();
    xr.advance();
  }
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
#pragma unroll
    for (int r = 0; r < 32; ++r) fence_register(acc[kh][r]);
  }
  // partial[block][tap][co 64][ci 64]
  const int taps = s.taps();
  float* out = partial + int64_t(blockIdx.x) * taps * kWgradChannels * kWgradChannels;
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
    float* tap = out + (kh * s.kernel_w + kw) * kWgradChannels * kWgradChannels;
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const int col = 8 * q + 2 * t4, row = 16 * warp + g8;
      *reinterpret_cast<float2*>(tap + row * kWgradChannels + col) = make_float2(acc[kh][4 * q], acc[kh][4 * q + 1]);
      *reinterpret_cast<float2*>(tap + (row + 8) * kWgradChannels + col) =
          make_float2(acc[kh][4 * q + 2], acc[kh][4 * q + 3]);
    }
  }
}

// Block b = pair * blocks_per_pair + part: channel tile pair (co tile, ci tile), and its run of row steps.
template <int KH, int kPart = 0>
__global__ void __launch_bounds__(kWgradMaxThreads, 1)
convt_wgrad_kernel(const float* __restrict__ x, const float* __restrict__ gz, float* __restrict__ partial, ConvShape s,
                   WgradGeometry g) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ float4 smem4[];
  __shared__ __align__(8) uint64_t x_full[kWgradMaxXSlots], x_empty[kWgradMaxXSlots];
  __shared__ __align__(8) uint64_t gz_full[kWgradMaxGzSlots], gz_empty[kWgradMaxGzSlots];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem4));
  const int consumer_warps = 4 * s.kernel_w;
  WgradRing xr(base, kWgradXSlotBytes, static_cast<uint32_t>(__cvta_generic_to_shared(x_full)),
               static_cast<uint32_t>(__cvta_generic_to_shared(x_empty)), g.x_slots);
  WgradRing zr(base + static_cast<uint32_t>(g.x_slots * kWgradXSlotBytes), static_cast<uint32_t>(g.gz_slot_bytes),
               static_cast<uint32_t>(__cvta_generic_to_shared(gz_full)),
               static_cast<uint32_t>(__cvta_generic_to_shared(gz_empty)), g.gz_slots);
  if (threadIdx.x == 0) {
    for (int i = 0; i < g.x_slots; ++i) mbar_init(xr.full + 8 * i, 128), mbar_init(xr.empty + 8 * i, consumer_warps);
    for (int i = 0; i < g.gz_slots; ++i) mbar_init(zr.full + 8 * i, 128), mbar_init(zr.empty + 8 * i, consumer_warps);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const int pair = blockIdx.x / g.blocks_per_pair, part = blockIdx.x - pair * g.blocks_per_pair;
  const int co0 = (pair / g.ci_tiles) * kWgradChannels, ci0 = (pair % g.ci_tiles) * kWgradChannels;
  const int64_t begin = g.steps * part / g.blocks_per_pair, end = g.steps * (part + 1) / g.blocks_per_pair;
  if (threadIdx.x < 128) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n" ::: "memory");
    wgrad_produce<kPart>(x, gz, s, g, co0, ci0, begin, end, xr, zr);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 152;\n" ::: "memory");
    wgrad_consume<KH, kPart>(partial, s, g, begin, end, xr, zr);
  }
#else
  (void)x, (void)gz, (void)partial, (void)s, (void)g;
  __trap();  // never launched: convt_wgmma_available() is false where this was not built for sm_90a
#endif
}

// dW[ci, co, kh, kw] = the pair's partials summed in block order.
__global__ void convt_wgrad_reduce_kernel(const float* __restrict__ partial, float* __restrict__ grad_weight,
                                          ConvShape s, WgradGeometry g) {
  const int taps = s.taps();
  const int64_t per_pair = int64_t(taps) * kWgradChannels * kWgradChannels;
  const int64_t total = per_pair * g.pairs;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int pair = static_cast<int>(i / per_pair);
    const int64_t in_pair = i - pair * per_pair;
    const int tap = static_cast<int>(in_pair / (kWgradChannels * kWgradChannels));
    const int co = static_cast<int>((in_pair / kWgradChannels) % kWgradChannels) + (pair / g.ci_tiles) * kWgradChannels;
    const int ci = static_cast<int>(in_pair % kWgradChannels) + (pair % g.ci_tiles) * kWgradChannels;
    if (co >= s.out_channels || ci >= s.in_channels) continue;
    const float* p = partial + int64_t(pair) * g.blocks_per_pair * per_pair + in_pair;
    float sum = 0.f;
    for (int b = 0; b < g.blocks_per_pair; ++b) sum += p[b * per_pair];
    grad_weight[(int64_t(ci) * s.out_channels + co) * taps + tap] = sum;
  }
}

// Why convt_wgmma_weight_grad would not take this call ("" where it would): float32 CUDA tensors on one device, the
// shapes of a ConvTranspose2d's gradient at stride 1 (kernel at most 3 x 3, padding below it), W_in and C_out
// multiples of 4 with 16-byte aligned data (the copies are 16 bytes), an sm_90 GPU running the sm_90a build, and the
// rings in shared memory. Fills g where it takes the call.
inline std::string convt_wgmma_weight_grad_plan(const at::Tensor& grad_z, const at::Tensor& x,
                                                const at::Tensor& weight, const std::vector<int64_t>& padding,
                                                ConvShape& s, WgradGeometry& g) {
  std::string why = float_cuda_on_one_device({&grad_z, &x, &weight});
  if (!why.empty()) return why;
  if (x.dim() != 4 || weight.dim() != 4 || grad_z.dim() != 4 || padding.size() != 2 || weight.size(0) != x.size(1) ||
      grad_z.size(0) != x.size(0) || grad_z.size(1) != weight.size(1)) {
    return "the shapes are not a ConvTranspose2d's gradient's";
  }
  if (weight.size(2) > kWgradMaxKernel || weight.size(3) > kWgradMaxKernel) return "it takes kernels up to 3 x 3";
  why = padding_below_kernel(padding, weight);
  if (!why.empty()) return why;
  if (grad_z.size(2) != transposed_size(x.size(2), weight.size(2), 1, padding[0], 0) ||
      grad_z.size(3) != transposed_size(x.size(3), weight.size(3), 1, padding[1], 0)) {
    return "grad_z is not the stride-1 output's shape";
  }
  if (x.numel() == 0 || grad_z.numel() == 0) return "it takes non-empty tensors";
  if (x.size(3) % 4 != 0 || weight.size(1) % 4 != 0) return "it copies x's rows and grad_z's channels 4 at a time";
  if (!is_16_byte_aligned(x.data_ptr<float>()) || !is_16_byte_aligned(grad_z.data_ptr<float>())) {
    return "x or grad_z is not 16-byte aligned";
  }
  if (x.numel() >= (int64_t(1) << 40)) return "the input is too large for it";
  if (!convt_wgmma_available(x.get_device())) return "it needs an sm_90 GPU (H100/H200) running its sm_90a build";
  s = ConvShape{};
  s.batch = static_cast<int>(x.size(0));
  s.in_channels = static_cast<int>(x.size(1));
  s.out_channels = static_cast<int>(weight.size(1));
  s.in_h = static_cast<int>(x.size(2));
  s.in_w = static_cast<int>(x.size(3));
  s.out_h = static_cast<int>(grad_z.size(2));
  s.out_w = static_cast<int>(grad_z.size(3));
  s.kernel_h = static_cast<int>(weight.size(2));
  s.kernel_w = static_cast<int>(weight.size(3));
  s.stride_h = s.stride_w = 1;
  s.pad_h = static_cast<int>(padding[0]);
  s.pad_w = static_cast<int>(padding[1]);
  s.groups = 1;
  const int device = x.get_device();
  g.col_tiles = (s.in_w + kWgradCols - 1) / kWgradCols;
  g.co_tiles = (s.out_channels + kWgradChannels - 1) / kWgradChannels;
  g.ci_tiles = (s.in_channels + kWgradChannels - 1) / kWgradChannels;
  g.pairs = g.co_tiles * g.ci_tiles;
  g.steps = int64_t(s.batch) * g.col_tiles * s.out_h;
  g.blocks_per_pair = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(multiprocessors(device) / g.pairs,
                                                                                 g.steps)));
  g.gz_cols = kWgradCols + s.kernel_w - 1;
  g.gz_slot_bytes = int64_t(4) * kWgradGzPitch * g.gz_cols;
  g.round_x = false;
  const int64_t limit = max_block_smem(device) - 4096;  // less the kernel's static barriers (1.2 KB with the system's)
  for (int extra = 3; extra >= 1; --extra) {
    g.x_slots = s.kernel_h + extra;
    g.gz_slots = extra + 1;
    g.smem_bytes = int64_t(g.x_slots) * kWgradXSlotBytes + g.gz_slots * g.gz_slot_bytes;
    if (g.smem_bytes <= limit) return "";
  }
  return "its rings would take " + std::to_string(g.smem_bytes) + " bytes of shared memory a block; the GPU allows " +
         std::to_string(limit);
}

inline std::string convt_wgmma_weight_grad_unsupported(const at::Tensor& grad_z, const at::Tensor& x,
                                                       const at::Tensor& weight, std::vector<int64_t> padding) {
  ConvShape s;
  WgradGeometry g{};
  return convt_wgmma_weight_grad_plan(grad_z, x, weight, padding, s, g);
}

template <int KH, int kPart>
void launch_convt_wgrad(const at::Tensor& x, const at::Tensor& gz, float* partial, const ConvShape& s,
                        const WgradGeometry& g, cudaStream_t stream) {
  const auto kernel = convt_wgrad_kernel<KH, kPart>;
  allow_smem(reinterpret_cast<const void*>(kernel), g.smem_bytes);
  kernel<<<static_cast<unsigned>(g.pairs * g.blocks_per_pair), 128 * (1 + s.kernel_w), g.smem_bytes, stream>>>(
      x.data_ptr<float>(), gz.data_ptr<float>(), partial, s, g);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The weight gradient of conv_transpose2d(x, weight, padding) at stride 1 for grad_z: (C_in, C_out, kH, kW), TF32
// operands (grad_z rounded to nearest; x truncated, or rounded to nearest with round_x), float32 sums. x is read as
// NCHW and grad_z channels-last (each copied so if it is not). H100, L2-19's shape: 2.4 ms (2.99 with round_x)
// against 6.7 for cuDNN's on channels-last tensors.
template <int kPart = 0>
at::Tensor convt_wgmma_weight_grad(const at::Tensor& grad_z, const at::Tensor& x, const at::Tensor& weight,
                                   std::vector<int64_t> padding, bool round_x = false) {
  ConvShape s;
  WgradGeometry g{};
  const std::string why = convt_wgmma_weight_grad_plan(grad_z, x, weight, padding, s, g);
  TORCH_CHECK(why.empty(), "kgen: the wgmma weight gradient does not take this call: ", why);
  g.round_x = round_x;
  const c10::cuda::CUDAGuard device_guard(x.device());
  const auto xc = x.contiguous();
  const auto gzc = grad_z.contiguous(at::MemoryFormat::ChannelsLast);
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t per_block = int64_t(s.taps()) * kWgradChannels * kWgradChannels;
  auto partial = at::empty({int64_t(g.pairs) * g.blocks_per_pair * per_block}, x.options());
  auto grad_weight = at::empty({s.in_channels, s.out_channels, s.kernel_h, s.kernel_w}, x.options());
  switch (s.kernel_h) {
    case 1: launch_convt_wgrad<1, kPart>(xc, gzc, partial.data_ptr<float>(), s, g, stream); break;
    case 2: launch_convt_wgrad<2, kPart>(xc, gzc, partial.data_ptr<float>(), s, g, stream); break;
    default: launch_convt_wgrad<3, kPart>(xc, gzc, partial.data_ptr<float>(), s, g, stream); break;
  }
  const int64_t outputs = per_block * g.pairs;
  convt_wgrad_reduce_kernel<<<static_cast<unsigned>(std::min<int64_t>(blocks_for(outputs, 256), 4096)), 256, 0,
                              stream>>>(partial.data_ptr<float>(), grad_weight.data_ptr<float>(), s, g);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return grad_weight;
}

// The conv's gradients in a fused region's backward, from grad_z written channels-last (the region backward of
// groupnorm/twopass/backward_channels_last.cuh), each by kgen's wgmma kernels wherever they take the call, else by
// cuDNN's NHWC kernels on channels-last tensors (x copied by core/layout.cuh; for NCHW tensors cuDNN makes its own
// slower copies to the same kernels). H100, L2-19's shape: grad x (NCHW) by convt_wgmma_input_grad (TF32 with grad_z
// truncated, 4.9e-4 of max |grad_x| from float64, cuDNN's TF32 3.0e-4) 3.0-3.3 ms, against 2.9 for cuDNN's plus 1.5
// to turn its channels-last result back; grad weight by convt_wgmma_weight_grad (x read NCHW as saved; TF32 with x
// truncated, 2.5e-4 to 3.5e-4 of max |dW| from float64, cuDNN's TF32 6.7e-4) 2.4 ms, against 6.7 for cuDNN's plus
// 1.5 for the x copy. The bias's gradient is the prologue's (its parameter), not this function's.
// Returns {grad x, grad weight}, each undefined (None) where not asked for.
inline std::vector<at::Tensor> convt_wgmma_conv_backward(const at::Tensor& grad_z, const at::Tensor& x,
                                                         const at::Tensor& weight, std::vector<int64_t> padding,
                                                         bool input_grad, bool weight_grad) {
  at::Tensor grad_x, grad_weight;
  const bool own_input_grad = input_grad && convt_wgmma_input_grad_unsupported(grad_z, weight, padding).empty();
  if (own_input_grad) grad_x = convt_wgmma_input_grad(grad_z, weight, padding);
  const bool own_weight_grad = weight_grad && convt_wgmma_weight_grad_unsupported(grad_z, x, weight, padding).empty();
  if (own_weight_grad) grad_weight = convt_wgmma_weight_grad(grad_z, x, weight, padding);
  const bool cudnn_input_grad = input_grad && !own_input_grad, cudnn_weight_grad = weight_grad && !own_weight_grad;
  if (cudnn_input_grad || cudnn_weight_grad) {
    auto grads = at::convolution_backward(grad_z, kgen::to_channels_last(x), weight, std::nullopt, {1, 1}, padding,
                                          {1, 1}, /*transposed=*/true, {0, 0}, 1,
                                          {cudnn_input_grad, cudnn_weight_grad, false});
    if (cudnn_input_grad) grad_x = kgen::to_contiguous_nchw(std::get<0>(grads));
    if (cudnn_weight_grad) grad_weight = std::get<1>(grads);
  }
  return {grad_x, grad_weight};
}

}  // namespace convt
}  // namespace kgen
