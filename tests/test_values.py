"""Untyped records (``ValueReader``): read exactly, written as documented JSON."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import math
from typing import Any

import msgpack
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import DecodeError, RecordError, StreamingReader, fluentd_event_time
from msgpack_reader_py._base.ext import rfc3339
from msgpack_reader_py._base.json_text import json_text
from msgpack_reader_py._output.text import JsonLines
from msgpack_reader_py._readers.values import ValueReader

from .helpers import drain, examples

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text()
    | st.binary(max_size=20)
    | st.builds(
        msgpack.Timestamp,
        st.integers(min_value=-(2**40), max_value=2**40),
        st.integers(min_value=0, max_value=999_999_999),
    )
    | st.builds(msgpack.ExtType, st.integers(min_value=0, max_value=127), st.binary(max_size=8))
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=5) | st.integers(-5, 5), inner, max_size=4)
    ),
    max_leaves=20,
)


def expected_json(value: Any, *, allow_nan: bool = False) -> Any:
    """The documented JSON of an untyped value, written out independently."""
    if isinstance(value, msgpack.ExtType):
        return {"ext": value.code, "base64": base64.b64encode(value.data).decode()}
    if isinstance(value, msgpack.Timestamp):
        text = rfc3339(value)
        if text is None:
            return {"ext": -1, "base64": base64.b64encode(value.to_bytes()).decode()}
        return text
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, float) and not math.isfinite(value) and not allow_nan:
        return None
    if isinstance(value, list):
        return [expected_json(v, allow_nan=allow_nan) for v in value]
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str) else json.dumps(k)): expected_json(v, allow_nan=allow_nan)
            for k, v in value.items()
        }
    return value


def same(got: Any, want: Any) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, list):
        return len(got) == len(want) and all(map(same, got, want))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    return bool(type(got) is type(want) and got == want)


def as_read(value: Any) -> Any:
    """What the reader gives for ``value``: other extensions as msgspec's ``Ext``."""
    if isinstance(value, msgpack.ExtType):
        return msgspec.msgpack.Ext(value.code, value.data)
    if isinstance(value, list):
        return [as_read(v) for v in value]
    if isinstance(value, dict):
        return {k: as_read(v) for k, v in value.items()}
    return value


def ext_equal(got: Any, want: Any) -> bool:
    if isinstance(want, msgspec.msgpack.Ext):
        return isinstance(got, msgspec.msgpack.Ext) and (got.code, got.data) == (
            want.code,
            want.data,
        )
    if isinstance(want, list):
        return len(got) == len(want) and all(map(ext_equal, got, want))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(ext_equal(got[k], want[k]) for k in want)
    return same(got, want)


@settings(max_examples=examples(ci=300, local=100))
@given(st.lists(values, max_size=6))
def test_every_value_is_read_as_it_is_and_written_as_documented(records: list[Any]) -> None:
    data = b"".join(msgpack.packb(r, datetime=False) for r in records)
    read = list(ValueReader(data, force=True))  # any values: small ints may look like text
    assert len(read) == len(records)
    for got, want in zip(read, records, strict=True):
        assert ext_equal(got, as_read(want))
        assert same(json.loads(json_text(got)), expected_json(want))
        assert same(json.loads(json_text(got, allow_nan=True)), expected_json(want, allow_nan=True))
    out = io.StringIO()
    JsonLines(out).write(read)
    assert out.getvalue() == "".join(json_text(r) + "\n" for r in read)
    # With allow_nan, a batch is written in one call unless it shows a null: each value then.
    out = io.StringIO()
    JsonLines(out, allow_nan=True).write(read)
    lines = out.getvalue().split("\n")
    assert lines.pop() == ""
    assert len(lines) == len(records)
    for line, want in zip(lines, records, strict=True):
        assert same(json.loads(line), expected_json(want, allow_nan=True))


def test_timestamps_are_rfc3339_with_nine_digits_and_out_of_range_as_extensions() -> None:
    assert rfc3339(msgpack.Timestamp(0, 5)) == "1970-01-01T00:00:00.000000005Z"
    assert rfc3339(msgpack.Timestamp(-1, 999_999_999)) == "1969-12-31T23:59:59.999999999Z"
    assert rfc3339(msgpack.Timestamp(253402300799, 0)) == "9999-12-31T23:59:59.000000000Z"
    far = msgpack.Timestamp(253402300800, 0)
    assert rfc3339(far) is None
    assert json.loads(json_text(far)) == {
        "ext": -1,
        "base64": base64.b64encode(far.to_bytes()).decode(),
    }


