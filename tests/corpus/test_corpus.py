"""The corpus (tests/corpus/generate.py: archetypes of GroupNorm models at three sizes) on the CPU: every reference
plans without a refusal, the files are what generate.py writes, and the tiny size's plan, run step by step with
PyTorch's ops (tests/ref/plan_interpreter.py), equals the reference's forward. The GPU table (validate, and kgen
against eager and torch.compile) is `benchmarks/family.py tests/corpus ... --glob "*_*.py"`."""
from pathlib import Path

import pytest

from kgen.ref.plan import make_plan
from kgen.ref.trace import load_reference
from tests.corpus import generate

HERE = Path(__file__).parent
CORPUS = sorted(p for p in HERE.glob("*_*.py") if not p.name.startswith(("_", "test_")))


def test_the_corpus_is_what_generate_writes_and_holds_forty_references():
    written = {f"{name}_{size}.py": generate.render(doc, body, values)
               for name, (doc, body, sizes) in generate.ARCHETYPES.items() for size, values in sizes.items()}
    assert sorted(written) == [p.name for p in CORPUS] and len(CORPUS) >= 40
    for path in CORPUS:
        assert path.read_text() == written[path.name], f"{path.name}: run python3 tests/corpus/generate.py"


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_every_corpus_reference_plans(path):
    plan = make_plan(load_reference(path))
    assert plan.steps


@pytest.mark.parametrize("path", [p for p in CORPUS if p.stem.endswith("_tiny")], ids=lambda p: p.stem)
def test_the_tiny_plans_compute_the_references_value(path):
    from tests.ref.plan_interpreter import assert_plan_computes_the_references_value
    assert_plan_computes_the_references_value(path)
