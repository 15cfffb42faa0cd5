"""Records with no record type: every value exactly as the stream holds it, and as text.

What the command line's ``--type any`` reads, dumps and infers columns from. msgpack decodes
each record (``msgpack.Unpacker`` already frames them): maps become dicts, arrays lists,
``bin`` ``bytes``, the timestamp extension a ``msgpack.Timestamp`` exact to the nanosecond
(a ``datetime`` holds microseconds), other extensions ``msgspec.msgpack.Ext``, as in the
typed reader's ``Any`` fields.

Rendered as JSON (:class:`JsonLines`, :func:`json_text`):

- maps are objects; a key that is not a string becomes its JSON text (``1`` -> ``"1"``,
  ``true`` -> ``"true"``, ``[1, 2]`` -> ``"[1,2]"``), a bin or timestamp key the string it
  renders as;
- arrays are arrays; ``bin`` is base64 text;
- the timestamp extension is RFC 3339 text in UTC with nine fractional digits
  (``"2024-10-31T11:36:26.108998696Z"``), or, outside the years 1 to 9999, an extension
  object like any other;
- any other extension is ``{"ext": CODE, "base64": "..."}``;
- NaN and the infinities are ``null`` (strict JSON, as RFC 8259 wants), or, with
  ``allow_nan``, ``NaN``, ``Infinity`` and ``-Infinity`` as Python's ``json`` writes them.

Typed records render the same way: a record is an object keyed by its fields' names, a
``datetime`` RFC 3339 text (to the microsecond), an ``Enum`` its value.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

import msgpack
import msgspec
from msgspec.msgpack import Ext

from .decoder import Batches, Plan
from .engine import (
    INVALID_TIMESTAMP,
    ExtHook,
    HookFailure,
    RecordFailure,
    guarded_hook,
    invalid_utf8,
)
from .ext import EVENT_TIME_CODE, event_time_parts, fluentd_event_time, rfc3339
from .streaming_reader import (
    DEFAULT_MAX_RECORD_SIZE,
    DEFAULT_READ_SIZE,
    OnError,
    Source,
    SourceReader,
    chained,
)

__all__ = [
    "JsonLines",
    "ValueDecoder",
    "ValueReader",
    "event_time",
    "json_text",
    "rfc3339",
    "text_cell",
]

_DECODE_FAILURES = (ValueError, TypeError, msgpack.UnpackException)


def event_time(code: int, data: memoryview | bytes) -> Any:
    """An ``ext_hook`` for untyped values: Fluentd's EventTime (ext 0: big-endian uint32
    seconds, uint32 nanoseconds) as a ``msgpack.Timestamp``, exact; other codes as
    ``msgspec.msgpack.Ext``. A malformed EventTime raises ``ValueError``."""
    if code != EVENT_TIME_CODE:
        return Ext(code, bytes(data))
    return msgpack.Timestamp(*event_time_parts(data))


class ValueDecoder:
    """The decoder of a plan with no record type: each record as msgpack decodes it (see the
    module's docstring). ``ext_hook(code, data)`` turns extensions other than the timestamp
    into values; an exception it raises makes the record a ``RecordError``.
    :func:`~msgpack_reader_py.ext.fluentd_event_time`, the typed readers' hook, is read as
    :func:`event_time`: the same EventTime, to the nanosecond."""

    def __init__(self, ext_hook: ExtHook | None = None) -> None:
        if ext_hook is fluentd_event_time:
            ext_hook = event_time
        hook = Ext if ext_hook is None else guarded_hook(ext_hook)
        self._options: dict[str, Any] = {
            "timestamp": 0,
            "strict_map_key": False,
            "ext_hook": hook,
        }

    build: Callable[[list[Any]], list[Any]] | None = None  # the values are the records

    def decode_run(self, data: Any) -> list[Any]:
        """The records of a run (an array header, then the records); ``RecordFailure`` if any
        of them cannot be decoded, without saying which."""
        try:
            values: list[Any] = msgpack.unpackb(data, **self._options)
        except (*_DECODE_FAILURES, HookFailure) as exc:
            raise RecordFailure(str(exc)) from exc
        return values

    def decode_one(self, data: Any) -> Any:
        """One record; ``RecordFailure`` saying why it cannot be decoded."""
        try:
            return msgpack.unpackb(data, **self._options)
        except HookFailure as exc:
            raise RecordFailure(exc.reason) from exc.__cause__
        except TypeError as exc:
            if "unhashable" not in str(exc):
                raise _undecodable(exc) from exc
        except _DECODE_FAILURES as exc:
            raise _undecodable(exc) from exc
        # An array used as a map key: arrays are read as tuples, which a dict can hold.
        return msgpack.unpackb(data, use_list=False, **self._options)


def _undecodable(exc: Exception) -> RecordFailure:
    """Why a record is not valid MessagePack, as the typed reader says it."""
    if isinstance(exc, UnicodeDecodeError):
        reason = invalid_utf8(exc)
    elif isinstance(exc, ValueError):  # the only value msgpack checks past framing
        reason = INVALID_TIMESTAMP
    else:
        reason = f"not valid MessagePack ({type(exc).__name__}: {exc})"
    return RecordFailure(reason, decodable=False)


def _ext(code: int, data: bytes) -> dict[str, Any]:
    return {"ext": code, "base64": base64.b64encode(data).decode("ascii")}


def _encode_hook(value: Any) -> Any:
    """What msgspec's JSON encoder cannot write itself."""
    if isinstance(value, msgpack.Timestamp):
        text = rfc3339(value)
        return _ext(-1, value.to_bytes()) if text is None else text
    if isinstance(value, Ext):
        return _ext(value.code, bytes(value.data))
    raise NotImplementedError(f"no JSON for {type(value).__name__}")


_encoder = msgspec.json.Encoder(enc_hook=_encode_hook)
_UNWRITABLE = (TypeError, NotImplementedError)  # what msgspec raises for such a key


def _jsonable(value: Any) -> Any:
    """``value`` made of what Python's ``json`` writes (floats left as they are): the slow
    path, for keys msgspec does not take and for ``allow_nan``."""
    if isinstance(value, dict):
        return {_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    converted = msgspec.to_builtins(value, enc_hook=_encode_hook, builtin_types=(float,))
    if converted is value or isinstance(converted, str):
        return converted
    return _jsonable(converted)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    plain = _jsonable(key)
    if isinstance(plain, str):
        return plain
    return _dumps(plain)


def json_text(value: Any, *, allow_nan: bool = False) -> str:
    """``value`` (untyped, or a typed record or field value) as one line of JSON."""
    if allow_nan:
        return _dumps(_jsonable(value))
    try:
        return _encoder.encode(value).decode("utf-8")
    except _UNWRITABLE:  # a key msgspec does not write (a bool, None, an array, bytes)
        return _encoder.encode(_jsonable(value)).decode("utf-8")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)


class JsonLines:
    """JSON Lines: one JSON value per record. With ``names``, each record is a row of field
    values (typed records), written as an object keyed by the names; without, each record is
    an untyped value, written as it is. With ``kinds`` (rows of a union of kinds, the tag
    first: see :meth:`~.schema.RecordSchema.own_columns`), each object holds its own kind's
    fields only."""

    def __init__(
        self,
        out: IO[str],
        names: Sequence[str] | None = None,
        *,
        allow_nan: bool = False,
        kinds: dict[Any, tuple[int, ...]] | None = None,
    ) -> None:
        self._write = out.write
        self._names = None if names is None else tuple(names)
        self._allow_nan = allow_nan
        self._kinds = kinds

    def write(self, rows: Iterable[Any]) -> None:
        """Write each record: a value, or (with ``names``) a tuple of field values."""
        names = self._names
        kinds = self._kinds
        if names is None:
            batch = list(rows)
        elif kinds is None:
            batch = [dict(zip(names, r, strict=True)) for r in rows]
        else:
            batch = [{names[p]: r[p] for p in kinds[r[0]]} for r in rows]
        if not batch:
            return
        if not self._allow_nan:
            try:
                self._write(_encoder.encode_lines(batch).decode("utf-8"))
                return
            except _UNWRITABLE:
                pass  # a key msgspec does not write: record by record, the slow way
        self._write("".join(json_text(v, allow_nan=self._allow_nan) + "\n" for v in batch))


class ValueReader(SourceReader[Any]):
    """Read each record of ``source`` as the value it is (see the module's docstring), with
    :class:`~msgpack_reader_py.StreamingReader`'s lifecycle, framing and error contract.

    With ``batches``, each item is a list: a read's records, as the text formats take them.
    ``ext_hook(code, data)`` turns extensions other than the timestamp into values
    (:func:`event_time` for Fluentd's EventTime); an exception it raises is a ``RecordError``,
    which ``on_error="skip"`` passes over. ``follow`` is the reader's.

    Untyped, almost any bytes are MessagePack: JSON or plain text reads as a stream of small
    integers. So a stream whose first bytes look like something else (JSON, text, UTF-16,
    Parquet, Arrow, zip, 7z, LZ4, snappy, or compressed data not being decompressed) is refused
    before its first record, with a :class:`~msgpack_reader_py.errors.DecodeError` at record 0
    that says what it looks like; ``force=True`` reads its bytes anyway.
    """

    def __init__(
        self,
        source: Source,
        *,
        ext_hook: ExtHook | None = None,
        batches: bool = False,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
        read_size: int = DEFAULT_READ_SIZE,
        on_error: OnError = "raise",
        follow: bool = False,
        force: bool = False,
    ) -> None:
        plan = Plan(
            Any,
            decoder=ValueDecoder(ext_hook),
            convert=Batches() if batches else None,
            refuse_foreign=not force,
        )
        self._records = chained(
            self._open(
                source,
                Any,
                plan,
                on_error=on_error,
                max_record_size=max_record_size,
                read_size=read_size,
                decompress=True,
                follow=follow,
            )
        )


def text_cell(value: Any) -> Any:
    """A CSV cell: ``None``, text and numbers as they are, anything else as its JSON text (a
    ``datetime``, a timestamp or ``bytes`` as the string that text holds)."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    text = json_text(value)
    return msgspec.json.decode(text) if text.startswith('"') else text
