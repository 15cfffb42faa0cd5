"""``msgpack_reader_py.convert``, the library function: streams and paths, progress
callbacks, errors, ``bytes`` fields, record types besides ``Item``, and its pieces (CSV
without text fields, the name of a failing output).
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import errno
import io
import itertools
import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import msgpack
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq
import pytest

from msgpack_reader_py import Item, get_iter, pack_items
from msgpack_reader_py._arrow.reader import arrow_schema
from msgpack_reader_py._base.errors import ReaderError, RecordError
from msgpack_reader_py._output.columnar import columns_out
from msgpack_reader_py._output.convert import Conversion, convert
from msgpack_reader_py._output.formats import OutputFormat

from .helpers import (
    BROKEN_KINDS,
    COLUMN_FORMATS,
    FORMATS,
    TEXT_FORMATS,
    Checked,
    as_rows,
    assert_directory_holds,
    broken_stream,
    read_back,
    temporaries,
)
from .reference import REFERENCE_MESSAGES, REFERENCE_SIZE

pytestmark = pytest.mark.usefixtures("short_bar_delay")


@pytest.fixture(scope="module")
def big_stream() -> tuple[int, bytes]:
    """More records than one Parquet/Arrow batch holds (65536): the records and the bytes."""
    count = 70_000
    return count, pack_items(get_iter(count))


# --- the library function ------------------------------------------------------------------------


@pytest.mark.parametrize("to", FORMATS)
def test_library_writes_a_stream_and_leaves_it_open(
    reference_bytes: bytes, reference_items: list[Item], to: OutputFormat
) -> None:
    out = io.BytesIO()
    assert convert(reference_bytes, out, to) == Conversion(REFERENCE_MESSAGES)
    assert not out.closed
    assert out.tell() == len(out.getvalue())
    assert read_back(out.getvalue(), to) == as_rows(reference_items)
    out.write(b"")  # still usable


@pytest.mark.parametrize("kind", ["str", "PathLike"])
@pytest.mark.parametrize("to", FORMATS)
def test_library_writes_a_path(
    tmp_path: Path, reference_path: Path, reference_items: list[Item], to: OutputFormat, kind: str
) -> None:
    out = tmp_path / f"out.{to}"
    destination: str | Path = str(out) if kind == "str" else out
    assert convert(reference_path, destination, to).records == REFERENCE_MESSAGES
    assert read_back(out.read_bytes(), to) == as_rows(reference_items)
    assert temporaries(out) == []


@pytest.mark.parametrize("to", FORMATS)
def test_library_empty_source(tmp_path: Path, to: OutputFormat) -> None:
    out = tmp_path / f"out.{to}"
    assert convert(b"", out, to) == Conversion(0)
    assert read_back(out.read_bytes(), to) == []


@pytest.mark.parametrize("to", FORMATS)
def test_library_progress_is_monotonic_and_ends_at_the_totals(
    big_stream: tuple[int, bytes], to: OutputFormat
) -> None:
    count, data = big_stream
    calls: list[tuple[int, int]] = []
    written = convert(
        io.BytesIO(data),
        io.BytesIO(),
        to,
        progress=lambda records, size: calls.append((records, size)),
    )
    assert written == Conversion(count)
    assert len(calls) >= 2  # more than one batch: progress along the way, not only at the end
    for (records, size), (next_records, next_size) in itertools.pairwise(calls):
        assert records <= next_records
        assert size <= next_size
    assert all(0 < records <= count and 0 < size <= len(data) for records, size in calls)
    assert calls[-1] == (count, len(data))


@pytest.mark.parametrize("to", FORMATS)
def test_library_progress_from_a_path(
    reference_path: Path, reference_items: list[Item], to: OutputFormat
) -> None:
    calls: list[tuple[int, int]] = []
    convert(
        reference_path,
        io.BytesIO(),
        to,
        progress=lambda records, size: calls.append((records, size)),
    )
    assert calls[-1] == (len(reference_items), REFERENCE_SIZE)


@pytest.mark.parametrize("kind", BROKEN_KINDS)
@pytest.mark.parametrize("to", FORMATS)
def test_library_raises_the_readers_error_and_leaves_no_file(
    tmp_path: Path,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    to: OutputFormat,
    kind: str,
) -> None:
    broken = broken_stream(kind, reference_items, reference_bytes, record_offsets)
    out = tmp_path / f"out.{to}"
    with pytest.raises(ReaderError) as info:
        convert(broken.data, out, to)
    assert (info.value.index, info.value.offset) == (broken.index, broken.offset)
    assert broken.message in str(info.value)
    assert_directory_holds(tmp_path, set())


@pytest.mark.parametrize("to", FORMATS)
def test_library_refuses_a_record_its_types_post_init_refuses(
    tmp_path: Path, to: OutputFormat
) -> None:
    first = msgpack.packb([1, "a"])
    out = tmp_path / f"out.{to}"
    with pytest.raises(RecordError, match="id must not be negative") as info:
        convert(first + msgpack.packb([-2, "b"]), out, to, record_type=Checked)
    assert (info.value.index, info.value.offset) == (1, len(first))
    assert_directory_holds(tmp_path, set())


def test_library_max_record_size(tmp_path: Path, reference_bytes: bytes) -> None:
    with pytest.raises(ReaderError, match="max_record_size=10"):
        convert(reference_bytes, tmp_path / "out.csv", "csv", max_record_size=10)
    assert_directory_holds(tmp_path, set())


@pytest.mark.parametrize("to", ["xml", "PARQUET", "", None])
def test_library_refuses_an_unknown_format(tmp_path: Path, to: object) -> None:
    bad: Any = to
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="parquet, arrow, csv, jsonl"):
        convert(b"", out, bad)
    stream = io.BytesIO()
    with pytest.raises(ValueError, match="to must be one of"):
        convert(b"", stream, bad)
    assert stream.getvalue() == b""
    assert_directory_holds(tmp_path, set())


@dataclasses.dataclass
class Blob:
    id: int
    payload: bytes


class MaybeBlob(NamedTuple):
    id: int
    payload: bytes | None


class Named(NamedTuple):
    key: str
    amount: float
    flag: bool
    note: str | None


BLOBS: list[list[Any]] = [[1, b"\x00\xff"], [2, b""], [3, b"text"]]


def base64_text(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


@pytest.mark.parametrize("record_type", [Blob, MaybeBlob], ids=["bytes", "bytes-or-None"])
@pytest.mark.parametrize("to", TEXT_FORMATS)
def test_library_text_formats_hold_bytes_fields_as_base64(
    tmp_path: Path, record_type: type[Any], to: OutputFormat
) -> None:
    records = [*BLOBS, [4, None]] if record_type is MaybeBlob else BLOBS
    data = b"".join(msgpack.packb(record) for record in records)
    out = tmp_path / f"out.{to}"
    assert convert(data, out, to, record_type=record_type).records == len(records)
    stream = io.BytesIO()
    assert convert(data, stream, to, record_type=record_type).records == len(records)
    assert stream.getvalue() == out.read_bytes()
    assert_directory_holds(tmp_path, {out.name})
    text = out.read_bytes().decode("utf-8")
    if to == "csv":
        # None is an empty cell, as in every CSV column.
        rows = list(csv.reader(io.StringIO(text, newline="")))
        assert rows == [
            ["id", "payload"],
            *([str(key), "" if value is None else base64_text(value)] for key, value in records),
        ]
        back = [[int(key), base64.b64decode(cell, validate=True)] for key, cell in rows[1:]]
        assert back == [[key, b"" if value is None else value] for key, value in records]
    else:
        assert text == "".join(
            json.dumps(
                {"id": key, "payload": None if value is None else base64_text(value)},
                separators=(",", ":"),
            )
            + "\n"
            for key, value in records
        )
        parsed = [json.loads(line) for line in text.splitlines()]
        back = [
            [row["id"], None if row["payload"] is None else base64.b64decode(row["payload"])]
            for row in parsed
        ]
        assert back == records


@pytest.mark.parametrize("record_type", [Blob, MaybeBlob], ids=["bytes", "bytes-or-None"])
@pytest.mark.parametrize("to", COLUMN_FORMATS)
def test_library_column_formats_hold_bytes_fields(
    tmp_path: Path, record_type: type[Any], to: OutputFormat
) -> None:
    records = [*BLOBS, [4, None]] if record_type is MaybeBlob else BLOBS
    data = b"".join(msgpack.packb(record) for record in records)
    out = tmp_path / f"out.{to}"
    assert convert(data, out, to, record_type=record_type).records == len(records)
    if to == "parquet":
        table = pq.read_table(out)
    else:
        with pa.ipc.open_file(pa.BufferReader(out.read_bytes())) as reader:
            table = reader.read_all()
    assert table.schema == arrow_schema(record_type)
    assert table.to_pylist() == [{"id": key, "payload": value} for key, value in records]


def test_library_other_record_types_to_text(tmp_path: Path) -> None:
    records: list[list[Any]] = [["a,b", 1.5, True, None], ["c", -2.0, False, "n\u00e9"]]
    data = b"".join(msgpack.packb(record) for record in records)
    stream = io.BytesIO()
    assert convert(data, stream, "csv", record_type=Named).records == 2
    rows = list(csv.reader(io.StringIO(stream.getvalue().decode(), newline="")))
    assert rows == [list(Named._fields), ["a,b", "1.5", "true", ""], ["c", "-2.0", "false", "né"]]
    stream = io.BytesIO()
    assert convert(data, stream, "jsonl", record_type=Named).records == 2
    lines = stream.getvalue().decode().splitlines()
    assert [json.loads(line) for line in lines] == [
        dict(zip(Named._fields, record, strict=True)) for record in records
    ]


# --- the pieces: output naming, CSV without text fields, the size for the bar --------------------


class FailingFlush(io.BytesIO):
    """Takes every write, then fails to flush (a network filesystem's delayed error)."""

    name = "remote.out"

    def flush(self) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))


