"""``convert`` over several sources and in skip mode."""

from __future__ import annotations

import io
from pathlib import Path

import msgpack
import pytest

from msgpack_reader_py import Item, RecordError, TruncatedStreamError, get_iter, pack_items
from msgpack_reader_py._output.convert import Conversion, convert
from msgpack_reader_py._output.formats import FORMATS, OutputFormat
from msgpack_reader_py.cli import main

from .helpers import ITEM, read_back

FIRST = list(get_iter(30))
SECOND = list(get_iter(20, seed=7))
NOT_AN_ITEM = msgpack.packb("not an item")
# An int Arrow cannot hold in an int64 column, though it passes the field's `int` check.
HUGE = msgpack.packb([2**64 - 1, 1, 2, 3, 4, 5.0, "f", "p"])


def items_back(data: bytes, to: OutputFormat) -> list[Item]:
    """The records of converted output, read back independently."""
    return [Item(**row) for row in read_back(data, to)]


@pytest.mark.parametrize("to", FORMATS)
def test_several_sources_become_one_output(tmp_path: Path, to: OutputFormat) -> None:
    second = tmp_path / "second.msgpack"
    second.write_bytes(pack_items(SECOND))
    calls: list[tuple[int, int]] = []
    out = io.BytesIO()
    result = convert(
        [pack_items(FIRST), second],
        out,
        to,
        progress=lambda records, size: calls.append((records, size)),
    )
    assert result == Conversion(len(FIRST) + len(SECOND))
    assert items_back(out.getvalue(), to) == FIRST + SECOND
    total = len(pack_items(FIRST)) + second.stat().st_size
    assert calls[-1] == (len(FIRST) + len(SECOND), total)  # cumulative over the sources


def test_a_tuple_of_sources_and_bytes_is_one_source() -> None:
    out = io.BytesIO()
    assert convert((pack_items(FIRST),), out, "jsonl").records == len(FIRST)
    assert convert(pack_items(FIRST), io.BytesIO(), "jsonl").records == len(FIRST)


@pytest.mark.parametrize("to", FORMATS)
def test_an_error_in_a_later_source_names_it_after_the_earlier_records(
    tmp_path: Path, to: OutputFormat
) -> None:
    broken = tmp_path / "broken.msgpack"
    broken.write_bytes(pack_items(SECOND)[:-2])
    out = io.BytesIO()
    with pytest.raises(TruncatedStreamError) as info:
        convert([pack_items(FIRST), broken], out, to)
    assert info.value.index == len(SECOND) - 1
    if to in ("csv", "jsonl"):  # written as they come: the first source and the good records
        assert items_back(out.getvalue(), to) == FIRST + SECOND[:-1]


def test_an_error_in_a_later_source_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    with pytest.raises(RecordError):
        convert([pack_items(FIRST), pack_items(SECOND) + NOT_AN_ITEM], out, "parquet")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("to", FORMATS)
def test_skip_mode_passes_over_bad_records_and_counts_them(
    tmp_path: Path, to: OutputFormat
) -> None:
    data = pack_items(FIRST[:5]) + NOT_AN_ITEM + pack_items(FIRST[5:]) + NOT_AN_ITEM
    out = tmp_path / f"out.{to}"
    result = convert(data, out, to, on_error="skip")
    assert result.records == len(FIRST)
    assert result.skipped == 2
    assert [(e.index, e.offset) for e in result.errors] == [
        (5, len(pack_items(FIRST[:5]))),
        (len(FIRST) + 1, len(data) - len(NOT_AN_ITEM)),
    ]
    assert items_back(out.read_bytes(), to) == FIRST


@pytest.mark.parametrize("to", ["parquet", "arrow"])
def test_skip_mode_passes_over_what_arrow_refuses(to: OutputFormat) -> None:
    for data, where in [
        (pack_items(FIRST[:3]) + HUGE + pack_items(FIRST[3:]), 3),  # a batch without bad shapes
        (pack_items(FIRST[:3]) + HUGE + NOT_AN_ITEM + pack_items(FIRST[3:]), 3),  # and with
    ]:
        out = io.BytesIO()
        result = convert(data, out, to, on_error="skip")
        assert result.records == len(FIRST)
        assert result.errors[0].index == where
        assert result.errors[0].offset == len(pack_items(FIRST[:3]))
        assert "int64" in result.errors[0].reason
        assert items_back(out.getvalue(), to) == FIRST


def test_without_skip_mode_what_arrow_refuses_is_an_error() -> None:
    with pytest.raises(RecordError) as info:
        convert(pack_items(FIRST[:3]) + HUGE, io.BytesIO(), "parquet")
    assert (info.value.index, info.value.offset) == (3, len(pack_items(FIRST[:3])))


def test_skip_mode_keeps_the_first_hundred_errors_over_every_source() -> None:
    data = NOT_AN_ITEM * 70 + pack_items(FIRST[:1])
    result = convert([data, data], io.BytesIO(), "jsonl", on_error="skip")
    assert result.records == 2
    assert result.skipped == 140
    assert len(result.errors) == 100


def test_bad_on_error_is_refused_at_the_call() -> None:
    with pytest.raises(ValueError, match="on_error"):
        convert(b"", io.BytesIO(), "csv", on_error="ignore")  # type: ignore[arg-type]


# --- the command line ----------------------------------------------------------------------------


def test_convert_several_sources_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "a.msgpack", tmp_path / "b.msgpack"
    first.write_bytes(pack_items(FIRST))
    second.write_bytes(pack_items(SECOND))
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(first), str(second), *ITEM, "--to", "jsonl", "-o", str(out)]) == 0
    assert capsys.readouterr() == (
        f"Wrote {len(FIRST) + len(SECOND)} records to {out} (jsonl)\n",
        "",
    )
    assert items_back(out.read_bytes(), "jsonl") == FIRST + SECOND


@pytest.mark.parametrize("to", FORMATS)
def test_convert_skip_invalid_that_finds_no_record_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], to: OutputFormat
) -> None:
    text = tmp_path / "notes.txt"
    text.write_bytes(b"no records here\n")
    out = tmp_path / f"out.{to}"
    out.write_bytes(b"previous")
    assert main(["convert", str(text), *ITEM, "--to", to, "-o", str(out), "--skip-invalid"]) == 1
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert err.count("\n") == 1
    assert err.startswith(f"error: {text}: no record of type Item found: skipped 16 invalid ")
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", f"out.{to}"]


def test_convert_skip_invalid_with_good_records_reports_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "mixed.msgpack"
    source.write_bytes(NOT_AN_ITEM + pack_items(FIRST))
    out = tmp_path / "out.csv"
    assert (
        main(["convert", str(source), *ITEM, "--to", "csv", "-o", str(out), "--skip-invalid"]) == 0
    )
    stdout, err = capsys.readouterr()
    assert stdout == f"Wrote {len(FIRST)} records to {out} (csv)\n"
    assert err.startswith(f"{source}: skipped 1 invalid record; the first: record 0 at byte 0: ")
    assert items_back(out.read_bytes(), "csv") == FIRST
