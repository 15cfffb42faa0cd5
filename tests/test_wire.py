"""The header walker that reads the sizes an unfinished record declares."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings

from msgpack_reader_py._stream.wire import declared_excess

from .helpers import examples, msgpack_values

values = msgpack_values(size=300, items=20, leaves=60)


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(values)
def test_no_prefix_of_a_record_within_the_limit_is_refused(value: Any) -> None:
    data = msgpack.packb(value)
    for cut in range(len(data) + 1):
        assert declared_excess(data[:cut], len(data)) is None


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(values)
def test_a_whole_record_one_byte_over_the_limit_is_refused(value: Any) -> None:
    data = msgpack.packb(value)
    assert declared_excess(data, len(data) - 1) is not None


@pytest.mark.parametrize(
    ("header", "phrase"),
    [
        (b"\xdb\xff\xff\xff\xff", "declares a str of 4294967295 bytes"),
        (b"\xc6\xff\xff\xff\xff", "declares a bin of 4294967295 bytes"),
        (b"\xc9\xff\xff\xff\xff", "declares an ext of 4294967295 bytes"),
        (b"\xdd\xff\xff\xff\xff", "declares an array of 4294967295 entries"),
        (b"\xdf\xff\xff\xff\xff", "declares a map of 4294967295 entries"),
    ],
)
def test_a_32_bit_header_claiming_its_maximum_is_seen_at_the_header(
    header: bytes, phrase: str
) -> None:
    # The claim is seen nested after other fields too, with nothing of the payload present.
    record_prefix = b"\x98\x01\xa3abc" + header
    assert declared_excess(record_prefix, 1 << 20) == phrase


def test_the_limit_is_exact_at_the_boundary() -> None:
    data = msgpack.packb(["x" * 100])  # 1 + 2 + 100 bytes
    assert len(data) == 103
    assert declared_excess(data[:3], 103) is None
    assert declared_excess(data[:3], 102) == "declares a str of 100 bytes"


def test_many_small_values_count_one_byte_each() -> None:
    # An array16 of 1000 entries needs at least 1003 bytes, whatever the entries are.
    header = b"\xdc\x03\xe8"
    assert declared_excess(header, 1003) is None
    assert declared_excess(header, 1002) == "declares an array of 1000 entries"
    # Past the header, the running lower bound still counts every promised value.
    assert declared_excess(header + b"\x01" * 10, 1002) == "declares an array of 1000 entries"


def test_a_length_field_cut_short_or_an_invalid_byte_stops_the_walk() -> None:
    assert declared_excess(b"\x91\xdb\xff\xff", 10) is None
    assert declared_excess(b"\x92\xc1\xdb\xff\xff\xff\xff", 10) is None
    assert declared_excess(b"", 10) is None


def test_small_values_add_up_past_the_limit() -> None:
    # fixarray of 3, then a 3-byte fixstr: 5 bytes so far and two more values to come.
    assert declared_excess(b"\x93\xa3abc", 7) is None
    assert declared_excess(b"\x93\xa3abc", 6) == "declares at least 7 bytes"
