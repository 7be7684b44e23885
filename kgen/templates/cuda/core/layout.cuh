// ---- core/layout.cuh: NCHW <-> channels-last copies at full bandwidth ----
//
// cuDNN's fast ConvTranspose2d kernels want a channels-last input. PyTorch's own layout copy
// (x.contiguous(memory_format=torch.channels_last)) is a generic strided copy: 2.25 ms for L2-19's
// 2.15 GB input, and autograd turns the channels-last input gradient back into NCHW with the same
// copy at under 1 TB/s (4.5 ms). Both directions are one batched matrix transpose: for each sample,
// in (R, S) -> out (S, R), with (R, S) = (C, HW) going to channels-last and (HW, C) coming back (HW: every
// spatial dim, so a 5-D tensor goes to NDHWC, channels_last_3d, the same way).
//
// A block moves one kTileR x kTileS tile through shared memory: 16-byte loads along S (contiguous in
// the input), 16-byte stores along R (contiguous in the output). The shared tile's rows are padded by
// one float, so the column reads of the store phase hit 32 different banks.
namespace kgen {

constexpr int kTileR = 32;
constexpr int kTileS = 64;
constexpr int kTransposeThreads = 256;

// kVec: R and S are multiples of 4 and both pointers 16-byte aligned (float4 path); otherwise scalar.
template <bool kVec>
__global__ void __launch_bounds__(kTransposeThreads)
batched_transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int64_t rows, int64_t cols,
                         int64_t tiles_r, int64_t tiles_s) {
  __shared__ float tile[kTileR][kTileS + 1];
  const int64_t tiles_per_sample = tiles_r * tiles_s;
  const int64_t sample = blockIdx.x / tiles_per_sample;
  const int64_t t = blockIdx.x - sample * tiles_per_sample;
  const int64_t r0 = (t / tiles_s) * kTileR;
  const int64_t s0 = (t % tiles_s) * kTileS;
  const float* src = in + sample * rows * cols;
  float* dst = out + sample * rows * cols;
  if constexpr (kVec) {
    constexpr int kLoadsPerRow = kTileS / 4;   // float4 along S
    for (int k = threadIdx.x; k < kTileR * kLoadsPerRow; k += kTransposeThreads) {
      const int r = k / kLoadsPerRow, s = (k % kLoadsPerRow) * 4;
      if (r0 + r < rows && s0 + s < cols) {   // cols % 4 == 0: a float4 is all in or all out
        const float4 v = __ldg(reinterpret_cast<const float4*>(src + (r0 + r) * cols + s0 + s));
        tile[r][s] = v.x;
        tile[r][s + 1] = v.y;
        tile[r][s + 2] = v.z;
        tile[r][s + 3] = v.w;
      }
    }
    __syncthreads();
    constexpr int kStoresPerCol = kTileR / 4;  // float4 along R
    for (int k = threadIdx.x; k < kTileS * kStoresPerCol; k += kTransposeThreads) {
      const int s = k / kStoresPerCol, r = (k % kStoresPerCol) * 4;
      if (s0 + s < cols && r0 + r < rows) {
        *reinterpret_cast<float4*>(dst + (s0 + s) * rows + r0 + r) =
            make_float4(tile[r][s], tile[r + 1][s], tile[r + 2][s], tile[r + 3][s]);
      }
    }
  } else {
    for (int k = threadIdx.x; k < kTileR * kTileS; k += kTransposeThreads) {
      const int r = k / kTileS, s = k % kTileS;
      if (r0 + r < rows && s0 + s < cols) tile[r][s] = src[(r0 + r) * cols + s0 + s];
    }
    __syncthreads();
    for (int k = threadIdx.x; k < kTileR * kTileS; k += kTransposeThreads) {
      const int s = k / kTileR, r = k % kTileR;
      if (s0 + s < cols && r0 + r < rows) dst[(s0 + s) * rows + r0 + r] = tile[r][s];
    }
  }
}

// A side of at most kNarrow (a convolution's input of 3 channels): the 32 x 64 tile above would be mostly
// empty (it moves L2-83's 3-channel input at 0.26 TB/s). One thread per position along the long side moves the whole
// short side instead: across a warp its accesses along the long side are coalesced, and its values on the short
// side are contiguous for it. The other side's accesses are strided by the short side, so this only pays while
// that side is tiny: on the H100 L2-83's 3-channel copy takes 71 us against the tile's 772, but L2-21's
// 8-channel one 501 us against the tile's 319; sides of 5 to 8 take the tile.
constexpr int kNarrow = 4;

