"""Maps that name a key twice, refused (``forbid_repeated_keys``).

MessagePack lets a map name a key more than once. msgpack and msgspec keep its last value
without a word, as JSON's decoders do (msgspec has no option to tell: its issue 648), so the
earlier value would reach no output. Finding it takes msgpack and a hook called per map:
reading records of three small maps took 1.5-1.6 times as long typed, 1.5 times untyped. So
it is asked for, not done by default.

An untyped read makes each map with :func:`one_value_per_key` in its own msgpack decode.
:class:`RepeatsRefused` wraps a typed plan's decoder, whose maps msgspec makes: a run is
decoded first as before, then checked in one call; a run that holds a repeat is decoded
record by record, as any run with a bad record is, and the first record with one fails with
the path of its map and the key. Keys are compared as a Python mapping holds them: ``1``,
``1.0`` and ``True`` are one key there, so a map holding two of them would lose a value too.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import msgpack

from .messages import RecordFailure
from .record_type import record_fields, record_kind, unannotated, union_members

__all__ = ["Repeated", "RepeatsRefused", "first_repeat", "one_value_per_key", "repeat_failure"]

_CHECK_FAILURES = (ValueError, TypeError, msgpack.UnpackException)


_REPEATS = "a map repeats a key"


class Repeated(Exception):
    """A map names a key twice (raised inside msgpack's decode, to end it)."""

    def __str__(self) -> str:
        return _REPEATS


def one_value_per_key(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """A map's entries as the dict msgpack makes of them (an ``object_pairs_hook``); raises
    :class:`Repeated` where the dict would hold fewer entries than the map."""
    made = dict(pairs)
    if len(made) != len(pairs):
        raise Repeated
    return made


class _Pairs(list[tuple[Any, Any]]):
    """A map's entries as they came, in order (an array decodes to a plain list)."""


def _refuse_repeats(pairs: list[tuple[Any, Any]]) -> None:
    try:
        unique = len(dict(pairs)) == len(pairs)  # in C, where a set comprehension is not
    except TypeError:  # an array or a map as a key
        keys = _Keys()
        unique = all(keys.earlier(key) is _NONE for key, _ in pairs)
    if not unique:
        raise Repeated
    # The map itself is not kept: the check builds nothing it does not need.


def _ignored(_code: int, _data: bytes) -> None:
    return None  # an extension's payload holds no map of the record's


_CHECK_OPTIONS: dict[str, Any] = {
    "object_pairs_hook": _refuse_repeats,
    "strict_map_key": False,
    "ext_hook": _ignored,
}

_NONE: Any = object()


class _Keys:
    """The keys of one map so far, as a Python mapping would hold them."""

    def __init__(self) -> None:
        self._hashable: dict[Any, Any] = {}
        self._other: list[Any] = []  # arrays and maps as keys: compared by value

    def earlier(self, key: Any) -> Any:
        """The key before ``key`` that equals it (``_NONE`` if none), ``key`` now noted."""
        try:
            found = self._hashable.get(key, _NONE)
            if found is _NONE:
                self._hashable[key] = key
        except TypeError:
            found = next((k for k in self._other if k == key), _NONE)
            self._other.append(key)
        return found


def first_repeat(data: Any, record_type: Any) -> RecordFailure | None:
    """Why the record ``data`` (its bytes) is refused for a repeated key, the path to its map
    in ``record_type``'s field names; ``None`` if no map of it repeats one."""
    try:
        value = msgpack.unpackb(
            data, object_pairs_hook=_Pairs, strict_map_key=False, ext_hook=_ignored
        )
    except _CHECK_FAILURES as exc:  # the record was decoded: only an odd extension gets here
        return RecordFailure(f"its map keys cannot be checked ({exc})")
    found = _search(value, record_type, "")
    if found is None:
        return None
    path, first, second = found
    if type(first) is type(second):
        what = f"map has key {second!r} twice"
    else:
        what = f"map has keys {first!r} and {second!r}, one key to Python"
    reason = f"{what}: one of its values would be lost (forbid_repeated_keys)"
    # Worded as a key that names no field is: ``field `attrs`: map has key ...``
    return RecordFailure(f"field `{path}`: {reason}" if path else reason)


def repeat_failure(data: Any) -> RecordFailure:
    """Why the untyped record ``data``, one of whose maps names a key twice, is refused."""
    return first_repeat(data, Any) or RecordFailure(_REPEATS)


def _search(value: Any, annotation: Any, path: str) -> tuple[str, Any, Any] | None:
    """The first map, in the order of the bytes, that repeats a key: its path, the key's
    first and second appearance."""
    if isinstance(value, _Pairs):
        keys = _Keys()
        for key, item in value:
            earlier = keys.earlier(key)
            if earlier is not _NONE:
                return path, earlier, key
            found = _search(item, *_step(annotation, path, key=key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for position, item in enumerate(value):
            found = _search(item, *_step(annotation, path, position=position))
            if found is not None:
                return found
    return None


def _step(
    annotation: Any, path: str, *, key: Any = None, position: int | None = None
) -> tuple[Any, str]:
    """The annotation of the value at a map's ``key`` or an array's ``position`` of a value
    of ``annotation`` (``Any`` where it is not known), and its path, ``path`` lengthened."""
    tp = _bare(annotation)
    inner: Any = Any
    if record_kind(tp) is not None:
        fields = record_fields(tp)
        if position is None:
            spec = next((f for f in fields if key in (f.wire_name, f.name)), None)
        else:
            spec = fields[position] if position < len(fields) else None
        if spec is not None:
            return spec.annotation, _joined(path, spec.name)
    else:
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        inner = args[-1] if args else Any
    if position is not None:
        return inner, _joined(path, f"[{position}]")
    label = key if isinstance(key, str) and key.isidentifier() else f"[{key!r}]"
    return inner, _joined(path, label)


def _bare(annotation: Any) -> Any:
    """``annotation`` without ``Annotated[...]`` and ``| None``; ``Any`` for a union of
    several types (which one a value is, the walk does not know)."""
    annotation = unannotated(annotation)
    members = union_members(annotation)
    if members is None:
        return annotation
    rest = [m for m in members if m is not type(None)]
    return _bare(rest[0]) if len(rest) == 1 else Any


def _joined(path: str, label: str) -> str:
    if not path or label.startswith("["):
        return path + label
    return f"{path}.{label}"


class RepeatsRefused:
    """A plan's decoder whose records must not repeat a key in any map: each run is decoded
    by ``decoder`` and then checked in one call; a record with a repeat is a
    :class:`RecordFailure` naming its map and the key."""

    def __init__(self, decoder: Any, record_type: Any) -> None:
        self._decoder = decoder
        self._record_type = record_type
        self.build: Callable[[list[Any]], list[Any]] | None = decoder.build

    def decode_run(self, data: Any) -> list[Any]:
        """The run's records; ``RecordFailure`` if one is bad or repeats a key."""
        values: list[Any] = self._decoder.decode_run(data)
        try:
            msgpack.unpackb(data, **_CHECK_OPTIONS)
        except (Repeated, *_CHECK_FAILURES) as exc:
            raise RecordFailure(_REPEATS) from exc
        return values

    def decode_one(self, data: Any) -> Any:
        """One record; ``RecordFailure`` if it is not of the type or repeats a key."""
        record = self._decoder.decode_one(data)
        failure = first_repeat(data, self._record_type)
        if failure is not None:
            raise failure
        return record
