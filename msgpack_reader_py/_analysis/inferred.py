"""Record types inferred for whole sources: from a sample, checked against every record, and
widened by any record that does not fit, so that nothing is ever dropped.

:func:`infer_sources` infers the types of the first records (:func:`~.infer.infer`), then
reads every record with those types, checked, in C: the inferred types refuse what they never
saw, at every depth (a key no class names, a value of another type, an array longer than its
record), so a record that holds anything new fails that check and is added to what the types
are inferred from, until every record fits. Reading a record typed costs about as much as
reading it untyped, and inferring from each value in Python several times more; so the whole
file is seen for the price of one more typed read.

A stream (stdin, a pipe, a socket) cannot be read twice: it is copied into a temporary file as
it is read, up to :data:`SPOOL_LIMIT` bytes (``infer_from="all"``: all of it), and that file
is read as a file is. Of a longer stream the types fit every record of the first
:data:`SPOOL_LIMIT` bytes; the rest is read with them, and a record there that does not fit is
an error naming it (the types refuse it), never a record read short. With ``infer_from=N`` the
types come from the first N records only, and the same holds after them.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import itertools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._base.checks import positive
from .._base.errors import ReaderError, TruncatedStreamError
from .._base.options import ReadKeywords, ReadOptions
from .._readers.streaming_reader import StreamingReader
from .._readers.values import ValueReader
from .._stream.sources import Source, Spooled
from .infer import InferenceError, Inferred, infer

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "FIRST_CHECKED",
    "MISFITS",
    "SPOOL_LIMIT",
    "InferFrom",
    "check_infer_from",
    "files_type",
    "infer_sources",
    "spool_limit_text",
    "table_type",
    "unseen",
]

InferFrom = int | Literal["all"] | None
"""Which records a type is inferred from: ``None``, every record (of a stream, its first
:data:`SPOOL_LIMIT` bytes); ``"all"``, every record of a stream too; ``N``, the first N."""

SPOOL_LIMIT = 256 * 1024 * 1024
"""How many bytes of a stream (stdin) are kept in a temporary file to infer its types from
every record, by default (``infer_from="all"``: no bound)."""

MISFITS = 100
"""How many records that do not fit are gathered in one check before the types are widened
and the check begins again: a file whose later records all differ costs one round, not one
decode a record."""

FIRST_CHECKED = 100
"""How many records the types are first inferred from before every record is checked:
inferring takes Python some microseconds a record, checking one in C a fraction of one, and
a record the first ones did not show is found by the check. Not a bound on what is seen."""

_CHECKED_AT_ONCE = 65536  # records checked between two looks at how many did not fit


def check_infer_from(infer_from: Any) -> None:
    """Refuse an ``infer_from`` that is not ``None``, ``"all"`` or a positive int."""
    positive("infer_from", infer_from, allowed=("all", None))


def infer_sources(
    sources: Sequence[Source],
    infer_from: InferFrom = None,
    *,
    flat: bool = False,
    force: bool = False,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> tuple[list[Source], Inferred]:
    """The record types of ``sources``' records (read in turn), and the sources to read them
    from again, from their start: a stream's bytes are kept (see the module's docstring).

    ``infer_from`` is :data:`InferFrom`; :attr:`~.infer.Inferred.records` counts the records
    the types were inferred from, ``checked`` those they were checked against, and ``every``
    says whether those were every record of the sources. ``flat`` is
    :func:`~.infer.infer`'s; ``force``, :class:`~.values.ValueReader`'s; the reading options
    are the readers'. Broken data ends what is seen: the types are inferred from the records
    before it, and :attr:`~.infer.Inferred.error` holds the reader's error, which reading the
    sources raises in its turn (it is raised at once where no record comes before it).
    Records that are not maps or arrays raise :class:`~msgpack_reader_py.InferenceError`.
    """
    check_infer_from(infer_from)
    read = ReadOptions.of(options, dict(keywords), "infer_sources()")
    read = dataclasses.replace(read, follow=False)
    every = not isinstance(infer_from, int)
    again = [
        source if _reopens(source) or not every else _spooled(source, infer_from)
        for source in sources
    ]
    sample = FIRST_CHECKED if every else infer_from
    assert isinstance(sample, int)
    seen: list[Any] = []
    error: ReaderError | None = None
    complete = True  # every source read to its end while sampling
    for number, source in enumerate(again):
        if len(seen) >= sample or error is not None:
            complete = False
            continue
        sampled = source if _reopens(source) else _Replayed(source)
        try:
            with ValueReader(_head(sampled), force=force, options=read) as values:
                seen.extend(itertools.islice(values, sample - len(seen)))
                complete = complete and next(values, _END) is _END
        except ReaderError as exc:
            error = _unless_cut(exc, sampled)
            complete = complete and error is None
        if isinstance(sampled, _Replayed):
            again[number] = sampled.rewind()
    if not seen and error is not None:
        raise error
    schema = _inferred(seen, flat, f"the first {len(seen)} records")
    schema.error = error
    if complete:
        schema.checked = schema.records
        schema.every = all(not isinstance(s, Spooled) or s.complete for s in again)
    elif every:
        schema = _widened(again, seen, schema, flat, read, force)
    return [s.whole() if isinstance(s, Spooled) else s for s in again], schema


_END: Any = object()


def spool_limit_text() -> str:
    """:data:`SPOOL_LIMIT` as a person reads it: ``256 MiB``."""
    mebibytes, rest = divmod(SPOOL_LIMIT, 1024 * 1024)
    return f"{mebibytes} MiB" if mebibytes and not rest else f"{SPOOL_LIMIT} bytes"


def unseen(infer_from: InferFrom) -> str:
    """What to add to the error of a record the types were not inferred from and do not hold
    (with ``infer_from``, or in a stream longer than :data:`SPOOL_LIMIT`)."""
    if isinstance(infer_from, int):
        which = f"the first {infer_from} records"
    else:
        which = f"the records of the first {spool_limit_text()} of a stream"
    return (
        f"; the record type was inferred from {which}, and does not hold this one: "
        "infer_from='all' infers it from every record"
    )


def files_type(files: Sequence[str], infer_from: InferFrom, options: ReadOptions) -> Any:
    """The record type of the columns of ``files``' records, inferred as ``convert`` infers it
    for Parquet: from every record, or, with ``infer_from=N``, the first N (a later record
    that does not fit is then refused where it is read)."""
    _, inferred = infer_sources(files, infer_from, options=options)
    return table_type(inferred)


def table_type(inferred: Inferred) -> Any:
    """The record type of the inferred records' columns: Structs that refuse unknown keys (a
    record the inference never saw is no record of them), a field whose values do not mix
    ``AnyValue`` (a column of JSON text, :func:`~msgpack_reader_py.arrow_schema`). Checked against
    every record already, its ``datetime`` fields are read in C, as declared ones are."""
    return inferred.record_type("struct", checked=True, columns=True, every=inferred.every)


def _reopens(source: Source) -> bool:
    """Whether ``source`` can be read again from its start (a path, bytes, a spooled
    stream)."""
    return isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview, Spooled))


def _spooled(stream: Any, infer_from: InferFrom) -> Spooled:
    return Spooled(stream, limit=None if infer_from == "all" else SPOOL_LIMIT)


def _head(source: Any) -> Any:
    """What of ``source`` the types are inferred from: a spooled stream's kept bytes."""
    return source.head() if isinstance(source, Spooled) else source


