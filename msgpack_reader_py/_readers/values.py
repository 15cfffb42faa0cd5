"""Records with no record type: every value exactly as the stream holds it, and as text.

What the command line's ``--type any`` reads, dumps and infers columns from. msgpack decodes
each record (``msgpack.Unpacker`` already frames them): maps become dicts, arrays lists,
``bin`` ``bytes``, the timestamp extension a ``msgpack.Timestamp`` exact to the nanosecond
(a ``datetime`` holds microseconds), other extensions ``msgspec.msgpack.Ext``, as in the
typed reader's ``Any`` fields.

:class:`ValueReader` reads them with :class:`~msgpack_reader_py.StreamingReader`'s lifecycle,
framing and error contract; :mod:`.writers` writes them as JSON Lines and CSV.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgpack
from msgspec.msgpack import Ext

from .._base.ext import ExtHook
from .._base.options import ReadKeywords, ReadOptions
from .._stream.delivery import Batches, Plan
from .._stream.sources import Source
from .._types.messages import (
    INVALID_TIMESTAMP,
    MAP_AS_KEY,
    HookFailure,
    RecordFailure,
    guarded_hook,
    invalid_utf8,
)
from .._types.repeats import Repeated, one_value_per_key, repeat_failure
from .streaming_reader import SourceReader, chained, check_start

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ValueDecoder", "ValueReader", "values_plan"]


_DECODE_FAILURES = (ValueError, TypeError, msgpack.UnpackException)


class ValueDecoder:
    """The decoder of a plan with no record type: each record as msgpack decodes it (see the
    module's docstring). ``ext_hook(code, data)`` turns extensions other than the timestamp
    into values; an exception it raises makes the record a ``RecordError``.
    :func:`~msgpack_reader_py.fluentd_event_time` gives the EventTime to the nanosecond here
    (its ``exact`` face)."""

    def __init__(self, ext_hook: ExtHook | None = None, *, refuse_repeats: bool = False) -> None:
        # A hook with an exact face (fluentd_event_time) gives its value to the nanosecond.
        ext_hook = getattr(ext_hook, "exact", ext_hook)
        hook = Ext if ext_hook is None else guarded_hook(ext_hook)
        self._options: dict[str, Any] = {
            "timestamp": 0,
            "strict_map_key": False,
            "ext_hook": hook,
        }
        # forbid_repeated_keys: each map checked as it is made, in this one decode (1.5 times
        # as long), not decoded again as RepeatsRefused does for a typed plan (3 times).
        self.checks_repeats = refuse_repeats
        if refuse_repeats:
            self._options["object_pairs_hook"] = one_value_per_key

    build: Callable[[list[Any]], list[Any]] | None = None  # the values are the records

    def decode_run(self, data: Any) -> list[Any]:
        """The records of a run (an array header, then the records); ``RecordFailure`` if any
        of them cannot be decoded, without saying which."""
        try:
            values: list[Any] = msgpack.unpackb(data, **self._options)
        except (*_DECODE_FAILURES, HookFailure, Repeated) as exc:
            raise RecordFailure(str(exc)) from exc
        return values

    def decode_one(self, data: Any) -> Any:
        """One record; ``RecordFailure`` saying why it cannot be decoded."""
        try:
            return msgpack.unpackb(data, **self._options)
        except HookFailure as exc:
            raise RecordFailure(exc.reason) from exc.__cause__
        except Repeated:
            raise repeat_failure(data) from None
        except TypeError as exc:
            if "unhashable" not in str(exc):
                raise _untyped_failure(exc) from exc
        except _DECODE_FAILURES as exc:
            raise _untyped_failure(exc) from exc
        # An array used as a map key: arrays are read as tuples, which a dict can hold.
        try:
            return msgpack.unpackb(data, use_list=False, **self._options)
        except Repeated:
            raise repeat_failure(data) from None
        except TypeError as exc:  # valid MessagePack, and no Python value
            raise RecordFailure(MAP_AS_KEY) from exc


def _untyped_failure(exc: Exception) -> RecordFailure:
    """Why a record is not valid MessagePack, as the typed reader says it."""
    if isinstance(exc, UnicodeDecodeError):
        reason = invalid_utf8(exc)
    elif isinstance(exc, ValueError):  # the only value msgpack checks past framing
        reason = INVALID_TIMESTAMP
    else:
        reason = f"not valid MessagePack ({type(exc).__name__}: {exc})"
    return RecordFailure(reason, decodable=False)


def values_plan(options: ReadOptions, *, force: bool = False, batches: bool = False) -> Plan:
    """The plan of records read with no type: each as the value it is (``batches``: each run's
    as one list), a stream that looks foreign refused unless ``force``."""
    return Plan(
        Any,
        options,
        decoder=ValueDecoder(options.ext_hook, refuse_repeats=options.forbid_repeated_keys),
        convert=Batches() if batches else None,
        refuse_foreign=not force,
    )


class ValueReader(SourceReader[Any]):
    """Read each record of ``source`` as the value it is (see the module's docstring), with
    :class:`~msgpack_reader_py.StreamingReader`'s lifecycle, framing and error contract.

    With ``batches``, each item is a list: a read's records, as the text formats take them.
    ``ext_hook(code, data)`` turns extensions other than the timestamp into values
    (:func:`~msgpack_reader_py.fluentd_event_time` for Fluentd's EventTime, exact); an
    exception it raises is a ``RecordError``, which ``on_error="skip"`` passes over.
    ``options`` and the reading options are :class:`~msgpack_reader_py.StreamingReader`'s;
    ``forbid_unknown_keys`` has no fields to apply to here. ``start`` is the index of the first
    record read; the records before it are framed, not decoded (as
    :class:`~msgpack_reader_py.StreamingReader`'s ``start``).

    Untyped, almost any bytes are MessagePack: JSON or plain text reads as a stream of small
    integers. So a stream whose first bytes look like something else (JSON, text, UTF-16,
    Parquet, Arrow, zip, 7z, LZ4, snappy, or compressed data not being decompressed) is refused
    before its first record, with a :class:`~msgpack_reader_py.DecodeError` at record 0
    that says what it looks like; ``force=True`` reads its bytes anyway.
    """

    def __init__(
        self,
        source: Source,
        *,
        batches: bool = False,
        force: bool = False,
        start: int = 0,
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None:
        read = ReadOptions.of(options, dict(keywords), "ValueReader()")
        check_start(start)
        plan = values_plan(read, force=force, batches=batches)
        self._records = chained(self.open_batches(source, Any, plan, read, start=start))
