"""The ``convert`` command, run in-process: every format from a path or stdin to a path or stdout,
empty input, atomic replacement of the output, and usage errors.

Every output is read back with an independent reader (pyarrow, ``csv``, ``json``) and compared
with the reference items.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from msgpack_reader_py import Item, get_iter, pack_items
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py._output.formats import OutputFormat
from msgpack_reader_py.cli import main

from .helpers import (
    EXIT_USAGE,
    FIELD_NAMES,
    FORMATS,
    ITEM,
    MAGIC,
    PREVIOUS,
    TEXT_FORMATS,
    as_rows,
    assert_directory_holds,
    data_lines,
    error_line,
    fake_stdin,
    read_back,
    summary,
    temporaries,
)
from .reference import REFERENCE_MESSAGES

pytestmark = pytest.mark.usefixtures("short_bar_delay")


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    value: int = request.param
    previous = os.umask(value)
    try:
        yield value
    finally:
        os.umask(previous)


# --- the command: every format, from a path or stdin, to a path or stdout ---------------------


@pytest.mark.parametrize("to", FORMATS)
@pytest.mark.parametrize("source", ["path", "stdin"])
def test_convert_to_a_file(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    reference_items: list[Item],
    source: str,
    to: OutputFormat,
) -> None:
    if source == "path":
        argument = str(tmp_path / "in.msgpack")
        Path(argument).write_bytes(reference_bytes)
    else:
        argument = "-"
        fake_stdin(monkeypatch, io.BytesIO(reference_bytes))
    out = tmp_path / f"out.{to}"
    assert main(["convert", argument, *ITEM, "--to", to, "-o", str(out)]) == 0
    assert capsys.readouterr() == (summary(REFERENCE_MESSAGES, out, to), "")
    assert read_back(out.read_bytes(), to) == as_rows(reference_items)
    assert temporaries(out) == []
    assert_directory_holds(tmp_path, {out.name} | ({"in.msgpack"} if source == "path" else set()))


@pytest.mark.parametrize("to", FORMATS)
@pytest.mark.parametrize("source", ["path", "stdin"])
def test_convert_to_stdout(
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
    reference_path: Path,
    reference_bytes: bytes,
    reference_items: list[Item],
    source: str,
    to: OutputFormat,
) -> None:
    argument = str(reference_path)
    if source == "stdin":
        argument = "-"
        fake_stdin(monkeypatch, io.BytesIO(reference_bytes))
    assert main(["convert", argument, *ITEM, "--to", to, "-o", "-"]) == 0
    out, err = capsysbinary.readouterr()
    assert err == b""
    # Only the data: read_back refuses anything before or after it (no summary line).
    assert read_back(out, to) == as_rows(reference_items)
    if to in TEXT_FORMATS:
        assert data_lines(out, to) == REFERENCE_MESSAGES
    assert_directory_holds(reference_path.parent, {reference_path.name})


def test_long_option_names(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    reference_items: list[Item],
) -> None:
    out = tmp_path / "out.jsonl"
    argv = ["convert", str(reference_path), *ITEM, "--to=jsonl", "--output", str(out)]
    assert main([*argv, "--progress", "never", "--max-record-size", "1000"]) == 0
    assert capsys.readouterr() == (summary(REFERENCE_MESSAGES, out, "jsonl"), "")
    assert read_back(out.read_bytes(), "jsonl") == as_rows(reference_items)


@pytest.mark.parametrize("to", FORMATS)
def test_awkward_strings_round_trip(
    capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path, to: OutputFormat
) -> None:
    # Separators, quotes, line breaks (both kinds), non-ASCII and empty strings must come back
    # exactly: a CSV field holding a carriage return has to be quoted like one holding "\n",
    # since every CSV reader ends a row at either.
    texts = [
        "a,b",
        'say "hi"',
        "two\nlines",
        "carriage\rreturn",
        "crlf\r\nend",
        "line\u2028separator\x85next",
        "é中🙂",
        "",
    ]
    items = [
        Item(index, 1, 2, 3, 4, 0.5 + index, text, texts[-1 - index])
        for index, text in enumerate(texts)
    ]
    source = tmp_path / "awkward.msgpack"
    source.write_bytes(pack_items(items))
    assert main(["convert", str(source), *ITEM, "--to", to, "-o", "-"]) == 0
    out, err = capsysbinary.readouterr()
    assert err == b""
    if to in MAGIC:
        assert read_back(out, to) == as_rows(items)
    else:
        # read_back's "no carriage return" check is for the reference data; parse directly.
        text = out.decode("utf-8")
        if to == "csv":
            rows = list(csv.reader(io.StringIO(text, newline="")))
            assert rows == [FIELD_NAMES] + [[str(v) for v in item.to_list()] for item in items]
        else:
            parsed = [json.loads(line) for line in text.split("\n")[:-1]]
            assert parsed == as_rows(items)


# --- empty input -------------------------------------------------------------------------------


@pytest.mark.parametrize("to", FORMATS)
def test_empty_input_gives_an_empty_output_with_the_schema(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, to: OutputFormat
) -> None:
    source = tmp_path / "empty.msgpack"
    source.write_bytes(b"")
    out = tmp_path / f"out.{to}"
    assert main(["convert", str(source), *ITEM, "--to", to, "-o", str(out)]) == 0
    assert capsys.readouterr() == (summary(0, out, to), "")
    data = out.read_bytes()
    assert read_back(data, to) == []
    if to == "csv":
        assert data.decode() == ",".join(FIELD_NAMES) + "\n"
    elif to == "jsonl":
        assert data == b""
    assert_directory_holds(tmp_path, {source.name, out.name})


@pytest.mark.parametrize("to", FORMATS)
def test_empty_stdin_to_stdout(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes], to: OutputFormat
) -> None:
    fake_stdin(monkeypatch, io.BytesIO(b""))
    assert main(["convert", "-", *ITEM, "--to", to, "-o", "-"]) == 0
    out, err = capsysbinary.readouterr()
    assert err == b""
    assert read_back(out, to) == []
    if to == "csv":
        assert out == (",".join(FIELD_NAMES) + "\n").encode()


# --- success: atomic replacement, permissions, the summary -------------------------------------


@pytest.mark.parametrize("to", FORMATS)
def test_an_existing_output_is_replaced_whole(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    reference_items: list[Item],
    to: OutputFormat,
) -> None:
    out = tmp_path / f"out.{to}"
    out.write_bytes(PREVIOUS)
    with out.open("rb") as old:
        old_inode = os.fstat(old.fileno()).st_ino
        assert main(["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]) == 0
        # Renamed over, not rewritten: the old file is intact for whoever still has it open.
        assert old.read() == PREVIOUS
    assert out.stat().st_ino != old_inode
    assert capsys.readouterr() == (summary(REFERENCE_MESSAGES, out, to), "")
    assert read_back(out.read_bytes(), to) == as_rows(reference_items)
    assert_directory_holds(tmp_path, {out.name})


@pytest.mark.parametrize("to", FORMATS)
def test_out_keeps_its_previous_contents_until_the_conversion_is_done(
    tmp_path: Path, reference_bytes: bytes, reference_items: list[Item], to: OutputFormat
) -> None:
    out = tmp_path / f"out.{to}"
    out.write_bytes(PREVIOUS)
    seen: list[tuple[bytes, int]] = []

    def progress(records: int, bytes_read: int) -> None:
        seen.append((out.read_bytes(), len(temporaries(out))))

    assert (
        convert(io.BytesIO(reference_bytes), out, to, progress=progress).records
        == REFERENCE_MESSAGES
    )
    assert seen
    assert seen == [(PREVIOUS, 1)] * len(seen)
    assert read_back(out.read_bytes(), to) == as_rows(reference_items)
    assert temporaries(out) == []


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002], indirect=True, ids=oct)
@pytest.mark.parametrize("previous", [False, True], ids=["new-out", "replaced-out"])
@pytest.mark.parametrize("to", ["parquet", "csv"])
def test_output_permissions_are_those_of_a_new_file(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    umask: int,
    previous: bool,
    to: str,
) -> None:
    out = tmp_path / f"out.{to}"
    if previous:
        out.write_bytes(PREVIOUS)
        out.chmod(0o600)
    plain = tmp_path / "plain"
    plain.open("x").close()  # what any program creating a file gets under this umask
    assert main(["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]) == 0
    capsys.readouterr()
    mode = stat.S_IMODE(out.stat().st_mode)
    assert mode == stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~umask, oct(mode)


# --- usage errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["convert", "IN", "-o", "OUT"], "--to"),
        (["convert", "IN", "--to", "xml", "-o", "OUT"], "xml"),
        (["convert", "IN", "--to", "PARQUET", "-o", "OUT"], "PARQUET"),
        (["convert", "IN", "--to", "csv"], "-o"),
        (["convert", "IN"], "--to"),
        (["convert", "--to", "csv", "-o", "OUT"], "SOURCE"),
        (["convert", "IN", "--to", "csv", "-o", "OUT", "--progress", "sometimes"], "--progress"),
        (["convert", "IN", "--to", "csv", "-o", "OUT", "--max-record-size", "0"], "--max-record"),
        (["convert", "IN", "--to", "csv", "-o", "OUT", "--skip-invalid=yes"], "--skip-invalid"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else value,
)
def test_usage_errors(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    argv: list[str],
    named: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("IN").write_bytes(reference_path.read_bytes())
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    line = error_line(err)
    assert named in line
    assert "--help" in line
    assert_directory_holds(tmp_path, {"IN"})


def test_help_describes_convert(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["convert", "--help"])
    assert info.value.code == 0
    out, err = capsys.readouterr()
    assert err == ""
    for word in ("--to", "parquet", "arrow", "csv", "jsonl", "--output", "--progress"):
        assert word in out


_STARTING_ARROW = """
import os
import sys
from msgpack_reader_py.__main__ import main as program
from msgpack_reader_py.cli import main

