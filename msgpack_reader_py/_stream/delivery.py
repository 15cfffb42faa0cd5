"""Delivery: the reading loop. Runs of framed records decoded and handed over, errors
located exactly, skip mode.

Each run's records (:mod:`.framing`) are decoded, typed and validated by one call of the plan's
decoder (:mod:`.decoding`), then handed over as a list (or, with a converter, as one converted
object, the Arrow columns of :mod:`.arrow`; or, with a ``mapper``, as its results). Only a run
that fails is decoded again record by record, to name the first bad record, its index, offset
and field path; with ``on_error="skip"`` a record that is not of the type is logged and passed
over instead. Every error is named after its source, and the stream's first record's error
says what the stream looks like when it is not MessagePack.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Generator, Iterator
from typing import Any, Protocol, TypeVar

from .._base.errors import DecodeError, ReaderError, RecordError
from .._base.options import ReadOptions
from .._types.decoding import RecordFailure, record_decoder
from .._types.repeats import RepeatsRefused
from . import sniff
from .framing import HEAD_SIZE, Framer, Run, too_large
from .pending import Pending
from .sources import Chunks, ChunkSource, Source
from .wire import declared_excess

__all__ = [
    "FORCE",
    "KEPT_ERRORS",
    "BatchConverter",
    "Batches",
    "Framing",
    "Plan",
    "Reading",
    "RunDecoder",
    "SkipLog",
    "framed",
    "named",
    "reading",
    "records",
]

_CONVERSION_ERRORS = (TypeError, ValueError, KeyError, IndexError)
_E = TypeVar("_E", bound=ReaderError)
_BUILT = 256
"""The most records built at once of a run's decoded values (``RunDecoder.build``). Python's
garbage collector scans its youngest objects each time 700 more were made than freed (its
default threshold): a run's records built at once, about 1170 on the reference data's
64 KiB reads, made it collect about 8 times per 10000 records, scanning the runs' records, at a
cost like that of decoding them. A few hundred at a time are handed over and, in a loop
that keeps none, freed before the count gets there."""


class BatchConverter(Protocol):
    """Turns a whole batch of records (tuples of field values) into one object, in C."""

    refusals: tuple[type[Exception], ...]
    """What converting a batch raises when a record in it cannot be converted."""

    def __call__(self, values: list[Any], /) -> Any: ...

    def first_refused(self, values: list[Any], /) -> tuple[int, str] | None:
        """The position of the first record it refuses and why; ``None`` if it takes each."""
        ...


class RunDecoder(Protocol):
    """Decodes runs of records in one call; a record at a time only to locate a failure."""

    build: Callable[[list[Any]], list[Any]] | None
    """Makes records of what ``decode_run`` returns, if that is not records yet."""

    def decode_run(self, data: Any, /) -> list[Any]: ...

    def decode_one(self, data: Any, /) -> Any: ...


_DEFAULTS = ReadOptions()


class Plan:
    """How each run of records is decoded (as ``record_type``, with the ``ext_hook``,
    ``forbid_unknown_keys`` and ``forbid_repeated_keys`` of ``options``), and what is made of
    the decoded records.

    ``decoder`` replaces the record type's own (:func:`~.decoding.record_decoder`): the
    untyped values of :mod:`.values`. With ``refuse_foreign``, a stream whose first bytes
    look like something other than MessagePack (JSON, text, Parquet, ...: :func:`.sniff.foreign`)
    is refused before its first record: read untyped, such bytes would pass for values."""

    def __init__(
        self,
        record_type: Any,
        options: ReadOptions | None = None,
        *,
        mapper: Callable[[Any], Any] | None = None,
        convert: BatchConverter | None = None,
        decoder: RunDecoder | None = None,
        refuse_foreign: bool = False,
    ) -> None:
        self.mapper = mapper
        self.convert = convert
        self.refuse_foreign = refuse_foreign
        options = options or _DEFAULTS
        decoded_as = Any if mapper is not None else record_type
        if decoder is None:
            decoder = record_decoder(
                decoded_as,
                ext_hook=options.ext_hook,
                forbid_unknown_keys=options.forbid_unknown_keys,
                values=convert is not None,
            )
        if options.forbid_repeated_keys and not getattr(decoder, "checks_repeats", False):
            decoder = RepeatsRefused(decoder, decoded_as)
        self.decoder: RunDecoder = decoder


class Batches:
    """A batch converter that converts nothing: each run's records handed over as one list,
    for consumers that take records a batch at a time (the text formats)."""

    refusals: tuple[type[Exception], ...] = ()

    def __call__(self, values: list[Any], /) -> list[Any]:
        return values

    def first_refused(self, values: list[Any], /) -> tuple[int, str] | None:  # pragma: no cover
        return None  # refuses nothing: never asked


KEPT_ERRORS = 100
"""How many skipped records' errors are kept, in order."""


