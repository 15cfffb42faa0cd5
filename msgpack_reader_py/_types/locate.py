"""Where in a record a value is that msgspec refuses without saying where.

msgspec names the path of a value that fails its type (``- at `$.inner.tags[2]```), but some
values fail as bare exceptions with no path: a timestamp that rounds past ``datetime``'s range
(``ValueError: year 10000 is out of range``), a str of invalid UTF-8, an ``ext_hook`` that
refuses an extension inside an ``Any`` field. Then the record is decoded again by msgpack,
which refuses none of them (strs with their bad bytes escaped, timestamps and extensions as
they are), and walked beside its record type to the first such value: its path, in the
record type's field names, and why. Only a failing record pays for this.
"""

from __future__ import annotations

import datetime
import typing
from collections.abc import Callable, Iterator
from typing import Any

import msgpack

from .._base.ext import EPOCH, rfc3339
from .messages import hook_name
from .record_type import (
    is_fixed_tuple,
    record_fields,
    record_kind,
    record_kinds,
    unannotated,
    union_members,
)

__all__ = ["Found", "locate"]

Found = tuple[str, str]
"""The path of the value (``inner.attrs['x'][2]``) and what is wrong with it."""

_UNPACK: dict[str, Any] = {
    "raw": False,
    "unicode_errors": "surrogateescape",  # a str of invalid UTF-8 keeps its bytes, escaped
    "timestamp": 0,  # the timestamp extension as msgpack.Timestamp: never out of range
    "strict_map_key": False,
}


def locate(
    record_type: Any, data: bytes | memoryview, ext_hook: Callable[[int, bytes], Any] | None
) -> Found | None:
    """The first value of the record ``data`` that fails decoding as ``record_type`` without a
    path (see the module's docstring); ``None`` if none is found there."""
    for use_list in (True, False):  # arrays as tuples where one is a map key (hashable)
        try:
            value = msgpack.unpackb(data, use_list=use_list, **_UNPACK)
        except TypeError:
            continue
        except (ValueError, msgpack.UnpackException):  # pragma: no cover - framed: it decodes
            return None
        return next(_Walk(ext_hook).value(value, record_type, ""), None)
    return None


class _Walk:
    def __init__(self, ext_hook: Callable[[int, bytes], Any] | None) -> None:
        self.hook = ext_hook

    def value(self, value: Any, annotation: Any, path: str) -> Iterator[Found]:
        """Each failure in ``value``, decoded as ``annotation``, in the order msgspec meets
        them (the first is what it raised for)."""
        annotation = _unwrapped(annotation, value)
        if isinstance(value, str):
            if _escaped(value):
                yield path, f"holds invalid UTF-8 in a str ({_bad_bytes(value)})"
        elif isinstance(value, msgpack.Timestamp):
            if _takes_datetime(annotation) and _datetime_of(value) is None:
                text = rfc3339(value) or f"{value.to_unix_nano()} ns since the epoch"
                yield (
                    path,
                    (
                        f"holds the timestamp {text}, outside datetime's range (years 1 to 9999, "
                        "to the microsecond)"
                    ),
                )
        elif isinstance(value, msgpack.ExtType):
            if self.hook is not None and annotation is Any:
                try:
                    self.hook(value.code, bytes(value.data))
                except Exception as exc:  # noqa: BLE001 - what the hook raised, said
                    name = hook_name(self.hook)
                    yield (
                        path,
                        (
                            f"holds extension type {value.code}, which {name} refused: "
                            f"{type(exc).__name__}: {exc}"
                        ),
                    )
        elif isinstance(value, dict):
            yield from self._map(value, annotation, path)
        elif isinstance(value, (list, tuple)):
            yield from self._array(value, annotation, path)

    def _map(self, value: dict[Any, Any], annotation: Any, path: str) -> Iterator[Found]:
        fields = _fields(annotation, value)
        args = typing.get_args(annotation)
        for key, item in value.items():
            if isinstance(key, str) and _escaped(key):
                yield path, f"holds a map key of invalid UTF-8 ({_bad_bytes(key)})"
            if fields is not None:
                spec = fields.get(key)
                if spec is None:
                    continue  # a key that names no field is skipped, never decoded
                name, inner = spec
                yield from self.value(item, inner, f"{path}.{name}" if path else name)
                continue
            inner = args[1] if typing.get_origin(annotation) is dict and args else Any
            yield from self.value(item, inner, f"{path}[{key!r}]")

    def _array(
        self, value: list[Any] | tuple[Any, ...], annotation: Any, path: str
    ) -> Iterator[Found]:
        fields = _positions(annotation, value)
        args = typing.get_args(annotation)
        for position, item in enumerate(value):
            if fields is not None:
                if position >= len(fields):
                    return
                name, inner = fields[position]
                if name is None:
                    continue  # a tagged Struct's tag
                yield from self.value(item, inner, f"{path}.{name}" if path else name)
                continue
            if args and typing.get_origin(annotation) is tuple and Ellipsis not in args:
                inner = args[position] if position < len(args) else Any
            else:
                inner = args[0] if args else Any
            yield from self.value(item, inner, f"{path}[{position}]")


