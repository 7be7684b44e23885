// ---- groupnorm/twopass/backward_host.cuh: a region's backward on the large-tensor path (design: groupnorm/twopass/twopass.cuh) ----
// The checks and allocations of a backward call, then the first of these that applies: the cluster backward
// (groupnorm/cluster/cluster.cuh; kPlane and kSample), the pipelined backward (groupnorm/twopass/backward_pipeline.cuh), the window
// kernels (groupnorm/twopass/window_backward.cuh; kWindow), the two sweep kernels with the group coefficients between them.
namespace kgen {

namespace region_twopass {

// What a region's backward reads, checked and made contiguous; shared by the two-pass and the cluster backward.
struct BackwardInputs {
  RegionShape shape;
  RegionParams params;
  at::Tensor x, dout, out, aux, gamma, beta;  // out: log-sum-exp only; aux: max/min only; gamma, beta: affine only
  bool affine;
};

template <class Pro, class Epi, ReduceKind R, ReduceOp O>
BackwardInputs backward_inputs(const at::Tensor& dout_in, const at::Tensor& input, const at::Tensor& gamma_in,
                               const at::Tensor& beta_in, const std::vector<at::Tensor>& prologue_params,
                               const std::vector<at::Tensor>& epilogue_params, const at::Tensor& mean,
                               const at::Tensor& rstd, const at::Tensor& out_in, const at::Tensor& aux_in,
                               int64_t groups, const std::vector<int64_t>& window) {
  BackwardInputs in;
  in.shape = check_region(input, gamma_in, beta_in, groups, R, window, /*half_ok=*/true);
  in.params = region_params<Pro, Epi>(prologue_params, epilogue_params, in.shape.channels, input.device(),
                                      in.shape.plane);
  const auto expected = out_sizes(input, in.shape, R);
  check_storage(dout_in, "gradient of the output");
  TORCH_CHECK(dout_in.scalar_type() == input.scalar_type(), "kgen: the output gradient is ", dout_in.scalar_type(),
              " but the input is ", input.scalar_type());
  TORCH_CHECK(dout_in.device() == input.device(), "kgen: the output gradient is on ", dout_in.device().str(),
              " but the input is on ", input.device().str());
  TORCH_CHECK(dout_in.sizes().equals(expected), "kgen: the output gradient has shape ", str(dout_in.sizes()),
              ", expected ", str(c10::IntArrayRef(expected)));
  const bool needs_out = R != ReduceKind::kNone && O == ReduceOp::kLogSumExp;
  if (needs_out) {
    check_float_cuda(out_in, "saved output");
    TORCH_CHECK(out_in.device() == input.device() && out_in.sizes().equals(expected),
                "kgen: the saved output must be the forward's, of shape ", str(c10::IntArrayRef(expected)), ", got ",
                str(out_in.sizes()));
  }
  if constexpr (kRegionHasAux<R, O>) {
    const auto aux_expected = aux_sizes<Epi, R, O>(expected);
    TORCH_CHECK(aux_in.defined() && aux_in.is_cuda() && aux_in.scalar_type() == at::kInt &&
                    aux_in.device() == input.device() && aux_in.sizes().equals(aux_expected),
                "kgen: the saved positions (aux) must be the forward's int32 tensor of shape ",
                str(c10::IntArrayRef(aux_expected)));
  }
  check_saved_statistics(mean, rstd, input, in.shape.batch * in.shape.groups);
  in.x = input.contiguous();
  // kChannel's and kWindow's dout is read as float32 beside a half x (SweepDout; window_sweep_kernel): a copy the
  // size of out, 1/C or 1/window of x's.
  const bool dout_float = R == ReduceKind::kChannel || R == ReduceKind::kWindow;
  in.dout = dout_float && dout_in.scalar_type() != at::kFloat ? dout_in.to(at::kFloat) : dout_in.contiguous();
  in.out = needs_out ? out_in.contiguous() : at::Tensor();
  in.aux = kRegionHasAux<R, O> ? aux_in.contiguous() : at::Tensor();
  in.affine = gamma_in.defined();
  in.gamma = in.affine ? gamma_in.contiguous() : at::Tensor();
  in.beta = in.affine ? beta_in.contiguous() : at::Tensor();
  return in;
}

// 16-byte loads and stores when every stream read or written at the element's position allows them. Odd planes
// (S % 4 != 0) too, with scalar ends per chunk (ChunkSpan), where those streams share x's offset: all but
// kChannel's (dout, out, aux at (n, s)). (H100, L2-60's 31 x 63 x 63 planes: the backward's sweeps 1.74 ms against
// 1.88 by scalar accesses.)
template <ReduceKind R>
bool backward_vec(const BackwardInputs& in, const at::Tensor& dx) {
  bool vec = (in.shape.plane % 4 == 0 || R != ReduceKind::kChannel) && aligned(in.x) && aligned(dx);
  if (R == ReduceKind::kNone || R == ReduceKind::kChannel) vec = vec && aligned(in.dout);
  if (R == ReduceKind::kChannel) vec = vec && aligned(in.out) && aligned(in.aux);
  return vec;
}

// The cluster backward (groupnorm/cluster/cluster.cuh) of checked inputs on their device, for the reductions it takes
// (cluster_takes): fills `result` as region_backward_twopass returns it and says true where its plan applies;
// false (nothing launched) where the two-pass sweeps run.
template <class Pro, class Epi, ReduceKind R, ReduceOp O>
bool cluster_backward(const BackwardInputs& in, const at::Tensor& mean, const at::Tensor& rstd,
                      std::vector<at::Tensor>& result) {
  static_assert(region_cluster::cluster_takes<R>(), "the cluster backward takes kPlane and kSample");
  namespace rc = region_cluster;
  const RegionShape& shape = in.shape;
  const auto options = in.x.options();
  if (in.x.scalar_type() != at::kFloat) return false;
  auto dx = at::empty_like(in.x, at::MemoryFormat::Contiguous);
  const bool vec = backward_vec<R>(in, dx) && shape.plane % 4 == 0;
  const bool copy16 = aligned(in.x);
  bool done = false;
  dispatch_vec(vec, [&](auto kv) {
    constexpr int W = decltype(kv)::value ? 4 : 1;
    auto* kernel = rc::cluster_backward_kernel<Pro, Epi, R, O, rc::kClusterThreads, W>;
    const rc::ClusterPlan plan =
        rc::cluster_plan<Pro, Epi, R>(shape, in.x, copy16, reinterpret_cast<const void*>(kernel));
    if (!plan.feasible) return;
    const int64_t planes = shape.batch * shape.channels;
    const int64_t blocks = shape.batch * shape.groups * plan.cluster;
    if (blocks >= (int64_t(1) << 31)) return;
    at::Tensor dgamma, dbeta, dprologue, depilogue;
    std::tie(dgamma, dbeta, dprologue, depilogue) =
        param_grad_buffers<Pro, Epi>(shape.channels, in.affine, options, in.x.numel() == 0);
    auto plane_sums = at::empty({planes, 2}, options.dtype(at::kDouble));
    auto epi_grad = at::empty({int64_t(Epi::kParams) * planes}, options);
    auto pro_grad = at::empty({int64_t(Pro::kParams) * planes}, options);
    const auto stream = at::cuda::getCurrentCUDAStream();
    const int* aux_ptr = in.aux.defined() ? in.aux.data_ptr<int>() : nullptr;
    const float2* mean_ptr = as_float2(mean);
    const float* rstd_ptr = rstd.data_ptr<float>();
    double2* plane_sums_ptr = reinterpret_cast<double2*>(plane_sums.data_ptr<double>());
    const bool launched = rc::launch_clusters(
        kernel, plan, blocks, rc::kClusterThreads, stream, in.x.data_ptr<float>(), in.dout.data_ptr<float>(),
        data_or_null(in.out), aux_ptr, in.params, shape, geometry(shape), plan, mean_ptr, rstd_ptr,
        data_or_null(in.gamma), data_or_null(in.beta), dx.data_ptr<float>(), plane_sums_ptr,
        Epi::kParams > 0 ? epi_grad.data_ptr<float>() : nullptr,
        Pro::kParams > 0 ? pro_grad.data_ptr<float>() : nullptr);
    if (!launched) return;
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    affine_grads(plane_sums_ptr, rstd, GroupShape{shape.batch, shape.channels, shape.groups, shape.plane}, dgamma,
                 dbeta);
    param_sums(epi_grad, Epi::kParams, pro_grad, Pro::kParams, planes, 1, shape, depilogue, dprologue);
    result = {dx, dgamma, dbeta, dprologue, depilogue};
    done = true;
  });
  return done;
}

// ---- the pipelined backward (groupnorm/twopass/backward_pipeline.cuh)

// Rounds of the sweep in one item; the share of L2 that what is read and written between an item's two passes may
// take; how far pass B trails pass A beyond a slice, in resident blocks: as far as that share allows, up to
// kPipelineMaxExtraLag, and at least kPipelineMinExtraLag (else the two sweep kernels run: their second pass
// reads DRAM, the pipelined one's would too, and waits on top).
// (H100: L2-19 at 0.75 / 1 / 1.5 resident blocks 3.70 / 3.44 / 3.56 ms; L1-35, whose slice alone is 16 MB of x and
// dout, with the lag 50 / 60 / 70 % of L2 allows 10.22 / 10.22 / 10.94 ms, the sweeps 12.31. Two rounds an item:
// 3.52 against 3.44 ms at L2-19.)
constexpr int kPipelineRounds = 1;
constexpr double kPipelineL2Share = 0.6;
constexpr double kPipelineMaxExtraLag = 1.0;
constexpr double kPipelineMinExtraLag = 0.2;

// The reductions the pipelined backward takes: kNone. (H100: L2-92's log-sum-exp over channels 962
// against 787 us and L2-85's window max 1521 against 1052 us for the sweeps: issue-bound kernels that saving a
// DRAM read does not help, and that the persistent kernel's extra work slows.) And only on 16-byte packs (odd
// planes with scalar ends too): a scalar plane's items are 4x as many, each too short (L2-60 as scalars: 3.96
// against 1.89 ms).
template <ReduceKind R>
constexpr bool pipeline_takes() {
  return R == ReduceKind::kNone;
}

// -1: as planned; 0: never; 1: wherever it is correct; 2: so, and pass B only a slice behind pass A (the most
// waiting). The tests' switch; emitted files leave it at -1.
inline std::atomic<int>& pipeline_mode() {
  static std::atomic<int> mode{-1};
  return mode;
}

// Planes an item of the pipelined backward takes, one to a team (PipelinePlan::teams): on planes shorter than one pass
// of a block's 16-byte packs (1,024 values), the most teams of whole warps whose round of kUnroll packs still covers a
// plane and whose count divides a group's channels (an item stays within its slice); else 1, an item a (plane, chunk).
inline int64_t pipeline_teams(int64_t plane, int64_t cpg, bool vec) {
  const int64_t pack = vec ? 4 : 1;
  int64_t teams = 1;
  while (plane < int64_t(kPipelineThreads) * 4 && 2 * teams <= kPipelineThreads / kWarpSize && cpg % (2 * teams) == 0 &&
         plane <= kPipelineThreads / (2 * teams) * pack * kUnroll * kPipelineRounds) {
    teams *= 2;
  }
  return teams;
}

// Blocks of `kernel` the GPU keeps resident at `block` threads, asked once per kernel and device.
inline int64_t resident_blocks(const void* kernel, int block, int device) {
  static std::mutex lock;
  static std::map<std::pair<const void*, int>, int64_t> known;
  const std::lock_guard<std::mutex> guard(lock);
  auto found = known.find({kernel, device});
  if (found != known.end()) return found->second;
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, 0));
  const int64_t blocks = int64_t(per_sm) * multiprocessors(device);
  known[{kernel, device}] = blocks;
  return blocks;
}

