"""The converters of fields that msgspec decodes as an extension, ``msgspec.msgpack.Ext``, for
the reader to make their values: a ``datetime`` with an ``ext_hook`` (:func:`hooked_datetime`),
a ``msgpack.Timestamp`` (:func:`hooked_timestamp`), and an inferred ``datetime`` that refuses a
timestamp it would round (:data:`WHOLE_MICROSECONDS`, :func:`whole_microseconds`). Each
refuses what is not its value with a :class:`~.messages.RecordFailure`, which names the record
and the field."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import msgpack
import msgspec
from msgspec.msgpack import Ext

from .._base.errors import describe
from .._base.ext import TIMESTAMP_CODE, ExtHook, rfc3339
from .marks import Mark
from .messages import HookFailure, RecordFailure, guarded_hook, hook_name

__all__ = [
    "WHOLE_MICROSECONDS",
    "hooked_datetime",
    "hooked_timestamp",
    "whole_microseconds",
]


def hooked_datetime(hook: ExtHook) -> Callable[[Any], Any]:
    """A ``datetime`` field decoded as the timestamp or an extension: ``hook`` makes the
    datetime of an extension (Fluentd's EventTime)."""
    guarded = guarded_hook(hook)

    def convert(value: Any) -> Any:
        if type(value) is not Ext:
            return value
        made = _made(guarded, value)
        if isinstance(made, datetime.datetime):
            return made
        raise RecordFailure(f"expected datetime, got {describe(made)}")

    return convert


def hooked_timestamp(
    hook: ExtHook | None, expected: str = "Timestamp"
) -> Callable[[Ext], msgpack.Timestamp]:
    """A ``msgpack.Timestamp`` field's converter: the timestamp extension (-1) read whole, to
    the nanosecond (msgspec reads it as a ``datetime``, rounded to the microsecond); where
    ``hook`` has an exact face (:func:`~msgpack_reader_py.fluentd_event_time`'s), the
    timestamp that makes of another extension (Fluentd's EventTime, to the nanosecond). Any
    other extension type, or a timestamp of a length the format does not have, is refused
    (``expected`` names what the field wants)."""
    face: ExtHook | None = getattr(hook, "exact", None)
    exact = None if face is None else guarded_hook(face, hook_name(hook))

    def convert(value: Ext) -> msgpack.Timestamp:
        if value.code == TIMESTAMP_CODE:
            return _timestamp(value, expected)
        if exact is not None:
            made = _made(exact, value)
            if isinstance(made, msgpack.Timestamp):
                return made
        raise RecordFailure(f"expected {expected}, got extension type {value.code}")

    return convert


def _timestamp(value: Ext, expected: str) -> msgpack.Timestamp:
    data = bytes(value.data)  # the object itself where it is bytes, as msgspec gives it
    try:
        if len(data) == _TIMESTAMP64:
            # What every encoder writes for seconds to the year 2514 with nanoseconds: read
            # here as one integer, a third faster than msgpack's from_bytes and its unpacking.
            packed = int.from_bytes(data, "big")
            return msgpack.Timestamp(packed & _SECONDS64, packed >> 34)
        return msgpack.Timestamp.from_bytes(data)
    except ValueError as exc:
        raise RecordFailure(
            f"expected {expected}, got a broken timestamp of {len(data)} bytes ({exc})"
        ) from exc


def _made(guarded: Callable[[int, memoryview | bytes], Any], value: Ext) -> Any:
    """What a guarded hook makes of the extension ``value``; what it raised, the field's
    failure."""
    try:
        return guarded(value.code, bytes(value.data))
    except HookFailure as exc:
        raise RecordFailure(exc.reason) from exc.__cause__


WHOLE_MICROSECONDS = Mark("WHOLE_MICROSECONDS", __name__)
"""``Annotated[datetime.datetime, WHOLE_MICROSECONDS]``: a ``datetime`` field that refuses a
timestamp whose nanoseconds it would round (:func:`whole_microseconds`), where msgspec rounds
them without a word. Inferred types are checked with it: a timestamp with nanoseconds makes
its field a ``msgpack.Timestamp``, never a rounded ``datetime``."""


def whole_microseconds(hook: ExtHook | None) -> Callable[[Ext], datetime.datetime]:
    """The converter of a ``WHOLE_MICROSECONDS`` datetime: the timestamp extension read whole
    (or, with ``hook``, what it makes of another extension: exact where it has an exact face,
    Fluentd's EventTime) and made the ``datetime`` msgspec makes of it, where its nanoseconds
    are whole microseconds; refused where they are not."""
    exact = hooked_timestamp(hook, "datetime")
    other = None if hook is None or hasattr(hook, "exact") else hooked_datetime(hook)

    def convert(value: Ext) -> datetime.datetime:
        data = bytes(value.data)  # the object itself where it is bytes, as msgspec gives it
        header = _HEADERS.get(len(data)) if value.code == TIMESTAMP_CODE else None
        if header is not None:
            # Whole microseconds: the datetime msgspec makes of the extension, made by msgspec
            # itself (a third of the cost of a Timestamp and its datetime; this runs for every
            # record an inferred type is checked against). Anything else is said below.
            nanoseconds = int.from_bytes(data[:4], "big") >> (2 if len(data) == 8 else 0)
            if len(data) == 4 or not nanoseconds % 1000:
                try:
                    made: datetime.datetime = _DATETIMES.decode(header + data)
                    return made
                except msgspec.MsgspecError:
                    pass
        if value.code != TIMESTAMP_CODE and other is not None:
            hooked: datetime.datetime = other(value)
            return hooked
        stamp = exact(value)
        text = rfc3339(stamp) or f"{stamp.to_unix_nano()} ns since the epoch"
        if stamp.to_unix_nano() % 1000:
            raise RecordFailure(
                f"expected datetime, got timestamp {text}, whose nanoseconds a datetime would round"
            )
        try:
            return stamp.to_datetime()
        except (OverflowError, ValueError):
            raise RecordFailure(
                f"holds the timestamp {text}, outside datetime's range (years 1 to 9999, to the "
                "microsecond)"
            ) from None

    return convert


_TIMESTAMP64 = 8
_HEADERS = {4: b"\xd6\xff", 8: b"\xd7\xff", 12: b"\xc7\x0c\xff"}  # each form's, by its size
_DATETIMES = msgspec.msgpack.Decoder(datetime.datetime)
_SECONDS64 = (1 << 34) - 1
