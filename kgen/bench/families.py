"""The kernel families of kgen's emitted files, each at a small shape where its kernels are the ones launched:
what the reliability table (kgen.bench.reliability, section a2) and benchmarks/sanitize.sh (section d2) run per
family.

    python3 benchmarks/reliability_families.py emit [-j N]   emit every source into .build/families/
                                                                          and print the files (for prebuild.py)
    python3 benchmarks/reliability_families.py targets       print the sanitize.sh targets (family:NAME)
    python3 benchmarks/reliability_families.py table          print the family list (markdown)
    python3 benchmarks/reliability_families.py files|probes [NAME...]   the emitted files; the probe
                                                                          runs (TARGET PROBE a line) of the families

A SOURCE is one emitted file: `kgen emit --ref REFERENCE [options]` or a preset spec (`kgen emit SPEC params`).
A FAMILY is a source, the init arguments and input shapes of one small problem, and the CUDA kernels (qualified
names, as torch.profiler and compute-sanitizer print them) that must be launched by one forward + backward (and a
forward under no_grad) at that shape. Many kernels are chosen at run time by the host code from the shape and the
GPU (the host.cuh / plan.cuh files); `why` says which condition each shape meets, on an H100 (227 KB of shared
memory a block, 228 KB an SM, 50 MB of L2, sm_90). Several families share a source at different shapes, so that
one build serves them. This module imports neither torch nor the rest of kgen at import time
(kgen.bench.sanitizer_logs reads it).
"""
from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kgen.bench import ROOT

EMITTED = ROOT / ".build" / "families"
TARGET_PREFIX = "family:"


@dataclass(frozen=True)
class Source:
    key: str                    # the file's stem under .build/families/
    reference: str              # KernelBench reference (relative to the repository) the file is compared with
    spec: str | None = None     # a preset spec (`kgen emit SPEC`), else `kgen emit --ref reference`
    params: dict = field(default_factory=dict)   # the spec's parameters, or --ref's options (conv)

    @property
    def path(self) -> Path:
        return EMITTED / f"{self.key}.py"

    @property
    def command(self) -> str:
        if self.spec is not None:
            return " ".join([f"kgen emit {self.spec}"] + [f"--{k.replace('_', '-')} {v}" for k, v in self.params.items()])
        return " ".join([f"kgen emit --ref {self.reference}"] + [f"--{k} {v}" for k, v in self.params.items()])


@dataclass(frozen=True)
class Family:
    name: str
    title: str                  # the family, as the table names it
    source: str                 # Source.key
    init: tuple                 # ModelNew(*init) and Model(*init)
    inputs: tuple               # one shape per tensor of get_inputs()
    kernels: tuple              # qualified kernel names that must all be launched (forward, backward, no_grad)
    templates: tuple            # the .cuh files whose kernels these are (kgen/templates/cuda/)
    why: str                    # the host-side condition this shape meets
    judge: str = "default"      # "default" (1e-4 or twice the reference's float64 error), "fast" (--conv fast:
                                # 1e-2, the reference fed channels-last input), "tf32" (--conv fused, see kgen.bench.reliability)
    probes: tuple = ()          # "reference" (the reference alone: library kernels' own reports), "library-writes"
                                # (initcheck cannot see cuDNN's writes), "bulk-store" (nor bulk
                                # stores'): the evidence kgen.bench.reliability needs to explain such reports
    counterpart: str | None = None   # the family of the same file without bulk stores (bulk-store explanation)

    @property
    def target(self) -> str:
        return TARGET_PREFIX + self.name


REF = "kgen/specs/references/"
OWN = "tests/ref/references/"

