"""Marks in an ``Annotated`` type's metadata that tell the reader what a field is beyond its
Python type: :data:`~msgpack_reader_py.UInt64`'s ``uint64`` column, :data:`~msgpack_reader_py.
AnyValue`'s exact values, an inferred ``datetime`` that refuses nanoseconds."""

from __future__ import annotations

__all__ = ["Mark"]


class Mark:
    """One mark, one object in every process: pickled by its name in the module that holds
    it, so that a record type sent by value (a script's ``__main__``, a notebook's) keeps it,
    and is told by identity (``meta is MARK``)."""

    def __init__(self, name: str, module: str) -> None:
        self._name = name
        self.__module__ = module  # where pickle looks the name up

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name
