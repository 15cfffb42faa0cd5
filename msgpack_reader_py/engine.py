"""Every use of msgspec: record types compiled into decoders for both wire shapes, runs of
records decoded in one call, and msgspec's errors phrased as the reader's own.

A record (and every record nested in it) reaches the wire as an array of its fields by position
or as a map of its fields by name, in any mix. msgspec decodes each type in one shape only (a
dataclass from a map, a NamedTuple or an ``array_like`` Struct from an array), and a union may
hold one array-like and one map-like type but at most one Struct. So a record type is decoded
through a union of two *wire forms*:

- the array form: the type itself when it decodes from arrays (an ``array_like`` Struct, a
  NamedTuple) and nothing in it had to change; for a flat dataclass without defaults a plain
  ``tuple[...]`` of its field types (built afterwards with ``starmap``, in C); otherwise a
  generated NamedTuple with the same fields, defaults and rewritten field types (msgspec
  refuses an array with more values than it has fields);
- the map form: the type itself when it decodes from maps (a dataclass, a plain Struct) and
  nothing in it had to change; otherwise a generated dataclass keyed by the wire names (when
  the array form is a Struct: a union holds one) or a generated Struct that renames its fields
  to the wire names.

A field type is rewritten when it mentions a record type (which becomes the union of its two
forms) or, with an ``ext_hook``, a ``datetime`` (msgspec hands an extension other than the
timestamp to the hook only where any value is accepted). A value decoded into a generated form
is converted to the user's type afterwards by a converter compiled once per type; subtrees that
needed no rewriting are passed through untouched.

The reader's loop (:mod:`.decoder`) frames records with ``msgpack.Unpacker``, which keeps the
error contract (truncation, sizes, hostile headers), and decodes each chunk's complete records
with one :meth:`RecordDecoder.decode_run`; only when that fails does it decode them one by one
(:meth:`RecordDecoder.decode_one`) to name the first bad record and its field path.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import itertools
import operator
import re
import types
import typing
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from ._shared import shared
from .errors import describe

__all__ = [
    "INVALID_TIMESTAMP",
    "KEY_METADATA",
    "ExtHook",
    "FieldSpec",
    "HookFailure",
    "RecordDecoder",
    "RecordFailure",
    "guarded_hook",
    "invalid_utf8",
    "plain_values",
    "record_decoder",
    "record_fields",
    "record_kind",
]

ExtHook = Callable[[int, memoryview], Any]

KEY_METADATA = "msgpack_key"
"""A dataclass field's map key, where it is not the field's name:
``field(metadata={"msgpack_key": "user-agent"})``."""
Converter = Callable[[Any], Any]

_SHAPE = re.compile(r"^Expected `(array|object|array \| object|object \| array)`")
_GOT = re.compile(r"^(?P<expected>Expected `[^`]*`), got `[^`]*`$")
_MISSING_KEY = re.compile(r"^Object missing required field `(?P<name>[^`]*)`$")
_UNKNOWN_KEY = re.compile(r"^Object contains unknown field `(?P<name>[^`]*)`$")
_EXPECTED = re.compile(r"^Expected `([^`]*)`")
_NAMES = {"null": "None", "object": "map"}
_BAD_TIMESTAMP = "Invalid MessagePack timestamp"
_UNKNOWN: Any = object()
_FACTORY: Any = type("DefaultFactory", (), {"__repr__": lambda self: "<default factory>"})()
_PATH_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[(\.\.\.)\]")
_AT = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_KEY_IN = re.compile(r"^(?P<message>.*) - at `key` in `\$(?P<path>[^`]*)`$", re.DOTALL)


class RecordFailure(Exception):
    """A record that is not a record of the type: ``reason`` names the field path.

    ``decodable`` is ``False`` when the bytes cannot be decoded at all (invalid UTF-8, nesting
    too deep), whatever the type.
    """

    def __init__(self, reason: str, *, decodable: bool = True, field: str = "") -> None:
        super().__init__(f"field `{field}` {reason}" if field else reason)
        self.reason = str(self)
        self.bare = reason
        self.decodable = decodable
        self.field = field

    def within(self, name: str) -> RecordFailure:
        """The same failure, for the field ``name`` of the record that holds this one."""
        field = f"{name}.{self.field}" if self.field else name
        return RecordFailure(self.bare, decodable=self.decodable, field=field)


class HookFailure(Exception):
    """What an ``ext_hook`` raised, wrapped so that it is told apart from a bug of ours."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def guarded_hook(hook: ExtHook) -> ExtHook:
    """``hook``, raising :class:`HookFailure` (naming the hook and the extension type) for
    whatever it raises."""

    def guarded(code: int, data: memoryview) -> Any:
        try:
            return hook(code, data)
        except Exception as exc:
            name = getattr(hook, "__qualname__", "ext_hook")
            raise HookFailure(
                f"{name} refused extension type {code}: {type(exc).__name__}: {exc}"
            ) from exc

    return guarded


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    """One field of a record type, as the wire sees it."""

    name: str  # the attribute
    wire_name: str  # the map key (a Struct's ``rename``)
    annotation: Any
    default: Any = msgspec.NODEFAULT
    default_factory: Any = msgspec.NODEFAULT

    @property
    def required(self) -> bool:
        return self.default is msgspec.NODEFAULT and self.default_factory is msgspec.NODEFAULT


