"""The error contract in Arrow: on broken data every good record before the failing one is
delivered (as a last, partial batch), then a ``ReaderError`` names the failing record's index
and byte offset; a value Arrow cannot hold is refused as the reader refuses a record; the
source's own exceptions pass through after the records before them.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import msgpack
import pyarrow as pa
import pytest

from msgpack_reader_py import (
    DecodeError,
    Item,
    ReaderError,
    RecordError,
    RecordTooLargeError,
    StreamingReader,
    TruncatedStreamError,
)
from msgpack_reader_py._arrow.reader import (
    DEFAULT_BATCH_SIZE,
    arrow_schema,
    read_batches,
    read_table,
)
from msgpack_reader_py._base.options import DEFAULT_READ_SIZE

from .helpers import (
    ALL_TYPES_VALUES,
    BATCH,
    FIELD_NAMES,
    AllTypes,
    Row,
    all_types_rows,
    as_rows,
    assert_finished,
    assert_located,
    canonical_rows,
    cut_inside,
    drain,
    expected_sizes,
    is_open,
    no_resource_warning,
    packed,
    rows_of,
)


class FailingSource:
    """A connection: ``read1`` hands over ``data`` (at most ``n`` bytes a call), then raises."""

    def __init__(self, data: bytes, error: OSError) -> None:
        self._data = data
        self._error = error

    def read1(self, size: int = -1) -> bytes:
        if not self._data:
            raise self._error
        chunk, self._data = self._data[:size], self._data[size:]
        return chunk

    read = read1


# --------------------------------------------------------------------------------------------
# The error contract
# --------------------------------------------------------------------------------------------

POSITIONS = {
    "first record": 0,
    "inside a batch": 137,
    "on a batch boundary": 2 * BATCH,
    "last record": -1,  # of a stream of SHORT records: the reference stream's first ones
}
SHORT = 1000
ARROW_CAUSES: tuple[type[BaseException], ...] = (pa.ArrowException, OverflowError)

Damager = Callable[[bytes, list[int], list[Item], int], bytes]


def corrupt_start(data: bytes, offsets: list[int], items: list[Item], index: int) -> bytes:
    """Record ``index`` starts with 0xc1, never valid MessagePack."""
    return data[: offsets[index]] + b"\xc1" + data[offsets[index] + 1 :]


def invalid_utf8(data: bytes, offsets: list[int], items: list[Item], index: int) -> bytes:
    """Record ``index``'s filename is the str ``ff fe``, not UTF-8."""
    values = items[index].to_list()
    values[FIELD_NAMES.index("filename")] = "@@"  # not in the generator's alphabet
    record = packed(values).replace(b"\xa2@@", b"\xa2\xff\xfe")
    assert record != packed(values)
    return data[: offsets[index]] + record + data[offsets[index + 1] :]


def replaced_by(make: Callable[[list[Any]], Any]) -> Damager:
    """Record ``index`` is replaced by ``make(its values)``; the records after it stay."""

    def damage(data: bytes, offsets: list[int], items: list[Item], index: int) -> bytes:
        return (
            data[: offsets[index]]
            + packed(make(items[index].to_list()))
            + data[offsets[index + 1] :]
        )

    return damage


def with_field(name: str, value: Any) -> Damager:
    def change(values: list[Any]) -> list[Any]:
        values[FIELD_NAMES.index(name)] = value
        return values

    return replaced_by(change)


@dataclass(frozen=True)
class Damage:
    """A way to break record ``index`` and what the reader must raise for it."""

    make: Damager
    error: type[ReaderError]
    field: str | None = None  # the field the message must name
    cause: tuple[type[BaseException], ...] | None = None
    value: Any = None  # the refused value the message must show


DAMAGES: dict[str, Damage] = {
    "stream cut inside the record": Damage(cut_inside, TruncatedStreamError),
    "0xc1 at the record's start": Damage(corrupt_start, DecodeError, cause=(msgpack.FormatError,)),
    "invalid UTF-8 in a str": Damage(invalid_utf8, DecodeError, cause=(UnicodeDecodeError,)),
    "str in an int field": Damage(with_field("line", "12"), RecordError, field="line"),
    "None in a non-nullable field": Damage(
        with_field("filename", None), RecordError, field="filename"
    ),
    "bool in an int field": Damage(with_field("id", True), RecordError, field="id"),
    "7 values for 8 fields": Damage(replaced_by(lambda values: values[:7]), RecordError),
    "a map without `line`": Damage(
        replaced_by(
            lambda values: {k: v for k, v in zip(FIELD_NAMES, values, strict=True) if k != "line"}
        ),
        RecordError,
        field="line",
    ),
    "2**63 in an int64 field (Arrow)": Damage(
        with_field("id", 2**63), RecordError, "id", ARROW_CAUSES, 2**63
    ),
    "uint64 max in an int64 field (Arrow)": Damage(
        with_field("timestamp_ns", 2**64 - 1), RecordError, "timestamp_ns", ARROW_CAUSES, 2**64 - 1
    ),
}
ARROW_REFUSALS = [name for name in DAMAGES if name.endswith("(Arrow)")]


