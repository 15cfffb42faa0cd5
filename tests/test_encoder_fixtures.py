"""The fixtures of tests/encoders, written by MessagePack encoders in Go, Node.js, Rust and Java,
decode (by ``msgpack`` alone) to exactly the records of ``tests/encoders/expected.json``.

This locks the fixture files: types and values field by field, timestamps to the nanosecond,
maps as maps and arrays as arrays. How each file was written, and how to write it again, is in
``tests/encoders/README.md``.
"""

from __future__ import annotations

import datetime as dt
import struct
from pathlib import Path
from typing import Any, NamedTuple

import msgpack
import pytest

from .encoders import DATA, ENCODERS, EVENT_FIELDS, EXPECTED, INNER_FIELDS, make_expected

# The files the encoders write, as README.md lists them.
FIXTURES = {
    "go_events_map.msgpack",
    "go_events_array.msgpack",
    "go_items_untagged.msgpack",
    "go_fluentd.msgpack",
    "node_events_map.msgpack",
    "node_events_array.msgpack",
    "rust_events_map.msgpack",
    "rust_events_array.msgpack",
    "java_events_map.msgpack",
    "java_events_array.msgpack",
    "go_tagged_map.msgpack",
    "go_tagged_array.msgpack",
    "go_fluentbit.msgpack",
    "node_tagged_map.msgpack",
    "node_tagged_array.msgpack",
    "node_fluentbit.msgpack",
    "rust_tagged_map.msgpack",
    "rust_tagged_array.msgpack",
    "go_spans.msgpack",
}

# The documented fields of each kind of tagged event, in order: the tag first.
TAGGED_FIELDS = {
    "click": ("type", "seq", "x", "y", "button"),
    "key": ("type", "seq", "code", "modifiers", "repeat"),
    "scroll": ("type", "seq", "dx", "dy", "at"),
}


class EventTime(NamedTuple):
    """Fluentd's EventTime: extension type 0, big-endian uint32 seconds and nanoseconds."""

    seconds: int
    nanoseconds: int


def ext_hook(code: int, data: bytes) -> object:
    if code == 0 and len(data) == 8:
        return EventTime(*struct.unpack(">II", data))
    return msgpack.ExtType(code, data)


def decode(path: Path, timestamp: int = 0) -> list[Any]:
    """Every object of a file; ``timestamp=0`` gives ``msgpack.Timestamp``, exact to the ns."""
    with path.open("rb") as stream:
        return list(msgpack.Unpacker(stream, timestamp=timestamp, ext_hook=ext_hook))


def instant(text: str) -> msgpack.Timestamp:
    return msgpack.Timestamp(*make_expected.parse_rfc3339(text))


def expected_event(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "timestamp": instant(event["timestamp"])}


def as_array(event: dict[str, Any]) -> list[Any]:
    inner = [event["inner"][name] for name in INNER_FIELDS]
    return [inner if name == "inner" else event[name] for name in EVENT_FIELDS]


def assert_same(got: object, want: object, where: str) -> None:
    """Equal, and of the same types all the way down: 3.0 is not 3, a map is not an array."""
    assert type(got) is type(want), f"{where}: got {got!r}, expected {want!r}"
    if isinstance(got, dict) and isinstance(want, dict):
        assert got.keys() == want.keys(), f"{where}: keys {list(got)}, expected {list(want)}"
        for key, value in want.items():
            assert_same(got[key], value, f"{where}.{key}")
    elif isinstance(got, list) and isinstance(want, list):
        assert len(got) == len(want), f"{where}: {len(got)} items, expected {len(want)}"
        for index, value in enumerate(want):
            assert_same(got[index], value, f"{where}[{index}]")
    else:
        assert got == want, f"{where}: got {got!r}, expected {want!r}"


def present(suffix: str) -> list[Path]:
    return sorted(DATA.glob(f"*{suffix}"))


def file_id(path: Path) -> str:
    return path.name


def test_the_fixture_files_are_the_documented_ones() -> None:
    assert {path.name for path in DATA.iterdir()} == FIXTURES


def test_expected_json_is_what_make_expected_writes() -> None:
    text = (ENCODERS / "expected.json").read_text(encoding="utf-8")
    assert text == make_expected.expected_text(), "run tests/encoders/make_expected.py"