def record_kind(tp: Any) -> str | None:
    """``"struct"``, ``"array_struct"``, ``"dataclass"``, ``"namedtuple"``, ``"tuple"`` (a
    fixed-length ``tuple[...]`` type) or ``None`` (not a record type)."""
    if _is_fixed_tuple(tp):
        return "tuple"
    return _kind(tp)


def _kind(tp: Any) -> str | None:
    if isinstance(tp, type):
        if issubclass(tp, msgspec.Struct):
            return "array_struct" if tp.__struct_config__.array_like else "struct"
        if dataclasses.is_dataclass(tp):
            return "dataclass"
        if issubclass(tp, tuple) and isinstance(getattr(tp, "_fields", None), tuple):
            return "namedtuple"
    return None


@shared(maxsize=256)
def record_fields(tp: Any) -> tuple[FieldSpec, ...]:
    """The fields of a record type in wire order (a ``tuple[...]`` type's are ``[0]``, ...)."""
    return tuple(_record_fields(tp))


def _record_fields(tp: Any) -> list[FieldSpec]:
    kind = _kind(tp)
    if kind in ("struct", "array_struct"):
        return [
            FieldSpec(f.name, f.encode_name, f.type, f.default, f.default_factory)
            for f in msgspec.structs.fields(tp)
        ]
    hints = typing.get_type_hints(tp, include_extras=True) if kind else {}
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
    if kind == "namedtuple":
        defaults = tp._field_defaults
        return [
            FieldSpec(n, n, hints.get(n, Any), defaults.get(n, msgspec.NODEFAULT))
            for n in tp._fields
        ]
    if _is_fixed_tuple(tp):
        return [FieldSpec(f"[{i}]", f"[{i}]", a) for i, a in enumerate(typing.get_args(tp))]
    raise TypeError(
        "record_type must be a dataclass, a NamedTuple, a msgspec.Struct or a tuple[...] type, "
        f"got {tp!r}"
    )


def _missing(value: Any) -> bool:
    """Whether a dataclass field's default is ``dataclasses.MISSING``: by type, because a
    record type rebuilt from a pickle (cloudpickle, in Dask's workers) has its own copy."""
    return isinstance(value, type(dataclasses.MISSING))


_DECODABLE: frozenset[Any] = frozenset(
    {
        type(None), bool, int, float, str, bytes, bytearray, object,
        list, tuple, set, frozenset, dict,
        datetime.datetime, datetime.date, datetime.time, datetime.timedelta,
        uuid.UUID, decimal.Decimal, msgspec.Raw, msgspec.msgpack.Ext,
    }
)  # fmt: skip


def _decodable(cls: type) -> bool:
    """Whether msgspec decodes values of the class ``cls`` without a hook."""
    return (
        cls in _DECODABLE
        or issubclass(cls, enum.Enum)
        or typing.is_typeddict(cls)
        or hasattr(cls, "__attrs_attrs__")
    )


def _hides_fields(tp: Any) -> bool:
    """Whether ``tp`` is a dataclass with fields that ``__init__`` does not take."""
    return _kind(tp) == "dataclass" and any(not f.init for f in dataclasses.fields(tp))


