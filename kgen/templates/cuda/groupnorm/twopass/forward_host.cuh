// ---- groupnorm/twopass/forward_host.cuh: planning and launches of the two-pass kernels (design: groupnorm/twopass/twopass.cuh) ----
namespace kgen {
namespace region_twopass {


inline bool aligned(const at::Tensor& t) { return !t.defined() || is_16_byte_aligned(t.data_ptr()); }

inline const float* data_or_null(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

// Whether a region's call runs the two-pass kernels on x's own dtype: x float16 or bfloat16 (8-byte packs of 4 values,
// float arithmetic) and an output of x's dtype (`rounding`, core/common.cuh; kNone writes it in x's dtype, a
// reduction float32, rounded by the caller). The backward then reads x and writes dx in that dtype too, dout in it
// where it lies at x's positions (kNone) or is one value a plane or sample, else a float32 copy (SweepDout).
template <ReduceKind R>
inline bool half_sweeps(const at::Tensor& x, int64_t rounding) {
  const auto type = x.scalar_type();
  return (type == at::kHalf || type == at::kBFloat16) && rounding_type(rounding) == type;
}

inline RegionShape check_region(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, int64_t groups,
                                ReduceKind kind, const std::vector<int64_t>& window, bool half_ok = false) {
  if (half_ok) {
    check_storage(x, "input");
  } else {
    check_float_cuda(x, "input");
  }
  TORCH_CHECK(x.dim() >= 2 && x.dim() <= 5, "kgen: the region input must have shape (N, C, *spatial) with 0 to 3 ",
              "spatial dims, got ", str(x.sizes()));
  RegionShape shape{};
  shape.batch = x.size(0);
  shape.channels = x.size(1);
  shape.groups = groups;
  shape.dims = static_cast<int>(x.dim()) - 2;
  shape.plane = 1;
  TORCH_CHECK(groups > 0 && shape.channels % groups == 0, "kgen: ", str(shape.channels),
              " channels are not divisible into ", str(groups), " groups");
  TORCH_CHECK(gamma.defined() == beta.defined(),
              "kgen: GroupNorm weight and bias must both be given (affine) or both be undefined (affine=False)");
  if (gamma.defined()) {
    for (const auto* t : {&gamma, &beta}) {
      check_float_cuda(*t, "GroupNorm weight/bias");
      TORCH_CHECK(t->dim() == 1 && t->size(0) == shape.channels, "kgen: GroupNorm weight/bias must have shape (",
                  str(shape.channels), "), got ", str(t->sizes()));
      TORCH_CHECK(t->device() == x.device(), "kgen: GroupNorm weight/bias are on ", t->device().str(),
                  " but the input is on ", x.device().str());
    }
  }
  for (int d = 0; d < shape.dims; ++d) {
    shape.size[d] = x.size(2 + d);
    shape.plane *= shape.size[d];
    shape.window[d] = 1;
    shape.pooled[d] = shape.size[d];
  }
  if (kind == ReduceKind::kWindow) {
    TORCH_CHECK(shape.dims >= 1, "kgen: a window reduction needs at least one spatial dim, got input ",
                str(x.sizes()));
    TORCH_CHECK(window.size() == size_t(shape.dims), "kgen: the window needs one size per spatial dim (",
                str(shape.dims), "), got ", str(c10::IntArrayRef(window)));
    for (int d = 0; d < shape.dims; ++d) {
      TORCH_CHECK(window[d] >= 1, "kgen: window sizes must be positive, got ", str(c10::IntArrayRef(window)));
      shape.window[d] = window[d];
      shape.pooled[d] = shape.size[d] / window[d];
    }
  }
  TORCH_CHECK(shape.plane < (int64_t(1) << 31), "kgen: at most 2^31 - 1 values per (sample, channel) plane, got ",
              str(shape.plane));
  return shape;
}

// `plane`: values per (sample, channel) plane (a faithful region normalises one-value planes by native_group_norm's
// other formula: RegionParams::faithful, faithful_kind).
template <class Pro, class Epi>
inline RegionParams region_params(const std::vector<at::Tensor>& prologue, const std::vector<at::Tensor>& epilogue,
                                  int64_t channels, const at::Device& device, int64_t plane) {
  TORCH_CHECK(prologue.size() == size_t(Pro::kParams), "kgen: the prologue takes ", str(Pro::kParams),
              " parameters, got ", str(int64_t(prologue.size())));
  TORCH_CHECK(epilogue.size() == size_t(Epi::kParams), "kgen: the epilogue takes ", str(Epi::kParams),
              " parameters, got ", str(int64_t(epilogue.size())));
  return RegionParams{param_table(prologue, channels, device, "prologue"),
                      param_table(epilogue, channels, device, "epilogue"), call_statistics_rounding(),
                      faithful_kind(plane)};
}

inline Geometry geometry(const RegionShape& shape) {
  Geometry g{};
  const int pad = 3 - shape.dims;
  for (int d = 0; d < 3; ++d) {
    const bool real = d >= pad;
    g.size[d] = real ? shape.size[d - pad] : 1;
    g.window[d] = real ? shape.window[d - pad] : 1;
    g.pooled[d] = real ? shape.pooled[d - pad] : 1;
  }
  g.pooled_plane = g.pooled[0] * g.pooled[1] * g.pooled[2];
  g.window_elems = static_cast<int>(g.window[0] * g.window[1] * g.window[2]);
  g.div_hw = FastDiv::make(g.size[1] * g.size[2]);
  g.div_w = FastDiv::make(g.size[2]);
  for (int d = 0; d < 3; ++d) g.div_window[d] = FastDiv::make(g.window[d]);
  g.div_pooled_plane = FastDiv::make(std::max<int64_t>(g.pooled_plane, 1));
  g.div_pw = FastDiv::make(std::max<int64_t>(g.pooled[2], 1));
  g.div_ph = FastDiv::make(std::max<int64_t>(g.pooled[1], 1));
  g.div_c = FastDiv::make(std::max<int64_t>(shape.channels, 1));
  g.div_cpg = FastDiv::make(std::max<int64_t>(shape.channels_per_group(), 1));
  return g;
}

inline std::vector<int64_t> out_sizes(const at::Tensor& x, const RegionShape& shape, ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kNone:
      return x.sizes().vec();
    case ReduceKind::kChannel: {
      std::vector<int64_t> s{shape.batch};
      for (int d = 0; d < shape.dims; ++d) s.push_back(shape.size[d]);
      return s;
    }
    case ReduceKind::kPlane:
      return {shape.batch, shape.channels};
    case ReduceKind::kSample:
      return {shape.batch};
    case ReduceKind::kWindow: {
      std::vector<int64_t> s{shape.batch, shape.channels};
      for (int d = 0; d < shape.dims; ++d) s.push_back(shape.pooled[d]);
      return s;
    }
  }
  return {};
}

// Values per output of the reduction (the extent it reduces over).
inline int64_t reduce_count(const RegionShape& shape, ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kNone:
      return 1;
    case ReduceKind::kChannel:
      return shape.channels;
    case ReduceKind::kPlane:
      return shape.plane;
    case ReduceKind::kSample:
      return shape.channels * shape.plane;
    case ReduceKind::kWindow:
      return shape.window[0] * (shape.dims > 1 ? shape.window[1] : 1) * (shape.dims > 2 ? shape.window[2] : 1);
  }
  return 1;
}

template <ReduceKind R, ReduceOp O>
constexpr bool kRegionHasAux = R != ReduceKind::kNone && kHasAux<O>;

// The saved aux's shape for an output of shape `out`: out's, or (2, *out) with the extremes' x (saves_extreme_x).
template <class Epi, ReduceKind R, ReduceOp O>
std::vector<int64_t> aux_sizes(c10::IntArrayRef out) {
  std::vector<int64_t> sizes(out.begin(), out.end());
  if constexpr (saves_extreme_x<Epi, R, O>()) sizes.insert(sizes.begin(), 2);
  return sizes;
}

// The outputs of an empty input: a reduction over nothing is 0 (sum), NaN (mean), -inf (log-sum-exp), an
// error (max, min), as torch.
template <ReduceKind R, ReduceOp O>
void fill_empty(at::Tensor& out, at::Tensor& aux) {
  if (out.numel() == 0) return;
  if constexpr (R != ReduceKind::kNone) {
    TORCH_CHECK(!kHasAux<O>, "kgen: max/min of an empty reduction (input of zero elements)");
    out.fill_(O == ReduceOp::kSum ? 0.0 : O == ReduceOp::kMean ? NAN : -INFINITY);
  }
  if (aux.defined()) aux.zero_();
}

inline void check_grid(int64_t blocks, const char* what) {
  TORCH_CHECK(blocks < (int64_t(1) << 31), "kgen: too many blocks for the ", what, " kernel: ", str(blocks));
}

// The forward's saved statistics, as a backward receives them: mean (N, G, 2) and rstd (N, G) beside x.
inline void check_saved_statistics(const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& x, int64_t rows) {
  for (const auto* t : {&mean, &rstd}) {
    check_float_cuda(*t, "saved GroupNorm statistics");
    TORCH_CHECK(t->device() == x.device(), "kgen: saved statistics are on ", t->device().str(),
                " but the input is on ", x.device().str());
  }
  TORCH_CHECK(mean.is_contiguous() && mean.numel() == rows * 2 && rstd.is_contiguous() && rstd.numel() == rows,
              "kgen: saved statistics must be the forward's (N, G, 2) mean and (N, G) rstd");
}

// A backward's parameter gradient (dgamma, dbeta, dprologue, depilogue): every backward path writes each entry where x
// has elements, so nothing is filled then (a fill is a launch: host time on a small model); an empty x's gradients
// are zeros, the sum over nothing.
inline at::Tensor param_grad_buffer(c10::IntArrayRef sizes, const at::TensorOptions& options, bool x_empty) {
  return x_empty ? at::zeros(sizes, options) : at::empty(sizes, options);
}

// The four of a region's backward, as it returns them: dgamma (C) and dbeta (C), undefined without affine, dprologue
// (Kp, C) and depilogue (Ke, C).
template <class Pro, class Epi>
inline std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> param_grad_buffers(
    int64_t channels, bool affine, const at::TensorOptions& options, bool x_empty) {
  return {affine ? param_grad_buffer({channels}, options, x_empty) : at::Tensor(),
          affine ? param_grad_buffer({channels}, options, x_empty) : at::Tensor(),
          param_grad_buffer({int64_t(Pro::kParams), channels}, options, x_empty),
          param_grad_buffer({int64_t(Epi::kParams), channels}, options, x_empty)};
}

// dgamma, dbeta from the per (sample, channel) sums of dy and dy (z - mean) (groupnorm/statistics.cuh's param_grad_kernel);
// nothing when they are undefined (affine=False).
inline void affine_grads(const double2* plane_sums, const at::Tensor& rstd, const GroupShape& gshape,
                         at::Tensor& dgamma, at::Tensor& dbeta) {
  if (!dgamma.defined()) return;
  param_grad_kernel<0><<<gshape.channels, kParamGradThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      plane_sums, rstd.data_ptr<float>(), gshape, dgamma.data_ptr<float>(), dbeta.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Between a backward's two sweeps: from the per (sample, channel, split) sums of dy and dy (z - mean) in
// gn_partial, the per (sample, group) coefficients B, C (groupnorm/statistics.cuh's backward_group_kernel) and, affine,
// dgamma and dbeta.
template <int kBlock>
void group_backward(const at::Tensor& gn_partial, int splits, const at::Tensor& gamma_or_ones, const at::Tensor& rstd,
                    const GroupShape& gshape, at::Tensor& plane_sums, at::Tensor& coef, at::Tensor& dgamma,
                    at::Tensor& dbeta) {
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t rows = gshape.batch * gshape.groups;
  auto* plane_sums_ptr = reinterpret_cast<double2*>(plane_sums.data_ptr<double>());
  backward_group_kernel<0, kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
      as_float2(gn_partial), splits, gamma_or_ones.data_ptr<float>(), rstd.data_ptr<float>(), gshape, plane_sums_ptr,
      as_float2(coef));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  affine_grads(plane_sums_ptr, rstd, gshape, dgamma, dbeta);
}

// The functors' parameter gradients (Kp, C) and (Ke, C) from their per (sample, channel, split) partials, laid
// out as param_sums_kernel reads them (`entries` apart from one parameter to the next).
inline void param_sums(const at::Tensor& epi_partial, int epi_params, const at::Tensor& pro_partial, int pro_params,
                       int64_t entries, int splits, const RegionShape& shape, at::Tensor& depilogue,
                       at::Tensor& dprologue) {
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int counts[2] = {epi_params, pro_params};
  const at::Tensor* partials[2] = {&epi_partial, &pro_partial};
  at::Tensor* grads[2] = {&depilogue, &dprologue};
  for (int f = 0; f < 2; ++f) {
    if (counts[f] == 0) continue;
    const int64_t outputs = int64_t(counts[f]) * shape.channels;
    if (outputs == 0) continue;
    check_grid(outputs, "parameter sums");
    param_sums_kernel<<<static_cast<unsigned>(outputs), kParamSumThreads, 0, stream>>>(
        partials[f]->data_ptr<float>(), entries, splits, shape.batch, shape.channels, grads[f]->data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

}  // namespace region_twopass

namespace region_twopass {

// The kNone forward on clusters, each slice read once (groupnorm/cluster/cluster.cuh): fills out, mean and rstd and says
// true where its plan applies and the GPU placed its clusters; false (nothing launched) where the sweeps run.
template <class Pro, class Epi>
bool cluster_forward(const at::Tensor& x, const RegionParams& params, const RegionShape& shape, double eps,
                     const float* gamma, const float* beta, at::Tensor& out, float2* mean, float* rstd) {
  namespace rc = region_cluster;
  const bool vec = shape.plane % 4 == 0 && aligned(x) && aligned(out);
  bool done = false;
  dispatch_vec(vec, [&](auto kv) {
    constexpr int W = decltype(kv)::value ? 4 : 1;
    auto* kernel = rc::cluster_forward_kernel<Pro, Epi, rc::kClusterThreads, W>;
    const rc::ClusterPlan plan = rc::cluster_forward_plan(shape, x, aligned(x), reinterpret_cast<const void*>(kernel));
    if (!plan.feasible) return;
    const int64_t blocks = shape.batch * shape.groups * plan.cluster;
    if (blocks >= (int64_t(1) << 31)) return;
    done = rc::launch_clusters(kernel, plan, blocks, rc::kClusterThreads, at::cuda::getCurrentCUDAStream(),
                               x.data_ptr<float>(), params, shape, plan, eps, gamma, beta, out.data_ptr<float>(), mean,
                               rstd);
    if (done) C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return done;
}

// Whether a kNone forward takes the cluster kernel though a slice also fits the resident one: slices of at least
// kClusterOverResident values that the cluster forward takes (cluster_forward_plan: sm_90, planes of 512 values or
// more). H200, GroupNorm then GELU, slices of 6,272 to 16,384 values: the cluster forward 1.16x to 3.7x the resident
// one, and 1.95x on rows of 12,799 unaligned values (benchmarks/results/h200/cliffs/). Smaller slices keep the
// resident forward, not measured against the cluster. A float16 / bfloat16 x is judged as the float32 copy the cluster
// kernel would read (a fresh tensor: aligned).
constexpr int64_t kClusterOverResident = 6144;

template <class Pro, class Epi, ReduceKind R>
bool cluster_forward_preferred(const at::Tensor& x, int64_t groups) {
  if constexpr (R != ReduceKind::kNone) {
    return false;
  } else {
    const auto type = x.scalar_type();
    if (!x.is_cuda() || (type != at::kFloat && type != at::kHalf && type != at::kBFloat16) || x.dim() < 3 ||
        x.numel() == 0 || groups <= 0 || x.size(1) % groups != 0) {
      return false;
    }
    const bool x_aligned = type != at::kFloat || aligned(x);
    RegionShape shape{};
    shape.batch = x.size(0);
    shape.channels = x.size(1);
    shape.groups = groups;
    shape.plane = x.numel() / (x.size(0) * x.size(1));
    if (shape.slice_elems() < kClusterOverResident) return false;
    const bool vec = shape.plane % 4 == 0 && x_aligned;
    const void* kernel = vec ? reinterpret_cast<const void*>(region_cluster::cluster_forward_kernel<Pro, Epi,
                                                                 region_cluster::kClusterThreads, 4>)
                             : reinterpret_cast<const void*>(region_cluster::cluster_forward_kernel<Pro, Epi,
                                                                 region_cluster::kClusterThreads, 1>);
    return region_cluster::cluster_forward_plan(shape, x, x_aligned, kernel).feasible;
  }
}

// The sweep after the statistics: the normalised, epilogued values and their reduction into out (and aux), from
// the saved mean and rstd. `plan`: the sweeps' split of a plane (plan_split<kBlock>).
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock>
void forward_apply(const at::Tensor& x, const RegionParams& params, const RegionShape& shape, const SplitPlan& plan,
                   const float2* mean_ptr, const float* rstd_ptr, const float* gamma_ptr, const float* beta_ptr,
                   at::Tensor& out, at::Tensor& aux, bool for_backward) {
  const auto stream = at::cuda::getCurrentCUDAStream();
  const auto options = x.options();
  const int64_t planes = shape.batch * shape.channels;
  const int64_t blocks = planes * plan.splits;
  if constexpr (R != ReduceKind::kChannel && R != ReduceKind::kWindow) {  // the plane sweeps
    using P = typename Reducer<O>::T;
    at::Tensor partial;
    P* partial_ptr = nullptr;
    if constexpr (R != ReduceKind::kNone) {
      partial = at::empty({blocks * int64_t(sizeof(P))}, options.dtype(at::kByte));
      partial_ptr = reinterpret_cast<P*>(partial.data_ptr());
    }
    const bool vec = aligned(x) && (R != ReduceKind::kNone || aligned(out));  // odd planes too
    const bool warps = warp_teams(plan, shape.plane);
    const int64_t grid = team_blocks<kBlock>(blocks, warps);
    dispatch_storage(x.scalar_type(), [&](auto storage) {
      using T = typename decltype(storage)::type;
      T* v_ptr = R == ReduceKind::kNone ? data_as<T>(out) : nullptr;
      if constexpr (R == ReduceKind::kNone) {
        if (shape.plane < kFlatPlaneValues) {   // planes < 2^31 (check_grid): p + the grid's stride < 2^32
          const int64_t flat_grid = std::min<int64_t>(blocks_for(planes, kBlock), int64_t(1) << 20);
          flat_forward_kernel<Pro, Epi, kBlock, T><<<flat_grid, kBlock, 0, stream>>>(
              data_as<const T>(x), params, shape, FastDiv::make(shape.channels),
              FastDiv::make(shape.channels_per_group()), mean_ptr, rstd_ptr, gamma_ptr, beta_ptr, v_ptr);
          return;
        }
      }
      dispatch_vec(vec, [&](auto kv) {
        constexpr bool V = decltype(kv)::value;
        if (warps) {
          plane_forward_kernel<Pro, Epi, R, O, kBlock, V, T, kWarpSize><<<grid, kBlock, 0, stream>>>(
              data_as<const T>(x), params, shape, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr, v_ptr, partial_ptr,
              blocks);
        } else {
          plane_forward_kernel<Pro, Epi, R, O, kBlock, V, T><<<grid, kBlock, 0, stream>>>(
              data_as<const T>(x), params, shape, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr, v_ptr, partial_ptr,
              blocks);
        }
      });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    if constexpr (R != ReduceKind::kNone) {
      const int64_t outs = R == ReduceKind::kPlane ? planes : shape.batch;
      const int64_t per_out = R == ReduceKind::kPlane ? plan.splits : shape.channels * plan.splits;
      reduce_finish_kernel<O, kBlock><<<blocks_for(outs * kWarpSize, kBlock), kBlock, 0, stream>>>(
          partial_ptr, per_out, outs, reduce_count(shape, R), out.data_ptr<float>(),
          kRegionHasAux<R, O> ? aux.data_ptr<int>() : nullptr);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  } else if constexpr (R == ReduceKind::kChannel) {
    const bool vec = shape.plane % 4 == 0 && aligned(x) && aligned(out) && aligned(aux);
    int* aux_ptr = kRegionHasAux<R, O> ? aux.data_ptr<int>() : nullptr;
    dispatch_storage(x.scalar_type(), [&](auto storage) {
      using T = typename decltype(storage)::type;
      dispatch_vec(vec, [&](auto kv) {
        constexpr int W = decltype(kv)::value ? 4 : 1;
        const int64_t blocks_per_sample = blocks_for(shape.plane / W, kBlock);
        check_grid(shape.batch * blocks_per_sample, "channel reduction");
        channel_forward_kernel<Pro, Epi, O, kBlock, W, T><<<shape.batch * blocks_per_sample, kBlock, 0, stream>>>(
            data_as<const T>(x), params, shape, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr, out.data_ptr<float>(),
            aux_ptr, blocks_per_sample);
      });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  } else {  // kWindow
    const int64_t outs = out.numel();
    if (outs > 0) {
      TORCH_CHECK(outs < (int64_t(1) << 31), "kgen: at most 2^31 - 1 pooled outputs, got ", str(outs));
      const Geometry geo = geometry(shape);
      int* aux_ptr = kRegionHasAux<R, O> ? aux.data_ptr<int>() : nullptr;
      float* extreme_x =
          saves_extreme_x<Epi, R, O>() && for_backward ? reinterpret_cast<float*>(aux_ptr + outs) : nullptr;
      dispatch_storage(x.scalar_type(), [&](auto storage) {
        using T = typename decltype(storage)::type;
        window_forward_kernel<Pro, Epi, O, kBlock, T><<<blocks_for(outs, kBlock), kBlock, 0, stream>>>(
            data_as<const T>(x), params, shape, geo, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr, out.data_ptr<float>(),
            aux_ptr, extreme_x, outs);
      });
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }
}

}  // namespace region_twopass

// A faithful region's statistics as native_group_norm computes them (groupnorm/statistics_torch.cuh, in a file only
// where a region is faithful).
template <class Pro, ReduceKind R, int kBlock>
void torch_statistics(const at::Tensor& x, const RegionParams& params, const RegionShape& shape, double eps,
                      float2* mean, float* rstd, cudaStream_t stream);

// Forward of a region: returns {out, mean (N, G, 2) as (hi, lo) pairs, rstd (N, G), aux (int32, out's shape,
// for max/min; (2, *out's shape) where the window backward reads the extremes' x (saves_extreme_x), that plane
// written only for_backward; else undefined)}. gamma and beta undefined: GroupNorm(affine=False). x may be float16 or
// bfloat16: out then has x's dtype for kNone, float32 for the reductions (their outputs are rounded once by the
// caller).
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups /*0 = runtime*/,
          bool kFaithful = false /*a faithful region: torch_statistics where RegionParams::faithful*/>
std::vector<at::Tensor> region_forward_twopass(const at::Tensor& input, const at::Tensor& gamma_in,
                                               const at::Tensor& beta_in,
                                               const std::vector<at::Tensor>& prologue_params,
                                               const std::vector<at::Tensor>& epilogue_params, int64_t groups,
                                               double eps, const std::vector<int64_t>& window,
                                               bool for_backward = true) {
  namespace rt = region_twopass;
  static_assert(kBlock >= kWarpSize && kBlock <= 1024 && kBlock % kWarpSize == 0, "kBlock: whole warps, <= 1024");
  static_assert(kGroups >= 0, "kGroups: 0 (run time) or the group count");
  const RegionShape shape = rt::check_region(input, gamma_in, beta_in, groups, R, window, /*half_ok=*/true);
  const c10::cuda::CUDAGuard device_guard(input.device());
  const RegionParams params = rt::region_params<Pro, Epi>(prologue_params, epilogue_params, shape.channels,
                                                          input.device(), shape.plane);
  const auto x = input.contiguous();
  const at::Tensor gamma = gamma_in.defined() ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = beta_in.defined() ? beta_in.contiguous() : at::Tensor();
  const auto options = x.options().dtype(at::kFloat);
  auto out = at::empty(rt::out_sizes(x, shape, R), R == ReduceKind::kNone ? x.options() : options);
  at::Tensor aux = rt::kRegionHasAux<R, O>
                       ? at::empty(rt::aux_sizes<Epi, R, O>(out.sizes()), options.dtype(at::kInt))
                       : at::Tensor();
  auto mean = at::empty({shape.batch, shape.groups, 2}, options);
  auto rstd = at::empty({shape.batch, shape.groups}, options);
  if (x.numel() == 0) {
    mean.zero_();
    rstd.zero_();
    rt::fill_empty<R, O>(out, aux);
    return {out, mean, rstd, aux};
  }
  if constexpr (R == ReduceKind::kSample && rt::kHasAux<O>) {
    TORCH_CHECK(shape.channels * shape.plane < (int64_t(1) << 31),
                "kgen: max/min over a sample of 2^31 or more values (int32 positions)");
  }
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t planes = shape.batch * shape.channels;
  const int64_t rows = shape.batch * shape.groups;
  const float* gamma_ptr = rt::data_or_null(gamma);
  const float* beta_ptr = rt::data_or_null(beta);
  float2* mean_ptr = as_float2(mean);
  float* rstd_ptr = rstd.data_ptr<float>();
  // A faithful region's statistics are native_group_norm's (statistics_torch.cuh: its chains over blocks, its trees).
  const bool torch_moments = kFaithful && params.faithful != kNotFaithful && shape.slice_elems() < (int64_t(1) << 31);
  if constexpr (R == ReduceKind::kNone) {
    if (x.scalar_type() == at::kFloat && !torch_moments &&
        rt::cluster_forward<Pro, Epi>(x, params, shape, eps, gamma_ptr, beta_ptr, out, mean_ptr, rstd_ptr)) {
      return {out, mean, rstd, aux};
    }
  }
  const SplitPlan plan = plan_split<kBlock>(shape.plane);
  const int64_t blocks = planes * plan.splits;
  rt::check_grid(blocks, "sweep");

  // Statistics.
  if (torch_moments) {
    rt::check_grid(rows, "statistics");
    if constexpr (kFaithful) torch_statistics<Pro, R, kBlock>(x, params, shape, eps, mean_ptr, rstd_ptr, stream);
  } else {
    auto partial = at::empty({blocks * int64_t(sizeof(Moments))}, options.dtype(at::kByte));
    auto pilots = at::empty({rows}, options);
    auto* partial_ptr = reinterpret_cast<Moments*>(partial.data_ptr());
    const bool vec = rt::aligned(x);  // odd planes too (ChunkSpan)
    const bool warps = rt::warp_teams(plan, shape.plane);
    const int64_t grid = rt::team_blocks<kBlock>(blocks, warps);
    dispatch_storage(x.scalar_type(), [&](auto storage) {
      using T = typename decltype(storage)::type;
      dispatch_vec(vec, [&](auto kv) {
        constexpr bool V = decltype(kv)::value;
        if (warps) {
          rt::stats_partial_kernel<Pro, kBlock, V, T, kWarpSize><<<grid, kBlock, 0, stream>>>(
              data_as<const T>(x), params, shape, plan, partial_ptr, pilots.data_ptr<float>(), blocks);
        } else {
          rt::stats_partial_kernel<Pro, kBlock, V, T><<<grid, kBlock, 0, stream>>>(
              data_as<const T>(x), params, shape, plan, partial_ptr, pilots.data_ptr<float>(), blocks);
        }
      });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const int64_t per_row = shape.channels_per_group() * plan.splits;
    TORCH_CHECK(per_row < (int64_t(1) << 31), "kgen: too many chunks per group");
    rt::stats_finalize_kernel<kBlock><<<blocks_for(rows * kWarpSize, kBlock), kBlock, 0, stream>>>(
        partial_ptr, static_cast<int>(per_row), rows, pilots.data_ptr<float>(), eps, params.statistics, mean_ptr,
        rstd_ptr);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  rt::forward_apply<Pro, Epi, R, O, kBlock>(x, params, shape, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr, out, aux,
                                            for_backward);
  return {out, mean, rstd, aux};
}

}  // namespace kgen
