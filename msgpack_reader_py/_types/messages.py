"""msgspec's errors in the reader's own words: each failure a :class:`RecordFailure` that
names the field path in the record type's names, what was expected and what was found.

msgspec says ``Expected `int`, got `str` - at `$.inner.tags[2]```; the reader says
``field `inner.tags[2]` expected int, got str 'x'``. The formats parsed here are pinned by
``tests/test_msgspec_behaviour.py``, so that an upgrade of msgspec that changes them fails
loudly there rather than garbling messages.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

import msgpack

from .._base.errors import describe
from .._base.ext import ExtHook
from .record_type import (
    FieldSpec,
    is_fixed_tuple,
    record_fields,
    record_kind,
    type_label,
    unannotated,
    union_members,
    wire_form,
)

__all__ = [
    "AT_PATH",
    "INVALID_TIMESTAMP",
    "SHAPE",
    "UNKNOWN",
    "HookFailure",
    "RecordFailure",
    "as_failure",
    "guarded_hook",
    "hook_name",
    "invalid_utf8",
    "is_bad_timestamp",
    "is_map_as_key",
    "is_mapping",
    "is_wide_timestamp",
    "one_shape",
    "phrase",
]


SHAPE = re.compile(r"^Expected `(array|object|array \| object|object \| array)`")

_GOT = re.compile(r"^(?P<expected>Expected `[^`]*`), got `[^`]*`$")

_MISSING_KEY = re.compile(r"^Object missing required field `(?P<name>[^`]*)`$")

_UNKNOWN_KEY = re.compile(r"^Object contains unknown field `(?P<name>[^`]*)`$")

_EXPECTED = re.compile(r"^Expected `([^`]*)`")
_BOUND = re.compile(r"^Expected `[^`]*` [<>]=? -?[0-9.e+-]+$")  # a Meta's bound: ge, lt, ...

_NAMES = {"null": "None", "object": "map"}

UNKNOWN: Any = object()

_PATH_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[(\.\.\.)\]")

AT_PATH = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)

_KEY_IN = re.compile(r"^(?P<message>.*) - at `key` in `\$(?P<path>[^`]*)`$", re.DOTALL)


class RecordFailure(Exception):
    """A record that is not a record of the type. Its message (``str()``) names the field path
    (``field `inner.tags[2]` expected int, got str 'x'``); ``reason`` is what is wrong there,
    without it, as a :class:`~.errors.ReaderError`'s ``reason`` is without the location.

    ``decodable`` is ``False`` when the bytes cannot be decoded at all (invalid UTF-8, nesting
    too deep), whatever the type.
    """

    def __init__(self, reason: str, *, decodable: bool = True, field: str = "") -> None:
        super().__init__(f"field `{field}` {reason}" if field else reason)
        self.reason = reason
        self.decodable = decodable
        self.field = field

    def within(self, name: str) -> RecordFailure:
        """The same failure, for the field ``name`` of the record that holds this one."""
        if not self.field:
            field = name
        else:  # an element's index follows its list's name: ``tags[2]``, not ``tags.[2]``
            field = f"{name}{'' if self.field.startswith('[') else '.'}{self.field}"
        return RecordFailure(self.reason, decodable=self.decodable, field=field)


class HookFailure(Exception):
    """What an ``ext_hook`` raised, wrapped so that it is told apart from a bug of ours."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def hook_name(hook: ExtHook | None) -> str:
    """How messages name an ``ext_hook``: by its ``__qualname__`` (``fluentd_event_time``)."""
    return getattr(hook, "__qualname__", "ext_hook")


def guarded_hook(
    hook: ExtHook, name: str | None = None
) -> Callable[[int, memoryview | bytes], Any]:
    """``hook``, raising :class:`HookFailure` (naming the hook, or ``name``: the hook whose
    exact face it is, and the extension type) for whatever it raises."""
    said = hook_name(hook) if name is None else name

    def guarded(code: int, data: memoryview | bytes) -> Any:
        try:
            # bytes, as msgpack gives a hook: msgspec hands over a view of its buffer
            return hook(code, bytes(data))
        except Exception as exc:
            raise HookFailure(
                f"{said} refused extension type {code}: {type(exc).__name__}: {exc}"
            ) from exc

    return guarded


