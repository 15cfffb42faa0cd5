"""Streams of many kinds written by other languages' encoders (tests/encoders): tagged events
from Go, Node and Rust as maps and as arrays with the tag first, and Fluent Bit 2.1's
``[[EventTime, {metadata}], {record}]`` mixed with Fluentd's ``[EventTime, {record}]`` from Go
and Node, read typed, as columns, and inferred."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
from typing import Any, Literal, NamedTuple

import msgpack
import msgspec
import pytest

from msgpack_reader_py import StreamingReader
from msgpack_reader_py._analysis.inferred import infer_sources
from msgpack_reader_py._arrow.reader import read_table
from msgpack_reader_py._base.ext import fluentd_event_time, rfc3339
from msgpack_reader_py._output.convert import convert

from .encoders import DATA, EXPECTED
from .helpers import instant

TAGGED = sorted(p.name for p in DATA.glob("*_tagged_*.msgpack"))
FLUENT_BIT = sorted(p.name for p in DATA.glob("*_fluentbit.msgpack"))


# The events as tagged Structs: maps by their "type" key, arrays by their first value.
class Click(msgspec.Struct, tag="click"):
    seq: int
    x: int
    y: int
    button: Literal["left", "right", "middle"]


class Key(msgspec.Struct, tag="key"):
    seq: int
    code: str
    modifiers: list[str]
    repeat: bool


class Scroll(msgspec.Struct, tag="scroll"):
    seq: int
    dx: float
    dy: float
    at: dt.datetime


# The same events as dataclasses told apart by a Literal field, first.
@dataclasses.dataclass
class ClickEvent:
    type: Literal["click"]
    seq: int
    x: int
    y: int
    button: str


@dataclasses.dataclass
class KeyEvent:
    type: Literal["key"]
    seq: int
    code: str
    modifiers: list[str]
    repeat: bool


@dataclasses.dataclass
class ScrollEvent:
    type: Literal["scroll"]
    seq: int
    dx: float
    dy: float
    at: dt.datetime


def expected_structs() -> list[Any]:
    kinds = {"click": Click, "key": Key, "scroll": Scroll}
    events = []
    for event in EXPECTED["tagged_events"]:
        fields = {k: v for k, v in event.items() if k != "type"}
        if "at" in fields:
            fields["at"] = instant(fields["at"])
        events.append(kinds[event["type"]](**fields))
    return events


def test_there_are_tagged_events_of_three_encoders_in_both_shapes() -> None:
    assert len(TAGGED) == 6
    assert {name.split("_")[0] for name in TAGGED} == {"go", "node", "rust"}


@pytest.mark.parametrize("name", TAGGED)
def test_tagged_events_read_as_tagged_structs(name: str) -> None:
    events = list(StreamingReader(DATA / name, Click | Key | Scroll))
    assert events == expected_structs()
    assert all(type(e.dx) is float for e in events if isinstance(e, Scroll))


@pytest.mark.parametrize("name", TAGGED)
def test_tagged_events_read_as_dataclasses_with_a_literal_tag(name: str) -> None:
    events = list(StreamingReader(DATA / name, ClickEvent | KeyEvent | ScrollEvent))
    assert [msgspec.to_builtins(e) for e in events] == [
        msgspec.to_builtins(e) for e in expected_structs()
    ]
    assert [type(e).__name__ for e in events] == [
        f"{e['type'].title()}Event" for e in EXPECTED["tagged_events"]
    ]


@pytest.mark.parametrize("name", TAGGED)
def test_tagged_events_as_one_table(name: str) -> None:
    table = read_table(DATA / name, Click | Key | Scroll)
    assert table.schema.names[:2] == ["type", "seq"]
    assert table.column("type").to_pylist() == [e["type"] for e in EXPECTED["tagged_events"]]
    assert table.column("code").to_pylist() == [e.get("code") for e in EXPECTED["tagged_events"]]


@pytest.mark.parametrize("name", TAGGED)
def test_tagged_events_are_inferred_as_kinds(name: str) -> None:
    _, schema = infer_sources([DATA / name])
    assert schema.kinds == ["Click", "Key", "Scroll"]
    if "_map" in name:
        assert schema.tag == "type"
        union = schema.record_type("struct")
        read = list(StreamingReader(DATA / name, union))
        # Every encoder wrote nanoseconds: the field is a msgpack.Timestamp, every digit kept.
        assert [rfc3339(r.at) for r in read if hasattr(r, "at")] == [
            e["at"] for e in EXPECTED["tagged_events"] if "at" in e
        ]
        assert [msgspec.to_builtins(r, enc_hook=_as_datetime) for r in read] == [
            msgspec.to_builtins(e) for e in expected_structs()
        ]


def _as_datetime(value: Any) -> Any:
    """A timestamp as the expected structs hold it: a datetime, rounded half up."""
    assert isinstance(value, msgpack.Timestamp)
    text = rfc3339(value)
    assert text is not None
    return instant(text)


def test_tagged_arrays_convert_untyped_by_position_keeping_every_value() -> None:
    out = io.BytesIO()
    assert convert(DATA / "go_tagged_array.msgpack", out, "csv", record_type=None).records == 12
    header, *rows = out.getvalue().decode().splitlines()
    assert header.split(",")[:3] == ["f0", "f1", "f2"]
    assert [row.split(",")[0] for row in rows] == [e["type"] for e in EXPECTED["tagged_events"]]


# Fluent Bit 2.1 and Fluentd entries, mixed in one buffer.


class Header(NamedTuple):
    time: dt.datetime
    metadata: dict[str, Any]


class LogRecord(msgspec.Struct):
    message: str
    level: str
    count: int


class Entry(NamedTuple):
    header: Header | dt.datetime
    record: LogRecord


def expected_entries() -> list[Entry]:
    entries = []
    for entry in EXPECTED["fluentbit"]:
        when = instant(entry["time"])
        header = Header(when, entry["metadata"]) if entry["form"] == "fluentbit" else when
        entries.append(Entry(header, LogRecord(**entry["record"])))
    return entries


@pytest.mark.parametrize("name", FLUENT_BIT)
def test_fluent_bit_and_fluentd_entries_in_one_buffer(name: str) -> None:
    entries = list(StreamingReader(DATA / name, Entry, ext_hook=fluentd_event_time))
    assert entries == expected_entries()
    assert [isinstance(e.header, Header) for e in entries] == [
        e["form"] == "fluentbit" for e in EXPECTED["fluentbit"]
    ]


def test_there_are_fluent_bit_buffers_of_two_encoders() -> None:
    assert {name.split("_")[0] for name in FLUENT_BIT} == {"go", "node"}
