// ---- pointwise/pointwise.cuh: an element-wise DAG over 1 to 4 tensors, outside any GroupNorm region ----
// v = F(x[0], ..., x[K-1]) for an output v of shape (N, C, *) (contiguous), F a generated functor (kInputs,
// value, backward: codegen's pointwise_functor) with per-channel parameters. Forward: one read of each input,
// one write. Backward: one read of each input and of dv, one write of each input's gradient that autograd asks
// for.
//
// Each input has v's shape but any strides: a non-contiguous view is read where it lies, and a broadcast
// input (L2-75: a min over channels (N, 1) plus a (1, C, 1, 1) bias gives (1, C, N, 1); x - x.mean(1,
// keepdim=True)) arrives as its expanded view, stride 0 along the dims it repeats over; the caller sums its
// gradient back to its shape. A contiguous input of v's shape is read at v's own offset (16-byte loads).
//
// Two block layouts. FLAT (the forward, and a backward without parameters): a grid-stride loop over packs of
// 4 values of v in memory order, each thread carrying its (sample, channel, position) forward by a fixed step
// without dividing, so any shape streams at full width, a (N, C) Linear output of 1-value planes included.
// PER PLANE (a backward with parameters): blocks cut as the region's two-pass sweeps, (plane, chunk of
// plan_split(S)), so each block sums F's parameter gradients of one channel, and those block sums are added
// per channel in double and in a fixed order (column_sums): bitwise reproducible.
//
// Storage: the inputs, v, dv and the input gradients are of one type T (float, __half or __nv_bfloat16: the step's
// dtype, pointwise_reads_storage; core/sweeps.cuh's loads and stores), every value a float in registers, the
// parameter gradients summed in float and double.
namespace kgen {

enum : int { kMaxPointwiseInputs = 4 };  // tensors an element-wise kernel reads (plan.py: MAX_POINTWISE_INPUTS)

// Where the value (n, c, i) of the output lies in a strided x: i, the position in the (n, c) plane, split
// over the plane's dims with size-1 dims dropped and runs that are contiguous in x merged (at most 3 left,
// padded in front with size 1). Needs planes below 2^31 values (FastDiv).
struct StridedInput {
  int64_t stride_n, stride_c;
  int64_t stride[3];   // outer, middle, inner plane dims
  int size[3];
  resident_detail::FastDiv div_inner, div_middle;

  __device__ __forceinline__ int64_t offset(int64_t n, int64_t c, int64_t i) const {
    const int q = div_inner.div(static_cast<int>(i));
    const int inner = static_cast<int>(i) - q * size[2];
    const int outer = div_middle.div(q);
    const int middle = q - outer * size[1];
    return n * stride_n + c * stride_c + outer * stride[0] + middle * stride[1] + inner * stride[2];
  }
};

inline StridedInput strided_input(const at::Tensor& x) {
  StridedInput in{};
  in.stride_n = x.stride(0);
  in.stride_c = x.stride(1);
  std::vector<std::pair<int64_t, int64_t>> dims;  // (size, stride), outer first
  for (int64_t k = 2; k < x.dim(); ++k) {
    if (x.size(k) == 1) continue;
    if (!dims.empty() && dims.back().second == x.stride(k) * x.size(k)) {
      dims.back() = {dims.back().first * x.size(k), x.stride(k)};  // contiguous in x: one dim
    } else {
      dims.emplace_back(x.size(k), x.stride(k));
    }
  }
  TORCH_CHECK(dims.size() <= 3, "kgen: element-wise input with more than 3 spatial dims");
  const size_t pad = 3 - dims.size();
  for (size_t k = 0; k < 3; ++k) {
    in.size[k] = k < pad ? 1 : static_cast<int>(dims[k - pad].first);
    in.stride[k] = k < pad ? 0 : dims[k - pad].second;
  }
  in.div_inner = resident_detail::FastDiv(in.size[2]);
  in.div_middle = resident_detail::FastDiv(in.size[1]);
  return in;
}

// The kernels' K input tensors: each either dense (contiguous, v's shape: read at v's flat offset) or read
// through its StridedInput.
template <int K, class T>
struct PointwiseInputs {
  const T* data[K];
  bool dense[K];
  StridedInput layout[K];
};

// The W values of every input at output positions f .. f + W - 1, which are (n, c, i .. i + W - 1) (W = 4:
// within one plane and one run of each strided input's innermost dim, or all inputs dense, as pointwise_width
// guarantees).
template <int W, class T>
__device__ __forceinline__ void load_values(const T* __restrict__ p, float (&v)[W]) {
  if constexpr (W == 4) {
    const Pack<4> t = load_pack<4>(p, 0);
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = t.v[e];
  } else {
    v[0] = load1(p);
  }
}

template <int K, int W, class T>
__device__ __forceinline__ void load_inputs(const PointwiseInputs<K, T>& in, int64_t f, int64_t n, int64_t c,
                                            int64_t i, float (&xv)[K][W]) {
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (in.dense[k]) {
      load_values<W>(in.data[k] + f, xv[k]);
    } else {
      const int64_t at = in.layout[k].offset(n, c, i);
#pragma unroll
      for (int e = 0; e < W; ++e) xv[k][e] = load1(in.data[k] + at + e * in.layout[k].stride[2]);
    }
  }
}

