"""Decoding: runs of framed records decoded, typed and validated by one msgspec call each,
and a failing record decoded alone to say where it fails.

:class:`RecordDecoder` decodes a record type through its wire forms (:mod:`.forms`);
:class:`KindsDecoder` a union of kinds, through the tagged forms of its first record's shape
(producers keep to one shape; a run that mixes them fails that decode and is decoded record by
record, which handles either). ``values=True`` decodes rows (tuples of field values) for the
Arrow columns and the text formats instead of records. A record msgspec refuses is phrased by
:mod:`.messages`; one it refuses with no path is located by :mod:`.locate`. Over 500 lines:
the two decoders and the rows they make read best together.
"""

from __future__ import annotations

import datetime
import itertools
import operator
import re
import typing
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from .._base.cache import cached
from .._base.errors import describe
from .._base.ext import ExtHook
from .forms import (
    Compiler,
    Converter,
    Sides,
    constant,
    counter,
    hides_fields,
    identity,
    positional_rename,
    shaped,
    slot,
    trailing_optional,
)
from .locate import locate
from .messages import (
    AT_PATH,
    MAP_AS_KEY,
    SHAPE,
    UNKNOWN,
    HookFailure,
    RecordFailure,
    as_failure,
    guarded_hook,
    is_map_as_key,
    is_mapping,
    is_wide_timestamp,
    one_shape,
    phrase,
)
from .record_type import (
    FieldSpec,
    Kind,
    Kinds,
    forbids_unknown_keys,
    matchable,
    record_fields,
    record_kind,
    record_kinds,
    type_label,
    union_fields,
    union_members,
    wire_form,
)
from .untyped import undecodable

__all__ = ["KindsDecoder", "RecordDecoder", "RecordFailure", "plain_values", "record_decoder"]


_FAILURES = (
    msgspec.MsgspecError,
    ValueError,
    TypeError,
    RecursionError,
    RecordFailure,
    HookFailure,
)


class _Decoding:
    """What decoding one record shares between a record type and a union of kinds: turning
    each failure into a :class:`RecordFailure` that says where in the record it is."""

    record_type: Any
    _hook: ExtHook | None
    _plain: Callable[[Any], Any]

    def _one(self, data: Any) -> Any:
        raise NotImplementedError

    def _failure(self, message: str, data: Any) -> RecordFailure:
        """What msgspec's ``ValidationError`` (``message``) says, in the reader's words."""
        raise NotImplementedError

    def decode_one(self, data: Any) -> Any:
        """One record from its bytes; ``RecordFailure`` names the field path and the value.

        A record that is not valid MessagePack (invalid UTF-8, a broken timestamp, nesting too
        deep) fails as such (``decodable=False``) wherever that is in it, even when the typed
        decode would have stopped at a field of the wrong type first: what is reported does
        not depend on the order in which msgspec looks at things.
        """
        try:
            return self._one(data)
        except RecordFailure:
            raise
        except HookFailure as exc:
            raise self._located(data, exc.reason) from exc.__cause__
        except (msgspec.MsgspecError, ValueError, TypeError, RecursionError) as exc:
            broken = undecodable(self._plain, data)
            if broken is not None:
                cause = broken.__cause__
                found = locate(self.record_type, data, None)
                if found is not None and isinstance(cause, UnicodeDecodeError) and found[0]:
                    broken = RecordFailure(
                        f"{broken.reason}, in field `{found[0]}`", decodable=False
                    )
                raise broken from cause
            if isinstance(exc, msgspec.ValidationError):
                # msgspec names where a timestamp past datetime's years is, but not which.
                if is_wide_timestamp(exc):
                    found = locate(self.record_type, data, self._hook)
                    if found is not None:
                        raise RecordFailure(found[1], field=found[0]) from exc
                raise self._failure(str(exc), data) from exc
            reason = MAP_AS_KEY if is_map_as_key(exc) else f"{type(exc).__name__}: {exc}"
            raise self._located(data, reason) from exc

    def _located(self, data: Any, reason: str) -> RecordFailure:
        """A failure msgspec raised with no path (``reason``), at the value it is about."""
        found = locate(self.record_type, data, self._hook)
        if found is None:
            return RecordFailure(reason)
        return RecordFailure(found[1], field=found[0])

    def _raw(self, data: Any) -> Any:
        """The record decoded without a type, to show what was found; ``UNKNOWN`` when it
        cannot be (the record also holds invalid UTF-8, or nests too deeply)."""
        try:
            return self._plain(data)
        except (msgspec.MsgspecError, ValueError, RecursionError):
            return UNKNOWN


