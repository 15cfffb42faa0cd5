"""Record types inferred from untyped records, written out as Python source.

:func:`infer` looks at records as :class:`~msgpack_reader_py.values.ValueDecoder` decodes
them (maps, arrays, scalars, timestamps) and returns a :class:`Schema`, whose
:meth:`~Schema.source` is the Python source of a ``@dataclass`` (or ``msgspec.Struct``) named
``Record``, nested records getting classes of their own, and whose
:meth:`~Schema.record_type` is that very source, executed. So the types the command line
converts with are exactly the ones ``msgpack-reader schema`` prints.

The rules:

- records that are maps give a field per key, in the order keys first appear; records that
  are arrays a field per position, ``f0``, ``f1``, ...;
- a field's type is the one type its values have; ``int`` and ``float`` together widen to
  ``float``; a ``None`` among them makes it ``X | None``; a key some maps lack, or a position
  some arrays lack, makes it ``X | None = None`` (such fields come after the others, as a
  dataclass needs);
- maps with string keys, at least one of them in every map and at most :data:`MAX_FIELDS` in
  all, are a nested record; other maps (keys that vary from map to map, as in a map of
  attributes; too many keys; keys that are not strings) a ``dict[K, V]``; an array whose
  elements share a type is a ``list[T]``; an array of mixed scalars, the same length each
  time, a nested record by position;
- the timestamp extension is a ``datetime``; values of types that do not mix (a ``str`` and an
  ``int``), and extension types, are ``Any``; a field that was only ever ``None`` is ``None``.

A key that is not a Python identifier gets a field name made from it, and keeps its key: in
a dataclass as ``field(metadata={"msgpack_key": KEY})``, in a Struct as
``msgspec.field(name=KEY)``.
"""

from __future__ import annotations

import dataclasses
import keyword
import re
import types
from collections.abc import Iterable
from typing import Any, Literal

import msgpack

from .record_type import KEY_METADATA

__all__ = ["DEFAULT_SAMPLE", "MAX_FIELDS", "InferenceError", "Schema", "infer"]

DEFAULT_SAMPLE = 1000
"""How many records the command line infers a schema from."""

MAX_FIELDS = 64
"""A string-keyed map with more keys than this, across the records, is a ``dict``."""

Format = Literal["dataclass", "struct"]

_SCALARS = {
    type(None): "null",
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    bytes: "bytes",
    msgpack.Timestamp: "timestamp",
}
_ANNOTATIONS = {
    "bool": "bool",
    "int": "int",
    "float": "float",
    "str": "str",
    "bytes": "bytes",
    "timestamp": "datetime.datetime",
}


# Names the generated classes' annotations and defaults use: a field of that name with a
# default would hide them from the fields after it.
_RESERVED = frozenset(
    {"Any", "None", "bool", "bytes", "dataclass", "datetime", "dict", "field", "float", "int"}
    | {"list", "msgspec", "str"}
)


class InferenceError(ValueError):
    """The records have no shape a record type can describe (not maps or arrays, or both)."""


class _Seen:
    """What was seen at one place of the records: the kinds of value, and inside them."""

    def __init__(self) -> None:
        self.kinds: set[str] = set()
        self.items: _Seen | None = None  # the elements of arrays
        self.positions: list[_Seen] = []  # the elements of arrays, by position
        self.lengths: set[int] = set()
        self.fields: dict[str, _Seen] = {}  # the entries of string-keyed maps
        self.present: dict[str, int] = {}
        self.maps = 0
        self.keys: _Seen | None = None  # the keys and values of other maps
        self.values: _Seen | None = None

    def add(self, value: Any) -> None:
        kind = _SCALARS.get(type(value))
        if kind is not None:
            self.kinds.add(kind)
        elif isinstance(value, (list, tuple)):
            self._array(value)
        elif isinstance(value, dict):
            if all(type(k) is str for k in value):
                self._map(value)
            else:
                self.kinds.add("dict")
                self.keys = self.keys or _Seen()
                self.values = self.values or _Seen()
                for key, item in value.items():
                    self.keys.add(key)
                    self.values.add(item)
        else:
            self.kinds.add("other")

    def _array(self, value: list[Any] | tuple[Any, ...]) -> None:
        self.kinds.add("array")
        self.items = self.items or _Seen()
        self.lengths.add(len(value))
        while len(self.positions) < len(value):
            self.positions.append(_Seen())
        for position, item in zip(self.positions, value, strict=False):
            self.items.add(item)
            position.add(item)

    def _map(self, value: dict[str, Any]) -> None:
        self.kinds.add("map")
        self.maps += 1
        for key, item in value.items():
            seen = self.fields.get(key)
            if seen is None:
                seen = self.fields[key] = _Seen()
                self.present[key] = 0
            self.present[key] += 1
            seen.add(item)