@pytest.mark.parametrize("to", TEXT_FORMATS)
def test_a_flush_error_names_the_output(reference_bytes: bytes, to: OutputFormat) -> None:
    with pytest.raises(OSError, match=os.strerror(errno.EIO)) as info:
        convert(reference_bytes, FailingFlush(), to)
    assert info.value.filename == "remote.out"


@dataclasses.dataclass
class Numbers:
    id: int
    value: float


def test_csv_of_a_record_type_without_str_fields(tmp_path: Path) -> None:
    rows = [[index, index / 4] for index in range(5000)]
    data = b"".join(msgpack.packb(row) for row in rows)
    out = tmp_path / "numbers.csv"
    assert convert(data, out, "csv", record_type=Numbers).records == len(rows)
    lines = out.read_text().splitlines()
    assert lines[0] == "id,value"
    assert [[int(a), float(b)] for a, b in csv.reader(lines[1:])] == rows


def test_csv_rows_keep_a_carriage_return_inside_its_field(tmp_path: Path) -> None:
    """Rows with a CR inside a field and rows without, in one batch and across batches."""
    items = list(get_iter(9000))
    items[3].path = "a\rb"
    items[5000].filename = "\r"
    out = tmp_path / "cr.csv"
    convert(pack_items(items), out, "csv")
    with out.open(newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert [row["path"] for row in rows] == [item.path for item in items]
    assert [row["filename"] for row in rows] == [item.filename for item in items]


def read_end_of_a_pipe() -> io.BufferedReader:
    read, write = os.pipe()
    os.close(write)
    return os.fdopen(read, "rb")


@pytest.mark.parametrize(
    ("source", "size"),
    [
        (lambda path: str(path), REFERENCE_SIZE),
        (lambda path: path.open("rb"), REFERENCE_SIZE),
        (lambda path: io.BytesIO(b"xy"), None),
        (lambda path: "/no/such/file", None),
        (lambda path: read_end_of_a_pipe(), None),
        (lambda path: b"bytes", None),
    ],
    ids=["path", "file", "BytesIO", "missing", "pipe", "bytes"],
)
def test_the_bar_knows_the_size_of_files_only(
    reference_path: Path, source: Any, size: int | None
) -> None:
    from msgpack_reader_py.cli._common import size_of as _size

    opened = source(reference_path)
    try:
        assert _size(opened) == size
    finally:
        if hasattr(opened, "close"):
            opened.close()


@pytest.mark.parametrize("to", ["parquet", "arrow"])
def test_a_batch_the_columnar_writer_refuses_is_raised_to_the_caller(to: OutputFormat) -> None:
    # Batches are written on a thread of their own: what fails there is raised here, at the
    # next batch or when the writing ends, and the batches after it are not written.
    schema = pa.schema([pa.field("a", pa.int64())])
    wrong = pa.RecordBatch.from_pydict({"b": pa.array(["x"])})
    good = pa.RecordBatch.from_pydict({"a": pa.array([1])}, schema=schema)
    out = io.BytesIO()
    with (  # noqa: PT012 - the raise may come at any batch after the wrong one
        pytest.raises((pa.ArrowInvalid, ValueError)),
        columns_out(out, to, schema) as write,
    ):
        write(good)
        write(wrong)
        for _ in range(10):
            write(good)


class _Trickle(io.RawIOBase):
    """A raw output that takes at most 1000 bytes a call, as a pipe or a socket may."""

    def __init__(self) -> None:
        super().__init__()
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        taken = bytes(data[:1000])
        self.data += taken
        return len(taken)


@pytest.mark.parametrize("to", ["parquet", "arrow"])
def test_a_raw_output_that_takes_part_of_each_write_gets_every_byte(
    reference_bytes: bytes, reference_items: list[Item], to: OutputFormat
) -> None:
    out = _Trickle()
    convert(reference_bytes, out, to)
    table = (
        pq.read_table(pa.BufferReader(bytes(out.data)))
        if to == "parquet"
        else pyarrow.ipc.open_file(pa.BufferReader(bytes(out.data))).read_all()
    )
    assert table.to_pylist() == [dataclasses.asdict(item) for item in reference_items]