// The pipelined backward of checked inputs: fills dx and the parameter gradients and says true, or false
// (nothing launched) where its plan does not apply.
template <class Pro, class Epi, ReduceKind R, ReduceOp O>
bool pipeline_backward(const BackwardInputs& in, const at::Tensor& mean, const at::Tensor& rstd, bool vec,
                       at::Tensor& dx, at::Tensor& dgamma, at::Tensor& dbeta, at::Tensor& dprologue,
                       at::Tensor& depilogue) {
  const int mode = pipeline_mode().load();
  const RegionShape& shape = in.shape;
  const int64_t target = int64_t(kPipelineThreads) * (vec ? 4 : 1) * kUnroll * kPipelineRounds;
  int64_t splits = std::max<int64_t>(1, (shape.plane + target - 1) / target);
  const int64_t chunk = ((shape.plane + splits - 1) / splits + 3) / 4 * 4;
  splits = (shape.plane + chunk - 1) / chunk;
  const int64_t teams = pipeline_teams(shape.plane, shape.channels_per_group(), vec);
  constexpr int kStreams = 1 + backward_streams<R, O>();
  const int device = in.x.get_device();
  const double l2 = double(cached_attribute<cudaDevAttrL2CacheSize>(device));
  // Odd planes too (16-byte packs with scalar ends per item). (H100, L2-60's 31 x 63 x 63 planes: the pipelined
  // kernel 1416 us against the sweeps' 1687.) Not items shorter than one pass of a block's 16-byte packs: most of the
  // block would idle while the per-item hand-over (tickets, barriers, a slice's wait) stays (H200,
  // poolformer_block_large's 32 x 320 planes of 14 x 14, GroupNorm(1, 320), an item a plane: 994 us for 9.6 MB).
  const bool long_items = teams * std::min(shape.plane, chunk) >= int64_t(kPipelineThreads) * 4;
  // Items of several short planes only where the streams and dx overflow L2. Where they fit, the sweeps' second pass
  // reads L2 as pass B would, and the hand-over only costs. H200, backward kernels: resnet_gn_bottleneck_large's
  // (32, 1024, 28, 28) region, 308 MB, 183 us against the sweeps' 233; poolformer_block_large's (32, 320, 14, 14),
  // 24 MB, 96 us against 20 (benchmarks/results/h200/cliffs/pipeline_teams/).
  const bool overflows_l2 = double(kStreams + 1) * double(in.x.numel()) * sizeof(float) > l2;
  const bool planned = pipeline_takes<R>() && vec && long_items && (teams == 1 || overflows_l2);
  if (!kPipelinedBackward || mode == 0 || (mode < 0 && !planned) || in.x.scalar_type() != at::kFloat) return false;
  const void* kernel =
      vec ? reinterpret_cast<const void*>(backward_pipeline_kernel<Pro, Epi, R, O, kPipelineThreads, true>)
          : reinterpret_cast<const void*>(backward_pipeline_kernel<Pro, Epi, R, O, kPipelineThreads, false>);
  const int64_t resident = resident_blocks(kernel, kPipelineThreads, device);
  const int64_t planes = shape.batch * shape.channels, rows = shape.batch * shape.groups;
  const int64_t parts = planes * splits, items = parts / teams;
  const int64_t per_slice = shape.channels_per_group() * splits / teams;
  if (resident <= 0 || 2 * parts + resident >= (int64_t(1) << 31)) return false;
  // read by both passes, and dx
  const double item_bytes = double(teams) * double(std::min(shape.plane, chunk)) * sizeof(float) * (kStreams + 1);
  const int64_t fits = static_cast<int64_t>(kPipelineL2Share * l2 / item_bytes);
  int64_t lag = std::min<int64_t>(fits, per_slice + static_cast<int64_t>(kPipelineMaxExtraLag * double(resident)));
  if (mode < 0 && lag < per_slice + static_cast<int64_t>(kPipelineMinExtraLag * double(resident))) return false;
  if (mode == 1) lag = std::max<int64_t>(lag, per_slice);
  if (mode == 2) lag = per_slice;
  lag = std::min<int64_t>(lag, items);

  const auto options = in.x.options();
  auto counters = at::zeros({1 + 2 * rows}, options.dtype(at::kInt));
  auto gn_partial = at::empty({parts, 2}, options);
  auto epi_partial = at::empty({int64_t(Epi::kParams) * parts}, options);
  auto pro_partial = at::empty({int64_t(Pro::kParams) * parts}, options);
  auto plane_sums = at::empty({planes, 2}, options.dtype(at::kDouble));
  auto coef = at::empty({rows, 2}, options);
  unsigned* counter_ptr = reinterpret_cast<unsigned*>(counters.data_ptr<int>());
  const PipelineSync sync{counter_ptr, counter_ptr + 1, counter_ptr + 1 + rows};
  const PipelinePlan pipe{SplitPlan{static_cast<int>(splits), chunk}, static_cast<unsigned>(teams),
                          static_cast<unsigned>(items), static_cast<unsigned>(per_slice), static_cast<unsigned>(lag)};
  double2* plane_sums_ptr = reinterpret_cast<double2*>(plane_sums.data_ptr<double>());
  const PipelineArgs args{in.x.data_ptr<float>(),
                          in.dout.data_ptr<float>(),
                          data_or_null(in.out),
                          in.aux.defined() ? in.aux.data_ptr<int>() : nullptr,
                          in.params,
                          shape,
                          geometry(shape),
                          as_float2(mean),
                          rstd.data_ptr<float>(),
                          data_or_null(in.gamma),
                          data_or_null(in.beta),
                          as_float2(coef),
                          plane_sums_ptr,
                          dx.data_ptr<float>(),
                          as_float2(gn_partial),
                          Epi::kParams > 0 ? epi_partial.data_ptr<float>() : nullptr,
                          Pro::kParams > 0 ? pro_partial.data_ptr<float>() : nullptr};
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t grid = std::min<int64_t>(resident, items);
  dispatch_vec(vec, [&](auto kv) {
    backward_pipeline_kernel<Pro, Epi, R, O, kPipelineThreads, decltype(kv)::value>
        <<<static_cast<unsigned>(grid), kPipelineThreads, 0, stream>>>(args, pipe, sync);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  affine_grads(plane_sums_ptr, rstd, GroupShape{shape.batch, shape.channels, shape.groups, shape.plane}, dgamma, dbeta);
  param_sums(epi_partial, Epi::kParams, pro_partial, Pro::kParams, parts, static_cast<int>(splits), shape, depilogue,
             dprologue);
  return true;
}

// What the two sweeps of a backward write between them: the first's per-block partials (`first` blocks: dy and
// dy (z - mean); the epilogue's parameter gradients), the second's (`second` blocks: the prologue's), the plane
// sums and the (sample, group) coefficients; and gamma as backward_group_kernel reads it (affine=False: ones).
struct SweepScratch {
  at::Tensor gamma_or_ones, gn_partial, epi_partial, pro_partial, plane_sums, coef;
  SweepScratch(const BackwardInputs& in, int64_t first, int64_t second, int epi_params, int pro_params) {
    const auto options = in.x.options().dtype(at::kFloat);
    const RegionShape& shape = in.shape;
    gamma_or_ones = in.affine ? in.gamma : at::ones({shape.channels}, options);
    gn_partial = at::empty({first, 2}, options);
    epi_partial = at::empty({int64_t(epi_params) * first}, options);
    pro_partial = at::empty({int64_t(pro_params) * second}, options);
    plane_sums = at::empty({shape.batch * shape.channels, 2}, options.dtype(at::kDouble));
    coef = at::empty({shape.batch * shape.groups, 2}, options);
  }
  float* epi_ptr() const { return epi_partial.numel() > 0 ? epi_partial.data_ptr<float>() : nullptr; }
  float* pro_ptr() const { return pro_partial.numel() > 0 ? pro_partial.data_ptr<float>() : nullptr; }
};

// kWindow's backward (groupnorm/twopass/window_backward.cuh): the first pass over the windows' extremes where it may
// (window_sums_sparse), else over the rows as the second pass; the group coefficients between them.
template <class Pro, class Epi, ReduceOp O, int kBlock>
void window_backward(const BackwardInputs& in, const at::Tensor& mean, const at::Tensor& rstd, at::Tensor& dx,
                     at::Tensor& dgamma, at::Tensor& dbeta, at::Tensor& dprologue, at::Tensor& depilogue) {
  const RegionShape& shape = in.shape;
  const Geometry geo = geometry(shape);
  const WindowPlan rows_plan = window_plan<kBlock>(geo);
  const int64_t planes = shape.batch * shape.channels;
  const int64_t blocks = planes * rows_plan.splits;
  check_grid(blocks, "window backward");
  TORCH_CHECK(planes * geo.pooled_plane < (int64_t(1) << 32), "kgen: too many pooled outputs for the window backward: ",
              str(planes * geo.pooled_plane));
  constexpr bool kSparse = window_sums_sparse<Epi, O>();
  const SplitPlan outs_plan = geo.pooled_plane > 0 ? plan_split<kBlock>(geo.pooled_plane) : SplitPlan{1, 0};
  const int64_t first_blocks = kSparse ? planes * outs_plan.splits : blocks;
  const int first_splits = kSparse ? outs_plan.splits : rows_plan.splits;
  check_grid(first_blocks, "window backward");
  const auto options = in.x.options().dtype(at::kFloat);
  const GroupShape gshape{shape.batch, shape.channels, shape.groups, shape.plane};
  SweepScratch t(in, first_blocks, blocks, Epi::kParams, Pro::kParams);
  // Planes with no outputs (a window larger than the plane): window_sweep_kernel reads output 0 of every plane
  // and drops it, so it gets a zero in place of dout, out and aux.
  const bool no_outputs = geo.pooled_plane == 0;
  const at::Tensor zero = no_outputs ? at::zeros({1}, options) : at::Tensor();
  const at::Tensor zero_int = no_outputs ? at::zeros({1}, options.dtype(at::kInt)) : at::Tensor();
  const float* dout_ptr = no_outputs ? zero.data_ptr<float>() : in.dout.data_ptr<float>();
  const float* out_ptr = no_outputs ? zero.data_ptr<float>() : data_or_null(in.out);
  const int* aux_ptr = no_outputs ? zero_int.data_ptr<int>() : (in.aux.defined() ? in.aux.data_ptr<int>() : nullptr);
  const float* gamma_ptr = data_or_null(in.gamma);
  const float* beta_ptr = data_or_null(in.beta);
  const float2* mean_ptr = as_float2(mean);
  const float* rstd_ptr = rstd.data_ptr<float>();
  const auto stream = at::cuda::getCurrentCUDAStream();
  // Each window's dy, written by the first pass and read by the second in dout's place (window_dy_from_extremes).
  constexpr bool kDyFromExtremes = window_dy_from_extremes<Epi, O>();
  const at::Tensor window_dy = kDyFromExtremes && !no_outputs ? at::empty({planes * geo.pooled_plane}, options)
                                                              : at::Tensor();
  float* const window_dy_ptr = window_dy.defined() ? window_dy.data_ptr<float>() : nullptr;
  const float* apply_dout_ptr = window_dy_ptr != nullptr ? window_dy_ptr : dout_ptr;
  if constexpr (kSparse) {
    static_assert(saves_extreme_x<Epi, ReduceKind::kWindow, O>(), "the forward saved the extremes' x");
    const float* extreme_x = no_outputs ? zero.data_ptr<float>()
                                        : reinterpret_cast<const float*>(aux_ptr) + planes * geo.pooled_plane;
    window_extreme_sums_kernel<Pro, Epi, O, kBlock><<<first_blocks, kBlock, 0, stream>>>(
        dout_ptr, extreme_x, in.params, shape, geo, outs_plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
        as_float2(t.gn_partial), t.epi_ptr(), window_dy_ptr);
  }
  // x and dx in x's storage type (float16 and bfloat16 too), every other stream float32.
  dispatch_storage(in.x.scalar_type(), [&](auto storage) {
    using T = typename decltype(storage)::type;
    const T* x_ptr = data_as<const T>(in.x);
    if constexpr (!kSparse) {
      window_sweep_kernel<Pro, Epi, O, kBlock, false, T><<<blocks, kBlock, 0, stream>>>(
          x_ptr, dout_ptr, out_ptr, aux_ptr, in.params, shape, geo, rows_plan, mean_ptr, rstd_ptr, gamma_ptr,
          beta_ptr, nullptr, static_cast<T*>(nullptr), as_float2(t.gn_partial), t.epi_ptr());
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    group_backward<kBlock>(t.gn_partial, first_splits, t.gamma_or_ones, rstd, gshape, t.plane_sums, t.coef, dgamma,
                           dbeta);
    window_sweep_kernel<Pro, Epi, O, kBlock, true, T><<<blocks, kBlock, 0, stream>>>(
        x_ptr, apply_dout_ptr, out_ptr, aux_ptr, in.params, shape, geo, rows_plan, mean_ptr, rstd_ptr, gamma_ptr,
        beta_ptr, as_float2(t.coef), data_as<T>(dx), nullptr, t.pro_ptr());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  param_sums(t.epi_partial, Epi::kParams, t.pro_partial, 0, first_blocks, first_splits, shape, depilogue, dprologue);
  param_sums(t.epi_partial, 0, t.pro_partial, Pro::kParams, blocks, rows_plan.splits, shape, depilogue, dprologue);
}

}  // namespace region_twopass

// Backward of a region: returns {dx, dgamma (C), dbeta (C) (both undefined when affine=False),
// dprologue (Kp, C), depilogue (Ke, C)} from the forward's saved mean, rstd, out and aux.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups /*0 = runtime*/>
std::vector<at::Tensor> region_backward_twopass(const at::Tensor& dout_in, const at::Tensor& input,
                                                const at::Tensor& gamma_in, const at::Tensor& beta_in,
                                                const std::vector<at::Tensor>& prologue_params,
                                                const std::vector<at::Tensor>& epilogue_params,
                                                const at::Tensor& mean, const at::Tensor& rstd,
                                                const at::Tensor& out_in, const at::Tensor& aux_in, int64_t groups,
                                                const std::vector<int64_t>& window) {
  namespace rt = region_twopass;
  static_assert(kBlock >= kWarpSize && kBlock <= 1024 && kBlock % kWarpSize == 0, "kBlock: whole warps, <= 1024");
  const rt::BackwardInputs in = rt::backward_inputs<Pro, Epi, R, O>(dout_in, input, gamma_in, beta_in, prologue_params,
                                                                    epilogue_params, mean, rstd, out_in, aux_in,
                                                                    groups, window);
  const c10::cuda::CUDAGuard device_guard(input.device());
  if constexpr (region_cluster::cluster_takes<R>()) {
    std::vector<at::Tensor> grads;
    if (in.x.numel() > 0 && rt::cluster_backward<Pro, Epi, R, O>(in, mean, rstd, grads)) return grads;
  }
  const RegionShape& shape = in.shape;
  const auto options = in.x.options().dtype(at::kFloat);
  auto dx = at::empty_like(in.x, at::MemoryFormat::Contiguous);
  at::Tensor dgamma, dbeta, dprologue, depilogue;
  std::tie(dgamma, dbeta, dprologue, depilogue) =
      rt::param_grad_buffers<Pro, Epi>(shape.channels, in.affine, options, in.x.numel() == 0);
  if (in.x.numel() == 0) return {dx, dgamma, dbeta, dprologue, depilogue};
  const bool vec = rt::backward_vec<R>(in, dx);
  if (rt::pipeline_backward<Pro, Epi, R, O>(in, mean, rstd, vec, dx, dgamma, dbeta, dprologue, depilogue)) {
    return {dx, dgamma, dbeta, dprologue, depilogue};
  }

  if constexpr (R == ReduceKind::kWindow) {
    rt::window_backward<Pro, Epi, O, kBlock>(in, mean, rstd, dx, dgamma, dbeta, dprologue, depilogue);
    return {dx, dgamma, dbeta, dprologue, depilogue};
  }

  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t planes = shape.batch * shape.channels;
  const SplitPlan plan = plan_split<kBlock>(shape.plane);
  const int64_t blocks = planes * plan.splits;
  rt::check_grid(blocks, "sweep");
  const GroupShape gshape{shape.batch, shape.channels, shape.groups, shape.plane};
  const rt::Geometry geo = rt::geometry(shape);
  rt::SweepScratch t(in, blocks, blocks, Epi::kParams, Pro::kParams);

  const float* out_ptr = rt::data_or_null(in.out);
  const int* aux_ptr = in.aux.defined() ? in.aux.data_ptr<int>() : nullptr;
  const float* gamma_ptr = rt::data_or_null(in.gamma);
  const float* beta_ptr = rt::data_or_null(in.beta);
  const float2* mean_ptr = as_float2(mean);
  const float* rstd_ptr = rstd.data_ptr<float>();

  // The two sweeps in x's storage type (dout's: SweepDout; kWindow returned above).
  dispatch_storage(in.x.scalar_type(), [&](auto storage) {
    using T = typename decltype(storage)::type;
    if constexpr (R != ReduceKind::kWindow) {
      const T* x_ptr = data_as<const T>(in.x);
      const auto* dout_ptr = data_as<const rt::SweepDout<R, T>>(in.dout);
      // a warp an item where planes are small (warp_teams), as the forward sweeps
      const bool warps = rt::warp_teams(plan, shape.plane);
      const int64_t grid = rt::team_blocks<kBlock>(blocks, warps);
      dispatch_vec(vec, [&](auto kv) {
        constexpr bool V = decltype(kv)::value;
        if (warps) {
          rt::backward_sweep_kernel<Pro, Epi, R, O, kBlock, V, false, T, kWarpSize><<<grid, kBlock, 0, stream>>>(
              x_ptr, dout_ptr, out_ptr, aux_ptr, in.params, shape, geo, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
              nullptr, static_cast<T*>(nullptr), as_float2(t.gn_partial), t.epi_ptr(), blocks);
        } else {
          rt::backward_sweep_kernel<Pro, Epi, R, O, kBlock, V, false><<<blocks, kBlock, 0, stream>>>(
              x_ptr, dout_ptr, out_ptr, aux_ptr, in.params, shape, geo, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
              nullptr, static_cast<T*>(nullptr), as_float2(t.gn_partial), t.epi_ptr(), blocks);
        }
      });
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      rt::group_backward<kBlock>(t.gn_partial, plan.splits, t.gamma_or_ones, rstd, gshape, t.plane_sums, t.coef,
                                 dgamma, dbeta);
      dispatch_vec(vec, [&](auto kv) {
        constexpr bool V = decltype(kv)::value;
        if (warps) {
          rt::backward_sweep_kernel<Pro, Epi, R, O, kBlock, V, true, T, kWarpSize><<<grid, kBlock, 0, stream>>>(
              x_ptr, dout_ptr, out_ptr, aux_ptr, in.params, shape, geo, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
              as_float2(t.coef), data_as<T>(dx), nullptr, t.pro_ptr(), blocks);
        } else {
          rt::backward_sweep_kernel<Pro, Epi, R, O, kBlock, V, true><<<blocks, kBlock, 0, stream>>>(
              x_ptr, dout_ptr, out_ptr, aux_ptr, in.params, shape, geo, plan, mean_ptr, rstd_ptr, gamma_ptr, beta_ptr,
              as_float2(t.coef), data_as<T>(dx), nullptr, t.pro_ptr(), blocks);
        }
      });
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  rt::param_sums(t.epi_partial, Epi::kParams, t.pro_partial, Pro::kParams, blocks, plan.splits, shape, depilogue,
                 dprologue);
  return {dx, dgamma, dbeta, dprologue, depilogue};
}

// The cluster backward alone (the tests' entry): as region_backward_twopass where it applies, else false and
// nothing launched. kBlock is the interface's: the cluster kernel runs kClusterThreads a block.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups /*0 = runtime*/>
bool region_backward_cluster(const at::Tensor& dout, const at::Tensor& input, const at::Tensor& gamma,
                             const at::Tensor& beta, const std::vector<at::Tensor>& prologue_params,
                             const std::vector<at::Tensor>& epilogue_params, const at::Tensor& mean,
                             const at::Tensor& rstd, const at::Tensor& out, const at::Tensor& aux, int64_t groups,
                             const std::vector<int64_t>& window, std::vector<at::Tensor>& result) {
  namespace rt = region_twopass;
  const rt::BackwardInputs in = rt::backward_inputs<Pro, Epi, R, O>(dout, input, gamma, beta, prologue_params,
                                                                    epilogue_params, mean, rstd, out, aux, groups,
                                                                    window);
  const c10::cuda::CUDAGuard device_guard(input.device());
  if constexpr (region_cluster::cluster_takes<R>()) {
    return in.x.numel() > 0 && rt::cluster_backward<Pro, Epi, R, O>(in, mean, rstd, result);
  } else {
    return false;
  }
}

}  // namespace kgen
