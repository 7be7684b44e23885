// ---- core/sweeps.cuh: what every kernel family's memory sweeps share ----
//
// Packs of 1 or 4 floats (16-byte loads through the read-only path, 16-byte stores), the unrolled
// block-strided sweep that keeps several loads per thread in flight, moments merged in double in a
// fixed order (MomentsD, warp_merge), column sums of a (rows, C) partial in double and a fixed order
// (the per-channel parameter gradients), and the host's compile-time dispatch helpers. Needs
// core/common.cuh before it.
namespace kgen {

template <int W>
struct Pack {
  static constexpr int kWidth = W;
  float v[W];
};

// ---- storage types. Tensors are float, __half or __nv_bfloat16 in memory; every value is a float in registers.
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return v;
  }
}

// v as the reference stores it (the Rounding codes of core/common.cuh): rounded to nearest bfloat16 (kStoredBf16) or
// float16 (kStoredFp16), itself (kExact).
__device__ __forceinline__ float stored(float v, int rounding) {
  if (rounding == kStoredBf16) return __bfloat162float(__float2bfloat16_rn(v));
  if (rounding == kStoredFp16) return __half2float(__float2half_rn(v));
  return v;
}

// One value through the read-only path, as a float.
template <class T>
__device__ __forceinline__ float load1(const T* __restrict__ p) {
  return to_float(__ldg(p));
}

template <class T>
__device__ __forceinline__ void store1(T* __restrict__ p, float v) {
  *p = from_float<T>(v);
}

// Two halves (or bfloat16s) in one 32-bit word, as floats, and back.
template <class T>
__device__ __forceinline__ float2 unpack2(uint32_t word) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half22float2(*reinterpret_cast<const __half2*>(&word));
  } else {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&word));
  }
}

template <class T>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  uint32_t word;
  if constexpr (std::is_same_v<T, __half>) {
    *reinterpret_cast<__half2*>(&word) = __floats2half2_rn(a, b);
  } else {
    *reinterpret_cast<__nv_bfloat162*>(&word) = __floats2bfloat162_rn(a, b);
  }
  return word;
}

// Pack i of W consecutive values: W = 4 is one 16-byte load of floats, one 8-byte load of a 2-byte type.
template <int W, class T>
__device__ __forceinline__ Pack<W> load_pack(const T* __restrict__ p, int64_t i) {
  if constexpr (W == 4 && std::is_same_v<T, float>) {
    const float4 f = __ldg(reinterpret_cast<const float4*>(p) + i);
    return Pack<4>{{f.x, f.y, f.z, f.w}};
  } else if constexpr (W == 4) {
    const uint2 u = __ldg(reinterpret_cast<const uint2*>(p) + i);
    const float2 a = unpack2<T>(u.x), b = unpack2<T>(u.y);
    return Pack<4>{{a.x, a.y, b.x, b.y}};
  } else {
    return Pack<1>{{load1(p + i)}};
  }
}

// A pack of 4 values as it lies in memory: 16 bytes of float32, 8 of a 2-byte type. A kernel that loads a step
// ahead can keep the next step's packs in this form and convert them when the step takes them: converted at the
// load, a 2-byte pack's first use (its conversion) comes right after the load and the warp waits for it there (the
// rows kernels' bf16 SASS: each 8-byte load followed by its shifts and byte permutes).
template <class T>
using PackBits = std::conditional_t<std::is_same_v<T, float>, float4, uint2>;

template <class T>
__device__ __forceinline__ PackBits<T> load_bits(const T* __restrict__ p, int64_t i) {
  return __ldg(reinterpret_cast<const PackBits<T>*>(p) + i);
}

template <class T>
__device__ __forceinline__ void unpack_bits(const PackBits<T>& bits, float (&v)[4]) {
  if constexpr (std::is_same_v<T, float>) {
    v[0] = bits.x;
    v[1] = bits.y;
    v[2] = bits.z;
    v[3] = bits.w;
  } else {
    const float2 a = unpack2<T>(bits.x), b = unpack2<T>(bits.y);
    v[0] = a.x;
    v[1] = a.y;
    v[2] = b.x;
    v[3] = b.y;
  }
}

