"""Record types inferred from untyped records, written out as Python source.

:func:`infer` looks at records as :class:`~msgpack_reader_py._readers.values.ValueDecoder` decodes
them (maps, arrays, scalars, timestamps) and returns an :class:`Inferred`, whose
:meth:`~Inferred.source` is the Python source of a ``@dataclass`` (or ``msgspec.Struct``) named
``Record``, nested records getting classes of their own, and whose
:meth:`~Inferred.record_type` is that very source, executed. So the types the command line
converts with are exactly the ones ``msgpack-reader schema`` prints.

The rules:

- records that are maps give a field per key, in the order keys first appear; records that
  are arrays a field per position, ``f0``, ``f1``, ...;
- a field's type is the one type its values have; ``int`` and ``float`` together are
  ``int | float`` (each value stays what it is: a float cannot hold every int exactly; a
  column of them is float64, which refuses an int it cannot hold exactly); a ``None`` among
  them makes it ``X | None``; a key some maps lack, or a position
  some arrays lack, makes it ``X | None = None`` (such fields come after the others, as a
  dataclass needs);
- maps with string keys, at least one of them in every map and at most :data:`MAX_FIELDS` in
  all, are a nested record; other maps (keys that vary from map to map, as in a map of
  attributes; too many keys; keys that are not strings) a ``dict[K, V]``; an array whose
  elements share a type is a ``list[T]``; an array of mixed scalars, the same length each
  time, a nested record by position;
- ints are ``int``; where one was over int64's most (2**63 - 1) and none was negative, a
  :data:`~msgpack_reader_py.UInt64` (a ``uint64`` column); where both were seen, ``int``, in
  a table a column of their JSON text (no integer column holds both). Checked, an ``int``
  refuses an int over int64's most, and a ``float`` (which msgspec reads an int as) an int
  past 2**53, so that a later one widens the type, never read with digits lost;
- the timestamp extension is a ``datetime`` where every timestamp seen held whole
  microseconds, and a ``msgpack.Timestamp`` where one held nanoseconds, which a ``datetime``
  would round (or lay outside its years, 1 to 9999). Checked, a ``datetime`` refuses a
  timestamp with nanoseconds, so that a later one widens it, never read rounded;
- values of types that do not mix (a ``str`` and an ``int``), and extension types, are
  :data:`~msgpack_reader_py.AnyValue` (each value as a read with no type gives it, a
  timestamp to the nanosecond); a field that was only ever ``None`` is ``None``.

Every class refuses what its records never showed: a dataclass sets
``__forbid_unknown_keys__ = True``, a Struct ``forbid_unknown_fields=True``, so a record with a
key no class names is never read as if it were not there; each sets ``__wire_form__`` to the
shape its records had (``"map"``, ``"array"``), so a record of the other shape is refused,
never read with names it never had (an array's values taken as a map's fields by position);
every union is closed (the tags seen, ``X | None``), and a value of another type fails its
field's check. Read with these types, a record either keeps every value it holds or fails,
at any depth.

A key that is not a Python identifier gets a field name made from it, and keeps its key: in
a dataclass as ``field(metadata={"msgpack_key": KEY})``, in a Struct as
``msgspec.field(name=KEY)``; a class with a key msgspec cannot rename a field to (one holding
a quote, a backslash or a control character) is written as a dataclass in either form.

This module is one concern, the rules above and the source they write: what they see of the
records is :mod:`.seen`'s, the tag of kinds :mod:`.tags`'s, names :mod:`.names`'; which
records the rules see is :mod:`.inferred`'s.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import types
from collections.abc import Iterable
from typing import Any, Literal

from .._base.errors import ReaderError
from .._types.ints import FLOAT_EXACT, INT64_MAX
from .._types.record_type import FORBID_ATTRIBUTE, FORM_ATTRIBUTE, KEY_METADATA, matchable
from .names import identifier, pascal, unique
from .seen import Seen, merge
from .tags import MAX_KINDS, kind_name, tag_key

__all__ = [
    "MAX_FIELDS",
    "MAX_KINDS",
    "Form",
    "InferenceError",
    "Inferred",
    "infer",
]

MAX_FIELDS = 64
"""A string-keyed map with more keys than this, across the records, is a ``dict``."""

Form = Literal["dataclass", "struct"]
"""How inferred types are written: as dataclasses or as ``msgspec.Struct``s."""

_ANNOTATIONS = {
    "bool": "bool",
    "int": "int",
    "float": "float",
    "str": "str",
    "bytes": "bytes",
    "timestamp": "<datetime>",
}


class InferenceError(ValueError):
    """The records have no shape a record type can describe (not maps or arrays, or both)."""


@dataclasses.dataclass
class _Field:
    name: str
    key: str
    annotation: str
    optional: bool  # may be missing: a default of None
    columns: str = ""  # the annotation in a table where kinds type the field differently


@dataclasses.dataclass
class _Class:
    name: str
    fields: list[_Field]
    positional: bool = False  # its records are arrays: fields by position
    tag: tuple[str, str, str] | None = None  # a kind's tag: its key, field name and value


class Inferred:
    """Record types inferred from records (see the module's docstring); make one with
    :func:`infer`."""

    def __init__(
        self,
        classes: list[_Class],
        records: int,
        mixed: list[str],
        kinds: list[str] | None = None,
        conflicts: list[str] | None = None,
    ) -> None:
        self._classes = classes
        self._kinds = kinds
        self.records = records
        """How many records it was inferred from."""
        self.mixed = mixed
        """The fields typed ``AnyValue`` because their values' types do not mix, each as
        ``path (what was seen)``, e.g. ``"inner.code (int, str)"``."""
        self.checked: int | None = None
        """How many records the types were checked against, all fitting (see
        :func:`~msgpack_reader_py.infer_sources`); ``None``: not checked."""
        self.every = False
        """Whether those were every record of the sources: false where only the first were
        seen (``infer_from=N``, a stream longer than what is kept of it) or broken data ended
        them (:attr:`error`)."""
        self.error: ReaderError | None = None
        """The reader's error where broken data ended the records the types come from:
        reading the sources raises it in its turn, after the records before it."""
        self.conflicts = conflicts or []
        """Fields that kinds type differently, ``"value (int in Click, str in Key)"``: in a
        table of every kind (:meth:`record_type` with ``columns``) such a column is
        ``AnyValue``."""

    @property
    def kinds(self) -> list[str] | None:
        """The names of the kinds' classes, when the records are of several kinds told apart by
        a tag (``Record`` is then their union); ``None`` for one class of records."""
        return None if self._kinds is None else list(self._kinds)

    @property
    def tag(self) -> str | None:
        """The map key that tells the kinds apart, if there are kinds."""
        tagged = next((cls.tag for cls in self._classes if cls.tag is not None), None)
        return None if tagged is None else tagged[0]

    def source(
        self,
        form: Form = "dataclass",
        *,
        note: str = "",
        checked: bool = False,
        columns: bool = False,
        every: bool = False,
    ) -> str:
        """Python source defining ``Record`` (and its nested records, before it) as
        dataclasses, or as ``msgspec.Struct``s with ``form="struct"``; for records of several
        kinds, a class per kind (tagged Structs, or dataclasses with a ``Literal`` tag field)
        and ``Record`` their union. ``note`` goes in the module's docstring.

        ``checked`` (Structs only) refuses what the records never showed: a map key that
        names no field (``forbid_unknown_fields``); records seen as arrays are ``array_like``
        (for ``columns``, the top ones only: a table takes nested records as maps).
        ``columns`` types each field as a table can hold it: a list never seen with an element
        is ``list[None]`` (``list[Any]`` else), a field two kinds type differently ``Any``.
        ``every`` says the types were checked against every record already: a checked
        ``datetime`` then refuses no timestamp again (the check is made in Python).
        """
        header = (
            f'"""Record types inferred by msgpack-reader{note}.\n\n'
            "Each class refuses a map key it does not name, and a record of the other shape\n"
            "(__wire_form__: an array where maps were seen, or a map where arrays were): a record\n"
            'that holds one is an error, never read as if the key were not there."""\n\n'
        )
        # A table's columns take a nested record from a dict, never from the list that an
        # array_like Struct gives: only the records themselves are read as arrays natively.
        tops = set(self._kinds or ["Record"])
        classes = [
            _class_source(
                cls,
                form,
                checked=checked,
                columns=columns,
                every=every,
                nested=cls.name not in tops,
            )
            for cls in self._classes
        ]
        if self._kinds is not None:
            classes.append(f"Record = {' | '.join(self._kinds)}")
        fields = [f for cls in self._classes for f in cls.fields]
        annotations = [
            _annotation(f, checked=checked, columns=columns, every=every) for f in fields
        ]
        # Only what the classes use: the file passes a linter as it is.
        imports = []
        if any("datetime.datetime" in a for a in annotations):
            imports.append("import datetime")
        as_dataclasses = [cls for cls in self._classes if _class_form(cls, form) == "dataclass"]
        if as_dataclasses:
            renamed = any(f.key != f.name for cls in as_dataclasses for f in cls.fields) or any(
                cls.tag is not None and cls.tag[0] != cls.tag[1] for cls in as_dataclasses
            )
            imports.append(
                f"from dataclasses import {'dataclass, field' if renamed else 'dataclass'}"
            )
        typing_names = []
        if any("Annotated[" in a for a in annotations):
            typing_names.append("Annotated")
        if any(re.search(r"\bAny\b", a) for a in annotations):
            typing_names.append("Any")
        if any(cls.tag is not None for cls in as_dataclasses):
            typing_names.append("Literal")
        if typing_names:
            imports.append(f"from typing import {', '.join(typing_names)}")
        third = []
        if any("msgpack.Timestamp" in a for a in annotations):
            third.append("import msgpack")
        if len(as_dataclasses) < len(self._classes) or any("msgspec." in a for a in annotations):
            third.append("import msgspec")
        ours = [name for name in ("AnyValue", "UInt64") if any(name in a for a in annotations)]
        if ours:
            third.append(f"from msgpack_reader_py import {', '.join(ours)}")
        if any("WHOLE_MICROSECONDS" in a for a in annotations):
            third.append("from msgpack_reader_py._types.extensions import WHOLE_MICROSECONDS")
        if third:
            imports.append("\n" + "\n".join(third))
        parts = [header + "\n".join(imports).lstrip("\n"), *classes]
        return "\n\n\n".join(parts) + "\n"

    def record_type(
        self,
        form: Form = "dataclass",
        *,
        checked: bool = False,
        columns: bool = False,
        every: bool = False,
    ) -> Any:
        """The ``Record`` of :meth:`source` (a class, or a union of the kinds' classes), made
        by running that source."""
        return _defined(self.source(form, checked=checked, columns=columns, every=every))