class RecordDecoder(_Decoding):
    """Decodes runs of whole records of ``record_type`` (array- or map-shaped) in one call.

    ``record_type=Any`` decodes each record as the value it is (lists, dicts, ``datetime`` for
    the timestamp extension, :class:`msgspec.msgpack.Ext` for others), for a ``mapper``. With
    ``values=True`` each record is given as the tuple of its field values, in field order (the
    rows of :mod:`.arrow`). A ``dict[str, T]`` record type takes map-shaped records only.
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
        self._hook = ext_hook
        hook = None if ext_hook is None else guarded_hook(ext_hook)
        self._plain = msgspec.msgpack.Decoder().decode  # for error messages: no hook to fail
        self._finish: Callable[[list[Any]], list[Any]]
        self._made: list[int] | None = None
        self._make: Callable[[list[Any]], list[Any]] = identity
        self.build: Callable[[list[Any]], list[Any]] | None = None
        """Makes records of what :meth:`decode_run` returned when that is not records yet;
        ``RecordFailure`` if the record type's own ``__init__`` refuses one. A reader calls it
        on a slice of a run at a time, as its loop takes them (see :mod:`.delivery`)."""
        self.fields: Sequence[FieldSpec] = ()
        if record_type is Any:
            wire: Any = Any
            self._finish = identity
        elif is_mapping(record_type):  # no columns: Columns refuses it for rows
            wire, convert = Compiler(ext_hook, forbid_unknown_keys, _nested).wire(record_type)
            self._finish = identity if convert is None else lambda d: list(map(convert, d))
        else:
            self.fields = record_fields(record_type)
            wire, self._finish = self._compile(record_type, ext_hook, forbid_unknown_keys, values)
        try:
            self._run = msgspec.msgpack.Decoder(list[wire], ext_hook=hook).decode
            self._single = msgspec.msgpack.Decoder(wire, ext_hook=hook).decode
        except TypeError as exc:
            raise TypeError(
                f"cannot read records of type {type_label(record_type)}: {exc}"
            ) from None

    def _compile(
        self, record_type: Any, ext_hook: ExtHook | None, forbid: bool, values: bool
    ) -> tuple[Any, Callable[[list[Any]], list[Any]]]:
        compiler = Compiler(ext_hook, forbid, _nested)
        names = [f.name for f in self.fields]
        kind = record_kind(record_type)
        if kind == "tuple":
            wire, convert = compiler.wire(record_type)
            return wire, _finisher(record_type, convert)
        flat = all(f.required for f in self.fields) and all(
            compiler._field(record_type, f)[1] is None for f in self.fields
        )
        field_types: Any = tuple(f.annotation for f in self.fields)
        as_tuple: Any = tuple[field_types]
        forbid = forbid or forbids_unknown_keys(record_type)
        if values and flat and _rows_as_tuples(record_type, forbid):
            # Rows, not records: an array decodes to its row. A map decodes to a generated
            # Struct that counts those it makes, so that a run of arrays only is passed on
            # without a look at each row (that look cost a twelfth of a raw decode).
            self._made, counting = counter()
            map_form = msgspec.defstruct(
                f"{record_type.__name__}AsMap",
                [(slot(i), f.annotation) for i, f in enumerate(self.fields)],
                rename=positional_rename(self.fields),
                forbid_unknown_fields=forbid,
                namespace=counting,
                gc=False,
            )
            slots = [slot(i) for i in range(len(self.fields))]
            return typing.Union[shaped(record_type, as_tuple, map_form)], _flat_rows(slots)  # noqa: UP007
        if (
            kind == "dataclass"
            and flat
            and not forbid
            and not hides_fields(record_type)
            and all(f.wire_name == f.name for f in self.fields)
        ):
            # The common flat record: arrays decode to tuples, built with starmap in C.
            wire = typing.Union[shaped(record_type, as_tuple, record_type)]  # noqa: UP007
            if values:
                # The type's own __post_init__ checks each record, as a reader's are checked:
                # the records are built, then taken apart.
                return wire, _taken_apart(_row_of(kind, names), _flat_finisher(record_type))
            # The records are built later (``build``), a few hundred at a time: the garbage
            # collector tracks each, and a whole run of them made it scan them all.
            self._make = _flat_finisher(record_type)
            self.build = self._build
            return wire, identity
        wire, convert = compiler.record(record_type)
        # A run decoded straight into the type needs no finishing, unless rows are wanted.
        self._made = None if values else compiler.made.get(record_type)
        finish = _finisher(record_type, convert)
        if values and kind != "namedtuple":
            return wire, _taken_apart(_row_of(kind, names), finish)
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

    def _one(self, data: Any) -> Any:
        return self._make(self._finish([self._single(data)]))[0]

    def _failure(self, message: str, data: Any) -> RecordFailure:
        return as_failure(phrase(self.record_type, self.fields, message, self._raw(data), UNKNOWN))


class KindsDecoder(_Decoding):
    """Decodes runs of records of a union record type (``Click | Key``): each is the kind its
    tag names (:func:`~.record_type.record_kinds`), in either shape; see the module's
    docstring. With ``values=True`` each record is the tuple of its columns
    (:func:`~.record_type.union_fields`): its tag, then every kind's fields, ``None`` where its
    kind has no such field."""

    build: Callable[[list[Any]], list[Any]] | None = None  # the values are the records

    def __init__(
        self,
        record_type: Any,
        *,
        ext_hook: ExtHook | None = None,
        forbid_unknown_keys: bool = False,
        values: bool = False,
        compiler: Compiler | None = None,
    ) -> None:
        self.record_type = record_type
        self.kinds = record_kinds(record_type)
        if compiler is None:
            compiler = Compiler(ext_hook, forbid_unknown_keys, _nested)
        else:  # a field of a record being compiled: its hook, limits and recursion checks
            ext_hook = compiler.ext_hook
        self._hook = ext_hook
        hook = None if ext_hook is None else guarded_hook(ext_hook)
        self._plain = msgspec.msgpack.Decoder().decode
        sides = compiler.sides(self.kinds)
        kinds = _kinds_finisher(sides.makers)
        rows = _union_rows(self.kinds) if values else identity
        maps: Any = sides.maps
        arrays: Any = sides.arrays
        try:
            maps_run = msgspec.msgpack.Decoder(list[maps], ext_hook=hook).decode
            maps_one = msgspec.msgpack.Decoder(maps, ext_hook=hook).decode
            if sides.probe is None:
                arrays_run = msgspec.msgpack.Decoder(list[arrays], ext_hook=hook).decode
                arrays_one = msgspec.msgpack.Decoder(arrays, ext_hook=hook).decode
            else:
                arrays_run, arrays_one = self._probed(sides, hook)
        except TypeError as exc:
            raise TypeError(f"cannot read records of type {self.kinds.label}: {exc}") from None

        def finish(decoded: list[Any]) -> list[Any]:
            rows_of: list[Any] = rows(kinds(decoded))
            return rows_of

        self._runs: tuple[Callable[[Any], list[Any]], ...] = (
            lambda data: finish(maps_run(data)),
            lambda data: finish(arrays_run(data)),
        )
        self._ones: tuple[Callable[[Any], Any], ...] = (
            lambda data: finish([maps_one(data)])[0],
            lambda data: finish([arrays_one(data)])[0],
        )

    @staticmethod
    def _probed(
        sides: Sides, hook: Callable[[int, memoryview], Any] | None
    ) -> tuple[Callable[[Any], list[Any]], Callable[[Any], Any]]:
        """Decoders of arrays whose tag is not first: the probe reads each record's tag, then
        the record is decoded as its tag's kind."""
        probe = msgspec.msgpack.Decoder(sides.probe).decode
        raws = msgspec.msgpack.Decoder(list[msgspec.Raw]).decode
        forms = {
            (type(tag), tag): msgspec.msgpack.Decoder(form, ext_hook=hook).decode
            for tag, form in sides.by_tag.items()
        }

        def one(data: Any) -> Any:
            tag = probe(data).tag
            decode = forms.get((type(tag), tag))  # by type too: True is no tag 1
            if decode is None:
                raise msgspec.ValidationError("the tag names no kind")  # phrased from the bytes
            return decode(data)

        def run(data: Any) -> list[Any]:
            return [one(raw) for raw in raws(data)]

        return run, one

    def decode_run(self, data: Any) -> list[Any]:
        """The records of ``data``: an array header for their count, then the records.

        Decoded in the shape of the first record; raises ``RecordFailure`` without saying
        which record when any is not of its shape or not a record of any kind.
        """
        try:
            return self._runs[_starts_array(data, _array_header_size(data))](data)
        except _FAILURES as exc:
            raise RecordFailure(str(exc)) from exc

    def _one(self, data: Any) -> Any:
        return self._ones[_starts_array(data, 0)](data)

    def _failure(self, message: str, data: Any) -> RecordFailure:
        kinds = self.kinds
        raw = self._raw(data)
        if isinstance(raw, dict):
            tag, shape = raw.get(kinds.key, UNKNOWN), "map"
        elif isinstance(raw, list):
            tag = raw[kinds.position] if len(raw) > kinds.position else UNKNOWN
            shape = "array"
        else:
            found = describe(raw) if raw is not UNKNOWN else "a value that is not a record"
            return RecordFailure(
                f"expected a record of {kinds.label} (an array or a map, with its tag), found "
                f"{found}"
            )
        other = "map" if shape == "array" else "array"
        if all(wire_form(kind.record_type) == other for kind in kinds.kinds):
            wanted = one_shape(f"every kind of {kinds.label}", other)
            return RecordFailure(f"expected {wanted}, found {describe(raw)}")
        where = f"`{kinds.key}`" if shape == "map" else f"at position {kinds.position}"
        if tag is UNKNOWN:
            return RecordFailure(
                f"the tag {where} is missing: a record of {kinds.label} names its kind there "
                f"({kinds.expected()})"
            )
        kind = kinds.kind_of(tag)
        if kind is None:
            found = repr(tag) if type(tag) in (str, int) else describe(tag)
            return RecordFailure(
                f"the tag {where} is {found}, which names no kind of {kinds.label} "
                f"({kinds.expected()})"
            )
        only = wire_form(kind.record_type)
        if only is not None and only != shape:
            wanted = one_shape(type_label(kind.record_type), only)
            return RecordFailure(f"expected {wanted}, found {describe(raw)}")
        text = self._kind_phrase(kind, message, raw, shape)
        return as_failure(text, f" (in a {type_label(kind.record_type)} record)")

    def _kind_phrase(self, kind: Kind, message: str, raw: Any, shape: str) -> str:
        tp = kind.record_type
        fields = record_fields(tp)
        match = AT_PATH.match(message)
        assert match is not None
        path = match.group("path") or ""
        if shape == "array" and not path and SHAPE.match(match.group("message")):
            tags = int(kind.field is None)
            required = tags + len(fields) - trailing_optional(fields)
            size = tags + len(fields)
            count = f"{required} to {size}" if required < size else f"{size}"
            what = "its tag and fields" if tags else "its fields"
            return f"expected an array of {count} values ({what}), found {describe(raw)}"
        if shape == "array" and kind.field is None and not self.kinds.position:
            # A tagged Struct's array holds its tag first: the fields start at position 1.
            index = re.match(r"^\[(\d+)\]", path)
            if index is not None:
                position = int(index.group(1))
                path = f"[{position - 1}]{path[index.end() :]}" if position else path
                raw = raw[1:]
        message = match.group("message") + (f" - at `${path}`" if path else "")
        return phrase(tp, fields, message, raw, UNKNOWN)