SOURCES = {s.key: s for s in (
    # a region without a reduction: conv -> scale -> sigmoid -> GroupNorm -> * gamma2 + z -> relu
    Source("region_none", OWN + "conv2d_scale_sigmoid_gn_residual.py"),
    # a region reducing each plane: conv -> F.group_norm (3 groups) -> swish -> mean over H, W
    Source("region_plane", OWN + "functional_gn_swish_mean.py"),
    # a region reducing over channels (log-sum-exp), L2-92 through the planner
    Source("region_channel", REF + "level2_92_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp.py"),
    # a region reducing windows (max pooling after the norm), L2-85
    Source("region_window", REF + "level2_85_conv2d_groupnorm_scale_maxpool_clamp.py"),
    # Linear outputs with short slices, L2-37
    Source("rows", REF + "level2_37_matmul_swish_sum_groupnorm.py"),
    # Linear outputs with short slices, L2-37, every region PyTorch's GroupNorm to the bit (--faithful all)
    Source("rows_faithful", REF + "level2_37_matmul_swish_sum_groupnorm.py", params={"faithful": "all"}),
    # Linear outputs, min over channels, then a broadcast bias add (alone: PyTorch's own add), L2-75
    Source("rows_min", REF + "level2_75_gemm_groupnorm_min_biasadd.py"),
    # element-wise kernels of several tensors (the model's input, the region's output, a broadcast gate)
    Source("pointwise", OWN + "conv2d_gn_input_residual_gate.py"),
    # the batch norm training step, L2-11
    Source("batchnorm", REF + "level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm.py"),
    # the channels-last region after a channels-last cuDNN conv, L2-19 --conv fast
    Source("nhwc", REF + "level2_19_convtranspose2d_gelu_groupnorm.py", params={"conv": "fast"}),
    # preset specs
    Source("convt_fused", REF + "level2_19_convtranspose2d_gelu_groupnorm.py", spec="convt-gelu-groupnorm",
           params={"conv": "fused"}),
    Source("groupnorm", REF + "level1_35_groupnorm.py", spec="groupnorm"),
)}