def test_go_spans_hold_their_ids_as_unsigned_64_bit_ints() -> None:
    path = DATA / "go_spans.msgpack"
    records = decode(path)
    assert len(records) == len(EXPECTED["spans"])
    for index, (record, span) in enumerate(zip(records, EXPECTED["spans"], strict=True)):
        assert_same(record, span, f"{path.name} record {index}")
    # Go writes a uint64 in all nine bytes (0xcf), whatever its value: 2**64 - 1 among them.
    data = path.read_bytes()
    assert data.count(b"\xcf") >= 3 * len(records)
    assert max(r["trace_id"] for r in records) == 2**64 - 1


@pytest.mark.parametrize("path", present("_events_map.msgpack"), ids=file_id)
def test_event_maps(path: Path) -> None:
    records = decode(path)
    assert len(records) == len(EXPECTED["events"])
    for index, (record, event) in enumerate(zip(records, EXPECTED["events"], strict=True)):
        assert isinstance(record, dict), f"record {index} is not a map"
        assert isinstance(record["inner"], dict), f"record {index}: inner is not a map"
        assert_same(record, expected_event(event), f"{path.name} record {index}")


@pytest.mark.parametrize("path", present("_events_array.msgpack"), ids=file_id)
def test_event_arrays(path: Path) -> None:
    records = decode(path)
    assert len(records) == len(EXPECTED["events"])
    for index, (record, event) in enumerate(zip(records, EXPECTED["events"], strict=True)):
        assert isinstance(record, list), f"record {index} is not an array"
        assert isinstance(record[EVENT_FIELDS.index("inner")], list), f"record {index}: inner"
        assert_same(record, as_array(expected_event(event)), f"{path.name} record {index}")


