// ---- groupnorm/resident/plan.cuh: planning and checks of the resident kernels (groupnorm/resident/resident.cuh) ----
namespace kgen {

namespace resident_detail {

inline int pow2_floor(int64_t v) {
  int p = 1;
  while (int64_t(p) * 2 <= v && p < (1 << 30)) p *= 2;
  return p;
}
inline int pow2_ceil(int64_t v) {
  int p = 1;
  while (int64_t(p) < v && p < (1 << 30)) p *= 2;
  return p;
}
inline int lowest_bit(int64_t v) { return v <= 0 ? 1 : static_cast<int>(std::min<int64_t>(v & -v, 1 << 30)); }
inline int rounds_for(int64_t items, int width, int block) {
  const int64_t per_round = width >= block ? 1 : block / width;
  return static_cast<int>((items + per_round - 1) / per_round);
}

inline constexpr bool is_sample_kind(ReduceKind r) { return r == ReduceKind::kChannel || r == ReduceKind::kSample; }

struct RegionDims {
  int64_t batch, channels, plane;
  int dims;
  int64_t size[3];
};

inline RegionDims region_dims(const at::Tensor& x) {
  RegionDims d{x.size(0), x.size(1), 1, static_cast<int>(x.dim()) - 2, {1, 1, 1}};
  for (int k = 0; k < d.dims; ++k) {
    d.size[3 - d.dims + k] = x.size(2 + k);
    d.plane *= x.size(2 + k);
  }
  return d;
}

// The plan for one direction (backward: the tile also holds dout for kNone, and per-channel sums), for
// blocks of `block` threads, values in packs of `width` (4, or 1), tiles as `storage` says, within `budget` bytes.
// feasible == false where one unit does not fit. The checks (region_resident_fits, _pays) plan float32 tiles, the
// largest: a 2-byte plan fits wherever they do.
template <ReduceKind R>
ResidentPlan make_plan(const RegionDims& dims, int64_t groups, const std::vector<int64_t>& window, int block,
                       int width, bool backward, int64_t budget, int values_per_thread = kValuesPerThread,
                       TileStorage storage = {}) {
  ResidentPlan p{};
  p.feasible = false;
  p.batch = dims.batch;
  p.channels = dims.channels;
  p.groups = groups;
  p.units = dims.batch * groups;
  if (groups <= 0 || dims.channels % groups != 0 || dims.channels >= (int64_t(1) << 30) ||
      groups >= (int64_t(1) << 30) || dims.plane >= (int64_t(1) << 30)) {
    return p;
  }
  const int64_t cpg = dims.channels / groups;
  const int64_t slice = cpg * dims.plane;
  const int64_t unit = is_sample_kind(R) ? slice * groups : slice;
  if (unit >= (int64_t(1) << 28)) return p;  // far beyond any shared memory
  const bool dout_tile = backward && R == ReduceKind::kNone;
  auto bytes = [&](int64_t m) {
    return backward ? backward_smem_bytes(m, slice, cpg, dout_tile, storage.elem)
                    : forward_smem_bytes(m, slice, 1, storage);
  };
  p.cpg = static_cast<int>(cpg);
  p.plane = static_cast<int>(dims.plane);
  p.slice = static_cast<int>(slice);
  // statistics: team of tpg threads per slice
  const int64_t packs = slice / width;
  if (packs > 8 * kWarpSize) {
    p.tpg = block;
  } else if (packs >= 2 * kWarpSize) {
    p.tpg = kWarpSize;
  } else {
    const int conflict_free = std::min(kWarpSize, lowest_bit(packs));  // packs / tpg odd: distinct banks
    p.tpg = conflict_free * 8 >= packs ? conflict_free
                                       : std::min(kWarpSize, pow2_floor(std::max<int64_t>(1, packs / 4)));
  }
  const int teams_g = p.tpg >= block ? 1 : block / p.tpg;
  int64_t m;
  if (is_sample_kind(R)) {
    m = groups;
  } else if (p.tpg >= block) {
    m = 1;
  } else {
    const int64_t target = int64_t(block) * values_per_thread;
    m = teams_g * std::max<int64_t>(1, target / (int64_t(teams_g) * slice));
  }
  m = std::max<int64_t>(1, std::min(m, std::max<int64_t>(1, p.units)));
  while (!is_sample_kind(R) && m > 1 && bytes(m) > budget) m = (m + 1) / 2;
  if (bytes(m) > budget) return p;
  p.tile_groups = static_cast<int>(m);
  p.tiles = (p.units + m - 1) / m;
  p.rounds_g = rounds_for(m, p.tpg, block);
  // per-channel passes: tpc threads per channel
  const int64_t tile_channels = m * cpg;
  if (dims.plane >= 2 * kWarpSize) {
    p.tpc = kWarpSize;
  } else {
    p.tpc = std::min(kWarpSize, lowest_bit(dims.plane));
    while (p.tpc < kWarpSize && p.tpc < dims.plane && tile_channels * p.tpc < block) p.tpc *= 2;
  }
  // The backward's passes where a warp a channel would leave three quarters of the block idle (instance norm's one
  // channel a slice; two): the whole block a channel, channel after channel. H200, GroupNorm then GELU, kgen's kernels
  // a forward + backward, us, a warp a channel -> the block: (8, 128, 64, 64) in 128 groups 183.2 -> 93.4; (16, 256,
  // 4096) in 256 groups 685.8 -> 323.1; (32, 128, 56, 56) in 64 groups 310.4 -> 194.4; (16, 256, 32, 32) in 128 groups
  // 133.7 -> 105.1; but in 64 groups (4 channels a tile) 79.5 -> 85.9, so a tile of 4 keeps its warps
  // (benchmarks/results/h200/cliffs/resident_backward_small/).
  if (backward && tile_channels * kWarpSize * 4 <= block && dims.plane >= block) p.tpc = block;
  p.rounds_c = rounds_for(tile_channels, p.tpc, block);
  // spatial sizes and windows, leading 1s
  for (int k = 0; k < 3; ++k) {
    p.size[k] = static_cast<int>(dims.size[k]);
    p.window[k] = 1;
    p.pooled[k] = p.size[k];
  }
  if (R == ReduceKind::kWindow) {
    for (int k = 0; k < dims.dims; ++k) {
      const int d = 3 - dims.dims + k;
      p.window[d] = static_cast<int>(window[k]);
      p.pooled[d] = static_cast<int>(dims.size[d] / window[k]);
    }
  }
  p.pooled_plane = p.pooled[0] * p.pooled[1] * p.pooled[2];
  p.window_elems = p.window[0] * p.window[1] * p.window[2];
  // forward reduction: tpo threads per output
  int64_t nout = 0, len = 1;
  switch (R) {
    case ReduceKind::kPlane: nout = tile_channels, len = dims.plane; break;
    case ReduceKind::kWindow: nout = tile_channels * p.pooled_plane, len = p.window_elems; break;
    case ReduceKind::kChannel: nout = dims.plane, len = dims.channels; break;
    case ReduceKind::kSample: nout = 1, len = dims.channels * dims.plane; break;
    default: break;
  }
  if (nout == 1) {
    p.tpo = block;
  } else {
    p.tpo = std::min(kWarpSize, pow2_floor(std::max<int64_t>(1, len / 4)));
    while (p.tpo < kWarpSize && p.tpo < len && nout * p.tpo < block) p.tpo *= 2;
  }
  p.rounds_o = nout == 0 ? 0 : rounds_for(nout, p.tpo, block);
  // backward group sums: tpq threads per slice over its channels
  p.tpq = (m == 1 && cpg > 8 * kWarpSize) ? block : std::min(kWarpSize, pow2_ceil(cpg));
  p.rounds_q = rounds_for(m, p.tpq, block);
  p.div_plane = FastDiv(dims.plane);
  p.div_channels = FastDiv(dims.channels);
  p.div_cpg = FastDiv(cpg);
  p.div_groups = FastDiv(groups);
  p.div_pooled_plane = FastDiv(std::max(1, p.pooled_plane));
  p.stages = 1;
  p.smem_bytes = bytes(m);
  if (!backward && forward_smem_bytes(m, slice, 2, storage) <= std::min<int64_t>(budget, kDoubleBufferLimit)) {
    p.stages = 2;
    p.smem_bytes = forward_smem_bytes(m, slice, 2, storage);
  }
  p.grid = p.tiles;
  p.feasible = true;
  return p;
}

inline int64_t smem_budget(const at::Tensor& x) { return max_block_smem(x.get_device()) - kReservedSmem; }

// The backward's slab mode (ResidentPlan::parts): Linear outputs whose per-sample parameter rows would be
// K times a large input (H100, L2-37: 2.1 GB written by the kernel and read back by column_sums, 1.4 ms of
// its 2.8). Takes the largest tile (16, 8, ... values per thread) that is a whole number of slabs of a
// sample and leaves a block (tile arrays + K x slab running sums) at most kSlabBlockBytes; infeasible (the
// per-sample rows stay) where none does.
constexpr int64_t kSlabPartialBytes = int64_t(256) << 20;  // per-sample rows at least this large take slabs
constexpr int64_t kSlabBlockBytes = 72 * 1024;              // 3 blocks per H100 SM

template <ReduceKind R>
ResidentPlan slab_plan(const RegionDims& dims, int64_t groups, const std::vector<int64_t>& window, int block,
                       int width, int K, int64_t budget, int elem = 4) {
  ResidentPlan none{};
  none.feasible = false;
  if (dims.plane != 1 || width != 4 || dims.batch * K * dims.channels * 4 < kSlabPartialBytes) return none;
  for (int vpt = kValuesPerThread; vpt >= 1; vpt /= 2) {
    ResidentPlan p = make_plan<R>(dims, groups, window, block, width, true, budget, vpt, TileStorage{elem, false});
    if (!p.feasible || groups % p.tile_groups != 0) continue;
    const int64_t slab = int64_t(p.tile_groups) * p.cpg;
    const int64_t bytes =
        align16(backward_smem_bytes(p.tile_groups, p.slice, p.cpg, R == ReduceKind::kNone, elem)) + 4 * K * slab;
    if (bytes > std::min(budget, kSlabBlockBytes)) continue;
    p.parts = static_cast<int>(groups / p.tile_groups);
    p.smem_bytes = bytes;
    return p;
  }
  return none;
}

// Blocks of `kernel` (kBlock threads, `smem` bytes of dynamic shared memory) that fit on one SM of the current
// device, at least 1; asked of the driver once per (kernel, device, smem), since the forward plans on it at
// every call.
inline int blocks_per_sm(const void* kernel, int block, int64_t smem) {
  allow_smem(kernel, smem);
  static std::mutex lock;
  static std::map<std::tuple<const void*, int, int64_t>, int> known;
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> guard(lock);
  const auto key = std::make_tuple(kernel, device, smem);
  const auto found = known.find(key);
  if (found != known.end()) return found->second;
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, static_cast<size_t>(smem)));
  return known[key] = std::max(1, per_sm);
}

