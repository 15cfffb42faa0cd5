"""Values msgspec refuses with a bare exception and no path (a timestamp past datetime's range,
an ``ext_hook`` that refuses an extension inside ``Any``, a str of invalid UTF-8): each is a
located error naming the innermost field path, as every other refusal is."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, NamedTuple

import msgpack
import msgspec
import pytest

from msgpack_reader_py import DecodeError, RecordError, StreamingReader
from msgpack_reader_py._types.locate import locate

from .helpers import assert_located, drain

LAST = msgpack.Timestamp(253402300799, 999999999)  # 9999-12-31T23:59:59.999999999Z
FIRST = msgpack.Timestamp(-62135596800, 0)  # 0001-01-01T00:00:00Z


@dataclasses.dataclass
class Header:
    name: str
    attrs: dict[str, Any]


@dataclasses.dataclass
class Event:
    at: datetime.datetime
    header: Header
    extra: Any = None


def stream(*records: Any) -> bytes:
    return b"".join(msgpack.packb(r) for r in records)


GOOD = [msgpack.Timestamp(1, 0), ["h", {}]]


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ([LAST, ["h", {}]], "at"),
        ([FIRST, ["h", {"k": [1, LAST]}]], "header.attrs['k'][1]"),
        (
            {"at": FIRST, "header": {"name": "h", "attrs": {}}, "extra": {"deep": [LAST]}},
            "extra['deep'][0]",
        ),
    ],
)
def test_a_timestamp_past_year_9999_names_its_field(record: Any, field: str) -> None:
    good = stream(GOOD)
    got, error = drain(StreamingReader(good + stream(record), Event))
    assert len(got) == 1
    assert isinstance(error, RecordError)
    assert_located(error, 1, len(good))
    assert error.reason == (
        f"field `{field}` holds the timestamp 9999-12-31T23:59:59.999999999Z, outside "
        "datetime's range (years 1 to 9999, to the microsecond)"
    )
    assert isinstance(error.__cause__, ValueError)


def test_the_first_instant_of_year_1_is_read() -> None:
    (event,) = StreamingReader(stream([FIRST, ["h", {}]]), Event)
    assert event.at == datetime.datetime(1, 1, 1, tzinfo=datetime.timezone.utc)


def test_skip_mode_passes_over_a_timestamp_past_year_9999() -> None:
    reader = StreamingReader(stream(GOOD, [LAST, ["h", {}]], GOOD), Event, on_error="skip")
    assert len(list(reader)) == 2
    assert reader.skipped == 1


def refusing(code: int, data: bytes) -> Any:
    raise KeyError(code)


@pytest.mark.parametrize(
    ("record", "field", "code"),
    [
        ([msgpack.Timestamp(1, 0), ["h", {"a": msgpack.ExtType(3, b"")}]], "header.attrs['a']", 3),
        (
            [msgpack.Timestamp(1, 0), ["h", {}], [1, {"x": msgpack.ExtType(4, b"z")}]],
            "extra[1]['x']",
            4,
        ),
    ],
)
def test_an_ext_hooks_refusal_inside_any_names_its_field(
    record: Any, field: str, code: int
) -> None:
    _, error = drain(StreamingReader(stream(record), Event, ext_hook=refusing))
    assert isinstance(error, RecordError)
    assert error.reason == (
        f"field `{field}` holds extension type {code}, which refusing refused: KeyError: {code}"
    )


def test_invalid_utf8_names_its_field_and_stays_a_decode_error() -> None:
    bad = b"\x92\xd7\xff\x00\x00\x00\x00\x00\x00\x00\x01\x92\xa1h\x81\xa1k\xa2\xff\xfe"
    _, error = drain(StreamingReader(bad, Event))
    assert isinstance(error, DecodeError)
    assert error.reason == (
        "invalid UTF-8 in a str (invalid start byte at position 0), in field `header.attrs['k']`"
    )


def test_locate_finds_nothing_in_a_record_that_decodes() -> None:
    assert locate(Event, msgpack.packb(GOOD), None) is None
    assert locate(Event, msgpack.packb({1: 2, (1, 2): 3}), None) is None


def test_locate_walks_kinds_by_their_tag() -> None:
    class Click(msgspec.Struct, tag="click"):
        at: datetime.datetime

    class Key(msgspec.Struct, tag="key"):
        at: datetime.datetime

    found = locate(Click | Key, msgpack.packb(["key", LAST]), None)
    assert found is not None
    assert found[0] == "at"
    assert locate(Click | Key, msgpack.packb(["tap", LAST]), None) is None


class Stamp(NamedTuple):
    when: datetime.datetime
    note: str


@dataclasses.dataclass
class Unions:
    header: Stamp | datetime.datetime
    history: list[Stamp] | None = None
    extra: dict[str, list[Any]] | None = None


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ([[LAST, "a"]], "header.when"),
        ([{"when": LAST, "note": "a"}], "header.when"),
        ([LAST], "header"),
        ([FIRST, [[FIRST, "x"], {"note": "y", "when": LAST}]], "history[1].when"),
        ([FIRST, None, {"k": [1, LAST]}], "extra['k'][1]"),
    ],
)
def test_a_bare_failure_is_found_through_unions_and_containers(record: Any, field: str) -> None:
    _, error = drain(StreamingReader(stream(record), Unions))
    assert isinstance(error, RecordError)
    assert error.reason.startswith(f"field `{field}` holds the timestamp 9999-12-31")