@pytest.mark.parametrize(
    "path", present("_events_map.msgpack") + present("_events_array.msgpack"), ids=file_id
)
def test_timestamps_as_datetimes_are_utc_to_the_microsecond(path: Path) -> None:
    """``timestamp=3`` gives aware UTC datetimes, the nanoseconds cut to microseconds."""
    position = EVENT_FIELDS.index("timestamp")
    got = [
        record["timestamp"] if isinstance(record, dict) else record[position]
        for record in decode(path, timestamp=3)
    ]
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    want = []
    for event in EXPECTED["events"]:
        seconds, nanoseconds = make_expected.parse_rfc3339(event["timestamp"])
        want.append(epoch + dt.timedelta(seconds=seconds, microseconds=nanoseconds // 1000))
    assert got == want
    assert all(value.tzinfo is dt.timezone.utc for value in got)


@pytest.mark.parametrize("path", present("_items_untagged.msgpack"), ids=file_id)
def test_untagged_go_structs_are_keyed_by_field_name(path: Path) -> None:
    records = decode(path)
    assert len(records) == len(EXPECTED["untagged_items"]) == 5
    for index, (record, item) in enumerate(zip(records, EXPECTED["untagged_items"], strict=True)):
        assert_same(record, item, f"{path.name} record {index}")


@pytest.mark.parametrize("path", present("_fluentd.msgpack"), ids=file_id)
def test_fluentd_forward_entries(path: Path) -> None:
    entries = decode(path)
    assert len(entries) == len(EXPECTED["fluentd"]) == 6
    for index, (entry, want) in enumerate(zip(entries, EXPECTED["fluentd"], strict=True)):
        event_time = EventTime(*make_expected.parse_rfc3339(want["time"]))
        assert_same(entry, [event_time, want["record"]], f"{path.name} entry {index}")


def expected_tagged(event: dict[str, Any]) -> dict[str, Any]:
    """A tagged event of ``expected.json`` as it decodes: ``at`` a ``msgpack.Timestamp``."""
    fields = TAGGED_FIELDS[event["type"]]
    assert tuple(event) == fields, f"expected.json: {list(event)}"
    return {name: instant(event[name]) if name == "at" else event[name] for name in fields}


def test_tagged_events_are_interleaved_and_numbered() -> None:
    kinds = [event["type"] for event in EXPECTED["tagged_events"]]
    assert [event["seq"] for event in EXPECTED["tagged_events"]] == list(range(len(kinds)))
    assert set(kinds) == set(TAGGED_FIELDS)
    runs = [kind for index, kind in enumerate(kinds) if index == 0 or kinds[index - 1] != kind]
    assert len(runs) > len(TAGGED_FIELDS), f"the kinds come grouped: {kinds}"


@pytest.mark.parametrize("path", present("_tagged_map.msgpack"), ids=file_id)
def test_tagged_event_maps(path: Path) -> None:
    records = decode(path)
    assert len(records) == len(EXPECTED["tagged_events"]) == 12
    for index, (record, event) in enumerate(zip(records, EXPECTED["tagged_events"], strict=True)):
        where = f"{path.name} record {index}"
        assert isinstance(record, dict), f"{where} is not a map"
        assert tuple(record) == TAGGED_FIELDS[event["type"]], f"{where}: keys {list(record)}"
        assert_same(record, expected_tagged(event), where)


@pytest.mark.parametrize("path", present("_tagged_array.msgpack"), ids=file_id)
def test_tagged_event_arrays(path: Path) -> None:
    records = decode(path)
    assert len(records) == len(EXPECTED["tagged_events"]) == 12
    for index, (record, event) in enumerate(zip(records, EXPECTED["tagged_events"], strict=True)):
        where = f"{path.name} record {index}"
        assert isinstance(record, list), f"{where} is not an array"
        assert record[:1] == [event["type"]], f"{where}: the tag is not first: {record!r}"
        assert_same(record, list(expected_tagged(event).values()), where)


@pytest.mark.parametrize(
    "path", present("_tagged_map.msgpack") + present("_tagged_array.msgpack"), ids=file_id
)
def test_tagged_event_times_as_datetimes(path: Path) -> None:
    """``timestamp=3`` reads ``at`` as aware UTC datetimes, to the microsecond."""
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    got, want = [], []
    for record, event in zip(decode(path, timestamp=3), EXPECTED["tagged_events"], strict=True):
        if event["type"] == "scroll":
            got.append(record["at"] if isinstance(record, dict) else record[-1])
            seconds, nanoseconds = make_expected.parse_rfc3339(event["at"])
            want.append(epoch + dt.timedelta(seconds=seconds, microseconds=nanoseconds // 1000))
    assert got == want
    assert all(value.tzinfo is dt.timezone.utc for value in got)


def expected_fluentbit(entry: dict[str, Any]) -> list[Any]:
    """A ``fluentbit`` entry as it decodes, with ``ext_hook``'s ``EventTime``."""
    event_time = EventTime(*make_expected.parse_rfc3339(entry["time"]))
    if entry["form"] == "fluentbit":
        return [[event_time, entry["metadata"]], entry["record"]]
    assert entry["form"] == "fluentd", entry["form"]
    assert "metadata" not in entry, "a Fluentd entry has no metadata"
    return [event_time, entry["record"]]


def test_fluentbit_entries_mix_both_forms() -> None:
    forms = [entry["form"] for entry in EXPECTED["fluentbit"]]
    assert forms == [
        "fluentbit",
        "fluentbit",
        "fluentd",
        "fluentbit",
        "fluentbit",
        "fluentd",
        "fluentbit",
        "fluentd",
    ]


@pytest.mark.parametrize("path", present("_fluentbit.msgpack"), ids=file_id)
def test_fluentbit_entries(path: Path) -> None:
    entries = decode(path)
    assert len(entries) == len(EXPECTED["fluentbit"]) == 8
    for index, (entry, want) in enumerate(zip(entries, EXPECTED["fluentbit"], strict=True)):
        where = f"{path.name} entry {index}"
        assert_same(entry, expected_fluentbit(want), where)
        record = entry[1]
        assert list(record) == ["message", "level", "count"], f"{where}: record keys"
        if want["form"] == "fluentbit":
            metadata = entry[0][1]
            assert list(metadata) == list(want["metadata"]), f"{where}: metadata keys"


@pytest.mark.parametrize("path", present("_fluentbit.msgpack"), ids=file_id)
def test_fluentbit_event_times_are_extension_0_of_8_bytes(path: Path) -> None:
    """Without ``ext_hook``: each time an ``ExtType(0, ...)``, uint32 seconds and nanoseconds."""
    with path.open("rb") as stream:
        entries = list(msgpack.Unpacker(stream))
    assert len(entries) == len(EXPECTED["fluentbit"])
    for index, (entry, want) in enumerate(zip(entries, EXPECTED["fluentbit"], strict=True)):
        assert isinstance(entry, list), f"entry {index}: {entry!r}"
        assert len(entry) == 2, f"entry {index}: {entry!r}"
        header = entry[0]
        if want["form"] == "fluentbit":
            assert isinstance(header, list), f"entry {index}: {header!r}"
            assert len(header) == 2, f"entry {index}: {header!r}"
            assert isinstance(header[1], dict), f"entry {index}: metadata {header[1]!r}"
            header = header[0]
        data = struct.pack(">II", *make_expected.parse_rfc3339(want["time"]))
        assert header == msgpack.ExtType(0, data), f"entry {index}: {header!r}"