INVALID_TIMESTAMP = "an invalid timestamp extension (wrong length, or nanoseconds >= 10**9)"


def invalid_utf8(exc: UnicodeDecodeError) -> str:
    """How a record with a str that is not UTF-8 is described."""
    return f"invalid UTF-8 in a str ({exc.reason} at position {exc.start})"


_UNHASHABLE_KEY = "map keys must be hashable"  # msgspec's words

MAP_AS_KEY = "a map's key is a map, which no Python dict holds"
"""Why a record with a map as a map's key (valid MessagePack) is refused, typed or not."""


_BAD_TIMESTAMP = "Invalid MessagePack timestamp"
_WIDE_TIMESTAMP = "Timestamp is out of range"


def is_bad_timestamp(exc: Exception) -> bool:
    """Whether msgspec's ``exc`` says a timestamp extension is broken (its length, its
    nanoseconds)."""
    return str(exc).startswith(_BAD_TIMESTAMP)


def is_wide_timestamp(exc: Exception) -> bool:
    """Whether msgspec's ``exc`` refuses a valid timestamp past datetime's years (it says
    where, but not what): untyped, it looks no further into the record."""
    return str(exc).startswith(_WIDE_TIMESTAMP)


def is_map_as_key(exc: Exception) -> bool:
    """Whether msgspec's or msgpack's ``exc`` says a map's key is a map."""
    return _UNHASHABLE_KEY in str(exc) or "unhashable type: 'dict'" in str(exc)


_FIELD_FIRST = re.compile(r"^field `(?P<field>[^`]*)` (?P<rest>.*)$", re.DOTALL)


def as_failure(text: str, suffix: str = "") -> RecordFailure:
    """A phrased failure, its field path apart (so that a record holding it can lengthen it)."""
    match = _FIELD_FIRST.match(text)
    if match is None:
        return RecordFailure(text + suffix)
    return RecordFailure(match.group("rest") + suffix, field=match.group("field"))


def phrase(
    record_type: Any, fields: Sequence[FieldSpec], message: str, raw: Any, unknown: Any
) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$[2][1]``` as ``field `tags[1]`
    expected int, got str 'x'``, for a record of ``record_type`` (``raw``: the record
    decoded untyped, ``unknown`` if it could not be)."""
    key = _KEY_IN.match(message)
    match = key or AT_PATH.match(message)
    assert match is not None
    text, path = match.group("message"), match.group("path") or ""
    if SHAPE.match(text) is not None and not path:
        return _shape_error(record_type, fields, text, raw, unknown)
    missing = _MISSING_KEY.match(text)
    if missing is not None:
        name = _field_path(record_type, f"{path}.{missing.group('name')}")
        return f"field `{name}` is missing (a map without its key, and no default)"
    unknown_key = _UNKNOWN_KEY.match(text)
    if unknown_key is not None:
        where = _field_path(record_type, path) if path else ""
        owner = f"field `{where}`: " if where else ""
        return f"{owner}map has key {unknown_key.group('name')!r}, which names no field"
    got = _GOT.match(text)
    if got is not None and not key:
        expected = got.group("expected")
        annotation = _field_annotation(record_type, path) if fields else None
        if annotation is not None and _holds_records(annotation):
            # msgspec names the wire forms (``map | array``): name the field's own type
            bare = unannotated(annotation)
            shape = wire_form(bare) if record_kind(bare) else None
            wanted = type_label(annotation) if shape is None else one_shape(type_label(bare), shape)
            expected = f"Expected `{wanted}`"
        elif annotation is not None and _holds_timestamps(annotation):
            expected = f"Expected `{type_label(annotation)}`"  # msgspec names its wire type, ext
        found = UNKNOWN if raw is unknown else _found(raw, path)
        got_text = text[got.end("expected") :] if found is UNKNOWN else f", got {describe(found)}"
        text = expected + got_text
    elif _BOUND.match(text) is not None and raw is not unknown:
        text += f", got {describe(_found(raw, path))}"  # the value past the bound
    field = _field_path(record_type, path) if fields else path
    text = _EXPECTED.sub(_our_names, text)
    text = (text[:1].lower() + text[1:]).replace("`", "")
    if key:
        owner = f"field `{field}`: " if field else ""
        return f"{owner}a map key {text}"
    return f"field `{field}` {text}" if field else text


