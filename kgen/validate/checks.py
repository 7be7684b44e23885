"""The unit of every report: one `Check` per thing verified, and the rule that turns a list of checks
into an exit code.

A check is PASS (ok=True), FAIL (ok=False), or neither (ok=None): SKIP when it could not run, INFO when it
only tells something. A failed check marked `broken` means the file itself is unusable (it does not parse,
does not build, crashes, hangs): that is exit code 2, which outranks an ordinary failure (1).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_BROKEN = 2
EXIT_NO_CUDA = 3

NOT_RUN_NO_CUDA = "RUNTIME CHECKS NOT RUN: no CUDA device"


@dataclass
class Check:
    name: str
    ok: bool | None
    detail: str = ""
    data: dict = field(default_factory=dict)
    info: bool = False      # ok=None: INFO (a note) rather than SKIP (could not run)
    broken: bool = False    # ok=False: the file is broken (exit 2), not merely wrong (exit 1)

    @property
    def verdict(self) -> str:
        if self.ok is True:
            return "PASS"
        if self.ok is False:
            return "FAIL"
        return "INFO" if self.info else "SKIP"

    def to_dict(self) -> dict:
        return {**asdict(self), "verdict": self.verdict}

    @classmethod
    def from_dict(cls, d: dict) -> "Check":
        return cls(name=d["name"], ok=d["ok"], detail=d.get("detail", ""), data=d.get("data", {}),
                   info=d.get("info", False), broken=d.get("broken", False))


def passed(name: str, detail: str = "", **data) -> Check:
    return Check(name, True, detail, data)


def failed(name: str, detail: str, **data) -> Check:
    return Check(name, False, detail, data)


def broken(name: str, detail: str, **data) -> Check:
    return Check(name, False, detail, data, broken=True)


def skipped(name: str, detail: str, **data) -> Check:
    return Check(name, None, detail, data)


def note(name: str, detail: str, **data) -> Check:
    return Check(name, None, detail, data, info=True)


def exit_code(checks: list[Check], runtime_ran: bool) -> int:
    """2 if anything is broken, else 1 if anything failed, else 3 if the runtime checks did not run
    (a definite failure beats "unknown"), else 0."""
    if any(c.ok is False and c.broken for c in checks):
        return EXIT_BROKEN
    if any(c.ok is False for c in checks):
        return EXIT_FAIL
    if not runtime_ran:
        return EXIT_NO_CUDA
    return EXIT_PASS
