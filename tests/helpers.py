"""Helpers shared by the test modules: draining a reader to its error, locating the error,
whether a file is still open, the ``Loose`` record type, and how many examples a property gets.

Kept free of pytest so that a child process (integration/test_memory.py) can import it cheaply.
"""

from __future__ import annotations

import dataclasses
import gc
import io
import os
import sys
import time
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from msgpack_reader_py import ReaderError

if TYPE_CHECKING:
    import pytest

T = TypeVar("T")

CI = os.environ.get("CI") == "true"


def examples(*, ci: int, local: int) -> int:
    """Hypothesis examples for a property: more on CI (``CI=true``), fewer for a quick local run."""
    return ci if CI else local


@dataclass
class Loose:
    """A record of two fields, the second of any type: nested values pass straight through."""

    key: str
    payload: Any


@dataclass
class Checked:
    """A record whose own ``__post_init__`` refuses a negative id, with a ``TypeError``: the
    exception the reader also meets when it builds a record it cannot unpack."""

    id: int
    name: str

    def __post_init__(self) -> None:
        if self.id < 0:
            raise TypeError("id must not be negative")


def as_rows(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Flat dataclass records as the dicts a reader of converted output gives back.

    Shallow, unlike ``dataclasses.asdict``, whose deep copy of every field made this the
    costliest line of the convert and Arrow tests.
    """
    rows = []
    for record in records:
        names = [field.name for field in dataclasses.fields(record)]
        rows.append({name: getattr(record, name) for name in names})
    return rows


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Trickle(io.RawIOBase):
    """A pipe that hands over at most ``piece`` bytes a read, ``pause`` seconds apart."""

    def __init__(self, data: bytes, piece: int, pause: float = 0.0) -> None:
        super().__init__()
        self._data = io.BytesIO(data)
        self._piece = piece
        self._pause = pause

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1, /) -> bytes:
        if self._pause:
            time.sleep(self._pause)
        return self._data.read(self._piece if size < 0 else min(size, self._piece))


def drain(reader: Iterable[T]) -> tuple[list[T], ReaderError]:
    """Iterate until the reader raises a ``ReaderError``; return what it yielded and the error.

    Fails if the reader ends without one.
    """
    got: list[T] = []
    try:
        got.extend(reader)
    except ReaderError as error:
        return got, error
    raise AssertionError(f"no ReaderError after {len(got)} records")


def assert_located(error: ReaderError, index: int, offset: int) -> None:
    """``error`` names record ``index`` at byte ``offset``, and its reason, in its message."""
    assert error.index == index
    assert error.offset == offset
    message = str(error)
    assert f"record {index} at byte {offset}" in message
    assert error.reason
    assert error.reason in message


def fds_pointing_at(path: Path) -> int:
    """How many of this process's file descriptors refer to ``path``."""
    target = os.path.realpath(path)
    fd_dir = "/proc/self/fd"
    if os.path.isdir(fd_dir):
        count = 0
        for entry in os.listdir(fd_dir):
            try:
                link = os.readlink(os.path.join(fd_dir, entry))
            except OSError:  # closed since it was listed
                continue
            count += link == target
        return count
    # Without /proc: count the live, open file objects that name the path.
    return sum(
        1
        for obj in gc.get_objects()
        if isinstance(obj, io.IOBase)
        and os.path.realpath(str(getattr(obj, "name", ""))) == target
        and not obj.closed
    )


def is_open(path: Path) -> bool:
    """Whether any of this process's file descriptors (or live file objects) refer to ``path``."""
    return fds_pointing_at(path) > 0


@contextmanager
def no_resource_warning() -> Iterator[None]:
    """A reader closes the file it opened itself: the file's own finaliser never has to (and
    warn). Collects garbage once, at the end of the block."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
        gc.collect()
    assert [w.message for w in caught if issubclass(w.category, ResourceWarning)] == []


def fake_pyperf(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Stand in for ``pyperf.Runner``: what a harness's main registers, by name, as its time
    function and metadata (filled in as the harness runs)."""
    registered: dict[str, tuple[Any, dict[str, Any]]] = {}

    class FakeRunner:
        def __init__(self) -> None:
            self.metadata: dict[str, Any] = {}

        def bench_time_func(self, name: str, func: Any, metadata: dict[str, Any]) -> None:
            registered[name] = (func, metadata)

    monkeypatch.setitem(sys.modules, "pyperf", type(sys)("pyperf"))
    monkeypatch.setattr(sys.modules["pyperf"], "Runner", FakeRunner, raising=False)
    return registered
