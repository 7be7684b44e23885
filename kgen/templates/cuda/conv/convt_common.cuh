// ---- conv/convt_common.cuh: what kgen's ConvTranspose2d kernels share (conv/convt_wgmma.cuh: the conv at stride 1,
// wgmma; conv/convt_wgrad.cuh: its weight gradient): the checked shape, and the merge of the conv's per-tile GroupNorm
// moments ----
namespace kgen {
namespace convt {

struct ConvShape {
  int batch, in_channels, out_channels;
  int in_h, in_w, out_h, out_w;
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  int groups;  // GroupNorm groups over the output channels
  __host__ __device__ __forceinline__ int64_t out_plane() const { return int64_t(out_h) * out_w; }
  __host__ __device__ __forceinline__ int64_t in_plane() const { return int64_t(in_h) * in_w; }
  __host__ __device__ __forceinline__ int taps() const { return kernel_h * kernel_w; }
  __host__ __device__ __forceinline__ int channels_per_group() const { return out_channels / groups; }
};

// One warp per (sample, group): that slice's partials (one per pixel tile and channel tile; count 0 where the
// channel tile does not touch the group) merged in double in a fixed order; mean as (hi, lo), rstd.
__global__ void convt_moments_finalize_kernel(const Moments* __restrict__ partial, int per_row, int64_t rows,
                                              double eps, float2* __restrict__ mean, float* __restrict__ rstd) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  if (row >= rows) return;  // warp-uniform
  const MomentsD m = warp_merge(per_row, [&](int i) { return partial[row * per_row + i]; });
  // kExact: the fused conv runs at float32 only (its bindings decline half precision and autocast).
  if (threadIdx.x % kWarpSize == 0) finish_statistics(m, 0.0, eps, kExact, mean[row], rstd[row]);
}

// mean and rstd of every (sample, group) from its per_row partials.
inline void finalize_moments(const Moments* partial, int64_t per_row, const ConvShape& s, double eps, at::Tensor& mean,
                             at::Tensor& rstd, cudaStream_t stream) {
  const int64_t rows = int64_t(s.batch) * s.groups;
  convt_moments_finalize_kernel<<<blocks_for(rows * kWarpSize, 256), 256, 0, stream>>>(
      partial, static_cast<int>(per_row), rows, eps, as_float2(mean), rstd.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The declines the wgmma kernels share ("" where the call passes, else why not, for a caller that falls back):
// float32 CUDA tensors, all on the first one's device;
inline std::string float_cuda_on_one_device(std::initializer_list<const at::Tensor*> tensors) {
  const int device = (*tensors.begin())->get_device();
  for (const auto* t : tensors) {
    if (!t->is_cuda() || t->scalar_type() != at::kFloat) return "it takes float32 CUDA tensors";
    if (t->get_device() != device) return "its tensors are on different devices";
  }
  return "";
}
// and padding (two values) below the kernel size of a weight (.., .., kH, kW).
inline std::string padding_below_kernel(const std::vector<int64_t>& padding, const at::Tensor& weight) {
  if (padding[0] < 0 || padding[0] >= weight.size(2) || padding[1] < 0 || padding[1] >= weight.size(3)) {
    return "it takes padding below the kernel size only";
  }
  return "";
}

// Output size of ConvTranspose2d along one dim (dilation 1).
inline int64_t transposed_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t out_pad) {
  return (in - 1) * stride - 2 * pad + kernel + out_pad;
}

// The shape of conv_transpose2d(x, weight) (its bias, if any, belongs to the caller's region prologue), with the
// GroupNorm's groups over its C_out = weight.size(1) output channels; a clear error where the arguments are not one.
inline ConvShape check_convt(const at::Tensor& x, const at::Tensor& weight, int64_t groups, std::vector<int64_t> stride,
                             std::vector<int64_t> padding, std::vector<int64_t> output_padding) {
  check_float_cuda(x, "input");
  check_float_cuda(weight, "ConvTranspose2d weight");
  TORCH_CHECK(x.dim() == 4, "kgen: ConvTranspose2d input must be (N, C, H, W), got ", str(x.sizes()));
  TORCH_CHECK(weight.dim() == 4 && weight.size(0) == x.size(1), "kgen: ConvTranspose2d weight must be (",
              str(x.size(1)), ", C_out, kH, kW) for this input, got ", str(weight.sizes()));
  TORCH_CHECK(stride.size() == 2 && padding.size() == 2 && output_padding.size() == 2,
              "kgen: stride, padding and output_padding take two values each");
  TORCH_CHECK(groups > 0 && weight.size(1) % groups == 0, "kgen: ", str(weight.size(1)),
              " channels are not divisible into ", str(groups), " groups");
  ConvShape s;
  s.batch = static_cast<int>(x.size(0));
  s.in_channels = static_cast<int>(x.size(1));
  s.out_channels = static_cast<int>(weight.size(1));
  s.in_h = static_cast<int>(x.size(2));
  s.in_w = static_cast<int>(x.size(3));
  s.kernel_h = static_cast<int>(weight.size(2));
  s.kernel_w = static_cast<int>(weight.size(3));
  s.stride_h = static_cast<int>(stride[0]);
  s.stride_w = static_cast<int>(stride[1]);
  s.pad_h = static_cast<int>(padding[0]);
  s.pad_w = static_cast<int>(padding[1]);
  TORCH_CHECK(s.stride_h > 0 && s.stride_w > 0 && s.pad_h >= 0 && s.pad_w >= 0, "kgen: bad stride or padding");
  s.out_h = static_cast<int>(transposed_size(s.in_h, s.kernel_h, s.stride_h, s.pad_h, output_padding[0]));
  s.out_w = static_cast<int>(transposed_size(s.in_w, s.kernel_w, s.stride_w, s.pad_w, output_padding[1]));
  TORCH_CHECK(s.out_h > 0 && s.out_w > 0, "kgen: ConvTranspose2d output would be empty");
  s.groups = static_cast<int>(groups);
  TORCH_CHECK(x.size(0) <= 65535, "kgen: batch above 65535");
  return s;
}

}  // namespace convt
}  // namespace kgen
