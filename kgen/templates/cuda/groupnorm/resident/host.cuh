// ---- groupnorm/resident/host.cuh: launches of the resident and rows kernels (groupnorm/resident/resident.cuh), planned by
// groupnorm/resident/plan.cuh ----
namespace kgen {

namespace resident_detail {

// The rows forward (groupnorm/rows/forward.cuh): kPacks packs per lane, a grid of the blocks that fit on the
// GPU at once or fewer.
// T: x's and out's storage type (float, or float16 / bfloat16 where rows_half_applies).
template <class Pro, class Epi, int kBlock, class T = float>
void launch_rows_forward(const RowsPlan& rows, const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                         const RegionParams& params, double eps, at::Tensor& out, at::Tensor& mean, at::Tensor& rstd) {
  const int64_t packs = rows.slice / 4 / rows.lanes;
  auto launch = [&](auto kernel, int per_lane) {
    const int64_t per_block = int64_t(kBlock / rows.lanes) * rows_unroll(per_lane);  // slices
    const int64_t fit = int64_t(blocks_per_sm(reinterpret_cast<const void*>(kernel), kBlock, 0)) *
                        multiprocessors(x.get_device());
    const int64_t grid = std::max<int64_t>(1, std::min<int64_t>(fit, (rows.units + per_block - 1) / per_block));
    kernel<<<grid, kBlock, 0, at::cuda::getCurrentCUDAStream()>>>(
        data_as<const T>(x), optional_data(gamma), optional_data(beta), params, rows, eps, data_as<T>(out),
        as_float2(mean), rstd.data_ptr<float>());
  };
  dispatch_rounding<T>(params.prologue.rounding, [&](auto rounding) {
    constexpr int kR = decltype(rounding)::value;
    switch (packs) {
      case 1: launch(region_rows_forward_kernel<Pro, Epi, kBlock, 1, T, kR>, 1); break;
      case 2: launch(region_rows_forward_kernel<Pro, Epi, kBlock, 2, T, kR>, 2); break;
      case 4: launch(region_rows_forward_kernel<Pro, Epi, kBlock, 4, T, kR>, 4); break;
      default: launch(region_rows_forward_kernel<Pro, Epi, kBlock, 8, T, kR>, 8); break;
    }
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Whether the rows forward with a sample reduction applies: the rows forward's Linear outputs (team width
// `lanes` > 0) whose sample fills at least a warp's lanes (fewer would leave most of the warp idle).
inline bool rows_reduce_applies(int64_t groups, int lanes) { return lanes > 0 && groups * lanes >= kWarpSize; }

// The rows forward with a sample reduction (groupnorm/rows/forward.cuh): a sub-block of the fewest warps
// (a power of two, up to the block) that covers a sample's G x L slice lanes, a grid of the blocks that fit
// at once or fewer, each sub-block taking samples in turn.
// X: x's storage type (float, or float16 / bfloat16 where rows_half_applies); out is float32.
template <class Pro, class Epi, ReduceOp O, int kBlock, class X = float>
void launch_rows_reduce(const RegionDims& dims, int64_t groups, int lanes, bool affine_vec, const at::Tensor& x,
                        const at::Tensor& gamma, const at::Tensor& beta, const RegionParams& params, double eps,
                        at::Tensor& out, int* aux, at::Tensor& mean, at::Tensor& rstd) {
  constexpr int kWarps = kBlock / kWarpSize;
  RowsReducePlan plan{};
  plan.batch = dims.batch;
  plan.groups = static_cast<int>(groups);
  plan.slice = static_cast<int>(dims.channels / groups);
  plan.lanes = lanes;
  plan.affine_vec = affine_vec;
  const int64_t sample_warps = (groups * lanes + kWarpSize - 1) / kWarpSize;
  plan.sub_warps = 1;
  while (plan.sub_warps < kWarps && plan.sub_warps < sample_warps) plan.sub_warps *= 2;
  plan.subs_per_block = kWarps / plan.sub_warps;
  auto launch = [&](auto kernel, int per_lane) {
    const int64_t per_step = int64_t(plan.sub_warps) * kWarpSize / lanes * rows_reduce_unroll(per_lane);  // slices
    plan.chunks = static_cast<int>((groups + per_step - 1) / per_step);
    const int64_t fit = int64_t(blocks_per_sm(reinterpret_cast<const void*>(kernel), kBlock, 0)) *
                        multiprocessors(x.get_device());
    const int64_t needed = (plan.batch + plan.subs_per_block - 1) / plan.subs_per_block;
    const int64_t grid = std::max<int64_t>(1, std::min(fit, needed));
    const int64_t subs = grid * plan.subs_per_block;
    plan.rounds = (plan.batch + subs - 1) / subs;
    kernel<<<grid, kBlock, 0, at::cuda::getCurrentCUDAStream()>>>(
        data_as<const X>(x), optional_data(gamma), optional_data(beta), params, plan, eps, out.data_ptr<float>(), aux,
        as_float2(mean), rstd.data_ptr<float>());
  };
  dispatch_rounding<X>(params.prologue.rounding, [&](auto rounding) {
    constexpr int kR = decltype(rounding)::value;
    switch (plan.slice / 4 / lanes) {
      case 1: launch(region_rows_reduce_kernel<Pro, Epi, O, kBlock, 1, X, kR>, 1); break;
      case 2: launch(region_rows_reduce_kernel<Pro, Epi, O, kBlock, 2, X, kR>, 2); break;
      case 4: launch(region_rows_reduce_kernel<Pro, Epi, O, kBlock, 4, X, kR>, 4); break;
      default: launch(region_rows_reduce_kernel<Pro, Epi, O, kBlock, 8, X, kR>, 8); break;
    }
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Whether the rows backward (groupnorm/rows/backward.cuh) takes the region: the rows forward's Linear outputs
// (team width `lanes` > 0, a 16-byte pack a lane), no reduction or one over each sample's values.
template <ReduceKind R>
bool rows_backward_applies(int64_t slice, int lanes, int width) {
  return lanes > 0 && width == 4 && slice == int64_t(lanes) * 4 &&
         (R == ReduceKind::kNone || R == ReduceKind::kChannel || R == ReduceKind::kSample);
}

// The rows backward's team width where the rows forward applies, else 0: a pack a lane, up to a block of
// `block` lanes (its running sums, K x 4 a pack, take registers that a second pack would take from the warps
// an SM holds: H100, L2-37's 64-value slices at 8 lanes x 2 packs, 160 registers, one block an SM; 16 x 1,
// 100 and two; 16 x 1 with the functors held and the cap of kRowsBackwardWarps, 80 and three). Teams past
// 32 lanes meet in shared memory (L2-30's 512-value slices: 128 lanes, where the resident tiles would hold a
// parameter row per sample). Slices of more packs than the block has lanes take the resident tiles.
inline int rows_backward_lanes(int64_t channels, int64_t plane, int64_t groups, int block) {
  if (rows_lanes(channels, plane, groups) == 0) return 0;
  const int64_t packs = channels / groups / 4;
  return packs <= block ? static_cast<int>(packs) : 0;
}

// The rows backward: the blocks that fit on the GPU at once, rounded to a whole number of rows (R rows x G
// groups = the teams), fewer where the samples run out. Returns the (R, K, C) parameter-gradient rows.
// T: dout's, x's and dx's storage type; `options` are the float32 partial rows'.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, class T = float>
at::Tensor launch_rows_backward(const RegionDims& dims, int64_t groups, int lanes, bool affine_vec,
                                const T* dout, const T* x, const float* gamma, const float* beta,
                                const RegionParams& params, const float2* mean, const float* rstd, const float* out,
                                const int* aux, T* dx, const at::TensorOptions& options) {
  constexpr int K = 2 + Pro::kParams + Epi::kParams;
  RowsBackwardPlan plan{};
  plan.batch = dims.batch;
  plan.groups = static_cast<int>(groups);
  plan.slice = static_cast<int>(dims.channels / groups);
  plan.lanes = lanes;
  plan.affine_vec = affine_vec;
  const int64_t teams_per_block = kBlock / lanes;
  int64_t common = groups, rest = teams_per_block;  // their greatest common divisor
  while (rest != 0) common = std::exchange(rest, common % rest);
  const int64_t unit = groups / common;  // blocks whose teams are whole rows
  const int64_t unit_rows = unit * teams_per_block / groups;
  at::Tensor partial;
  auto launch = [&](auto kernel) {
    const int64_t fit = int64_t(blocks_per_sm(reinterpret_cast<const void*>(kernel), kBlock, 0)) *
                        multiprocessors(at::cuda::current_device());
    const int64_t units = std::max<int64_t>(1, std::min(fit / unit, (plan.batch + unit_rows - 1) / unit_rows));
    plan.rows = units * unit_rows;
    plan.steps = (plan.batch + plan.rows - 1) / plan.rows;
    partial = at::empty({plan.rows, K, dims.channels}, options);
    kernel<<<units * unit, kBlock, 0, at::cuda::getCurrentCUDAStream()>>>(
        dout, x, gamma, beta, params, plan, mean, rstd, out, aux, dx, partial.data_ptr<float>());
  };
  dispatch_rounding<T>(params.prologue.rounding, [&](auto rounding) {  // a pack a lane (rows_backward_lanes)
    launch(region_rows_backward_kernel<Pro, Epi, R, O, kBlock, 1, T, decltype(rounding)::value>);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return partial;
}

}  // namespace resident_detail

// ---- the resident tiles on x's own float16 / bfloat16
//
// A 2-byte x of the output's dtype is copied into shared memory as it lies (copy_tile) and converted where the passes
// read it; out (without a reduction), dout and dx are in that dtype too. The arithmetic is the float32 path's on the same values,
// so the same bits: x converts to float exactly, and every result is rounded once to the output's dtype, where the
// float32 path's caller rounds it. Only the 4-wide kernels are built for 2-byte types.

// Whether a call takes them: x float16 / bfloat16 of the output's dtype (`rounding`), contiguous and 8-byte aligned,
// slices of a multiple of 4 values, and not a Linear output the rows kernels take (rows_half_applies). The caller
// adds the float32 dispatch's choice of the resident kernels (region_resident_pays or _fits).
inline bool resident_half_applies(const at::Tensor& x, int64_t groups, int64_t rounding) {
  using namespace resident_detail;
  const auto type = x.scalar_type();
  if ((type != at::kHalf && type != at::kBFloat16) || rounding_type(rounding) != type) return false;
  if (!x.is_cuda() || x.dim() < 2 || x.dim() > 5 || x.numel() == 0 || groups <= 0 || x.size(1) % groups != 0 ||
      !x.is_contiguous() || !pack_aligned(x)) {
    return false;
  }
  const RegionDims dims = region_dims(x);
  return (dims.channels / groups * dims.plane) % 4 == 0 && rows_lanes(dims.channels, dims.plane, groups) == 0;
}

// Whether the resident backward takes dout as the caller has it where resident_half_applies to x: of x's dtype, and a
// full-size dout contiguous on 8 bytes or copied (a copy is aligned). Else the caller reads both as float32.
template <ReduceKind R>
inline bool resident_half_takes(const at::Tensor& dout, const at::Tensor& x) {
  return dout.scalar_type() == x.scalar_type() && dout.device() == x.device() &&
         (R != ReduceKind::kNone || !dout.is_contiguous() || pack_aligned(dout));
}

// Forward: {out, mean (N, G, 2) as (hi, lo) pairs, rstd (N, G), aux (int32, kMax / kMin only)}. Linear outputs
// with short slices (rows_lanes) take the rows forward, with or without a reduction over each sample (kChannel,
// kSample), everything else the resident tiles. x float32, or float16 / bfloat16 where resident_half_applies: out
// then in x's dtype without a reduction, float32 after one.

template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups>
std::vector<at::Tensor> region_forward_resident(const at::Tensor& input, const at::Tensor& gamma_in,
                                                const at::Tensor& beta_in,
                                                const std::vector<at::Tensor>& prologue_params,
                                                const std::vector<at::Tensor>& epilogue_params, int64_t groups,
                                                double eps, const std::vector<int64_t>& window) {
  using namespace resident_detail;
  static_assert(kBlock >= kWarpSize && kBlock <= 1024 && (kBlock & (kBlock - 1)) == 0,
                "kBlock: a power of two in 32..1024");
  constexpr bool kArg = O == ReduceOp::kMax || O == ReduceOp::kMin;
  const bool half = input.scalar_type() != at::kFloat;
  check_region_input(input, gamma_in, beta_in, groups, /*half_ok=*/true);
  check_window<R>(input, window);
  const c10::cuda::CUDAGuard device_guard(input.device());
  const RegionParams params = region_params<Pro, Epi>(prologue_params, epilogue_params, input);
  const at::Tensor x = input.contiguous();
  const at::Tensor gamma = gamma_in.defined() ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = beta_in.defined() ? beta_in.contiguous() : at::Tensor();
  const int64_t batch = x.size(0);
  const std::vector<int64_t> out_shape = region_out_shape<R>(x, window);
  const auto f32 = x.options().dtype(at::kFloat);
  at::Tensor out = at::empty(out_shape, R == ReduceKind::kNone ? x.options() : f32);
  at::Tensor aux = kArg ? at::empty(out_shape, x.options().dtype(at::kInt)) : at::Tensor();
  at::Tensor mean = at::empty({batch, groups, 2}, f32);
  at::Tensor rstd = at::empty({batch, groups}, f32);
  if (x.numel() == 0) {
    out.zero_(), mean.zero_(), rstd.zero_();
    if (kArg) aux.zero_();
    return {out, mean, rstd, aux};
  }
  const RegionDims dims = region_dims(x);
  const int64_t slice = dims.channels / groups * dims.plane;
  const int width = slice % 4 == 0 && pack_aligned(x) ? 4 : 1;
  TORCH_CHECK(!half || (width == 4 && rows_lanes(dims.channels, dims.plane, groups) == 0),
              "kgen: the resident kernels take a float16 / bfloat16 input only where resident_half_applies");
  const bool affine_vec = !gamma.defined() || (is_16_byte_aligned(gamma.data_ptr<float>()) &&
                                               is_16_byte_aligned(beta.data_ptr<float>()));
  if constexpr (R == ReduceKind::kNone) {
    const int lanes = rows_lanes(dims.channels, dims.plane, groups);
    if (width == 4 && lanes > 0) {  // float32 only (resident_half_applies)
      const RowsPlan rows{dims.batch * groups, static_cast<int>(groups), FastDiv(groups), static_cast<int>(slice),
                          lanes, affine_vec};
      launch_rows_forward<Pro, Epi, kBlock>(rows, x, gamma, beta, params, eps, out, mean, rstd);
      return {out, mean, rstd, aux};
    }
  }
  if constexpr (is_sample_kind(R)) {
    const int lanes = rows_lanes(dims.channels, dims.plane, groups);
    if (width == 4 && rows_reduce_applies(groups, lanes)) {
      launch_rows_reduce<Pro, Epi, O, kBlock>(dims, groups, lanes, affine_vec, x, gamma, beta, params, eps, out,
                                              kArg ? aux.data_ptr<int>() : nullptr, mean, rstd);
      return {out, mean, rstd, aux};
    }
  }
  TORCH_CHECK(make_plan<R>(dims, groups, window, kBlock, width, false, smem_budget(x)).feasible,
              "kgen: a GroupNorm unit of input ", str(x.sizes()), " with ", str(groups),
              " groups does not fit in shared memory (resident path); region_resident_fits tells beforehand");
  const auto stream = at::cuda::getCurrentCUDAStream();
  const float* gamma_ptr = optional_data(gamma);
  const float* beta_ptr = optional_data(beta);
  int* aux_ptr = kArg ? aux.data_ptr<int>() : nullptr;
  float2* mean_ptr = as_float2(mean);
  float* rstd_ptr = rstd.data_ptr<float>();
  dispatch_storage(x.scalar_type(), [&](auto storage) {
    using T = typename decltype(storage)::type;
    constexpr TileStorage kStorage = forward_storage<Pro, R, T>();
    const T* x_ptr = data_as<const T>(x);
    ResidentOut<R, T>* out_ptr = data_as<ResidentOut<R, T>>(out);
    auto plan_for = [&](int values_per_thread) {
      ResidentPlan p = make_plan<R>(dims, groups, window, kBlock, width, false, smem_budget(x), values_per_thread,
                                    kStorage);
      p.affine_vec = affine_vec;
      return p;
    };
    dispatch_groups<kGroups>(groups, [&](auto kg) {
      constexpr int kG = decltype(kg)::value;
      auto launch = [&](auto kernel) {
        auto per_sm_of = [&](const ResidentPlan& p) {
          return blocks_per_sm(reinterpret_cast<const void*>(kernel), kBlock, p.smem_bytes);
        };
        auto in_flight = [](const ResidentPlan& p, int per_sm) {  // bytes of x an SM's copies move at once
          return int64_t(per_sm) * p.tile_groups * p.slice * int64_t(sizeof(T));
        };
        ResidentPlan launched = plan_for(kValuesPerThread);
        int per_sm = per_sm_of(launched);
        for (int vpt = 2 * kValuesPerThread; vpt <= kMaxValuesPerThread && in_flight(launched, per_sm) < kBytesInFlight;
             vpt *= 2) {
          const ResidentPlan bigger = plan_for(vpt);
          if (!bigger.feasible || bigger.stages != 2 || bigger.tile_groups <= launched.tile_groups) break;
          const int bigger_per_sm = per_sm_of(bigger);
          if (in_flight(bigger, bigger_per_sm) <= in_flight(launched, per_sm)) break;
          launched = bigger;
          per_sm = bigger_per_sm;
        }
        launched.grid = std::min<int64_t>(launched.tiles, int64_t(per_sm) * multiprocessors(x.get_device()));
        kernel<<<launched.grid, kBlock, launched.smem_bytes, stream>>>(x_ptr, gamma_ptr, beta_ptr, params, launched,
                                                                       eps, out_ptr, aux_ptr, mean_ptr, rstd_ptr);
      };
      if constexpr (!std::is_same_v<T, float>) {
        launch(region_resident_forward_kernel<Pro, Epi, R, O, kBlock, kG, 4, T>);  // width 4 (checked above)
      } else if (width == 4) {
        launch(region_resident_forward_kernel<Pro, Epi, R, O, kBlock, kG, 4, T>);
      } else {
        launch(region_resident_forward_kernel<Pro, Epi, R, O, kBlock, kG, 1, T>);
      }
    });
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {out, mean, rstd, aux};
}

// Backward: {dx, dgamma (C), dbeta (C) (undefined without affine), dprologue (Kp, C), depilogue (Ke, C)}. x and dout
// float32, or both of one float16 / bfloat16 where resident_half_applies (and dout full-size 8-byte aligned): dx then
// in that dtype too.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock, int kGroups>
std::vector<at::Tensor> region_backward_resident(const at::Tensor& grad_out, const at::Tensor& input,
                                                 const at::Tensor& gamma_in, const at::Tensor& beta_in,
                                                 const std::vector<at::Tensor>& prologue_params,
                                                 const std::vector<at::Tensor>& epilogue_params,
                                                 const at::Tensor& mean, const at::Tensor& rstd,
                                                 const at::Tensor& out_in, const at::Tensor& aux_in, int64_t groups,
                                                 const std::vector<int64_t>& window) {
  using namespace resident_detail;
  constexpr bool kArg = O == ReduceOp::kMax || O == ReduceOp::kMin;
  constexpr bool kLse = O == ReduceOp::kLogSumExp && R != ReduceKind::kNone;
  constexpr int kPro = Pro::kParams, kEpi = Epi::kParams;
  constexpr int K = 2 + kPro + kEpi;
  const bool half = input.scalar_type() != at::kFloat;
  check_region_input(input, gamma_in, beta_in, groups, /*half_ok=*/true);
  check_window<R>(input, window);
  const std::vector<int64_t> out_shape = region_out_shape<R>(input, window);
  check_storage(grad_out, "gradient of the region output");
  TORCH_CHECK(grad_out.scalar_type() == input.scalar_type(), "kgen: the output gradient is ",
              c10::toString(grad_out.scalar_type()), " but the region input is ", c10::toString(input.scalar_type()));
  TORCH_CHECK(grad_out.sizes() == c10::IntArrayRef(out_shape), "kgen: the output gradient has shape ",
              str(grad_out.sizes()), ", expected ", str(c10::IntArrayRef(out_shape)));
  TORCH_CHECK(grad_out.device() == input.device(), "kgen: the output gradient is on ", grad_out.device().str(),
              " but the input is on ", input.device().str());
  const int64_t batch = input.size(0);
  for (const auto* t : {&mean, &rstd}) {
    check_float_cuda(*t, "saved GroupNorm statistics");
    TORCH_CHECK(t->device() == input.device(), "kgen: saved statistics are on another device than the input");
  }
  TORCH_CHECK(mean.is_contiguous() && mean.numel() == batch * groups * 2 && rstd.is_contiguous() &&
                  rstd.numel() == batch * groups,
              "kgen: saved statistics must be the forward's (N, G, 2) mean and (N, G) rstd");
  if (kLse) {
    check_float_cuda(out_in, "saved region output");
    TORCH_CHECK(out_in.sizes() == grad_out.sizes() && out_in.device() == input.device(),
                "kgen: the saved logsumexp output must be the forward's");
  }
  if (kArg) {
    TORCH_CHECK(aux_in.defined() && aux_in.scalar_type() == at::kInt && aux_in.sizes() == grad_out.sizes() &&
                    aux_in.device() == input.device(),
                "kgen: max/min backward needs the forward's int32 positions (aux)");
  }
  const c10::cuda::CUDAGuard device_guard(input.device());
  const RegionParams params = region_params<Pro, Epi>(prologue_params, epilogue_params, input);
  const at::Tensor x = input.contiguous();
  const at::Tensor dout = grad_out.contiguous();
  const at::Tensor out = kLse ? out_in.contiguous() : at::Tensor();
  const at::Tensor aux = kArg ? aux_in.contiguous() : at::Tensor();
  const at::Tensor gamma = gamma_in.defined() ? gamma_in.contiguous() : at::Tensor();
  const at::Tensor beta = beta_in.defined() ? beta_in.contiguous() : at::Tensor();
  const int64_t channels = x.size(1);
  auto dx = at::empty_like(x, at::MemoryFormat::Contiguous);
  // column_sums writes every entry (no fill launched for nothing); an empty x leaves zero gradients
  const auto f32 = x.options().dtype(at::kFloat);
  auto sums = x.numel() > 0 ? at::empty({K, channels}, f32) : at::zeros({K, channels}, f32);
  if (x.numel() > 0) {
    const RegionDims dims = region_dims(x);
    const int64_t slice = channels / groups * dims.plane;
    const bool aligned = pack_aligned(x) && (R != ReduceKind::kNone || pack_aligned(dout));
    const int width = slice % 4 == 0 && aligned ? 4 : 1;
    TORCH_CHECK(!half || (width == 4 && rows_lanes(channels, dims.plane, groups) == 0),
                "kgen: the resident kernels take a float16 / bfloat16 input only where resident_half_applies");
    const bool affine_vec = !gamma.defined() || (is_16_byte_aligned(gamma.data_ptr<float>()) &&
                                                 is_16_byte_aligned(beta.data_ptr<float>()));
    at::Tensor partial;   // (rows, K, C): one row per sample, per slab-mode row, or per rows-backward row
    const auto stream = at::cuda::getCurrentCUDAStream();
    const float* gamma_ptr = optional_data(gamma);
    const float* beta_ptr = optional_data(beta);
    const float2* mean_ptr = as_float2(mean);
    const float* rstd_ptr = rstd.data_ptr<float>();
    const float* out_ptr = kLse ? out.data_ptr<float>() : nullptr;
    const int* aux_ptr = kArg ? aux.data_ptr<int>() : nullptr;
    if constexpr (R == ReduceKind::kNone || R == ReduceKind::kChannel || R == ReduceKind::kSample) {
      const int lanes = rows_backward_lanes(channels, dims.plane, groups, kBlock);
      if (rows_backward_applies<R>(channels / groups, lanes, width)) {  // float32 only (resident_half_applies)
        const float* dout_ptr = dout.data_ptr<float>();
        const float* x_ptr = x.data_ptr<float>();
        float* dx_ptr = dx.data_ptr<float>();
        partial = launch_rows_backward<Pro, Epi, R, O, kBlock>(dims, groups, lanes, affine_vec, dout_ptr, x_ptr,
                                                               gamma_ptr, beta_ptr, params, mean_ptr, rstd_ptr,
                                                               out_ptr, aux_ptr, dx_ptr, f32);
        auto flat = sums.view({K * channels});
        column_sums<kBlock>(partial.view({partial.size(0), K * channels}), flat);
        const bool affine = gamma.defined();
        return {dx, affine ? sums[0] : at::Tensor(), affine ? sums[1] : at::Tensor(),
                sums.narrow(0, 2, kPro).contiguous(), sums.narrow(0, 2 + kPro, kEpi).contiguous()};
      }
    }
    dispatch_storage(x.scalar_type(), [&](auto storage) {
      using T = typename decltype(storage)::type;
      constexpr int kElem = sizeof(T);
      const ResidentPlan slabs = slab_plan<R>(dims, groups, window, kBlock, width, K, smem_budget(x), kElem);
      ResidentPlan plan = slabs.feasible ? slabs
                                         : make_plan<R>(dims, groups, window, kBlock, width, true, smem_budget(x),
                                                        kValuesPerThread, TileStorage{kElem, false});
      plan.affine_vec = affine_vec;
      TORCH_CHECK(plan.feasible, "kgen: a GroupNorm unit of input ", str(x.sizes()), " with ", str(groups),
                  " groups does not fit in shared memory (resident backward); region_resident_fits tells beforehand");
      const T* dout_ptr = data_as<const T>(dout);
      const T* x_ptr = data_as<const T>(x);
      T* dx_ptr = data_as<T>(dx);
      dispatch_groups<kGroups>(groups, [&](auto kg) {
        constexpr int kG = decltype(kg)::value;
        auto launch = [&](auto kernel) {
          allow_smem(reinterpret_cast<const void*>(kernel), plan.smem_bytes);
          int64_t grid = plan.tiles;
          if (plan.parts > 0) {   // slab mode: as many rows as fill the GPU once
            const int64_t resident =
                int64_t(blocks_per_sm(reinterpret_cast<const void*>(kernel), kBlock, plan.smem_bytes)) *
                multiprocessors(x.get_device());
            plan.rows = std::max<int64_t>(1, std::min<int64_t>(batch, resident / plan.parts));
            grid = plan.rows * plan.parts;
          }
          partial = at::empty({plan.parts > 0 ? plan.rows : batch, K, channels}, f32);
          kernel<<<grid, kBlock, plan.smem_bytes, stream>>>(dout_ptr, x_ptr, gamma_ptr, beta_ptr, params, plan,
                                                           mean_ptr, rstd_ptr, out_ptr, aux_ptr, dx_ptr,
                                                           partial.data_ptr<float>());
        };
        if constexpr (!std::is_same_v<T, float>) {
          launch(region_resident_backward_kernel<Pro, Epi, R, O, kBlock, kG, 4, T>);  // width 4 (checked above)
        } else if (width == 4) {
          launch(region_resident_backward_kernel<Pro, Epi, R, O, kBlock, kG, 4, T>);
        } else {
          launch(region_resident_backward_kernel<Pro, Epi, R, O, kBlock, kG, 1, T>);
        }
      });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    auto flat = sums.view({K * channels});
    column_sums<kBlock>(partial.view({partial.size(0), K * channels}), flat);
  }
  const bool affine = gamma.defined();
  return {dx, affine ? sums[0] : at::Tensor(), affine ? sums[1] : at::Tensor(),
          sums.narrow(0, 2, kPro).contiguous(), sums.narrow(0, 2 + kPro, kEpi).contiguous()};
}

// ---- the rows kernels on x's own float16 / bfloat16
//
// Linear outputs (plane 1) whose float32 dispatch takes the rows kernels both ways (the rows forward, or the
// rows-reduce forward of a reduction over each sample, and the rows backward) read x, dout and dx in their own
// 2-byte type, 8-byte packs of 4 values, instead of float32 copies made before and after (H200, L2-37 at bf16: a
// 591 us rows forward beside 394 us of copy in and 185 us of copy out; its backward 778 us of copies beside a 728 us
// rows kernel). The arithmetic is the float32 path's on the same values, so the same bits: x converts to float
// exactly, and every result is rounded once to the output's dtype, where the float32 path's caller rounds it.

// Whether a call takes them: x float16 / bfloat16 of the output's dtype (`rounding`), contiguous and 8-byte
// aligned, a reduction the rows kernels take, and the float32 dispatch's rows kernels in both directions.
template <ReduceKind R>
bool rows_half_applies(const at::Tensor& x, int64_t groups, int64_t rounding, int block) {
  using namespace resident_detail;
  const auto type = x.scalar_type();
  if ((type != at::kHalf && type != at::kBFloat16) || rounding_type(rounding) != type) return false;
  if (R != ReduceKind::kNone && !is_sample_kind(R)) return false;
  if (!x.is_cuda() || x.dim() < 2 || x.dim() > 5 || x.numel() == 0 || groups <= 0 || x.size(1) % groups != 0 ||
      !x.is_contiguous() || reinterpret_cast<uintptr_t>(x.data_ptr()) % 8 != 0) {
    return false;
  }
  const RegionDims dims = region_dims(x);
  const int lanes = rows_lanes(dims.channels, dims.plane, groups);
  if (lanes == 0 || rows_backward_lanes(dims.channels, dims.plane, groups, block) == 0) return false;
  if (is_sample_kind(R) && !rows_reduce_applies(groups, lanes)) return false;
  return region_resident_pays<R>(x, groups) && region_resident_pays<R>(x, groups, /*backward=*/true);
}

// Forward where rows_half_applies: {out (x's dtype; float32 after a reduction), mean, rstd, aux}, as
// region_forward_resident's.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock>
std::vector<at::Tensor> region_forward_rows_half(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                                 const std::vector<at::Tensor>& prologue_params,
                                                 const std::vector<at::Tensor>& epilogue_params, int64_t groups,
                                                 double eps) {
  using namespace resident_detail;
  constexpr bool kArg = O == ReduceOp::kMax || O == ReduceOp::kMin;
  check_region_input(x, gamma, beta, groups, /*half_ok=*/true);
  const c10::cuda::CUDAGuard device_guard(x.device());
  const RegionParams params = region_params<Pro, Epi>(prologue_params, epilogue_params, x);
  const RegionDims dims = region_dims(x);
  const int lanes = rows_lanes(dims.channels, dims.plane, groups);
  const bool affine_vec = !gamma.defined() || (is_16_byte_aligned(gamma.data_ptr<float>()) &&
                                               is_16_byte_aligned(beta.data_ptr<float>()));
  const auto f32 = x.options().dtype(at::kFloat);
  const std::vector<int64_t> out_shape = region_out_shape<R>(x, std::vector<int64_t>(x.dim() - 2, 1));
  at::Tensor out = at::empty(out_shape, R == ReduceKind::kNone ? x.options() : f32);
  at::Tensor aux = kArg ? at::empty(out_shape, x.options().dtype(at::kInt)) : at::Tensor();
  at::Tensor mean = at::empty({dims.batch, groups, 2}, f32);
  at::Tensor rstd = at::empty({dims.batch, groups}, f32);
  dispatch_storage(x.scalar_type(), [&](auto storage) {
    using T = typename decltype(storage)::type;
    if constexpr (R == ReduceKind::kNone) {
      const RowsPlan rows{dims.batch * groups, static_cast<int>(groups), FastDiv(groups),
                          static_cast<int>(dims.channels / groups), lanes, affine_vec};
      launch_rows_forward<Pro, Epi, kBlock, T>(rows, x, gamma, beta, params, eps, out, mean, rstd);
    } else {
      launch_rows_reduce<Pro, Epi, O, kBlock, T>(dims, groups, lanes, affine_vec, x, gamma, beta, params, eps, out,
                                                 kArg ? aux.data_ptr<int>() : nullptr, mean, rstd);
    }
  });
  return {out, mean, rstd, aux};
}

// Backward where rows_half_applies and dout has x's dtype (8-byte aligned where it is full-size): {dx (x's dtype),
// dgamma, dbeta, dprologue (Kp, C), depilogue (Ke, C)}, as region_backward_resident's. False where dout does not
// fit that: the caller takes the float32 path.
template <class Pro, class Epi, ReduceKind R, ReduceOp O, int kBlock>
bool region_backward_rows_half(const at::Tensor& dout_in, const at::Tensor& x, const at::Tensor& gamma,
                               const at::Tensor& beta, const std::vector<at::Tensor>& prologue_params,
                               const std::vector<at::Tensor>& epilogue_params, const at::Tensor& mean,
                               const at::Tensor& rstd, const at::Tensor& out_in, const at::Tensor& aux_in,
                               int64_t groups, std::vector<at::Tensor>& result) {
  using namespace resident_detail;
  constexpr bool kArg = O == ReduceOp::kMax || O == ReduceOp::kMin;
  constexpr bool kLse = O == ReduceOp::kLogSumExp && R != ReduceKind::kNone;
  constexpr int kPro = Pro::kParams, kEpi = Epi::kParams;
  constexpr int K = 2 + kPro + kEpi;
  if (dout_in.scalar_type() != x.scalar_type() || dout_in.device() != x.device()) return false;
  const std::vector<int64_t> out_shape = region_out_shape<R>(x, std::vector<int64_t>(x.dim() - 2, 1));
  TORCH_CHECK(dout_in.sizes() == c10::IntArrayRef(out_shape), "kgen: the output gradient has shape ",
              str(dout_in.sizes()), ", expected ", str(c10::IntArrayRef(out_shape)));
  const at::Tensor dout = dout_in.contiguous();
  if (R == ReduceKind::kNone && reinterpret_cast<uintptr_t>(dout.data_ptr()) % 8 != 0) return false;
  check_region_input(x, gamma, beta, groups, /*half_ok=*/true);
  for (const auto* t : {&mean, &rstd}) check_float_cuda(*t, "saved GroupNorm statistics");
  TORCH_CHECK(mean.is_contiguous() && mean.numel() == x.size(0) * groups * 2 && rstd.is_contiguous() &&
                  rstd.numel() == x.size(0) * groups,
              "kgen: saved statistics must be the forward's (N, G, 2) mean and (N, G) rstd");
  if (kLse) {
    check_float_cuda(out_in, "saved region output");
    TORCH_CHECK(out_in.sizes() == dout.sizes(), "kgen: the saved logsumexp output must be the forward's");
  }
  if (kArg) {
    TORCH_CHECK(aux_in.defined() && aux_in.scalar_type() == at::kInt && aux_in.sizes() == dout.sizes(),
                "kgen: max/min backward needs the forward's int32 positions (aux)");
  }
  const c10::cuda::CUDAGuard device_guard(x.device());
  const RegionParams params = region_params<Pro, Epi>(prologue_params, epilogue_params, x);
  const RegionDims dims = region_dims(x);
  const int64_t channels = dims.channels;
  const int lanes = rows_backward_lanes(channels, dims.plane, groups, kBlock);
  const bool affine_vec = !gamma.defined() || (is_16_byte_aligned(gamma.data_ptr<float>()) &&
                                               is_16_byte_aligned(beta.data_ptr<float>()));
  const at::Tensor out = kLse ? out_in.contiguous() : at::Tensor();
  const at::Tensor aux = kArg ? aux_in.contiguous() : at::Tensor();
  const auto f32 = x.options().dtype(at::kFloat);
  auto dx = at::empty_like(x, at::MemoryFormat::Contiguous);
  // column_sums writes every entry (no fill launched for nothing); an empty x leaves zero gradients
  auto sums = x.numel() > 0 ? at::empty({K, channels}, f32) : at::zeros({K, channels}, f32);
  at::Tensor partial;
  dispatch_storage(x.scalar_type(), [&](auto storage) {
    using T = typename decltype(storage)::type;
    partial = launch_rows_backward<Pro, Epi, R, O, kBlock, T>(
        dims, groups, lanes, affine_vec, data_as<const T>(dout), data_as<const T>(x), optional_data(gamma),
        optional_data(beta), params, as_float2(mean), rstd.data_ptr<float>(), kLse ? out.data_ptr<float>() : nullptr,
        kArg ? aux.data_ptr<int>() : nullptr, data_as<T>(dx), f32);
  });
  auto flat = sums.view({K * channels});
  column_sums<kBlock>(partial.view({partial.size(0), K * channels}), flat);
  const bool affine = gamma.defined();
  result = {dx, affine ? sums[0] : at::Tensor(), affine ? sums[1] : at::Tensor(),
            sums.narrow(0, 2, kPro).contiguous(), sums.narrow(0, 2 + kPro, kEpi).contiguous()};
  return true;
}

}  // namespace kgen