template <ReduceKind R>
inline std::vector<int64_t> region_out_shape(const at::Tensor& x, const std::vector<int64_t>& window) {
  std::vector<int64_t> shape{x.size(0)};
  switch (R) {
    case ReduceKind::kNone:
      return x.sizes().vec();
    case ReduceKind::kChannel:
      for (int64_t d = 2; d < x.dim(); ++d) shape.push_back(x.size(d));
      return shape;
    case ReduceKind::kPlane:
      return {x.size(0), x.size(1)};
    case ReduceKind::kSample:
      return shape;
    case ReduceKind::kWindow:
      shape.push_back(x.size(1));
      for (int64_t d = 2; d < x.dim(); ++d) shape.push_back(x.size(d) / window[d - 2]);
      return shape;
  }
  return shape;
}

inline void check_region_input(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, int64_t groups,
                               bool half_ok = false) {
  if (half_ok) {
    check_storage(x, "input");
  } else {
    check_float_cuda(x, "input");
  }
  TORCH_CHECK(x.dim() >= 2 && x.dim() <= 5, "kgen: the region input must have shape (N, C, *spatial) with 0 to 3 ",
              "spatial dims, got ", str(x.sizes()));
  const int64_t channels = x.size(1);
  TORCH_CHECK(groups > 0 && channels % groups == 0, "kgen: ", str(channels), " channels are not divisible into ",
              str(groups), " groups");
  TORCH_CHECK(gamma.defined() == beta.defined(),
              "kgen: GroupNorm weight and bias must both be given (affine) or both be absent");
  for (const auto* t : {&gamma, &beta}) {
    if (!t->defined()) continue;
    check_float_cuda(*t, "GroupNorm weight/bias");
    TORCH_CHECK(t->dim() == 1 && t->size(0) == channels, "kgen: GroupNorm weight/bias must have shape (",
                str(channels), "), got ", str(t->sizes()));
    TORCH_CHECK(t->device() == x.device(), "kgen: GroupNorm weight/bias are on ", t->device().str(),
                " but the input is on ", x.device().str());
  }
}

