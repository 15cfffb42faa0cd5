"""Records found without decoding the ones before them: counting a stream's records, and
where a record starts, by framing alone (:mod:`.framing`: each record's size read from its
headers, no value built).

Framing checks what framing can: a stream cut off, bytes that are not MessagePack, a record
over ``max_record_size``. Records passed over are not checked against a record type: a
count counts values, whatever they hold.

>>> from msgpack_reader_py.seek import count_records
>>> count_records("telemetry.msgpack")  # doctest: +SKIP
2000000
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .delivery import Plan, named
from .errors import ReaderError
from .framing import Framer
from .options import ReadKeywords, ReadOptions, refuse_follow
from .ranges import RangedRead, split, worker_count
from .sources import Chunks, Source

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Counting", "count_records"]


class _Framed:
    """A run decoder that decodes nothing: framing alone."""

    build: Callable[[list[Any]], list[Any]] | None = None

    def decode_run(self, data: Any, /) -> list[Any]:
        return []

    def decode_one(self, data: Any, /) -> Any:  # pragma: no cover - decode_run never fails
        return None


class Counting:
    """A range job (:class:`~.ranges.RangeJob`) that counts: it decodes nothing, and the
    piece's ``count`` is the answer."""

    def plan(self, record_type: Any, options: ReadOptions) -> Plan:
        return Plan(record_type, decoder=_Framed())

    def collect(self, batches: Iterator[list[Any]]) -> None:
        for _batch in batches:
            pass


def count_records(
    source: Source,
    record_type: Any = None,
    *,
    workers: int | None = None,
    blocksize: int | None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> int:
    """The number of records in ``source`` (anything :class:`~msgpack_reader_py.StreamingReader`
    reads), by framing alone: no value is decoded, so no record is checked against a type.
    Broken framing raises the reader's error (a truncated or corrupt stream, a record over
    ``max_record_size``), located as the reader locates it.

    With ``workers`` (``0``: one per core), a file is counted in byte ranges on that many
    processes, as :func:`~msgpack_reader_py.arrow.read_batches` reads one: ``record_type`` is
    then what tells a record's start in the middle of the file (an untyped count is not split);
    the count is the same.
    """
    read = ReadOptions.of(options, dict(keywords), "count_records()")
    refuse_follow(read, "count_records()")
    if split(source, record_type, read, workers):
        ranged = RangedRead(
            source,
            record_type,
            Counting(),
            read,
            workers=worker_count(workers),
            blocksize=blocksize,
        )
        for _piece in ranged.batches():
            pass
        return ranged.index
    return _framed(source, read)


def _framed(source: Source, options: ReadOptions) -> int:
    """How many records ``source`` holds, by framing alone."""
    chunks = Chunks(source, options)
    framer = Framer(chunks, options.max_record_size, options.read_size)
    try:
        for _run in framer.runs():
            pass
    except ReaderError as exc:
        raise named(exc, chunks).with_traceback(exc.__traceback__) from exc.__cause__
    finally:
        chunks.close()
    return framer.index
