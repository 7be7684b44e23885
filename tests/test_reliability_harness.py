"""kgen.bench.reliability's judge (benchmarks/reliability.py), on the CPU: it compares the output AND every gradient (input and
parameters) with the reference and float64, and never passes a wrong answer silently: a wrong output, a
wrong parameter gradient, a NaN the reference does not have, a missing gradient are all WRONG; the
invalid-input rule and the sanitizer log parser too."""
import math

import pytest
import torch
import torch.nn as nn

from kgen.bench.reliability import invalid_row, judge
from kgen.bench.sanitizer_logs import our_kernels, parse_log


class Reference(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)

    def forward(self, x):
        return self.gn(x)


class ScaleGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, w, factor):
        ctx.factor = factor
        return w.clone()

    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor, None


class Variant(Reference):
    """The reference with one planted defect."""

    def __init__(self, defect=None):
        super().__init__()
        self.defect = defect

    def forward(self, x):
        if self.defect == "weight_grad":
            w = ScaleGrad.apply(self.gn.weight, 1.5)
            return nn.functional.group_norm(x, 2, w, self.gn.bias, self.gn.eps)
        y = self.gn(x)
        if self.defect == "output":
            return y + 1e-3
        if self.defect == "nan":
            y = y.clone()
            y.view(-1)[3] = math.nan
            return y
        if self.defect == "detached_bias":
            return nn.functional.group_norm(x, 2, self.gn.weight, self.gn.bias.detach(), self.gn.eps)
        return y


def models(defect):
    torch.manual_seed(0)
    new = Variant(defect)
    torch.manual_seed(0)
    return new, Reference()


X = torch.rand(2, 8, 5, 6)


def test_identical_model_passes():
    verdict, err_ref, err_64, ref_64, message = judge(*models(None), X)
    assert verdict == "PASS" and err_ref == 0.0 and err_64 < 1e-5


@pytest.mark.parametrize("defect", ["output", "weight_grad", "nan", "detached_bias"])
def test_every_defect_is_wrong(defect):
    verdict, *_, message = judge(*models(defect), X)
    assert verdict == "WRONG", message


def test_weight_gradient_is_named():
    verdict, *_, message = judge(*models("weight_grad"), X)
    assert "grad gn.weight" in message


def test_nan_where_the_reference_has_nan_passes():
    x = X.clone()
    x.view(-1)[7] = math.nan
    verdict, *_, message = judge(*models(None), x)
    assert verdict == "PASS", message


def test_invalid_input_rules():
    new, ref = models(None)
    row = invalid_row("f", "wrong channels", new, ref, lambda: torch.rand(2, 9, 4, 4), 1e-4)
    assert row.verdict == "RAISES-OK"

    class Lenient(nn.Module):
        def forward(self, x):
            return x

    row = invalid_row("f", "wrong channels", Lenient(), ref, lambda: torch.rand(2, 9, 4, 4), 1e-4)
    assert row.verdict == "ACCEPTED"


LOG = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at void kgen::normalize_kernel<kgen::GeluErf, 8, 256, true>(const float *)+0x1b0 in /x/cuda.cu:44
=========     by thread (0,0,0) in block (1,0,0)
========= Uninitialized __global__ memory read of size 4 bytes
=========     at void cudnn::engines_precompiled::nchwToNhwcKernel<float>(float *)+0x40
========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA API call to cudaFuncSetAttribute.
sanitize.py groupnorm.py: ...
========= ERROR SUMMARY: 3 errors
"""


def test_sanitizer_log_attributes_reports_to_kernels(tmp_path):
    parsed = parse_log(LOG, ["normalize_kernel"])
    assert parsed["errors"] == 3
    assert parsed["ours"] == {"normalize_kernel": 1}
    assert parsed["library"] == {"cudnn::engines_precompiled::nchwToNhwcKernel": 1}
    assert parsed["api"] == {"cudaErrorInvalidValue in cudaFuncSetAttribute": 1}
    source = tmp_path / "s.py"
    source.write_text('CUDA = r"""\n__global__ void __launch_bounds__(kBlock)\nfoo_kernel(int a) {}\n'
                      'template <int N> __global__ void bar(float* x) {}\n"""\n')
    assert our_kernels(source) == ["bar", "foo_kernel"]


