"""The deterministic generator: the reference fixture, byte for byte, and streams of any length."""

from __future__ import annotations

import hashlib
import io
import itertools
import re
from pathlib import Path

import msgpack
import pytest

from msgpack_reader_py import Item, generate, get_iter, pack_items, write_items

from .reference import (
    FIRST_REFERENCE_RECORD,
    REFERENCE_MESSAGES,
    REFERENCE_SEED,
    REFERENCE_SHA256,
    REFERENCE_SIZE,
    REFERENCE_SUM_OF_IDS,
)

MIN_TIMESTAMP_NS = 1714290559598901400
MAX_TIMESTAMP_NS = 1777333982598901400
FILENAME = re.compile(r"[A-Z0-9]{8}")
PATH = re.compile(r"[A-Z0-9]{15}")


def test_generate_writes_the_reference_fixture(tmp_path: Path) -> None:
    target = tmp_path / "reference.msgpack"
    written = generate(target, REFERENCE_MESSAGES, seed=REFERENCE_SEED)
    data = target.read_bytes()
    assert written == REFERENCE_SIZE
    assert len(data) == REFERENCE_SIZE
    assert hashlib.sha256(data).hexdigest() == REFERENCE_SHA256


def test_generate_default_seed_is_the_reference_seed(tmp_path: Path) -> None:
    target = tmp_path / "default.msgpack"
    assert generate(str(target), REFERENCE_MESSAGES) == REFERENCE_SIZE
    assert hashlib.sha256(target.read_bytes()).hexdigest() == REFERENCE_SHA256


def test_generate_overwrites_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "reference.msgpack"
    target.write_bytes(b"x" * (REFERENCE_SIZE + 1000))
    generate(target, REFERENCE_MESSAGES, seed=REFERENCE_SEED)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == REFERENCE_SHA256


def test_generated_file_is_what_pack_items_returns(tmp_path: Path, reference_bytes: bytes) -> None:
    target = tmp_path / "reference.msgpack"
    generate(target, REFERENCE_MESSAGES, seed=REFERENCE_SEED)
    assert target.read_bytes() == reference_bytes


def test_first_record(reference_bytes: bytes) -> None:
    first = next(iter(get_iter(REFERENCE_MESSAGES, REFERENCE_SEED)))
    assert first.to_list() == FIRST_REFERENCE_RECORD
    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(reference_bytes)
    assert next(unpacker) == FIRST_REFERENCE_RECORD


def test_get_iter_is_deterministic_per_seed() -> None:
    assert list(get_iter(500, seed=7)) == list(get_iter(500, seed=7))
    assert list(get_iter(500)) == list(get_iter(500, seed=REFERENCE_SEED))


def test_a_prefix_is_the_same_whatever_the_length(reference_items: list[Item]) -> None:
    assert list(get_iter(100, REFERENCE_SEED)) == reference_items[:100]


def test_different_seeds_differ() -> None:
    items_42 = list(get_iter(100, seed=42))
    items_43 = list(get_iter(100, seed=43))
    assert items_42 != items_43
    # Every record differs in its drawn fields (only the ids are shared).
    for left, right in zip(items_42, items_43, strict=True):
        assert left.id == right.id
        assert left.to_list()[1:] != right.to_list()[1:]
    assert pack_items(items_42) != pack_items(items_43)


def test_ids_run_from_zero(reference_items: list[Item]) -> None:
    assert [item.id for item in reference_items] == list(range(REFERENCE_MESSAGES))
    assert sum(item.id for item in reference_items) == REFERENCE_SUM_OF_IDS
    assert [item.id for item in get_iter(17, seed=3)] == list(range(17))


def test_get_iter_is_lazy() -> None:
    # A huge stream costs nothing until it is consumed.
    first_three = list(itertools.islice(get_iter(10**12, REFERENCE_SEED), 3))
    assert first_three == list(get_iter(3, REFERENCE_SEED))


@pytest.mark.parametrize("seed", [REFERENCE_SEED, 0, 12345])
def test_field_types_and_ranges(seed: int) -> None:
    items = list(get_iter(2000, seed=seed))
    assert len(items) == 2000
    for item in items:
        assert type(item.process_id) is int
        assert type(item.thread_id) is int
        assert type(item.line) is int
        assert type(item.timestamp_ns) is int
        assert type(item.value) is float
        assert type(item.filename) is str
        assert type(item.path) is str
        assert_in_ranges(item)


def assert_in_ranges(item: Item) -> None:
    assert 0 <= item.process_id <= 65535
    assert 0 <= item.thread_id <= 65535
    assert 0 <= item.line <= 65535
    assert MIN_TIMESTAMP_NS <= item.timestamp_ns <= MAX_TIMESTAMP_NS
    assert 0.0 <= item.value <= 1234.0
    assert FILENAME.fullmatch(item.filename)
    assert PATH.fullmatch(item.path)


def test_reference_field_ranges(reference_items: list[Item]) -> None:
    for item in reference_items:
        assert_in_ranges(item)
    # The draws are spread over the ranges, not stuck at one value.
    assert len({item.process_id for item in reference_items}) > 1000
    assert len({item.filename for item in reference_items}) == REFERENCE_MESSAGES


def test_write_items_returns_the_byte_count_and_matches_pack_items(
    reference_items: list[Item], reference_bytes: bytes
) -> None:
    stream = io.BytesIO()
    written = write_items(stream, reference_items)
    assert written == REFERENCE_SIZE
    assert stream.getvalue() == reference_bytes
    assert stream.getvalue() == pack_items(reference_items)


def test_write_items_accepts_any_iterable() -> None:
    items = list(get_iter(50, seed=9))
    stream = io.BytesIO()
    written = write_items(stream, iter(items))
    assert written == len(stream.getvalue()) == len(pack_items(items))
    assert stream.getvalue() == pack_items(items)


def test_write_items_does_not_close_the_stream() -> None:
    stream = io.BytesIO()
    write_items(stream, get_iter(3))
    assert not stream.closed
    stream.write(b"more")
    assert stream.getvalue().endswith(b"more")


def test_pack_items_encodes_each_record_as_its_wire_array(reference_items: list[Item]) -> None:
    items = reference_items[:200]
    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(pack_items(items))
    assert list(unpacker) == [item.to_list() for item in items]


def test_empty_input() -> None:
    stream = io.BytesIO()
    assert write_items(stream, []) == 0
    assert stream.getvalue() == b""
    assert pack_items([]) == b""
    assert list(get_iter(0)) == []


def test_generate_zero_messages_writes_an_empty_file(tmp_path: Path) -> None:
    target = tmp_path / "empty.msgpack"
    target.write_bytes(b"old content")
    assert generate(target, 0) == 0
    assert target.exists()
    assert target.read_bytes() == b""


@pytest.mark.parametrize("messages", [-1, -10000])
def test_negative_messages_raises_value_error(messages: int) -> None:
    with pytest.raises(ValueError, match=str(messages)):
        list(get_iter(messages))


def test_generate_negative_messages_raises_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="messages"):
        generate(tmp_path / "negative.msgpack", -1)