def check_contract(
    damage: Damage,
    index: int,
    batch_size: int,
    read_size: int,
    items: list[Item],
    data: bytes,
    offsets: list[int],
    rows: list[Row],
) -> None:
    broken = damage.make(data, offsets, items, index)
    reader = read_batches(broken, batch_size=batch_size, read_size=read_size)
    batches, error = drain(reader)
    assert [batch.num_rows for batch in batches] == expected_sizes(index, batch_size)
    assert all(batch.schema == arrow_schema(Item) for batch in batches)
    assert rows_of(batches) == rows[:index]
    assert type(error) is damage.error
    assert_located(error, index, offsets[index])
    if damage.field is not None:
        assert f"field `{damage.field}`" in error.reason
    if damage.cause is not None:
        assert isinstance(error.__cause__, damage.cause)
    if damage.value is not None:
        assert str(damage.value) in error.reason
    assert_finished(reader)


# Each position with each read size, except 1-byte reads up to the last record (seconds each
# time): small reads are the three other positions'.
CHUNKINGS = [
    (position, read_size)
    for position in POSITIONS
    for read_size in ((1,) if position != "last record" else ()) + (100, DEFAULT_READ_SIZE)
]


@pytest.mark.parametrize(("position", "read_size"), CHUNKINGS)
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_error_contract(
    damage: str,
    position: str,
    read_size: int,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """The good records before the failing one arrive first (a partial batch last), then the
    right error, naming the record's index and true offset, and the reader is finished."""
    index = POSITIONS[position]
    items, data, offsets, rows = reference_items, reference_bytes, record_offsets, reference_rows
    if index < 0:
        index = SHORT - 1
        items, data = items[:SHORT], data[: offsets[SHORT]]
        offsets, rows = offsets[: SHORT + 1], rows[:SHORT]
    check_contract(DAMAGES[damage], index, BATCH, read_size, items, data, offsets, rows)


@pytest.mark.parametrize("batch_size", [1, 7, 250, 9999, 10000, DEFAULT_BATCH_SIZE])
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_error_contract_with_other_batch_sizes(
    damage: str,
    batch_size: int,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """The contract holds for batch sizes around and beyond the failing record."""
    check_contract(
        DAMAGES[damage],
        500,
        batch_size,
        DEFAULT_READ_SIZE,
        reference_items,
        reference_bytes,
        record_offsets,
        reference_rows,
    )


@pytest.mark.parametrize("damage", ARROW_REFUSALS)
def test_arrow_refusal_reason_names_the_field_and_the_arrow_type(
    damage: str,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
) -> None:
    """An Arrow refusal says which field, which Arrow type, and Arrow's own reason."""
    case = DAMAGES[damage]
    broken = case.make(reference_bytes, record_offsets, reference_items, 3)
    _, error = drain(read_batches(broken))
    assert case.field is not None
    arrow_type = arrow_schema(Item).field(case.field).type
    assert error.reason.startswith(f"field `{case.field}`: ")
    assert str(arrow_type) in error.reason
    assert error.__cause__ is not None
    assert str(error.__cause__) in error.reason


def test_refusal_is_located_in_a_batch_read_at_once(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """The whole stream in one read: one conversion fails, the records before it still come."""
    broken = with_field("id", 2**63)(reference_bytes, record_offsets, reference_items, 4321)
    reader = read_batches(broken, read_size=len(broken))
    batches, error = drain(reader)
    assert sum(batch.num_rows for batch in batches) == 4321
    assert [row["id"] for row in rows_of(batches)] == list(range(4321))
    assert_located(error, 4321, record_offsets[4321])


def test_a_refused_record_before_an_invalid_one_is_reported_first(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """Arrow's refusal of record 10 comes before the validation error of record 11."""
    broken = with_field("line", "x")(reference_bytes, record_offsets, reference_items, 11)
    broken = with_field("id", 2**63)(broken, record_offsets, reference_items, 10)
    batches, error = drain(read_batches(broken))
    assert sum(batch.num_rows for batch in batches) == 10
    assert type(error) is RecordError
    assert_located(error, 10, record_offsets[10])
    assert "field `id`" in error.reason


def test_an_invalid_record_before_a_refused_one_is_reported_first(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """A validation error in record 10 comes before Arrow's refusal of record 11."""
    broken = with_field("id", 2**63)(reference_bytes, record_offsets, reference_items, 11)
    broken = with_field("line", "x")(broken, record_offsets, reference_items, 10)
    batches, error = drain(read_batches(broken))
    assert sum(batch.num_rows for batch in batches) == 10
    assert_located(error, 10, record_offsets[10])
    assert "field `line`" in error.reason


def packed_records(records: list[list[Any]]) -> tuple[bytes, list[int]]:
    """The stream of ``records`` and each record's offset, measured while packing."""
    offsets, parts = [], []
    size = 0
    for record in records:
        offsets.append(size)
        parts.append(packed(record))
        size += len(parts[-1])
    return b"".join(parts), offsets


@pytest.mark.parametrize("read_size", [1, DEFAULT_READ_SIZE])
@pytest.mark.parametrize(
    ("record_type", "column"),
    [(AllTypes, "oi")],
    ids=["int | None"],
)
def test_arrow_refusal_in_a_nullable_field(
    record_type: type[Any], column: str, read_size: int
) -> None:
    """A value Arrow refuses in a nullable column is located like any other."""
    values = [list(record) for record in ALL_TYPES_VALUES]
    bad = list(values[1])
    position = [f.name for f in dataclasses.fields(AllTypes)].index(column)
    bad[position] = 2**63
    records = [*values, bad, *values]
    data, offsets = packed_records(records)
    reader = read_batches(data, record_type, batch_size=3, read_size=read_size)
    batches, error = drain(reader)
    assert canonical_rows(rows_of(batches)) == canonical_rows(all_types_rows(values))
    assert type(error) is RecordError
    assert_located(error, len(values), offsets[len(values)])
    assert f"field `{column}`" in error.reason
    assert isinstance(error.__cause__, ARROW_CAUSES)


class Count(NamedTuple):
    sensor: str
    total: int | None
    ok: bool


@pytest.mark.parametrize("record_type", [Count, tuple[str, int | None, bool]], ids=str)
def test_arrow_refusal_is_located_for_named_tuple_and_tuple_records(
    record_type: type[Any],
) -> None:
    """Arrow refusals are located for NamedTuple and tuple records too."""
    good: list[list[Any]] = [["a", 1, True], ["b", None, False]] * 4
    records = [*good, ["c", 2**63, True], *good]
    data, offsets = packed_records(records)
    batches, error = drain(read_batches(data, record_type, batch_size=3))
    assert [row for batch in batches for row in batch.to_pylist()] == [
        dict(zip(arrow_schema(record_type).names, record, strict=True)) for record in good
    ]
    assert type(error) is RecordError
    assert_located(error, len(good), offsets[len(good)])
    assert isinstance(error.__cause__, ARROW_CAUSES)


# --------------------------------------------------------------------------------------------
# read_table on broken data
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("read_size", [1, DEFAULT_READ_SIZE])
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_read_table_raises_the_same_error(
    damage: str,
    read_size: int,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
) -> None:
    """read_table raises the error read_batches raises: same class, index, offset, cause."""
    case = DAMAGES[damage]
    broken = case.make(reference_bytes, record_offsets, reference_items, 137)
    with pytest.raises(ReaderError) as info:
        read_table(broken, batch_size=BATCH, read_size=read_size)
    assert type(info.value) is case.error
    assert_located(info.value, 137, record_offsets[137])
    if case.cause is not None:
        assert isinstance(info.value.__cause__, case.cause)


def test_read_table_closes_its_file_on_error(
    tmp_path: Path, reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """read_table closes the file it opened when the data is broken."""
    path = tmp_path / "broken.msgpack"
    path.write_bytes(with_field("id", 2**63)(reference_bytes, record_offsets, reference_items, 9))
    with no_resource_warning(), pytest.raises(RecordError) as info:
        read_table(path)
    assert_located(info.value, 9, record_offsets[9])
    assert not is_open(path)


def test_to_pyarrow_raises_the_same_error_after_the_good_batches(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """Through a RecordBatchReader: the good batches, then the same located error."""
    broken = cut_inside(reference_bytes, record_offsets, reference_items, 250)
    batches = read_batches(broken, batch_size=BATCH).to_pyarrow()
    expected = expected_sizes(250, BATCH)
    got = [batches.read_next_batch().num_rows for _ in expected]
    assert got == expected
    with pytest.raises(TruncatedStreamError) as info:
        batches.read_next_batch()
    assert_located(info.value, 250, record_offsets[250])


# --------------------------------------------------------------------------------------------
# RecordTooLargeError
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("read_size", [1, 100, DEFAULT_READ_SIZE])
@pytest.mark.parametrize("index", [0, 137, 2000])
def test_record_over_max_record_size_is_located(
    index: int,
    read_size: int,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """A record over max_record_size is RecordTooLargeError, after the records before it."""
    limit = 1000
    assert max(b - a for a, b in itertools.pairwise(record_offsets)) < limit
    broken = with_field("path", "p" * 2 * limit)(
        reference_bytes, record_offsets, reference_items, index
    )
    reader = read_batches(broken, batch_size=BATCH, max_record_size=limit, read_size=read_size)
    batches, error = drain(reader)
    assert type(error) is RecordTooLargeError
    assert rows_of(batches) == reference_rows[:index]
    assert_located(error, index, record_offsets[index])
    assert f"max_record_size={limit}" in str(error)


# --------------------------------------------------------------------------------------------
# Exceptions from the source
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("read_size", [1, 100, DEFAULT_READ_SIZE])
@pytest.mark.parametrize("extra", [0, 5], ids=["on a record boundary", "inside a record"])
def test_os_error_passes_through_after_the_records_before_it(
    extra: int,
    read_size: int,
    reference_bytes: bytes,
    record_offsets: list[int],
    reference_rows: list[Row],
) -> None:
    """A source's OSError is not data: the records before it arrive, then it passes unchanged."""
    index = 137
    data = reference_bytes[: record_offsets[index] + extra]
    error = ConnectionResetError(104, "Connection reset by peer")
    reader = read_batches(FailingSource(data, error), batch_size=BATCH, read_size=read_size)
    batches: list[pa.RecordBatch] = []
    with pytest.raises(ConnectionResetError) as info:
        batches.extend(reader)
    assert info.value is error
    assert not isinstance(info.value, ReaderError)
    assert info.value.__cause__ is None
    assert info.value.__context__ is None
    assert [batch.num_rows for batch in batches] == expected_sizes(index, BATCH)
    assert rows_of(batches) == reference_rows[:index]
    assert reader.bytes_read == len(data)
    assert_finished(reader)


class TextAfter:
    """A source whose first read is ``data`` and whose next read returns text, not bytes."""

    def __init__(self, data: bytes) -> None:
        self._reads = [data]

    def read(self, size: int = -1) -> Any:
        return self._reads.pop() if self._reads else "text"


def truncated_gzip(data: bytes) -> Callable[[], Any]:
    """A gzip stream of ``data`` missing its last bytes: its read() ends in ``EOFError``."""
    compressed = gzip.compress(data)[:-20]
    return lambda: gzip.GzipFile(fileobj=io.BytesIO(compressed))


SOURCE_FAILURES: dict[str, tuple[Callable[[bytes], Callable[[], Any]], type[Exception]]] = {
    "truncated gzip file (EOFError)": (truncated_gzip, EOFError),
    "read() returns text (TypeError)": (lambda data: lambda: TextAfter(data), TypeError),
}


@pytest.mark.parametrize("batch_size", [BATCH, DEFAULT_BATCH_SIZE])
@pytest.mark.parametrize("failure", list(SOURCE_FAILURES))
def test_any_source_exception_comes_after_the_records_before_it(
    failure: str, batch_size: int, reference_bytes: bytes, reference_rows: list[Row]
) -> None:
    """BatchReader's error contract is "as the reader's": whatever the source raises,
    StreamingReader has handed over every record before it; the batches must hold them too."""
    make_source, exception = SOURCE_FAILURES[failure]
    new_source = make_source(reference_bytes[: len(reference_bytes) // 2])
    records: list[Item] = []
    with pytest.raises(exception):
        records.extend(StreamingReader(new_source()))
    assert len(records) > BATCH
    batches: list[pa.RecordBatch] = []
    with pytest.raises(exception):
        batches.extend(read_batches(new_source(), batch_size=batch_size))
    assert rows_of(batches) == as_rows(records)
    assert rows_of(batches) == reference_rows[: len(records)]