def _is_fixed_tuple(tp: Any) -> bool:
    args = typing.get_args(tp)
    return typing.get_origin(tp) is tuple and bool(args) and Ellipsis not in args


def _identity(value: Any) -> Any:
    return value


class _Compiler:
    """Wire types and converters for the types of one record type, each made once."""

    def __init__(self, ext_hook: ExtHook | None, forbid_unknown_keys: bool) -> None:
        self.ext_hook = ext_hook
        self.forbid = forbid_unknown_keys
        self.forms: dict[Any, tuple[Any, Converter | None]] = {}
        self._building: set[Any] = set()  # the record types being compiled, outermost first
        self.made: dict[Any, list[int]] = {}
        """For a type decoded from arrays as itself: how many values its generated map form
        has made (a count that only grows), so that a run with none needs no look at each."""

    def wire(self, annotation: Any) -> tuple[Any, Converter | None]:
        """The type msgspec decodes in place of ``annotation``, and the converter from what it
        gives to what the annotation wants (``None``: the same value will do)."""
        if _kind(annotation) is not None:
            return self.record(annotation)
        if annotation is datetime.datetime and self.ext_hook is not None:
            return Any, _expect_datetime
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            inner, convert = self.wire(args[0])
            # Subscripted through operator: Python 3.10's grammar has no `X[a, *rest]`.
            return operator.getitem(typing.Annotated, (inner, *args[1:])), convert
        if origin is typing.Union or origin is types.UnionType:
            members = [self.wire(a) for a in args]
            if all(c is None for _, c in members):
                return annotation, None
            wire_members = tuple(m for m, _ in members)
            return typing.Union[wire_members], _union_converter(members)  # noqa: UP007
        if origin in (list, tuple, dict) and args:
            if origin is tuple and Ellipsis not in args:
                parts = [self.wire(a) for a in args]
                if all(c is None for _, c in parts):
                    return annotation, None
                converters = [c or _identity for _, c in parts]
                wire_args = tuple(p for p, _ in parts)
                return tuple[wire_args], lambda v: tuple(  # type: ignore[valid-type]
                    c(x) for c, x in zip(converters, v, strict=True)
                )
            if origin is dict:
                key, key_convert = self.wire(args[0])
                value, value_convert = self.wire(args[1])
                if key_convert is None and value_convert is None:
                    return annotation, None
                kc, vc = key_convert or _identity, value_convert or _identity
                return dict[key, value], lambda d: {kc(k): vc(v) for k, v in d.items()}  # type: ignore[valid-type]
            element, convert = self.wire(args[0])
            if convert is None:
                return annotation, None
            if origin is list:
                return list[element], lambda v: [convert(x) for x in v]  # type: ignore[valid-type]
            return tuple[element, ...], lambda v: tuple(convert(x) for x in v)  # type: ignore[valid-type]
        if (
            annotation is not Any
            and origin is None  # a generic alias passes for a type on Python 3.10
            and isinstance(annotation, type)
            and not _decodable(annotation)
        ):
            raise TypeError(
                f"{annotation.__qualname__} is not a type a record can hold (no decoder for it)"
            )
        return annotation, None

    def _field(self, tp: Any, spec: FieldSpec) -> tuple[Any, Converter | None]:
        try:
            return self.wire(spec.annotation)
        except TypeError as exc:
            raise TypeError(f"field `{spec.name}` of {tp.__qualname__}: {exc}") from None

    def record(self, tp: Any) -> tuple[Any, Converter | None]:
        if tp in self.forms:
            return self.forms[tp]
        if tp in self._building:
            raise TypeError(f"{tp.__qualname__} holds itself: a recursive record type")
        self._building.add(tp)
        kind = _kind(tp)
        fields = record_fields(tp)
        try:
            wired = [(f, *self._field(tp, f)) for f in fields]
        finally:
            self._building.discard(tp)
        # msgspec would set a dataclass's init=False fields from a map: a generated form won't.
        changed = (
            any(c is not None for _, _, c in wired)
            or _hides_fields(tp)
            or (kind == "dataclass" and any(f.wire_name != f.name for f in fields))
        )
        name = tp.__name__
        array_form: Any
        map_form: Any
        if kind in ("array_struct", "namedtuple") and not changed and not self.forbid:
            array_form = tp
        else:
            # A NamedTuple form leaves the union's one Struct for the map form.
            array_form = _namedtuple_form(f"{name}AsArray", wired)
        namespace: dict[str, Any] = {}
        if array_form is tp:
            self.made[tp], namespace = _counter()
        if kind in ("dataclass", "struct") and not changed and not self.forbid:
            map_form = tp
        elif isinstance(array_form, type) and issubclass(array_form, msgspec.Struct):
            map_form = dataclasses.make_dataclass(
                f"{name}AsMap", [_dataclass_field(f, t) for f, t, _ in wired], namespace=namespace
            )
        else:
            map_form = msgspec.defstruct(
                f"{name}AsMap",
                [_struct_field(f, t) for f, t, _ in wired],
                rename={f.name: f.wire_name for f in fields},
                forbid_unknown_fields=self.forbid,
                namespace=namespace,
            )
        converters = {f.name: c for f, _, c in wired if c is not None}
        converter = _record_converter(tp, kind, fields, (array_form, map_form), converters)
        form = (typing.Union[array_form, map_form], converter)  # noqa: UP007
        self.forms[tp] = form
        return form