def _rows_as_tuples(tp: Any, forbid: bool) -> bool:
    """Whether the rows of a flat record type may be decoded straight from arrays as tuples
    (and from maps as a generated Struct): no check of its own (``__post_init__``), no hidden
    or tagged field, and an array of more values than fields refused, as a tuple refuses it
    (an ``array_like`` Struct passes over extra values unless it forbids unknown fields)."""
    kind = record_kind(tp)
    if not all(matchable(f.wire_name) for f in record_fields(tp)):
        return False  # the map form renames its fields to the keys
    if kind == "dataclass":
        return not hasattr(tp, "__post_init__") and not hides_fields(tp)
    if kind not in ("struct", "array_struct"):
        return False
    config = tp.__struct_config__
    return (
        not hasattr(tp, "__post_init__")
        and config.tag is None
        and (kind == "struct" or forbid or config.forbid_unknown_fields)
    )


def _starts_array(data: Any, at: int) -> bool:
    """Whether the MessagePack value at ``data[at]`` is an array."""
    if len(data) <= at:
        return False
    first = data[at]
    return 0x90 <= first <= 0x9F or first in (0xDC, 0xDD)


def _array_header_size(data: Any) -> int:
    """The size of the array header ``data`` starts with (a run's records follow it)."""
    first = data[0] if len(data) else 0x90
    return 1 if first <= 0x9F else 3 if first == 0xDC else 5


