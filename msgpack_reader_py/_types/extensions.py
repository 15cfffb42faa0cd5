"""The converters of fields that msgspec decodes as an extension, ``msgspec.msgpack.Ext``, for
the reader to make their values: a ``datetime`` with an ``ext_hook`` (:func:`hooked_datetime`)
and a ``msgpack.Timestamp`` (:func:`exact_timestamp`). Each refuses what is not its value with
a :class:`~.messages.RecordFailure`, which names the record and the field."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import msgpack
from msgspec.msgpack import Ext

from .._base.errors import describe
from .._base.ext import TIMESTAMP_CODE, ExtHook
from .messages import RecordFailure

__all__ = ["exact_timestamp", "hooked_datetime"]


def hooked_datetime(hook: ExtHook) -> Callable[[Any], Any]:
    """A ``datetime`` field decoded as the timestamp or an extension: ``hook`` makes the
    datetime of an extension (Fluentd's EventTime)."""
    name = getattr(hook, "__qualname__", "ext_hook")

    def convert(value: Any) -> Any:
        if type(value) is not Ext:
            return value
        try:
            made = hook(value.code, bytes(value.data))
        except Exception as exc:
            raise RecordFailure(
                f"{name} refused extension type {value.code}: {type(exc).__name__}: {exc}"
            ) from exc
        if isinstance(made, datetime.datetime):
            return made
        raise RecordFailure(f"expected datetime, got {describe(made)}")

    return convert


def exact_timestamp(value: Ext) -> msgpack.Timestamp:
    """A ``msgpack.Timestamp`` field's value: the timestamp extension (-1) read whole, to the
    nanosecond (msgspec reads it as a ``datetime``, rounded to the microsecond); any other
    extension type, or a timestamp of a length the format does not have, is refused."""
    if value.code != TIMESTAMP_CODE:
        raise RecordFailure(f"expected Timestamp, got extension type {value.code}")
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
            f"expected Timestamp, got a broken timestamp of {len(data)} bytes ({exc})"
        ) from exc


_TIMESTAMP64 = 8
_SECONDS64 = (1 << 34) - 1