# Thresholds the `why`s quote (H100): the resident path pays for units (a (sample, group) slice; a whole sample for
# channel and sample reductions) up to ~19.2 k values (groupnorm/resident/plan.cuh: region_resident_pays, 3 blocks
# an SM or a double-buffered tile); the cluster forward takes planes of >= 512 values and slices up to 147 k
# (groupnorm/cluster/cluster.cuh: cluster_forward_plan, 8 blocks of 72 KB); the cluster backward plane and sample reductions
# with planes of >= 512 values (cluster_plan); the pipelined backward kNone regions of 16-byte packs
# (groupnorm/twopass/backward_host.cuh: pipeline_takes).
FAMILIES = (
    Family("resident", "resident region, forward and backward", "region_none",
           init=(5, 24, 3, 6), inputs=((2, 5, 37, 29),),
           kernels=("kgen::region_resident_forward_kernel", "kgen::region_resident_backward_kernel"),
           templates=("groupnorm/resident/forward.cuh", "groupnorm/resident/backward.cuh"),
           why="4 x 1073-value slices (4.3 k values): a tile fits and pays (region_resident_pays)"),
    Family("cluster-forward", "cluster forward and pipelined backward (no reduction)", "region_none",
           init=(4, 8, 3, 4), inputs=((2, 4, 128, 128),),
           kernels=("kgen::region_cluster::cluster_forward_kernel", "kgen::region_twopass::backward_pipeline_kernel"),
           templates=("groupnorm/cluster/cluster.cuh", "groupnorm/twopass/backward_pipeline.cuh"),
           why="2 x 16384-value slices (32.8 k values): past the resident path, a plane of >= 512 values within a "
               "cluster of 2 x 64 KB (cluster_forward_plan); backward kNone on 16-byte packs, the L2 lag met "
               "(pipeline_backward)"),
    Family("twopass-plane", "two-pass sweeps (plane reduction), forward and backward", "region_plane",
           init=(3, 192, 3), inputs=((2, 3, 20, 20),),
           kernels=("kgen::region_twopass::stats_partial_kernel", "kgen::region_twopass::stats_finalize_kernel",
                    "kgen::region_twopass::plane_forward_kernel", "kgen::region_twopass::reduce_finish_kernel",
                    "kgen::region_twopass::backward_sweep_kernel"),
           templates=("groupnorm/twopass/forward.cuh", "groupnorm/twopass/backward.cuh"),
           why="64 x 400-value slices (25.6 k values): past the resident path; planes of 400 values, below the "
               "cluster backward's 512, so the backward sweeps run"),
    Family("cluster-backward", "cluster backward (plane reduction)", "region_plane",
           init=(3, 12, 3), inputs=((2, 3, 80, 80),),
           kernels=("kgen::region_twopass::plane_forward_kernel", "kgen::region_cluster::cluster_backward_kernel"),
           templates=("groupnorm/twopass/forward.cuh", "groupnorm/cluster/cluster.cuh"),
           why="4 x 6400-value slices (25.6 k values): past the resident path; planes of >= 512 values, a slice "
               "on a cluster of 2 x 50 KB (cluster_plan)"),
    Family("twopass-channel", "two-pass sweeps (channel log-sum-exp), forward and backward", "region_channel",
           init=(4, 16, 3, 4), inputs=((2, 4, 50, 50),),
           kernels=("kgen::region_twopass::stats_partial_kernel", "kgen::region_twopass::channel_forward_kernel",
                    "kgen::region_twopass::backward_sweep_kernel"),
           templates=("groupnorm/twopass/forward.cuh", "groupnorm/twopass/backward.cuh"),
           why="a channel reduction's unit is a whole sample, 16 x 2304 values (36.9 k): past the resident path; "
               "neither the cluster nor the pipelined backward takes a channel reduction"),
    Family("window", "window backward (max pooling after the norm)", "region_window",
           init=(3, 8, 3, 2, (8, 1, 1), 4, 0.0, 1.0), inputs=((2, 3, 82, 82),),
           kernels=("kgen::region_twopass::window_forward_kernel", "kgen::region_twopass::window_extreme_sums_kernel",
                    "kgen::region_twopass::window_sweep_kernel"),
           templates=("groupnorm/twopass/forward.cuh", "groupnorm/twopass/window_backward.cuh"),
           why="4 x 6400-value slices (25.6 k values): past the resident path; a window max whose epilogue gives "
               "exact zeros (kZeroGradExact): the first pass reads the saved extremes (window_sums_sparse)"),
    Family("rows", "rows forward and backward (Linear outputs, short slices)", "rows",
           init=(64, 256, 8, (256,)), inputs=((64, 64),),
           kernels=("kgen::region_rows_forward_kernel", "kgen::region_rows_backward_kernel"),
           templates=("groupnorm/rows/forward.cuh", "groupnorm/rows/backward.cuh"),
           why="plane 1, 32-value slices of 8 packs: rows_lanes 4 (forward), a pack a lane for 8 lanes (backward)"),
    Family("faithful-rows", "native_group_norm's statistics and the flat apply (one value a plane)", "rows_faithful",
           init=(64, 256, 8, (256,)), inputs=((64, 64),),
           kernels=("kgen::torch_moments_finish_kernel", "kgen::region_twopass::flat_forward_kernel"),
           templates=("groupnorm/statistics_torch.cuh", "groupnorm/twopass/forward.cuh"),
           why="a faithful region (--faithful all) over planes of one value: PyTorch's chains and trees, then the apply "
               "a thread a plane (planes < kFlatPlaneValues)"),
    Family("rows-reduce", "rows forward with a channel min, rows backward",
           "rows_min", init=(64, 256, 16, (1, 256, 1, 1)), inputs=((32, 64),),
           kernels=("kgen::region_rows_reduce_kernel", "kgen::region_rows_backward_kernel"),
           templates=("groupnorm/rows/forward.cuh", "groupnorm/rows/backward.cuh"),
           why="plane 1, 16-value slices: 16 groups x 2 lanes fill a warp (rows_reduce_applies); the bias add after "
               "it is a lone op, PyTorch's own"),
    Family("pointwise", "element-wise kernels of several tensors", "pointwise",
           init=(32, 8), inputs=((2, 32, 24, 24),),
           kernels=("kgen::pointwise_forward_kernel", "kgen::pointwise_backward_kernel",
                    "kgen::pointwise_backward_flat_kernel", "kgen::region_resident_forward_kernel"),
           templates=("pointwise/pointwise.cuh",),
           why="two element-wise kernels: the gate (a parameter: per-plane backward) and g * s + x over three "
               "tensors (no parameter: the flat backward); the channel-mean subtraction, a lone op, is PyTorch's"),
    Family("batchnorm", "batch norm training step (statistics, apply with pooling, backward)", "batchnorm",
           init=(8, 16, 5, 1, 1, 8, 4), inputs=((4, 8, 16, 16),), probes=("reference",),
           kernels=("kgen::bn_moments_kernel", "kgen::bn_finalize_kernel", "kgen::bn_apply_kernel",
                    "kgen::bn_grad_sums_kernel", "kgen::bn_grad_totals_kernel", "kgen::bn_grad_apply_kernel"),
           templates=("batchnorm/train.cuh", "batchnorm/backward.cuh"),
           why="training mode (batch statistics), a 2 x 2 max pooling on 18 x 18 planes"),
    Family("nhwc", "channels-last region (--conv fast) and layout copies", "nhwc",
           init=(16, 32, 3, 1, 8, 8), inputs=((2, 16, 16, 16),), judge="fast", probes=("library-writes",),
           kernels=("kgen::batched_transpose_kernel", "kgen::region_nhwc::stats_partial_kernel",
                    "kgen::region_nhwc::apply_kernel", "kgen::region_nhwc::backward_kernel"),
           templates=("groupnorm/nhwc/nhwc.cuh", "core/layout.cuh"),
           why="cuDNN's channels-last output (16 input channels: the tiled transpose, not the narrow copy)"),
    Family("wgmma", "wgmma ConvTranspose2d (--conv fused): conv + moments, input and weight gradients, the "
           "one-launch inference forward", "convt_fused", init=(64, 64, 3, 1, 8, 8), inputs=((2, 64, 12, 16),),
           judge="tf32",
           kernels=("kgen::convt::convt_wgmma_kernel", "kgen::convt::convt_wgmma_weights_kernel",
                    "kgen::convt::convt_moments_finalize_kernel", "kgen::convt::convt_wgrad_kernel",
                    "kgen::convt::convt_wgrad_reduce_kernel",
                    "kgen::region_convt::backward_apply_channels_last_kernel",
                    "kgen::convt::convt_wgmma_infer_kernel"),
           templates=("conv/convt_common.cuh", "conv/convt_wgmma.cuh", "conv/convt_wgmma_produce.cuh",
                      "conv/convt_wgmma_consume.cuh", "conv/convt_wgmma_host.cuh", "conv/convt_wgrad.cuh",
                      "groupnorm/convt/backward_channels_last.cuh", "conv/convt_wgmma_infer.cuh"),
           why="stride 1, no output padding, TF32 allowed (PyTorch's default): kgen's conv; a 3 x 3 kernel, rows of "
               "16 and 64 output channels (multiples of 4): kgen's weight gradient too; under no_grad, 64 input "
               "channels x 9 taps make the normalise's share of the one launch < 0.3 (default_infer_normalisers)"),
    Family("onepass", "one-pass region forward (bulk copies, co-resident teams), GroupNorm alone", "groupnorm",
           init=(64, 8), inputs=((2, 64, 64, 64),), probes=("bulk-store",), counterpart="groupnorm-declined",
           kernels=("kgen::groupnorm_onepass_kernel",),
           templates=("groupnorm/onepass/onepass.cuh",),
           why="2 x 32768-value slices of whole 16-byte packs on sm_90: past the resident path, the one-pass planner "
               "takes them (plan_onepass)"),
    Family("groupnorm-declined", "the one-pass file where its planner declines: the cluster forward", "groupnorm",
           init=(64, 8), inputs=((2, 64, 63, 63),),
           kernels=("kgen::region_cluster::cluster_forward_kernel",),
           templates=("groupnorm/cluster/cluster.cuh",),
           why="planes of 3969 values (not whole 16-byte packs): the one-pass planner declines; 31.8 k-value slices "
               "on a cluster (cluster_forward_plan)"),
)

