"""Without a GPU: how a profiled kernel is attributed to the solution or to PyTorch
(qualified names, the ELF symbol reader, the solution's libraries), and the verdict drawn from one profiled
forward and backward. The profiling itself runs in test_verdicts_gpu.py."""
import ctypes
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kgen.golden import GENERATED
from kgen.validate.stages.kernels import (Attribution, elf_function_names, judge_kernels, loaded_libraries,
                                          qualified_name, solution_libraries, source_kernel_names, summarize)
from tests.validate.helpers import FILES


@pytest.mark.parametrize("profiler_name, expected", [
    ("void kgen::normalize_kernel<kgen::GeluErf, 8, 256, true>(float const*, float2 const*, float const*)",
     "kgen::normalize_kernel"),
    ("group_norm_kernel(float const*, float const*, float const*, float*, int, int, long, float)",
     "group_norm_kernel"),
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
     "CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::"
     "{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<...>)", "at::native::elementwise_kernel"),
    ("void at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel<float>(long, float, float const*, "
     "float*, float*)", "at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel"),
    ("(anonymous namespace)::anon_kernel(float*)", "(anonymous namespace)::anon_kernel"),
    ("c_kernel", "c_kernel"),
    ("sm90_xmma_dgrad_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize256x64x32_g1_execute",
     "sm90_xmma_dgrad_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize256x64x32_g1_execute"),
    ("Memcpy DtoD (Device -> Device)", "Memcpy DtoD"),
    ("Memset (Device)", "Memset"),
])
def test_qualified_name(profiler_name, expected):
    assert qualified_name(profiler_name) == expected


def test_source_kernel_names_of_a_hand_written_and_a_generated_file():
    assert source_kernel_names((FILES / "third_party_groupnorm.py.txt").read_text()) == {"groupnorm_forward_kernel"}
    assert source_kernel_names((FILES / "gpu_index_add_own_atomics.py.txt").read_text()) == {
        "scale_kernel", "atomic_bin_sum_kernel"}
    text = (GENERATED / "convt_gelu_groupnorm.py").read_text()
    names = source_kernel_names(text)
    assert {"stats_partial_kernel", "plane_forward_kernel", "param_grad_kernel", "column_sum_finalize_kernel"} <= names
    assert len(names) >= 8 and "void" not in names and "__launch_bounds__" not in names


def test_elf_reader_finds_the_defined_functions_nm_finds():
    import torch

    lib = Path(torch.__file__).parent / "lib" / "libc10.so"
    names = set(elf_function_names(str(lib)))
    assert len(names) > 100
    if shutil.which("nm"):
        out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
        nm = {line.split()[-1] for line in out.splitlines() if len(line.split()) == 3 and line.split()[1] in "TtWw"}
        assert nm and nm <= names | {n for n in nm if "@" in n}, sorted(nm - names)[:5]
    assert elf_function_names(str(FILES / "good.py.txt")) == []     # not an ELF file
    assert elf_function_names("/nonexistent.so") == []


def test_a_library_loaded_after_the_snapshot_is_the_solutions(tmp_path):
    import _bisect   # noqa: F401  (a small extension module of the standard library, to copy)

    source = Path(sys.modules["_bisect"].__file__)
    if source.suffix != ".so":
        pytest.skip("the standard library's _bisect is built in here")
    copy = tmp_path / "kgen_test_ext.so"
    shutil.copy(source, copy)
    before = loaded_libraries()
    if not before:
        pytest.skip("no /proc/self/maps here")
    ctypes.CDLL(str(copy))
    found = solution_libraries(before, loaded_libraries())
    assert found == [str(copy)]
    assert solution_libraries(before, before) == []


def test_attribution_by_symbols_and_by_source_names():
    by_symbols = Attribution({"kgen::normalize_kernel", "group_norm_forward"}, set(), ["/x/ext.so"])
    assert by_symbols.owner("void kgen::normalize_kernel<kgen::Identity, 8, 256, true>(float const*)") == "solution"
    assert by_symbols.owner("void at::native::elementwise_kernel<128, 2>(int)") == "torch"
    assert "ext.so" in by_symbols.method
    by_source = Attribution(set(), {"group_norm_kernel", "elementwise_kernel"}, [])
    assert by_source.owner("group_norm_kernel(float const*, float*)") == "solution"
    # the same short name in PyTorch's namespace is PyTorch's
    assert by_source.owner("void at::native::elementwise_kernel<128, 2>(int)") == "torch"
    assert "__global__" in by_source.method


def phase(rows):
    """A profiled phase from (name, µs) events, attributed with the solution kernel `mine`."""
    return summarize(rows, Attribution({"mine"}, set(), ["/x/ext.so"]))


