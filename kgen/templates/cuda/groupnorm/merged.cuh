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
//   backward  dout, x and out merged; dx viewed as x; dweight, dbias and the functors' rows (K, N * C) summed to
//             each parameter's values, over the samples or the channels, all in one launch (param_grads, called by
//             region<i>_backward_summed with the parameters' sizes, which the caller knows)
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

// ---- every parameter that repeats, in one launch

// The float32 parameters a merge repeats (a GroupNorm weight and bias, a functor's per-channel or per-sample ones):
// each is read from `src` by its own row of blocks (blockIdx.y) into its row of one (count, N * C) buffer.
constexpr int kMaxRepeats = 2 + 2 * kMaxParams;
struct Repeats {
  const float* src[kMaxRepeats];
  bool along[kMaxRepeats];  // C values, the same for every sample; else N values, one per sample
  int count;
};

__global__ void __launch_bounds__(256) repeat_kernel(Repeats r, int64_t n, int64_t c, float* out) {
  const int k = blockIdx.y;
  const int64_t per_row = n * c;
  const float* src = r.src[k];
  float* row = out + k * per_row;
  for (int64_t m = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; m < per_row; m += gridDim.x * int64_t(blockDim.x)) {
    row[m] = __ldg(src + (r.along[k] ? m % c : m / c));
  }
}

// Whether a parameter is one value per merged channel only after a repeat, and one repeat_kernel reads it: float32,
// contiguous, on x's device, with C values (along the channels) or N (one per sample).
inline bool repeats_in_one_launch(const at::Tensor& p, bool along_channels, int64_t n, int64_t c,
                                  const at::Device& device) {
  return p.defined() && p.numel() != 1 && p.numel() != n * c && p.numel() == (along_channels ? c : n) &&
         p.scalar_type() == at::kFloat && p.is_contiguous() && p.device() == device;
}

// A merged call's parameters, each one value per merged channel (per_merged_channel): weight, bias, the prologue's and
// the epilogue's.
struct MergedParams {
  c10::optional<at::Tensor> weight, bias;
  std::vector<at::Tensor> prologue, epilogue;
};

// The parameters of a merged call made at once: those that repeat (repeats_in_one_launch) by one repeat_kernel into
// rows of one buffer, the others as per_merged_channel makes them. A repeat each costs an allocation, a view and a
// copy (three ATen calls and a launch): diffusion_resblock's time-embedding region repeats three (docs/decisions.md).
inline MergedParams merged_params(const c10::optional<at::Tensor>& weight, const c10::optional<at::Tensor>& bias,
                                  const std::vector<at::Tensor>& prologue, const std::vector<at::Tensor>& epilogue,
                                  const std::vector<bool>& prologue_along, const std::vector<bool>& epilogue_along,
                                  const at::Tensor& x, int64_t n, int64_t c) {
  MergedParams m{weight, bias, prologue, epilogue};
  std::vector<std::pair<at::Tensor*, bool>> slots;   // every parameter, and whether it varies along the channels
  at::Tensor w = weight.value_or(at::Tensor()), b = bias.value_or(at::Tensor());
  slots.emplace_back(&w, true);
  slots.emplace_back(&b, true);
  for (size_t k = 0; k < m.prologue.size(); ++k) slots.emplace_back(&m.prologue[k], prologue_along[k]);
  for (size_t k = 0; k < m.epilogue.size(); ++k) slots.emplace_back(&m.epilogue[k], epilogue_along[k]);
  Repeats r{};
  std::vector<at::Tensor*> repeated;
  for (auto& [t, along] : slots) {
    if (repeats_in_one_launch(*t, along, n, c, x.device()) && r.count < kMaxRepeats) {
      r.src[r.count] = t->data_ptr<float>();
      r.along[r.count] = along;
      ++r.count;
      repeated.push_back(t);
    } else {
      *t = per_merged_channel(*t, along, n, c);
    }
  }
  if (r.count > 0) {
    const c10::cuda::CUDAGuard device_guard(x.device());   // x's GPU, whichever is current
    const at::Tensor rows = at::empty({int64_t(r.count), n * c}, x.options().dtype(at::kFloat));
    const int64_t blocks = std::min<int64_t>(blocks_for(n * c, 256), 4096);
    repeat_kernel<<<dim3(unsigned(blocks), unsigned(r.count)), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        r, n, c, rows.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    for (size_t k = 0; k < repeated.size(); ++k) *repeated[k] = rows[int64_t(k)];
  }
  if (weight.has_value()) m.weight = w;
  if (bias.has_value()) m.bias = b;
  return m;
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

// ---- every parameter gradient the backward sums, in one launch

// What a merged call's gradient row (N * C values, one per merged channel) sums to for its parameter.
enum class RowSum : int {
  kOverSamples = 0,   // C values: a per-channel parameter (the GroupNorm's weight and bias among them)
  kOverChannels = 1,  // N values: a per-sample parameter
  kWhole = 2,         // one value
};

// The rows summed by one sums_kernel: row k read from `src[k]`, its sums written at out + `dst[k]`.
struct RowSums {
  const float* src[kMaxRepeats];
  int64_t dst[kMaxRepeats];
  RowSum kind[kMaxRepeats];
  int count;
};

constexpr int kSumsThreads = 256;

// Each row's sums (blockIdx.y the row), every one in double and in a fixed order, so the gradients are bitwise
// reproducible. Over the samples a thread a channel adds the N values down its column (the threads of a warp read
// neighbouring channels); over the channels, or the whole row, a block an output adds its contiguous values, strided
// over the threads, then a tree over the block.
__global__ void __launch_bounds__(kSumsThreads) sums_kernel(RowSums r, int64_t n, int64_t c, float* out) {
  __shared__ double per_warp[kSumsThreads / kWarpSize];
  const int k = blockIdx.y;
  const float* src = r.src[k];
  float* dst = out + r.dst[k];
  if (r.kind[k] == RowSum::kOverSamples) {
    const int64_t step = gridDim.x * int64_t(kSumsThreads);
    for (int64_t ch = blockIdx.x * int64_t(kSumsThreads) + threadIdx.x; ch < c; ch += step) {
      double sum = 0.0;
      for (int64_t s = 0; s < n; ++s) sum += __ldg(src + s * c + ch);
      dst[ch] = float(sum);
    }
    return;
  }
  const bool whole = r.kind[k] == RowSum::kWhole;
  const int64_t outputs = whole ? 1 : n, count = whole ? n * c : c;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {   // the same for every thread: the barriers agree
    const float* values = src + o * count;
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < count; i += kSumsThreads) sum += __ldg(values + i);
    sum = warp_sum(sum);
    if (lane == 0) per_warp[warp] = sum;
    __syncthreads();
    if (warp == 0) {
      sum = warp_sum(lane < kSumsThreads / kWarpSize ? per_warp[lane] : 0.0);
      if (lane == 0) dst[o] = float(sum);
    }
    __syncthreads();
  }
}