BY_NAME = {f.name: f for f in FAMILIES}


def family(name: str) -> Family:
    if name.startswith(TARGET_PREFIX):
        name = name[len(TARGET_PREFIX):]
    if name not in BY_NAME:
        raise KeyError(f"no kernel family {name!r}; known: {', '.join(BY_NAME)}")
    return BY_NAME[name]


def source_of(f: Family) -> Source:
    return SOURCES[f.source]


def is_target(text: str) -> bool:
    return text.startswith(TARGET_PREFIX)


def target_file(text: str) -> Path:
    """The emitted file of a sanitize.sh target `family:NAME`."""
    return source_of(family(text)).path


def log_stem(text: str) -> str:
    """The name sanitize.sh gives the logs of a target: family-NAME, or the file's stem."""
    return "family-" + family(text).name if is_target(text) else Path(text).stem


def kernel_launched(qualified: str, names) -> bool:
    """Whether a kernel named `qualified` (e.g. kgen::region_nhwc::apply_kernel) is among the profiler's kernel
    names (demangled: `void kgen::region_nhwc::apply_kernel<...>(...)`): the name, then its template arguments or
    parameters, so that kgen::normalize_kernel does not match kgen::nhwc_normalize_kernel."""
    import re

    pattern = re.compile(r"(?<![\w:])" + re.escape(qualified) + r"\s*[<(]")
    return any(pattern.search(name) for name in names)


