"""The command line on one file in pieces: count, head, tail, dump --start, and --jobs for
read, dump, convert and count, whose results are those of one process."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from msgpack_reader_py._reference.generator import get_iter, pack_items
from msgpack_reader_py.cli import main
from tests.helpers import error_line, fake_stdin, item_values, packed, zstd_frames

ITEMS = list(get_iter(2000, seed=5))
DATA = pack_items(ITEMS)
ITEM = ["--type", "item"]


# Every test here reads small files split in ranges of a few KiB (conftest's splits).
pytestmark = pytest.mark.usefixtures("splits")


@pytest.fixture
def items_path(tmp_path: Path) -> Path:
    path = tmp_path / "items.msgpack"
    path.write_bytes(DATA)
    return path


def ids(out: str) -> list[int]:
    return [json.loads(line)["id"] for line in out.splitlines()]


def test_count(capsys: pytest.CaptureFixture[str], items_path: Path, splits: list[int]) -> None:
    assert main(["count", str(items_path)]) == 0
    assert capsys.readouterr() == ("2000\n", "")
    assert main(["count", *ITEM, "-j", "2", str(items_path), str(items_path)]) == 0
    assert capsys.readouterr() == (
        f"{items_path}: 2000\n{items_path}: 2000\ntotal: 4000\n",
        "",
    )
    assert len(splits) == 2  # each file counted in ranges, on two processes
    assert min(splits) > 2
    assert main(["count", "--json", str(items_path)]) == 0
    assert json.loads(capsys.readouterr().out) == {"source": str(items_path), "records": 2000}


def test_count_of_broken_data_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, splits: list[int]
) -> None:
    path = tmp_path / "cut.msgpack"
    path.write_bytes(DATA[:-3])
    assert main(["count", "-j", "2", *ITEM, str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err).startswith(f"error: {path}: record 1999 at byte ")
    assert splits


def test_jobs_that_cannot_split_say_so(
    capsys: pytest.CaptureFixture[str], items_path: Path, tmp_path: Path, splits: list[int]
) -> None:
    assert main(["count", "-j", "2", str(items_path)]) == 0
    out, err = capsys.readouterr()
    assert out == "2000\n"
    assert err == (
        f"note: {items_path}: read on one process: untyped records cannot be told apart from "
        "the middle of a file\n"
    )
    squeezed = tmp_path / "items.msgpack.gz"
    squeezed.write_bytes(gzip.compress(DATA))
    assert main(["read", "-j", "0", str(squeezed)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Read 2000 messages, sum_of_ids is 1999000 in ")
    assert "a gzip file cannot be entered in the middle" in err
    one_frame = tmp_path / "items.msgpack.zst"
    one_frame.write_bytes(zstd_frames(DATA, []))
    assert main(["count", *ITEM, "-j", "2", str(one_frame)]) == 0
    assert capsys.readouterr() == (
        "2000\n",
        f"note: {one_frame}: read on one process: a zstd file is split only at its frames, "
        "and it holds one\n",
    )
    assert splits == []


@pytest.mark.parametrize("command", ["read", "count", "convert"])
def test_jobs_split_a_zstd_file_of_frames_where_frames_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, splits: list[int]
) -> None:
    path = tmp_path / "items.msgpack.zst"
    path.write_bytes(zstd_frames(DATA, range(3000, len(DATA), 3000)))
    outputs: list[Any] = []
    for jobs in ("1", "2"):
        out = tmp_path / f"items-{jobs}.parquet"
        if command == "convert":
            arguments = ["convert", *ITEM, "--to", "parquet", "-o", str(out), str(path)]
        else:
            arguments = [command, "--json", *ITEM, str(path)]
        assert main([*arguments, "-j", jobs]) == 0
        got, err = capsys.readouterr()
        assert err == ""
        if command == "convert":
            outputs.append(out.read_bytes())
            continue
        summary = json.loads(got)
        outputs.append(summary)
        if command == "read":
            assert summary.pop("seconds") >= 0
            assert summary["bytes"] == len(DATA)  # counted decompressed
    assert outputs[0] == outputs[1]
    assert len(splits) == 1
    assert splits[0] > 2


def test_read_with_jobs_is_the_same_summary(
    capsys: pytest.CaptureFixture[str], items_path: Path, splits: list[int]
) -> None:
    assert main(["read", "--json", "-j", "2", str(items_path)]) == 0
    split = json.loads(capsys.readouterr().out)
    assert main(["read", "--json", str(items_path)]) == 0
    one = json.loads(capsys.readouterr().out)
    for summary in (split, one):
        del summary["seconds"]
    assert split == one
    assert one["records"] == 2000
    assert one["bytes"] == len(DATA)
    assert len(splits) == 1


def test_read_with_jobs_fails_as_one_process_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, splits: list[int]
) -> None:
    middle = len(pack_items(ITEMS[:1500]))
    path = tmp_path / "bad.msgpack"
    path.write_bytes(DATA[:middle] + packed(item_values(line="x")) + DATA[middle:])
    lines = []
    for jobs in ("1", "2"):
        assert main(["read", "-j", jobs, str(path)]) == 1
        _out, err = capsys.readouterr()
        lines.append(error_line(err))
    assert lines[0] == lines[1]
    assert f"record 1500 at byte {middle}" in lines[0]
    assert len(splits) == 1  # the error came from a range, not from the whole file


@pytest.mark.parametrize("to", ["parquet", "arrow", "csv", "jsonl"])
def test_convert_with_jobs_writes_the_same_bytes(
    capsys: pytest.CaptureFixture[str], items_path: Path, tmp_path: Path, to: str, splits: list[int]
) -> None:
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"items-{jobs}.{to}"
        assert (
            main(["convert", *ITEM, "--to", to, "-o", str(out), "-j", jobs, str(items_path)]) == 0
        )
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert capsys.readouterr().err == ""
    assert len(splits) == 1
    assert splits[0] > 2


@pytest.mark.parametrize("form", ["jsonl", "csv"])
def test_dump_with_jobs_writes_the_same_bytes(
    capsys: pytest.CaptureFixture[str], items_path: Path, form: str, splits: list[int]
) -> None:
    outputs = []
    for jobs in ("1", "2"):
        assert main(["dump", *ITEM, "--format", form, "-j", jobs, str(items_path)]) == 0
        out, err = capsys.readouterr()
        assert err == ""
        outputs.append(out)
    assert outputs[0] == outputs[1]
    assert len(outputs[0].splitlines()) >= 2000
    assert len(splits) == 1
    assert splits[0] > 2


@pytest.mark.parametrize(
    ("options", "why"),
    [
        (["--format", "jsonl", "--limit", "3"], "--limit and --start"),
        (["--format", "jsonl", "--start", "1997"], "--limit and --start"),
        (["--format", "table", "--limit", "3"], "a table's columns"),
    ],
)
def test_dump_with_jobs_that_reads_on_one_process_says_why(
    capsys: pytest.CaptureFixture[str],
    items_path: Path,
    splits: list[int],
    options: list[str],
    why: str,
) -> None:
    assert main(["dump", *ITEM, *options, "-j", "2", str(items_path)]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 3 + 2 * ("table" in options)  # a table's two header lines
    assert err == f"note: read on one process: {why} need every record before\n"
    assert splits == []


def test_head_tail_and_skip(capsys: pytest.CaptureFixture[str], items_path: Path) -> None:
    assert main(["head", "-n", "3", *ITEM, str(items_path)]) == 0
    assert ids(capsys.readouterr().out) == [0, 1, 2]
    assert main(["tail", "-n", "3", *ITEM, str(items_path), str(items_path)]) == 0
    assert ids(capsys.readouterr().out) == [1997, 1998, 1999]
    assert main(["tail", "-n", "5000", *ITEM, str(items_path)]) == 0
    assert len(ids(capsys.readouterr().out)) == 2000
    assert main(["dump", "--start", "1998", "--limit", "1", *ITEM, str(items_path)]) == 0
    assert ids(capsys.readouterr().out) == [1998]
    assert main(["tail", str(items_path)]) == 0  # untyped: each record as it is
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 10
    assert json.loads(lines[-1])[0] == 1999


def test_tail_of_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fake_stdin(monkeypatch, io.BytesIO(DATA))
    assert main(["tail", "-n", "2", *ITEM, "-"]) == 0
    assert ids(capsys.readouterr().out) == [1998, 1999]


def test_tail_of_broken_data_fails_as_a_read_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cut.msgpack"
    path.write_bytes(DATA[:-3])
    assert main(["tail", "-n", "2", *ITEM, str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "record 1999 at byte" in error_line(err)


def test_count_and_tail_refuse_what_looks_like_another_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # JSON Lines larger than one read: a tail that begins near the end must still refuse it.
    path = tmp_path / "records.jsonl"
    text = "".join(json.dumps({"id": i}) + "\n" for i in range(20_000))
    path.write_text(text)
    for command in (["count"], ["tail", "-n", "2"], ["count", *ITEM, "-j", "2"]):
        assert main([*command, str(path)]) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert error_line(err) == (
            f"error: {path}: record 0 at byte 0: this looks like JSON text, not MessagePack; "
            "read untyped, its bytes would pass for small integers and other values, so it is "
            "refused (--force reads it anyway)"
        )
    assert main(["count", "--force", str(path)]) == 0
    assert capsys.readouterr().out == f"{len(text)}\n"
    assert main(["tail", "-n", "2", "--force", str(path)]) == 0
    assert capsys.readouterr().out == "125\n10\n"  # the last two bytes, "}" and a newline
