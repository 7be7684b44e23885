// ---- conv/convt_wgmma_produce.cuh: the producer warpgroup of kgen's wgmma ConvTranspose2d (design, constants and
// the PTX it uses: conv/convt_wgmma.cuh): frame offsets, then each chunk of input into the ring, by 4-byte copies
// (wgmma_produce) or by bulk copies and a sweep (wgmma_produce_bulk) ----
namespace kgen {
namespace convt {

// The producer warpgroup: for each of the block's tiles, every frame position's offset in an input plane (-1:
// padding), then every chunk into the next stage of the ring once the consumers have released it. A chunk's
// input arrives by 4-byte asynchronous copies, a thread its own positions (8 channels each, into its two 16-byte
// units); once they have landed the thread rounds those units to TF32 in place and hands the stage over. The
// rounding of chunk k waits until chunk k + 1's copies are issued, so two chunks are in flight a thread.
// kInputCL: the input is channels-last (NHWC), so a position's 4 channels of a unit are 16 contiguous bytes: one
// 16-byte copy a unit (C_in % 4 == 0), unit u = 2 p + half of the chunk a thread's if u = tid mod 128: a warp reads
// 32 contiguous bytes a position. (A quarter-warp filling 128 contiguous bytes of one half instead measured slower:
// H100, the input gradient at L2-19's shape, main loop 3.72 ms against 3.34.)
// kRoundInput false: no rounding sweep, the tensor cores truncate the input (the input gradient's grad_z).
// kEvictFirst: the NCHW input's copies ask L2 to evict their lines first (convt_wgmma_infer keeps its values there).
// The block takes tiles first, first + step, ... (the persistent schedule: blockIdx.x and gridDim.x, or the conv
// blocks' own numbering in convt_wgmma_infer_kernel).
template <int kPart, bool kInputCL, bool kRoundInput, bool kEvictFirst = false>
__device__ __forceinline__ void wgmma_produce(const float* __restrict__ x, const float* __restrict__ wprep,
                                              const ConvShape& s, const WgmmaGeometry& g, float* smem, int* pos_off,
                                              uint32_t full, uint32_t empty, int64_t first, int64_t step) {
  constexpr int kThreads = 128 * kWgProducers;
  const uint64_t evict_first = kEvictFirst ? l2_policy_evict_first() : 0;
  const int tid = threadIdx.x;
  const int taps = s.taps();
  const int in_plane = static_cast<int>(s.in_plane());
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t weight_bytes = 2048u * taps;
  // Rounds this thread's units of a landed stage and hands it to the consumers.
  auto hand_over = [&](int stage) {
    float4* xs = reinterpret_cast<float4*>(smem + stage * g.stage_floats);
    auto round_unit = [&](int at) {
      const float4 v = xs[at];
      xs[at] = make_float4(tf32_nearest(v.x), tf32_nearest(v.y), tf32_nearest(v.z), tf32_nearest(v.w));
    };
    if constexpr (!kRoundInput) {
      (void)round_unit;
    } else if constexpr (kInputCL) {
      for (int u = tid; u < 2 * g.positions; u += kThreads) round_unit((u & 1) * g.positions + (u >> 1));
    } else {
#pragma unroll
      for (int half = 0; half < 2; ++half)
        for (int p = tid; p < g.positions; p += kThreads) round_unit(half * g.positions + p);  // this thread's copies
    }
    fence_async_shared();  // this thread's stores, visible to the tensor cores once the consumers acquire
    mbar_arrive(full + 8 * stage);
  };
  // The stages whose copies are in flight, not yet handed over, oldest first (one commit group each); scalars,
  // not an array, which a run-time index would put in local memory.
  int pending0 = -1, pending1 = -1, pending2 = -1, in_flight = 0;
  auto retire_oldest = [&]() {  // waits for the oldest in-flight chunk's copies, rounds them, hands the stage over
    if (in_flight >= 3) {
      copy_async_wait<2>();
    } else if (in_flight == 2) {
      copy_async_wait<1>();
    } else {
      copy_async_wait<0>();
    }
    hand_over(pending0);
    pending0 = pending1, pending1 = pending2, --in_flight;
  };
  int stage = 0, filled = 0;
  uint32_t phase = 0;
  for (int64_t t = first; t < g.work; t += step) {
    const WgmmaTile tile(t, g);
    named_barrier(1, kThreads);  // every producer thread is done with the previous tile's offsets
    for (int p = tid; p < g.positions; p += kThreads) {
      const int at = tile.f0 + p, r = at / g.pitch;
      const int ih = r - g.pad_top, iw = at - r * g.pitch - g.pad_left;
      pos_off[p] = ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w ? ih * s.in_w + iw : -1;
    }
    named_barrier(1, kThreads);
    const float4* wsrc = reinterpret_cast<const float4*>(wprep) + int64_t(tile.ctile) * g.chunks * taps * 128;
    for (int c = 0; c < g.chunks; ++c) {
      // The stage waited for below held chunk c - S, which the consumers release once they have chunk c - S + 1:
      // that one, and all before it, must have been handed over (at most S - 2 chunks still in flight).
      while (in_flight > g.stages - 2) retire_oldest();
      mbar_wait(empty + 8 * stage, phase ^ 1);  // a fresh barrier counts as released
      const uint32_t full_stage = full + 8 * stage;
      const bool first_fill = filled < g.stages;
      ++filled;
      const uint32_t xs_addr = smem_base + static_cast<uint32_t>(stage * g.stage_floats * 4);
      if ((kPart != 4 && kPart != 6) || first_fill) {
        if (tid == 0) {
          mbar_expect_bytes(full_stage, weight_bytes);
          bulk_copy_to_shared(xs_addr + 32u * g.positions, wsrc + int64_t(c) * taps * 128, weight_bytes, full_stage);
        }
      }
      if (kInputCL && ((kPart != 4 && kPart != 5) || first_fill)) {
        const float* xn = x + int64_t(tile.n) * in_plane * s.in_channels + c * kWgChunk;
        const bool second = c * kWgChunk + 4 < s.in_channels;  // the chunk's channels 4-7 exist (C_in % 4 == 0)
        for (int u = tid; u < 2 * g.positions; u += kThreads) {
          const int p = u >> 1, half = u & 1, off = pos_off[p];
          const bool real = off >= 0 && (half == 0 || second);
          const uint32_t dst = xs_addr + 16u * (half * g.positions + p);
          const float* src = xn + (real ? int64_t(off) * s.in_channels + 4 * half : 0);
          if (g.l2_prefetch) {
            copy16_async_prefetch(dst, src, real ? 16u : 0u);
          } else {
            copy16_async(dst, src, real ? 16u : 0u);
          }
        }
      }
      if (!kInputCL && ((kPart != 4 && kPart != 5) || first_fill)) {
        const float* xc = x + (int64_t(tile.n) * s.in_channels + c * kWgChunk) * in_plane;
        const int channels = min(kWgChunk, s.in_channels - c * kWgChunk);
        for (int p = tid; p < g.positions; p += kThreads) {
          const int off = pos_off[p];
          const float* at = xc + max(off, 0);
#pragma unroll
          for (int ch = 0; ch < kWgChunk; ++ch) {
            const bool real = off >= 0 && ch < channels;
            const uint32_t dst = xs_addr + 16u * ((ch / 4) * g.positions + p) + 4u * (ch % 4);
            if constexpr (kEvictFirst) {
              copy4_async_policy(dst, at + (real ? ch : 0) * in_plane, real ? 4u : 0u, evict_first);
            } else {
              copy4_async(dst, at + (real ? ch : 0) * in_plane, real ? 4u : 0u);
            }
          }
        }
      }
      copy_async_commit();
      if (in_flight == 0) {
        pending0 = stage;
      } else if (in_flight == 1) {
        pending1 = stage;
      } else {
        pending2 = stage;
      }
      ++in_flight;
      while (in_flight >= g.chunks_in_flight) retire_oldest();  // keeps chunks_in_flight - 1 after this one's issue
      if (++stage == g.stages) stage = 0, phase ^= 1;
    }
  }
  while (in_flight > 0) retire_oldest();
}

// The bulk input path, for an NCHW input rounded to TF32 whose planes are whole 16-byte units
// (H_in W_in % 4 == 0) and a frame of at most 4096 positions a tile. The positions [f0, f0 + P) a tile stages are,
// where they are not padding, one contiguous run of each input plane (frame rows are input rows plus padding
// columns): tile_input_run finds it. One producer thread (the issuer) copies the runs of a half chunk (4 channels:
// one 16-byte unit a position), one bulk copy a channel, into a raw slot ([4 channels][raw_pitch], from the 16-byte
// unit that holds the run's first float), `raw_slots` half chunks ahead. The producer warpgroup then turns each
// landed slot into its half of the K-major stage the consumers read, a position at a time, kPassBatch positions a
// thread in flight: 4 loads of 4 bytes, 4 roundings (one F2FP each), one 16-byte store; a thread's positions are
// tid + 128 k, their raw offsets stepped by constants with a per-tile bit mask of the steps that wrap a row, padding
// positions zeroed from another. Against wgmma_produce's 4-byte copies, which land a warp's 32 positions of a channel
// 16 bytes apart (4-way bank conflicts), and its read-round-write sweep over every unit, the copies in flight are the
// raw slots', so the K-major ring keeps 3 stages (2 where 3 do not fit beside 2 slots).
// Measured (H100, L2-19): with this sweep (~20 instructions a position and half chunk, 8 in flight) the main loop
// takes 2.63 ms, against 2.08 without the sweep and 2.77 by the 4-byte copies: conv + moments 3.46 against 3.72. A
// sweep of quads (16-byte loads transposed in registers, stores rotated against bank conflicts, a division a quad:
// ~930 instructions a chunk a warp) holds the main loop at 3.49-3.67 ms against the copies' 2.94-3.00.
// The run of input positions (plane offsets) [lo, hi) a tile's frame positions read; empty where hi <= lo.
__device__ __forceinline__ void tile_input_run(const WgmmaTile& tile, const ConvShape& s, const WgmmaGeometry& g,
                                               int& lo, int& hi) {
  const int in_plane = static_cast<int>(s.in_plane());
  auto plane_offset = [&](int at, int column_bump) {  // of the first input position at or after frame position at
    const int r = at / g.pitch, ih = r - g.pad_top;
    const int iw = min(max(at - r * g.pitch - g.pad_left + column_bump, 0), s.in_w);
    return ih < 0 ? 0 : (ih >= s.in_h ? in_plane : ih * s.in_w + iw);
  };
  lo = plane_offset(tile.f0, 0);
  hi = plane_offset(tile.f0 + g.positions - 1, 1);  // one past the last position's
}

// kPart as wgmma_produce's (0, 1, 7), and for timing only: 8 the main loop with each stage's weights copied once;
// 9 the main loop without the transposing sweep (the raw slots still copied and waited for).
template <int kPart>
__device__ __forceinline__ void wgmma_produce_bulk(const float* __restrict__ x, const float* __restrict__ wprep,
                                                   const ConvShape& s, const WgmmaGeometry& g, float* smem,
                                                   uint32_t full, uint32_t empty, uint32_t raw_full, int64_t first,
                                                   int64_t step) {
  constexpr int kThreads = 128 * kWgProducers;
  constexpr int kIssuer = kThreads - 1;  // the thread that issues the bulk copies (in the warp with least to transpose)
  const int tid = threadIdx.x;
  const int taps = s.taps();
  const int64_t in_plane = s.in_plane();
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t weight_bytes = 2048u * taps;
  const int slot_floats = kRawChannels * g.raw_pitch;
  const int halves = 2 * g.chunks;  // raw items a tile: half chunks
  const int64_t items = first < g.work ? ((g.work - 1 - first) / step + 1) * halves : 0;
  // A thread's frame positions: tid + 128 k, k < mine. From one to the next: the frame row + row_step, the column
  // + col_step (one row more where it passes the pitch), the raw-slot offset + o_step (+ wrap_step more then).
  const int mine = max(0, min(32, (g.positions - tid + kThreads - 1) / kThreads));
  const int row_step = kThreads / g.pitch, col_step = kThreads - row_step * g.pitch;
  const int o_step = row_step * s.in_w + col_step, wrap_step = s.in_w - g.pitch;
  const uint32_t row_bytes = 4u * static_cast<uint32_t>(g.raw_pitch);  // a raw slot's channel rows apart
  // The issuer's cursor: the next item's tile, half chunk, raw slot, and its tile's run.
  int64_t next_item = 0, next_t = first;
  int next_h = 0, next_slot = 0, next_lo_unit = 0, next_n = 0;
  uint32_t next_bytes = 0;
  auto issue_next = [&]() {  // the runs of the next item into its raw slot
    if (next_h == 0) {  // a new tile: its sample and run, once
      const WgmmaTile tile(next_t, g);
      int lo, hi;
      tile_input_run(tile, s, g, lo, hi);
      next_n = tile.n;
      next_lo_unit = lo & ~3;
      next_bytes = hi > lo ? 4u * static_cast<uint32_t>((hi - next_lo_unit + 3) & ~3) : 0u;
    }
    const int channels = max(0, min(kRawChannels, s.in_channels - next_h * kRawChannels));
    const uint32_t bar = raw_full + 8 * next_slot;
    mbar_arrive_expect_bytes(bar, next_bytes * channels);
    if (next_bytes > 0) {
      const float* src = x + (int64_t(next_n) * s.in_channels + next_h * kRawChannels) * in_plane + next_lo_unit;
      const uint32_t dst = smem_base + 4u * static_cast<uint32_t>(g.raw_offset + next_slot * slot_floats);
      for (int ch = 0; ch < channels; ++ch) {
        bulk_copy_to_shared(dst + 4u * ch * g.raw_pitch, src + ch * in_plane, next_bytes, bar);
      }
    }
    ++next_item;
    if (++next_slot == g.raw_slots) next_slot = 0;
    if (++next_h == halves) next_h = 0, next_t += step;
  };
  if (tid == kIssuer) {
    while (next_item < min(int64_t(g.raw_slots), items)) issue_next();
  }
  int stage = 0, filled = 0, raw_slot = 0;
  uint32_t phase = 0, raw_phase = 0;
  for (int64_t t = first; t < g.work; t += step) {
    const WgmmaTile tile(t, g);
    int lo, hi;
    tile_input_run(tile, s, g, lo, hi);
    const int lo_unit = lo & ~3;
    // This thread's frame positions are tid + 128 k, k < `mine` (<= 32: P <= 4096 on this path). Each one's raw-slot
    // offset (input row x W_in + input column - the run's first unit) follows from the previous one's by o_step, or
    // by o_step + wrap_step where the frame column passes the pitch: bit k of `wraps`, tabulated once a tile with
    // `skip` (the padding among them, whose units are zeroed instead, and the bits from `mine` on), so that the sweep
    // steps without a division or a comparison.
    const int at_first = tile.f0 + tid;
    const int row_first = at_first / g.pitch, col_first = at_first - row_first * g.pitch;
    const int o_first = (row_first - g.pad_top) * s.in_w + col_first - g.pad_left - lo_unit;
    uint32_t padding = 0, wraps = 0;
    {
      int row = row_first, col = col_first;
      for (int k = 0; k < mine; ++k) {
        if (static_cast<unsigned>(row - g.pad_top) >= static_cast<unsigned>(s.in_h) ||
            static_cast<unsigned>(col - g.pad_left) >= static_cast<unsigned>(s.in_w)) {
          padding |= 1u << k;
        }
        col += col_step, row += row_step;
        if (col >= g.pitch) col -= g.pitch, ++row, wraps |= 2u << k;  // (bit 32 never read: k + 1 < mine <= 32)
      }
    }
    const uint32_t skip = padding | (mine < 32 ? ~0u << mine : 0u);
    const float4* wsrc = reinterpret_cast<const float4*>(wprep) + int64_t(tile.ctile) * g.chunks * taps * 128;
    for (int c = 0; c < g.chunks; ++c) {
      mbar_wait(empty + 8 * stage, phase ^ 1);  // a fresh barrier counts as released
      const uint32_t full_stage = full + 8 * stage;
      const uint32_t xs_addr = smem_base + static_cast<uint32_t>(stage * g.stage_floats * 4);
      const bool first_fill = filled < g.stages;
      ++filled;
      if (tid == kIssuer && (kPart != 8 || first_fill)) {
        mbar_expect_bytes(full_stage, weight_bytes);
        bulk_copy_to_shared(xs_addr + 32u * g.positions, wsrc + int64_t(c) * taps * 128, weight_bytes, full_stage);
      }
      float4* xs = reinterpret_cast<float4*>(smem + stage * g.stage_floats);
      for (uint32_t bits = kPart == 9 ? 0u : padding; bits != 0; bits &= bits - 1) {  // zeros: padding positions
        const int p = tid + (__ffs(bits) - 1) * kThreads;
        xs[p] = make_float4(0.f, 0.f, 0.f, 0.f);
        xs[g.positions + p] = make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll 1
      for (int half = 0; half < 2; ++half) {
        mbar_wait(raw_full + 8 * raw_slot, raw_phase);
        const float* raw = smem + g.raw_offset + raw_slot * slot_floats;
        const int channels = min(kRawChannels, s.in_channels - c * kWgChunk - half * kRawChannels);
        float4* unit = xs + half * g.positions;
        // The sweep, a position at a time, kPassBatch positions a thread in flight: 4 loads of 4 bytes (one a
        // channel row; a warp reads 32 consecutive floats of each, conflict-free), rounded to TF32 (one F2FP each),
        // one 16-byte store of the position's unit (a warp's 32 units are consecutive: conflict-free). Padding
        // positions are skipped (zeroed above). ~20 instructions a position and half chunk, against ~57 for a sweep
        // of quads (16-byte loads, a transpose in registers, a per-lane rotation of the stores against bank
        // conflicts, a division a quad).
        const uint32_t raw_addr = smem_base + 4u * static_cast<uint32_t>(raw - smem);
        auto stage_half = [&](auto all_channels) {
          constexpr bool kAllChannels = decltype(all_channels)::value;
          int o = o_first;
#pragma unroll 1
          for (int k = 0; k < mine; k += kPassBatch) {
            float v[kPassBatch][kRawChannels];
#pragma unroll
            for (int u = 0; u < kPassBatch; ++u) {
              if (u > 0 || k > 0) o += (wraps >> (k + u)) & 1u ? o_step + wrap_step : o_step;
              if (!((skip >> (k + u)) & 1u)) {
                const uint32_t at = raw_addr + 4u * static_cast<uint32_t>(o);
#pragma unroll
                for (int j = 0; j < kRawChannels; ++j) {
                  v[u][j] = kAllChannels || j < channels ? load_shared(at + j * row_bytes) : 0.f;
                }
              }
            }
#pragma unroll
            for (int u = 0; u < kPassBatch; ++u) {
              if (!((skip >> (k + u)) & 1u)) {
                unit[tid + (k + u) * kThreads] = make_float4(tf32_nearest(v[u][0]), tf32_nearest(v[u][1]),
                                                             tf32_nearest(v[u][2]), tf32_nearest(v[u][3]));
              }
            }
          }
        };
        if constexpr (kPart != 9) {  // timing only: 9 skips the sweep
          if (channels == kRawChannels) {
            stage_half(std::true_type{});
          } else {
            stage_half(std::false_type{});
          }
        }
        named_barrier(1, kThreads);  // every producer thread is done with the raw slot
        if (tid == kIssuer && next_item < items) issue_next();
        if (++raw_slot == g.raw_slots) raw_slot = 0, raw_phase ^= 1;
      }
      fence_async_shared();  // this thread's stores, visible to the tensor cores once the consumers acquire
      mbar_arrive(full_stage);
      if (++stage == g.stages) stage = 0, phase ^= 1;
    }
  }
}

}  // namespace convt
}  // namespace kgen
