"""``convert``: the library function and the ``convert`` command, run in-process.

Every output is read back with an independent reader (pyarrow, ``csv``, ``json``) and compared
with the reference items; every failure is checked for what it leaves behind.
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
import stat
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import msgpack
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq
import pytest
from tqdm import tqdm

from msgpack_reader_py import Item, _progress, get_iter, pack_items
from msgpack_reader_py.arrow import arrow_schema
from msgpack_reader_py.cli import main
from msgpack_reader_py.convert import Conversion, convert
from msgpack_reader_py.errors import ReaderError, RecordError
from msgpack_reader_py.writers import OutputFormat

from .helpers import Checked, Terminal, Trickle, as_rows
from .reference import REFERENCE_MESSAGES, REFERENCE_SIZE
from .test_cli import (
    EXIT_DATA_ERROR,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    FIELD_NAMES,
    ITEM,
    InterruptedStream,
    error_line,
    fake_stdin,
)

FORMATS: tuple[OutputFormat, ...] = ("parquet", "arrow", "csv", "jsonl")
TEXT_FORMATS: tuple[OutputFormat, ...] = ("csv", "jsonl")
COLUMN_FORMATS: tuple[OutputFormat, ...] = ("parquet", "arrow")
FIELD_TYPES: dict[str, Any] = typing.get_type_hints(Item)
PREVIOUS = b"the previous contents of OUT\n"
BROKEN_KINDS = ("truncated", "corrupt byte", "wrong field type")
MAGIC = {"parquet": b"PAR1", "arrow": b"ARROW1"}
BAR_DELAY = 0.1  # seconds before the auto mode's bar may appear (0.5 outside these tests)


@pytest.fixture(autouse=True)
def short_bar_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    """The auto mode's delay, shortened so that the "slow job" tests take a fraction of a second."""
    monkeypatch.setattr(_progress, "_DELAY", BAR_DELAY)


# --- helpers (plain functions, also used by integration/test_convert_subprocess.py) ----------


def read_back(data: bytes, to: str) -> list[dict[str, Any]]:
    """The records of an ``Item`` stream converted to ``to``, read back independently.

    Checks the container too: the Arrow schema, the CSV header, the JSON keys, and that nothing
    precedes or follows the data.
    """
    if to in MAGIC:
        magic = MAGIC[to]
        assert data.startswith(magic), data[:16]
        assert data.endswith(magic), data[-16:]
        if to == "parquet":
            table = pq.read_table(pa.BufferReader(data))
        else:
            with pa.ipc.open_file(pa.BufferReader(data)) as reader:
                table = reader.read_all()
        assert table.schema == arrow_schema(Item)
        return table.to_pylist()
    text = data.decode("utf-8")
    assert "\r" not in text
    if to == "csv":
        rows = csv.DictReader(io.StringIO(text, newline=""))
        assert rows.fieldnames == FIELD_NAMES, text[:200]
        return [{name: FIELD_TYPES[name](value) for name, value in row.items()} for row in rows]
    assert to == "jsonl"
    lines = text.split("\n")
    assert lines.pop() == ""  # every line ends with "\n", and only "\n" ends a line
    records: list[dict[str, Any]] = [json.loads(line) for line in lines]
    for record in records:
        assert list(record) == FIELD_NAMES
    return records


def data_lines(data: bytes, to: str) -> int:
    """Lines of records in CSV or JSON Lines output (the CSV header not counted)."""
    lines = data.decode("utf-8").splitlines()
    return len(lines) - 1 if to == "csv" else len(lines)


def summary(count: int, out: Path | str, to: str) -> str:
    return f"Wrote {count} records to {out} ({to})\n"


def temporaries(out: Path) -> list[Path]:
    """The temporary files of a conversion into ``out``, as its documentation names them."""
    return sorted(out.parent.glob(f".{out.name}.*.part"))


def assert_directory_holds(directory: Path, names: set[str]) -> None:
    assert {entry.name for entry in directory.iterdir()} == names


