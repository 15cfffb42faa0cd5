"""The record model: :class:`Item`, one telemetry record, and its wire form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["ITEM_VALUES", "Item", "ItemTuple", "ItemValues"]


@dataclass(slots=True)
class Item:
    """One telemetry record.

    On the wire an ``Item`` is a MessagePack array of its eight fields in this order:
    ``[id, process_id, thread_id, timestamp_ns, line, value, filename, path]``.
    """

    id: int
    process_id: int
    thread_id: int
    timestamp_ns: int
    line: int
    value: float
    filename: str
    path: str

    @classmethod
    def from_list(cls, values: Sequence[Any]) -> Item:
        """Build an ``Item`` from its wire form, a sequence of the eight field values.

        Raises ``TypeError`` when ``values`` does not hold exactly eight values; the field
        types are not checked (``StreamingReader`` does that).
        """
        return cls(*values)

    def to_list(self) -> list[Any]:
        """Return the wire form of this item: its eight field values, in order."""
        return [
            self.id,
            self.process_id,
            self.thread_id,
            self.timestamp_ns,
            self.line,
            self.value,
            self.filename,
            self.path,
        ]


class ItemTuple(NamedTuple):
    """:class:`Item` as a ``NamedTuple``: the same fields, immutable, and the cheapest to build.

    ``StreamingReader(source, ItemTuple)`` fills each record straight from the decoded array,
    in C, with the same checks and error contract as for ``Item``. Choose it when records are
    many and small and you only read them: it is the reader's fastest typed record.
    """

    id: int
    process_id: int
    thread_id: int
    timestamp_ns: int
    line: int
    value: float
    filename: str
    path: str


ItemValues = tuple[int, int, int, int, int, float, str, str]
"""An item's wire form as a typed tuple, for annotations: ``values[0]`` is ``id``, ``values[5]``
is ``value``, and so on in wire order."""

ITEM_VALUES: type[ItemValues] = tuple[int, int, int, int, int, float, str, str]
"""``ItemValues`` as a record type: ``StreamingReader(source, ITEM_VALUES)`` yields the decoded
tuples themselves, typed ``ItemValues``, checked to be arrays of eight values of these types,
without building any object per record. The cheapest typed record there is; fields are
positional. (A type alias cannot be passed where a type is expected, hence the separate
name.)"""