def _kinds_finisher(makers: dict[Any, Converter]) -> Callable[[list[Any]], list[Any]]:
    """Records of the kinds from what the tagged forms decode: a run decoded straight into
    the kinds' own types (tagged Structs) is passed on as it is."""
    if not makers:
        return identity
    forms = set(makers)

    def finish(decoded: list[Any]) -> list[Any]:
        if forms.isdisjoint(map(type, decoded)):
            return decoded
        return [makers[type(v)](v) if type(v) in forms else v for v in decoded]

    return finish


def _union_rows(kinds: Kinds) -> Callable[[list[Any]], list[Any]]:
    """The rows of records of ``kinds``: a tuple of :func:`~.record_type.union_fields`' columns
    each, ``None`` for a field the record's kind does not have."""
    columns = [spec.name for spec in union_fields(kinds.union)]
    rows: dict[Any, Callable[[Any], tuple[Any, ...]]] = {}
    for kind in kinds.kinds:
        own = {f.name for f in record_fields(kind.record_type)}
        read = _reader(record_kind(kind.record_type))
        getters: list[Callable[[Any], Any]] = [
            read(kind.field) if kind.field is not None else constant(kind.tags[0])
        ]
        getters.extend(read(name) if name in own else _none for name in columns[1:])
        rows[kind.record_type] = _row_by(getters)

    def make(records: list[Any]) -> list[Any]:
        return [rows[type(r)](r) for r in records]

    return make


