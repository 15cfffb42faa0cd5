"""``BatchReader``: a context manager that owns what it opens, its properties (``bytes_read``,
name, schema), arguments checked at construction, and column projection.
"""

from __future__ import annotations

import io
import typing
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pyarrow as pa
import pytest

from msgpack_reader_py import (
    Item,
    RecordError,
    TruncatedStreamError,
    get_iter,
    pack_items,
)
from msgpack_reader_py._arrow.reader import (
    BatchReader,
    arrow_schema,
    read_batches,
    read_table,
)
from msgpack_reader_py._base.options import DEFAULT_READ_SIZE
from tests.reference import REFERENCE_MESSAGES, REFERENCE_SIZE

from .helpers import (
    BATCH,
    FIELD_NAMES,
    AllTypes,
    Reading,
    UnreadableSource,
    assert_located,
    cut_inside,
    drain,
    expected_sizes,
    is_open,
    no_resource_warning,
    packed,
    rows_of,
)

# --------------------------------------------------------------------------------------------
# BatchReader: context manager, ownership, properties
# --------------------------------------------------------------------------------------------


def test_with_block_closes_the_file_it_opened(small_path: Path) -> None:
    """Leaving the with block closes a path's file, with no ResourceWarning."""
    with no_resource_warning():
        with read_batches(small_path, batch_size=7) as reader:
            assert is_open(small_path)
            next(reader)
            assert not reader.closed
        assert reader.closed
        assert not is_open(small_path)


@pytest.mark.parametrize("as_str", [False, True])
def test_exhausting_the_reader_closes_the_file_it_opened(small_path: Path, as_str: bool) -> None:
    """A path's file is closed as soon as the last batch is read."""
    with no_resource_warning():
        reader = read_batches(str(small_path) if as_str else small_path)
        assert sum(batch.num_rows for batch in reader) == 50
        assert not is_open(small_path)
        reader.close()


def test_close_before_reading_closes_the_file(small_path: Path) -> None:
    """close() before the first batch closes the file; nothing is read after."""
    with no_resource_warning():
        reader = read_batches(small_path)
        assert is_open(small_path)
        reader.close()
        assert not is_open(small_path)
        with pytest.raises(ValueError, match="I/O operation on a closed BatchReader"):
            next(reader)


def test_caller_stream_stays_open(small_path: Path) -> None:
    """A stream the caller passed is never closed by the reader."""
    with open(small_path, "rb") as stream:
        with read_batches(stream, batch_size=7) as reader:
            next(reader)
        assert reader.closed
        assert not stream.closed
        assert stream.read(0) == b""
    buffer = io.BytesIO(pack_items(get_iter(5)))
    with read_batches(buffer) as reader:
        list(reader)
    assert not buffer.closed


def test_caller_stream_stays_open_after_an_error(small_path: Path) -> None:
    """Nor when the data in it is broken."""
    buffer = io.BytesIO(small_path.read_bytes()[:-3])
    with pytest.raises(TruncatedStreamError), read_batches(buffer) as reader:
        list(reader)
    assert not buffer.closed