def test_clean_log():
    parsed = parse_log("========= COMPUTE-SANITIZER\nsanitize.py x\n========= ERROR SUMMARY: 0 errors\n", [])
    assert parsed["errors"] == 0 and not parsed["ours"] and not parsed["library"] and parsed["other"] == 0


def _initcheck_rows(probe_exit=0, twopass="CLEAN", where="library: at::native::vectorized_elementwise_kernel x200"):
    rows = [{"file": "generated/groupnorm.py", "tool": "initcheck", "exit": 9, "errors": 23608,
             "verdict": "REPORTED", "where": where},
            {"file": ".build/groupnorm_twopass.py", "tool": "initcheck", "exit": 0, "errors": 0, "verdict": twopass,
             "where": ""}]
    if probe_exit is not None:
        rows.append({"file": "benchmarks/sanitize_bulk_stores.py", "tool": "bulk-store-probe",
                     "exit": probe_exit, "errors": None, "verdict": "REPORTED", "where": ""})
    return rows


@pytest.mark.parametrize("case, expected", [
    ({}, "BULK-STORES"),
    ({"probe_exit": 1}, "REPORTED"),        # the probe found a value of y never written
    ({"probe_exit": None}, "REPORTED"),     # no probe in this run
    ({"twopass": "REPORTED"}, "REPORTED"),  # the same kernels without bulk stores are reported too
    ({"where": "OURS: groupnorm_onepass_kernel x3"}, "REPORTED"),  # a report in our own kernel
])
def test_bulk_store_initcheck_reports_are_explained_only_with_all_the_evidence(tmp_path, case, expected):
    from kgen.bench.reliability import BULK_STORE, bulk_stores_explained

    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "groupnorm.py").write_text(f'CUDA = r"""asm volatile("{BULK_STORE}.bulk_group");"""')
    rows = _initcheck_rows(**case)
    bulk_stores_explained(rows, root=tmp_path)
    assert rows[0]["verdict"] == expected
    if case.get("probe_exit", 0) is not None:
        assert rows[-1]["verdict"] == "PROBE"


def test_bulk_store_rule_needs_bulk_stores_in_the_file(tmp_path):
    from kgen.bench.reliability import bulk_stores_explained

    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "groupnorm.py").write_text('CUDA = r"""plain stores"""')
    rows = _initcheck_rows()
    bulk_stores_explained(rows, root=tmp_path)
    assert rows[0]["verdict"] == "REPORTED"


# ---- the judge: several inputs, the TF32 mode ----------------------------------------------------------------

class TwoInputs(nn.Module):
    def __init__(self, defect=False):
        super().__init__()
        self.gn = nn.GroupNorm(2, 8)
        self.defect = defect

    def forward(self, x, y):
        z = self.gn(x) * y
        return z + 1e-3 if self.defect else z


def test_judge_takes_several_inputs_and_compares_each_gradient():
    torch.manual_seed(0)
    inputs = [torch.rand(2, 8, 3, 4), torch.rand(2, 8, 3, 4)]
    torch.manual_seed(0)
    new = TwoInputs()
    torch.manual_seed(0)
    verdict, *_, message = judge(new, TwoInputs(), inputs)
    assert verdict == "PASS" and "5 tensors" in message   # output, two input gradients, GroupNorm weight and bias
    verdict, *_ = judge(TwoInputs(defect=True), TwoInputs(), inputs)
    assert verdict == "WRONG"


def test_tf32_mode_holds_tf32_errors_and_rejects_larger_ones():
    from kgen.bench.reliability import TF32, compare_tensor

    exact = torch.linspace(-3, 3, 100, dtype=torch.float64)
    tf32_like = (exact * (1 + 2.0 ** -11)).float()           # TF32's relative rounding
    ok, *_ = compare_tensor("output", tf32_like, tf32_like, exact, 1e-2, TF32)
    assert ok
    ok, *_, problem = compare_tensor("output", (exact + 0.05).float(), exact.float(), exact, 1e-2, TF32)
    assert not ok and "TF32" in problem
    # a parameter gradient (a sum over the batch) at 3e-2 of its scale
    scale = torch.full((8,), 40.0, dtype=torch.float64)
    ok, *_ = compare_tensor("grad conv.bias", (scale + 1.0).float(), scale.float(), scale, 1e-2, TF32)
    assert ok
    ok, *_ = compare_tensor("grad conv.bias", (scale + 3.0).float(), scale.float(), scale, 1e-2, TF32)
    assert not ok