def _counter() -> tuple[list[int], dict[str, Any]]:
    """A count that only grows, and the namespace of a generated form whose every value made
    adds one to it (its ``__post_init__``, which msgspec calls as it decodes one)."""
    made = [0]
    return made, {"__post_init__": lambda _: operator.setitem(made, 0, made[0] + 1)}


def _namedtuple_form(name: str, wired: list[tuple[FieldSpec, Any, Any]]) -> Any:
    """A NamedTuple with the fields and defaults of a record type, to decode its arrays. A
    NamedTuple has no default factories: ``_FACTORY`` stands in, the converter calls them."""
    form = typing.NamedTuple(name, [(f.name, t) for f, t, _ in wired])  # type: ignore[misc]
    defaults = {
        f.name: _FACTORY if f.default is msgspec.NODEFAULT else f.default
        for f, _, _ in wired
        if not f.required
    }
    form.__new__.__defaults__ = tuple(defaults.values())
    form._field_defaults = defaults
    return form


def _struct_field(spec: FieldSpec, wire_type: Any) -> tuple[Any, ...]:
    if spec.default_factory is not msgspec.NODEFAULT:
        return (spec.name, wire_type, msgspec.field(default_factory=spec.default_factory))
    if spec.default is not msgspec.NODEFAULT:
        return (spec.name, wire_type, spec.default)
    return (spec.name, wire_type)


def _dataclass_field(spec: FieldSpec, wire_type: Any) -> tuple[Any, ...]:
    if spec.default_factory is not msgspec.NODEFAULT:
        return (spec.wire_name, wire_type, dataclasses.field(default_factory=spec.default_factory))
    if spec.default is not msgspec.NODEFAULT:
        return (spec.wire_name, wire_type, dataclasses.field(default=spec.default))
    return (spec.wire_name, wire_type)


def _expect_datetime(value: Any) -> datetime.datetime:
    """A ``datetime`` field decoded as ``Any`` (for the ``ext_hook``), checked afterwards."""
    if isinstance(value, datetime.datetime):
        return value
    raise RecordFailure(f"expected datetime, got {describe(value)}")


def _union_converter(members: list[tuple[Any, Converter | None]]) -> Converter:
    """Convert a value decoded for a union by the member it was decoded as: its type tells
    (a record's wire forms, ``list``, ``dict``, ``tuple``); a member decoded as ``Any`` (a
    ``datetime`` with an ``ext_hook``) takes whatever no other member claims."""
    by_type: dict[Any, Converter] = {}
    fallback: Converter | None = None
    for wire_type, member_convert in members:
        if member_convert is None:
            continue
        if wire_type is Any:
            fallback = member_convert
        for decoded in _decoded_types(wire_type):
            by_type[decoded] = member_convert

    def convert(value: Any) -> Any:
        member_convert = by_type.get(type(value))
        if member_convert is not None:
            return member_convert(value)
        if fallback is not None and not isinstance(value, _PLAIN):
            return fallback(value)
        return value

    return convert