@functools.lru_cache(maxsize=32)
def _defined(source: str) -> Any:
    """The ``Record`` that ``source`` defines: made once per source, so that the same types
    inferred again (a check, then a conversion) are the same classes, compiled once."""
    module = types.ModuleType("msgpack_reader_py._analysis.inferred")
    # Compiled without this module's ``from __future__ import annotations``: real annotations.
    code = compile(source, "<inferred schema>", "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module.Record


def _annotation(spec: _Field, *, checked: bool, columns: bool, every: bool = False) -> str:
    """A field's annotation as written: a table's column type where it differs (``columns``);
    a list never seen with an element is of ``None`` in a table and where ``checked`` (an
    element then fails the check, and is seen), of ``AnyValue`` otherwise."""
    if columns and spec.columns:
        return spec.columns
    return _written(spec.annotation, checked=checked, columns=columns, every=every)


def _written(annotation: str, *, checked: bool, columns: bool, every: bool = False) -> str:
    """An annotation as :meth:`Inferred.source` writes it, each stand-in replaced: ints an
    ``int64`` column holds are ``int``, bounded where ``checked`` (a larger int then fails
    the check, and is seen); ints no one integer column holds ``int``, in a table ``Any``
    (a column of their JSON text); floats ``float``, where ``checked`` :data:`_EXACT`;
    timestamps ``datetime.datetime``, where ``checked`` (and not against ``every`` record
    already) :data:`_WHOLE`."""
    return (
        annotation.replace(_NEVER_SEEN, "None" if checked or columns else "AnyValue")
        .replace(_INT64, _BOUNDED if checked else "int")
        .replace(_WIDE_INT, "Any" if columns else "int")
        .replace(_FLOAT, _EXACT if checked else "float")
        .replace(_DATETIME, _WHOLE if checked and not every else "datetime.datetime")
    )


def _class_source(
    cls: _Class, form: Form, *, checked: bool, columns: bool, every: bool, nested: bool
) -> str:
    options = []
    form = _class_form(cls, form)
    if form == "struct" and cls.tag is not None:
        options.append(f"tag_field={_literal(cls.tag[0])}, tag={_literal(cls.tag[2])}")
    if form == "struct":
        options.append("forbid_unknown_fields=True")
    if form == "struct" and checked:
        # Never in a reference cycle (nothing refers back), made and dropped by the million:
        # not tracked by the garbage collector, as msgspec advises for such Structs.
        options.append("gc=False")
        if cls.positional and not (columns and nested):
            options.append("array_like=True")
    # Read from the shape its records had only: a record of the other shape is refused, not
    # read with names it never had (an array's values by position, or a map's by key).
    shape = f'    {FORM_ATTRIBUTE} = "{"array" if cls.positional else "map"}"'
    if form == "dataclass":
        lines = ["@dataclass", f"class {cls.name}:", f"    {FORBID_ATTRIBUTE} = True", shape]
        if cls.tag is not None:
            key, name, value = cls.tag
            line = f"    {name}: Literal[{_literal(value)}]"
            if key != name:
                line += f" = field(metadata={{{_literal(KEY_METADATA)}: {_literal(key)}}})"
            lines.append(line)
    else:
        lines = [f"class {cls.name}({', '.join(['msgspec.Struct', *options])}):", shape]
    for f in cls.fields:
        annotation = _annotation(f, checked=checked, columns=columns, every=every)
        if f.optional and not annotation.endswith("| None") and annotation not in _NULLABLE:
            annotation += " | None"
        line = f"    {f.name}: {annotation}"
        keywords = []
        if f.optional:
            keywords.append("default=None")
        if f.key != f.name:
            keywords.append(
                f"metadata={{{_literal(KEY_METADATA)}: {_literal(f.key)}}}"
                if form == "dataclass"
                else f"name={_literal(f.key)}"
            )
        if keywords == ["default=None"]:
            line += " = None"
        elif keywords:
            maker = "field" if form == "dataclass" else "msgspec.field"
            line += f" = {maker}({', '.join(keywords)})"
        lines.append(line)
    return "\n".join(lines)


def _class_form(cls: _Class, form: Form) -> Form:
    """How ``cls`` is written in a module of ``form``: as a dataclass where a key of its is one
    msgspec cannot rename a Struct's field to."""
    if form == "struct" and not all(matchable(f.key) for f in cls.fields):
        return "dataclass"
    return form


def _literal(text: str) -> str:
    """A str as Python source in double quotes, as a formatter writes it (JSON's escapes are
    Python's)."""
    return json.dumps(text, ensure_ascii=False)


def infer(records: Iterable[Any], *, flat: bool = False) -> Inferred:
    """The record types of ``records`` (untyped values, as
    :class:`~msgpack_reader_py._readers.values.ValueDecoder` gives them). Raises
    :class:`InferenceError` when they are not all maps or all arrays, or there are none.

    Maps of several kinds, told apart by a tag (a key whose few string values split the
    records into groups with different keys: ``type``, ``kind``, ``event``, ...), get a
    class per kind, ``Record`` being their union; ``flat=True`` merges them into one class.
    """
    top = Seen()
    seen: list[Any] = []
    for record in records:
        top.add(record)
        seen.append(record)
    if not seen:
        raise InferenceError("no records to infer a schema from")
    shapes = top.kinds
    if shapes not in ({"map"}, {"array"}):
        found = ", ".join(sorted(_kind_names(shapes)))
        raise InferenceError(
            f"records must all be maps or all be arrays to infer their fields; found {found}"
        )
    arrays = shapes == {"array"}
    if not (max(top.lengths) if arrays else top.fields):
        raise InferenceError(
            f"every record is an empty {'array' if arrays else 'map'}: no field to infer"
        )
    builder = _Builder()
    # An array's tag is its first value: as a map, the records are keyed f0, f1, ...
    keyed = [{f"f{i}": v for i, v in enumerate(r)} for r in seen] if arrays else seen
    tag = tag_key(keyed, only="f0" if arrays else None) if not flat else None
    if tag is not None and not arrays and not all(matchable(k) for r in seen for k in r):
        # A kind's own keys are matched by name in the union's tagged forms: a key msgspec
        # cannot match keeps the records one class.
        tag = None
    if tag is None:
        builder.record("Record", top)
        return Inferred(builder.classes, len(seen), builder.mixed)
    builder.names.add("Record")  # the union's name
    groups: dict[str, Seen] = {}
    for record in seen:
        if arrays:
            groups.setdefault(record[0], Seen()).add(record[1:])
        else:
            group = groups.setdefault(record[tag], Seen())
            group.add({key: value for key, value in record.items() if key != tag})
    names = [
        builder.record(kind_name(value), group, tag=(tag, value), first=int(arrays))
        for value, group in groups.items()
    ]
    conflicts = builder.conflicts(names)
    return Inferred(builder.classes, len(seen), builder.mixed, names, conflicts)


_KIND_NAMES = {
    "null": "None",
    "array": "arrays",
    "map": "maps",
    "dict": "maps",
    "other": "extensions",
}


def _kind_names(kinds: set[str]) -> list[str]:
    return [_KIND_NAMES.get(k, k) for k in kinds]


_NULLABLE = ("None", "Any", "AnyValue")
"""Annotations that hold ``None`` as they are: never written ``X | None``."""

_NEVER_SEEN = "<never seen>"
"""Stands for the element type of lists only ever seen empty: ``AnyValue``, or ``None`` in a
table."""

_INT64 = "<int64>"
"""Stands for ``int`` where no int seen was over int64's most (:func:`_written`)."""

_WIDE_INT = "<int>"
"""Stands for ``int`` where ints seen were below 0 and over int64's most: no integer column
holds both."""

_BOUNDED = f"Annotated[int, msgspec.Meta(le={INT64_MAX})]"
"""An ``int`` an ``int64`` column holds, as a checked type refuses any other."""

_FLOAT = "<float>"
"""Stands for ``float``: msgspec reads an int as a float there, and one past 2**53 would
lose digits without a word, so a checked ``float`` is :data:`_EXACT`."""

_DATETIME = _ANNOTATIONS["timestamp"]
"""Stands for ``datetime.datetime``, where no timestamp seen held nanoseconds (those of one that
did are ``msgpack.Timestamp``): checked, :data:`_WHOLE`."""

_WHOLE = "Annotated[datetime.datetime, WHOLE_MICROSECONDS]"
"""A checked ``datetime``: a timestamp with nanoseconds misfits, where msgspec would round it,
so that the field widens to ``msgpack.Timestamp``. Made in Python, not in C, so a table's type
checks it only where the types were not checked against every record already."""

_EXACT = f"Annotated[int, msgspec.Meta(ge={-FLOAT_EXACT}, le={FLOAT_EXACT})] | float"
"""A checked ``float``: an int a float holds exactly is read as the int it is (a float64
column holds it), and a larger one misfits, so that the field widens to ``int | float``,
whose float64 column refuses it loudly, never rounds it."""


class _Builder:
    def __init__(self) -> None:
        self.classes: list[_Class] = []
        self.names: set[str] = set()
        self.mixed: list[str] = []
        self._path: list[str] = []

    def record(
        self, name: str, seen: Seen, tag: tuple[str, str] | None = None, first: int = 0
    ) -> str:
        """Define the class of the records seen at ``seen`` (a kind's, with its ``tag`` key
        and value; arrays' values from position ``first``, after a tag); its name."""
        name = self._class_name(name)
        fields: list[_Field] = []
        used: set[str] = set()
        tagged = None if tag is None else (tag[0], identifier(tag[0], used), tag[1])
        if tag is not None:
            self._path.append(name)
        if "map" in seen.kinds:
            for key, inner in seen.fields.items():
                field_name = identifier(key, used)
                optional = seen.present[key] < seen.maps
                annotation = self._at(field_name, name + pascal(field_name), inner)
                fields.append(_Field(field_name, key, annotation, optional))
            # A dataclass's fields with defaults come after the others.
            fields.sort(key=lambda f: f.optional)
        else:
            shortest = min(seen.lengths)
            for position, inner in enumerate(seen.positions, first):
                field_name = f"f{position}"
                annotation = self._at(field_name, f"{name}F{position}", inner)
                optional = position - first >= shortest
                fields.append(_Field(field_name, field_name, annotation, optional))
        if tag is not None:
            self._path.pop()
        self.classes.append(_Class(name, fields, "map" not in seen.kinds, tagged))
        return name

    def conflicts(self, kinds: list[str]) -> list[str]:
        """The fields that the classes ``kinds`` type differently, each now ``AnyValue`` in a
        table's columns (one column holds one type)."""
        by_name = {cls.name: cls for cls in self.classes}
        annotations: dict[str, dict[str, str]] = {}
        for kind in kinds:
            for spec in by_name[kind].fields:
                bare = spec.annotation.replace(_NEVER_SEEN, "None")
                annotation = _written(bare, checked=False, columns=False).removesuffix(" | None")
                annotations.setdefault(spec.name, {})[kind] = annotation
        found = []
        for name, typed in annotations.items():
            if len(set(typed.values())) > 1:
                found.append(f"{name} ({', '.join(f'{a} in {k}' for k, a in typed.items())})")
                for kind in typed:
                    for spec in by_name[kind].fields:
                        if spec.name == name:
                            spec.columns = "AnyValue"
        return found

    def _class_name(self, name: str) -> str:
        return unique(name, self.names, "")

    def _at(self, field: str, name: str, seen: Seen) -> str:
        self._path.append(field)
        try:
            return self.annotation(name, seen)
        finally:
            self._path.pop()

    def annotation(self, name: str, seen: Seen) -> str:
        kinds = seen.kinds - {"null"}
        nullable = "null" in seen.kinds
        text = self._type(name, seen, kinds)
        if nullable and text not in _NULLABLE:
            text += " | None"
        return text

    def _type(self, name: str, seen: Seen, kinds: set[str]) -> str:
        if not kinds:
            return "None"
        if kinds == {"int", "float"}:
            return "int | float"
        if len(kinds) > 1 or kinds == {"other"}:
            found = ", ".join(sorted(_kind_names(kinds)))
            self.mixed.append(f"{'.'.join(self._path)} ({found})")
            return "AnyValue"
        (kind,) = kinds
        if kind == "int" and seen.unsigned:
            return _WIDE_INT if seen.negative else "UInt64"
        if kind == "int":
            return _INT64
        if kind == "float":
            return _FLOAT
        if kind == "timestamp" and seen.exact:
            return "msgpack.Timestamp"
        if kind in _ANNOTATIONS:
            return _ANNOTATIONS[kind]
        if kind == "map":
            common = any(count == seen.maps for count in seen.present.values())
            if len(seen.fields) > MAX_FIELDS or not common:
                merged = Seen()
                for inner in seen.fields.values():
                    merge(merged, inner)
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
                return f"list[{_NEVER_SEEN}]"  # only ever empty (or None)
            mixes = len(items) > 1 and items != {"int", "float"}
            if mixes and len(seen.lengths) == 1 and _all_scalar(seen.positions):
                return self.record(name, seen)
            return f"list[{self.annotation(name + 'Item', seen.items)}]"
        raise AssertionError(f"no annotation for {kind}")  # pragma: no cover


def _all_scalar(positions: list[Seen]) -> bool:
    return all(p.kinds and p.kinds - {"null"} <= set(_ANNOTATIONS) for p in positions)