template <int W, class T>
__device__ __forceinline__ void store_values(T* __restrict__ p, const float (&v)[W]) {
  if constexpr (W == 4) {
    store_pack<4>(p, 0, Pack<4>{{v[0], v[1], v[2], v[3]}});
  } else {
    store1(p, v[0]);
  }
}

// One value of F and its input gradients at element e of a pack.
template <class F, int W>
__device__ __forceinline__ float value_at(const F& f, const float (&xv)[F::kInputs][W], int e) {
  float x[F::kInputs];
#pragma unroll
  for (int k = 0; k < F::kInputs; ++k) x[k] = xv[k][e];
  return f.value(x);
}

template <class F, int W>
__device__ __forceinline__ void backward_at(const F& f, const float (&xv)[F::kInputs][W], float g, int e,
                                            float (&dx)[F::kInputs][W], float (&dparam)[kMaxParams]) {
  float x[F::kInputs], d[F::kInputs];
#pragma unroll
  for (int k = 0; k < F::kInputs; ++k) x[k] = xv[k][e];
  f.backward(x, g, d, dparam);
#pragma unroll
  for (int k = 0; k < F::kInputs; ++k) dx[k][e] = d[k];
}

// The gradients the backward writes: dx[k] is null where autograd does not ask for input k's.
template <int K, class T>
struct PointwiseGrads {
  T* data[K];
};

template <int K, int W, class T>
__device__ __forceinline__ void store_grads(const PointwiseGrads<K, T>& out, int64_t f, const float (&dx)[K][W]) {
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (out.data[k] != nullptr) store_values<W>(out.data[k] + f, dx[k]);
  }
}

// (n, c, i) of the flat output position f, carried forward by a fixed step (itself split the same way) with
// one carry per level instead of two 64-bit divisions per pack.
struct PointwiseCursor {
  int64_t f, n, c, i;

  __device__ __forceinline__ PointwiseCursor(int64_t flat, int64_t channels, int64_t plane) : f(flat) {
    n = flat / (channels * plane);
    const int64_t rest = flat - n * channels * plane;
    c = rest / plane;
    i = rest - c * plane;
  }

  __device__ __forceinline__ void advance(const PointwiseCursor& step, int64_t channels, int64_t plane) {
    f += step.f;
    i += step.i;
    c += step.c;
    n += step.n;
    if (i >= plane) i -= plane, c += 1;
    if (c >= channels) c -= channels, n += 1;
  }
};

template <class F, int kBlock, int W, class T>
__global__ void __launch_bounds__(kBlock)
pointwise_forward_kernel(PointwiseInputs<F::kInputs, T> in, T* __restrict__ v, int64_t numel, int64_t channels,
                         int64_t plane, RegionParams params) {
  const PointwiseCursor step(int64_t(W) * kBlock * gridDim.x, channels, plane);
  for (PointwiseCursor at(int64_t(W) * (int64_t(blockIdx.x) * kBlock + threadIdx.x), channels, plane);
       at.f < numel; at.advance(step, channels, plane)) {
    float xv[F::kInputs][W], out[W];
    load_inputs(in, at.f, at.n, at.c, at.i, xv);
    const F f = F::at(params, at.c);
#pragma unroll
    for (int e = 0; e < W; ++e) out[e] = value_at<F, W>(f, xv, e);
    store_values<W>(v + at.f, out);
  }
}

