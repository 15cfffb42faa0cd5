"""Ints as wide as MessagePack's: the annotation of a field of unsigned 64-bit ints
(:data:`UInt64`), and the bounds of the ints one column holds (``int64``, ``float64``).

MessagePack's ints run from -2**63 to 2**64 - 1, and a Python ``int`` (so msgspec, reading
one) holds every one of them. A column holds one integer type: an ``int`` field's is Arrow's
``int64``, which refuses an int of 2**63 or more, the upper half of an unsigned 64-bit int (a
trace or span id, a Go ``uint64`` counter, a hash). A field annotated :data:`UInt64` is a
``uint64`` column instead, and refuses a negative int where it is read.

msgspec checks no bound outside int64, so ``UInt64`` cannot say ``le=2**64 - 1``: it need not,
as no MessagePack int is larger. It is marked (:func:`is_unsigned`), not told apart by its
bound, so that a user's ``Annotated[int, Meta(ge=0)]`` stays the ``int64`` column it was.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any

import msgspec

from .marks import Mark

__all__ = ["FLOAT_EXACT", "INT64_MAX", "UInt64", "is_unsigned"]

INT64_MAX = 2**63 - 1
"""The most an ``int64`` column holds (MessagePack has no int below its least)."""

FLOAT_EXACT = 2**53
"""The largest int a float64 holds exactly, and every int nearer zero: a column of ints and
floats (float64) refuses any other."""


_UNSIGNED = Mark("_UNSIGNED", __name__)
"""Marks :data:`UInt64` in its ``Annotated`` metadata: its column is ``uint64``."""

UInt64 = Annotated[int, msgspec.Meta(ge=0), _UNSIGNED]
"""A field of unsigned 64-bit ints: in Python an ``int`` of 0 or more (a negative one is
refused where it is read, as a value of the wrong type is), in Arrow, Parquet, Polars and
DuckDB a ``uint64`` column, in Spark a ``decimal(20, 0)`` one (Spark has no unsigned type).
Declare a field so where its values may reach 2**63: an ``int`` field's ``int64`` column
refuses such a value. Types inferred from records use it where they saw such a value."""


def is_unsigned(annotation: Any) -> bool:
    """Whether ``annotation`` is :data:`UInt64` (or ``Annotated`` more around it)."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(meta is _UNSIGNED for meta in annotation.__metadata__)