@dataclasses.dataclass
class _Field:
    name: str
    key: str
    annotation: str
    optional: bool  # may be missing: a default of None


@dataclasses.dataclass
class _Class:
    name: str
    fields: list[_Field]


class Schema:
    """Record types inferred from records (see the module's docstring); make one with
    :func:`infer`."""

    def __init__(self, classes: list[_Class], records: int, mixed: list[str]) -> None:
        self._classes = classes
        self.records = records
        """How many records it was inferred from."""
        self.mixed = mixed
        """The fields typed ``Any`` because their values' types do not mix, each as
        ``path (what was seen)``, e.g. ``"inner.code (int, str)"``."""

    def source(self, form: Format = "dataclass", *, note: str = "") -> str:
        """Python source defining ``Record`` (and its nested records, before it) as
        dataclasses, or as ``msgspec.Struct``s with ``form="struct"``. ``note`` goes in the
        module's docstring."""
        header = f'"""Record types inferred by msgpack-reader{note}."""\n\n'
        classes = [_class_source(cls, form) for cls in self._classes]
        fields = [f for cls in self._classes for f in cls.fields]
        # Only what the classes use: the file passes a linter as it is.
        imports = []
        if any("datetime.datetime" in f.annotation for f in fields):
            imports.append("import datetime")
        if form == "dataclass":
            renamed = any(f.key != f.name for f in fields)
            imports.append(
                f"from dataclasses import {'dataclass, field' if renamed else 'dataclass'}"
            )
        if any(re.search(r"\bAny\b", f.annotation) for f in fields):
            imports.append("from typing import Any")
        if form == "struct":
            imports.append("\nimport msgspec")
        parts = [header + "\n".join(imports).lstrip("\n"), *classes]
        return "\n\n\n".join(parts) + "\n"

    def record_type(self, form: Format = "dataclass") -> type[Any]:
        """The ``Record`` class of :meth:`source`, made by running that source."""
        module = types.ModuleType("msgpack_reader_py.inferred")
        # Compiled without this module's ``from __future__ import annotations``: real annotations.
        code = compile(self.source(form), "<inferred schema>", "exec", dont_inherit=True)
        exec(code, module.__dict__)
        record: type[Any] = module.Record
        return record


def _class_source(cls: _Class, form: Format) -> str:
    if form == "dataclass":
        lines = ["@dataclass", f"class {cls.name}:"]
    else:
        lines = [f"class {cls.name}(msgspec.Struct):"]
    for f in cls.fields:
        annotation = f.annotation
        if f.optional and not annotation.endswith("| None") and annotation not in ("None", "Any"):
            annotation += " | None"
        line = f"    {f.name}: {annotation}"
        options = []
        if f.optional:
            options.append("default=None")
        if f.key != f.name:
            options.append(
                f"metadata={{{KEY_METADATA!r}: {f.key!r}}}"
                if form == "dataclass"
                else f"name={f.key!r}"
            )
        if options == ["default=None"]:
            line += " = None"
        elif options:
            maker = "field" if form == "dataclass" else "msgspec.field"
            line += f" = {maker}({', '.join(options)})"
        lines.append(line)
    if not cls.fields:
        lines.append("    pass")
    return "\n".join(lines)


def infer(records: Iterable[Any]) -> Schema:
    """The record types of ``records`` (untyped values, as
    :class:`~msgpack_reader_py.values.ValueDecoder` gives them). Raises
    :class:`InferenceError` when they are not all maps or all arrays, or there are none."""
    top = _Seen()
    count = 0
    for record in records:
        top.add(record)
        count += 1
    if count == 0:
        raise InferenceError("no records to infer a schema from")
    shapes = top.kinds
    if shapes not in ({"map"}, {"array"}):
        found = ", ".join(sorted(_kind_names(shapes)))
        raise InferenceError(
            f"records must all be maps or all be arrays to infer their fields; found {found}"
        )
    builder = _Builder()
    builder.record("Record", top)
    return Schema(builder.classes, count, builder.mixed)


_KIND_NAMES = {
    "null": "None",
    "array": "arrays",
    "map": "maps",
    "dict": "maps",
    "other": "extensions",
}


def _kind_names(kinds: set[str]) -> list[str]:
    return [_KIND_NAMES.get(k, k) for k in kinds]


