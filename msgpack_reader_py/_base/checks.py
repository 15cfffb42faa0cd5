"""The checks of the arguments every entry point takes: one for each kind, so that a bad value
is refused the same way, in the same words, wherever it is given."""

from __future__ import annotations

from typing import Any

__all__ = ["count_of", "positive"]


def count_of(name: str, value: Any, *, least: int = 0, allowed: tuple[Any, ...] = ()) -> Any:
    """``value``, a count ``name`` takes: an int of at least ``least`` (``bool`` is no count),
    or one of ``allowed`` (``None``, ``"all"``, ...). Raises ``ValueError`` naming ``name``,
    what it takes and what it got."""
    if any(value is a or (isinstance(a, str) and value == a) for a in allowed):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        kind = "positive" if least == 1 else "non-negative" if least == 0 else f">= {least}"
        others = [repr(a) for a in allowed if a is not None] + ["None"] * (None in allowed)
        also = f", {', '.join(others[:-1])} or {others[-1]}" if len(others) > 1 else ""
        also = also or (f" or {others[0]}" if others else "")
        raise ValueError(f"{name} must be a {kind} int{also}, got {value!r}")
    return value


def positive(name: str, value: Any, *, allowed: tuple[Any, ...] = ()) -> Any:
    """:func:`count_of` with ``least=1``."""
    return count_of(name, value, least=1, allowed=allowed)