def test_map_keys_of_every_kind() -> None:
    value = {None: 1, 2.5: 2, b"k": 3, (1, (2,)): 4, msgpack.Timestamp(0, 0): 5}
    assert json.loads(json_text(value)) == {
        "null": 1,
        "2.5": 2,
        "aw==": 3,
        "[1,[2]]": 4,
        "1970-01-01T00:00:00.000000000Z": 5,
    }


def test_an_array_as_a_map_key_is_read_as_a_tuple() -> None:
    data = msgpack.packb({(1, 2): "a"}) + msgpack.packb({"x": [1, 2]})
    assert list(ValueReader(data)) == [{(1, 2): "a"}, {"x": [1, 2]}]


MAP_AS_KEY = b"\x81\xa1v\x81\x81\xa1a\x01\x02"  # {"v": {{"a": 1}: 2}}: valid MessagePack


@dataclasses.dataclass
class AnyValue:
    v: Any


@pytest.mark.parametrize("typed", [False, True])
@pytest.mark.parametrize("refuse_repeats", [False, True])
def test_a_map_as_a_maps_key_is_a_record_error_after_the_good_records(
    typed: bool, refuse_repeats: bool
) -> None:
    """No Python dict holds a map as a key: the record is refused, named, and skippable,
    never a TypeError out of the reader (untyped) or the stream ended as broken (typed)."""
    data = msgpack.packb({"v": 1}) + MAP_AS_KEY + msgpack.packb({"v": 2})
    options: dict[str, Any] = {"forbid_repeated_keys": refuse_repeats}
    read = (
        (lambda **o: StreamingReader(data, AnyValue, **o))
        if typed
        else (lambda **o: ValueReader(data, **o))
    )
    records, error = drain(read(**options))
    assert len(records) == 1
    assert isinstance(error, RecordError)
    assert (error.index, error.offset) == (1, len(msgpack.packb({"v": 1})))
    assert "a map's key is a map, which no Python dict holds" in str(error)
    skipping = read(on_error="skip", **options)
    assert len(list(skipping)) == 2
    assert skipping.skipped == 1


def test_fluentd_event_time_is_exact_and_checked() -> None:
    good = msgpack.ExtType(0, (1730374586).to_bytes(4, "big") + (108998696).to_bytes(4, "big"))
    bad = msgpack.ExtType(0, b"\x00" * 4 + (10**9).to_bytes(4, "big"))
    data = msgpack.packb([good, msgpack.ExtType(5, b"x")]) + msgpack.packb([bad])
    records, error = drain(ValueReader(data, ext_hook=fluentd_event_time))
    (first,) = records
    assert first[0] == msgpack.Timestamp(1730374586, 108998696)
    assert isinstance(first[1], msgspec.msgpack.Ext)
    assert isinstance(error, RecordError)
    assert (error.index, error.offset) == (1, len(msgpack.packb([good, msgpack.ExtType(5, b"x")])))
    assert "nanoseconds must be below 10**9" in str(error)
    # In skip mode the bad entry is passed over and counted.
    reader = ValueReader(data + msgpack.packb([good]), ext_hook=fluentd_event_time, on_error="skip")
    assert len(list(reader)) == 2
    assert reader.skipped == 1


@pytest.mark.parametrize(
    ("record", "what"),
    [
        (b"\xa2\xff\xfe", "invalid UTF-8 in a str"),
        (b"\xc7\x05\xff" + b"\x00" * 5, "an invalid timestamp extension"),  # 5 bytes
        (b"\xd7\xff" + b"\xff" * 8, "an invalid timestamp extension"),  # ns >= 10**9
    ],
)
def test_undecodable_values_are_located_decode_errors(record: bytes, what: str) -> None:
    good = msgpack.packb({"a": 1})
    records, error = drain(ValueReader(good + record + good))
    assert records == [{"a": 1}]
    assert isinstance(error, DecodeError)
    assert (error.index, error.offset) == (1, len(good))
    assert what in str(error)


def test_json_lines_with_keys_msgspec_does_not_write() -> None:
    out = io.StringIO()
    JsonLines(out).write([{"a": 1}, {None: b"x", (1, 2): math.nan}])
    assert out.getvalue() == '{"a":1}\n{"null":"eA==","[1,2]":null}\n'
    out = io.StringIO()
    JsonLines(out, ["n", "f"], allow_nan=True).write([(1, math.inf)])
    assert out.getvalue() == '{"n":1,"f":Infinity}\n'
    JsonLines(out).write([])
    assert out.getvalue() == '{"n":1,"f":Infinity}\n'