_PLAIN = (int, float, str, bytes, bool, type(None), enum.Enum)


def _decoded_types(wire_type: Any) -> set[Any]:
    """The Python types msgspec gives for values of ``wire_type``."""
    origin = typing.get_origin(wire_type)
    if origin is typing.Union or origin is types.UnionType:
        return set().union(*map(_decoded_types, typing.get_args(wire_type)))
    if origin is typing.Annotated:
        return _decoded_types(typing.get_args(wire_type)[0])
    if origin in (list, tuple, dict):
        return {origin}
    return {wire_type} if isinstance(wire_type, type) else set()


def _or_made(convert: Converter, factory: Callable[[], Any]) -> Converter:
    """``convert``, or a value from ``factory`` where the array form left ``_FACTORY``."""
    return lambda value: factory() if value is _FACTORY else convert(value)


def _failed_field(value: Any, fields: Iterable[tuple[str, str, Converter]]) -> RecordFailure:
    """The failure of the first field of ``value`` its converter refuses, with its name."""
    for name, source, field_convert in fields:
        try:
            field_convert(getattr(value, source))
        except RecordFailure as failure:  # noqa: PERF203 - the error path only
            return failure.within(name)
    raise AssertionError("no field of the record fails")  # pragma: no cover


def _record_converter(
    tp: Any,
    kind: str | None,
    fields: Sequence[FieldSpec],
    forms: tuple[Any, Any],
    converters: dict[str, Converter],
) -> Converter | None:
    array_form, map_form = forms
    if array_form is tp and map_form is tp:  # pragma: no cover - one form never decodes both
        return None
    names = [f.name for f in fields]
    wire_names = [f.wire_name for f in fields]
    per_field = [
        converters.get(f.name, _identity)
        if f.default_factory is msgspec.NODEFAULT
        else _or_made(converters.get(f.name, _identity), f.default_factory)
        for f in fields
    ]

    # A generated dataclass map form is keyed by the wire names; the other forms by names.
    by_wire_name = dataclasses.is_dataclass(map_form) and map_form is not tp

    def convert(value: Any) -> Any:
        if type(value) is tp:
            return value
        source_names = wire_names if by_wire_name and type(value) is map_form else names
        try:
            values = [c(getattr(value, s)) for c, s in zip(per_field, source_names, strict=True)]
        except RecordFailure:
            raise _failed_field(value, zip(names, source_names, per_field, strict=True)) from None
        if kind == "namedtuple":
            return tp(*values)
        return tp(**dict(zip(names, values, strict=True)))

    return convert


INVALID_TIMESTAMP = "an invalid timestamp extension (wrong length, or nanoseconds >= 10**9)"


def invalid_utf8(exc: UnicodeDecodeError) -> str:
    """How a record with a str that is not UTF-8 is described."""
    return f"invalid UTF-8 in a str ({exc.reason} at position {exc.start})"


def _undecodable(decode: Callable[[Any], Any], data: Any) -> RecordFailure | None:
    """Why ``data`` is not valid MessagePack, if it is not: decoded untyped, it fails."""
    try:
        decode(data)
    except UnicodeDecodeError as exc:
        reason = invalid_utf8(exc)
        cause: BaseException = exc
    except RecursionError as exc:
        reason, cause = "nesting deeper than the decoder allows", exc
    except msgspec.ValidationError as exc:
        if not str(exc).startswith(_BAD_TIMESTAMP):  # pragma: no cover - untyped: only that
            return None
        reason, cause = INVALID_TIMESTAMP, exc
    except msgspec.DecodeError as exc:
        # Framing took bytes for a whole record that the decoder finds cut off or broken.
        reason, cause = f"not valid MessagePack ({exc})", exc
    except (ValueError, TypeError):
        return None  # valid MessagePack, only not hashable where a map key is
    else:
        return None
    failure = RecordFailure(reason, decodable=False)
    failure.__cause__ = cause
    return failure


