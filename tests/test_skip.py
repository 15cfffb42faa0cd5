"""on_error="skip": records that are not records of the type are passed over and counted."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import (
    DecodeError,
    Item,
    ItemTuple,
    RecordError,
    RecordTooLargeError,
    StreamingReader,
    TruncatedStreamError,
    get_iter,
    pack_items,
)
from msgpack_reader_py.cli import main

from .helpers import Checked

GOOD = list(get_iter(5, seed=3))
INVALID: dict[str, Any] = {
    "a map": {"id": 1},
    "7 fields": [1, 2, 3, 4, 5, 6.0, "f"],
    "9 fields": [1, 2, 3, 4, 5, 6.0, "f", "p", 9],
    "a str of 8": "abcdefgh",
    "an int": 12,
    "a bool id": [True, 2, 3, 4, 5, 6.0, "f", "p"],
    "a nested array": [[1], 2, 3, 4, 5, 6.0, "f", "p"],
    "a long array": list(range(100)),
}


def interleave(invalid: list[Any]) -> tuple[bytes, list[int]]:
    """GOOD[0], invalid[0], GOOD[1], invalid[1], ...; and the offset of every record."""
    data = b""
    offsets = []
    for position, item in enumerate(GOOD):
        offsets.append(len(data))
        data += pack_items([item])
        if position < len(invalid):
            offsets.append(len(data))
            data += msgpack.packb(invalid[position])
    return data, offsets


@pytest.mark.parametrize("read_size", [1, 7, 65536])
@pytest.mark.parametrize("record_type", [Item, ItemTuple])
def test_invalid_records_are_skipped_counted_and_located(
    read_size: int, record_type: type[Any]
) -> None:
    invalid = list(INVALID.values())[:4]
    data, offsets = interleave(invalid)
    reader = StreamingReader(data, record_type, on_error="skip", read_size=read_size)
    got = list(reader)
    assert [Item(*record) if record_type is ItemTuple else record for record in got] == GOOD
    assert reader.skipped == 4
    assert [(e.index, e.offset) for e in reader.errors] == [
        (1, offsets[1]),
        (3, offsets[3]),
        (5, offsets[5]),
        (7, offsets[7]),
    ]
    assert all(type(e) is RecordError for e in reader.errors)


@pytest.mark.parametrize("name", list(INVALID))
def test_each_kind_of_invalid_record_is_skippable(name: str) -> None:
    data, offsets = interleave([INVALID[name]])
    reader = StreamingReader(data, on_error="skip")
    assert list(reader) == GOOD
    assert reader.skipped == 1
    assert (reader.errors[0].index, reader.errors[0].offset) == (1, offsets[1])


def test_maps_are_records_and_a_map_missing_a_key_is_skipped() -> None:
    """A map with a key per field is read, not skipped; one without a field's key is."""
    names = ["id", "process_id", "thread_id", "timestamp_ns", "line", "value", "filename", "path"]
    keyed = [dict(zip(names, item.to_list(), strict=True)) for item in GOOD[:2]]
    missing = {name: value for name, value in keyed[1].items() if name != "line"}
    data, offsets = interleave([keyed[0], missing])
    reader = StreamingReader(data, on_error="skip")
    assert list(reader) == [GOOD[0], GOOD[0], *GOOD[1:]]
    assert reader.skipped == 1
    [error] = reader.errors
    assert (error.index, error.offset) == (3, offsets[3])
    assert error.reason == "field `line` is missing (a map without its key, and no default)"


def test_only_the_first_100_errors_are_kept() -> None:
    data = pack_items(GOOD[:1]) + msgpack.packb("bad") * 150 + pack_items(GOOD[1:2])
    reader = StreamingReader(data, on_error="skip")
    assert list(reader) == GOOD[:2]
    assert reader.skipped == 150
    assert len(reader.errors) == 100
    assert [e.index for e in reader.errors] == list(range(1, 101))


def test_a_mapper_that_refuses_a_value_is_skipped() -> None:
    def positive(values: list[Any]) -> int:
        if values[0] < 0:
            raise ValueError("negative id")
        return int(values[0])

    data = b"".join(msgpack.packb([n]) for n in (1, -2, 3, -4))
    reader = StreamingReader(data, mapper=positive, on_error="skip")
    assert list(reader) == [1, 3]
    assert [e.index for e in reader.errors] == [1, 3]
    assert "negative id" in str(reader.errors[0])


