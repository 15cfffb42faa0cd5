"""One file in pieces: byte ranges read apart (on many cores, on a cluster), with exactly the
records, order, counts and errors of a sequential read.

MessagePack has no sync marker, and almost any byte starts a valid value, so a reader that
starts in the middle of a file cannot know where a record starts. With a record type it can
*guess*: :func:`guess_start` finds the first offset of a range from which
:data:`GUESS_RECORDS` consecutive records decode as the type (typed decoding tells records
apart; untyped decoding does not, so untyped reads are not split). A range's reader
(:func:`read_range`) reads every record that *starts* before the range ends, reading past its
end to finish the last one, and says where its chain of records crossed the end (``stop``).

The guess is then *proved* (:class:`Proof`, in file order: :mod:`.parallel` for worker
processes, a chain of tasks on Dask): range 0 starts at 0; range ``i + 1``'s start
must be where range ``i``'s chain crossed into it. By induction every accepted start is a true
record boundary. Where a guess was wrong (a payload that embeds records of the same type, a
range inside one large record, a broken stretch of the file), the range is read again from the
proved offset, in the process that proves: guessing changes only speed, never results. An
error is raised only from a range whose start was proved, so it is the sequential read's own,
its ``offset`` and, counted across the ranges before it, its ``index``.

gzip, bzip2 and xz files cannot be entered in the middle: they are read as one range. Nor can
a zstd frame, but each frame of a zstd file is compressed apart from the others: a local zstd
file of several frames that each declare their size (:func:`~.compression.zstd_layout`) is
cut only where a frame starts, and its offsets are those of its decompressed bytes, as in a
sequential read. Each range's frames are checked to hold the bytes they declare as they are
read (:class:`~.compression.ZstdFrom`), so that its offsets are the file's. Bad compressed
data is where a split read could part from a sequential one: a sequential read hands over
what each read of its decompressor gives and drops what the read that fails gave, so it fails
up to a read (``read_size`` bytes) before the bad bytes, wherever its reads happened to fall.
So a range's reader decompresses ``read_size`` bytes past what its records took; where its
decompressor failed, the proof reads on from the range's proved start as a sequential read
does, from the file's start, the records before framed, not decoded.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import functools
import itertools
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any, Protocol, TypeVar

import msgpack
import msgspec

from .._base.checks import positive
from .._base.errors import ReaderError, RecordError
from .._base.options import ReadOptions
from .._stream.compression import (
    CompressedDataError,
    Compression,
    ZstdFrom,
    ZstdLayout,
    compression,
    zstd_layout,
    zstd_module,
)
from .._stream.delivery import Plan, RunDecoder, reading
from .._stream.framing import run_header, skipping
from .._types.decoding import RecordFailure, record_decoder
from .index import load_index

__all__ = [
    "GUESS_RECORDS",
    "ByteRange",
    "Flattened",
    "Piece",
    "Proof",
    "RangeArguments",
    "RangeJob",
    "RangeStats",
    "Records",
    "Seekable",
    "cut",
    "cut_file",
    "default_blocksize",
    "guess_start",
    "known_starts",
    "local_path",
    "read_range",
    "size_of",
    "splittable",
]

GUESS_RECORDS = 8
"""How many consecutive records must decode as the record type from an offset for it to be
guessed a record's start."""
GUESS_SCAN = 256 * 1024
"""How far into its range a guess looks for a record's start: a range with none that far in
(records larger than that, or a broken stretch) is read from its proved start instead."""
_GUESS_WINDOW = 4 * 1024 * 1024
"""The most bytes a guess decodes from one offset: the records of the chain it checks."""
_MIN_BLOCKSIZE = 1 << 20
_MAX_BLOCKSIZE = 64 << 20

_E = TypeVar("_E", bound=ReaderError)

FileSource = Any
"""A local path (``str`` or ``os.PathLike``), or an fsspec ``OpenFile``: what can be opened
again in each worker."""


@dataclasses.dataclass(frozen=True)
class ByteRange:
    """Bytes ``start`` to ``end`` (exclusive) of a file: its records are those that start
    there."""

    number: int
    start: int
    end: int
    known: bool = False
    """Whether a record is known to start at ``start`` (a sidecar index says so): the range is
    then read from there, with no guess."""
    entry: int | None = None
    """Where the range of a zstd file split at its frames begins: the file offset of the frame
    whose decompressed bytes start at ``start`` (``start`` and ``end`` are then offsets of the
    decompressed bytes)."""


