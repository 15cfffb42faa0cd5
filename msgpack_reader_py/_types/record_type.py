"""What a record type is: its fields in wire order, and, for a union, its kinds and their tag.

A record type is a dataclass, an attrs class, a ``typing.NamedTuple``, a ``TypedDict``, a
``msgspec.Struct`` or a fixed-length ``tuple[...]`` type: :func:`record_fields` lists its
fields as the wire sees them. A union of such classes (``Click | Key``) is a record type of
several *kinds*, told apart by a tag (:func:`record_kinds`). Every other module asks these
functions, so an annotation is read in one place.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from typing import Any

import msgspec

from .._base.cache import cached

__all__ = [
    "ABSENT",
    "FORBID_ATTRIBUTE",
    "FORM_ATTRIBUTE",
    "KEY_METADATA",
    "FieldSpec",
    "Kind",
    "Kinds",
    "forbids_unknown_keys",
    "is_fixed_tuple",
    "literal_values",
    "matchable",
    "record_fields",
    "record_kind",
    "record_kinds",
    "type_label",
    "unannotated",
    "union_fields",
    "union_members",
    "wire_form",
]

KEY_METADATA = "msgpack_key"
"""A dataclass field's map key, where it is not the field's name:
``field(metadata={"msgpack_key": "user-agent"})``."""


FORBID_ATTRIBUTE = "__forbid_unknown_keys__"
"""A class attribute: set to ``True`` on a record class (a dataclass, an attrs class, a
NamedTuple), its map-shaped records refuse a key that names no field, wherever the class is
read, as a ``msgspec.Struct`` with ``forbid_unknown_fields=True`` does."""


FORM_ATTRIBUTE = "__wire_form__"
"""A class attribute: set to ``"map"`` on a record class, its records are read from maps only
(an array there is an error, as a value of the wrong type is); ``"array"``, from arrays only.
Unset, a record is read from either (an array by field position). Types inferred from records
set it to the shape they saw, so that they never read a record of the other shape as if it
were theirs, its values given names they never had."""


def wire_form(tp: Any) -> typing.Literal["map", "array"] | None:
    """The one shape the record class ``tp`` is read from (:data:`FORM_ATTRIBUTE`), ``None``
    for either; ``TypeError`` for a value that names no shape."""
    form = getattr(tp, FORM_ATTRIBUTE, None)
    if form is None or form in ("map", "array"):
        return form
    raise TypeError(f'{type_label(tp)}: {FORM_ATTRIBUTE} is {form!r}; it may be "map" or "array"')


def forbids_unknown_keys(tp: Any) -> bool:
    """Whether the record class ``tp`` itself refuses map keys that name no field: a Struct's
    ``forbid_unknown_fields``, or :data:`FORBID_ATTRIBUTE` on any other class."""
    config = getattr(tp, "__struct_config__", None)
    if config is not None:
        return bool(config.forbid_unknown_fields)
    return getattr(tp, FORBID_ATTRIBUTE, False) is True


_UNMATCHABLE = re.compile(r'["\\\x00-\x1f]')


def matchable(key: str) -> bool:
    """Whether msgspec can match the map key ``key`` to a field by name (a Struct's
    ``rename``, a tag field): not one holding a quote, a backslash or a control character.
    Any other key is read through a map of raw values (:mod:`.forms`)."""
    return _UNMATCHABLE.search(key) is None


class _Absent:
    """The default of a ``TypedDict`` key that may be missing: a record without it has no such
    key, rather than the key with some value."""

    def __repr__(self) -> str:
        return "<absent>"

    def __reduce__(self) -> str:
        return "ABSENT"  # one object, also in a worker process


ABSENT: Any = _Absent()


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    """One field of a record type, as the wire sees it."""

    name: str  # the attribute (a TypedDict's key)
    wire_name: str  # the map key (a Struct's ``rename``)
    annotation: Any
    default: Any = msgspec.NODEFAULT  # ``ABSENT``: a TypedDict key that may be left out
    default_factory: Any = msgspec.NODEFAULT
    init_name: str = ""  # the keyword ``__init__`` takes it by, where not ``name`` (attrs)

    @property
    def required(self) -> bool:
        return self.default is msgspec.NODEFAULT and self.default_factory is msgspec.NODEFAULT

    @property
    def argument(self) -> str:
        """The keyword the record type's ``__init__`` takes this field by."""
        return self.init_name or self.name