way = sys.argv.pop(1)
if way == "after-pyarrow":
    import pyarrow  # a user's module, say: numpy comes with it
status = main(sys.argv[1:]) if way == "called" else program()
started = [name in sys.modules for name in ("numpy", "pandas", "pyarrow.compute")]
blas_threads = os.environ.get("OPENBLAS_NUM_THREADS")
import pyarrow.lib

print(status, *started, blas_threads, pyarrow.lib.np is not None)
if way == "called":
    frame = pyarrow.table({"a": [1, 2]}).to_pandas()  # the caller's pyarrow is as it was
    print(list(frame["a"]))
"""


@pytest.mark.parametrize("way", ["as-the-program", "after-pyarrow", "called"])
@pytest.mark.parametrize("to", ["parquet", "arrow"])
def test_the_command_line_starts_arrow_without_what_it_does_not_use(
    tmp_path: Path, to: str, way: str
) -> None:
    """pyarrow imports numpy as it starts (0.06-0.1 s) and pandas with its first array
    (0.3-0.4 s) unless told they are absent; the program never hands it an object of
    theirs nor asks it for one, and ends with the command. Nor is pyarrow.compute imported,
    50-70 ms more. A program that calls main() with its own arguments keeps its pyarrow as
    it was, pandas and all. Where pyarrow came first (with a user's module), pandas is still
    spared. OpenBLAS, where numpy comes later (DuckDB imports it to run a query), is asked
    for one thread, not one per core."""
    import subprocess
    import sys

    source = tmp_path / "items.msgpack"
    source.write_bytes(pack_items(get_iter(10)))
    out = tmp_path / "out"
    command = ["convert", "--type", "item", "--to", to, "-o", str(out), str(source)]
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    run = subprocess.run(
        [sys.executable, "-c", _STARTING_ARROW, way, *command],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    wrote, *seen = run.stdout.splitlines()
    assert wrote == f"Wrote 10 records to {out} ({to})"
    if way == "as-the-program":
        assert seen == ["0 False False False 1 False"]
    elif way == "after-pyarrow":
        assert seen == ["0 True False False None True"]
    else:
        assert seen == ["0 True True True None True", "[1, 2]"]
    assert read_back(out.read_bytes(), to) == as_rows(get_iter(10))