class RecordDecoder:
    """Decodes runs of whole records of ``record_type`` (array- or map-shaped) in one call.

    ``record_type=Any`` decodes each record as the value it is (lists, dicts, ``datetime`` for
    the timestamp extension, :class:`msgspec.msgpack.Ext` for others), for a ``mapper``. With
    ``values=True`` each record is given as the tuple of its field values, in field order (the
    rows of :mod:`.arrow`).
    """

    def __init__(
        self,
        record_type: Any,
        *,
        ext_hook: ExtHook | None = None,
        forbid_unknown_keys: bool = False,
        values: bool = False,
    ) -> None:
        self.record_type = record_type
        hook = None if ext_hook is None else guarded_hook(ext_hook)
        self._plain = msgspec.msgpack.Decoder().decode  # for error messages: no hook to fail
        self._finish: Callable[[list[Any]], list[Any]]
        self._made: list[int] | None = None
        self._make: Callable[[list[Any]], list[Any]] = _identity
        self.build: Callable[[list[Any]], list[Any]] | None = None
        """Makes records of what :meth:`decode_run` returned when that is not records yet;
        ``RecordFailure`` if the record type's own ``__init__`` refuses one. A reader calls it
        on a slice of a run at a time, as its loop takes them (see :mod:`.decoder`)."""
        if record_type is Any:
            self.fields: Sequence[FieldSpec] = ()
            wire: Any = Any
            self._finish = _identity
        else:
            self.fields = record_fields(record_type)
            wire, self._finish = self._compile(record_type, ext_hook, forbid_unknown_keys, values)
        try:
            self._run = msgspec.msgpack.Decoder(list[wire], ext_hook=hook).decode
            self._one = msgspec.msgpack.Decoder(wire, ext_hook=hook).decode
        except TypeError as exc:
            raise TypeError(f"cannot read records of type {record_type!r}: {exc}") from None

    def _compile(
        self, record_type: Any, ext_hook: ExtHook | None, forbid: bool, values: bool
    ) -> tuple[Any, Callable[[list[Any]], list[Any]]]:
        compiler = _Compiler(ext_hook, forbid)
        names = [f.name for f in self.fields]
        if _is_fixed_tuple(record_type):
            wire, convert = compiler.wire(record_type)
            return wire, _finisher(record_type, convert)
        if (
            _kind(record_type) == "dataclass"
            and all(f.required for f in self.fields)
            and not forbid
            and not _hides_fields(record_type)
            and all(f.wire_name == f.name for f in self.fields)
            and all(compiler._field(record_type, f)[1] is None for f in self.fields)
        ):
            # The common flat record: arrays decode to tuples, built with starmap in C.
            field_types: Any = tuple(f.annotation for f in self.fields)
            as_tuple: Any = tuple[field_types]
            if values and not hasattr(record_type, "__post_init__"):
                # Rows, not records: an array decodes to its row. A map decodes to a generated
                # Struct that counts those it makes, so that a run of arrays only is passed on
                # without a look at each row (that look cost a twelfth of a raw decode).
                self._made, counting = _counter()
                map_form = msgspec.defstruct(
                    f"{record_type.__name__}AsMap",
                    [(f.name, f.annotation) for f in self.fields],
                    namespace=counting,
                    gc=False,
                )
                return typing.Union[as_tuple, map_form], _flat_rows(names)  # noqa: UP007
            wire = typing.Union[as_tuple, record_type]  # noqa: UP007
            if values:
                # The type's own __post_init__ checks each record, as a reader's are checked:
                # the records are built, then taken apart.
                return wire, _taken_apart(names, _flat_finisher(record_type))
            # The records are built later (``build``), a few hundred at a time: the garbage
            # collector tracks each, and a whole run of them made it scan them all.
            self._make = _flat_finisher(record_type)
            self.build = self._build
            return wire, _identity
        wire, convert = compiler.record(record_type)
        self._made = compiler.made.get(record_type)
        finish = _finisher(record_type, convert)
        if values and _kind(record_type) in ("dataclass", "struct", "array_struct"):
            return wire, _taken_apart(names, finish)
        return wire, finish

    def decode_run(self, data: Any) -> list[Any]:
        """The records of ``data``: an array header for their count, then the records.

        Raises ``RecordFailure`` without saying which record (see :meth:`decode_one`).
        """
        try:
            made = self._made
            if made is None:
                return self._finish(self._run(data))
            before = made[0]
            decoded = self._run(data)
            # Decoded from arrays only, the run holds nothing but records already.
            return decoded if made[0] == before else self._finish(decoded)
        except _FAILURES as exc:
            raise RecordFailure(str(exc)) from exc

    def _build(self, decoded: list[Any]) -> list[Any]:
        try:
            return self._make(decoded)
        except _FAILURES as exc:
            raise RecordFailure(str(exc)) from exc

    def decode_one(self, data: Any) -> Any:
        """One record from its bytes; ``RecordFailure`` names the field path and the value.

        A record that is not valid MessagePack (invalid UTF-8, a broken timestamp, nesting too
        deep) fails as such (``decodable=False``) wherever that is in it, even when the typed
        decode would have stopped at a field of the wrong type first: what is reported does
        not depend on the order in which msgspec looks at things.
        """
        try:
            return self._make(self._finish([self._one(data)]))[0]
        except RecordFailure:
            raise
        except HookFailure as exc:
            raise RecordFailure(exc.reason) from exc.__cause__
        except (msgspec.MsgspecError, ValueError, TypeError, RecursionError) as exc:
            broken = _undecodable(self._plain, data)
            if broken is not None:
                raise broken from broken.__cause__
            if isinstance(exc, msgspec.ValidationError):
                raise RecordFailure(self._phrase(str(exc), data)) from exc
            raise RecordFailure(f"{type(exc).__name__}: {exc}") from exc

    def _phrase(self, message: str, data: Any) -> str:
        """msgspec's ``Expected `int`, got `str` - at `$[2][1]``` as ``field `tags[1]`
        expected int, got str 'x'``."""
        key = _KEY_IN.match(message)
        match = key or _AT.match(message)
        assert match is not None
        text, path = match.group("message"), match.group("path") or ""
        if _SHAPE.match(text) is not None and not path:
            return self._shape_error(text, data)
        missing = _MISSING_KEY.match(text)
        if missing is not None:
            name = _field_path(self.record_type, f"{path}.{missing.group('name')}")
            return f"field `{name}` is missing (a map without its key, and no default)"
        unknown = _UNKNOWN_KEY.match(text)
        if unknown is not None:
            where = _field_path(self.record_type, path) if path else ""
            owner = f"field `{where}`: " if where else ""
            return f"{owner}map has key {unknown.group('name')!r}, which names no field"
        got = _GOT.match(text)
        if got is not None and not key:
            found = _found(self._raw(data), path)
            if found is not _UNKNOWN:
                text = f"{got.group('expected')}, got {describe(found)}"
        field = _field_path(self.record_type, path) if self.fields else path
        text = _EXPECTED.sub(_our_names, text)
        text = (text[:1].lower() + text[1:]).replace("`", "")
        if key:
            owner = f"field `{field}`: " if field else ""
            return f"{owner}a map key {text}"
        return f"field `{field}` {text}" if field else text

    def _shape_error(self, message: str, data: Any) -> str:
        """The record itself has the wrong shape: say what a record is and what was found."""
        size = len(self.fields)
        required = sum(f.required for f in self.fields)
        count = f"{required} to {size}" if required < size else f"{size}"
        maps = not _is_fixed_tuple(self.record_type)
        want = f"an array{' or a map' if maps else ''} of {count} fields"
        value = self._raw(data)
        found = message.rsplit("got ", 1)[-1].replace("`", "") if value is _UNKNOWN else None
        return f"expected {want}, found {found or describe(value)}"

    def _raw(self, data: Any) -> Any:
        """The record decoded without a type, to show what was found; ``_UNKNOWN`` when it
        cannot be (the record also holds invalid UTF-8, or nests too deeply)."""
        try:
            return self._plain(data)
        except (msgspec.MsgspecError, ValueError, RecursionError):
            return _UNKNOWN