def test_fused_files_are_judged_in_the_tf32_mode():
    from kgen.bench.reliability import TF32, judge_mode, tolerance_for

    assert judge_mode({"conv": "fused"}) == TF32 and tolerance_for({"conv": "fused"}) == 1e-2
    assert judge_mode({"conv": "fast"}) == "default" and judge_mode({}) == "default"


# ---- the kernel families ---------------------------------------------------------------------------------------

from kgen.bench.families import (  # noqa: E402
    FAMILIES, ROOT, SOURCES, family, kernel_launched, log_stem, render_source, source_of, target_file)

TEMPLATES = ROOT / "kgen" / "templates" / "cuda"


def test_family_list_is_consistent():
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)
    for f in FAMILIES:
        source = source_of(f)
        assert (ROOT / source.reference).is_file(), source.reference
        assert f.kernels and f.inputs and f.why
        assert f.judge in ("default", "fast", "tf32")
        for template in f.templates:
            assert (TEMPLATES / template).is_file(), template
        # every kernel a __global__ of one of the family's templates (or of the files they build on)
        names = set()
        for path in TEMPLATES.rglob("*.cuh"):
            names |= set(our_kernels(path))
        for kernel in f.kernels:
            assert kernel.startswith("kgen::") and kernel.split("::")[-1] in names, (f.name, kernel)
        if f.counterpart:
            assert source_of(family(f.counterpart)) == source, "a counterpart is the same file at another shape"
    assert {s for s in SOURCES} == {f.source for f in FAMILIES}, "every source serves a family"
    assert target_file("family:rows") == SOURCES["rows"].path and log_stem("family:rows") == "family-rows"
    assert log_stem("generated/groupnorm.py") == "groupnorm"


def test_kernel_names_match_whole_names_only():
    names = ["void kgen::nhwc_normalize_kernel<kgen::GeluErf, 8>(float const*)",
             "void kgen::region_nhwc::apply_kernel<Region0Prologue, 256, true, 32>(float const*, int)",
             "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)"]
    assert not kernel_launched("kgen::normalize_kernel", names)
    assert kernel_launched("kgen::region_nhwc::apply_kernel", names)
    assert not kernel_launched("kgen::apply_kernel", names)
    assert kernel_launched("kgen::nhwc_normalize_kernel", names)


@pytest.fixture(scope="module")
def emitted_sources(tmp_path_factory):
    """Every source's emitted text (kgen emit, as the device step runs it), once."""
    return {key: render_source(source) for key, source in SOURCES.items()}


@pytest.mark.parametrize("name", [f.name for f in FAMILIES])
def test_each_family_emits_with_its_kernels(emitted_sources, name, tmp_path):
    """The family's source emits, and its CUDA source defines every kernel the family must launch, in the
    namespaces the profiler will name."""
    f = family(name)
    text = emitted_sources[f.source]
    path = tmp_path / "solution.py"
    path.write_text(text)
    defined = set(our_kernels(path))
    for kernel in f.kernels:
        *namespaces, short = kernel.split("::")
        assert short in defined, (name, kernel)
        for namespace in namespaces:
            assert f"namespace {namespace} {{" in text, (name, namespace)
    for template in f.templates:   # the family's building blocks are in the file
        first_line = (TEMPLATES / template).read_text().splitlines()[0]
        assert first_line in text, (name, template)


# The host code's choices at each family's shape, mirrored for an H100 (227 KB of shared memory a block, 228 KB an
# SM; groupnorm/resident/plan.cuh's make_plan / region_resident_pays, groupnorm/cluster/cluster.cuh's cluster plans,
# groupnorm/rows/forward.cuh's rows_lanes): what each family's `why` claims, checked on the GroupNorm input that the
# reference produces at the family's shape (the reference run on the CPU).
SMEM_BLOCK, SMEM_SM, RESERVED = 232448, 233472, 1024


def _align4(v):
    return (v + 3) // 4 * 4


