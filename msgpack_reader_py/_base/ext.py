"""Ready ``ext_hook`` functions for extension types that real producers write, and the
timestamp extension as text.

An ``ext_hook`` is called as ``ext_hook(code, data)`` for each extension value other than the
MessagePack timestamp (-1, which becomes an aware UTC ``datetime``, or a ``msgpack.Timestamp``
exact to the nanosecond in a field of that type), where the record type accepts ``Any`` or
``datetime``; what it returns is the field's value.

>>> import datetime
>>> from msgpack_reader_py._base.ext import fluentd_event_time
>>> fluentd_event_time(0, b"\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x05")
datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=datetime.timezone.utc)
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import msgpack
from msgspec.msgpack import Ext

__all__ = [
    "EPOCH",
    "EVENT_TIME_CODE",
    "TIMESTAMP_CODE",
    "ExtHook",
    "event_time_parts",
    "fluentd_event_time",
    "rfc3339",
]

ExtHook = Callable[[int, bytes], Any]
"""``ext_hook(code, data) -> value``: what an extension type other than the timestamp becomes;
``data`` is the extension's ``bytes``, as msgpack hands them to its own ``ext_hook``."""

EVENT_TIME_CODE = 0
"""The extension type code of Fluentd's EventTime."""

TIMESTAMP_CODE = -1
"""The extension type code of the MessagePack timestamp."""

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class _FluentdEventTime:
    """Fluentd's EventTime (ext 0: big-endian uint32 seconds, then uint32 nanoseconds since the
    epoch) as an aware UTC ``datetime``; any other extension type as ``msgspec.msgpack.Ext``.

    Python's ``datetime`` holds microseconds: the nanoseconds are rounded to the nearest one
    (half up), as the reader rounds the timestamp extension. An
    EventTime that is not 8 bytes, or whose nanoseconds are not below 10**9, is refused with
    ``ValueError`` (the reader's ``RecordError``).

    Use it as ``StreamingReader(source, Entry, ext_hook=fluentd_event_time)`` for Fluentd's
    forward and buffer entries ``[time, {record}]``, with ``time: datetime`` in ``Entry``.
    Where records are read with no type (:class:`~msgpack_reader_py.ValueReader`, ``dump``)
    the same hook gives the EventTime to the nanosecond, as a ``msgpack.Timestamp``
    (:meth:`exact`), as the timestamp extension is given there.
    """

    def __init__(self) -> None:
        self.__qualname__ = self.__name__ = "fluentd_event_time"  # how messages name a hook

    def __call__(self, code: int, data: memoryview | bytes) -> datetime.datetime | Ext:
        if code != EVENT_TIME_CODE:
            return Ext(code, bytes(data))
        seconds, nanoseconds = event_time_parts(data)
        return EPOCH + datetime.timedelta(seconds=seconds, microseconds=(nanoseconds + 500) // 1000)

    @staticmethod
    def exact(code: int, data: memoryview | bytes) -> msgpack.Timestamp | Ext:
        """The EventTime as a ``msgpack.Timestamp``, exact; other codes as
        ``msgspec.msgpack.Ext``."""
        if code != EVENT_TIME_CODE:
            return Ext(code, bytes(data))
        return msgpack.Timestamp(*event_time_parts(data))

    def __reduce__(self) -> str:
        return "fluentd_event_time"  # one object, in every process too

    def __repr__(self) -> str:
        return "<ext_hook fluentd_event_time>"


fluentd_event_time = _FluentdEventTime()
"""Fluentd's EventTime as an aware UTC ``datetime`` (see :class:`_FluentdEventTime`)."""


def event_time_parts(data: memoryview | bytes) -> tuple[int, int]:
    """The seconds and nanoseconds of an EventTime's 8 bytes; ``ValueError`` if they are not
    an EventTime."""
    if len(data) != 8:
        raise ValueError(f"a Fluentd EventTime is 8 bytes, got {len(data)}")
    seconds = int.from_bytes(data[:4], "big")
    nanoseconds = int.from_bytes(data[4:], "big")
    if nanoseconds >= 1_000_000_000:
        raise ValueError(
            f"a Fluentd EventTime's nanoseconds must be below 10**9, got {nanoseconds}"
        )
    return seconds, nanoseconds


def rfc3339(timestamp: msgpack.Timestamp) -> str | None:
    """``timestamp`` as RFC 3339 text in UTC with nine fractional digits; ``None`` outside
    the years 1 to 9999, which RFC 3339 cannot write."""
    seconds, nanoseconds = divmod(timestamp.to_unix_nano(), 1_000_000_000)
    try:
        moment = EPOCH + datetime.timedelta(seconds=seconds)
    except OverflowError:
        return None
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{nanoseconds:09d}Z"