def cut(
    size: int,
    blocksize: int,
    known: Sequence[int] = (),
    entries: Sequence[tuple[int, int]] = (),
) -> list[ByteRange]:
    """A file of ``size`` bytes cut into ranges of about ``blocksize`` bytes; one empty range
    for an empty file. Where offsets are ``known`` to start records (:mod:`.index`), a range
    ends at the last of them within ``blocksize`` of its start, so that the next one starts
    there, known. With ``entries`` (a zstd file's :attr:`~.compression.ZstdLayout.entries`,
    ``size`` its size decompressed), a range starts only where a frame does: it ends at the
    last frame start within ``blocksize`` of its start, or else at the next one."""
    positive("blocksize", blocksize)
    frames: dict[int, int] = {}
    for offset, at in entries:
        frames.setdefault(offset, at)
    marks = sorted(frames) if entries else sorted({at for at in known if 0 < at < size})
    ranges: list[ByteRange] = []
    start, is_known = 0, True  # the file's first record starts at 0
    while True:
        limit = start + blocksize
        at = bisect.bisect_right(marks, limit) - 1
        if at >= 0 and marks[at] > start:
            end, next_known = marks[at], not entries
        elif entries:  # a frame larger than blocksize: a range of its own
            after = bisect.bisect_right(marks, start)
            end, next_known = marks[after] if after < len(marks) else size, False
        else:
            end, next_known = min(limit, size), False
        ranges.append(ByteRange(len(ranges), start, end, is_known, frames.get(start)))
        if end >= size:
            return ranges
        start, is_known = end, next_known


def cut_file(
    source: FileSource,
    blocksize: int | None = None,
    workers: int = 1,
    *,
    decompress: bool = True,
) -> list[ByteRange]:
    """The ranges of a local file (a path) or an fsspec ``OpenFile`` (any URL fsspec opens),
    of about ``blocksize`` bytes each (default: :func:`default_blocksize` for ``workers``),
    cut at the records a valid sidecar index knows; a local zstd file of several frames that
    declare their size (unless ``decompress`` is false), at its frames, in its decompressed
    bytes."""
    # Only a local file's compression is asked: its answer is kept for the split read that
    # asked whether it could be split (splittable), and no remote file is split at frames.
    layout = _compressed(source)[1] if decompress and local_path(source) else None
    if isinstance(layout, ZstdLayout):
        chosen = blocksize or default_blocksize(layout.size, workers)
        return cut(layout.size, chosen, entries=layout.entries)
    size = size_of(source)
    chosen = blocksize or default_blocksize(size, workers)
    return cut(size, chosen, known_starts(source))


