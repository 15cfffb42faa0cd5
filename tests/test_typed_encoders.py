"""Typed records out of what other languages' encoders wrote (tests/encoders): maps and arrays,
nested records, timestamps, Fluentd's EventTime, a Go struct's untagged field names."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import NamedTuple

import msgpack
import msgspec
import pytest

from msgpack_reader_py import RecordError, StreamingReader
from msgpack_reader_py._base.ext import fluentd_event_time

from .encoders import DATA, EVENT_FILES, EXPECTED, Event, expected_events
from .helpers import instant


class InnerStruct(msgspec.Struct, array_like=True):
    name: str
    level: int


class EventStruct(msgspec.Struct):
    id: int
    timestamp: dt.datetime
    tags: tuple[str, ...]
    inner: InnerStruct
    note: str | None = None


class GoItem(
    msgspec.Struct, rename={"id": "ID", "process_id": "ProcessID", "thread_id": "ThreadID"}
):
    """A Go struct without msgpack tags is written keyed by its Go field names: ``rename``
    maps each field to its key (``rename="pascal"`` covers names without initialisms)."""

    id: int
    process_id: int
    thread_id: int
    timestamp_ns: int = msgspec.field(name="TimestampNs")
    line: int = msgspec.field(name="Line")
    value: float = msgspec.field(name="Value")
    filename: str = msgspec.field(name="Filename")
    path: str = msgspec.field(name="Path")


@dataclasses.dataclass
class LogRecord:
    message: str
    level: str
    count: int


class FluentdEntry(NamedTuple):
    time: dt.datetime
    record: LogRecord


def test_there_are_fixtures_of_four_encoders_in_both_shapes() -> None:
    assert len(EVENT_FILES) == 8
    assert {name.split("_")[0] for name in EVENT_FILES} == {"go", "node", "rust", "java"}


@pytest.mark.parametrize("name", EVENT_FILES)
def test_every_encoder_s_events_read_as_nested_dataclasses(name: str) -> None:
    with StreamingReader(DATA / name, Event) as reader:
        events = list(reader)
    assert events == expected_events()
    assert all(event.timestamp.tzinfo is dt.timezone.utc for event in events)
    assert all(type(event.value) is float for event in events)


@pytest.mark.parametrize("name", EVENT_FILES)
def test_every_encoder_s_events_read_as_structs(name: str) -> None:
    """A map-shaped Struct reads array-shaped records too, its nested array_like Struct
    map-shaped ones; fields the type leaves out are ignored (maps) or refused (arrays)."""
    expected = [
        EventStruct(
            event.id,
            event.timestamp,
            tuple(event.tags),
            InnerStruct(event.inner.name, event.inner.level),
            event.note,
        )
        for event in expected_events()
    ]
    if "_map" in name:
        assert list(StreamingReader(DATA / name, EventStruct)) == expected
    else:
        # An array's fields are positional: 12 values are not an EventStruct's 4 to 5.
        with pytest.raises(RecordError) as caught:
            list(StreamingReader(DATA / name, EventStruct))
        assert caught.value.reason == (
            "expected an array or a map of 4 to 5 fields, found an array of 12 values"
        )
        assert (caught.value.index, caught.value.offset) == (0, 0)


def test_the_same_events_in_map_and_array_form_are_equal() -> None:
    for encoder in ("go", "node", "rust", "java"):
        maps = list(StreamingReader(DATA / f"{encoder}_events_map.msgpack", Event))
        arrays = list(StreamingReader(DATA / f"{encoder}_events_array.msgpack", Event))
        assert maps == arrays


def test_go_untagged_struct_keys_read_through_renamed_fields() -> None:
    items = list(StreamingReader(DATA / "go_items_untagged.msgpack", GoItem))
    assert [msgspec.structs.asdict(item) for item in items] == [
        {
            "id": r["ID"],
            "process_id": r["ProcessID"],
            "thread_id": r["ThreadID"],
            "timestamp_ns": r["TimestampNs"],
            "line": r["Line"],
            "value": r["Value"],
            "filename": r["Filename"],
            "path": r["Path"],
        }
        for r in EXPECTED["untagged_items"]
    ]


def test_fluentd_entries_with_the_event_time_hook() -> None:
    with StreamingReader(
        DATA / "go_fluentd.msgpack", FluentdEntry, ext_hook=fluentd_event_time
    ) as reader:
        entries = list(reader)
    assert entries == [
        FluentdEntry(instant(e["time"]), LogRecord(**e["record"])) for e in EXPECTED["fluentd"]
    ]


def test_fluentd_entries_without_the_hook_are_a_record_error() -> None:
    with pytest.raises(RecordError, match=r"record 0 at byte 0: field `time` expected datetime"):
        list(StreamingReader(DATA / "go_fluentd.msgpack", FluentdEntry))


def test_a_broken_event_names_its_nested_field_path() -> None:
    good = msgpack.packb(EXPECTED["events"][0] | {"timestamp": msgpack.Timestamp(1, 0)})
    record = EXPECTED["events"][1] | {"timestamp": msgpack.Timestamp(1, 0)}
    bad = msgpack.packb(record | {"inner": {"name": "x", "level": "high"}})
    with pytest.raises(RecordError) as caught:
        list(StreamingReader(good + bad, Event))
    assert caught.value.index == 1
    assert caught.value.offset == len(good)
    assert caught.value.reason == "field `inner.level` expected int, got str 'high'"