def _unwrapped(annotation: Any, value: Any) -> Any:
    """The annotation a value is decoded as: inside ``Annotated``, the member of a union that
    takes its shape (a union of record kinds stays whole: its tag chooses)."""
    while True:
        annotation = unannotated(annotation)
        members = union_members(annotation)
        if members is None or _kinds_of(annotation):
            return annotation
        annotation = _member_for(members, value)


def _member_for(members: tuple[Any, ...], value: Any) -> Any:
    if isinstance(value, msgpack.Timestamp) and any(map(_takes_datetime, members)):
        return datetime.datetime
    shape = _shape_of(value)
    # A record takes either shape; a container only its own.
    shaped = [m for m in members if shape is not None and _shape(m) in ("record", shape)]
    return shaped[0] if shaped else Any


def _shape(annotation: Any) -> str | None:
    annotation = unannotated(annotation)
    kind = record_kind(annotation)
    origin = typing.get_origin(annotation)
    if kind is not None or _kinds_of(annotation):
        return "record"
    if origin is dict or annotation is dict:
        return "map"
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set, frozenset):
        return "array"
    return None


def _shape_of(value: Any) -> str | None:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, (list, tuple)):
        return "array"
    return None


def _kinds_of(annotation: Any) -> bool:
    members = union_members(annotation)
    return members is not None and sum(record_kind(m) not in (None, "tuple") for m in members) > 1


def _record_of(annotation: Any, value: Any) -> tuple[Any, int] | None:
    """The record class a map or array is decoded as, and how many tag values precede its
    fields in an array; ``None`` if it is no record."""
    if _kinds_of(annotation):
        kinds = record_kinds(annotation)
        if isinstance(value, dict):
            tag = value.get(kinds.key)
        else:
            tag = value[kinds.position] if len(value) > kinds.position else None
        kind = kinds.kind_of(tag)
        if kind is None:
            return None
        return kind.record_type, int(kind.field is None)
    if record_kind(annotation) is None:
        return None
    return annotation, 0


def _fields(annotation: Any, value: dict[Any, Any]) -> dict[Any, tuple[str, Any]] | None:
    found = _record_of(annotation, value)
    if found is None or is_fixed_tuple(found[0]):
        return None
    return {f.wire_name: (f.name, f.annotation) for f in record_fields(found[0])}


def _positions(annotation: Any, value: Any) -> list[tuple[str | None, Any]] | None:
    found = _record_of(annotation, value)
    if found is None:
        return None
    record, tags = found
    return [(None, Any)] * tags + [(f.name, f.annotation) for f in record_fields(record)]


def _takes_datetime(annotation: Any) -> bool:
    if annotation is Any or annotation is datetime.datetime:
        return True
    members = union_members(annotation)
    return members is not None and datetime.datetime in members


def _datetime_of(value: msgpack.Timestamp) -> datetime.datetime | None:
    """The aware ``datetime`` msgspec makes of a timestamp (rounded to the microsecond), or
    ``None`` where there is none."""
    seconds, nanoseconds = divmod(value.to_unix_nano(), 1_000_000_000)
    try:
        return EPOCH + datetime.timedelta(seconds=seconds, microseconds=(nanoseconds + 500) // 1000)
    except OverflowError:
        return None


def _escaped(text: str) -> bool:
    """Whether ``text`` holds bytes that were not UTF-8 (escaped as lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _bad_bytes(text: str) -> str:
    raw = text.encode("utf-8", "surrogateescape")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"{exc.reason} at position {exc.start}"
    return "escaped"  # pragma: no cover - only escaped text is asked about
