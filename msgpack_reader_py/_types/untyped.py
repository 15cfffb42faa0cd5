"""Values with no type, each exactly as the stream holds it (:class:`ValueDecoder`): what
``--type any`` reads, and what a field of :data:`~msgpack_reader_py.AnyValue` holds. msgpack
decodes them: maps become dicts, arrays lists, ``bin`` ``bytes``, the timestamp extension a
``msgpack.Timestamp`` exact to the nanosecond (a ``datetime`` holds microseconds), other
extensions ``msgspec.msgpack.Ext`` (or what ``ext_hook`` makes of them)."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Annotated, Any

import msgpack
import msgspec
from msgspec.msgpack import Ext

from .._base.ext import ExtHook
from .marks import Mark
from .messages import (
    INVALID_TIMESTAMP,
    MAP_AS_KEY,
    HookFailure,
    RecordFailure,
    guarded_hook,
    hook_name,
    invalid_utf8,
    is_bad_timestamp,
    is_map_as_key,
    is_wide_timestamp,
)
from .repeats import Repeated, one_value_per_key, repeat_failure

__all__ = ["AnyValue", "ValueDecoder", "any_value", "is_any_value", "undecodable"]


_EXACT = Mark("_EXACT", __name__)
"""Marks :data:`AnyValue` in its ``Annotated`` metadata."""

AnyValue = Annotated[Any, _EXACT]
"""A field of any value, each exactly as the stream holds it, as a read with no type gives it
(:class:`ValueDecoder`): a timestamp a ``msgpack.Timestamp`` to the nanosecond, where a field
of ``Any`` holds the ``datetime`` msgspec makes of it, rounded to the microsecond. Its column
is one of JSON text, as ``Any``'s. Inferred types give it to a field whose values have no one
type. Each value is decoded in Python (``Any``'s in C)."""


def is_any_value(annotation: Any) -> bool:
    """Whether ``annotation`` is :data:`AnyValue`."""
    if typing.get_origin(annotation) is not Annotated:
        return False
    return any(meta is _EXACT for meta in annotation.__metadata__)


def any_value(ext_hook: ExtHook | None) -> Callable[[Any], Any]:
    """The converter of an :data:`AnyValue` field, which msgspec decodes as ``msgspec.Raw``:
    the value the raw bytes hold, as a read with no type decodes it; a default (a key left
    out) as it is."""
    decode = ValueDecoder(ext_hook).decode_one

    def convert(value: Any) -> Any:
        return decode(value) if type(value) is msgspec.Raw else value

    return convert


_DECODE_FAILURES = (ValueError, TypeError, msgpack.UnpackException)


class ValueDecoder:
    """The decoder of a plan with no record type: each record as msgpack decodes it (see the
    module's docstring). ``ext_hook(code, data)`` turns extensions other than the timestamp
    into values; an exception it raises makes the record a ``RecordError``.
    :func:`~msgpack_reader_py.fluentd_event_time` gives the EventTime to the nanosecond here
    (its ``exact`` face)."""

    def __init__(self, ext_hook: ExtHook | None = None, *, refuse_repeats: bool = False) -> None:
        # A hook with an exact face (fluentd_event_time) gives its value to the nanosecond.
        exact = getattr(ext_hook, "exact", ext_hook)
        hook = Ext if exact is None else guarded_hook(exact, hook_name(ext_hook))
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


def undecodable(decode: Callable[[Any], Any], data: Any) -> RecordFailure | None:
    """Why ``data`` is not valid MessagePack, if it is not: decoded untyped by msgspec
    (``decode``), it fails; or, where msgspec stops at a valid timestamp that no ``datetime``
    holds, read without a type (:class:`ValueDecoder`), it fails after that timestamp."""
    try:
        decode(data)
    except UnicodeDecodeError as exc:
        reason = invalid_utf8(exc)
        cause: BaseException = exc
    except RecursionError as exc:
        reason, cause = "nesting deeper than the decoder allows", exc
    except msgspec.ValidationError as exc:
        if is_wide_timestamp(exc):
            return _undecodable_whole(data)
        if not is_bad_timestamp(exc):  # pragma: no cover - untyped: only these
            return None
        reason, cause = INVALID_TIMESTAMP, exc
    except msgspec.DecodeError as exc:
        if is_map_as_key(exc):
            return None  # valid MessagePack: a map as a map's key, which no dict holds
        # Framing took bytes for a whole record that the decoder finds cut off or broken.
        reason, cause = f"not valid MessagePack ({exc})", exc
    except (ValueError, TypeError):
        return None  # valid MessagePack, only not hashable where a map key is, or a value
        # (a timestamp past year 9999) only a typed decode refuses
    else:
        return None
    failure = RecordFailure(reason, decodable=False)
    failure.__cause__ = cause
    return failure


_VALUES = ValueDecoder()


def _undecodable_whole(data: Any) -> RecordFailure | None:
    try:
        _VALUES.decode_one(data)
    except RecordFailure as failure:
        return None if failure.decodable else failure
    return None