class SkipLog:
    """What ``on_error="skip"`` passed over: a count, and the first ``keep`` errors."""

    def __init__(self, keep: int = KEPT_ERRORS) -> None:
        self.count = 0
        self.errors: list[RecordError] = []
        self.keep = keep
        self.chunks: ChunkSource | None = None  # set by records(): errors kept name the source

    @classmethod
    def of(cls, options: ReadOptions) -> SkipLog | None:
        """A log where ``options`` skip records that are not of the type; ``None`` else."""
        return cls() if options.on_error == "skip" else None

    def add(self, error: RecordError) -> None:
        self.count += 1
        if len(self.errors) < self.keep:
            self.errors.append(error if self.chunks is None else named(error, self.chunks))


def framed(
    source: Source,
    options: ReadOptions,
    *,
    origin: tuple[int, int] = (0, 0),
    until: int | None = None,
    as_is: str | None = None,
    blocking: bool = True,
    tap: Callable[[Chunks], ChunkSource] | None = None,
) -> tuple[Chunks, Framer]:
    """The start of every reading pipeline: ``source`` as chunks (:class:`~.sources.Chunks`),
    and their framer, from the record ``origin`` (its index and offset) on, up to the last
    record that starts before ``until``. ``tap`` wraps the chunks the framer reads (to keep
    the bytes a failing record is made of)."""
    chunks = Chunks(source, options, blocking=blocking, as_is=as_is, offset=origin[1])
    framer = Framer(chunks if tap is None else tap(chunks), options, origin=origin, until=until)
    return chunks, framer


@dataclasses.dataclass
class Reading:
    """A source being read: its :func:`framed` records, what ``on_error="skip"`` passed over,
    and the batches of what the plan makes of them (:func:`records`)."""

    chunks: Chunks
    framer: Framer
    skip: SkipLog | None
    batches: Generator[list[Any] | Pending, None, None]


def reading(
    source: Source,
    plan: Plan,
    options: ReadOptions,
    *,
    start: int = 0,
    origin: tuple[int, int] = (0, 0),
    until: int | None = None,
    as_is: str | None = None,
    blocking: bool = True,
) -> Reading:
    """The reading pipeline every reader, every byte range and every worker builds: source,
    framing, decoding and delivery, made once with ``options`` whole (the records before the
    one with index ``start`` framed, not decoded; see :func:`framed` for the rest)."""
    chunks, framer = framed(
        source, options, origin=origin, until=until, as_is=as_is, blocking=blocking
    )
    skip = SkipLog.of(options)
    return Reading(chunks, framer, skip, records(chunks, framer, plan, options, skip, start))


def records(
    chunks: ChunkSource,
    framer: Framer,
    plan: Plan,
    options: ReadOptions,
    skip: SkipLog | None = None,
    start: int = 0,
) -> Generator[list[Any] | Pending, None, None]:
    """Yield the records ``framer`` frames of ``chunks`` in lists, one or more per run (or the
    converter's objects, a list of one each); raise a located ``ReaderError`` for broken data,
    after the records before it. ``itertools.chain.from_iterable`` makes them one stream of records:
    then a record costs no generator step.

    With ``skip``, records that are valid MessagePack but not records of the type
    (``RecordError``) are passed over and logged there instead of raised. A :class:`Pending`
    from the chunks is yielded as it is. The records before the one with index ``start`` are
    framed and passed over, none of them decoded.
    """
    max_record_size = options.max_record_size
    decode_run = plan.decoder.decode_run
    build = plan.decoder.build
    refuse_foreign = plan.refuse_foreign
    if skip is not None:
        skip.chunks = chunks
    try:
        for run in framer.runs():
            if not isinstance(run, Run):
                yield run
                continue
            if refuse_foreign and run.index == 0:
                _refuse_foreign(chunks)
            if run.index < start:
                if run.index + run.count <= start:
                    continue
                run = run.after(start - run.index)
            try:
                values = decode_run(run.data)
            except RecordFailure:
                yield from _one_by_one(run, plan, skip, max_record_size)
                continue
            if build is not None:
                yield from _built(build, values, run, plan, skip, max_record_size)
            elif plan.convert is None and plan.mapper is None:
                yield values
            else:
                yield from _delivered(plan, values, functools.partial(_shifted, run, 0), skip)
            # Freed now, not when the next run's are assigned: one run's objects are alive at a
            # time, not two, and the next run's are made in the memory these free.
            del values
    except ReaderError as exc:
        # Where errors get the source's name (as above), and the first record's error a word
        # on what the stream looks like: nothing is paid for it per record.
        renamed = named(exc, chunks)
        if renamed is exc:
            raise
        raise renamed.with_traceback(exc.__traceback__) from exc.__cause__
    finally:
        chunks.close()


