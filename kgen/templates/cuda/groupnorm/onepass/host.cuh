// ---- groupnorm/onepass/host.cuh: a region's forward through the one-pass kernel (groupnorm/onepass/onepass.cuh) ----
//
// Needs the two-pass family's host side (groupnorm/twopass/forward_host.cuh: the checks and the parameter table)
// before it.
namespace kgen {

// A region's forward in one pass (kNone, an epilogue of y alone): {out, mean, rstd, undefined aux}, as
// region_forward_twopass returns them, or {} where this path does not take the call (the planner declines:
// a slice too large for the GPU's shared memory, HW % 4 != 0, unaligned data, a GPU older than sm_90); the
// caller then runs the other families. kThreads threads a block, blocks_per_sm blocks an SM.
template <class Pro, class Epi, ReduceKind R, int kThreads>
std::vector<at::Tensor> region_forward_onepass(const at::Tensor& input, const at::Tensor& gamma_in,
                                               const at::Tensor& beta_in,
                                               const std::vector<at::Tensor>& prologue_params,
                                               const std::vector<at::Tensor>& epilogue_params, int64_t groups,
                                               double eps, int blocks_per_sm) {
  if constexpr (R != ReduceKind::kNone || DirectGrads<Epi>::value) {
    return {};
  } else {
    namespace rt = region_twopass;
    const RegionShape shape = rt::check_region(input, gamma_in, beta_in, groups, R, {});
    if (input.numel() == 0) return {};
    const c10::cuda::CUDAGuard device_guard(input.device());
    const RegionParams params = rt::region_params<Pro, Epi>(prologue_params, epilogue_params, shape.channels,
                                                            input.device(), shape.plane);
    const auto x = input.contiguous();
    const at::Tensor gamma = gamma_in.defined() ? gamma_in.contiguous() : at::Tensor();
    const at::Tensor beta = beta_in.defined() ? beta_in.contiguous() : at::Tensor();
    auto out = at::empty_like(x, at::MemoryFormat::Contiguous);
    auto mean = at::empty({shape.batch, shape.groups, 2}, x.options());
    auto rstd = at::empty({shape.batch, shape.groups}, x.options());
    const GroupShape group_shape{shape.batch, shape.channels, shape.groups, shape.plane};
    if (!groupnorm_forward_onepass<Pro, Epi, kThreads>(x, gamma, beta, out, mean, rstd, group_shape, eps, params,
                                                       blocks_per_sm)) {
      return {};
    }
    return {out, mean, rstd, at::Tensor()};
  }
}

}  // namespace kgen
