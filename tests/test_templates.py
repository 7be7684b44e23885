"""The CUDA templates as one namespace: an emitted file includes whichever kernel families its plan uses, in any mix,
so a type name two families define for different things builds alone and fails together. Checked on the sources,
without nvcc: every struct, class, enum and alias at namespace scope is defined once per namespace."""
import re
from collections import defaultdict
from pathlib import Path

import pytest

TEMPLATES = Path(__file__).resolve().parent.parent / "kgen" / "templates" / "cuda"
OPEN = re.compile(r"^namespace (\w+) \{")
CLOSE = re.compile(r"^\}\s*// namespace (\w+)")
# a definition at namespace scope starts the line (nested ones are indented); a declaration ends in ';' instead of '{'
TYPE = re.compile(r"^(?:template <.*>\s*)?(?:struct|class|enum(?: class)?)\s+(\w+)(?:\s*:[^{;]*)?\s*\{")
ALIAS = re.compile(r"^using (\w+) = ")


def type_definitions(path: Path) -> list[tuple[str, str, int]]:
    """(namespace path, name, line) of each type defined at namespace scope in one template."""
    found, scope = [], []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if match := OPEN.match(line):
            scope.append(match.group(1))
        elif (match := CLOSE.match(line)) and scope and scope[-1] == match.group(1):
            scope.pop()
        elif match := TYPE.match(line) or ALIAS.match(line):
            found.append(("::".join(scope), match.group(1), number))
    return found


def test_the_scan_sees_the_templates_types():
    """A scan that finds nothing would pass whatever the templates hold."""
    names = {name for path in TEMPLATES.rglob("*.cuh") for _, name, _ in type_definitions(path)}
    assert {"RegionParams", "ChainPrologue", "ChannelCursor"} <= names


@pytest.mark.parametrize("source, clash", [
    ("namespace kgen {\nstruct Cursor {\n  int a;\n};\n}  // namespace kgen\n", True),
    ("namespace kgen {\nnamespace a {\nstruct Cursor {\n};\n}  // namespace a\n}  // namespace kgen\n", False),
])
def test_a_second_definition_in_one_namespace_is_a_clash(tmp_path, source, clash):
    first = tmp_path / "first.cuh"
    first.write_text("namespace kgen {\ntemplate <class P>\nstruct Cursor {\n};\n}  // namespace kgen\n")
    second = tmp_path / "second.cuh"
    second.write_text(source)
    seen = defaultdict(list)
    for path in (first, second):
        for namespace, name, _ in type_definitions(path):
            seen[namespace, name].append(path.name)
    assert any(len(where) > 1 for where in seen.values()) == clash


def test_each_type_is_defined_once_per_namespace():
    seen = defaultdict(list)
    for path in sorted(TEMPLATES.rglob("*.cuh")):
        for namespace, name, line in type_definitions(path):
            seen[namespace, name].append(f"{path.relative_to(TEMPLATES)}:{line}")
    clashes = {f"{namespace}::{name}": where for (namespace, name), where in seen.items() if len(where) > 1}
    assert not clashes, f"types defined twice in one namespace (a file with both families fails to build): {clashes}"
