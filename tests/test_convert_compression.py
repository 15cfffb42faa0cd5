"""convert's output options: the Parquet and Arrow codec, and Parquet row groups of a fixed
number of records, the same bytes with any --jobs."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py._arrow.reader import arrow_schema, read_table
from msgpack_reader_py._output.columnar import columns_out
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py._output.formats import CODECS, DEFAULT_CODEC, Codec, OutputFormat
from msgpack_reader_py._reference.generator import get_iter, pack_items
from msgpack_reader_py.cli import main

from .helpers import error_line

DATA = pack_items(get_iter(2000, seed=5))
TABLE = read_table(DATA)
ITEM = ["--type", "item"]
# What pyarrow calls each codec in a Parquet file's metadata.
PARQUET_NAMES = {
    "zstd": "ZSTD",
    "lz4": "LZ4",
    "snappy": "SNAPPY",
    "gzip": "GZIP",
    "none": "UNCOMPRESSED",
}


@pytest.fixture
def items_path(tmp_path: Path) -> Path:
    path = tmp_path / "items.msgpack"
    path.write_bytes(DATA)
    return path


def codecs(path: Path) -> set[str]:
    """The codec of every column chunk of every row group of a Parquet file."""
    metadata = pq.ParquetFile(path).metadata
    return {
        metadata.row_group(group).column(column).compression
        for group in range(metadata.num_row_groups)
        for column in range(metadata.num_columns)
    }


def row_groups(source: Path | bytes) -> list[int]:
    file = pq.ParquetFile(io.BytesIO(source) if isinstance(source, bytes) else source)
    return [file.metadata.row_group(i).num_rows for i in range(file.metadata.num_row_groups)]


def test_the_codecs_are_those_the_issue_asks_for_and_the_defaults_are_measured_ones() -> None:
    assert {"zstd", "snappy", "gzip", "none"} <= set(CODECS) == set(PARQUET_NAMES)
    assert DEFAULT_CODEC == {"parquet": "zstd", "arrow": "none"}


@pytest.mark.parametrize("codec", CODECS)
def test_each_parquet_codec_reads_back_the_same_table(tmp_path: Path, codec: Codec) -> None:
    out = tmp_path / f"items.{codec}.parquet"
    assert convert(DATA, out, "parquet", compression=codec).records == 2000
    assert pq.read_table(out).equals(TABLE)
    assert codecs(out) == {PARQUET_NAMES[codec]}


def test_parquet_is_zstd_unless_asked_and_smaller_than_snappy(tmp_path: Path) -> None:
    default, snappy = tmp_path / "default.parquet", tmp_path / "snappy.parquet"
    convert(DATA, default, "parquet")
    convert(DATA, snappy, "parquet", compression="snappy")
    assert codecs(default) == {"ZSTD"}
    assert default.stat().st_size < snappy.stat().st_size
    assert row_groups(default) == [2000]  # a row group per batch, as before


@pytest.mark.parametrize("codec", ["zstd", "lz4", "none"])
def test_each_arrow_codec_reads_back_the_same_table(tmp_path: Path, codec: Codec) -> None:
    out = tmp_path / f"items.{codec}.arrow"
    convert(DATA, out, "arrow", compression=codec)
    with pa.ipc.open_file(str(out)) as reader:
        assert reader.read_all().equals(TABLE)
    plain = tmp_path / "plain.arrow"
    convert(DATA, plain, "arrow")
    if codec == "none":
        assert out.read_bytes() == plain.read_bytes()  # uncompressed is Arrow's default
    else:
        assert out.stat().st_size < plain.stat().st_size


@pytest.mark.parametrize(
    ("to", "keywords", "message"),
    [
        ("parquet", {"compression": "brotli"}, "compression must be one of zstd, lz4, snappy, "),
        ("parquet", {"compression": "ZSTD"}, "compression must be one of "),
        ("arrow", {"compression": "snappy"}, "arrow compresses with zstd, lz4, none only, not "),
        ("arrow", {"compression": "gzip"}, "arrow compresses with zstd, lz4, none only, not "),
        ("csv", {"compression": "zstd"}, "compression applies to parquet and arrow, not csv"),
        ("jsonl", {"compression": "none"}, "compression applies to parquet and arrow, not "),
        ("parquet", {"row_group_size": 0}, "row_group_size must be a positive int, got 0"),
        ("parquet", {"row_group_size": -5}, "row_group_size must be a positive int, got -5"),
        ("parquet", {"row_group_size": True}, "row_group_size must be a positive int, got True"),
        ("parquet", {"row_group_size": 10.0}, "row_group_size must be a positive int, got 10.0"),
        ("arrow", {"row_group_size": 10}, "row_group_size applies to parquet only, not arrow"),
        ("csv", {"row_group_size": 10}, "row_group_size applies to parquet only, not csv"),
    ],
)
def test_bad_output_options_are_refused_at_the_call(
    tmp_path: Path, to: OutputFormat, keywords: dict[str, Any], message: str
) -> None:
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        convert(DATA, out, to, **keywords)
    assert not out.exists()


def test_row_groups_hold_exactly_the_records_asked_for(tmp_path: Path) -> None:
    out = tmp_path / "items.parquet"
    convert(DATA, out, "parquet", row_group_size=300)
    assert row_groups(out) == [300] * 6 + [200]
    assert pq.read_table(out).equals(TABLE)
    convert(DATA, out, "parquet", row_group_size=500)
    assert row_groups(out) == [500] * 4
    convert(DATA, out, "parquet", row_group_size=1_000_000)
    assert row_groups(out) == [2000]
    convert(DATA, out, "parquet", row_group_size=300, limit=650)
    assert row_groups(out) == [300, 300, 50]


def test_a_stream_gets_the_records_before_an_error_in_a_last_short_row_group() -> None:
    bad = DATA + b"\xc1"  # a byte that is never MessagePack
    sink = io.BytesIO()
    with pytest.raises(Exception, match="record 2000"):
        convert(bad, sink, "parquet", row_group_size=300)
    assert row_groups(sink.getvalue()) == [300] * 6 + [200]


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(st.integers(min_value=0, max_value=70), max_size=12),
    size=st.integers(min_value=1, max_value=100),
)
def test_row_groups_are_size_records_each_then_the_rest(batches: list[int], size: int) -> None:
    """However the batches are cut, the row groups are [size] * k + [rest]."""
    schema = arrow_schema()
    sink = io.BytesIO()
    at = 0
    with columns_out(sink, "parquet", schema, row_group_size=size) as write:
        for rows in batches:
            cut = TABLE.slice(at, rows).to_batches()
            for batch in cut or [pa.RecordBatch.from_pylist([], schema=schema)]:
                write(batch)
            at += rows
    whole, rest = divmod(at, size)
    assert row_groups(sink.getvalue()) == [size] * whole + ([rest] if rest else [])
    assert pq.read_table(io.BytesIO(sink.getvalue())).equals(TABLE.slice(0, at))


@pytest.mark.parametrize(
    "options",
    [
        ["--compression", "gzip", "--row-group-size", "300"],
        ["--compression", "none", "--row-group-size", "7"],
        ["--row-group-size", "1024"],
    ],
)
def test_convert_with_jobs_writes_the_same_bytes_with_any_output_options(
    capsys: pytest.CaptureFixture[str],
    items_path: Path,
    tmp_path: Path,
    splits: list[int],
    options: list[str],
) -> None:
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"items-{jobs}.parquet"
        argv = ["convert", *ITEM, "--to", "parquet", *options, "-o", str(out), "-j", jobs]
        assert main([*argv, str(items_path)]) == 0
        outputs.append(out)
    assert outputs[0].read_bytes() == outputs[1].read_bytes()
    assert capsys.readouterr().err == ""
    assert len(splits) == 1
    assert splits[0] > 2  # the file was read in ranges
    size = int(options[options.index("--row-group-size") + 1])
    whole, rest = divmod(2000, size)
    assert row_groups(outputs[1]) == [size] * whole + ([rest] if rest else [])
    codec = options[1] if options[0] == "--compression" else DEFAULT_CODEC["parquet"]
    assert codecs(outputs[1]) == {PARQUET_NAMES[codec]}
    assert pq.read_table(outputs[1]).equals(TABLE)


def test_convert_arrow_with_a_codec(
    capsys: pytest.CaptureFixture[str], items_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "items.arrow"
    argv = ["convert", *ITEM, "--to", "arrow", "--compression", "zstd", "-o", str(out)]
    assert main([*argv, str(items_path)]) == 0
    assert capsys.readouterr().out == f"Wrote 2000 records to {out} (arrow)\n"
    with pa.ipc.open_file(str(out)) as reader:
        assert reader.read_all().equals(TABLE)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--to", "csv", "--row-group-size", "10"],
            "error: --row-group-size applies to --to parquet only, not --to csv",
        ),
        (
            ["--to", "arrow", "--row-group-size", "10"],
            "error: --row-group-size applies to --to parquet only, not --to arrow",
        ),
        (
            ["--to", "jsonl", "--compression", "zstd"],
            "error: --compression applies to --to parquet and arrow, not --to jsonl",
        ),
        (
            ["--to", "arrow", "--compression", "snappy"],
            "error: --compression snappy: arrow compresses with zstd, lz4, none only, not snappy",
        ),
    ],
)
def test_an_output_option_that_does_not_apply_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
    items_path: Path,
    tmp_path: Path,
    options: list[str],
    message: str,
) -> None:
    out = tmp_path / "out"
    assert main(["convert", *ITEM, *options, "-o", str(out), str(items_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert error_line(captured.err) == message
    assert not out.exists()


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--row-group-size", "0"], "expected a positive integer, got '0'"),
        (["--row-group-size", "-3"], "expected a non-negative integer, got '-3'"),
        (["--row-group-size", "many"], "expected an integer, got 'many'"),
        (["--compression", "brotli"], "invalid choice: 'brotli'"),
    ],
)
def test_bad_output_option_values_are_usage_errors(
    capsys: pytest.CaptureFixture[str], items_path: Path, options: list[str], says: str
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["convert", *ITEM, "--to", "parquet", *options, "-o", "-", str(items_path)])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line = error_line(captured.err)
    assert says in line
    assert ("--row-group-size" if "--row-group-size" in options else "--compression") in line


def test_help_names_the_defaults_and_the_formats(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--compression {zstd,lz4,snappy,gzip,none}" in text
    assert "for parquet and arrow only: parquet takes any (default: zstd," in text
    assert "arrow takes zstd, lz4 or none (default: none," in text
    assert "--row-group-size N parquet only: N records in each row group but the last" in text


# --- which columns are dictionary-encoded ------------------------------------------------------


def encodings(data: bytes) -> dict[str, set[str]]:
    """Each column's encodings, over every row group of a Parquet file."""
    metadata = pq.ParquetFile(pa.BufferReader(data)).metadata
    found: dict[str, set[str]] = {}
    for group in range(metadata.num_row_groups):
        for column in range(metadata.num_columns):
            chunk = metadata.row_group(group).column(column)
            found.setdefault(chunk.path_in_schema, set()).update(chunk.encodings)
    return found


