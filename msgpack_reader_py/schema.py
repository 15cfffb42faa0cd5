"""What a record type is, worked out once per stream, for every consumer.

A record type is a dataclass, a ``typing.NamedTuple``, a ``msgspec.Struct`` or a fixed-length
``tuple[...]`` type. :class:`RecordSchema` lists its fields in wire order (their names, the map
keys they are read from, their annotations and defaults); the decoder (:mod:`.engine`), the
Arrow columns (:mod:`.arrow`) and the CSV and JSON writers (:mod:`.convert`) all derive what
they need from it, so an annotation is read in one place.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from ._shared import shared
from .engine import FieldSpec, record_fields, record_kind
from .errors import type_name

__all__ = ["RecordSchema", "annotation_text", "is_scalar", "members", "record_schema"]

# A tuple, not a set: an annotation may not be hashable (``Annotated[int, {"unit": "ms"}]``).
_SCALARS = (int, float, str, bytes, bool, type(None))


def annotation_text(annotation: Any) -> str:
    """An annotation as a user writes it: ``int``, ``list[str]``, ``str | None``."""
    # On 3.10 ``list[int]`` passes isinstance(..., type); its origin tells it apart.
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return type_name(annotation)
    return str(annotation).replace("typing.", "").replace("NoneType", "None")


def members(annotation: Any) -> tuple[Any, bool]:
    """``(X, nullable)`` for ``X | None`` and ``Optional[X]``; ``(annotation, False)`` else."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [m for m in typing.get_args(annotation) if m is not type(None)]
        if len(rest) == 1 and len(rest) < len(typing.get_args(annotation)):
            return rest[0], True
    return annotation, False


def is_scalar(annotation: Any) -> bool:
    """Whether a field holds one plain value: ``int``, ``float``, ``str``, ``bytes``,
    ``bool``, or one of them ``| None``."""
    inner, _ = members(annotation)
    return inner in _SCALARS


class RecordSchema:
    """The fields of a record type, in wire order; made once per type (:func:`record_schema`)
    and shared, so nothing in it is changed by its users.

    ``names`` are the fields' attribute names (``"[0]"``, ``"[1]"``, ... for a ``tuple[...]``
    type, whose records are the decoded tuples themselves); ``kind`` is ``"dataclass"``,
    ``"namedtuple"``, ``"struct"`` or ``"tuple"``. Raises ``TypeError`` for anything else.
    """

    def __init__(self, record_type: Any) -> None:
        self.record_type = record_type
        self.fields: tuple[FieldSpec, ...] = record_fields(record_type)
        self.names = tuple(f.name for f in self.fields)
        self.annotations = tuple(f.annotation for f in self.fields)
        self.expected = tuple(annotation_text(a) for a in self.annotations)
        kind = record_kind(record_type)
        self.kind = "struct" if kind == "array_struct" else kind
        self.flat = all(is_scalar(a) for a in self.annotations)
        """Whether every field holds one plain value (no container, record, or other type)."""

    def __len__(self) -> int:
        return len(self.fields)

    def text_fields(self) -> list[int]:
        """The positions of the fields that hold ``str`` (or ``str | None``)."""
        return [p for p, a in enumerate(self.annotations) if members(a)[0] is str]


@shared(maxsize=256)
def record_schema(record_type: Any) -> RecordSchema:
    """The :class:`RecordSchema` of ``record_type``: worked out once per type, then shared."""
    return RecordSchema(record_type)
