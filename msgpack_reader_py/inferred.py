"""Record types inferred for whole sources: from a sample, checked against every record, and
widened by any record that does not fit, so that nothing is ever dropped.

:func:`infer_sources` infers the types of the first records (:func:`~.infer.infer`), then,
for sources that can be read again (paths and bytes), reads every record with those types,
checked, in C: a record with a key or a type the sample never showed fails that check, and is
added to what the types are inferred from, until every record fits. Reading a record typed
costs about as much as reading it untyped, and inferring from each value in Python several
times more; so the whole file is seen for the price of one more typed read. A stream (stdin) is
read once: its types come from its first records, kept and replayed, and a later record that
does not fit them is refused by the conversion (the types refuse unknown keys).
"""

from __future__ import annotations

import collections
import dataclasses
import io
import itertools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import ReaderError
from .infer import DEFAULT_SAMPLE, InferenceError, Inferred, infer
from .options import ReadKeywords, ReadOptions
from .sources import Source
from .streaming_reader import StreamingReader
from .values import ValueReader

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["FIRST_CHECKED", "MISFITS", "files_type", "infer_sources", "table_type"]

MISFITS = 100
"""How many records that do not fit are gathered in one check before the types are widened
and the check begins again: a file whose later records all differ costs one round, not one
decode a record."""

FIRST_CHECKED = 100
"""How many records the types of a whole file are first inferred from: inferring takes
Python some microseconds a record, checking one in C a fraction of one, and a record the
first ones did not show is found by the check."""

_CHECKED_AT_ONCE = 65536  # records checked between two looks at how many did not fit


def infer_sources(
    sources: Sequence[Source],
    sample: int | None = None,
    *,
    whole: bool = True,
    kinds: bool = True,
    force: bool = False,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> tuple[list[Source], Inferred]:
    """The record types of ``sources``' records (read in turn), and the sources to read again
    from their start: a stream, which cannot be reopened, replays the bytes read from it, then
    goes on.

    The types are inferred from the first ``sample`` records (default: :data:`FIRST_CHECKED`
    where the rest is checked, else :data:`~.infer.DEFAULT_SAMPLE`), then, with ``whole`` and
    when
    every source can be read again, checked against every record and widened until each fits
    (see the module's docstring); :attr:`~.infer.Inferred.records` counts the records they were
    inferred from and ``checked`` those they were checked against (``None``: not checked).
    ``kinds`` is :func:`~.infer.infer`'s; ``force``, :class:`~.values.ValueReader`'s; the
    reading options are the readers'. Broken data raises the reader's error; records that are
    not maps or arrays :class:`~msgpack_reader_py.infer.InferenceError`.
    """
    read = ReadOptions.of(options, dict(keywords), "infer_sources()")
    if sample is None:
        # Checked against every record anyway: a few are enough to begin with.
        sample = FIRST_CHECKED if whole and all(map(_reopens, sources)) else DEFAULT_SAMPLE
    seen: list[Any] = []
    again: list[Source] = []
    complete = True  # every source read to its end while sampling
    for source in sources:
        if len(seen) >= sample:
            again.append(source)
            complete = False
            continue
        sampled = source if _reopens(source) else _Kept(source)
        with ValueReader(sampled, force=force, options=read) as values:
            wanted = sample - len(seen)
            seen.extend(itertools.islice(values, wanted))
            complete = complete and next(values, _END) is _END
        again.append(sampled.rewind() if isinstance(sampled, _Kept) else sampled)
    schema = _inferred(seen, kinds, f"the first {len(seen)} records")
    if complete:
        schema.checked = schema.records
    elif whole and all(map(_reopens, again)):
        schema = _widened(again, seen, schema, kinds, read, force)
    return again, schema


_END: Any = object()


def files_type(
    files: Sequence[str], infer_from: int | None, options: ReadOptions, needs: str
) -> Any:
    """The record type of the columns of ``files``' records, inferred as ``convert`` infers it
    for Parquet: from every record, or, with ``infer_from``, the first N (a later record that
    does not fit is then refused where it is read). ``needs``: see :func:`table_type`."""
    _, inferred = infer_sources(files, infer_from, whole=infer_from is None, options=options)
    return table_type(inferred, needs)


def table_type(inferred: Inferred, needs: str | None = None) -> Any:
    """The record type of the inferred records' columns: structs that refuse unknown keys (a
    record the inference never saw is no record of them). ``needs`` names what needs one type
    per column (``"parquet"``, ``"Polars"``): where inferred values of a column do not mix, it
    raises :class:`~msgpack_reader_py.infer.InferenceError` saying which; ``None``, a column of
    mixed values is kept as it is."""
    mixed = [*inferred.mixed, *inferred.conflicts]
    if needs is not None and mixed:
        which = (
            f"the {inferred.checked} records"
            if inferred.checked is not None
            else f"the first {inferred.records} records"
        )
        raise InferenceError(
            f"{needs} needs one type per column, and in {which} "
            f"{'; '.join(mixed)} hold values of types that do not mix"
        )
    return inferred.record_type("struct", checked=True, columns=True)


def _reopens(source: Source) -> bool:
    """Whether ``source`` can be read again from its start (a path, or bytes)."""
    return isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview))