def render_source(source: Source) -> str:
    """The emitted text of a source (kgen's own emit, as the command line runs it)."""
    if source.spec is not None:
        from kgen.emit import emit

        return emit(source.spec, dict(source.params))[0]
    import inspect

    from kgen.ref.emit import emit_reference

    # the header names the reference relative to the file's folder where emit_reference takes the file (`output`)
    where = {"output": source.path} if "output" in inspect.signature(emit_reference).parameters else {}
    return emit_reference(str(ROOT / source.reference), display=source.reference, **source.params, **where)[0]


def emit_source(key: str) -> Path:
    source = SOURCES[key]
    path = source.path
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")   # atomic: concurrent writers and readers
    temp.write_text(render_source(source))
    os.replace(temp, path)
    return path


def emit_all(jobs: int = 8, keys=None) -> list[Path]:
    keys = list(keys or SOURCES)
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(keys)))) as pool:
        return list(pool.map(emit_source, keys))


def markdown_table() -> list[str]:
    lines = ["| family | emitted by | init | input | kernels that must run | why at this shape |",
             "|---|---|---|---|---|---|"]
    for f in FAMILIES:
        s = source_of(f)
        lines.append(f"| {f.name}: {f.title} | `{s.command}` | {list(f.init)} | "
                     f"{', '.join(str(list(i)) for i in f.inputs)} | {', '.join(k.split('::')[-1] for k in f.kernels)} | "
                     f"{f.why} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["emit", "targets", "table", "files", "probes"])
    parser.add_argument("names", nargs="*", help="families (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=8)
    args = parser.parse_intermixed_args()
    chosen = [family(n) for n in args.names] or list(FAMILIES)
    if args.command == "emit":
        keys = list(dict.fromkeys(f.source for f in chosen))
        for path in emit_all(args.jobs, keys):
            print(path.relative_to(ROOT))
    elif args.command == "files":
        for key in dict.fromkeys(f.source for f in chosen):
            print(SOURCES[key].path.relative_to(ROOT))
    elif args.command == "targets":
        print(" ".join(f.target for f in chosen))
    elif args.command == "probes":   # one line per probe run: TARGET PROBE
        for f in chosen:
            for probe in f.probes:
                print(f.target, probe)
    else:
        print("\n".join(markdown_table()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