def _shifted(run: Run, first: int, position: int) -> tuple[int, int]:
    return run.where(first + position)


def _built(
    build: Callable[[list[Any]], list[Any]],
    values: list[Any],
    run: Run,
    plan: Plan,
    skip: SkipLog | None,
    max_record_size: int,
) -> Generator[list[Any], None, None]:
    """The records built of a run's decoded ``values``, at most ``_BUILT`` at a time; from a
    slice the record type refuses, the run's records one by one."""
    for at in range(0, len(values), _BUILT):
        try:
            # Not kept in a local: the records handed over before are freed as they are taken.
            yield build(values[at : at + _BUILT])
        except RecordFailure:  # noqa: PERF203 - one try per 256 records
            yield from _one_by_one(run, plan, skip, max_record_size, at)
            return


def _one_by_one(
    run: Run, plan: Plan, skip: SkipLog | None, max_record_size: int, first: int = 0
) -> Generator[list[Any], None, None]:
    """A run with a bad record: decoded record by record from position ``first`` on, so that
    the first bad one is named with its field path, after the records before it were handed
    over (or, with ``skip``, logged and passed over, the rest handed over)."""
    decode_one = plan.decoder.decode_one
    good: list[Any] = []
    # ``first`` is the position of good[0] in the run from here on
    for position in range(first, len(run)):
        try:
            good.append(decode_one(run.record(position)))
            continue
        except RecordFailure as failure:
            index, offset = run.where(position)
            error: ReaderError = (RecordError if failure.decodable else DecodeError)(
                str(failure), index=index, offset=offset
            )
            if not failure.decodable:
                # msgpack's skip takes a length it overflows (ext32 0xffffffff) for a whole
                # value: what the record declares says what is really wrong.
                excess = declared_excess(run.record(position)[:HEAD_SIZE], max_record_size)
                if excess is not None:
                    over = f"{excess}, over max_record_size={max_record_size}"
                    error = too_large(over, index, offset)
            cause = failure.__cause__
        yield from _delivered(plan, good, functools.partial(_shifted, run, first), skip)
        if skip is None or not isinstance(error, RecordError):
            raise error from cause
        skip.add(error)
        good = []
        first = position + 1
    yield from _delivered(plan, good, functools.partial(_shifted, run, first), skip)


def _delivered(
    plan: Plan,
    values: list[Any],
    where: Callable[[int], tuple[int, int]],
    skip: SkipLog | None,
) -> Generator[list[Any], None, None]:
    """What the plan makes of decoded records, in lists: the records themselves, the
    converter's batches, or the mapper's results. A record the converter or mapper refuses is
    located (``where(position)`` is its index and offset) and raised, or, with ``skip``,
    logged."""
    if not values:
        return
    if plan.convert is not None:
        yield from _converted(plan.convert, values, where, skip)
    elif plan.mapper is not None:
        yield from _mapped(plan.mapper, values, where, skip)
    else:
        yield values