def test_iterating_to_an_error_closes_the_file_it_opened(
    tmp_path: Path, reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """A path's file is closed when the reader fails, before close() is called."""
    path = tmp_path / "truncated.msgpack"
    path.write_bytes(reference_bytes[: record_offsets[300] + 3])
    with no_resource_warning():
        reader = read_batches(path, batch_size=BATCH)
        batches, error = drain(reader)
        assert sum(batch.num_rows for batch in batches) == 300
        assert_located(error, 300, record_offsets[300])
        assert not is_open(path)
        reader.close()


@pytest.mark.parametrize("started", [False, True], ids=["unstarted", "started"])
def test_dropped_reader_closes_its_file_at_once(small_path: Path, started: bool) -> None:
    """A reader dropped without close() closes its file as soon as it is dropped, without a
    warning: no reference cycle keeps it (and its file) alive until the collector runs."""
    with no_resource_warning():
        reader = read_batches(small_path, batch_size=7)
        if started:
            next(reader)
        assert is_open(small_path)
        del reader
        assert not is_open(small_path)


def test_close_after_the_partial_batch_does_not_raise(
    reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """A caller that stops at the partial batch, before the error, closes cleanly."""
    broken = cut_inside(reference_bytes, record_offsets, reference_items, 30)
    reader = read_batches(broken, batch_size=BATCH)
    assert next(reader).num_rows == 30
    reader.close()
    assert reader.closed
    with pytest.raises(ValueError, match="closed BatchReader"):
        list(reader)


def test_close_twice_is_safe(small_path: Path) -> None:
    """close() may be called twice; closed says it was called."""
    reader = read_batches(small_path)
    assert not reader.closed
    reader.close()
    reader.close()
    assert reader.closed
    assert not is_open(small_path)


def test_close_in_the_middle_stops_reading(reference_bytes: bytes) -> None:
    """After close(), iteration is refused, as a closed file's is."""
    reader = read_batches(reference_bytes, batch_size=10, read_size=100)
    next(reader)
    reader.close()
    with pytest.raises(ValueError, match="closed BatchReader"):
        iter(reader)


@pytest.mark.parametrize(
    ("read_size", "count"),
    [(7, 500), (1000, REFERENCE_MESSAGES), (DEFAULT_READ_SIZE, REFERENCE_MESSAGES)],
)
def test_bytes_read_is_the_stream_length_once_exhausted(
    read_size: int, count: int, reference_bytes: bytes, record_offsets: list[int]
) -> None:
    """bytes_read ends at the stream's length, for bytes and streams."""
    data = reference_bytes[: record_offsets[count]]
    for source in (data, io.BytesIO(data)):
        reader = read_batches(source, batch_size=3000, read_size=read_size)
        assert reader.bytes_read == 0
        list(reader)
        assert reader.bytes_read == len(data)
    assert count < REFERENCE_MESSAGES or len(data) == REFERENCE_SIZE


def test_bytes_read_grows_with_what_was_read(reference_bytes: bytes) -> None:
    """bytes_read counts what was read so far, not the whole source."""
    reader = read_batches(reference_bytes, batch_size=10, read_size=4096)
    next(reader)
    assert 0 < reader.bytes_read <= 4096


def test_name_and_repr_name_the_source(small_path: Path) -> None:
    """name and repr name the source and the record type; repr shows closed."""
    with read_batches(small_path) as reader:
        assert reader.name == str(small_path)
        assert str(small_path) in repr(reader)
        assert "Item" in repr(reader)
        assert "closed" not in repr(reader)
    assert "closed" in repr(reader)
    with open(small_path, "rb") as stream:
        assert read_batches(stream).name == str(small_path)
    assert "BytesIO" in read_batches(io.BytesIO()).name
    assert "bytes" in read_batches(b"").name
    assert "Reading" in repr(read_batches(b"", Reading))


def test_to_pyarrow_gives_a_record_batch_reader_of_the_same_table(
    reference_bytes: bytes,
) -> None:
    """to_pyarrow() is a pyarrow.RecordBatchReader of the same batches."""
    with read_batches(reference_bytes, batch_size=999) as reader:
        batches = reader.to_pyarrow()
        assert isinstance(batches, pa.RecordBatchReader)
        assert batches.schema == arrow_schema(Item)
        table = batches.read_all()
    assert table.equals(read_table(reference_bytes))
    assert [batch.num_rows for batch in table.to_batches()] == expected_sizes(
        REFERENCE_MESSAGES, 999
    )


def test_schema_is_known_before_reading() -> None:
    """schema is available before any byte is read."""
    source = UnreadableSource()
    reader = read_batches(source, AllTypes)
    assert reader.schema == arrow_schema(AllTypes)
    assert source.reads == 0


def test_iterating_twice_continues_where_it_stopped(reference_bytes: bytes) -> None:
    """The reader is an iterator: a second loop continues, it does not restart."""
    reader = read_batches(reference_bytes, batch_size=4000)
    first = next(reader)
    rest = list(reader)
    assert [first.num_rows, *(batch.num_rows for batch in rest)] == [4000, 4000, 2000]
    assert list(reader) == []


BAD_SIZES: list[Any] = [0, -1, True, False, 1.5, "10", None]


@pytest.mark.parametrize("value", BAD_SIZES, ids=repr)
def test_invalid_batch_size_fails_at_construction(value: Any, small_path: Path) -> None:
    """A batch_size that is not a positive int (bools included) is refused before opening."""
    with pytest.raises(ValueError, match="batch_size"):
        read_batches(small_path, batch_size=value)
    with pytest.raises(ValueError, match="batch_size"):
        read_table(small_path, batch_size=value)
    with pytest.raises(ValueError, match="batch_size"):
        BatchReader(small_path, batch_size=value)
    assert not is_open(small_path)


@pytest.mark.parametrize("option", ["max_record_size", "read_size"])
@pytest.mark.parametrize("value", BAD_SIZES, ids=repr)
def test_invalid_sizes_fail_at_construction(option: str, value: Any, small_path: Path) -> None:
    """Bad max_record_size/read_size are refused before opening the path."""
    with pytest.raises(ValueError, match=option):
        read_batches(small_path, **{option: value})
    with pytest.raises(ValueError, match=option):
        read_table(small_path, **{option: value})
    assert not is_open(small_path)


def test_missing_path_fails_at_construction(tmp_path: Path) -> None:
    """A missing file fails at the call, not at the first batch."""
    with pytest.raises(FileNotFoundError):
        read_batches(tmp_path / "missing.msgpack")


def test_text_stream_is_refused() -> None:
    """A text stream is refused at the call."""
    with pytest.raises(TypeError, match="binary"):
        read_batches(io.StringIO("[]"))


def test_dataclass_string_annotations_are_resolved() -> None:
    """tests/helpers.py uses ``from __future__ import annotations``: AllTypes' hints are strings."""
    assert isinstance(AllTypes.__annotations__["oi"], str)
    assert typing.get_type_hints(AllTypes)["oi"] == int | None
    assert arrow_schema(AllTypes).field("oi") == pa.field("oi", pa.int64(), nullable=True)


# --- column projection ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "columns",
    [["value"], ["id", "value"], ["path", "id"], FIELD_NAMES[::-1], FIELD_NAMES],
    ids=["one", "two", "reordered", "all reversed", "all"],
)
@pytest.mark.parametrize(
    ("read_size", "count"), [(7, 500), (DEFAULT_READ_SIZE, REFERENCE_MESSAGES)]
)
def test_projection_builds_the_named_columns_in_the_order_asked(
    reference_bytes: bytes,
    record_offsets: list[int],
    columns: list[str],
    read_size: int,
    count: int,
) -> None:
    """``columns=`` gives exactly those columns, in that order, with the full table's values."""
    data = reference_bytes[: record_offsets[count]]
    full = read_table(data)
    projected = read_table(data, columns=columns, read_size=read_size)
    assert projected.schema == pa.schema([arrow_schema(Item).field(name) for name in columns])
    assert projected.equals(full.select(columns))


def test_projection_batches_have_the_projected_schema(reference_bytes: bytes) -> None:
    with read_batches(reference_bytes, batch_size=3000, columns=["line"]) as batches:
        assert batches.schema.names == ["line"]
        sizes = [batch.num_rows for batch in batches if batch.schema == batches.schema]
    assert sizes == expected_sizes(REFERENCE_MESSAGES, 3000)


@pytest.mark.parametrize(
    ("columns", "error", "message"),
    [
        ("id", TypeError, "not a str"),
        ([], ValueError, "got none"),
        (["id", "nope"], ValueError, r"got unknown \['nope'\]"),
        (["id", "id"], ValueError, "got a repeated name"),
    ],
)
def test_bad_projection_is_refused_at_the_call(
    small_path: Path, columns: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        read_batches(small_path, columns=columns)
    assert not is_open(small_path)


def test_projection_changes_no_validation_error(
    reference_items: list[Item], record_offsets: list[int]
) -> None:
    """A field left out of the projection is still validated: the same error, located."""
    values = [item.to_list() for item in reference_items[:50]]
    values[20][FIELD_NAMES.index("path")] = 7  # not a str, and not a projected column
    data = b"".join(packed(v) for v in values)
    offsets = record_offsets[:21]  # the first 20 records are unchanged
    batches, error = drain(read_batches(data, columns=["id"], batch_size=8))
    assert rows_of(batches) == [{"id": item.id} for item in reference_items[:20]]
    assert isinstance(error, RecordError)
    assert_located(error, 20, offsets[20])
    assert "field `path` expected str, got int 7" in str(error)


@pytest.mark.parametrize("columns", [["id"], ["value", "id"]])
def test_arrow_refusal_in_a_projected_column_is_located(
    reference_items: list[Item], record_offsets: list[int], columns: list[str]
) -> None:
    values = [item.to_list() for item in reference_items[:50]]
    values[33][0] = 2**63
    data = b"".join(packed(v) for v in values)
    offset = len(b"".join(packed(v) for v in values[:33]))
    batches, error = drain(read_batches(data, columns=columns))
    assert len(rows_of(batches)) == 33
    assert isinstance(error, RecordError)
    assert_located(error, 33, offset)
    assert "field `id`: int 9223372036854775808 does not fit Arrow int64" in str(error)


def test_arrow_refusal_applies_only_to_the_columns_built(reference_items: list[Item]) -> None:
    """An int over int64 in a column left out is valid for the record type and never built."""
    values = [item.to_list() for item in reference_items[:10]]
    values[4][0] = 2**63
    data = b"".join(packed(v) for v in values)
    table = read_table(data, columns=["value"])
    assert table.column("value").to_pylist() == [item.value for item in reference_items[:10]]


def test_tuple_record_refusal_names_the_field_as_validation_does() -> None:
    data = packed([1, "a"]) + packed([2**63, "b"])
    batches, error = drain(read_batches(data, tuple[int, str]))
    assert rows_of(batches) == [{"0": 1, "1": "a"}]
    assert isinstance(error, RecordError)
    assert "field `[0]`: int 9223372036854775808 does not fit Arrow int64" in str(error)


class ArrayLike(msgspec.Struct, array_like=True):
    """A Struct decoded from arrays as itself: its rows must still be taken apart."""

    a: int
    b: str = "x"


def test_array_like_struct_records_become_rows() -> None:
    data = msgpack.packb([1, "p"]) + msgpack.packb([2])
    assert read_table(data, ArrayLike).to_pylist() == [{"a": 1, "b": "p"}, {"a": 2, "b": "x"}]


def test_batch_reader_in_skip_mode() -> None:
    """Skip mode passes over a record that is not an Item and one Arrow cannot hold (an int
    over int64), and counts them."""
    first = list(get_iter(30))
    huge = msgpack.packb([2**64 - 1, 1, 2, 3, 4, 5.0, "f", "p"])
    data = msgpack.packb("not an item") + pack_items(first) + huge
    with read_batches(data, batch_size=7, read_size=50, on_error="skip") as batches:
        rows = [Item(**row) for batch in batches for row in batch.to_pylist()]
        assert rows == first
        assert batches.skipped == 2
        assert [error.index for error in batches.errors] == [0, len(first) + 1]
    assert read_table(data, on_error="skip").num_rows == len(first)