// The backward's parameter gradients from a merged call's rows: dweight and dbias (N * C each, or undefined) and the
// prologue's and epilogue's rows ((K, N * C), float32, contiguous), each summed to its parameter's `numels` in ONE
// launch (sums_kernel) where the unmerged call's kernels would have given it so. A parameter of N * C values takes its
// row as it is. Returns {dweight (C), dbias (C), then one gradient per prologue and epilogue parameter, flat}. A
// reshape and an at::sum a parameter cost three ATen calls and a launch each: diffusion_resblock's time-embedding
// region sums three (docs/decisions.md).
inline std::vector<at::Tensor> param_grads(const at::Tensor& dweight, const at::Tensor& dbias,
                                           const at::Tensor& dprologue, const at::Tensor& depilogue,
                                           const std::vector<int64_t>& prologue_numels,
                                           const std::vector<int64_t>& epilogue_numels,
                                           const std::vector<bool>& prologue_along,
                                           const std::vector<bool>& epilogue_along, int64_t n, int64_t c) {
  struct Row {
    const at::Tensor* rows;  // the tensor the row lies in
    int64_t index;           // its row there; -1: the tensor is the row
    int64_t numel;           // the parameter's values
    bool along;
  };
  std::vector<Row> wanted{{&dweight, -1, c, true}, {&dbias, -1, c, true}};
  for (size_t k = 0; k < prologue_numels.size(); ++k)
    wanted.push_back({&dprologue, int64_t(k), prologue_numels[k], prologue_along[k]});
  for (size_t k = 0; k < epilogue_numels.size(); ++k)
    wanted.push_back({&depilogue, int64_t(k), epilogue_numels[k], epilogue_along[k]});
  std::vector<at::Tensor> grads(wanted.size());
  RowSums r{};
  std::vector<std::pair<size_t, int64_t>> summed;   // (gradient, its offset in the buffer)
  int64_t total = 0;
  for (size_t k = 0; k < wanted.size(); ++k) {
    const Row& w = wanted[k];
    if (!w.rows->defined()) continue;
    TORCH_CHECK(w.rows->scalar_type() == at::kFloat && w.rows->is_contiguous() &&
                    w.rows->numel() == (w.index < 0 ? 1 : w.rows->size(0)) * n * c,
                "kgen: a merged region's gradient rows are not float32 (K, ", str(n * c), ") contiguous");
    const float* row = w.rows->data_ptr<float>() + (w.index < 0 ? 0 : w.index * n * c);
    if (w.numel == n * c) {   // one value per (sample, channel): the row itself
      grads[k] = w.index < 0 ? *w.rows : (*w.rows)[w.index];
      continue;
    }
    const RowSum kind = w.numel == 1 ? RowSum::kWhole : w.along ? RowSum::kOverSamples : RowSum::kOverChannels;
    TORCH_CHECK(w.numel == (kind == RowSum::kWhole ? 1 : kind == RowSum::kOverSamples ? c : n),
                "kgen: a merged region's parameter of ", str(w.numel), " values; expected 1, ", str(w.along ? c : n),
                " or ", str(n * c));
    r.src[r.count] = row;
    r.dst[r.count] = total;
    r.kind[r.count] = kind;
    ++r.count;
    summed.emplace_back(k, total);
    total += w.numel;
  }
  if (summed.empty()) return grads;
  const at::Tensor& rows = *wanted[summed[0].first].rows;
  const at::Tensor buffer = at::empty({total}, rows.options());
  if (total > 0) {   // else sums of no values: the buffer's empty views
    const c10::cuda::CUDAGuard device_guard(rows.device());   // the rows' GPU, whichever is current
    const int64_t blocks = std::min<int64_t>(std::max<int64_t>({blocks_for(c, kSumsThreads), n, 1}), 1024);
    sums_kernel<<<dim3(unsigned(blocks), unsigned(r.count)), kSumsThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
        r, n, c, buffer.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  for (const auto& [k, offset] : summed) grads[k] = buffer.narrow(0, offset, wanted[k].numel);
  return grads;
}

}  // namespace merged
}  // namespace kgen
