"""The record model: ``Item`` and its wire form."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from msgpack_reader_py import Item

from .reference import FIRST_REFERENCE_RECORD

WIRE_ORDER = (
    "id",
    "process_id",
    "thread_id",
    "timestamp_ns",
    "line",
    "value",
    "filename",
    "path",
)


def test_item_is_a_dataclass_with_fields_in_wire_order() -> None:
    assert dataclasses.is_dataclass(Item)
    assert tuple(field.name for field in dataclasses.fields(Item)) == WIRE_ORDER


def test_item_field_annotations() -> None:
    assert typing.get_type_hints(Item) == {
        "id": int,
        "process_id": int,
        "thread_id": int,
        "timestamp_ns": int,
        "line": int,
        "value": float,
        "filename": str,
        "path": str,
    }


def test_item_is_slotted() -> None:
    item = Item.from_list(FIRST_REFERENCE_RECORD)
    assert Item.__slots__ == WIRE_ORDER
    assert not hasattr(item, "__dict__")
    with pytest.raises(AttributeError):
        item.unexpected = 1  # type: ignore[attr-defined]


def test_from_list_assigns_positionally() -> None:
    item = Item.from_list(FIRST_REFERENCE_RECORD)
    assert item == Item(
        id=0,
        process_id=14592,
        thread_id=3278,
        timestamp_ns=1730374586108998696,
        line=36048,
        value=172.1898038000276,
        filename="D0TVBDIV",
        path="UZZPQK51FPKH1DN",
    )
    for name, value in zip(WIRE_ORDER, FIRST_REFERENCE_RECORD, strict=True):
        assert getattr(item, name) == value


def test_from_list_accepts_a_tuple() -> None:
    assert Item.from_list(tuple(FIRST_REFERENCE_RECORD)) == Item.from_list(FIRST_REFERENCE_RECORD)


def test_to_list_is_the_wire_form() -> None:
    item = Item.from_list(FIRST_REFERENCE_RECORD)
    wire = item.to_list()
    assert isinstance(wire, list)
    assert wire == FIRST_REFERENCE_RECORD
    assert [type(value) for value in wire] == [type(value) for value in FIRST_REFERENCE_RECORD]


def test_round_trip_over_the_reference_items(reference_items: list[Item]) -> None:
    for item in reference_items:
        wire = item.to_list()
        assert wire == [getattr(item, name) for name in WIRE_ORDER]
        assert Item.from_list(wire) == item


def test_to_list_returns_a_fresh_list() -> None:
    item = Item.from_list(FIRST_REFERENCE_RECORD)
    wire = item.to_list()
    wire[0] = 99
    assert item.id == 0
    assert item.to_list() == FIRST_REFERENCE_RECORD


@pytest.mark.parametrize("length", [0, 1, 7, 9, 16])
def test_from_list_of_the_wrong_length_raises_type_error(length: int) -> None:
    values = (FIRST_REFERENCE_RECORD * 2)[:length]
    with pytest.raises(TypeError):
        Item.from_list(values)


def test_items_compare_by_value() -> None:
    first = Item.from_list(FIRST_REFERENCE_RECORD)
    second = Item.from_list(list(FIRST_REFERENCE_RECORD))
    assert first == second
    assert first is not second
    changed = dataclasses.replace(second, value=second.value + 1.0)
    assert first != changed
