"""A sidecar index of a file's records: where every K-th record starts, so that a reader seeks
to a record, and a split read starts its ranges, without guessing or framing what comes before.

``write_index("log.msgpack")`` writes ``log.msgpack.index`` (MessagePack: a map of the file's
size, a SHA-256 of its first 64 KiB, ``every``, the offset of records 0, K, 2K, ..., the count of
complete records and where the last of them ends). Readers use it when it is valid (the file's
size and head are the ones indexed) and ignore a stale one with a note on the package's logger.
A file that has only grown since (a log: same head, larger size) keeps its index for the part
indexed; ``write_index`` again extends it from where it ended, framing only the new bytes.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import msgpack

from .._base.atomic import replacing
from .._base.checks import positive
from .._base.log import logger
from .._base.options import ReadOptions
from .._stream.compression import compression
from .._stream.delivery import Framing

__all__ = [
    "DEFAULT_EVERY",
    "INDEX_SUFFIX",
    "RecordIndex",
    "index_path",
    "load_index",
    "write_index",
]

INDEX_SUFFIX = ".index"
DEFAULT_EVERY = 1000
"""Records between two entries: a seek frames at most this many records to find its record."""
_HEAD = 64 * 1024
_VERSION = 1


@dataclasses.dataclass(frozen=True)
class RecordIndex:
    """Where every ``every``-th record of a file starts (``offsets[i]``: record ``i * every``),
    how many complete records it holds (``count``) and where the last one ends (``end``), for
    the file of ``size`` bytes whose first 64 KiB hash to ``head``."""

    every: int
    offsets: list[int]
    count: int
    end: int
    size: int
    head: str

    def origin(self, record: int) -> tuple[int, int]:
        """The index and offset of the last indexed record at or before ``record``."""
        if record >= self.count:
            return self.count, self.end
        entry = min(record // self.every, len(self.offsets) - 1)
        return entry * self.every, self.offsets[entry]

    def starts(self) -> list[int]:
        """Offsets known to start a record (or to end the file's complete records)."""
        return [*self.offsets, self.end]


def index_path(path: str | os.PathLike[str]) -> str:
    """Where the index of ``path`` is kept: beside it, named ``<path>.index``."""
    return os.fsdecode(path) + INDEX_SUFFIX


def write_index(
    path: str | os.PathLike[str],
    every: int = DEFAULT_EVERY,
    options: ReadOptions | None = None,
) -> RecordIndex:
    """Index the file at ``path`` and write ``<path>.index`` (atomically). An index already
    there for the same file, grown or not, with the same ``every``, is extended from where it
    ended: only the bytes after it are framed. Broken framing raises the reader's error, and
    no index is written."""
    positive("every", every)
    read = dataclasses.replace(options or ReadOptions(), decompress=False, follow=False)
    with open(path, "rb") as stream:
        kind = compression(stream.read(6))
    if kind is not None:
        raise ValueError(
            f"{os.fsdecode(path)} is {kind}-compressed: its records cannot be found by their "
            "offsets in the file; index the file decompressed"
        )
    size = os.path.getsize(path)
    head = _head_hash(path, size)
    known = load_index(path, quiet=True)
    if known is not None and known.every == every:
        offsets, count, end = list(known.offsets), known.count, known.end
    else:
        offsets, count, end = [], 0, 0
    count, end = _frame_from(path, read, every, offsets, count, end)
    index = RecordIndex(every, offsets, count, end, size, head)
    with replacing(index_path(path)) as out:
        out.write(msgpack.packb(_as_map(index)))
    return index


def load_index(path: Any, *, quiet: bool = False) -> RecordIndex | None:
    """The index of the file at ``path`` if there is one and it is valid for the file as it is
    (same head; the same size, or larger: a file that grew keeps its index of what was there);
    ``None`` otherwise, a stale index said on the package's logger unless ``quiet``."""
    if not isinstance(path, (str, os.PathLike)):
        return None
    where = index_path(path)
    try:
        with open(where, "rb") as stream:
            data = stream.read()
    except FileNotFoundError:
        return None
    why = None
    try:
        index = _from_map(msgpack.unpackb(data))
    except (ValueError, TypeError, KeyError, msgpack.UnpackException):
        index, why = None, "it is not an index this version reads"
    if index is not None:
        try:
            size = os.path.getsize(path)
        except OSError:
            return None
        if size < index.size:
            why = f"the file is smaller than when it was indexed ({size} < {index.size} bytes)"
        elif _head_hash(path, index.size) != index.head:
            why = "the file's first bytes changed since it was indexed"
    if why is None:
        return index
    if not quiet:
        logger.warning("%s: ignored: %s (write it again: msgpack-reader index)", where, why)
    return None


def _frame_from(
    path: str | os.PathLike[str],
    options: ReadOptions,
    every: int,
    offsets: list[int],
    count: int,
    end: int,
) -> tuple[int, int]:
    """Frame the file from record ``count`` at ``end`` on, adding the offset of each record
    whose index is a multiple of ``every`` to ``offsets``; the records then, and their end."""
    framing = Framing(path, options, (count, end))
    for run in framing.runs():
        first = -run.index % every
        offsets.extend(run.offset(p) for p in range(first, run.count, every))
    return framing.framer.index, framing.framer.start


def _head_hash(path: str | os.PathLike[str], size: int) -> str:
    """The SHA-256 of the file's first 64 KiB, or of its first ``size`` bytes if fewer: what
    a file that only grows keeps."""
    import hashlib  # only where an index is written or read: not at every command's start

    with open(path, "rb") as stream:
        return hashlib.sha256(stream.read(min(size, _HEAD))).hexdigest()


def _as_map(index: RecordIndex) -> dict[str, Any]:
    return {"version": _VERSION, **dataclasses.asdict(index)}


def _from_map(value: Any) -> RecordIndex | None:
    if not isinstance(value, dict) or value.get("version") != _VERSION:
        raise ValueError("not an index")
    fields = {field.name for field in dataclasses.fields(RecordIndex)}
    index = RecordIndex(**{name: value[name] for name in fields})
    if not isinstance(index.offsets, list) or index.every <= 0:
        raise ValueError("not an index")
    return index
