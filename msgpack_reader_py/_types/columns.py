"""A record type's columns, worked out once per type, for the writers of rows.

:class:`Columns` lists the columns of a record type's rows: its fields in wire order
(their names, the map keys they are read from, their annotations), or, for a union of kinds,
the tag and every kind's fields (:func:`~.record_type.union_fields`). The Arrow columns
(:mod:`.arrow`) and the CSV and JSON writers (:mod:`.writers`) derive what they need from it;
the fields themselves are read by :mod:`.record_type`.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from .._base.cache import cached
from .record_type import (
    ABSENT,
    FieldSpec,
    Kinds,
    literal_values,
    record_fields,
    record_kind,
    record_kinds,
    type_label,
    unannotated,
    union_fields,
    union_members,
)

__all__ = ["Columns", "annotation_text", "columns_of", "is_scalar", "members"]

# A tuple, not a set: an annotation may not be hashable (``Annotated[int, {"unit": "ms"}]``).
_SCALARS = (int, float, str, bytes, bool, type(None))


def annotation_text(annotation: Any) -> str:
    """An annotation as a user writes it: ``int``, ``list[str]``, ``Header | None``."""
    return type_label(annotation)


def members(annotation: Any) -> tuple[Any, bool]:
    """``(X, nullable)`` for ``X | None`` and ``Optional[X]`` (``X`` itself may be a union:
    ``A | B`` for ``A | B | None``); ``(annotation, False)`` else."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = tuple(m for m in typing.get_args(annotation) if m is not type(None))
        if len(rest) < len(typing.get_args(annotation)):
            return (rest[0] if len(rest) == 1 else typing.Union[rest]), True  # noqa: UP007
    return annotation, False


def is_scalar(annotation: Any) -> bool:
    """Whether a field holds one plain value: ``int``, ``float``, ``str``, ``bytes``,
    ``bool``, a ``Literal`` of strs or of ints (a union's tag), or one of them ``| None``."""
    inner = unannotated(members(annotation)[0])  # a constrained int is an int
    return inner in _SCALARS or literal_values(inner) is not None


class Columns:
    """The columns of a record type's rows, in wire order; made once per type
    (:func:`columns_of`) and shared, so nothing in it is changed by its users.

    ``names`` are the fields' attribute names (``"[0]"``, ``"[1]"``, ... for a ``tuple[...]``
    type, whose records are the decoded tuples themselves); ``kind`` is ``"dataclass"``,
    ``"attrs"``, ``"namedtuple"``, ``"typeddict"``, ``"struct"``, ``"tuple"`` or ``"union"``
    (whose :attr:`kinds` tell its records apart, and whose first column is the tag). A
    ``TypedDict``'s key that may be missing is ``X | None`` here. Raises ``TypeError`` for any
    other type, and for a union whose kinds type a field differently.
    """

    def __init__(self, record_type: Any) -> None:
        self.record_type = record_type
        self.kinds: Kinds | None = None
        if typing.get_origin(record_type) is dict:
            raise TypeError(
                f"{type_label(record_type)} records have no fixed fields to make columns of: "
                "give a record type with fields"
            )
        if union_members(record_type) is not None:
            self.kinds = record_kinds(record_type)
            self.fields: tuple[FieldSpec, ...] = union_fields(record_type)
            self.kind: str | None = "union"
        else:
            fields = record_fields(record_type)
            if any(f.default is ABSENT for f in fields):  # a TypedDict's key: maybe missing
                fields = tuple(
                    FieldSpec(f.name, f.wire_name, typing.Optional[f.annotation])  # noqa: UP045
                    if f.default is ABSENT
                    else f
                    for f in fields
                )
            self.fields = fields
            kind = record_kind(record_type)
            self.kind = "struct" if kind == "array_struct" else kind
        self.names = tuple(f.name for f in self.fields)
        self.annotations = tuple(f.annotation for f in self.fields)
        self.expected = tuple(annotation_text(a) for a in self.annotations)

    def __len__(self) -> int:
        return len(self.fields)

    def own_columns(self) -> dict[Any, tuple[int, ...]] | None:
        """For a union of kinds: the positions of each tag's own columns (its tag, then its
        kind's fields); ``None`` for any other record type."""
        if self.kinds is None:
            return None
        owned: dict[Any, tuple[int, ...]] = {}
        for kind in self.kinds.kinds:
            own = {f.name for f in record_fields(kind.record_type)} - {kind.field}
            positions = (0, *(p for p, name in enumerate(self.names) if p and name in own))
            owned.update(dict.fromkeys(kind.tags, positions))
        return owned


@cached(maxsize=256)
def columns_of(record_type: Any) -> Columns:
    """The :class:`Columns` of ``record_type``: worked out once per type, then shared."""
    return Columns(record_type)