@pytest.mark.parametrize(
    ("tail", "error", "cause_index"),
    [
        (b"\xc1", DecodeError, 3),
        (b"\x98\x01", TruncatedStreamError, 3),
        (b"\xdb\xff\xff\xff\xff", RecordTooLargeError, 3),
    ],
)
def test_broken_data_still_raises_after_skipping(
    tail: bytes, error: type[Exception], cause_index: int
) -> None:
    data = pack_items(GOOD[:1]) + msgpack.packb("bad") + pack_items(GOOD[1:2])
    reader = StreamingReader(data + tail, on_error="skip", max_record_size=1000)
    got: list[Item] = []
    with pytest.raises(error) as info:
        got.extend(reader)
    assert got == GOOD[:2]
    assert reader.skipped == 1
    assert getattr(info.value, "index", None) == cause_index
    assert getattr(info.value, "offset", None) == len(data)


def test_raise_mode_has_nothing_skipped() -> None:
    reader = StreamingReader(pack_items(GOOD))
    assert list(reader) == GOOD
    assert (reader.skipped, reader.errors) == (0, [])


def test_on_error_is_checked_at_construction() -> None:
    with pytest.raises(ValueError, match="on_error must be 'raise' or 'skip'"):
        StreamingReader(b"", on_error="ignore")  # type: ignore[call-overload]


@settings(deadline=None, max_examples=150)
@given(
    st.lists(st.booleans(), max_size=40),
    st.sampled_from(list(INVALID.values())),
    st.sampled_from([1, 3, 64, 65536]),
)
def test_skipping_keeps_every_valid_record_in_order(
    pattern: list[bool], invalid: Any, read_size: int
) -> None:
    items = list(get_iter(len(pattern), seed=11))
    data = b"".join(
        pack_items([item]) if keep else msgpack.packb(invalid)
        for item, keep in zip(items, pattern, strict=True)
    )
    reader = StreamingReader(data, on_error="skip", read_size=read_size)
    assert list(reader) == [item for item, keep in zip(items, pattern, strict=True) if keep]
    assert reader.skipped == pattern.count(False)
    assert [e.index for e in reader.errors] == [i for i, keep in enumerate(pattern) if not keep]


def test_cli_skip_invalid(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    data, offsets = interleave([INVALID["a str of 8"], INVALID["a bool id"]])
    path = tmp_path / "mixed.msgpack"
    path.write_bytes(data)
    assert main(["read", str(path), "--json", "--skip-invalid"]) == 0
    out, err = capsys.readouterr()
    assert '"records": 5' in out
    assert '"skipped": 2' in out
    assert err.splitlines() == [
        f"{path}: skipped 2 invalid records; the first: record 1 at byte {offsets[1]}: "
        "expected an array or a map of 8 fields, found str 'abcdefgh'"
    ]
    assert main(["read", str(path)]) == 1
    assert main(["dump", str(path), "--skip-invalid", "--limit", "1"]) == 0


def test_skip_mode_walks_a_batch_with_a_refused_constructor_and_a_wrong_shape() -> None:
    values = [[1, "a"], "not a record", [-2, "b"], [3, "c"]]
    data = b"".join(msgpack.packb(v) for v in values)
    reader = StreamingReader(data, Checked, on_error="skip")
    assert list(reader) == [Checked(1, "a"), Checked(3, "c")]
    assert [e.index for e in reader.errors] == [1, 2]
    assert "id must not be negative" in str(reader.errors[1])


def test_skip_mode_still_refuses_a_record_over_the_limit_in_a_bad_batch() -> None:
    small, big = msgpack.packb([1, "a"]), msgpack.packb([2, "x" * 200])
    data = small + msgpack.packb("bad") + big
    reader = StreamingReader(data, Checked, on_error="skip", max_record_size=100)
    got: list[Checked] = []
    with pytest.raises(RecordTooLargeError) as info:
        got.extend(reader)
    assert got == [Checked(1, "a")]
    assert (info.value.index, info.value.offset) == (2, len(small) + len(msgpack.packb("bad")))
    assert reader.skipped == 1
