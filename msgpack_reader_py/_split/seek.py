"""Records found without decoding the ones before them: counting a stream's records, and
where a record starts, by framing alone (:mod:`.framing`: each record's size read from its
headers, no value built).

Framing checks what framing can: a stream cut off, bytes that are not MessagePack, a record
over ``max_record_size``. Records passed over are not checked against a record type: a
count counts values, whatever they hold.

>>> from msgpack_reader_py._split.seek import count_records
>>> count_records("telemetry.msgpack")  # doctest: +SKIP
2000000
"""

from __future__ import annotations

import bisect
import dataclasses
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._base.options import ReadKeywords, ReadOptions
from .._stream import sniff
from .._stream.compression import compression
from .._stream.delivery import Framing, Plan
from .._stream.sources import Source
from .index import load_index
from .parallel import RangedRead, Splitting

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Counting", "count_records", "origin_for"]


class _Framed:
    """A run decoder that decodes nothing: framing alone."""

    build: Callable[[list[Any]], list[Any]] | None = None

    def decode_run(self, data: Any, /) -> list[Any]:
        return []

    def decode_one(self, data: Any, /) -> Any:  # pragma: no cover - decode_run never fails
        return None


@dataclasses.dataclass(frozen=True)
class Counting:
    """A range job (:class:`~.ranges.RangeJob`) that counts: it decodes nothing, and the
    piece's ``count`` is the answer. Unless ``force``, a file that looks like something
    other than MessagePack is refused at its first record, as an untyped read refuses it."""

    force: bool = False

    def plan(self, record_type: Any, options: ReadOptions) -> Plan:
        return Plan(record_type, decoder=_Framed(), refuse_foreign=not self.force)

    def collect(self, batches: Iterator[list[Any]]) -> None:
        for _batch in batches:
            pass


def count_records(
    source: Source,
    record_type: Any = None,
    *,
    workers: int | None = None,
    blocksize: int | None = None,
    force: bool = False,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> int:
    """The number of records in ``source`` (anything :class:`~msgpack_reader_py.StreamingReader`
    reads), by framing alone: no value is decoded, so no record is checked against a type.
    Broken framing raises the reader's error (a truncated or corrupt stream, a record over
    ``max_record_size``), located as the reader locates it.

    With ``workers`` (``0``: one per core), a file is counted in byte ranges on that many
    processes, as :func:`~msgpack_reader_py.read_batches` reads one: ``record_type`` is
    then what tells a record's start in the middle of the file (an untyped count is not split);
    the count is the same; ``blocksize`` is the size of those ranges in bytes (default: eight
    per worker, 1 to 64 MiB each). ``options`` (a :class:`~msgpack_reader_py.ReadOptions`) and
    the keyword arguments are the reading options; a keyword given beside ``options`` takes the
    place of its own. A valid sidecar index (:mod:`.index`) of a file gives its count
    at once; only what the file gained since it was indexed is framed.

    Almost any bytes frame as values (JSON text is a stream of small integers), so a stream
    whose first bytes look like something other than MessagePack is refused with a
    ``DecodeError`` at record 0, as :class:`~msgpack_reader_py.ValueReader` refuses it;
    ``force=True`` counts it anyway.
    """
    read = ReadOptions.of(options, dict(keywords), "count_records()", to_the_end=True)
    index = load_index(source)
    splitting = Splitting(workers, blocksize)
    if index is None and splitting.applies(source, record_type, read):
        ranged = RangedRead(
            source,
            record_type,
            Counting(force),
            read,
            splitting=splitting,
        )
        try:
            for _piece in ranged.batches():
                pass
        finally:
            ranged.close()
        return ranged.index
    origin = (0, 0) if index is None else (index.count, index.end)
    return _framed(source, read, origin, force)


def origin_for(
    source: Source, start: int, options: ReadOptions, *, refuse_foreign: bool = False
) -> tuple[int, int]:
    """Where a reader of ``source`` that begins at record ``start`` can start framing: the
    index and offset of a record at or before it, known from a valid sidecar index of the
    file, or from a count of the same file, unchanged since, in this process; ``(0, 0)``
    when none is known. A read that ``refuse_foreign`` (untyped) refuses a file by its first
    bytes: one whose first bytes are not plainly MessagePack is framed from its start."""
    if not start or options.follow or not isinstance(source, (str, os.PathLike)):
        return 0, 0
    if refuse_foreign and not _plain_msgpack(source):
        return 0, 0
    index = load_index(source)
    if index is not None:
        return index.origin(start)
    identity = _identity(source)
    runs = None if identity is None else _COUNTED.get(identity)
    if not runs:
        return 0, 0
    at = bisect.bisect_right(runs, (start, _LAST)) - 1
    return runs[at] if at >= 0 else (0, 0)


def _plain_msgpack(path: str | os.PathLike[str]) -> bool:
    """Whether the file's first bytes look like nothing but MessagePack (not compressed, not
    another format): what a read from its start would see before its first record."""
    try:
        with open(path, "rb") as file:
            head = file.read(sniff.HEAD_SIZE)
    except OSError:
        return False  # the read itself says why
    return compression(head) is None and sniff.foreign(head) is None


_COUNTED: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
"""The index and offset of the first record of each run of the files counted lately, by the
file's identity (path, device, inode, size, modification time): a count is often followed by
a read from near its end (``tail``), which then frames nothing twice."""
_COUNTED_FILES = 4
_LAST = 1 << 62


def _identity(path: str | os.PathLike[str]) -> tuple[Any, ...] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (os.path.abspath(path), status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def _framed(source: Source, options: ReadOptions, origin: tuple[int, int], force: bool) -> int:
    """How many records ``source`` holds, by framing alone from ``origin`` (the index and
    offset of a record known to start there) on; for a file read as it is, where each run of
    records starts is kept (:data:`_COUNTED`)."""
    framing = Framing(source, options, origin, refuse_foreign=not force)
    runs = [origin, *((run.index, run.start) for run in framing.runs())]
    if isinstance(source, (str, os.PathLike)) and framing.chunks.compression is None:
        identity = _identity(source)
        if identity is not None:
            _COUNTED.pop(identity, None)
            _COUNTED[identity] = runs
            while len(_COUNTED) > _COUNTED_FILES:
                del _COUNTED[next(iter(_COUNTED))]
    return framing.framer.index
