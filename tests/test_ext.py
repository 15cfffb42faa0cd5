"""Extension types: the timestamp, ``ext_hook``, and Fluentd's EventTime."""

from __future__ import annotations

import dataclasses
import datetime as dt
from functools import partial
from typing import Any

import msgpack
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from msgpack_reader_py import RecordError, StreamingReader, ValueReader
from msgpack_reader_py._base.ext import fluentd_event_time

UTC = dt.timezone.utc


@dataclasses.dataclass
class Stamped:
    name: str
    when: dt.datetime
    extra: Any = None


def event_time(seconds: int, nanoseconds: int) -> msgpack.ExtType:
    return msgpack.ExtType(0, seconds.to_bytes(4, "big") + nanoseconds.to_bytes(4, "big"))


@given(st.integers(0, 2**32 - 1), st.integers(0, 999_999_999))
def test_event_time_rounds_like_the_timestamp_extension(seconds: int, nanoseconds: int) -> None:
    """The hook's datetime equals what the reader makes of the same instant as ext -1."""
    hooked = fluentd_event_time(0, event_time(seconds, nanoseconds).data)
    stamp = msgpack.packb(["a", msgpack.Timestamp(seconds, nanoseconds)])
    (record,) = StreamingReader(stamp, Stamped)
    assert hooked == record.when
    assert isinstance(hooked, dt.datetime)
    assert hooked.tzinfo is UTC


def test_event_time_hook_passes_other_codes_through_as_ext() -> None:
    assert fluentd_event_time(5, b"xy") == msgspec.msgpack.Ext(5, b"xy")
    records = list(
        StreamingReader(
            msgpack.packb(["a", event_time(1, 0), msgpack.ExtType(5, b"xy")]),
            Stamped,
            ext_hook=fluentd_event_time,
        )
    )
    assert records == [
        Stamped("a", dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC), msgspec.msgpack.Ext(5, b"xy"))
    ]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x00\x00\x00\x01", "a Fluentd EventTime is 8 bytes, got 4"),
        (
            b"\x00\x00\x00\x01" + (10**9).to_bytes(4, "big"),
            "nanoseconds must be below 10**9, got 1000000000",
        ),
    ],
)
def test_a_broken_event_time_is_a_located_record_error(data: bytes, reason: str) -> None:
    good = msgpack.packb(["a", event_time(1, 0)])
    bad = msgpack.packb(["b", msgpack.ExtType(0, data)])
    reader = StreamingReader(good + bad, Stamped, ext_hook=fluentd_event_time)
    assert next(reader).name == "a"
    with pytest.raises(RecordError) as caught:
        next(reader)
    assert (caught.value.index, caught.value.offset) == (1, len(good))
    assert "fluentd_event_time refused extension type 0: ValueError" in caught.value.reason
    assert reason in caught.value.reason


@dataclasses.dataclass
class ExactStamped:
    name: str
    time: msgpack.Timestamp


@pytest.mark.parametrize("record_type", [ExactStamped, None], ids=["Timestamp", "untyped"])
def test_a_broken_event_time_is_named_by_its_hook_read_exactly_too(record_type: Any) -> None:
    """Where the EventTime is read to the nanosecond (a msgpack.Timestamp field, an untyped
    read: the hook's exact face), a broken one is refused naming fluentd_event_time, as the
    datetime field's is (not the face's own name)."""
    good = msgpack.packb(["a", event_time(1, 5)])
    bad = msgpack.packb(["b", msgpack.ExtType(0, b"\x00\x00\x00\x01")])
    read: Any = (
        ValueReader if record_type is None else partial(StreamingReader, record_type=record_type)
    )
    reader = read(good + bad, ext_hook=fluentd_event_time)
    first: Any = next(reader)
    assert (first[1] if record_type is None else first.time) == msgpack.Timestamp(1, 5)
    with pytest.raises(RecordError) as caught:
        next(reader)
    assert (caught.value.index, caught.value.offset) == (1, len(good))
    assert "fluentd_event_time refused extension type 0: ValueError" in caught.value.reason


def test_any_exception_of_a_hook_is_a_record_error_and_skippable() -> None:
    known: dict[int, Any] = {}

    def hook(code: int, data: bytes) -> Any:
        return known[code]  # KeyError for every code

    data = msgpack.packb(["a", msgpack.Timestamp(1, 0), 1]) + msgpack.packb(
        ["b", msgpack.Timestamp(2, 0), msgpack.ExtType(3, b"")]
    )
    reader = StreamingReader(data, Stamped, ext_hook=hook, on_error="skip")
    assert [r.name for r in reader] == ["a"]
    assert reader.skipped == 1
    # Refused inside an Any field: located there, though msgspec said no path.
    reason = reader.errors[0].reason
    assert reason.startswith("field `extra` holds extension type 3, which ")
    assert reason.endswith("hook refused: KeyError: 3")


def test_without_a_hook_an_extension_is_an_ext_where_anything_goes() -> None:
    (record,) = StreamingReader(
        msgpack.packb(["a", msgpack.Timestamp(0, 0), msgpack.ExtType(7, b"z")]), Stamped
    )
    assert record.extra == msgspec.msgpack.Ext(7, b"z")


def test_an_int_field_refuses_a_timestamp() -> None:
    @dataclasses.dataclass
    class Plain:
        when: int

    with pytest.raises(RecordError, match=r"field `when` expected int, got datetime"):
        list(StreamingReader(msgpack.packb([msgpack.Timestamp(1, 0)]), Plain))


def test_a_hook_value_that_is_not_a_datetime_is_refused_with_its_path() -> None:
    @dataclasses.dataclass
    class Outer:
        id: int
        inner: Stamped

    data = msgpack.packb([1, ["x", msgpack.ExtType(5, b"xy")]])
    with pytest.raises(RecordError) as caught:
        list(StreamingReader(data, Outer, ext_hook=fluentd_event_time))
    assert caught.value.reason == (
        "field `inner.when` expected datetime, got extension type 5 (2 bytes)"
    )