def _unless_cut(error: ReaderError, source: Any) -> ReaderError | None:
    """``error``, unless it is only where a spooled stream's kept bytes end (the stream goes
    on past them)."""
    cut = isinstance(source, Spooled) and not source.complete
    return None if cut and isinstance(error, TruncatedStreamError) else error


def _inferred(seen: list[Any], flat: bool, which: str) -> Inferred:
    try:
        return infer(seen, flat=flat)
    except InferenceError as exc:
        raise InferenceError(f"{exc} (in {which})") from None


def _widened(
    sources: Sequence[Source],
    seen: list[Any],
    schema: Inferred,
    flat: bool,
    read: ReadOptions,
    force: bool,
) -> Inferred:
    """``schema`` checked against every record of ``sources``, widened by those that do not
    fit it until every one does.

    A record that cannot be read untyped either (an ``ext_hook`` refused it) says nothing of
    the types: it is left out of the next checks, and, were it all that is left, the check
    ends there (the conversion raises its error, or skips and counts it, as asked)."""
    unreadable: set[tuple[int, int]] = set()
    error = schema.error
    while True:
        misfits, checked, broken = _misfits(sources, schema, read, unreadable)
        found = _records_at(sources, misfits, read, force) if misfits else {}
        unreadable.update(set(misfits) - set(found))
        if not found:
            schema.checked = checked
            schema.error = broken or error
            schema.every = broken is None and all(
                not isinstance(s, Spooled) or s.complete for s in sources
            )
            return schema
        seen.extend(found.values())
        which = f"{len(seen)} records, {len(found)} of them the first that did not fit"
        schema = _inferred(seen, flat, which)