template <int W, class T>
__device__ __forceinline__ void store_pack(T* __restrict__ p, int64_t i, const Pack<W>& v) {
  if constexpr (W == 4 && std::is_same_v<T, float>) {
    reinterpret_cast<float4*>(p)[i] = make_float4(v.v[0], v.v[1], v.v[2], v.v[3]);
  } else if constexpr (W == 4) {
    reinterpret_cast<uint2*>(p)[i] = make_uint2(pack2<T>(v.v[0], v.v[1]), pack2<T>(v.v[2], v.v[3]));
  } else {
    store1(p + i, v.v[0]);
  }
}

// Visits `packs` packs of W consecutive values from each of kInputs arrays (of one storage type T), block-strided.
// Each thread issues all loads of kUnroll packs before it hands the first to `body`, so several 16-byte loads per
// thread are in flight at once.
// `first`: this thread's place in the team of kBlock threads that sweeps the packs (threadIdx.x for a block).
template <int kBlock, int W, int kInputs, class Body, class T>
__device__ __forceinline__ void sweep(const T* const (&in)[kInputs], int64_t packs, Body&& body,
                                      int first = static_cast<int>(threadIdx.x)) {
  for (int64_t base = first; base < packs; base += int64_t(kBlock) * kUnroll) {
    Pack<W> v[kUnroll][kInputs];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + int64_t(u) * kBlock;
#pragma unroll
      for (int k = 0; k < kInputs; ++k) {
        if (i < packs) v[u][k] = load_pack<W>(in[k], i);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + int64_t(u) * kBlock;
      if (i < packs) body(i, v[u]);
    }
  }
}

// As sweep, over the packs of x (storage type T) and of kRest more streams of type D at the same positions (the
// backward's dout, out or aux; float32 beside a half x where they sit at another stride: kChannel's): v[0] is x's
// pack, v[1 + k] stream k's. kSize: rest's length, at least 1 (kRest may be 0).
template <int kBlock, int W, int kRest, int kSize, class Body, class T, class D>
__device__ __forceinline__ void sweep_streams(const T* __restrict__ x, const D* const (&rest)[kSize], int64_t packs,
                                              Body&& body, int first = static_cast<int>(threadIdx.x)) {
  static_assert(kSize >= kRest && kSize >= 1, "rest holds the kRest streams");
  for (int64_t base = first; base < packs; base += int64_t(kBlock) * kUnroll) {
    Pack<W> v[kUnroll][1 + kRest];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + int64_t(u) * kBlock;
      if (i < packs) {
        v[u][0] = load_pack<W>(x, i);
#pragma unroll
        for (int k = 0; k < kRest; ++k) v[u][1 + k] = load_pack<W>(rest[k], i);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + int64_t(u) * kBlock;
      if (i < packs) body(i, v[u]);
    }
  }
}

// Moments in double, for merging the float partials of many blocks (Chan's combine, as `combine`).
struct MomentsD {
  double n, mu, m2;

  __device__ __forceinline__ void merge(double nb, double mb, double qb) {
    const double total = n + nb;
    if (total > 0.0) {
      const double delta = mb - mu;
      mu += delta * nb / total;
      m2 += qb + delta * delta * n * nb / total;
      n = total;
    }
  }
};

// Merges `count` partial moments (`partial(s)` returns the s-th) across one warp in a fixed order:
// lane-strided folds, then a fixed shuffle tree. Bitwise reproducible; the result is valid in every lane.
// Each lane issues kBatch loads before its first merge: the partials sit in L2, and one round trip
// per batch rather than per partial keeps a merge of hundreds of partials to a few microseconds.
template <class Partial>
__device__ __forceinline__ MomentsD warp_merge(int count, Partial&& partial) {
  constexpr int kBatch = 8;
  MomentsD m{0.0, 0.0, 0.0};
  for (int base = threadIdx.x % kWarpSize; base < count; base += kWarpSize * kBatch) {
    Moments p[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int s = base + u * kWarpSize;
      p[u] = s < count ? partial(s) : Moments{0.f, 0.f, 0.f};
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (p[u].count > 0.f) m.merge(p[u].count, p[u].mean, p[u].m2);
    }
  }
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const double nb = __shfl_xor_sync(0xffffffffu, m.n, offset);
    const double mb = __shfl_xor_sync(0xffffffffu, m.mu, offset);
    const double qb = __shfl_xor_sync(0xffffffffu, m.m2, offset);
    m.merge(nb, mb, qb);
  }
  return m;
}


// ---------------------------------------------------------------- conv bias gradient

