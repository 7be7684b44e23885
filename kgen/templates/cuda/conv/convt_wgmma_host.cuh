// ---- conv/convt_wgmma_host.cuh: the host side of conv/convt_wgmma.cuh: whether the GPU runs its sm_90a build, the
// frame, tiles and ring of a shape, and the calls that launch the kernel (the conv with the GroupNorm moments of a
// region prologue's values, the input gradient) or say why they would not ----
namespace kgen {
namespace convt {

// 1 where the build for the running GPU has the sm_90a instructions, 0 otherwise.
__global__ void convt_wgmma_probe_kernel(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

// Whether convt_wgmma_kernel runs on this device (compute capability 9.0 and an sm_90a build), asked once.
inline bool convt_wgmma_available(int device) {
  static std::mutex lock;
  static std::map<int, bool> known;
  const std::lock_guard<std::mutex> guard(lock);
  auto found = known.find(device);
  if (found != known.end()) return found->second;
  bool ok = cached_attribute<cudaDevAttrComputeCapabilityMajor>(device) == 9 &&
            cached_attribute<cudaDevAttrComputeCapabilityMinor>(device) == 0;
  if (ok) {
    const c10::cuda::CUDAGuard guard_device(device);
    auto flag = at::zeros({1}, at::TensorOptions().device(at::kCUDA, device).dtype(at::kInt));
    convt_wgmma_probe_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(flag.data_ptr<int>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    ok = flag.item<int>() == 1;
  }
  known[device] = ok;
  return ok;
}

// The frame, tiles and ring of a checked shape; "" where this kernel takes it, else why not.
// static_bytes: the kernel's own static shared memory (barriers, the epilogue's channel moments).
// bulk_input: the caller reads an NCHW input with 16-byte aligned data and rounds it: the plan takes the bulk input
// path (wgmma_produce_bulk: a K-major ring of `bulk_stages` stages, 3 by default, and as many raw half-chunk slots as
// then fit, 2-6) where the input planes are whole 16-byte units, a tile's frame holds at most 4096 positions and the
// slots fit, else the 4-byte copies' ring (raw_slots 0).
inline std::string convt_wgmma_plan(const ConvShape& s, WgmmaGeometry& g, int64_t smem_limit,
                                    int64_t static_bytes, int pitch_align = 4, bool bulk_input = false,
                                    int bulk_stages = 3) {
  if (s.stride_h != 1 || s.stride_w != 1) return "it takes stride 1 only";
  if (s.pad_h > s.kernel_h - 1 || s.pad_w > s.kernel_w - 1) return "it takes padding <= kernel size - 1 only";
  if (s.out_h != s.in_h + s.kernel_h - 1 - 2 * s.pad_h || s.out_w != s.in_w + s.kernel_w - 1 - 2 * s.pad_w) {
    return "it takes output_padding 0 only";
  }
  g.pad_top = s.kernel_h - 1 - s.pad_h;
  g.pad_left = s.kernel_w - 1 - s.pad_w;
  g.pitch = s.in_w + g.pad_left;
  if (pitch_align > 1 && s.out_w % 4 == 0 && g.pitch != s.out_w) {
    g.pitch += ((s.out_w - g.pitch) % pitch_align + pitch_align) % pitch_align;  // Q = W_out mod pitch_align
  }
  const int64_t frame = int64_t(s.out_h) * g.pitch;
  const int64_t positions = kWgTilePixels + int64_t(s.kernel_h - 1) * g.pitch + s.kernel_w - 1;
  if (positions >= (1 << 14) || s.in_plane() >= (int64_t(1) << 28)) return "the input planes are too large for it";
  g.positions = static_cast<int>(positions);
  g.tiles = static_cast<int>((frame + kWgTilePixels - 1) / kWgTilePixels);
  g.chunks = (s.in_channels + kWgChunk - 1) / kWgChunk;
  g.channel_tiles = (s.out_channels + kWgChannels - 1) / kWgChannels;
  g.work = int64_t(s.batch) * g.channel_tiles * g.tiles;
  g.stage_floats = 8 * positions + 512 * int64_t(s.taps());
  g.raw_slots = 0;
  // The bulk path: `bulk_stages` K-major stages, fewer (down to 2) where its raw slots would not fit beside them.
  for (int stages = std::min(std::max(bulk_stages, kWgMinStages), kWgMaxStages);
       bulk_input && s.in_plane() % 4 == 0 && positions <= 32 * 128 && stages >= kWgMinStages; --stages) {
    g.stages = stages;
    g.raw_pitch = static_cast<int>((positions + 3 + 3) / 4 * 4);
    g.raw_offset = g.stages * g.stage_floats + kEpiFloats;  // past the epilogue's tiles, 16-byte aligned
    const int64_t slot_bytes = 4 * int64_t(kRawChannels) * g.raw_pitch;
    const int64_t slots = std::min<int64_t>(kWgMaxRawSlots, (smem_limit - static_bytes - 4 * g.raw_offset) / slot_bytes);
    if (slots >= kWgMinRawSlots) {
      g.raw_slots = static_cast<int>(slots);
      g.smem_bytes = 4 * g.raw_offset + slots * slot_bytes;
      if (frame + positions >= (int64_t(1) << 31)) return "the output is too large for one launch";
      return "";
    }
  }
  for (g.stages = kWgMaxStages; g.stages >= kWgMinStages; --g.stages) {
    g.smem_bytes = 4 * (g.stages * g.stage_floats + kEpiFloats + positions);
    if (g.smem_bytes + static_bytes <= smem_limit) break;
  }
  if (g.stages < kWgMinStages) {
    return "it would take " + std::to_string(4 * (kWgMinStages * g.stage_floats + kEpiFloats + positions) +
                                             static_bytes) +
           " bytes of shared memory a block; the GPU allows " + std::to_string(smem_limit);
  }
  if (frame + positions >= (int64_t(1) << 31)) return "the output is too large for one launch";
  return "";
}

// The weights as the tensor cores read them (convt_wgmma_weights_kernel), for a planned shape.
inline at::Tensor wgmma_prepared_weights(const at::Tensor& weight, const ConvShape& s, const WgmmaGeometry& g,
                                         cudaStream_t stream) {
  const int64_t total = int64_t(g.channel_tiles) * g.chunks * s.taps() * 512;
  const auto w = weight.contiguous();
  auto wprep = at::empty({total}, w.options());
  convt_wgmma_weights_kernel<<<static_cast<unsigned>(std::min<int64_t>(blocks_for(total, 256), 4096)), 256, 0,
                               stream>>>(w.data_ptr<float>(), wprep.data_ptr<float>(), s, g.chunks, total);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return wprep;
}

// The epilogue's GroupNorm partials, one per (sample, group, pixel tile, channel tile), as floats; zeroed, since
// those of a channel tile that does not touch the group are never written and must read as empty.
inline at::Tensor wgmma_moment_partials(const ConvShape& s, const WgmmaGeometry& g, const at::TensorOptions& options) {
  const int64_t per_row = int64_t(g.tiles) * g.channel_tiles;
  return at::zeros({int64_t(s.batch) * s.groups * per_row * int64_t(sizeof(Moments) / sizeof(float))}, options);
}

// conv_transpose2d(x, weight) at stride 1 -> z, the conv without its bias, and the GroupNorm statistics of the
// region prologue's values Pro::value(z) (the prologue adds the bias, as a parameter in params.prologue): {z (NCHW),
// mean (N, G, 2), rstd (N, G)}, for a normalise sweep and a backward that recompute the prologue from z. A clear error
// where the GPU or the shape is not this kernel's (convt_wgmma_unsupported says which, without raising).
// kInputCL: the input is read channels-last (copied so if it is not; C_in % 4 == 0). kRoundInput false: the input is
// truncated to TF32 by the tensor cores instead of rounded to nearest. l2_prefetch (WgmmaGeometry) and pitch_align
// (the frame's comment; 1: W_in + PW as it is) are for comparisons.
// bulk_input: the bulk input path where it applies (convt_wgmma_plan), else the 4-byte copies' (the default, which the
// input gradient takes). With its transposing sweep the bulk path is the faster (H100, L2-19: conv + moments
// 3.56-3.64 ms against 3.69-3.70): the fused forward asks for it. bulk_stages: its K-major ring (for comparisons).
template <class Pro, int kPart = 0, bool kInputCL = false, bool kRoundInput = true>
std::vector<at::Tensor> convt_wgmma_moments(const at::Tensor& input, const at::Tensor& weight,
                                            const RegionParams& params, int64_t groups, double eps,
                                            std::vector<int64_t> padding, int chunks_in_flight = 2,
                                            bool l2_prefetch = false, int pitch_align = 4, bool bulk_input = false,
                                            int bulk_stages = 3) {
  const ConvShape s = check_convt(input, weight, groups, {1, 1}, padding, {0, 0});
  TORCH_CHECK(!kInputCL || s.in_channels % 4 == 0, "kgen: the channels-last wgmma input path takes C_in % 4 == 0, not ",
              str(s.in_channels));
  const c10::cuda::CUDAGuard device_guard(input.device());
  const int device = input.get_device();
  TORCH_CHECK(convt_wgmma_available(device), "kgen: the wgmma ConvTranspose2d needs an sm_90 GPU (H100/H200) and a "
              "build for sm_90a");
  const auto kernel = convt_wgmma_kernel<Pro, kPart, kInputCL, kRoundInput>;
  cudaFuncAttributes attributes{};
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
  const auto x = input.contiguous(kInputCL ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
  // The bulk input path: an NCHW input rounded to TF32, the whole kernel or a part that runs its producer as is.
  const bool bulk = bulk_input && !kInputCL && kRoundInput && chunks_in_flight == 2 &&
                    (kPart <= 1 || kPart >= 7) && is_16_byte_aligned(x.data_ptr<float>());
  WgmmaGeometry g{};
  const std::string why = convt_wgmma_plan(s, g, max_block_smem(device), int64_t(attributes.sharedSizeBytes),
                                           pitch_align, bulk, bulk_stages);
  TORCH_CHECK(why.empty(), "kgen: the wgmma ConvTranspose2d does not take this shape: ", why);
  g.l2_prefetch = l2_prefetch;
  TORCH_CHECK(chunks_in_flight == 2 || chunks_in_flight == 3, "kgen: 2 or 3 chunks in flight, not ", str(chunks_in_flight));
  g.chunks_in_flight = chunks_in_flight;
  auto z = at::empty({s.batch, s.out_channels, s.out_h, s.out_w}, x.options());
  auto mean = at::empty({s.batch, s.groups, 2}, x.options());
  auto rstd = at::empty({s.batch, s.groups}, x.options());
  if (s.batch == 0) return {z, mean, rstd};
  const auto stream = at::cuda::getCurrentCUDAStream();
  const auto wprep = wgmma_prepared_weights(weight, s, g, stream);
  const int64_t per_row = int64_t(g.tiles) * g.channel_tiles;
  auto partial = wgmma_moment_partials(s, g, x.options());
  auto* partial_ptr = reinterpret_cast<Moments*>(partial.data_ptr<float>());
  allow_smem(reinterpret_cast<const void*>(kernel), g.smem_bytes);
  // Persistent: one block a multiprocessor (the ring and the registers allow no second), tiles round-robin.
  const int64_t blocks = std::min<int64_t>(g.work, multiprocessors(device));
  kernel<<<static_cast<unsigned>(blocks), kWgThreads, g.smem_bytes, stream>>>(
      x.data_ptr<float>(), wprep.data_ptr<float>(), z.data_ptr<float>(), partial_ptr, s, g, params);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if constexpr (kEpilogueMoments<Pro>) finalize_moments(partial_ptr, per_row, s, eps, mean, rstd, stream);
  return {z, mean, rstd};
}

// The input gradient of conv_transpose2d(x, weight, padding) at stride 1 (any bias), grad_x = conv2d(grad_z, weight,
// padding) in NCHW, by this kernel: that direct conv is itself a transposed one of grad_z, with the weight's two
// channel roles swapped and its taps flipped, and padding kernel - 1 - pad (the frame then holds no padding at all).
// grad_z is read channels-last, as the region backward writes it (groupnorm/twopass/backward_channels_last.cuh), by
// 16-byte copies; the epilogue stores the accumulators without GroupNorm moments (ConvOnly). TF32: the weights
// rounded to nearest; grad_z truncated by the tensor cores (kRoundGradZ: rounded to nearest by the producer's sweep,
// as cuDNN's own input gradient does, 4e-6 from it at L2-19). H100, L2-19's shape: 3.1 ms truncated, 4.2 rounded (the
// sweep is most of the main loop's excess: 2.5 against 3.5), against cuDNN's 2.9 plus 1.5 for turning its
// channels-last result back to NCHW.
inline std::string convt_wgmma_input_grad_unsupported(const at::Tensor& grad_z, const at::Tensor& weight,
                                                      std::vector<int64_t> padding) {
  std::string why = float_cuda_on_one_device({&grad_z, &weight});
  if (!why.empty()) return why;
  if (grad_z.dim() != 4 || weight.dim() != 4 || padding.size() != 2 || grad_z.size(1) != weight.size(1) ||
      grad_z.numel() == 0 || grad_z.size(0) > 65535) {
    return "the shapes are not a ConvTranspose2d's gradient's";
  }
  why = padding_below_kernel(padding, weight);
  if (!why.empty()) return why;
  if (grad_z.size(2) < weight.size(2) - 2 * padding[0] || grad_z.size(3) < weight.size(3) - 2 * padding[1]) {
    return "the input gradient would be empty";
  }
  if (grad_z.size(1) % 4 != 0) return "it reads grad_z's channels 4 at a time";
  if (!is_16_byte_aligned(grad_z.data_ptr<float>())) return "grad_z is not 16-byte aligned";
  if (!convt_wgmma_available(grad_z.get_device())) return "it needs an sm_90 GPU (H100/H200) running its sm_90a build";
  // The frame and ring of the transposed conv it runs (the shape only: the weight's roles swapped as a view).
  const c10::cuda::CUDAGuard device_guard(grad_z.device());
  const auto swapped = weight.transpose(0, 1);
  const ConvShape s = check_convt(grad_z, swapped, 1, {1, 1},
                                  {weight.size(2) - 1 - padding[0], weight.size(3) - 1 - padding[1]}, {0, 0});
  const auto kernel = convt_wgmma_kernel<ConvOnly, 0, true, false>;  // the one convt_wgmma_input_grad launches
  cudaFuncAttributes attributes{};
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
  WgmmaGeometry g{};
  return convt_wgmma_plan(s, g, max_block_smem(grad_z.get_device()), int64_t(attributes.sharedSizeBytes));
}

template <int kPart = 0, bool kRoundGradZ = false>
at::Tensor convt_wgmma_input_grad(const at::Tensor& grad_z, const at::Tensor& weight, std::vector<int64_t> padding,
                                  bool l2_prefetch = false, int pitch_align = 4) {
  const std::string why = convt_wgmma_input_grad_unsupported(grad_z, weight, padding);
  TORCH_CHECK(why.empty(), "kgen: the wgmma input gradient does not take this call: ", why);
  const auto flipped = weight.transpose(0, 1).flip({2, 3}).contiguous();  // (C_out, C_in, kH, kW), taps reversed
  const std::vector<int64_t> frame_padding = {weight.size(2) - 1 - padding[0], weight.size(3) - 1 - padding[1]};
  return convt_wgmma_moments<ConvOnly, kPart, true, kRoundGradZ>(grad_z, flipped, RegionParams{}, 1, 1e-5,
                                                                  frame_padding, 2, l2_prefetch, pitch_align)[0];
}

// Why convt_wgmma_moments<Pro> would not take this ConvTranspose2d call ("" where it would): the GPU (an sm_90 device
// running the sm_90a build), the arguments (float32 CUDA tensors; stride 1, dilation 1, one conv group, output
// padding 0, padding <= kernel - 1; groups dividing C_out = weight.size(1)), the shared memory. For a caller that
// falls back to another path instead.
template <class Pro>
std::string convt_wgmma_unsupported(const at::Tensor& x, const at::Tensor& weight, int64_t groups,
                                    std::vector<int64_t> stride, std::vector<int64_t> padding,
                                    std::vector<int64_t> output_padding, std::vector<int64_t> dilation,
                                    int64_t conv_groups) {
  const std::string why = float_cuda_on_one_device({&x, &weight});
  if (!why.empty()) return why;
  if (x.dim() != 4 || weight.dim() != 4 || weight.size(0) != x.size(1) || groups <= 0 ||
      weight.size(1) % groups != 0) {
    return "the shapes are not a ConvTranspose2d's";
  }
  if (stride != std::vector<int64_t>{1, 1} || dilation != std::vector<int64_t>{1, 1} || conv_groups != 1 ||
      output_padding != std::vector<int64_t>{0, 0} || padding.size() != 2) {
    return "it takes stride 1, dilation 1, one conv group and no output padding only";
  }
  if (x.numel() == 0 || x.size(0) > 65535) return "it takes 1 to 65535 samples";
  if (!convt_wgmma_available(x.get_device())) return "it needs an sm_90 GPU (H100/H200) running its sm_90a build";
  const ConvShape s = check_convt(x, weight, groups, stride, padding, output_padding);
  const c10::cuda::CUDAGuard device_guard(x.device());
  cudaFuncAttributes attributes{};
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(convt_wgmma_kernel<Pro, 0>)));
  WgmmaGeometry g{};
  return convt_wgmma_plan(s, g, max_block_smem(x.get_device()), int64_t(attributes.sharedSizeBytes));
}

}  // namespace convt
}  // namespace kgen
