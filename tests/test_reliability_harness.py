"""benchmarks/reliability.py's judge, on the CPU: it compares the output AND every gradient (input and
parameters) with the reference and float64, and never passes a wrong answer silently: a wrong output, a
wrong parameter gradient, a NaN the reference does not have, a missing gradient are all WRONG; the
invalid-input rule and the sanitizer log parser too."""
import math

import pytest
import torch
import torch.nn as nn

from benchmarks.reliability import invalid_row, judge
from benchmarks.sanitize_summary import our_kernels, parse_log


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
        rows.append({"file": "benchmarks/diagnose_initcheck_bulk_store.py", "tool": "bulk-store-probe",
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
    from benchmarks.reliability import BULK_STORE, bulk_stores_explained

    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "groupnorm.py").write_text(f'CUDA = r"""asm volatile("{BULK_STORE}.bulk_group");"""')
    rows = _initcheck_rows(**case)
    bulk_stores_explained(rows, root=tmp_path)
    assert rows[0]["verdict"] == expected
    if case.get("probe_exit", 0) is not None:
        assert rows[-1]["verdict"] == "PROBE"


def test_bulk_store_rule_needs_bulk_stores_in_the_file(tmp_path):
    from benchmarks.reliability import bulk_stores_explained

    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "groupnorm.py").write_text('CUDA = r"""plain stores"""')
    rows = _initcheck_rows()
    bulk_stores_explained(rows, root=tmp_path)
    assert rows[0]["verdict"] == "REPORTED"
