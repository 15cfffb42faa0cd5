"""What inference sees of records: at each place of them, the kinds of value found there,
and, inside arrays and maps, what is found at each position, key and element (:class:`Seen`).
What the record types are made of (:mod:`.infer`)."""

from __future__ import annotations

from typing import Any

import msgpack

from .._types.ints import INT64_MAX

__all__ = ["SCALARS", "Seen", "merge"]

SCALARS = {
    type(None): "null",
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    bytes: "bytes",
    msgpack.Timestamp: "timestamp",
}
"""The kind of each scalar a record holds, by its Python type."""

DATETIME_NANOSECONDS = (-62_135_596_800 * 10**9, 253_402_300_800 * 10**9 - 1000)
"""The first and last instants a ``datetime`` holds (years 1 to 9999), in nanoseconds since the
epoch."""


class Seen:
    """What was seen at one place of the records: the kinds of value, and inside them."""

    def __init__(self) -> None:
        self.kinds: set[str] = set()
        self.items: Seen | None = None  # the elements of arrays
        self.positions: list[Seen] = []  # the elements of arrays, by position
        self.lengths: set[int] = set()
        self.fields: dict[str, Seen] = {}  # the entries of string-keyed maps
        self.present: dict[str, int] = {}
        self.maps = 0
        self.keys: Seen | None = None  # the keys and values of other maps
        self.values: Seen | None = None
        # Whether an int was below 0, or over int64's most: which one column holds the ints.
        self.negative = False
        self.unsigned = False
        # Whether a timestamp was one a datetime cannot hold: with nanoseconds it would round,
        # or outside its years.
        self.exact = False

    def add(self, value: Any) -> None:
        kind = SCALARS.get(type(value))
        if kind is not None:
            self.kinds.add(kind)
            if kind == "int":
                if value < 0:
                    self.negative = True
                elif value > INT64_MAX:
                    self.unsigned = True
            elif kind == "timestamp" and not self.exact:
                nanoseconds = value.to_unix_nano()
                self.exact = bool(nanoseconds % 1000) or not (
                    DATETIME_NANOSECONDS[0] <= nanoseconds <= DATETIME_NANOSECONDS[1]
                )
        elif isinstance(value, (list, tuple)):
            self._array(value)
        elif isinstance(value, dict):
            if all(type(k) is str for k in value):
                self._map(value)
            else:
                self.kinds.add("dict")
                self.keys = self.keys or Seen()
                self.values = self.values or Seen()
                for key, item in value.items():
                    self.keys.add(key)
                    self.values.add(item)
        else:
            self.kinds.add("other")

    def _array(self, value: list[Any] | tuple[Any, ...]) -> None:
        self.kinds.add("array")
        self.items = self.items or Seen()
        self.lengths.add(len(value))
        while len(self.positions) < len(value):
            self.positions.append(Seen())
        for position, item in zip(self.positions, value, strict=False):
            self.items.add(item)
            position.add(item)

    def _map(self, value: dict[str, Any]) -> None:
        self.kinds.add("map")
        self.maps += 1
        for key, item in value.items():
            seen = self.fields.get(key)
            if seen is None:
                seen = self.fields[key] = Seen()
                self.present[key] = 0
            self.present[key] += 1
            seen.add(item)


def merge(into: Seen, other: Seen) -> None:
    """Fold what ``other`` saw into ``into`` (the values of a map too wide to be a record)."""
    into.kinds |= other.kinds
    into.negative |= other.negative
    into.unsigned |= other.unsigned
    into.exact |= other.exact
    for attribute in ("items", "keys", "values"):
        theirs = getattr(other, attribute)
        if theirs is not None:
            mine = getattr(into, attribute) or Seen()
            merge(mine, theirs)
            setattr(into, attribute, mine)
    into.lengths |= other.lengths
    while len(into.positions) < len(other.positions):
        into.positions.append(Seen())
    for mine, theirs in zip(into.positions, other.positions, strict=False):
        merge(mine, theirs)
    into.maps += other.maps
    for key, theirs in other.fields.items():
        mine = into.fields.setdefault(key, Seen())
        into.present[key] = into.present.get(key, 0) + other.present[key]
        merge(mine, theirs)