@pytest.mark.parametrize("records", [10, 70_000])
def test_repeated_values_get_a_dictionary_and_varied_ones_do_not(records: int) -> None:
    import msgpack
    import msgspec

    class Event(msgspec.Struct):
        id: int
        level: str
        inner: dict[str, str]
        ratio: float
        note: str | None

    data = b"".join(
        msgpack.packb(
            {
                "id": i,
                "level": ("info", "warn")[i % 2],
                "inner": {"k": str(i)},
                "ratio": math.nan if i % 5 else i / 5,  # NaN, not equal to itself: one value
                "note": None if i % 5 else str(i),  # None: one value
            }
        )
        for i in range(records)
    )
    out = io.BytesIO()
    convert(data, out, "parquet", record_type=Event)
    found = encodings(out.getvalue())
    assert "RLE_DICTIONARY" not in found["id"]  # every value new
    assert "RLE_DICTIONARY" in found["level"]  # two values
    assert "RLE_DICTIONARY" in found["ratio"]  # a fifth of them new, the rest NaN
    assert "RLE_DICTIONARY" in found["note"]  # a fifth of them new, the rest None
    assert "RLE_DICTIONARY" in found["inner.key_value.key"]  # nested: as pyarrow does
    assert pq.read_table(pa.BufferReader(out.getvalue())).num_rows == records


def test_a_file_of_no_records_has_the_schema() -> None:
    out = io.BytesIO()
    assert convert(b"", out, "parquet").records == 0
    assert pq.read_table(pa.BufferReader(out.getvalue())).schema == arrow_schema()