_FAILURES = (
    msgspec.MsgspecError,
    ValueError,
    TypeError,
    RecursionError,
    RecordFailure,
    HookFailure,
)


def _our_names(match: re.Match[str]) -> str:
    """msgspec's ``Expected `int | null``` in Python's words: ``Expected `int | None```."""
    names = (_NAMES.get(name, name) for name in match.group(1).split(" | "))
    return f"Expected `{' | '.join(names)}`"


def _field_path(record_type: Any, path: str) -> str:
    """msgspec's path (``[2][1]``, ``.inner.level``) in field names (``tags[1]``)."""
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
    return "".join(parts)


def _is_record(tp: Any) -> bool:
    return _kind(tp) is not None or _is_fixed_tuple(tp)


def _unwrap(tp: Any) -> Any:
    """The record or container inside ``Optional[...]`` / ``Annotated[...]``."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        structured = [m for m in members if _is_record(m) or typing.get_origin(m)]
        return _unwrap(structured[0]) if structured else tp
    return tp


_KEPT_AS_THEY_ARE = (datetime.datetime, bytes, bytearray, memoryview)


@shared(maxsize=64)
def record_decoder(
    record_type: Any,
    *,
    ext_hook: ExtHook | None = None,
    forbid_unknown_keys: bool = False,
    values: bool = False,
) -> RecordDecoder:
    """A :class:`RecordDecoder`, made once per set of arguments and then shared (a decoder
    holds no state between calls)."""
    return RecordDecoder(
        record_type, ext_hook=ext_hook, forbid_unknown_keys=forbid_unknown_keys, values=values
    )


def plain_values(rows: list[Any]) -> list[Any]:
    """``rows`` with every nested record made a dict keyed by its map keys, every ``Enum`` its
    value, every NamedTuple a tuple: what pyarrow builds struct, list and map columns from.
    Datetimes and bytes are kept as they are."""
    plain: list[Any] = msgspec.to_builtins(rows, builtin_types=_KEPT_AS_THEY_ARE)
    return plain


def _finisher(record_type: Any, convert: Converter | None) -> Callable[[list[Any]], list[Any]]:
    """Records from what the wire forms decode: a run decoded straight into ``record_type``
    (the common case) is passed on as it is, without a call per record."""
    if convert is None:
        return _identity
    plain = {record_type}

    def finish(decoded: list[Any]) -> list[Any]:
        if set(map(type, decoded)) <= plain:
            return decoded
        return list(map(convert, decoded))

    return finish


def _row_of(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of a record's field values, by attribute name."""
    get = operator.attrgetter(*names)
    if len(names) == 1:  # attrgetter of one name returns the value itself
        return lambda record: (get(record),)
    return get