class _Builder:
    def __init__(self) -> None:
        self.classes: list[_Class] = []
        self.names: set[str] = set()
        self.mixed: list[str] = []
        self._path: list[str] = []

    def record(self, name: str, seen: _Seen) -> str:
        """Define the class of the records seen at ``seen``; its name."""
        name = self._class_name(name)
        fields: list[_Field] = []
        used: set[str] = set()
        if "map" in seen.kinds:
            for key, inner in seen.fields.items():
                field_name = _identifier(key, used)
                optional = seen.present[key] < seen.maps
                annotation = self._at(field_name, name + _pascal(field_name), inner)
                fields.append(_Field(field_name, key, annotation, optional))
            # A dataclass's fields with defaults come after the others.
            fields.sort(key=lambda f: f.optional)
        else:
            shortest = min(seen.lengths)
            for position, inner in enumerate(seen.positions):
                field_name = f"f{position}"
                annotation = self._at(field_name, f"{name}F{position}", inner)
                fields.append(_Field(field_name, field_name, annotation, position >= shortest))
        self.classes.append(_Class(name, fields))
        return name

    def _class_name(self, name: str) -> str:
        return _unique(name, self.names, "")

    def _at(self, field: str, name: str, seen: _Seen) -> str:
        self._path.append(field)
        try:
            return self.annotation(name, seen)
        finally:
            self._path.pop()

    def annotation(self, name: str, seen: _Seen) -> str:
        kinds = seen.kinds - {"null"}
        nullable = "null" in seen.kinds
        text = self._type(name, seen, kinds)
        if nullable and text not in ("Any", "None"):
            text += " | None"
        return text

    def _type(self, name: str, seen: _Seen, kinds: set[str]) -> str:
        if not kinds:
            return "None"
        if kinds == {"int", "float"}:
            return "float"
        if len(kinds) > 1 or kinds == {"other"}:
            found = ", ".join(sorted(_kind_names(kinds)))
            self.mixed.append(f"{'.'.join(self._path)} ({found})")
            return "Any"
        (kind,) = kinds
        if kind in _ANNOTATIONS:
            return _ANNOTATIONS[kind]
        if kind == "map":
            common = any(count == seen.maps for count in seen.present.values())
            if len(seen.fields) > MAX_FIELDS or not common:
                merged = _Seen()
                for inner in seen.fields.values():
                    _merge(merged, inner)
                return f"dict[str, {self.annotation(name + 'Value', merged)}]"
            return self.record(name, seen)
        if kind == "dict":
            assert seen.keys is not None
            assert seen.values is not None
            keys = self.annotation(name + "Key", seen.keys)
            return f"dict[{keys}, {self.annotation(name + 'Value', seen.values)}]"
        if kind == "array":
            assert seen.items is not None
            items = seen.items.kinds - {"null"}
            if not items:
                return "list[None]"  # only ever empty (or None): a later element is an error
            mixes = len(items) > 1 and items != {"int", "float"}
            if mixes and len(seen.lengths) == 1 and _all_scalar(seen.positions):
                return self.record(name, seen)
            return f"list[{self.annotation(name + 'Item', seen.items)}]"
        raise AssertionError(f"no annotation for {kind}")  # pragma: no cover


def _all_scalar(positions: list[_Seen]) -> bool:
    return all(p.kinds and p.kinds - {"null"} <= set(_ANNOTATIONS) for p in positions)


def _merge(into: _Seen, other: _Seen) -> None:
    """Fold what ``other`` saw into ``into`` (the values of a map too wide to be a record)."""
    into.kinds |= other.kinds
    for attribute in ("items", "keys", "values"):
        theirs = getattr(other, attribute)
        if theirs is not None:
            mine = getattr(into, attribute) or _Seen()
            _merge(mine, theirs)
            setattr(into, attribute, mine)
    into.lengths |= other.lengths
    while len(into.positions) < len(other.positions):
        into.positions.append(_Seen())
    for mine, theirs in zip(into.positions, other.positions, strict=False):
        _merge(mine, theirs)
    into.maps += other.maps
    for key, theirs in other.fields.items():
        mine = into.fields.setdefault(key, _Seen())
        into.present[key] = into.present.get(key, 0) + other.present[key]
        _merge(mine, theirs)


def _identifier(key: str, used: set[str]) -> str:
    """A Python identifier for ``key``, not in ``used`` (and now in it)."""
    # Not starting with "_": a msgspec.Struct refuses such field names.
    name = re.sub(r"\W", "_", key).lstrip("_") or "field"
    if name[0].isdigit():
        name = "f_" + name
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in _RESERVED:
        name += "_"
    return _unique(name, used, "_")


def _unique(name: str, used: set[str], joiner: str) -> str:
    """``name``, or ``name`` + joiner + 2, 3, ... if taken; now in ``used``."""
    unique, number = name, 2
    while unique in used:
        unique, number = f"{name}{joiner}{number}", number + 1
    used.add(unique)
    return unique


def _pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)
