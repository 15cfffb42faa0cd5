"""Following a growing file, as ``tail -F`` does: what the readers' ``follow=True`` runs on.

At the end of what the file holds, the follower looks at it again after a pause that doubles
from :data:`FIRST_WAIT` up to :data:`LONGEST_WAIT` while nothing arrives, so an idle follower
costs a few ``stat`` calls a second, never a spinning CPU. A file that has become shorter than
what was read (truncated in place, as ``copytruncate`` rotation does) or whose path now names
another file (rotated by renaming, then created again) is read again from its start; a path
that names no file for a while (between the rename and the new file) is waited for, reading
on from the file already open.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from typing import IO

from .pending import Pending

__all__ = ["FIRST_WAIT", "LONGEST_WAIT", "Follower", "check_followable"]

FIRST_WAIT = 0.01
"""Seconds before a follower first looks again at a file with nothing new in it."""

LONGEST_WAIT = 0.25
"""The longest pause, in seconds, between two looks at a file with nothing new in it."""


def check_followable(path: str) -> None:
    """Refuse (``ValueError``) a ``path`` that names something other than a regular file: a
    pipe or a device has no end to wait at, no size to see truncation by. A path that names
    nothing passes: opening it says so."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"{path} is not a regular file (a pipe is read until its writer closes it, "
            "without following)"
        )


class Follower:
    """The waiting and the checks of one followed ``path``.

    ``blocking``: pauses are slept here (a synchronous reader), ended early by :meth:`stop`
    from any thread; otherwise each pause is handed over as a :class:`~.pending.Pending` for
    an asynchronous reader to sleep.
    """

    def __init__(self, path: str, *, blocking: bool) -> None:
        self.path = path
        self.blocking = blocking
        self._stop = threading.Event()
        self._wait = FIRST_WAIT

    def stop(self) -> None:
        """End following at the next look (a sleeping synchronous follower wakes at once)."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stop.is_set()

    def arrived(self) -> None:
        """Something was read: the next pause is a short one again."""
        self._wait = FIRST_WAIT

    def pause(self) -> Iterator[Pending]:
        """Wait before looking at the file again (or hand the wait over)."""
        delay = self._wait
        self._wait = min(2 * delay, LONGEST_WAIT)
        if self.blocking:
            self._stop.wait(delay)
        else:
            yield Pending(delay)

    def changed(self, stream: IO[bytes]) -> str | None:
        """Why ``stream``, read to its end, must be read again from the start of ``path``:
        truncated or replaced; ``None`` if it is still the file to follow."""
        here = os.fstat(stream.fileno())
        position = stream.tell()
        if here.st_size < position:
            return f"was truncated (to {here.st_size} bytes, after {position} were read)"
        try:
            there = os.stat(self.path)
        except FileNotFoundError:
            return None  # renamed away, and not yet created again
        if (there.st_dev, there.st_ino) != (here.st_dev, here.st_ino):
            return "was replaced by another file"
        return None

    def reopen(self, stream: IO[bytes]) -> IO[bytes]:
        """The file at ``path``, from its start, in place of ``stream`` (closed here)."""
        try:
            fresh = open(self.path, "rb")  # noqa: SIM115 - the reader's to close
        except FileNotFoundError:
            stream.seek(0)  # truncated, then renamed away: what is left of it is the file
            return stream
        stream.close()
        return fresh