// The backward of an F without parameters: the forward's flat loop.
template <class F, int kBlock, int W, class T>
__global__ void __launch_bounds__(kBlock)
pointwise_backward_flat_kernel(const T* __restrict__ dv, PointwiseInputs<F::kInputs, T> in,
                               PointwiseGrads<F::kInputs, T> dx, int64_t numel, int64_t channels, int64_t plane,
                               RegionParams params) {
  const PointwiseCursor step(int64_t(W) * kBlock * gridDim.x, channels, plane);
  float unused[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
  for (PointwiseCursor at(int64_t(W) * (int64_t(blockIdx.x) * kBlock + threadIdx.x), channels, plane);
       at.f < numel; at.advance(step, channels, plane)) {
    float xv[F::kInputs][W], g[W], d[F::kInputs][W];
    load_inputs(in, at.f, at.n, at.c, at.i, xv);
    load_values<W>(dv + at.f, g);
    const F f = F::at(params, at.c);
#pragma unroll
    for (int e = 0; e < W; ++e) backward_at<F, W>(f, xv, g[e], e, d, unused);
    store_grads(dx, at.f, d);
  }
}

// The (plane, chunk) a block of the per-plane backward takes.
struct PointwiseChunk {
  int64_t p, n, c, begin, end;
  __device__ __forceinline__ PointwiseChunk(int64_t channels, int64_t plane, const SplitPlan& plan) {
    p = blockIdx.x / plan.splits;
    begin = (blockIdx.x % plan.splits) * plan.chunk;
    end = min(begin + plan.chunk, plane);
    n = p / channels;
    c = p - n * channels;
  }
};

// The backward of an F with parameters: one channel per block, so its parameter gradients sum per block.
template <class F, int kBlock, int W, class T>
__global__ void __launch_bounds__(kBlock)
pointwise_backward_kernel(const T* __restrict__ dv, PointwiseInputs<F::kInputs, T> in,
                          PointwiseGrads<F::kInputs, T> dx, int64_t channels, int64_t plane, SplitPlan plan,
                          RegionParams params, float* __restrict__ param_partial) {
  const PointwiseChunk b(channels, plane, plan);
  const F f = F::at(params, b.c);
  float dparam[kMaxParams] = {0.f, 0.f, 0.f, 0.f};
  for (int64_t i = b.begin + W * threadIdx.x; i < b.end; i += W * kBlock) {
    const int64_t at = b.p * plane + i;
    float xv[F::kInputs][W], g[W], d[F::kInputs][W];
    load_inputs(in, at, b.n, b.c, i, xv);
    load_values<W>(dv + at, g);
#pragma unroll
    for (int e = 0; e < W; ++e) backward_at<F, W>(f, xv, g[e], e, d, dparam);
    store_grads(dx, at, d);
  }
  // partial is (kParams, N * splits, C): one row of C per (sample, split), as column_sums reads it.
  const int64_t rows = gridDim.x / channels;
  const int split = blockIdx.x % plan.splits;
#pragma unroll
  for (int k = 0; k < F::kParams; ++k) {
    const float total = block_sum<kBlock>(dparam[k]);
    if (threadIdx.x == 0) param_partial[(k * rows + b.n * plan.splits + split) * channels + b.c] = total;
    __syncthreads();  // block_sum's shared scratch is reused by the next parameter's sum
  }
}

// ---- host side

// Whether the kernels read and write the inputs' own float16 / bfloat16: every input of that one dtype, and the
// output of it too (the call's rounding is that dtype's). Elsewhere they take float32 copies.
inline bool pointwise_reads_storage(const std::vector<at::Tensor>& inputs, int64_t rounding) {
  if (inputs.empty()) return false;
  const at::ScalarType type = inputs[0].scalar_type();
  if ((type != at::kHalf && type != at::kBFloat16) || rounding_type(rounding) != type) return false;
  for (const at::Tensor& t : inputs) {
    if (t.scalar_type() != type) return false;
  }
  return true;
}

// The inputs as the kernels read them, checked: K tensors of one storage type T and one shape (N, C, *) on one
// device (the caller expands broadcast ones); each read where it lies when contiguous or a strided view the kernels
// can index (rank <= 5, planes below 2^31 values), else from a contiguous copy kept alive in `held`.
template <int K, class T>
PointwiseInputs<K, T> pointwise_inputs(const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& held) {
  static_assert(K >= 1 && K <= kMaxPointwiseInputs, "kgen: an element-wise kernel reads 1 to 4 tensors");
  TORCH_CHECK(inputs.size() == size_t(K), "kgen: this element-wise kernel reads ", str(int64_t(K)),
              " tensors, got ", str(int64_t(inputs.size())));
  PointwiseInputs<K, T> in{};
  for (int k = 0; k < K; ++k) {
    const at::Tensor& x = inputs[k];
    check_storage(x, "element-wise input");
    TORCH_CHECK(x.scalar_type() == inputs[0].scalar_type(), "kgen: element-wise inputs of dtypes ",
                inputs[0].scalar_type(), " and ", x.scalar_type(), " (expected one dtype)");
    TORCH_CHECK(x.dim() >= 2, "kgen: element-wise input must have shape (N, C, *), got ", str(x.sizes()));
    TORCH_CHECK(x.sizes() == inputs[0].sizes(), "kgen: element-wise inputs of shapes ", str(inputs[0].sizes()),
                " and ", str(x.sizes()), " (expected one shape)");
    TORCH_CHECK(x.device() == inputs[0].device(), "kgen: element-wise inputs on ", inputs[0].device().str(),
                " and ", x.device().str());
    const int64_t plane = x.numel() == 0 ? 0 : x.numel() / (x.size(0) * x.size(1));
    const bool strided = !x.is_contiguous() && x.dim() <= 5 && plane < (int64_t(1) << 31);
    held.push_back(strided || x.is_contiguous() ? x : x.contiguous());
    in.data[k] = data_as<const T>(held.back());
    in.dense[k] = !strided;
    if (strided) in.layout[k] = strided_input(held.back());
  }
  return in;
}

// 4 values a thread where the streams start on packs and either the plane is whole packs and every strided input's
// packs lie within one run of its innermost dim, or nothing depends on where a pack lies (no parameters, every
// input dense: L2-85's clamp on 31 x 31 planes) and the tensor is whole packs; else 1.
template <int K, class T>
int pointwise_width(const PointwiseInputs<K, T>& in, int64_t plane, int64_t numel, bool has_params,
                    const std::vector<const T*>& streams) {
  for (const T* p : streams) {
    if (p != nullptr && !pack_aligned<T>(p)) return 1;
  }
  bool all_dense = true;
  for (int k = 0; k < K; ++k) {
    if (in.dense[k] && !pack_aligned<T>(in.data[k])) return 1;
    if (!in.dense[k]) {
      all_dense = false;
      if (in.layout[k].size[2] % 4 != 0) return 1;
    }
  }
  if (plane % 4 == 0) return 4;
  return !has_params && all_dense && numel % 4 == 0 ? 4 : 1;
}

// Blocks of the flat loop: enough to fill the GPU a few times over, each thread then striding.
template <int kBlock>
int64_t flat_blocks(int64_t numel, int width) {
  const int64_t packs = (numel + width - 1) / width;
  const int64_t wanted = (packs + kBlock - 1) / kBlock;
  const int64_t resident = int64_t(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) * (2048 / kBlock);
  return std::max<int64_t>(1, std::min<int64_t>(wanted, 4 * resident));
}

// The output in the inputs' storage type.
template <class F, int kBlock>
at::Tensor pointwise_forward(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& params) {
  TORCH_CHECK(!inputs.empty(), "kgen: element-wise kernel without inputs");
  const c10::cuda::CUDAGuard device_guard(inputs[0].device());
  check_storage(inputs[0], "element-wise input");
  at::Tensor v;
  dispatch_storage(inputs[0].scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<at::Tensor> held;
    const PointwiseInputs<F::kInputs, T> in = pointwise_inputs<F::kInputs, T>(inputs, held);
    const at::Tensor& x = held[0];
    v = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
    if (x.numel() == 0) return;
    const int64_t channels = x.size(1), plane = x.numel() / (x.size(0) * channels);
    const RegionParams table{param_table(params, channels, x.device(), "element-wise"), ParamTable{}};
    const int width = pointwise_width<F::kInputs, T>(in, plane, x.numel(), F::kParams > 0, {data_as<const T>(v)});
    const int64_t blocks = flat_blocks<kBlock>(x.numel(), width);
    dispatch_vec(width == 4, [&](auto kv) {
      pointwise_forward_kernel<F, kBlock, decltype(kv)::value ? 4 : 1, T>
          <<<blocks, kBlock, 0, at::cuda::getCurrentCUDAStream()>>>(in, data_as<T>(v), x.numel(), channels, plane,
                                                                    table);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return v;
}

// Returns {dx[0], ..., dx[K-1] (the output's shape, contiguous, in the inputs' storage type; empty where `needed` is
// false), dparams (kParams, C, float32)}. grad is of the inputs' storage type.
template <class F, int kBlock>
std::vector<at::Tensor> pointwise_backward(const at::Tensor& grad, const std::vector<at::Tensor>& inputs,
                                           const std::vector<bool>& needed, const std::vector<at::Tensor>& params) {
  TORCH_CHECK(!inputs.empty() && needed.size() == inputs.size(), "kgen: element-wise backward needs one flag per input");
  check_storage(grad, "gradient of the output");
  check_storage(inputs[0], "element-wise input");
  TORCH_CHECK(grad.scalar_type() == inputs[0].scalar_type(), "kgen: element-wise output gradient of dtype ",
              grad.scalar_type(), " for inputs of ", inputs[0].scalar_type());
  TORCH_CHECK(grad.sizes() == inputs[0].sizes(), "kgen: output gradient has shape ", str(grad.sizes()),
              ", expected ", str(inputs[0].sizes()));
  const c10::cuda::CUDAGuard device_guard(inputs[0].device());
  std::vector<at::Tensor> result;
  dispatch_storage(inputs[0].scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<at::Tensor> held;
    const PointwiseInputs<F::kInputs, T> in = pointwise_inputs<F::kInputs, T>(inputs, held);
    const at::Tensor& x = held[0];
    const auto dv = grad.contiguous();
    PointwiseGrads<F::kInputs, T> dx{};
    for (int k = 0; k < F::kInputs; ++k) {
      result.push_back(needed[k] ? at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous))
                                 : at::empty({0}, x.options()));
      dx.data[k] = needed[k] ? data_as<T>(result.back()) : nullptr;
    }
    const int64_t channels = x.size(1);
    const auto floats = x.options().dtype(at::kFloat);
    at::Tensor dparams = at::zeros({int64_t(F::kParams), channels}, floats);
    result.push_back(dparams);
    if (x.numel() == 0) return;
    const int64_t plane = x.numel() / (x.size(0) * channels);
    const RegionParams table{param_table(params, channels, x.device(), "element-wise"), ParamTable{}};
    std::vector<const T*> streams = {data_as<const T>(dv)};
    for (int k = 0; k < F::kInputs; ++k) streams.push_back(dx.data[k]);
    const int width = pointwise_width<F::kInputs, T>(in, plane, x.numel(), F::kParams > 0, streams);
    const auto stream = at::cuda::getCurrentCUDAStream();
    if constexpr (F::kParams == 0) {
      const int64_t blocks = flat_blocks<kBlock>(x.numel(), width);
      dispatch_vec(width == 4, [&](auto kv) {
        pointwise_backward_flat_kernel<F, kBlock, decltype(kv)::value ? 4 : 1, T><<<blocks, kBlock, 0, stream>>>(
            data_as<const T>(dv), in, dx, x.numel(), channels, plane, table);
      });
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
      const SplitPlan plan = plan_split<kBlock>(plane);
      const int64_t rows = x.size(0) * plan.splits;
      at::Tensor partial = at::empty({int64_t(F::kParams) * rows, channels}, floats);
      dispatch_vec(width == 4, [&](auto kv) {
        pointwise_backward_kernel<F, kBlock, decltype(kv)::value ? 4 : 1, T>
            <<<x.size(0) * channels * plan.splits, kBlock, 0, stream>>>(data_as<const T>(dv), in, dx, channels, plane,
                                                                         plan, table, partial.data_ptr<float>());
      });
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      for (int k = 0; k < F::kParams; ++k) {
        auto row = dparams.select(0, k);
        column_sums<kBlock>(partial.narrow(0, k * rows, rows), row);
      }
    }
  });
  return result;
}

}  // namespace kgen