__global__ void __launch_bounds__(kTransposeThreads)
narrow_transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int64_t batch, int64_t rows,
                        int64_t cols) {
  const bool short_rows = rows <= cols;  // (R <= kNarrow, S long) or (R long, S <= kNarrow)
  const int64_t long_side = short_rows ? cols : rows;
  const int shorter = static_cast<int>(short_rows ? rows : cols);
  const int64_t i = int64_t(blockIdx.x) * kTransposeThreads + threadIdx.x;
  if (i >= batch * long_side) return;
  const int64_t sample = i / long_side, p = i - sample * long_side;
  const float* src = in + sample * rows * cols;
  float* dst = out + sample * rows * cols;
  float v[kNarrow];
#pragma unroll
  for (int k = 0; k < kNarrow; ++k) {
    if (k < shorter) v[k] = short_rows ? __ldg(src + k * cols + p) : __ldg(src + p * cols + k);
  }
#pragma unroll
  for (int k = 0; k < kNarrow; ++k) {
    if (k < shorter) {
      if (short_rows) dst[p * rows + k] = v[k];
      else dst[k * rows + p] = v[k];
    }
  }
}

// out[n] = in[n]^T for every sample n, in and out both (batch, rows * cols) contiguous buffers.
inline void batched_transpose(const float* in, float* out, int64_t batch, int64_t rows, int64_t cols) {
  if (batch == 0 || rows == 0 || cols == 0) return;
  if (std::min(rows, cols) <= kNarrow) {
    const int64_t threads = batch * std::max(rows, cols);
    TORCH_CHECK(blocks_for(threads, kTransposeThreads) < (int64_t(1) << 31), "kgen: layout copy of ",
                str(batch * rows * cols), " values needs more blocks than one launch allows");
    narrow_transpose_kernel<<<blocks_for(threads, kTransposeThreads), kTransposeThreads, 0,
                              at::cuda::getCurrentCUDAStream()>>>(in, out, batch, rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  const int64_t tiles_r = blocks_for(rows, kTileR), tiles_s = blocks_for(cols, kTileS);
  const int64_t blocks = batch * tiles_r * tiles_s;
  TORCH_CHECK(blocks < (int64_t(1) << 31), "kgen: layout copy of ", str(batch * rows * cols),
              " values needs more blocks than one launch allows");
  const bool vec = rows % 4 == 0 && cols % 4 == 0 && is_16_byte_aligned(in) && is_16_byte_aligned(out);
  const auto stream = at::cuda::getCurrentCUDAStream();
  if (vec) {
    batched_transpose_kernel<true><<<blocks, kTransposeThreads, 0, stream>>>(in, out, rows, cols, tiles_r, tiles_s);
  } else {
    batched_transpose_kernel<false><<<blocks, kTransposeThreads, 0, stream>>>(in, out, rows, cols, tiles_r, tiles_s);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The channels-last memory format of a 4-D (NHWC) or 5-D (NDHWC) tensor; anything else is an error.
inline at::MemoryFormat channels_last_format(const at::Tensor& x, const char* what) {
  check_float_cuda(x, what);
  TORCH_CHECK(x.dim() == 4 || x.dim() == 5, "kgen: ", what, " must have shape (N, C, H, W) or (N, C, D, H, W), got ",
              str(x.sizes()));
  return x.dim() == 4 ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::ChannelsLast3d;
}

inline int64_t spatial_size(const at::Tensor& x) {
  int64_t plane = 1;
  for (int64_t d = 2; d < x.dim(); ++d) plane *= x.size(d);
  return plane;
}

// Any (N, C, H, W) or (N, C, D, H, W) tensor -> the same values in channels-last memory (NHWC / NDHWC strides).
inline at::Tensor to_channels_last(const at::Tensor& input) {
  const auto format = channels_last_format(input, "input of the channels-last copy");
  const c10::cuda::CUDAGuard device_guard(input.device());
  auto out = at::empty_like(input, format);
  if (input.is_contiguous(format)) return out.copy_(input);
  const auto x = input.contiguous();
  const int64_t plane = spatial_size(x);
  batched_transpose(x.data_ptr<float>(), out.data_ptr<float>(), x.size(0), x.size(1), plane);
  return out;
}

// Any (N, C, H, W) or (N, C, D, H, W) tensor -> the same values NCHW-contiguous.
inline at::Tensor to_contiguous_nchw(const at::Tensor& input) {
  const auto format = channels_last_format(input, "input of the NCHW copy");
  const c10::cuda::CUDAGuard device_guard(input.device());
  if (input.is_contiguous()) return input.clone();
  if (!input.is_contiguous(format)) return input.contiguous();
  auto out = at::empty_like(input, at::MemoryFormat::Contiguous);
  const int64_t plane = spatial_size(input);
  batched_transpose(input.data_ptr<float>(), out.data_ptr<float>(), input.size(0), plane, input.size(1));
  return out;
}

}  // namespace kgen
