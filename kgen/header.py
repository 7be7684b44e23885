"""The header at the top of every emitted solution file.

It is made of ordinary Python comments, so the file stays a plain KernelBench solution, and it is
machine-readable, so `kgen validate` can find the reference and the parameters without being told:

    # kgen-spec: groupnorm
    # kgen-params: {"block_size": 256, "groups": 8}
    # kgen-version: 0.1.0

A file emitted with `kgen emit --ref` also names its reference, relative to the file's own folder when it was
written with -o (so the pair can move together), else as given plus its absolute path, and the SHA-256 of its
text:

    # kgen-reference: ../refs/model.py
    # kgen-reference-sha256: 804f6ce8...
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

_FIELD = re.compile(r"^# kgen-(spec|params|version|reference|reference-abspath|reference-sha256): (.*)$",
                    re.MULTILINE)


@dataclass(frozen=True)
class SolutionHeader:
    spec: str
    params: dict
    version: str
    reference: str | None = None          # `kgen emit --ref`: the reference file it was planned from
    reference_sha256: str | None = None   # ... and the SHA-256 of its text then
    reference_abspath: str | None = None  # ... and, emitted to stdout (no file to be relative to), its absolute path


def render_header_fields(spec: str, params: dict, version: str, reference: str | None = None,
                         reference_sha256: str | None = None, reference_abspath: str | None = None) -> str:
    """The machine-readable lines (the template adds the human-readable ones around them)."""
    text = (
        f"# kgen-spec: {spec}\n"
        f"# kgen-params: {json.dumps(params, sort_keys=True)}\n"
        f"# kgen-version: {version}"
    )
    if reference is not None:
        text += f"\n# kgen-reference: {reference}"
        if reference_abspath is not None:
            text += f"\n# kgen-reference-abspath: {reference_abspath}"
        text += f"\n# kgen-reference-sha256: {reference_sha256}"
    return text


def _leading_comments(source: str) -> list[str]:
    """The comment block a file opens with (blank lines inside it included): where the header lives, however long
    the plan listed in it (a reference of many steps writes more than a hundred lines before the fields)."""
    lines = []
    for line in source.splitlines():
        if line.strip() and not line.startswith("#"):
            break
        lines.append(line)
    return lines


def parse_header(source: str) -> SolutionHeader | None:
    """Return the kgen header of a solution file's text, or None for a file kgen did not write."""
    head = "\n".join(_leading_comments(source) + source.splitlines()[:40])
    fields = dict(_FIELD.findall(head))
    if "spec" not in fields:
        return None
    params = json.loads(fields.get("params", "{}"))
    return SolutionHeader(spec=fields["spec"].strip(), params=params, version=fields.get("version", "?").strip(),
                          reference=(fields.get("reference") or "").strip() or None,
                          reference_sha256=(fields.get("reference-sha256") or "").strip() or None,
                          reference_abspath=(fields.get("reference-abspath") or "").strip() or None)
