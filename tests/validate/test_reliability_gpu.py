"""Reliability on a GPU: no memory growth over 1,000 forward+backward iterations of every emitted solution,
and the extension built once per process (the same file twice reuses its build; two different emitted
files get different extensions and both compute correct results). The logic lives in
kgen/bench/runtime_checks.py, which the reliability table (kgen/bench/reliability/) also runs."""
import pytest

from kgen.bench.prebuild import emit_to_file
from kgen.bench.runtime_checks import build_once, memory_check, two_files
from kgen.golden import GENERATED, GOLDEN

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("file_name", sorted(GOLDEN))
def test_memory_does_not_grow_over_1000_forward_backward(file_name):
    result = memory_check(GENERATED / file_name, iterations=1000)
    print(result)
    assert result["allocated_at_probe"] == result["allocated_at_end"], result


def test_same_file_twice_in_one_process_reuses_the_build():
    result = build_once(GENERATED / "groupnorm.py")
    print(result)
    assert result["ninja_runs_second"] == 0, result
    assert result["second_load_s"] < 5.0, result
    assert result["extension"][0] == result["extension"][1], result
    assert result["extension"][0].endswith("_" + result["source_digest"]), result   # no version suffix: no name collision


def test_two_different_emitted_files_in_one_process():
    paths = [emit_to_file("groupnorm", {"groups": 8}), emit_to_file("groupnorm", {"groups": 4})]
    result = two_files(paths)
    print(result)
    assert len(set(result["extensions"])) == 2, result
    assert all(result["correct"]), result