template <ReduceKind R>
inline void check_window(const at::Tensor& x, const std::vector<int64_t>& window) {
  if (R != ReduceKind::kWindow) return;
  TORCH_CHECK(int64_t(window.size()) == x.dim() - 2, "kgen: the pooling window needs one size per spatial dim (",
              str(x.dim() - 2), "), got ", str(int64_t(window.size())));
  for (int64_t k : window) TORCH_CHECK(k >= 1, "kgen: pooling window sizes must be positive, got ", str(k));
}

template <class Pro, class Epi>
inline RegionParams region_params(const std::vector<at::Tensor>& prologue_params,
                                  const std::vector<at::Tensor>& epilogue_params, const at::Tensor& x) {
  TORCH_CHECK(int64_t(prologue_params.size()) == Pro::kParams, "kgen: the prologue takes ", str(Pro::kParams),
              " parameters, got ", str(int64_t(prologue_params.size())));
  TORCH_CHECK(int64_t(epilogue_params.size()) == Epi::kParams, "kgen: the epilogue takes ", str(Epi::kParams),
              " parameters, got ", str(int64_t(epilogue_params.size())));
  int64_t plane = 1;
  for (int64_t d = 2; d < x.dim(); ++d) plane *= x.size(d);
  return RegionParams{param_table(prologue_params, x.size(1), x.device(), "prologue"),
                      param_table(epilogue_params, x.size(1), x.device(), "epilogue"), call_statistics_rounding(),
                      faithful_kind(plane)};
}