def default_blocksize(size: int, workers: int) -> int:
    """Eight ranges per worker (so that a slow one does not hold the rest back, and a reader
    that writes what it reads starts writing soon), each between 1 MiB and 64 MiB."""
    per = -(-size // (8 * max(workers, 1)))
    return max(_MIN_BLOCKSIZE, min(per, _MAX_BLOCKSIZE))


class RangeJob(Protocol):
    """What a worker makes of a range's records: a picklable value sent to each worker.

    ``plan`` says how the records are decoded and what is made of them (:mod:`.delivery`);
    ``collect`` takes the range's batches (it must exhaust them) and returns what is sent back.
    """

    def plan(self, record_type: Any, options: ReadOptions) -> Plan: ...

    def collect(self, batches: Iterator[list[Any]]) -> Any: ...


RangeArguments = tuple[Any, ReadOptions, RangeJob]
"""What :func:`read_range` takes after the source and the range: the record type, the
reading options and the job; what a proof passes on to read a range again."""


class Flattened:
    """What a job's plan made of each read, in one list (the records themselves, Arrow
    columns, text rows): the base of a :class:`RangeJob` whose plan says what to make."""

    def collect(self, batches: Iterator[list[Any]]) -> list[Any]:
        return [made for batch in batches for made in batch]


class Records(Flattened):
    """The records themselves, in a list."""

    def plan(self, record_type: Any, options: ReadOptions) -> Plan:
        return Plan(
            record_type,
            options,
        )


@dataclasses.dataclass
class Piece:
    """What reading one range gave, and where its chain of records runs."""

    range: ByteRange
    first: int | None
    """Where its first record starts; ``None`` where no record was found to start in it."""
    stop: int | None
    """Where its chain of records crossed its end: the next range's first record."""
    count: int
    """The records of its chain, skipped ones included (up to an error)."""
    value: Any
    """What the job made of its records."""
    skipped: int = 0
    errors: list[RecordError] = dataclasses.field(default_factory=list)
    error: ReaderError | None = None
    """The error its chain ended with; it ends the file's records."""
    guess_seconds: float = 0.0
    decompression_failed: bool = False
    """Whether its zstd frames failed to decompress (or held other than they declare): where
    a sequential read fails then depends on how its reads fell, so the proof reads on from its
    start as a sequential read does."""

    def where(self) -> Piece:
        """What a proof needs of the piece: where its records run, without them (a chain of
        tasks that proves the ranges then moves no records)."""
        return dataclasses.replace(self, value=None)


@dataclasses.dataclass
class RangeStats:
    """What a split read did: its ranges, how many were read again from a proved start
    (a wrong guess), and the slowest guess."""

    ranges: int = 0
    rereads: int = 0
    slowest_guess: float = 0.0


def splittable(source: Any, record_type: Any, options: ReadOptions) -> str | None:
    """Why ``source`` cannot be read in ranges (a phrase), or ``None`` when it can: a local
    file or an fsspec ``OpenFile``, read with a record type, not followed, not compressed."""
    if record_type is None or record_type is Any:
        return "untyped records cannot be told apart from the middle of a file"
    if options.follow:
        return "a followed file is read as it grows"
    if not isinstance(source, (str, os.PathLike)) and not hasattr(source, "fs"):
        return "only a file can be read in ranges"
    if options.decompress:
        kind, layout = _compressed(source)
        if isinstance(layout, ZstdLayout):
            return None
        if kind == "zstd":
            return f"a zstd file is split only at its frames, {layout or 'on a local disk'}"
        if kind is not None:
            return f"a {kind} file cannot be entered in the middle"
    return None


def _compressed(source: FileSource) -> tuple[Compression | None, ZstdLayout | str | None]:
    """What ``source`` is compressed with, and for a local zstd file, where it can be entered
    (:func:`~.compression.zstd_layout`) or why it cannot (a phrase)."""
    path = local_path(source)
    if path is None:
        with _opened(source) as stream:
            return compression(stream.read(6)), None
    status = os.stat(path)
    return _local_compression(path, status.st_size, status.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _local_compression(
    path: str, size: int, modified: int
) -> tuple[Compression | None, ZstdLayout | str | None]:
    """:func:`_compressed` of a local file by its path, its size and when it was last written:
    a split read asks whether the file can be split, then plans it, from one look at it."""
    with open(path, "rb") as stream:  # buffered: headers close together are read at once
        kind = compression(stream.read(6))
        if kind != "zstd":
            return kind, None
        if zstd_module() is None:
            return kind, "with the 'zstd' extra installed"
        layout = zstd_layout(stream, size)
    if isinstance(layout, str):
        return kind, f"and {layout}"
    if len(layout.entries) < 2:
        return kind, "and it holds one"
    return kind, layout


def read_range(
    source: FileSource,
    byte_range: ByteRange,
    record_type: Any,
    options: ReadOptions,
    job: RangeJob,
    first: int | None = None,
) -> Piece:
    """Read the records that start in ``byte_range`` of ``source``: from ``first`` (a proved
    record start), or from where :func:`guess_start` guesses the first one starts. Errors
    are kept in the piece, not raised: only a proved range's error is the file's. Offsets are
    the file's; indexes count from the range's first record."""
    guessed = 0.0
    if first is None and byte_range.known:
        first = byte_range.start
    with _opened(source, byte_range) as stream:
        if first is None and byte_range.start:
            began = time.perf_counter()
            decoder = record_decoder(
                record_type,
                ext_hook=options.ext_hook,
                forbid_unknown_keys=options.forbid_unknown_keys,
            )
            try:
                first = guess_start(stream, byte_range, decoder)
            except CompressedDataError:
                first = None  # read from the proved start, which fails as it should
            guessed = time.perf_counter() - began
        elif first is None:
            first = 0
        if first is None or (first >= byte_range.end and byte_range.end):
            empty = job.collect(iter(()))
            return Piece(byte_range, None, first, 0, empty, guess_seconds=guessed)
        until = byte_range.end or None
        piece = _chained(stream, byte_range, (record_type, options, job), (0, first), until)
        piece.guess_seconds = guessed
        if isinstance(stream, ZstdFrom):
            # A sequential read hands over what one read of its decompressor gives, and
            # drops it where that read fails: it may fail up to a read before the bad bytes.
            with contextlib.suppress(CompressedDataError):  # failed is set
                stream.look_ahead(options.read_size)
            piece.decompression_failed = stream.failed
    return piece


def _chained(
    stream: IO[bytes] | ZstdFrom,
    byte_range: ByteRange,
    arguments: RangeArguments,
    origin: tuple[int, int],
    until: int | None,
    start: int = 0,
) -> Piece:
    """The piece made of the chain of records of ``stream`` from the record ``origin`` (its
    index and offset) on, up to the last that starts before ``until`` (every one: ``None``):
    its records from the one with index ``start`` on, the ones before framed, not decoded."""
    record_type, options, job = arguments
    inflated = isinstance(stream, ZstdFrom)
    read = reading(
        stream,
        job.plan(record_type, options),
        options,
        start=start,
        origin=origin,
        until=until,
        as_is=_AS_IS if inflated else None,
    )
    framer, skip = read.framer, read.skip
    failure: list[ReaderError] = []
    value = job.collect(_until_failure(read.batches, failure))
    error = failure[0] if failure else None
    return Piece(
        byte_range,
        origin[1],
        framer.start,
        (framer.index if error is None else error.index) - start,
        value,
        skipped=0 if skip is None else skip.count,
        errors=[] if skip is None else skip.errors,
        error=error,
    )


_AS_IS = "a range is read as it is, or decompressed a frame at a time"


def _until_failure(batches: Iterable[Any], failure: list[ReaderError]) -> Iterator[list[Any]]:
    """The batches, ending where the data breaks: the error is kept in ``failure``."""
    try:
        yield from batches
    except ReaderError as exc:
        failure.append(exc)


class Seekable(Protocol):
    """What a range is read from: a file, or a zstd file's decompressed bytes."""

    def read(self, size: int = -1, /) -> bytes: ...

    def seek(self, offset: int, /) -> int: ...


def guess_start(stream: Seekable, byte_range: ByteRange, decoder: RunDecoder) -> int | None:
    """The first offset in ``byte_range`` (at most :data:`GUESS_SCAN` into it) from which
    :data:`GUESS_RECORDS` records, or every record to the end of the file, decode as the
    decoder's record type; ``None`` if there is none. A guess, proved by :class:`Proof`."""
    window = _Window(stream, byte_range.start)
    for at in range(byte_range.start, min(byte_range.end, byte_range.start + GUESS_SCAN)):
        if _chain_at(window, at, decoder):
            return at
    return None


class _Window:
    """The bytes of a file from ``base`` on, read as far as they are asked for."""

    def __init__(self, stream: Seekable, base: int) -> None:
        stream.seek(base)
        self._stream = stream
        self.base = base
        self.data = bytearray()
        self.ended = False

    def upto(self, end: int) -> int:
        """Read up to offset ``end`` if the file goes that far; where the bytes read end."""
        while self.base + len(self.data) < end and not self.ended:
            more = self._stream.read(max(end - self.base - len(self.data), 64 * 1024))
            if not more:
                self.ended = True
            self.data += more
        return self.base + len(self.data)


_CONTAINERS = frozenset([*range(0x80, 0xA0), 0xDC, 0xDD, 0xDE, 0xDF])
"""The first bytes of an array or a map: every record of a record type is one."""


def _chain_at(window: _Window, at: int, decoder: RunDecoder) -> bool:
    """Whether :data:`GUESS_RECORDS` records (or every record to the end of the file) start
    at ``at``, one after the other, and decode as the decoder's record type.

    Most offsets fail at their first byte, which starts no array or map. The rest are framed
    in a small window, and their complete records decoded; the window grows (to at most
    :data:`_GUESS_WINDOW`) only while what it holds decodes as records of the type.
    """
    base = window.base
    size = 1024
    while True:
        available = window.upto(at + size)
        if size == 1024 and window.data[at - base] not in _CONTAINERS:
            return False
        unpacker = msgpack.Unpacker(max_buffer_size=size, read_size=size)
        with memoryview(window.data) as data:
            unpacker.feed(data[at - base : at - base + size])
        ends: list[int] = []
        try:
            ends.extend(itertools.islice(skipping(unpacker.skip, unpacker.tell), GUESS_RECORDS))
        except msgpack.OutOfData:
            pass
        except (msgpack.UnpackException, ValueError):
            return False
        ended = available < at + size  # the window holds the rest of the file
        whole = len(ends) == GUESS_RECORDS or (ended and bool(ends) and at + ends[-1] == available)
        # The records framed so far, or the start of the first one, must decode as the type
        # (a record cut off by the window fails as malformed, not as the wrong type).
        count, end = (len(ends), ends[-1]) if ends else (1, min(size, available - at))
        chain = run_header(count) + bytes(window.data[at - base : at - base + end])
        try:
            decoder.decode_run(chain)
        except RecordFailure as failure:
            if ends or not _truncated(failure.__cause__):
                return False
        if whole:
            return True
        if ended or size >= _GUESS_WINDOW:
            return False
        size *= 4


def _truncated(cause: BaseException | None) -> bool:
    """Whether msgspec failed only for want of the rest of the bytes."""
    return type(cause) is msgspec.DecodeError and "truncated" in str(cause)


@dataclasses.dataclass(frozen=True)
class Proof:
    """Where the proved chain of records stands before a range: the offset of its next
    record, and how many records came before it."""

    offset: int = 0
    before: int = 0
    error: ReaderError | None = None
    """The error that ended the file's records before the range, if one did."""

    def settle(
        self,
        piece: Piece,
        source: FileSource,
        arguments: RangeArguments,
        stats: RangeStats | None = None,
    ) -> tuple[Piece, Proof]:
        """``piece`` if its start is the proved one, else its range read again from there;
        its indexes counted from the file's first record; and the proof after it. After an
        error, a range holds nothing but that error."""
        byte_range = piece.range
        if self.error is not None:
            empty = arguments[2].collect(iter(()))
            return Piece(byte_range, None, None, 0, empty, error=self.error), self
        if self.offset >= byte_range.end and byte_range.end:
            holds = piece.first is None  # a record from before covers the whole range
        else:
            holds = piece.first == self.offset
        if not holds:
            if stats is not None:
                stats.rereads += 1
            piece = read_range(source, byte_range, *arguments, first=self.offset)
        if piece.decompression_failed:
            if stats is not None:
                stats.rereads += 1
            piece = self._sequential(source, byte_range, arguments)
            assert piece.stop is not None
            return piece, Proof(piece.stop, self.before + piece.count, piece.error)
        if piece.first is None:
            piece.stop = self.offset
        if self.before:
            piece.errors = [_counted(error, self.before) for error in piece.errors]
            if piece.error is not None:
                piece.error = _counted(piece.error, self.before)
        if piece.error is not None:
            return piece, Proof(self.offset, self.before, piece.error)
        assert piece.stop is not None
        return piece, Proof(piece.stop, self.before + piece.count)

    def _sequential(
        self, source: FileSource, byte_range: ByteRange, arguments: RangeArguments
    ) -> Piece:
        """The file's records from the proved one to the file's end or error, as a sequential
        read gives them: decompressed from the file's start, the records before framed."""
        with _opened(source) as stream:
            piece = _chained(stream, byte_range, arguments, (0, 0), None, self.before)
        piece.first = self.offset
        return piece


def _counted(error: _E, before: int) -> _E:
    """``error`` with its index counted from the file's first record."""
    counted = type(error)(
        error.reason, index=error.index + before, offset=error.offset, source=error.source
    )
    counted.__cause__ = error.__cause__
    return counted


def known_starts(source: FileSource) -> list[int]:
    """Offsets a valid sidecar index of ``source`` (a local file) says start records."""
    index = load_index(local_path(source))
    return [] if index is None else index.starts()


def local_path(source: FileSource) -> str | None:
    """The path of a local file: ``source`` itself, or an fsspec file on the local disk."""
    if isinstance(source, (str, os.PathLike)):
        return os.fsdecode(source)
    if type(getattr(source, "fs", None)).__name__ == "LocalFileSystem":
        return str(source.path)
    return None


def _opened(source: FileSource, byte_range: ByteRange | None = None) -> IO[bytes] | ZstdFrom:
    """``source`` opened to be read; for a range of a zstd file split at its frames, its
    decompressed bytes from the range's first frame on."""
    if byte_range is not None and byte_range.entry is not None:
        path = local_path(source)
        assert path is not None  # only a local zstd file is split
        return ZstdFrom(open(path, "rb"), byte_range.entry, byte_range.start)
    if isinstance(source, (str, os.PathLike)):
        return open(os.fsdecode(source), "rb")
    opened: IO[bytes] = source.open()
    return opened


def size_of(source: FileSource) -> int:
    """The size of a local file or an fsspec file, in bytes."""
    if isinstance(source, (str, os.PathLike)):
        return os.path.getsize(source)
    return int(source.fs.size(source.path))