def _misfits(
    sources: Sequence[Source],
    schema: Inferred,
    read: ReadOptions,
    unreadable: set[tuple[int, int]],
) -> tuple[list[tuple[int, int]], int, ReaderError | None]:
    """The first :data:`MISFITS` records that do not fit ``schema`` (but for those known to
    be ``unreadable``), as (source number, record index) pairs; how many records were
    checked; and the error of broken data that ended the check, if one did."""
    checked_type = schema.record_type("struct", checked=True)
    misfits: list[tuple[int, int]] = []
    checked = 0
    broken: ReaderError | None = None
    checking = dataclasses.replace(read, on_error="skip")
    for number, source in enumerate(sources):
        known = sum(n == number for n, _ in unreadable)
        with StreamingReader(_head(source), checked_type, options=checking) as reader:
            counted = itertools.count()  # zipped with the records: counts them in C
            try:
                while True:
                    # The records are dropped as they are made, a slice at a time, in C.
                    records = itertools.islice(reader, _CHECKED_AT_ONCE)
                    collections.deque(zip(records, counted, strict=False), maxlen=0)  # endless
                    if reader.skipped - known >= MISFITS or next(reader, _END) is _END:
                        break
                    next(counted)  # the record that next() took
            except ReaderError as exc:
                # Broken data: nothing after it can be read, and reading converts every
                # record before it, then raises this very error.
                broken = _unless_cut(exc, source)
            checked += next(counted) + reader.skipped
            new = [(number, e.index) for e in reader.errors if (number, e.index) not in unreadable]
            misfits.extend(new[: MISFITS - len(misfits)])
        if broken is not None or len(misfits) >= MISFITS:
            break
    return misfits, checked, broken


def _records_at(
    sources: Sequence[Source], where: list[tuple[int, int]], read: ReadOptions, force: bool
) -> dict[tuple[int, int], Any]:
    """The records at ``where`` ((source number, record index) pairs), as untyped values.

    A record that cannot be read untyped either (an ``ext_hook`` refused it) is left out: the
    conversion meets it in its turn, and raises its error after the records before it (or,
    with ``on_error="skip"``, passes over it and counts it)."""
    wanted: dict[int, set[int]] = collections.defaultdict(set)
    for number, index in where:
        wanted[number].add(index)
    found: dict[tuple[int, int], Any] = {}
    for number, indexes in wanted.items():
        last = max(indexes)
        skipping = dataclasses.replace(read, on_error="skip")
        with ValueReader(_head(sources[number]), force=force, options=skipping) as values:
            for yielded, value in enumerate(values):
                # A record skipped untyped keeps its index: counted before the next is taken.
                index = yielded + values.skipped
                if index in indexes:
                    found[number, index] = value
                if index >= last:
                    break
    return found


class _Replayed:
    """A stream read twice: first to sample its records, keeping what it gives; then, after
    :meth:`rewind`, the bytes kept followed by the rest of the stream."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._read = getattr(stream, "read1", None) or stream.read
        self._kept = bytearray()
        self._again: io.BytesIO | None = None

    @property
    def name(self) -> Any:
        """The stream's name, so that errors name it as the reader would."""
        return self._stream.name

    def read(self, size: int = -1) -> bytes:
        if self._again is not None:
            return self._again.read1(size) or bytes(self._read(size))
        data = bytes(self._read(size))
        self._kept += data
        return data

    def rewind(self) -> _Replayed:
        self._again = io.BytesIO(bytes(self._kept))
        self._kept = bytearray()
        return self