@dataclasses.dataclass(frozen=True)
class Broken:
    """A stream that fails at record ``index`` (at byte ``offset``), with ``message``."""

    data: bytes
    index: int
    offset: int
    message: str

    def error(self, name: object) -> str:
        """What the error line starts with, for a source shown as ``name``."""
        return f"error: {name}: record {self.index} at byte {self.offset}: {self.message}"


def broken_stream(
    kind: str, reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> Broken:
    """The reference stream, damaged as ``kind`` says, far enough in for output to exist."""
    if kind == "truncated":
        last = len(reference_items) - 1
        return Broken(
            reference_bytes[:-10], last, record_offsets[last], "stream ends inside a record"
        )
    if kind == "corrupt byte":
        index = 5000
        damaged = bytearray(reference_bytes)
        damaged[record_offsets[index]] = 0xC1  # never valid MessagePack
        return Broken(bytes(damaged), index, record_offsets[index], "not valid MessagePack")
    assert kind == "wrong field type"
    index = 7000
    record = reference_items[index].to_list()
    record[FIELD_NAMES.index("line")] = "not a number"
    data = (
        reference_bytes[: record_offsets[index]]
        + msgpack.packb(record)
        + reference_bytes[record_offsets[index + 1] :]
    )
    return Broken(
        data,
        index,
        record_offsets[index],
        "field `line` expected int, got str 'not a number'",
    )


class FullBuffer(io.BytesIO):
    """A binary stdout on a full disk."""

    def write(self, data: Any, /) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class FullStdout(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self._buffer = FullBuffer()

    @property
    def buffer(self) -> FullBuffer:
        return self._buffer


def block_pyarrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make pyarrow (and so ``msgpack_reader_py.arrow``) impossible to import."""
    for name in list(sys.modules):
        if name == "pyarrow" or name.startswith("pyarrow."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "msgpack_reader_py.arrow", raising=False)


@pytest.fixture(scope="module")
def big_stream() -> tuple[int, bytes]:
    """More records than one Parquet/Arrow batch holds (65536): the records and the bytes."""
    count = 70_000
    return count, pack_items(get_iter(count))


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


# --- failures leave nothing half-written ---------------------------------------------------------


@pytest.mark.parametrize("previous", [False, True], ids=["no-previous-out", "previous-out"])
@pytest.mark.parametrize("to", FORMATS)
@pytest.mark.parametrize("kind", BROKEN_KINDS)
def test_broken_input_leaves_no_output(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    kind: str,
    to: OutputFormat,
    previous: bool,
) -> None:
    broken = broken_stream(kind, reference_items, reference_bytes, record_offsets)
    source = tmp_path / "broken.msgpack"
    source.write_bytes(broken.data)
    out = tmp_path / f"out.{to}"
    if previous:
        out.write_bytes(PREVIOUS)
        before = out.stat()
    assert main(["convert", str(source), *ITEM, "--to", to, "-o", str(out)]) == EXIT_DATA_ERROR
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert error_line(err).startswith(broken.error(source)), err
    assert temporaries(out) == []
    if previous:
        assert out.read_bytes() == PREVIOUS
        assert out.stat().st_ino == before.st_ino
        assert_directory_holds(tmp_path, {source.name, out.name})
    else:
        assert not out.exists()
        assert_directory_holds(tmp_path, {source.name})


@pytest.mark.parametrize("to", FORMATS)
def test_broken_stdin_names_stdin_and_leaves_no_output(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    to: OutputFormat,
) -> None:
    broken = broken_stream("truncated", reference_items, reference_bytes, record_offsets)
    fake_stdin(monkeypatch, io.BytesIO(broken.data))
    out = tmp_path / f"out.{to}"
    assert main(["convert", "-", *ITEM, "--to", to, "-o", str(out)]) == EXIT_DATA_ERROR
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert error_line(err).startswith(broken.error("<stdin>"))
    assert_directory_holds(tmp_path, set())


@pytest.mark.parametrize("to", FORMATS)
@pytest.mark.parametrize("kind", BROKEN_KINDS)
def test_broken_input_to_stdout_writes_the_records_before_the_error_first(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    kind: str,
    to: OutputFormat,
) -> None:
    broken = broken_stream(kind, reference_items, reference_bytes, record_offsets)
    source = tmp_path / "broken.msgpack"
    source.write_bytes(broken.data)
    # stdout and stderr write into one stream, so the order of what they wrote is kept.
    log = io.BytesIO()
    stdout = io.TextIOWrapper(log, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(log, encoding="utf-8", write_through=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    status = main(["convert", str(source), *ITEM, "--to", to, "-o", "-"])
    monkeypatch.undo()
    written = log.getvalue()
    stdout.detach()
    stderr.detach()
    assert status == EXIT_DATA_ERROR
    start = written.rfind(broken.error(source).encode())
    assert start >= 0, written[-300:]
    error_line(written[start:].decode())
    data = written[:start]
    assert read_back(data, to) == as_rows(reference_items[: broken.index])
    if to in TEXT_FORMATS:
        assert data_lines(data, to) == broken.index
    assert_directory_holds(tmp_path, {source.name})


@pytest.mark.parametrize("previous", [False, True], ids=["no-previous-out", "previous-out"])
@pytest.mark.parametrize("to", FORMATS)
def test_keyboard_interrupt_leaves_no_output(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    to: OutputFormat,
    previous: bool,
) -> None:
    # Ctrl-C while blocked on stdin, after 200 KB (thousands of records) were converted.
    fake_stdin(monkeypatch, InterruptedStream(reference_bytes[:200_000], KeyboardInterrupt()))
    out = tmp_path / f"out.{to}"
    if previous:
        out.write_bytes(PREVIOUS)
    assert main(["convert", "-", *ITEM, "--to", to, "-o", str(out)]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("", "")
    assert temporaries(out) == []
    if previous:
        assert out.read_bytes() == PREVIOUS
        assert_directory_holds(tmp_path, {out.name})
    else:
        assert_directory_holds(tmp_path, set())


def test_keyboard_interrupt_with_a_progress_bar(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
) -> None:
    fake_stdin(monkeypatch, InterruptedStream(reference_bytes[:200_000], KeyboardInterrupt()))
    out = tmp_path / "out.parquet"
    argv = ["convert", "-", *ITEM, "--to", "parquet", "-o", str(out), "--progress", "always"]
    assert main(argv) == EXIT_INTERRUPTED
    assert capsys.readouterr().out == ""
    assert_directory_holds(tmp_path, set())


@pytest.mark.parametrize("to", FORMATS)
def test_missing_source_leaves_no_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, to: OutputFormat
) -> None:
    source = tmp_path / "missing.msgpack"
    out = tmp_path / f"out.{to}"
    assert main(["convert", str(source), *ITEM, "--to", to, "-o", str(out)]) == EXIT_DATA_ERROR
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert error_line(err) == f"error: {source}: {os.strerror(errno.ENOENT)}"
    assert_directory_holds(tmp_path, set())


@pytest.mark.parametrize("to", FORMATS)
def test_output_into_a_missing_directory_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference_path: Path, to: OutputFormat
) -> None:
    out = tmp_path / "no-such-directory" / f"out.{to}"
    assert (
        main(["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]) == EXIT_DATA_ERROR
    )
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert error_line(err).endswith(f": {os.strerror(errno.ENOENT)}")
    assert not out.parent.exists()
    assert_directory_holds(tmp_path, set())


@pytest.mark.parametrize("to", FORMATS)
def test_output_onto_a_directory_fails_and_leaves_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference_path: Path, to: OutputFormat
) -> None:
    out = tmp_path / "a-directory"
    out.mkdir()
    (out / "inside").write_bytes(PREVIOUS)
    assert (
        main(["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]) == EXIT_DATA_ERROR
    )
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert error_line(err).endswith(f": {os.strerror(errno.EISDIR)}")
    assert (out / "inside").read_bytes() == PREVIOUS
    assert_directory_holds(out, {"inside"})
    assert_directory_holds(tmp_path, {out.name})


@pytest.mark.parametrize("where", ["missing directory", "directory as OUT"])
def test_output_error_names_the_output_not_a_temporary_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference_path: Path, where: str
) -> None:
    # The user named OUT; a temporary file beside it is an implementation detail they have
    # never seen, and cannot act upon.
    if where == "missing directory":
        out = tmp_path / "no-such-directory" / "out.csv"
        reason = os.strerror(errno.ENOENT)
    else:
        out = tmp_path / "a-directory"
        out.mkdir()
        reason = os.strerror(errno.EISDIR)
    assert main(["convert", str(reference_path), *ITEM, "--to", "csv", "-o", str(out)]) == 1
    assert error_line(capsys.readouterr().err) == f"error: {out}: {reason}"


@pytest.mark.parametrize("to", FORMATS)
def test_an_output_write_error_is_not_blamed_on_the_input(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_path: Path,
    to: OutputFormat,
) -> None:
    # stdout on a full disk: the input is fine, the error line must not say otherwise.
    monkeypatch.setattr(sys, "stdout", FullStdout())
    assert main(["convert", str(reference_path), *ITEM, "--to", to, "-o", "-"]) == EXIT_DATA_ERROR
    line = error_line(capsys.readouterr().err)
    assert line.endswith(f": {os.strerror(errno.ENOSPC)}")
    assert str(reference_path) not in line


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
    assert rows == [list(Named._fields), ["a,b", "1.5", "True", ""], ["c", "-2.0", "False", "né"]]
    stream = io.BytesIO()
    assert convert(data, stream, "jsonl", record_type=Named).records == 2
    lines = stream.getvalue().decode().splitlines()
    assert [json.loads(line) for line in lines] == [
        dict(zip(Named._fields, record, strict=True)) for record in records
    ]


# --- the progress bar ----------------------------------------------------------------------------


def test_progress_never_draws_nothing_even_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_bytes: bytes,
    tmp_path: Path,
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    fake_stdin(monkeypatch, Trickle(reference_bytes, 65536, BAR_DELAY / 5))
    out = tmp_path / "out.csv"
    assert main(["convert", "-", *ITEM, "--to", "csv", "-o", str(out), "--progress", "never"]) == 0
    assert terminal.getvalue() == ""
    assert capsys.readouterr() == (summary(REFERENCE_MESSAGES, out, "csv"), "")


@pytest.mark.parametrize("to", FORMATS)
def test_progress_always_draws_the_bar_on_stderr(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    reference_items: list[Item],
    to: OutputFormat,
) -> None:
    out = tmp_path / f"out.{to}"
    argv = ["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]
    assert main([*argv, "--progress", "always"]) == 0
    stdout, err = capsys.readouterr()
    assert stdout == summary(REFERENCE_MESSAGES, out, to)
    assert read_back(out.read_bytes(), to) == as_rows(reference_items)
    size = tqdm.format_sizeof(REFERENCE_SIZE, divisor=1024)
    assert str(reference_path) in err  # the bar's label
    assert f"{size}B/{size}B" in err, err  # bytes read of the file's size, to the end
    assert f"{REFERENCE_MESSAGES:,} records" in err, err
    assert "records/s" in err, err
    assert "Traceback" not in err


def test_progress_always_from_a_pipe_counts_bytes(
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
    reference_bytes: bytes,
) -> None:
    # stdin of unknown size, to stdout: the bar counts bytes without a total.
    fake_stdin(monkeypatch, io.BytesIO(reference_bytes))
    assert main(["convert", "-", *ITEM, "--to", "jsonl", "-o", "-", "--progress", "always"]) == 0
    out, err = capsysbinary.readouterr()
    assert data_lines(out, "jsonl") == REFERENCE_MESSAGES
    text = err.decode()
    assert "<stdin>" in text
    assert f"{tqdm.format_sizeof(REFERENCE_SIZE, divisor=1024)}B" in text, text
    assert f"{REFERENCE_MESSAGES:,} records" in text
    assert "records/s" in text


def test_progress_auto_draws_nothing_when_stderr_is_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_bytes: bytes
) -> None:
    fake_stdin(monkeypatch, Trickle(reference_bytes, 65536, BAR_DELAY / 5))
    assert main(["convert", "-", *ITEM, "--to", "jsonl", "-o", "-"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert len(out.splitlines()) == REFERENCE_MESSAGES


def test_progress_auto_on_a_terminal_draws_no_bar_for_a_quick_job(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    source = tmp_path / "small.msgpack"
    source.write_bytes(pack_items(get_iter(100)))
    out = tmp_path / "out.csv"
    assert main(["convert", str(source), *ITEM, "--to", "csv", "-o", str(out)]) == 0
    assert terminal.getvalue() == ""
    assert capsys.readouterr().out == summary(100, out, "csv")


def test_progress_auto_on_a_terminal_draws_the_bar_for_a_slow_job(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    reference_items: list[Item],
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    # Ten reads a fifth of the bar's delay apart: the job lasts about twice the delay.
    fake_stdin(monkeypatch, Trickle(reference_bytes, 65536, BAR_DELAY / 5))
    out = tmp_path / "out.csv"
    assert main(["convert", "-", *ITEM, "--to", "csv", "-o", str(out)]) == 0
    drawn = terminal.getvalue()
    assert "<stdin>" in drawn
    assert f"{REFERENCE_MESSAGES:,} records" in drawn, drawn
    assert "records/s" in drawn
    assert capsys.readouterr().out == summary(REFERENCE_MESSAGES, out, "csv")
    assert read_back(out.read_bytes(), "csv") == as_rows(reference_items)


@pytest.mark.parametrize("to", FORMATS)
def test_progress_always_without_tqdm_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    to: OutputFormat,
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    out = tmp_path / f"out.{to}"
    argv = ["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]
    assert main([*argv, "--progress", "always"]) == EXIT_DATA_ERROR
    stdout, err = capsys.readouterr()
    assert stdout == ""
    line = error_line(err)
    assert line.startswith("error: --progress")
    assert "tqdm" in line
    assert "install the 'arrow' extra" in line
    assert_directory_holds(tmp_path, set())


def test_progress_auto_without_tqdm_on_a_terminal_just_draws_no_bar(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_bytes: bytes,
    reference_items: list[Item],
    tmp_path: Path,
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    fake_stdin(monkeypatch, Trickle(reference_bytes, 65536, BAR_DELAY / 5))
    out = tmp_path / "out.jsonl"
    assert main(["convert", "-", *ITEM, "--to", "jsonl", "-o", str(out)]) == 0
    assert terminal.getvalue() == ""
    assert capsys.readouterr() == (summary(REFERENCE_MESSAGES, out, "jsonl"), "")
    assert read_back(out.read_bytes(), "jsonl") == as_rows(reference_items)


# --- without pyarrow ---------------------------------------------------------------------------


@pytest.mark.parametrize("to", COLUMN_FORMATS)
def test_column_formats_without_pyarrow_are_one_error_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    to: OutputFormat,
) -> None:
    block_pyarrow(monkeypatch)
    out = tmp_path / f"out.{to}"
    assert (
        main(["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]) == EXIT_DATA_ERROR
    )
    stdout, err = capsys.readouterr()
    assert stdout == ""
    line = error_line(err)
    assert line.startswith(f"error: --to {to}: ")
    assert "pyarrow" in line
    assert "install the 'arrow' extra" in line
    assert_directory_holds(tmp_path, set())


@pytest.mark.parametrize("to", TEXT_FORMATS)
def test_text_formats_need_no_pyarrow(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    reference_items: list[Item],
    to: OutputFormat,
) -> None:
    block_pyarrow(monkeypatch)
    out = tmp_path / f"out.{to}"
    assert main(["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]) == 0
    assert capsys.readouterr() == (summary(REFERENCE_MESSAGES, out, to), "")
    assert "msgpack_reader_py.arrow" not in sys.modules
    monkeypatch.undo()
    assert read_back(out.read_bytes(), to) == as_rows(reference_items)


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
