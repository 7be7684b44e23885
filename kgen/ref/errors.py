"""The one error every stage of `kgen emit --ref` raises for a reference it cannot read or plan."""


class RefError(ValueError):
    """A reference kgen cannot read or plan: a one-line, user-facing message."""


def first_line(error: BaseException) -> str:
    """An exception's message cut to its first line (its type's name where it has none), for a one-line RefError."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