def _mapped(
    mapper: Callable[[Any], Any],
    values: list[Any],
    where: Callable[[int], tuple[int, int]],
    skip: SkipLog | None,
) -> Generator[list[Any], None, None]:
    mapped: list[Any] = []
    pending = iter(values)
    failure: Exception | None = None
    while failure is None:
        try:
            mapped.extend(map(mapper, pending))
            break
        except _CONVERSION_ERRORS as exc:
            position = len(values) - operator.length_hint(pending) - 1
            name = getattr(mapper, "__qualname__", "the mapper")
            reason = f"cannot build a record with {name}: {type(exc).__name__}: {exc}"
            index, offset = where(position)
            error = RecordError(reason, index=index, offset=offset)
            error.__cause__ = exc
            if skip is None:
                failure = error
            else:
                skip.add(error)  # and go on with the rest of the batch
        except Exception as exc:  # noqa: BLE001 - raised below, after the records before it
            failure = exc  # a bug of the mapper's own, not bad data: raised as it is
    # The records mapped before a failure are handed over before it is raised.
    if mapped:
        yield mapped
    if failure is not None:
        raise failure


FORCE = "force=True"
"""How a refusal of foreign-looking input names the option that reads it anyway."""


class Framing:
    """A source framed alone (:mod:`.framing`), no value decoded: its runs, from ``origin``
    (the index and offset of a record known to start there), with the reading loop's errors
    (named after the source) and, with ``refuse_foreign``, its refusal of a stream that looks
    like something other than MessagePack. What counting and indexing read."""

    def __init__(
        self,
        source: Source,
        options: ReadOptions,
        origin: tuple[int, int] = (0, 0),
        *,
        refuse_foreign: bool = False,
        tap: Callable[[Chunks], ChunkSource] | None = None,
    ) -> None:
        self.chunks, self.framer = framed(source, options, origin=origin, tap=tap)
        self._refuse_foreign = refuse_foreign

    def runs(self) -> Iterator[Run]:
        """The source's runs of records; the source closed when they end or fail."""
        chunks = self.chunks
        try:
            for run in self.framer.runs():
                if not isinstance(run, Run):  # pragma: no cover - a Framing's source is sync
                    continue
                if self._refuse_foreign and run.index == 0:
                    _refuse_foreign(chunks)
                yield run
        except ReaderError as exc:
            raise named(exc, chunks).with_traceback(exc.__traceback__) from exc.__cause__
        finally:
            chunks.close()


def _refuse_foreign(chunks: ChunkSource) -> None:
    """Refuse a stream whose first bytes look like something other than MessagePack."""
    hint = sniff.foreign(chunks.head, chunks.as_is)
    if hint is not None:
        reason = (
            f"{hint}; read untyped, its bytes would pass for small integers and other values, "
            f"so it is refused ({FORCE} reads it anyway)"
        )
        raise DecodeError(reason, index=0, offset=0)


def named(error: _E, chunks: ChunkSource) -> _E:
    """``error`` naming the source, and, for the stream's first record, what the stream looks
    like when that is not MessagePack; ``error`` itself when there is nothing to add."""
    hint = sniff.foreign(chunks.head, chunks.as_is) if error.index == 0 else None
    if hint is not None and error.reason.startswith(hint):
        hint = None  # the refusal of foreign input, which says it already
    if hint is None and (chunks.source is None or error.source is not None):
        return error
    reason = error.reason if hint is None else f"{error.reason}; {hint}"
    source = error.source or chunks.source
    return type(error)(reason, index=error.index, offset=error.offset, source=source)


def _converted(
    convert: BatchConverter,
    values: list[Any],
    where: Callable[[int], tuple[int, int]],
    skip: SkipLog | None,
) -> Generator[list[Any], None, None]:
    """``values`` converted in as few calls as the converter allows. A record it refuses is
    located (``where(position)`` is its index and offset) and raised after the records before
    it were converted, or, with ``skip``, logged and passed over."""
    start = 0
    while start < len(values):
        rest = values if start == 0 else values[start:]
        try:
            converted = convert(rest)
        except convert.refusals as exc:
            found = convert.first_refused(rest)
            if found is None:  # pragma: no cover - a converter that refuses a batch of records
                raise  # it takes one by one has a bug of its own: let its exception show it
            position, reason = found
            cause: Exception = exc
        else:
            yield [converted]
            return
        if position:
            yield [convert(rest[:position])]
        record_index, offset = where(start + position)
        error = RecordError(reason, index=record_index, offset=offset)
        if skip is None:
            raise error from cause
        skip.add(error)
        start += position + 1
