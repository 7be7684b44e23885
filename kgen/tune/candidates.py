"""The variants `kgen tune` tries for a reference: one `Choices` per combination of the emit options that change the
file for this plan, pruned to those that do (a conv mode that moves no convolution, a one-pass forward no region
takes, are the default plan again and are not tried; a region faithful at the TF32 settings of the tune keeps
native_group_norm's statistics and never runs the one-pass forward; the two-pass kernels are not forced on planes
smaller than a warp, a cliff: two_pass_cliff).

A `Choices` is what the emitted file's header records as `kgen-params` (less the faithful mode, which decides
correctness and is never tuned): `kgen emit --ref REF --choices '<that JSON>'` writes the same bytes again. Besides
the kernels' options, the steps' autograd: the default's kernels with each region and element-wise step a Python
autograd Function (`--autograd python`) beside the default's C++ nodes, where a step takes one: the same kernels, and
host time a call, which decides small models.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

from kgen.ref.emit import AUTOGRAD_MODES, DEFAULT_AUTOGRAD, REGION_KERNELS, check_block_size, mode_plans, onepass_applies
from kgen.ref.ir import PointwiseStep, RegionStep
from kgen.ref.plan_layout import CONV_MODES
from kgen.ref.tf32 import faithful_now
from kgen.ref.trace import RefError
from kgen.specs.base import FORWARDS

# The two-pass kernels give each (plane, chunk) a team of a warp at least (groupnorm/twopass/twopass.cuh): on planes
# of fewer values than that most lanes idle, and a Linear's output (one value a plane) runs 100x slower than the
# rows kernels the planner gives it (H200, L2-37 at bf16, 134 M planes: 108 ms forward against 1.0; 241 against 2.5
# forward+backward; benchmarks/results/h200/tune/tune_L2-37_bf16.log). Forcing them there is not a candidate.
TWO_PASS_MIN_PLANE = 32

# The block sizes tried unless asked otherwise: the range the family's kernels were written for (a sweep's warps
# per block, the resident tiles' rows); 32, 64 and 1024 launch too few or too many threads per block for the
# reductions' trees to pay, and take `--block-sizes` to try.
DEFAULT_BLOCK_SIZES = (128, 256, 512)
DEFAULT = {"block_size": 256, "conv": "exact", "forward": "two-pass", "region_kernels": "auto",
           "autograd": DEFAULT_AUTOGRAD}
KEYS = tuple(DEFAULT)


@dataclass(frozen=True)
class Choices:
    block_size: int = 256
    conv: str = "exact"
    forward: str = "two-pass"
    region_kernels: str = "auto"
    autograd: str = DEFAULT_AUTOGRAD

    def record(self) -> str:
        """The JSON `kgen emit --choices` takes (the options that differ from the defaults, as the header's
        kgen-params has them, block_size always)."""
        given = {k: v for k, v in self.options().items() if k == "block_size" or v != DEFAULT[k]}
        return json.dumps(given, sort_keys=True)

    def options(self) -> dict:
        return {"block_size": self.block_size, "conv": self.conv, "forward": self.forward,
                "region_kernels": self.region_kernels, "autograd": self.autograd}

    def label(self) -> str:
        """Short, for tables and progress lines: `block 256, conv exact, two-pass` (`, region kernels resident` where
        they are not kgen's rules, `, autograd python` for Python Functions)."""
        kernels = "" if self.region_kernels == "auto" else f", region kernels {self.region_kernels}"
        autograd = "" if self.autograd == DEFAULT_AUTOGRAD else f", autograd {self.autograd}"
        return f"block {self.block_size}, conv {self.conv}, {self.forward}{kernels}{autograd}"

    def is_default(self) -> bool:
        return self.options() == DEFAULT


def parse_choices(text: str) -> Choices:
    """A record (a JSON object of block_size, conv, forward, region_kernels, autograd; what a header's kgen-params
    holds, whose faithful key is accepted and ignored here) as Choices; a clear error for anything else."""
    try:
        given = json.loads(text)
    except json.JSONDecodeError as error:
        raise RefError(f"--choices takes a JSON object such as '{{\"block_size\": 512, \"conv\": \"fast\"}}', "
                       f"not {text!r} ({error.msg})") from None
    if not isinstance(given, dict):
        raise RefError(f"--choices takes a JSON object, not {text!r}")
    given = {k: v for k, v in given.items() if k != "faithful"}
    unknown = sorted(set(given) - set(KEYS))
    if unknown:
        raise RefError(f"--choices takes {', '.join(KEYS)}, not {', '.join(unknown)}")
    choices = Choices(**{**DEFAULT, **given})
    if not isinstance(choices.block_size, int) or isinstance(choices.block_size, bool):
        raise RefError(f"--choices: block_size must be an integer, got {choices.block_size!r}")
    check_block_size(choices.block_size)
    if choices.conv not in CONV_MODES:
        raise RefError(f"--choices: conv must be one of {', '.join(CONV_MODES)}, got {choices.conv!r}")
    if choices.forward not in FORWARDS:
        raise RefError(f"--choices: forward must be one of {', '.join(FORWARDS)}, got {choices.forward!r}")
    if choices.region_kernels not in REGION_KERNELS:
        raise RefError(f"--choices: region_kernels must be one of {', '.join(REGION_KERNELS)}, got "
                       f"{choices.region_kernels!r}")
    if choices.autograd not in AUTOGRAD_MODES:
        raise RefError(f"--choices: autograd must be one of {', '.join(AUTOGRAD_MODES)}, got {choices.autograd!r}")
    return choices


def candidates(ref, block_sizes=DEFAULT_BLOCK_SIZES, takes=KEYS, default: Choices = Choices()) -> list[Choices]:
    """Every combination worth a build for the traced reference `ref`, `default` first: each block size, with each
    conv mode whose plan differs from the exact one, and with the one-pass forward where a region of that plan takes
    it; then, at the default block size, each of those with the region kernels forced (resident, two-pass) where a
    region's kernels are kgen's choice (region_kernels_matter); then the default with the other autograd (each step a
    Python Function, not a C++ node) where a step takes a node (node_takes_a_step); an option not in `takes` (a
    preset's) stays the default's."""
    for size in block_sizes:
        check_block_size(size)
    sizes = block_sizes if "block_size" in takes else (default.block_size,)
    convs = [conv for conv in CONV_MODES if conv == "exact" or _conv_moves_something(ref, conv)] \
        if "conv" in takes else [default.conv]
    found = []
    for conv in convs:
        forwards = (FORWARDS if _onepass_takes_a_region(ref, conv) else ("two-pass",)) if "forward" in takes \
            else (default.forward,)
        for forward in forwards:
            for size in sizes:
                found.append(Choices(size, conv, forward, default.region_kernels, default.autograd))
    if "region_kernels" in takes:
        forced = {conv: _forced_kernels(ref, conv) for conv in convs}   # each plan made once, not per candidate
        found += [Choices(default.block_size, c.conv, c.forward, kernels, c.autograd) for c in list(found)
                  if c.block_size == default.block_size for kernels in forced[c.conv] if kernels != c.region_kernels]
    if "autograd" in takes and node_takes_a_step(ref, default.conv):
        found += [Choices(**{**default.options(), "autograd": mode}) for mode in AUTOGRAD_MODES
                  if mode != default.autograd]
    return [default] + [c for c in dict.fromkeys(found) if c != default]


def node_takes_a_step(ref, conv: str) -> bool:
    """Whether `--autograd` changes the plan's file: an element-wise step, or a region not fed by kgen's own conv (that
    one keeps its Python Function, paired with the conv's)."""
    return any(isinstance(s, PointwiseStep) or isinstance(s, RegionStep) and not s.conv_fused
               for s in _steps(ref, conv))


def _forced_kernels(ref, conv: str) -> tuple:
    """The region kernels worth forcing in the plan of `conv`: none where no region's kernels are kgen's choice
    (region_kernels_matter), and not two-pass where that is a cliff (two_pass_cliff)."""
    if not region_kernels_matter(ref, conv):
        return ()
    return tuple(k for k in REGION_KERNELS if not (k == "two-pass" and two_pass_cliff(ref, conv)))


def region_kernels_matter(ref, conv: str) -> bool:
    """Whether forcing the region kernels can change a call: a region of the plan reads a channels-first input (a
    channels-last one runs its NHWC kernels whatever the choice) and is not fed by kgen's own conv."""
    return any(_region_forced(s) for s in _steps(ref, conv))


def two_pass_cliff(ref, conv: str) -> bool:
    """Whether forcing the two-pass kernels would put a region of the plan on planes smaller than a warp
    (TWO_PASS_MIN_PLANE), where the planner gives it other kernels: what `kgen tune` says it did not try."""
    return any(_region_forced(s) and math.prod(int(n) for n in s.shape[2:]) < TWO_PASS_MIN_PLANE
               for s in _steps(ref, conv))


def _region_forced(step) -> bool:
    """A region whose kernels `--region-kernels` chooses (region_kernels_matter's test, step by step)."""
    return isinstance(step, RegionStep) and not step.channels_last and not step.conv_fused


def _conv_moves_something(ref, conv: str) -> bool:
    """Whether `--conv conv` changes the plan: a region reads a channels-last convolution or kgen's own."""
    return any(isinstance(s, RegionStep) and (s.channels_last or s.conv_fused) for s in _steps(ref, conv))


def onepass_pruned(ref, takes=KEYS) -> bool:
    """Whether one-pass candidates were left out only because every region that takes the one-pass forward is
    faithful at this process's TF32 settings (what `kgen tune` says it did not try, and why)."""
    if "forward" not in takes:
        return False
    applies = [s for s in _steps(ref, "exact") if isinstance(s, RegionStep) and onepass_applies(s)]
    return bool(applies) and all(faithful_now(s) for s in applies)


def _onepass_takes_a_region(ref, conv: str) -> bool:
    """Whether a region of the plan takes the one-pass forward at a call made now: one it applies to that is not
    faithful at this process's TF32 settings (a faithful call keeps native_group_norm's statistics, whatever the
    forward option; the candidates are timed at these settings)."""
    return any(isinstance(s, RegionStep) and onepass_applies(s) and not faithful_now(s) for s in _steps(ref, conv))


def _steps(ref, conv: str) -> list:
    """The steps of the file's plans (emit.mode_plans: each mode's, for a forward that branches on self.training)."""
    return [s for plan in mode_plans(ref, conv) for s in plan.steps]
