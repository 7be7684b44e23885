"""The corpus (tests/corpus/generate.py: archetypes of GroupNorm models at three sizes) on the CPU: every reference
plans without a refusal, the files are what generate.py writes, and the tiny size's plan, run step by step with
PyTorch's ops (tests/ref/plan_interpreter.py), equals the reference's forward. The GPU table (validate, and kgen
against eager and torch.compile) is `benchmarks/family.py tests/corpus ... --glob "*_*.py"`."""
from pathlib import Path

import pytest
import torch

from kgen.ref.ir import BatchNormStep
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
    from tests.ref.plan_interpreter import run_plan
    ref = load_reference(path)
    plan = make_plan(ref)
    if any(isinstance(s, BatchNormStep) for s in plan.steps):
        pytest.skip("batch norm steps are not interpreted")
    model = ref.model.eval()
    torch.manual_seed(1)
    inputs = list(ref.namespace["get_inputs"]())
    with torch.no_grad():
        want, have = model(*inputs), run_plan(plan, model, inputs)
    assert want.shape == have.shape
    torch.testing.assert_close(have, want, atol=1e-4, rtol=1e-4)