def record_kind(tp: Any) -> str | None:
    """``"struct"``, ``"array_struct"``, ``"dataclass"``, ``"attrs"``, ``"namedtuple"``,
    ``"typeddict"``, ``"tuple"`` (a fixed-length ``tuple[...]`` type) or ``None`` (not a class
    of records: a union of them is told by :func:`union_members`)."""
    if is_fixed_tuple(tp):
        return "tuple"
    if isinstance(tp, type):
        if issubclass(tp, msgspec.Struct):
            return "array_struct" if tp.__struct_config__.array_like else "struct"
        if dataclasses.is_dataclass(tp):
            return "dataclass"
        if hasattr(tp, "__attrs_attrs__"):
            return "attrs"
        if issubclass(tp, tuple) and isinstance(getattr(tp, "_fields", None), tuple):
            return "namedtuple"
        if issubclass(tp, dict) and hasattr(tp, "__required_keys__"):
            return "typeddict"  # typing's or typing_extensions' (is_typeddict knows only one)
    return None


def is_fixed_tuple(tp: Any) -> bool:
    """Whether ``tp`` is a fixed-length ``tuple[X, Y, ...]`` type."""
    args = typing.get_args(tp)
    return typing.get_origin(tp) is tuple and bool(args) and Ellipsis not in args


@cached(maxsize=256)
def record_fields(tp: Any) -> tuple[FieldSpec, ...]:
    """The fields of a record type in wire order (a ``tuple[...]`` type's are ``[0]``, ...).

    Raises ``TypeError`` for anything else, and for a class with no fields (and no tag): its
    records would be read as empty ones, every value in them dropped.
    """
    fields = tuple(_record_fields(tp))
    if not fields and _struct_tag(tp) is None:
        if tp is msgspec.Struct:
            raise TypeError(
                "msgspec.Struct is the base class of Structs, not a record type: read records "
                "with a subclass that declares their fields"
            )
        raise TypeError(
            f"{type_label(tp)} has no fields: every record would be read as an empty one, its "
            "values dropped; declare the fields its records hold"
        )
    return fields


def _record_fields(tp: Any) -> list[FieldSpec]:
    kind = record_kind(tp)
    if kind in ("struct", "array_struct"):
        return [
            FieldSpec(f.name, f.encode_name, f.type, f.default, f.default_factory)
            for f in msgspec.structs.fields(tp)
        ]
    if kind == "tuple":
        return [FieldSpec(f"[{i}]", f"[{i}]", a) for i, a in enumerate(typing.get_args(tp))]
    if kind is None:
        raise TypeError(
            "record_type must be a dataclass, an attrs class, a NamedTuple, a TypedDict, a "
            f"msgspec.Struct, a tuple[...] type, a union of them or a dict[str, T], got {tp!r}"
        )
    hints = typing.get_type_hints(tp, include_extras=True)
    if kind == "dataclass":
        specs = []
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            default = msgspec.NODEFAULT if _missing(f.default) else f.default
            factory = msgspec.NODEFAULT if _missing(f.default_factory) else f.default_factory
            key = f.metadata.get(KEY_METADATA, f.name)
            specs.append(FieldSpec(f.name, key, hints.get(f.name, Any), default, factory))
        return specs
    if kind == "attrs":
        aliases = {a.name: getattr(a, "alias", None) or a.name for a in tp.__attrs_attrs__}
        info = typing.cast(Any, msgspec.inspect.type_info(tp))
        return [
            FieldSpec(
                f.name,
                f.encode_name,
                hints.get(f.name, Any),
                f.default,
                f.default_factory,
                aliases.get(f.name, f.name),
            )
            for f in info.fields
        ]
    if kind == "namedtuple":
        defaults = tp._field_defaults
        return [
            FieldSpec(n, n, hints.get(n, Any), defaults.get(n, msgspec.NODEFAULT))
            for n in tp._fields
        ]
    required = tp.__required_keys__  # a TypedDict
    return [
        FieldSpec(
            name, name, _required_or_not(hint), msgspec.NODEFAULT if name in required else ABSENT
        )
        for name, hint in hints.items()
    ]


def _required_or_not(annotation: Any) -> Any:
    """A ``TypedDict``'s annotation without ``Required[...]`` or ``NotRequired[...]``, which
    say whether its key may be missing (known from ``__required_keys__``), not its type."""
    origin = typing.get_origin(annotation)
    if getattr(origin, "_name", None) in ("Required", "NotRequired"):
        return _required_or_not(typing.get_args(annotation)[0])
    return annotation


def _missing(value: Any) -> bool:
    """Whether a dataclass field's default is ``dataclasses.MISSING``: by type, because a
    record type rebuilt from a pickle (cloudpickle, in Dask's workers) has its own copy."""
    return isinstance(value, type(dataclasses.MISSING))


