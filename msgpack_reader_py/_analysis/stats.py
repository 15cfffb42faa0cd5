"""Per-field statistics of a stream's records, in one pass and bounded memory (what
``msgpack-reader stats`` prints; compare DuckDB's ``SUMMARIZE``).

:class:`FieldStats` is fed records, untyped (as :class:`~.values.ValueReader` reads them) or
typed (any record type), and says for every field, nested paths included, a
:class:`FieldSummary`. :func:`summarise_fields` does both in one call.

Fields and their paths:

- a map's keys are fields: ``attrs``, and its own maps' keys ``attrs.host``; a key that is not
  a string is written in brackets, as its JSON text (``codes[404]``);
- a typed record's fields (and those of records nested in it) are fields by their names, as
  a map's keys are; their values are named as the wire names them (a ``datetime`` is a
  ``timestamp``, a nested record a ``map``);
- an array-shaped record's values are fields by position: ``[0]``, ``[1]``, ...; an array
  anywhere else is one value of type ``array``, not looked into: its lengths are its range;
- a record that is neither a map nor an array (a stream of numbers) is the field ``.``.

Each field's ``count`` is the records that hold a value there, ``nil`` included; ``missing``
the records that do not (a key left out, an array too short, a parent that is absent or not a
map), so that ``count + missing`` is the number of records; ``nulls`` the values that are
``nil``.

Types are named as MessagePack names them: ``nil``, ``bool``, ``int``, ``float``, ``str``,
``bin``, ``array``, ``map``, ``timestamp``, ``ext``; a typed value of any other class by the
class's name (``date``, ``UUID``).

``min`` and ``max`` are those of the field's values of one ordered kind: numbers (``int`` and
``float`` together), strings (by code point) or timestamps. A field holding values of two of
these kinds has none (``ranges`` still has each type's own). NaN is counted (a ``float``, one
distinct value) but has no place in ``min``, ``max`` or ``mean``. ``mean`` is that of the
numbers; a ``bool`` is not a number.

``distinct`` and ``top`` leave ``nil`` out; values of different types are different values
(``1`` is not ``1.0`` nor ``true``). ``distinct`` is exact up to ``sketch`` distinct values,
then estimated from a KMV sketch (the ``sketch`` smallest of the values' 64-bit hashes, error
about ``1 / sqrt(sketch)``: 3% at the default 1024), the same in every run. ``top`` holds the
most common values and their counts, from a Misra-Gries summary of ``capacity`` values per
type: exact while no type of the field had more distinct values than that. Past it
(``top_exact`` false), each count may fall short of the true one by up to ``top_error``, a
value whose count is no larger than that is left out (a field of mostly unique values has
none), and a value as common as those shown may be missing. Arrays and extensions are
counted by their JSON text.

Memory is bounded per field, and the fields are at most ``max_fields``: the values of paths
beyond that many (a map used as a dictionary, a key per user) are not looked at, only counted
in :attr:`FieldStats.untracked`.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice, repeat, zip_longest
from operator import attrgetter, itemgetter
from typing import Any

import msgpack
import msgspec
from msgspec.msgpack import Ext

from .._base.json_text import json_text
from .._types.record_type import record_fields, record_kind

__all__ = [
    "DEFAULT_CAPACITY",
    "DEFAULT_MAX_FIELDS",
    "DEFAULT_SKETCH",
    "DEFAULT_TOP",
    "FieldStats",
    "FieldSummary",
    "summarise_fields",
]

DEFAULT_TOP = 5
DEFAULT_CAPACITY = 256
DEFAULT_SKETCH = 1024
DEFAULT_MAX_FIELDS = 1000
ROOT = "."

# Records are summarised a batch at a time, column by column: counting, min, max and sums
# then run in C (Counter, min, max, sum over a list) instead of a Python step per value.
_BATCH = 4096
_MISSING = object()  # a position an array-shaped record is too short to have
_NAN = math.nan  # every NaN counted as this one object, so that they are one value
_ORDERED = {"int": "number", "float": "number", "str": "str", "timestamp": "timestamp"}
# Hashed with its values, so that 1, 1.0 and true are three values; fixed numbers, so that
# the hashes of numbers (Python's are not seeded) are the same in every run.
_TAGS = {"bool": 1, "int": 2, "float": 3, "timestamp": 4}
_HASHES = 1 << 64
_HASH_OFFSET = 1 << 63  # Python's hashes are signed


@dataclasses.dataclass(frozen=True)
class FieldSummary:
    """The statistics of one field (see the module's docstring for what each means)."""

    path: str
    count: int
    missing: int
    nulls: int
    types: Mapping[str, int]  # the most common first
    min: Any
    max: Any
    mean: float | None
    distinct: int
    distinct_exact: bool
    top: tuple[tuple[Any, int], ...]  # (value, count), the most common first
    top_exact: bool
    top_error: int  # how far short of the true count each of ``top``'s may be
    ranges: Mapping[str, tuple[Any, Any]]  # per type: (min, max); an array's: of its lengths

    def as_json(self) -> dict[str, Any]:
        """The summary as a JSON object's members (``--json`` writes one a line)."""
        return {
            "field": self.path,
            "count": self.count,
            "missing": self.missing,
            "nulls": self.nulls,
            "types": dict(self.types),
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "distinct": self.distinct,
            "distinct_exact": self.distinct_exact,
            "top": [{"value": value, "count": count} for value, count in self.top],
            "top_exact": self.top_exact,
            "top_error": self.top_error,
            "ranges": {name: list(pair) for name, pair in self.ranges.items()},
        }


class FieldStats:
    """Statistics of every field of the records it is fed, in bounded memory.

    Feed records with :meth:`add` (one) or :meth:`update` (many, faster), then ask
    :meth:`summaries`. ``top`` is how many of the most common values each summary holds,
    ``capacity`` how many values per field and type are counted for them, ``sketch`` how many
    distinct values are counted exactly (then estimated), ``max_fields`` how many paths are
    followed at most.
    """

    def __init__(
        self,
        *,
        top: int = DEFAULT_TOP,
        capacity: int = DEFAULT_CAPACITY,
        sketch: int = DEFAULT_SKETCH,
        max_fields: int = DEFAULT_MAX_FIELDS,
    ) -> None:
        if top < 0 or capacity < max(top, 1) or sketch < 2 or max_fields < 0:
            raise ValueError(
                "expected top >= 0, capacity >= max(top, 1), sketch >= 2 and max_fields >= 0, "
                f"got top={top}, capacity={capacity}, sketch={sketch}, max_fields={max_fields}"
            )
        self._top = top
        self._limits = _Limits(capacity, sketch, max_fields)
        self._root = _Node(ROOT, self._limits)
        self._pending: list[Any] = []

    @property
    def records(self) -> int:
        """How many records were fed."""
        return self._root.count + len(self._pending)

    @property
    def untracked(self) -> int:
        """How many values were passed over, their paths being beyond ``max_fields``."""
        return self._limits.untracked

    def add(self, record: Any) -> None:
        """Count one record."""
        self._pending.append(record)
        if len(self._pending) >= _BATCH:
            self._flush()

    def update(self, records: Iterable[Any]) -> None:
        """Count each of ``records``."""
        self._flush()
        it = iter(records)
        while batch := list(islice(it, _BATCH)):
            self._root.feed(batch, root=True)

    def summaries(self) -> list[FieldSummary]:
        """Every field's summary so far, parents before their fields, in the order they were
        first seen; the record itself (``.``) first where some record is neither a map nor
        an array."""
        self._flush()
        records = self._root.count
        found: list[FieldSummary] = []
        if set(self._root.types) - {"map", "array"}:
            found.append(self._root.summary(records, self._top))
        found.extend(self._root.descendants(records, self._top))
        return found

    def _flush(self) -> None:
        if self._pending:
            batch, self._pending = self._pending, []
            self._root.feed(batch, root=True)


def summarise_fields(
    records: Iterable[Any],
    *,
    top: int = DEFAULT_TOP,
    capacity: int = DEFAULT_CAPACITY,
    sketch: int = DEFAULT_SKETCH,
    max_fields: int = DEFAULT_MAX_FIELDS,
) -> list[FieldSummary]:
    """Every field's summary of ``records`` (any iterable of records, typed or untyped), in
    the order the fields were first seen: :class:`FieldStats` fed them all at once. ``top``,
    ``capacity``, ``sketch`` and ``max_fields`` are :class:`FieldStats`' limits; raises
    ``ValueError`` where they are out of range."""
    stats = FieldStats(top=top, capacity=capacity, sketch=sketch, max_fields=max_fields)
    stats.update(records)
    return stats.summaries()


@dataclasses.dataclass
class _Limits:
    """What every field of one :class:`FieldStats` shares."""

    capacity: int
    sketch: int
    max_fields: int
    fields: int = 0
    untracked: int = 0


class _Node:
    """One path's accumulators, and the paths below it."""

    def __init__(self, path: str, limits: _Limits) -> None:
        self.path = path
        self.limits = limits
        self.children: dict[Any, _Node] = {}
        self.count = 0
        self.nulls = 0
        self.types: dict[str, int] = {}
        self.ranges: dict[str, list[Any]] = {}
        self.unordered: set[str] = set()  # types whose values could not all be compared
        self.int_sum = 0
        self.float_sum = 0.0
        self.numbers = 0
        self.hashes: set[int] = set()
        self.threshold: int | None = None  # the largest hash kept, once the sketch is full
        self.estimated = False
        self.tops: dict[str, Counter[Any]] = {}
        self.errors: dict[str, int] = {}  # how far short of the truth a type's counts may be

    def feed(self, values: Sequence[Any], *, root: bool = False) -> None:
        self.count += len(values)
        classes = Counter(map(type, values))
        if len(classes) == 1:
            groups: Iterable[tuple[type, Sequence[Any]]] = [(next(iter(classes)), values)]
        else:
            groups = [(cls, [v for v in values if type(v) is cls]) for cls in classes]
        for cls, group in groups:
            kind = _kind(cls)
            name = "map" if kind == "record" else kind
            self.types[name] = self.types.get(name, 0) + len(group)
            if kind == "nil":
                self.nulls += len(group)
            elif kind == "map":
                self._expand(_map_columns(group))
            elif kind == "record":
                self._expand(_record_columns(cls, group))
            elif root and kind == "array":
                self._expand(_positional_columns(group), positional=True)
            else:
                self._values(kind, group)

    def _expand(
        self, columns: Iterable[tuple[Any, Sequence[Any]]], *, positional: bool = False
    ) -> None:
        children = self.children
        for key, column in columns:
            child = children.get(key)
            if child is None:
                limits = self.limits
                if limits.fields >= limits.max_fields:
                    limits.untracked += len(column)
                    continue
                limits.fields += 1
                path = _child_path(self.path, key, positional=positional)
                child = children[key] = _Node(path, limits)
            child.feed(column)

    def _values(self, kind: str, group: Sequence[Any]) -> None:
        keys: Sequence[Any] = group
        if kind == "int":
            self._range(kind, min(group), max(group))
            self.int_sum += sum(group)
            self.numbers += len(group)
        elif kind == "float":
            keys = self._floats(group)
        elif kind == "str":
            self._range(kind, min(group), max(group))
        elif kind == "timestamp":
            try:
                self._range(kind, min(group, key=_instant), max(group, key=_instant))
            except TypeError:  # naive and aware datetimes, which do not compare
                self.unordered.add(kind)
        elif kind == "array":
            lengths = list(map(len, group))
            self._range(kind, min(lengths), max(lengths))
            kind, keys = "array text", list(map(json_text, group))
        elif kind == "bin" and type(group[0]) is not bytes:
            keys = list(map(bytes, group))
        elif kind == "ext" or not _hashable(group):
            kind = f"{kind} text"  # counted by their JSON text, apart from real strings
            keys = list(map(json_text, group))
        self._count(kind, keys)

    def _floats(self, group: Sequence[float]) -> Sequence[float]:
        total = _sum(group)
        finite = group
        if total != total:  # a NaN among them, or inf and -inf
            finite = [v for v in group if v == v]
            if len(finite) < len(group):
                group = [v if v == v else _NAN for v in group]
                total = _sum(finite)
        if finite:
            self._range("float", min(finite), max(finite))
            self.float_sum += total
            self.numbers += len(finite)
        return group

    def _range(self, kind: str, low: Any, high: Any) -> None:
        pair = self.ranges.get(kind)
        if pair is None:
            self.ranges[kind] = [low, high]
            return
        key = _instant if kind == "timestamp" else None
        try:
            pair[0] = min(pair[0], low, key=key)
            pair[1] = max(pair[1], high, key=key)
        except TypeError:
            self.unordered.add(kind)

    def _count(self, kind: str, keys: Sequence[Any]) -> None:
        limits = self.limits
        hashes = _hashes(kind, keys)
        # Past the sketch's size only a hash below the largest kept can change it: most are
        # dropped by a comparison in C.
        threshold = self.threshold
        if threshold is None:
            self.hashes.update(hashes)
        else:
            self.hashes.update(filter(threshold.__gt__, hashes))
        if len(self.hashes) >= limits.sketch:
            if len(self.hashes) > limits.sketch:
                self.hashes = set(sorted(self.hashes)[: limits.sketch])
                self.estimated = True
            self.threshold = max(self.hashes)
        top = self.tops.get(kind)
        if top is None:
            top = self.tops[kind] = Counter()
        top.update(keys)
        if len(top) > limits.capacity:
            self.tops[kind], cut = _reduced(top, limits.capacity)
            self.errors[kind] = self.errors.get(kind, 0) + cut

    def summary(self, records: int, top: int) -> FieldSummary:
        ranges = {name: (pair[0], pair[1]) for name, pair in self.ranges.items()}
        for name in self.unordered:
            ranges.pop(name, None)
        low, high = _bounds(ranges)
        mean = None
        if self.numbers:
            total = self.int_sum if not self.types.get("float") else self.int_sum + self.float_sum
            mean = total / self.numbers
        return FieldSummary(
            path=self.path,
            count=self.count,
            missing=records - self.count,
            nulls=self.nulls,
            types=dict(sorted(self.types.items(), key=lambda pair: -pair[1])),
            min=low,
            max=high,
            mean=mean,
            distinct=self._distinct(),
            distinct_exact=not self.estimated,
            top=self._top(top),
            top_exact=not self.errors,
            top_error=max(self.errors.values(), default=0),
            ranges=ranges,
        )

    def _distinct(self) -> int:
        if not self.estimated:
            return len(self.hashes)
        assert self.threshold is not None
        # KMV: the k-th smallest of n uniform hashes lies near k / n of the way.
        fraction = (self.threshold + _HASH_OFFSET + 1) / _HASHES
        return round((self.limits.sketch - 1) / fraction)

    def _top(self, top: int) -> tuple[tuple[Any, int], ...]:
        # A count no larger than its possible error says nothing of its value: left out.
        counted = [
            (msgspec.json.decode(key) if kind.endswith(" text") else key, n)
            for kind, counter in self.tops.items()
            for key, n in counter.items()
            if n > self.errors.get(kind, 0)
        ]
        counted.sort(key=lambda pair: -pair[1])
        return tuple(counted[:top])

    def descendants(self, records: int, top: int) -> Iterator[FieldSummary]:
        for child in self.children.values():
            yield child.summary(records, top)
            yield from child.descendants(records, top)


_KINDS: dict[type, str] = {}


def _kind(cls: type) -> str:
    """The type name of a value of class ``cls``, or ``record`` for a record type's."""
    kind = _KINDS.get(cls)
    if kind is None:
        kind = _KINDS[cls] = _classify(cls)
    return kind


def _classify(cls: type) -> str:
    named: tuple[tuple[Any, str], ...] = (
        (type(None), "nil"),
        (bool, "bool"),
        (int, "int"),
        (float, "float"),
        (str, "str"),
        ((bytes, bytearray, memoryview), "bin"),
        ((msgpack.Timestamp, datetime.datetime), "timestamp"),
        ((Ext, msgpack.ExtType), "ext"),  # ExtType is a NamedTuple: before records
        (dict, "map"),
    )
    for classes, name in named:
        if issubclass(cls, classes):
            return name
    if record_kind(cls) is not None and _field_names(cls):
        return "record"
    if issubclass(cls, (list, tuple)):
        return "array"
    return cls.__name__


def _field_names(cls: type) -> tuple[str, ...]:
    try:
        return tuple(spec.name for spec in record_fields(cls))
    except TypeError:  # a class with no fields: a value like any other
        return ()


def _child_path(parent: str, key: Any, *, positional: bool = False) -> str:
    if isinstance(key, str):
        return key if parent == ROOT else f"{parent}.{key}"
    if parent == ROOT and positional:
        # An array-shaped record's values: its fields f0, f1, ..., as every command and
        # engine names the columns of untyped records (schema, --where, tables, Parquet).
        return f"f{key}"
    return f"{'' if parent == ROOT else parent}[{json_text(key)}]"


def _map_columns(maps: Sequence[dict[Any, Any]]) -> Iterable[tuple[Any, Sequence[Any]]]:
    first = maps[0].keys()
    if all(map(first.__eq__, map(dict.keys, maps))):
        keys = list(first)  # every map has these keys: the columns come out in C
        if not keys:
            return []
        if len(keys) == 1:
            return [(keys[0], list(map(itemgetter(keys[0]), maps)))]
        return zip(keys, zip(*map(itemgetter(*keys), maps), strict=True), strict=True)
    columns: dict[Any, list[Any]] = {}
    for record in maps:
        for key, value in record.items():
            column = columns.get(key)
            if column is None:
                column = columns[key] = []
            column.append(value)
    return columns.items()


def _record_columns(cls: type, records: Sequence[Any]) -> Iterable[tuple[Any, Sequence[Any]]]:
    names = _field_names(cls)
    if len(names) == 1:
        return [(names[0], list(map(attrgetter(names[0]), records)))]
    return zip(names, zip(*map(attrgetter(*names), records), strict=True), strict=True)


def _positional_columns(arrays: Sequence[Any]) -> Iterable[tuple[Any, Sequence[Any]]]:
    if len(set(map(len, arrays))) == 1:
        return enumerate(zip(*arrays, strict=True))
    return (
        (i, [v for v in column if v is not _MISSING])
        for i, column in enumerate(zip_longest(*arrays, fillvalue=_MISSING))
    )


def _hashes(kind: str, keys: Sequence[Any]) -> Iterator[int]:
    """The 64-bit hashes of ``keys`` (values of type ``kind``) for the distinct count, the same
    in every run.

    A number's Python hash is nearly the number itself, and 1, 1.0 and true share one: each
    is hashed in a tuple with its type's tag, whose hash (xxHash's rounds) mixes it. Python's
    hash of text or bytes is seeded afresh in every process: their bytes' CRC-32 and Adler-32
    stand for them instead, in C.
    """
    tag = _TAGS.get(kind)
    if tag is not None and (kind != "timestamp" or type(keys[0]) is msgpack.Timestamp):
        return map(hash, zip(repeat(tag), keys))
    if kind != "bin":
        texts = keys if type(keys[0]) is str else list(map(json_text, keys))
        try:
            keys = list(map(str.encode, texts))
        except UnicodeEncodeError:  # a lone surrogate, which only a Python caller can pass
            keys = [text.encode("utf-8", "surrogatepass") for text in texts]
    tag = zlib.crc32(kind.encode())
    return map(hash, zip(repeat(tag), map(zlib.crc32, keys), map(zlib.adler32, keys)))


def _reduced(top: Counter[Any], capacity: int) -> tuple[Counter[Any], int]:
    """Misra-Gries, merged a batch at a time (Agarwal et al., "Mergeable summaries"): the
    (capacity + 1)-th largest count taken off every count, what is left kept; and what was
    taken off."""
    cut = sorted(top.values(), reverse=True)[capacity]
    return Counter({key: n - cut for key, n in top.items() if n > cut}), cut


def _instant(value: Any) -> Any:
    return value.to_unix_nano() if isinstance(value, msgpack.Timestamp) else value


def _hashable(values: Sequence[Any]) -> bool:
    try:
        hash(values[0])
    except TypeError:
        return False
    return True


def _sum(values: Sequence[float]) -> float:
    try:
        return math.fsum(values)
    except (OverflowError, ValueError):  # past the largest float, or inf - inf: IEEE's answer
        return sum(values, 0.0)


def _bounds(ranges: Mapping[str, tuple[Any, Any]]) -> tuple[Any, Any]:
    """The field's ``min`` and ``max``: those of its one ordered kind, if it has just one."""
    kinds = {_ORDERED[name] for name in ranges if name in _ORDERED}
    if len(kinds) != 1:
        return None, None
    pairs = [pair for name, pair in ranges.items() if name in _ORDERED]
    key = _instant if kinds == {"timestamp"} else None
    return min((p[0] for p in pairs), key=key), max((p[1] for p in pairs), key=key)