inline const float* optional_data(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

}  // namespace resident_detail

// True where the resident path takes x (N, C, *spatial) with `groups` groups on x's device: one unit (a
// slice, or a sample for kChannel / kSample) fits in a block's shared memory, forward and backward.
template <ReduceKind R>
bool region_resident_fits(const at::Tensor& x, int64_t groups) {
  using namespace resident_detail;
  if (!x.is_cuda() || x.dim() < 2 || x.dim() > 5 || groups <= 0 || x.size(1) % groups != 0) return false;
  if (x.numel() == 0) return true;
  const RegionDims dims = region_dims(x);
  const int64_t budget = smem_budget(x);
  std::vector<int64_t> window(x.dim() - 2, 1);
  return make_plan<R>(dims, groups, window, 256, 1, false, budget).feasible &&
         make_plan<R>(dims, groups, window, 256, 1, true, budget).feasible;
}

// True where the resident path is also the faster one for the direction: it fits, and it keeps copies in
// flight while it works. A block copies its tile, then works on it from shared memory; the SM's DRAM traffic
// continues only through the copies of its other blocks or the block's own second stage. With double-buffered
// forward tiles (units up to 12 k values) or kMinResidentBlocks blocks per SM that holds; a unit that leaves
// fewer does not (H100, L2-27: 43.7 k-value slices, 1 block per SM, 0.48 TB/s), and the two-pass path (each
// sweep at 2.5-2.8 TB/s there, reading x twice) is faster. The backward's tile is single-buffered and, without
// a reduction after the region, holds dout beside x: twice the forward's bytes, so a slice of 9 k to 19 k
// values fits 3 forward blocks on an SM and only 2 backward ones (H200, one 12.8 k-value channel a group:
// the resident backward at 0.53 TB/s; benchmarks/results/h200/cliffs/). A backward tile with a channel or more for
// every warp of the block is kept at kMinResidentBlocksFullTile: its per-channel passes keep every warp at work while
// the SM's other block copies (H200, squeeze_excite_gn_large's 16 channels of 28 x 28 a slice, 100 KB a tile: the
// backward kernels 69 us, against 101 for the pipelined kernel and 166 for the sweeps,
// benchmarks/results/h200/cliffs/pipeline_teams/); a tile of 4 channels is not (cl_2d_12544 in the
// first: 59.0 against 57.2).
constexpr int kMinResidentBlocks = 3;
constexpr int kMinResidentBlocksFullTile = 2;
// The two-pass backward sweeps launch a block per (sample, channel) plane: on a plane of fewer values than a block's
// threads most of them idle, and on 1-value planes the launch is the cost (H200, L2-75: 8.4 M blocks a sweep, 44 ms,
// where its resident backward fits 2 tiles an SM; the H100 timed that backward at 0.065 ms). There the resident
// backward is kept wherever it fits, at whatever occupancy.
constexpr int64_t kSweepMinPlane = 256;

template <ReduceKind R>
bool region_resident_pays(const at::Tensor& x, int64_t groups, bool backward = false) {
  using namespace resident_detail;
  if (!region_resident_fits<R>(x, groups)) return false;
  if (x.numel() == 0) return true;
  if (backward && region_dims(x).plane < kSweepMinPlane) return true;
  std::vector<int64_t> window(x.dim() - 2, 1);
  constexpr int kBlock = 256;
  const ResidentPlan plan = make_plan<R>(region_dims(x), groups, window, kBlock, 1, backward, smem_budget(x));
  const int64_t per_sm = sm_smem(x.get_device()) / (plan.smem_bytes + kReservedSmem);
  const bool full_tile = backward && plan.tpc == kWarpSize && int64_t(plan.tile_groups) * plan.cpg * kWarpSize >= kBlock;
  return plan.stages == 2 || per_sm >= kMinResidentBlocks || (full_tile && per_sm >= kMinResidentBlocksFullTile);
}

}  // namespace kgen