def _taken_apart(
    names: list[str], finish: Callable[[list[Any]], list[Any]]
) -> Callable[[list[Any]], list[Any]]:
    """The tuples of field values of the records ``finish`` makes."""
    row = _row_of(names)
    return lambda decoded: list(map(row, finish(decoded)))


def _flat_rows(names: list[str]) -> Callable[[list[Any]], list[Any]]:
    """The tuples of field values of flat records decoded as tuples (arrays, kept as they
    are) and as generated Structs (maps, taken apart)."""
    row = _row_of(names)
    return lambda decoded: [v if type(v) is tuple else row(v) for v in decoded]


def _flat_finisher(record_type: type) -> Callable[[list[Any]], list[Any]]:
    """Records from what the flat form decodes: tuples (arrays) and instances (maps)."""
    # An iterable record type could be unpacked by starmap: never tried on one.
    iterable = hasattr(record_type, "__iter__")

    def finish(decoded: list[Any]) -> list[Any]:
        if not decoded or type(decoded[0]) is not tuple or iterable:
            if set(map(type, decoded)) <= {record_type}:
                return decoded
            return [record_type(*v) if type(v) is tuple else v for v in decoded]
        # Arrays, most likely all of them: starmap goes on until a record decoded from a map,
        # which it cannot unpack (the type is not iterable), and which is taken as it is.
        records: list[Any] = []
        pending = iter(decoded)
        while True:
            try:
                records.extend(itertools.starmap(record_type, pending))
            except TypeError:
                if type(decoded[len(records)]) is tuple:
                    raise  # from the type's own __init__
                records.append(decoded[len(records)])
                continue
            return records

    return finish


def _found(value: Any, path: str) -> Any:
    """The value at msgspec's ``path`` in a record decoded as it is; ``_UNKNOWN`` if lost."""
    for name, index, _ in _PATH_SEGMENT.findall(path):
        if name and isinstance(value, dict) and name in value:
            value = value[name]
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return _UNKNOWN
    return value