def resident_pays(unit: int, cpg: int, groups_in_tile: int, none: bool) -> bool:
    """region_resident_pays for units (slices, or samples for channel / sample reductions) of more than 256 values
    (a team of the whole block a unit)."""
    budget = SMEM_BLOCK - RESERVED
    m, slice_ = groups_in_tile, unit // groups_in_tile
    forward = 4 * (_align4(m * slice_) + 4 * m + _align4(m))
    backward = 4 * (_align4(m * slice_) * (2 if none else 1) + 2 * _align4(m * cpg) + 5 * m)
    if forward > budget or backward > budget:
        return False
    double = 4 * (2 * _align4(m * slice_) + 4 * m + _align4(m))
    return double <= min(budget, 96 * 1024) or SMEM_SM // (forward + RESERVED) >= 3


def cluster_fits(plane: int, slice_: int, block_bytes: int, largest: int, table: int = 0) -> bool:
    if plane < 512:
        return False
    return any(4 * (((slice_ + k - 1) // k + 3) // 4 * 4) + table <= block_bytes for k in (2, 4, 8, 16) if k <= largest)


def rows_lanes(channels: int, plane: int, groups: int) -> int:
    cpg = channels // groups
    if plane != 1 or cpg % 4:
        return 0
    packs = cpg // 4
    if packs & (packs - 1) or packs > 32 * 8:
        return 0
    per_lane = packs if packs <= 2 else (packs // 32 if packs // 32 > 2 else 2)
    return packs // per_lane


def groupnorm_input(f):
    """(shape, groups) of the family's (first) GroupNorm input, the reference run on the CPU at its shape."""
    import importlib.util

    import torch.nn.functional as F

    spec = importlib.util.spec_from_file_location("family_reference", ROOT / source_of(f).reference)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seen = []
    group_norm = F.group_norm

    def capture(x, groups, *args, **kwargs):
        seen.append((tuple(x.shape), groups))
        return group_norm(x, groups, *args, **kwargs)

    F.group_norm = capture
    try:
        torch.manual_seed(0)
        module.Model(*f.init)(*[torch.rand(s) for s in f.inputs])
    finally:
        F.group_norm = group_norm
    return seen[0]


REGION_PATHS = {   # family -> (reduction, the path its `why` names)
    "resident": ("none", "resident"), "pointwise": ("none", "resident"), "batchnorm": ("none", "resident"),
    "cluster-forward": ("none", "cluster-forward"), "twopass-plane": ("plane", "sweeps"),
    "cluster-backward": ("plane", "cluster-backward"), "twopass-channel": ("channel", "sweeps"),
    "window": ("window", "sweeps"), "rows": ("none", "rows"), "rows-reduce": ("channel", "rows"),
}


@pytest.mark.parametrize("name", sorted(REGION_PATHS))
def test_family_shape_takes_its_path_on_an_h100(name):
    f = family(name)
    reduction, path = REGION_PATHS[name]
    (batch, channels, *spatial), groups = groupnorm_input(f)
    plane = math.prod(spatial)
    cpg = channels // groups
    slice_ = cpg * plane
    sample_kind = reduction in ("channel", "sample")
    unit, tile = (slice_ * groups, groups) if sample_kind else (slice_, 1)
    if path == "rows":
        lanes = rows_lanes(channels, plane, groups)
        assert lanes > 0 and resident_pays(max(unit, 257), cpg, tile, reduction == "none")
        if reduction == "channel":
            assert groups * lanes >= 32   # rows_reduce_applies
        assert cpg // 4 <= 256             # the rows backward: a pack a lane (rows_backward_lanes)
        return
    pays = resident_pays(unit, cpg, tile, reduction == "none")
    assert pays == (path == "resident"), (name, unit)
    if path == "cluster-forward":
        assert cluster_fits(plane, slice_, 72 * 1024, 8) and plane % 4 == 0   # and the pipelined backward
    if path == "cluster-backward":
        assert cluster_fits(plane, slice_, 64 * 1024, 16, table=4 * cpg * 8)
    if path == "sweeps" and reduction == "plane":
        assert not cluster_fits(plane, slice_, 64 * 1024, 16)


# ---- the families' sanitizer verdicts that explain reports --------------------------------------------------

def _family_rows(library_probe_where="library: at::native::copy_kernel x4", pytorch_errors=21582,
                 probe_script="sanitize.py family:nhwc (library-writes probe): ...", counterpart="CLEAN",
                 bulk_probe_exit=0, onepass_where="library: at::native::vectorized_elementwise_kernel x200",
                 batchnorm_where="library: cudnn::nhwcToNchwKernel x200",
                 reference_where="library: cudnn::nhwcToNchwKernel x200, at::native::copy_kernel x4", reference_exit=9):
    def row(file, tool, verdict, exit=0, errors=0, where="", script="sanitize.py ...", ours=0):
        return {"file": file, "tool": tool, "exit": exit, "errors": errors, "verdict": verdict, "where": where,
                "script": script, "ours": ours}

    return [row("benchmarks/sanitize_fast_mode.py", "initcheck-probe-pytorch", "REPORTED", 9, pytorch_errors),
            row("family:nhwc", "initcheck", "REPORTED", 9, 300, "OURS: stats_partial_kernel x200", ours=200),
            row("family:nhwc", "initcheck-library-probe", "REPORTED", 9, 10, library_probe_where, probe_script,
                ours=int("OURS" in library_probe_where)),
            row("family:onepass", "initcheck", "REPORTED", 9, 23608, onepass_where, ours=int("OURS" in onepass_where)),
            row("family:groupnorm-declined", "initcheck", counterpart),
            row("family:onepass", "bulk-store-probe", "REPORTED", bulk_probe_exit, None),
            row("family:batchnorm", "initcheck", "REPORTED", 9, 7992, batchnorm_where,
                ours=int("OURS" in batchnorm_where)),
            row("family:batchnorm", "initcheck-reference-probe", "REPORTED", reference_exit, 8000, reference_where)]


def _explained(tmp_path, **case):
    from kgen.bench.reliability import BULK_STORE, family_reports_explained

    solution = tmp_path / "groupnorm.py"
    solution.write_text(f'CUDA = r"""asm volatile("{BULK_STORE}.bulk_group");"""')
    rows = _family_rows(**case)
    family_reports_explained(rows, file_of=lambda target: solution)
    return {(r["file"], r["tool"]): r["verdict"] for r in rows}


def test_family_initcheck_reports_explained_with_their_evidence(tmp_path):
    verdicts = _explained(tmp_path)
    assert verdicts[("family:nhwc", "initcheck")] == "LIBRARY-WRITES"
    assert verdicts[("family:onepass", "initcheck")] == "BULK-STORES"
    assert verdicts[("family:batchnorm", "initcheck")] == "LIBRARY-OWN"
    assert verdicts[("family:batchnorm", "initcheck-reference-probe")] == "PROBE"
    assert verdicts[("family:nhwc", "initcheck-library-probe")] == "PROBE"
    assert verdicts[("benchmarks/sanitize_fast_mode.py", "initcheck-probe-pytorch")] == "PROBE"


@pytest.mark.parametrize("case, target", [
    ({"library_probe_where": "OURS: stats_partial_kernel x3"}, "family:nhwc"),   # ours read unwritten memory
    ({"pytorch_errors": 0}, "family:nhwc"),                                      # PyTorch's reads are not reported
    ({"probe_script": ""}, "family:nhwc"),                                       # the probe never finished
    ({"counterpart": "REPORTED"}, "family:onepass"),     # the same file's two-pass kernels are reported too
    ({"bulk_probe_exit": 1}, "family:onepass"),          # a value of y never written
    ({"onepass_where": "OURS: groupnorm_onepass_kernel x3"}, "family:onepass"),   # a report in our kernel
    ({"batchnorm_where": "OURS: bn_grad_apply_kernel x3; library: cudnn::nhwcToNchwKernel x200"},
     "family:batchnorm"),                                                        # a report in our kernel
    ({"reference_where": "library: at::native::copy_kernel x4"}, "family:batchnorm"),   # the reference alone: not there
    ({"reference_exit": 0}, "family:batchnorm"),                                 # the reference alone is clean
])
def test_family_initcheck_reports_stay_failures_without_the_evidence(tmp_path, case, target):
    assert _explained(tmp_path, **case)[(target, "initcheck")] == "REPORTED"