def _none(_record: Any) -> None:
    return None


def _row_by(getters: list[Callable[[Any], Any]]) -> Callable[[Any], tuple[Any, ...]]:
    return lambda record: tuple(get(record) for get in getters)


def _reader(kind: str | None) -> Callable[[str], Callable[[Any], Any]]:
    """How a field of a record of ``kind`` is read: by attribute, or by key (a TypedDict)."""
    if kind == "typeddict":
        return lambda name: operator.methodcaller("get", name)
    return operator.attrgetter


@cached(maxsize=64)
def record_decoder(
    record_type: Any,
    *,
    ext_hook: ExtHook | None = None,
    forbid_unknown_keys: bool = False,
    values: bool = False,
) -> RecordDecoder | KindsDecoder:
    """A decoder of records of ``record_type`` (a :class:`KindsDecoder` for a union of
    kinds), made once per set of arguments and then shared (a decoder holds no state between
    calls). Raises ``TypeError`` for a type no record can be read as, saying why."""
    if union_members(record_type) is not None:
        return KindsDecoder(
            record_type, ext_hook=ext_hook, forbid_unknown_keys=forbid_unknown_keys, values=values
        )
    return RecordDecoder(
        record_type, ext_hook=ext_hook, forbid_unknown_keys=forbid_unknown_keys, values=values
    )


_KEPT_AS_THEY_ARE = (datetime.datetime, bytes, bytearray, memoryview)


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
        return identity
    plain = {record_type}

    def finish(decoded: list[Any]) -> list[Any]:
        if set(map(type, decoded)) <= plain:
            return decoded
        return list(map(convert, decoded))

    return finish


def _row_of(kind: str | None, names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of a record's field values: by attribute name, or by key (a TypedDict)."""
    if kind == "typeddict":
        return lambda record: tuple(map(record.get, names))
    get = operator.attrgetter(*names)
    if len(names) == 1:  # attrgetter of one name returns the value itself
        return lambda record: (get(record),)
    return get


def _taken_apart(
    row: Callable[[Any], tuple[Any, ...]], finish: Callable[[list[Any]], list[Any]]
) -> Callable[[list[Any]], list[Any]]:
    """The tuples of field values (``row``) of the records ``finish`` makes."""
    return lambda decoded: list(map(row, finish(decoded)))


def _flat_rows(slots: list[str]) -> Callable[[list[Any]], list[Any]]:
    """The tuples of field values of flat records decoded as tuples (arrays, kept as they
    are) and as generated Structs (maps, taken apart)."""
    row = _row_of(None, slots)
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


def _nested(union: Any, compiler: Compiler) -> KindsDecoder:
    """The decoder of a union of kinds inside a record, compiled with the record's compiler."""
    return KindsDecoder(union, compiler=compiler)
