// ---- groupnorm/merged.cuh: a region whose functors read tensors computed per sample (kgen emit --ref) ----
//
// A time embedding added before a GroupNorm (h + temb[:, :, None, None]), FiLM's scale and shift after it: tensors
// another step computes, one value per (sample, channel), per sample or per channel. The region kernels read their
// parameters per channel (ParamTable::at). So such a region runs on x's samples merged into channels: the GroupNorm of
// x (N, C, *spatial) in G groups is the GroupNorm of x viewed (1, N * C, *spatial) in N * G groups (each (n, g) slice
// is the same values, now a group of the one merged sample), and there each parameter is one value per merged channel:
// a per-(sample, channel) tensor as it lies, a per-channel one repeated N times, a per-sample one repeated C times.
// The kernels are the same; only the host side merges and unmerges (bindings.cu.j2's region<i>_forward/_backward):
//
//   forward   x, the GroupNorm's weight and bias and the functors' parameters merged; out viewed back to (N, C, ...);
//             mean, rstd and aux stay as the merged call made them (the backward merges again and reads them so);
//             the merged parameters come back after them, for the caller to hand to the backward, which takes a
//             merged one as it is (no second copy: small models are host-bound, each copy a few ATen calls)
//   backward  dout, x and out merged; dx viewed as x; dweight and dbias summed over the samples; the functors' rows
//             stay one value per merged channel, (K, N * C), summed to each parameter's shape by the caller
//             (the emitted _param_grad / kgen_add_param_grad, which know whether it varies along the channels)
namespace kgen {
namespace merged {

// x (N, C, *spatial) as (1, N * C, *spatial): a view of a contiguous x (a copy of a channels-last one).
inline at::Tensor samples_as_channels(const at::Tensor& x) {
  TORCH_CHECK(x.dim() >= 2, "kgen: a region input of rank ", str(x.dim()), "; expected (N, C, ...)");
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes[1] *= sizes[0];
  sizes[0] = 1;
  return x.reshape(sizes);
}

// A merged tensor (1, N * C, ...) back to (n, c, ...).
inline at::Tensor unmerged(const at::Tensor& t, int64_t n, int64_t c) {
  std::vector<int64_t> sizes = t.sizes().vec();
  TORCH_CHECK(sizes.size() >= 2 && sizes[0] == 1 && sizes[1] == n * c, "kgen: a merged region's output of shape ",
              t.sizes(), " is not (1, ", str(n * c), ", ...)");
  sizes[0] = n;
  sizes[1] = c;
  return t.reshape(sizes);
}

// A parameter as one value per merged channel (N * C, contiguous): `along_channels` says whether it varies along the
// channels (C values, or N * C) or is one value per sample (N values). A one-value parameter stays one value; an N * C
// one, a per-(sample, channel) tensor or a parameter a merged call returned (merged::append_merged), is viewed as it
// lies (a 1-D contiguous one taken as it is); the others are repeated by one broadcasting copy (three ATen calls; a
// reshape-expand-reshape made seven).
inline at::Tensor per_merged_channel(const at::Tensor& p, bool along_channels, int64_t n, int64_t c) {
  if (!p.defined() || p.numel() == 1) return p;
  if (p.numel() == n * c) {
    return p.dim() == 1 && p.is_contiguous() ? p : p.reshape({n * c});
  }
  const int64_t per_row = along_channels ? c : 1;
  TORCH_CHECK(p.numel() == per_row || p.numel() == n * per_row, "kgen: a region parameter has ", str(p.numel()),
              " values; expected 1, ", str(per_row), " or ", str(n * per_row), " (one per ",
              along_channels ? "channel" : "sample", ", or per sample and channel)");
  at::Tensor merged = at::empty({n * c}, p.options());
  merged.view({n, c}).copy_(p.dim() == 1 && along_channels ? p : p.reshape({-1, per_row}));
  return merged;
}

inline std::vector<at::Tensor> per_merged_channel(const std::vector<at::Tensor>& params, const std::vector<bool>& along,
                                                  int64_t n, int64_t c) {
  std::vector<at::Tensor> out;
  out.reserve(params.size());
  for (size_t k = 0; k < params.size(); ++k) out.push_back(per_merged_channel(params[k], along[k], n, c));
  return out;
}

inline c10::optional<at::Tensor> per_merged_channel(const c10::optional<at::Tensor>& p, int64_t n, int64_t c) {
  return p.has_value() ? c10::optional<at::Tensor>(per_merged_channel(*p, true, n, c)) : c10::nullopt;
}

// The merged call's parameters after its {out, mean, rstd, aux}: weight, bias (undefined where absent), then the
// prologue's and the epilogue's, as the caller hands them to the backward.
inline void append_merged(std::vector<at::Tensor>& result, const c10::optional<at::Tensor>& weight,
                          const c10::optional<at::Tensor>& bias, const std::vector<at::Tensor>& prologue,
                          const std::vector<at::Tensor>& epilogue) {
  result.push_back(weight.value_or(at::Tensor()));
  result.push_back(bias.value_or(at::Tensor()));
  result.insert(result.end(), prologue.begin(), prologue.end());
  result.insert(result.end(), epilogue.begin(), epilogue.end());
}

// The GroupNorm's weight or bias gradient of the merged call (N * C) summed over the samples (C).
inline at::Tensor summed_over_samples(const at::Tensor& g, int64_t n, int64_t c) {
  return g.defined() && g.numel() == n * c ? g.reshape({n, c}).sum(0) : g;
}

}  // namespace merged
}  // namespace kgen