def _struct_tag(tp: Any) -> tuple[str, str | int] | None:
    """A tagged ``msgspec.Struct``'s tag field (its map key) and tag value."""
    config = getattr(tp, "__struct_config__", None)
    if config is None or config.tag is None:
        return None
    return config.tag_field, config.tag


def union_members(tp: Any) -> tuple[Any, ...] | None:
    """The members of a ``typing.Union[...]`` or ``A | B`` annotation; ``None`` for any other."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return None


def unannotated(annotation: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` (a constrained type, ``Annotated[int, Meta(ge=0)]``,
    holds the values ``X`` holds); any other annotation as it is."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def type_label(tp: Any) -> str:
    """A type as a user writes it: ``Item``, ``Click | Key``, ``list[Header] | None``,
    ``tuple[int, str]`` (a class by its own name, never by the module it was loaded as)."""
    members = union_members(tp)
    if members is not None:
        return " | ".join(map(type_label, members))
    if tp is type(None) or tp is None:
        return "None"
    if tp is Any:
        return "Any"
    if tp is Ellipsis:
        return "..."
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return type_label(args[0])
    if origin is typing.Literal:
        return f"Literal[{', '.join(map(repr, args))}]"
    if origin is not None and args:
        name = getattr(origin, "__name__", None) or str(origin).replace("typing.", "")
        return f"{name}[{', '.join(map(type_label, args))}]"
    if isinstance(tp, type):
        return tp.__qualname__.rpartition("<locals>.")[2]  # a class made in a function: its name
    return str(tp).replace("typing.", "").replace("NoneType", "None")


def literal_values(annotation: Any) -> tuple[str | int, ...] | None:
    """The values of a ``Literal[...]`` annotation of strings only or ints only (as a tag
    holds), through ``Annotated``; ``None`` for any other annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return literal_values(typing.get_args(annotation)[0])
    if origin is not typing.Literal:
        return None
    values = typing.get_args(annotation)
    if all(type(v) is str for v in values) or all(type(v) is int for v in values):
        return values
    return None


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of a union record type, and the tag values that name it."""

    record_type: Any
    tags: tuple[str | int, ...]
    field: str | None
    """The field that holds the tag; ``None`` for a tagged Struct, whose tag is no field."""


@dataclasses.dataclass(frozen=True)
class _Tag:
    key: str  # in a map
    position: int  # in an array
    field: str | None
    values: tuple[str | int, ...]


@dataclasses.dataclass(frozen=True)
class Kinds:
    """The kinds of a union record type and the tag that tells them apart: the value of the
    map key ``key`` in a map-shaped record, of position ``position`` in an array-shaped one."""

    union: Any
    kinds: tuple[Kind, ...]
    key: str
    position: int
    name: str
    """What the tag is called in columns: the tag field's name (a Struct's ``tag_field``)."""

    @property
    def label(self) -> str:
        """``Click | Key``."""
        return type_label(self.union)

    def kind_of(self, tag: object) -> Kind | None:
        """The kind that ``tag`` names; ``None`` if none does."""
        for kind in self.kinds:
            if type(tag) is type(kind.tags[0]) and tag in kind.tags:
                return kind
        return None

    def expected(self) -> str:
        """The tags each kind takes, for a message: ``'click' (Click) or 'key' (Key)``."""
        return " or ".join(
            f"{' or '.join(map(repr, kind.tags))} ({type_label(kind.record_type)})"
            for kind in self.kinds
        )


@cached(maxsize=256)
def record_kinds(union: Any) -> Kinds:
    """The kinds of the union record type ``union`` and their tag.

    Each member must be a record class with a tag: a tagged ``msgspec.Struct`` (``tag=...``,
    its map key ``tag_field``, first in an array), or a field annotated ``Literal[...]`` (its
    map key, at its position in an array). Every member's tag has the same key and position,
    and no two members accept the same value. Raises ``TypeError`` saying why otherwise.
    """
    members = union_members(union)
    assert members is not None
    label = type_label(union)
    for member in members:
        kind = record_kind(member)
        if kind is None or kind == "tuple":
            raise TypeError(
                f"{label}: each member of a union record type must be a record class (a "
                f"dataclass, attrs class, NamedTuple, TypedDict or msgspec.Struct), got "
                f"{type_label(member)}"
            )
        record_fields(member)  # refuses a class with no fields
    tags = [_tags(member) for member in members]
    common = set.intersection(*({t.key for t in found} for found in tags))
    chosen: list[_Tag] | None = None
    why = ""
    for key in sorted(common, key=lambda k: [t.key for t in tags[0]].index(k)):
        candidate = [next(t for t in found if t.key == key) for found in tags]
        why = _conflict(members, candidate)
        if not why:
            chosen = candidate
            break
    if chosen is None:
        names = " and ".join(map(type_label, members))
        if not why:
            why = (
                "a union record type tells its kinds apart by a tag: a msgspec.Struct tag "
                "(tag=...), or a field annotated Literal[...] under the same key in every kind"
            )
        raise TypeError(f"{label}: cannot tell {names} apart: {why}")
    fields = {t.field for t in chosen}
    name = chosen[0].field if len(fields) == 1 and chosen[0].field else chosen[0].key
    kinds = tuple(Kind(m, t.values, t.field) for m, t in zip(members, chosen, strict=True))
    return Kinds(union, kinds, chosen[0].key, chosen[0].position, name)


def _tags(tp: Any) -> list[_Tag]:
    """The places a record class could keep a tag: its Struct tag, its ``Literal`` fields."""
    found = []
    offset = 0
    tag = _struct_tag(tp)
    if tag is not None:
        found.append(_Tag(tag[0], 0, None, (tag[1],)))
        offset = 1  # a tagged Struct's array holds its tag first
    for position, spec in enumerate(record_fields(tp)):
        values = literal_values(spec.annotation)
        if values is not None and all(t.key != spec.wire_name for t in found):
            found.append(_Tag(spec.wire_name, position + offset, spec.name, values))
    return found


def _conflict(members: tuple[Any, ...], tags: list[_Tag]) -> str:
    """Why ``tags`` (one per member) cannot tell the members apart; ``""`` if they can."""
    key = tags[0].key
    if len({type(t.values[0]) for t in tags}) > 1:
        return f"the tag `{key}` is a str in some kinds and an int in others"
    positions = {t.position for t in tags}
    if len(positions) > 1:
        where = ", ".join(
            f"{t.position} in {type_label(m)}" for m, t in zip(members, tags, strict=True)
        )
        return (
            f"the tag `{key}` is at position {where}: arrays are told apart by the tag's "
            "position, the same in every kind (declare it at the same place, first is best)"
        )
    seen: dict[object, Any] = {}
    for member, tag in zip(members, tags, strict=True):
        for value in tag.values:
            if value in seen:
                return (
                    f"{type_label(seen[value])} and {type_label(member)} both take the tag "
                    f"`{key}` = {value!r}"
                )
            seen[value] = member
    return ""


@cached(maxsize=256)
def union_fields(union: Any) -> tuple[FieldSpec, ...]:
    """The columns of a union record type's records, as fields: first the tag (named
    :attr:`Kinds.name`), then every kind's own fields in the order they first appear, made
    ``X | None`` (default ``None``) where some kind lacks them.

    Raises ``TypeError`` for a field that two kinds annotate differently (one column holds one
    type; ``X`` and ``X | None`` are the same column), or that has the tag's name.
    """
    kinds = record_kinds(union)
    label = kinds.label
    tags = tuple(tag for kind in kinds.kinds for tag in kind.tags)
    columns: dict[str, FieldSpec] = {
        kinds.name: FieldSpec(kinds.name, kinds.key, typing.Literal[tags])
    }
    owners: dict[str, list[Any]] = {}
    for kind in kinds.kinds:
        member = kind.record_type
        for spec in record_fields(member):
            if spec.name == kind.field:
                continue
            if spec.name == kinds.name:
                raise TypeError(
                    f"{label}: field `{spec.name}` of {type_label(member)} has the name of the "
                    "tag's column"
                )
            seen = columns.get(spec.name)
            if seen is None:
                columns[spec.name] = spec
                owners[spec.name] = [member]
                continue
            if _without_none(seen.annotation) != _without_none(spec.annotation):
                first = " and ".join(map(type_label, owners[spec.name]))
                raise TypeError(
                    f"{label}: field `{spec.name}` is {type_label(seen.annotation)} in {first} "
                    f"and {type_label(spec.annotation)} in {type_label(member)}: one column "
                    "cannot hold both; rename one of them, or read each kind on its own"
                )
            owners[spec.name].append(member)
    whole = len(kinds.kinds)
    return tuple(
        spec
        if spec.name == kinds.name
        or (len(owners[spec.name]) == whole and spec.default is not ABSENT)
        else FieldSpec(spec.name, spec.wire_name, _or_none(spec.annotation), None)
        for spec in columns.values()
    )


def _without_none(annotation: Any) -> Any:
    members = union_members(annotation)
    if members is None or type(None) not in members:
        return annotation
    rest = tuple(m for m in members if m is not type(None))
    return rest[0] if len(rest) == 1 else rest


def _or_none(annotation: Any) -> Any:
    members = union_members(annotation)
    if annotation is type(None) or (members is not None and type(None) in members):
        return annotation
    return typing.Optional[annotation]  # noqa: UP045 - an annotation object, made at run time