// out[c] = sum over r of partial[r][c] for a (rows, cols) row-major partial, in double and in a fixed
// order. A block takes 32 adjacent columns (a warp reads 32 adjacent floats) and a run of rows; its
// warps stride the run, each lane keeping one column's sum; the warps' sums are added in warp order,
// one double per (run, column), and column_sum_finalize adds the runs in run order.
template <int kBlock>
__global__ void __launch_bounds__(kBlock)
column_sum_partial_kernel(const float* __restrict__ partial, int64_t rows, int64_t cols, int64_t col_tiles,
                          int64_t rows_per_run, double* __restrict__ run_sums) {
  constexpr int kWarps = kBlock / kWarpSize;
  __shared__ double per_warp[kWarps][kWarpSize];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t run = blockIdx.x / col_tiles;
  const int64_t c = (blockIdx.x % col_tiles) * kWarpSize + lane;
  const int64_t end = min(rows, (run + 1) * rows_per_run);
  double sum = 0.0;
  if (c < cols) {
    for (int64_t r = run * rows_per_run + warp; r < end; r += kWarps) sum += __ldg(partial + r * cols + c);
  }
  per_warp[warp][lane] = sum;
  __syncthreads();
  if (warp == 0 && c < cols) {
    double total = 0.0;
    for (int w = 0; w < kWarps; ++w) total += per_warp[w][lane];
    run_sums[run * cols + c] = total;
  }
}

__global__ void column_sum_finalize_kernel(const double* __restrict__ run_sums, int64_t runs, int64_t cols,
                                           float* __restrict__ out) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  double total = 0.0;
  for (int64_t r = 0; r < runs; ++r) total += run_sums[r * cols + c];
  out[c] = static_cast<float>(total);
}

// ---------------------------------------------------------------- host side

// Calls f with the group count as a compile-time constant when it is the specialised one, else 0
// (the generic kernels, which read it at run time): an unspecialised shape is slower, never wrong.
template <int kSpecialisedGroups, class F>
inline void dispatch_groups(int64_t groups, F&& f) {
  if (groups == kSpecialisedGroups) {
    f(std::integral_constant<int, kSpecialisedGroups>{});
  } else {
    f(std::integral_constant<int, 0>{});
  }
}

// Calls f with StorageTag<T> for a tensor of dtype `type`: T = float, __half or __nv_bfloat16.
template <class T>
struct StorageTag {
  using type = T;
};

template <class F>
inline void dispatch_storage(at::ScalarType type, F&& f) {
  if (type == at::kHalf) {
    f(StorageTag<__half>{});
  } else if (type == at::kBFloat16) {
    f(StorageTag<__nv_bfloat16>{});
  } else {
    TORCH_CHECK(type == at::kFloat, "kgen: expected float32, float16 or bfloat16, got ", type);
    f(StorageTag<float>{});
  }
}

template <class T>
inline T* data_as(const at::Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

template <class F>
inline void dispatch_vec(bool vec, F&& f) {
  if (vec) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

inline float2* as_float2(const at::Tensor& t) { return reinterpret_cast<float2*>(t.data_ptr<float>()); }

// out (C) = the column sums of partial (rows, C), see column_sum_partial_kernel: about a thousand blocks
// at most, each warp lane adding a few dozen rows.
template <int kBlock>
void column_sums(const at::Tensor& partial, at::Tensor& out) {
  constexpr int64_t kWarps = kBlock / kWarpSize;
  const int64_t rows = partial.size(0), cols = partial.size(1);
  const int64_t col_tiles = blocks_for(cols, kWarpSize);
  const int64_t max_runs = std::max<int64_t>(1, 1024 / col_tiles);
  const int64_t runs_wanted = std::min(max_runs, std::max<int64_t>(1, blocks_for(rows, kWarps * 16)));
  const int64_t rows_per_run = blocks_for(rows, runs_wanted);
  const int64_t runs = blocks_for(rows, rows_per_run);
  auto run_sums = at::empty({runs, cols}, partial.options().dtype(at::kDouble));
  const auto stream = at::cuda::getCurrentCUDAStream();
  column_sum_partial_kernel<kBlock><<<runs * col_tiles, kBlock, 0, stream>>>(
      partial.data_ptr<float>(), rows, cols, col_tiles, rows_per_run, run_sums.data_ptr<double>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  column_sum_finalize_kernel<<<blocks_for(cols, 128), 128, 0, stream>>>(run_sums.data_ptr<double>(), runs, cols,
                                                                       out.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace kgen
