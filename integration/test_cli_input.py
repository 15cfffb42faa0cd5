"""The command line in real processes on compressed and foreign input, from files and pipes."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest

from integration.test_convert_subprocess import one_error_line, run
from msgpack_reader_py import get_iter, pack_items

ITEMS = list(get_iter(2000))
DATA = pack_items(ITEMS)
SUMMARY = f"Read {len(ITEMS)} messages, sum_of_ids is {sum(i.id for i in ITEMS)} in "


def test_gzip_through_a_real_pipe_on_stdin() -> None:
    result = run("read", "-", data=gzip.compress(DATA))
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().startswith(SUMMARY)


@pytest.mark.parametrize(
    ("suffix", "compress"), [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)]
)
def test_every_command_reads_compressed_files(
    tmp_path: Path, suffix: str, compress: Callable[[bytes], bytes]
) -> None:
    path = tmp_path / f"data.msgpack{suffix}"
    path.write_bytes(compress(DATA))
    read = run("read", str(path))
    assert read.stdout.decode().startswith(SUMMARY), read.stderr
    dump = run("dump", str(path), "--type", "item", "--limit", "3")
    assert dump.returncode == 0, dump.stderr
    assert [json.loads(line)["id"] for line in dump.stdout.decode().splitlines()] == [0, 1, 2]
    out = tmp_path / "out.jsonl"
    convert = run("convert", str(path), "--to", "jsonl", "-o", str(out))
    assert convert.returncode == 0, convert.stderr
    assert len(out.read_text().splitlines()) == len(ITEMS)


def test_a_cut_off_gzip_file_is_one_located_error_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.msgpack.gz"
    path.write_bytes(gzip.compress(DATA)[:-40])
    result = run("read", str(path))
    assert result.returncode == 1
    line = one_error_line(result.stderr)
    assert line.startswith(f"error: {path}: record ")
    assert "the gzip stream ends early" in line


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        (b'{"id": 0, "value": 1.5}\n{"id": 1, "value": 2.5}\n', "this looks like JSON text"),
        (b"id,value\n0,1.5\n", "this looks like text"),
        (b"PAR1\x00\x00\x00\x00", "this looks like a Parquet file"),
    ],
)
def test_foreign_input_is_named_in_one_error_line(
    tmp_path: Path, content: bytes, phrase: str
) -> None:
    path = tmp_path / "input.dat"
    path.write_bytes(content)
    for command in (["read"], ["dump"], ["convert", "--to", "csv", "-o", str(tmp_path / "o.csv")]):
        result = run(command[0], str(path), "--type", "item", *command[1:])
        assert result.returncode == 1, command
        line = one_error_line(result.stderr)
        assert line.startswith(f"error: {path}: record 0 at byte 0: "), line
        assert f"{phrase}, not MessagePack" in line, line


def test_skip_invalid_on_text_is_an_error_not_success(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"just some notes\n")
    result = run("read", str(path), "--skip-invalid")
    assert result.returncode == 1
    assert result.stdout == b""
    line = one_error_line(result.stderr)
    assert line.startswith(f"error: {path}: no record of type Item found: skipped 16 invalid ")
    assert "this looks like text, not MessagePack" in line