def _shape_error(
    record_type: Any, fields: Sequence[FieldSpec], message: str, raw: Any, unknown: Any
) -> str:
    """The record itself has the wrong shape: say what a record is and what was found."""
    if is_mapping(record_type):
        want = f"a map ({type_label(record_type)})"
    else:
        size = len(fields)
        required = sum(f.required for f in fields)
        count = f"{required} to {size}" if required < size else f"{size}"
        if is_fixed_tuple(record_type):
            want = f"an array of {count} fields"
        elif (shape := wire_form(record_type)) is None:
            want = f"an array or a map of {count} fields"
        else:
            want = one_shape(type_label(record_type), shape, f" of {count} fields")
    found = message.rsplit("got ", 1)[-1].replace("`", "") if raw is unknown else None
    return f"expected {want}, found {found or describe(raw)}"


def one_shape(who: str, shape: str, size: str = "") -> str:
    """What a record read from ``shape`` only is expected as: ``a map of 2 fields (Click is
    read from maps only)``, ``who`` naming its type."""
    article = "a" if shape == "map" else "an"
    return f"{article} {shape}{size} ({who} is read from {shape}s only)"


def _our_names(match: re.Match[str]) -> str:
    """msgspec's ``Expected `int | null``` in Python's words: ``Expected `int | None```; an
    extension beside ``datetime`` is how an ``ext_hook`` makes one, not a type to name."""
    names = [_NAMES.get(name, name) for name in match.group(1).split(" | ")]
    if "datetime" in names and "ext" in names:
        names.remove("ext")
    return f"Expected `{' | '.join(names)}`"


def _field_path(record_type: Any, path: str) -> str:
    """msgspec's path (``[2][1]``, ``.inner.level``) in field names (``tags[1]``)."""
    return _walked(record_type, path)[0]


def _field_annotation(record_type: Any, path: str) -> Any:
    """The annotation of the value at msgspec's ``path``."""
    return _walked(record_type, path)[1]


def _holds_records(annotation: Any) -> bool:
    """Whether an annotation is a record class, or a union with one among its members."""
    annotation = unannotated(annotation)
    members = union_members(annotation) or (annotation,)
    return any(record_kind(m) not in (None, "tuple") for m in members)


def _holds_timestamps(annotation: Any) -> bool:
    """Whether an annotation is ``msgpack.Timestamp``, or a union with it among its members."""
    annotation = unannotated(annotation)
    return msgpack.Timestamp in (union_members(annotation) or (annotation,))


def _walked(record_type: Any, path: str) -> tuple[str, Any]:
    """msgspec's ``path`` in field names, and the annotation of the value there."""
    parts: list[str] = []
    current: Any = record_type
    for name, index, _ in _PATH_SEGMENT.findall(path):
        current = _unwrap(current)
        fields = record_fields(current) if _is_record(current) else None
        if fields is not None and index:
            spec = fields[int(index)] if int(index) < len(fields) else None
            label = spec.name if spec is not None else f"[{index}]"
            current = spec.annotation if spec is not None else Any
        elif fields is not None and name:
            spec = next((f for f in fields if name in (f.wire_name, f.name)), None)
            label = spec.name if spec is not None else name
            current = spec.annotation if spec is not None else Any
        else:
            label = f"[{index or '...'}]"
            args = typing.get_args(current)
            current = args[-1] if args else Any
        parts.append(label if label.startswith("[") or not parts else f".{label}")
    return "".join(parts), current


def _is_record(tp: Any) -> bool:
    return record_kind(tp) is not None


def is_mapping(tp: Any) -> bool:
    """Whether ``tp`` is a ``dict[K, V]`` record type: maps of any keys."""
    return typing.get_origin(tp) is dict


def _unwrap(tp: Any) -> Any:
    """The record or container inside ``Optional[...]`` / ``Annotated[...]``."""
    tp = unannotated(tp)
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        structured = [m for m in members if _is_record(m) or typing.get_origin(m)]
        return _unwrap(structured[0]) if structured else tp
    return tp


def _found(value: Any, path: str) -> Any:
    """The value at msgspec's ``path`` in a record decoded as it is; ``UNKNOWN`` if lost."""
    for name, index, _ in _PATH_SEGMENT.findall(path):
        if name and isinstance(value, dict) and name in value:
            value = value[name]
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return UNKNOWN
    return value