def test_summarize_sums_launches_and_shares():
    data = phase([("mine(float*)", 30.0), ("void at::native::vectorized_elementwise_kernel<4>(int)", 10.0),
                  ("mine(float*)", 60.0)])
    assert data["launches"] == 3 and data["solution_launches"] == 2
    assert data["solution_share"] == pytest.approx(0.9) and data["total_us"] == pytest.approx(100.0)
    assert data["kernels"][0] == {**data["kernels"][0], "name": "mine", "owner": "solution", "launches": 2}


def test_forward_on_pytorch_alone_fails_with_the_listing():
    torch_only = phase([("void at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel<float>(long)", 5.0),
                        ("void at::native::elementwise_kernel<128, 2>(int)", 3.0)])
    forward, backward = judge_kernels(torch_only, torch_only)
    assert forward.verdict == "FAIL" and "none of the solution's kernels" in forward.detail
    assert "RowwiseMomentsCUDAKernel (torch, 1x, 62%)" in forward.detail
    assert backward.verdict == "INFO" and "backward is PyTorch's alone" in backward.detail


def test_forward_with_the_solutions_kernel_passes():
    mixed = phase([("mine(float*)", 75.0), ("Memset (Device)", 25.0)])
    forward, backward = judge_kernels(mixed, mixed)
    assert forward.verdict == "PASS" and "75%" in forward.detail and "1 of 2 launches" in forward.detail
    assert backward.verdict == "PASS"
    forward, backward = judge_kernels(mixed, None, "the solution's output does not require grad")
    assert backward.verdict == "SKIP" and "does not require grad" in backward.detail


def test_a_forward_without_any_gpu_work_fails():
    (forward, _) = judge_kernels(phase([]), None)
    assert forward.verdict == "FAIL" and "no GPU work" in forward.detail


def test_profile_phases_flow_with_a_stand_in_profiler(monkeypatch, tmp_path):
    """The stage's flow on the CPU, the profiler replaced by one that runs the call and reports fixed
    kernels: the reference's forward, the solution's forward and (trainable only) its backward."""
    import torch

    import kgen.validate.stages.kernels as kernels
    from kgen.validate.context import Context, Results
    from kgen.validate.stages import setup
    from tests.validate.helpers import REFERENCE, RUNTIME_FILES

    ran = []

    def stand_in(fn, sync):
        fn()
        sync()
        ran.append(torch.is_grad_enabled())
        return [("group_norm_kernel(float*)", 3.0), ("void at::native::reduce_kernel<512, 1>(int)", 1.0)]

    monkeypatch.setattr(kernels, "profiled_kernels", stand_in)
    attribution = Attribution(set(), {"group_norm_kernel"}, [])
    results = {}
    for name in ("ok", "not_trainable"):
        config = {"solution": str(RUNTIME_FILES / f"{name}.py.txt"), "reference": str(REFERENCE),
                  "init_args": [8, 2], "input_shapes": [[3, 8, 5, 6]]}
        ctx = Context(config, Results(tmp_path / f"{name}.json"), torch.device("cpu"), 1e-4, 1e-4, 42)
        for stage in (setup.stage_import_reference, setup.stage_import_solution, setup.stage_arguments,
                      setup.stage_parameters):
            stage(ctx)
        results[name] = kernels.profile_phases(ctx, attribution)
    assert len(ran) == 3 + 2          # ok: reference, forward, backward; not_trainable: no backward
    ok, frozen = results["ok"], results["not_trainable"]
    assert ok["forward"]["solution_share"] == pytest.approx(0.75) and ok["backward"]["launches"] == 2
    assert frozen["backward"] is None and "does not require grad" in frozen["backward_why"]
    forward, backward = judge_kernels(frozen["forward"], frozen["backward"], frozen["backward_why"])
    assert forward.verdict == "PASS" and backward.verdict == "SKIP"


def test_report_section_lists_each_phase_with_owners():
    from kgen.validate.report import render_kernels

    attribution = Attribution({"mine"}, set(), ["/x/ext.so"])
    text = render_kernels({"method": attribution.method,
                           "forward": phase([("mine(float*)", 3.0), ("void at::native::x<1>(int)", 1.0)]),
                           "backward": None,
                           "reference_forward": phase([("void at::native::x<1>(int)", 1.0)])})
    lines = text.splitlines()
    assert "ext.so" in lines[0]
    assert lines[1] == "  forward: 2 launches, 0.004 ms; the solution's kernels 75% (1 launches)"
    assert lines[2].split()[:2] == ["solution", "mine"] and lines[3].split()[:2] == ["torch", "at::native::x"]
    assert lines[4] == "  reference forward: 1 launches, 0.001 ms"      # no "solution's share" for the reference
    assert not any("backward" in line for line in lines)
