"""What a chunk source hands the reading loop besides chunks: :class:`Pending` (no bytes yet:
wait) and :class:`Reopened` (a followed file starts again)."""

from __future__ import annotations

__all__ = ["READ_MORE", "Pending", "Reopened"]


class Pending:
    """What a chunk source hands over when it has no chunk yet, and a reader's batches then
    hand up: an asynchronous reader waits (``delay`` seconds, or, for ``None``, for its source
    to give more bytes) and asks again. Synchronous sources never hand one over."""

    __slots__ = ("delay",)

    def __init__(self, delay: float | None) -> None:
        self.delay = delay


READ_MORE = Pending(None)
"""Nothing read yet: wait for the source."""


class Reopened:
    """A followed file was truncated or replaced and is read again from its start: ``why``."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why
