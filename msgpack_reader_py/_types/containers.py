"""The converters of containers and unions of the fields the reader converts (:mod:`.forms`):
each converts every element in one comprehension, and only a failure looks at them one by one
again, to name the element it failed at (``stamps[2]``, ``attrs['x']``), as msgspec names the
values it refuses."""

from __future__ import annotations

import itertools
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

from .messages import RecordFailure

__all__ = ["Converter", "elements", "entries", "positions", "union_converter"]

Converter = Callable[[Any], Any]
"""What makes a field's value of what msgspec decoded for it."""


def elements(convert: Converter, made: Callable[[list[Any]], Any]) -> Converter:
    """The converter of a list or a ``tuple[X, ...]`` (``made``) of elements ``convert``
    converts."""

    def convert_all(values: Any) -> Any:
        try:
            return made([convert(v) for v in values])
        except RecordFailure as failure:
            found = _located(failure, ((f"[{i}]", convert, v) for i, v in enumerate(values)))
            raise found from failure.__cause__

    return convert_all


def positions(converters: list[Converter]) -> Converter:
    """The converter of a fixed ``tuple[...]``, a converter for each position."""

    def convert_all(values: Any) -> Any:
        try:
            return tuple([c(v) for c, v in zip(converters, values, strict=True)])
        except RecordFailure as failure:
            pairs = enumerate(zip(converters, values, strict=True))
            raise _located(
                failure, ((f"[{i}]", c, v) for i, (c, v) in pairs)
            ) from failure.__cause__

    return convert_all


def entries(convert_key: Converter, convert_value: Converter) -> Converter:
    """The converter of a ``dict``, its keys and values each converted."""

    def convert_all(mapping: dict[Any, Any]) -> dict[Any, Any]:
        try:
            return {convert_key(k): convert_value(v) for k, v in mapping.items()}
        except RecordFailure as failure:
            keys = ((f"[{k!r}]", convert_key, k) for k in mapping)
            values = ((f"[{k!r}]", convert_value, v) for k, v in mapping.items())
            raise _located(failure, itertools.chain(keys, values)) from failure.__cause__

    return convert_all


def _located(
    failure: RecordFailure, elements: Iterable[tuple[str, Converter, Any]]
) -> RecordFailure:
    """The failure of the first element whose converter refuses it, as that element's (its
    ``[index]``); ``failure`` itself where none does again (a converter that fails only once)."""
    for where, convert, value in elements:
        try:
            convert(value)
        except RecordFailure as exc:  # noqa: PERF203 - a failing record's look, once
            return exc.within(where)
    return failure


def union_converter(members: list[tuple[Any, Converter | None]]) -> Converter:
    """Convert a value decoded for a union by the member it was decoded as: its type tells
    (a record's wire forms, ``list``, ``dict``, ``tuple``, an extension for a ``datetime``)."""
    by_type: dict[Any, Converter] = {}
    for wire_type, member_convert in members:
        if member_convert is None:
            continue
        for decoded in _decoded_types(wire_type):
            by_type[decoded] = member_convert

    def convert(value: Any) -> Any:
        member_convert = by_type.get(type(value))
        return value if member_convert is None else member_convert(value)

    return convert


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