def _inferred(seen: list[Any], kinds: bool, which: str) -> Inferred:
    try:
        return infer(seen, kinds=kinds)
    except InferenceError as exc:
        raise InferenceError(f"{exc} (in {which})") from None


def _widened(
    sources: Sequence[Source],
    seen: list[Any],
    schema: Inferred,
    kinds: bool,
    read: ReadOptions,
    force: bool,
) -> Inferred:
    """``schema`` checked against every record of ``sources``, widened by those that do not
    fit it until every one does.

    A record that cannot be read untyped either (an ``ext_hook`` refused it) says nothing of
    the types: it is left out of the next checks, and, were it all that is left, the check
    ends there (the conversion raises its error, or skips and counts it, as asked)."""
    unreadable: set[tuple[int, int]] = set()
    while True:
        misfits, checked = _misfits(sources, schema, read, unreadable)
        if not misfits:
            schema.checked = checked
            return schema
        found = _records_at(sources, misfits, read, force)
        unreadable.update(set(misfits) - set(found))
        if not found:
            schema.checked = checked
            return schema
        seen.extend(found.values())
        which = f"{len(seen)} records, {len(found)} of them the first that did not fit"
        schema = _inferred(seen, kinds, which)


def _misfits(
    sources: Sequence[Source],
    schema: Inferred,
    read: ReadOptions,
    unreadable: set[tuple[int, int]],
) -> tuple[list[tuple[int, int]], int]:
    """The first :data:`MISFITS` records that do not fit ``schema`` (but for those known to
    be ``unreadable``), as (source number, record index) pairs, and how many records were
    checked."""
    checked_type = schema.record_type("struct", checked=True)
    misfits: list[tuple[int, int]] = []
    checked = 0
    checking = dataclasses.replace(read, on_error="skip", follow=False)
    for number, source in enumerate(sources):
        broken = False
        known = sum(n == number for n, _ in unreadable)
        with StreamingReader(source, checked_type, options=checking) as reader:
            counted = itertools.count()  # zipped with the records: counts them in C
            try:
                while True:
                    # The records are dropped as they are made, a slice at a time, in C.
                    records = itertools.islice(reader, _CHECKED_AT_ONCE)
                    collections.deque(zip(records, counted, strict=False), maxlen=0)  # endless
                    if reader.skipped - known >= MISFITS or next(reader, _END) is _END:
                        break
                    next(counted)  # the record that next() took
            except ReaderError:
                # Broken data: nothing after it can be read, and reading converts every
                # record before it, then raises this very error.
                broken = True
            checked += next(counted) + reader.skipped
            new = [(number, e.index) for e in reader.errors if (number, e.index) not in unreadable]
            misfits.extend(new[: MISFITS - len(misfits)])
        if broken or len(misfits) >= MISFITS:
            break
    return misfits, checked


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
        with ValueReader(sources[number], force=force, options=skipping) as values:
            for yielded, value in enumerate(values):
                # A record skipped untyped keeps its index: counted before the next is taken.
                index = yielded + values.skipped
                if index in indexes:
                    found[number, index] = value
                if index >= last:
                    break
    return found


class _Kept:
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

    def rewind(self) -> _Kept:
        self._again = io.BytesIO(bytes(self._kept))
        self._kept = bytearray()
        return self
