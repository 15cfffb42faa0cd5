"""The command line on broken input, failing sources and a failing stdout, run in-process: one
``error:`` line after the records before the error; a closed pipe and Ctrl-C end it quietly.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import msgpack
import pytest

from msgpack_reader_py import Item, cli, pack_items
from msgpack_reader_py._output import convert as convert_module
from msgpack_reader_py._output import text as writers
from msgpack_reader_py.cli import generate as cli_generate
from msgpack_reader_py.cli import main
from msgpack_reader_py.cli import read as cli_read

from .helpers import (
    EXIT_BROKEN_PIPE,
    EXIT_DATA_ERROR,
    EXIT_INTERRUPTED,
    FIELD_NAMES,
    GOOD_RECORD,
    ITEM,
    NOT_ITEMS_HINT,
    PREVIOUS,
    InterruptedStream,
    error_line,
    fake_stdin,
    item_from_csv,
    item_from_json,
    reversed_map,
    without,
)
from .reference import (
    REFERENCE_MESSAGES,
)


class BrokenPipeBuffer(io.BytesIO):
    """The binary side of a :class:`BrokenPipeStdout`: its writes count against the same
    ``good_writes``."""

    def __init__(self, stdout: BrokenPipeStdout) -> None:
        super().__init__()
        self._stdout = stdout

    def write(self, data: Any, /) -> int:
        self._stdout.take_a_write(bytes(data))
        return super().write(data)


class BrokenPipeStdout(io.StringIO):
    """A text stdout whose reader goes away after ``good_writes`` writes, to it or to its
    binary ``buffer``; ``writes`` holds what each of those delivered (binary writes as UTF-8
    text)."""

    def __init__(self, good_writes: int = 0) -> None:
        super().__init__()
        self.good_writes = good_writes
        self.writes: list[str] = []
        self._buffer = BrokenPipeBuffer(self)

    @property
    def buffer(self) -> BrokenPipeBuffer:
        return self._buffer

    def take_a_write(self, data: str | bytes) -> None:
        if self.good_writes <= 0:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        self.good_writes -= 1
        self.writes.append(data if isinstance(data, str) else data.decode("utf-8"))

    def write(self, text: str, /) -> int:
        self.take_a_write(text)
        return super().write(text)


class UnflushableStdout(io.StringIO):
    """A stdout whose flush fails as a closed pipe's does."""

    def flush(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def raise_keyboard_interrupt(*args: object, **kwargs: object) -> NoReturn:
    raise KeyboardInterrupt


def raise_broken_pipe(*args: object, **kwargs: object) -> NoReturn:
    raise BrokenPipeError(errno.EPIPE, "Broken pipe")


# --- data and I/O errors -------------------------------------------------------------------------


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "missing.msgpack"
    assert main(["read", str(path)]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err) == f"error: {path}: {os.strerror(errno.ENOENT)}"


def test_missing_file_dump(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "missing.msgpack"
    assert main(["dump", str(path), "--format", "csv"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err) == f"error: {path}: {os.strerror(errno.ENOENT)}"


def test_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["read", str(tmp_path)]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err) == f"error: {tmp_path}: {os.strerror(errno.EISDIR)}"


def truncated_file(tmp_path: Path, reference_bytes: bytes) -> Path:
    path = tmp_path / "truncated.msgpack"
    path.write_bytes(reference_bytes[:-10])
    return path


def test_truncated_file_read(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    record_offsets: list[int],
) -> None:
    path = truncated_file(tmp_path, reference_bytes)
    assert main(["read", str(path), "--json"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    line = error_line(err)
    assert line.startswith(f"error: {path}: ")
    assert "record 9999" in line
    assert "byte 559383" in line
    assert f"record {REFERENCE_MESSAGES - 1} at byte {record_offsets[-2]}" in line


def test_truncated_file_dump_writes_the_records_before_the_error(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    reference_items: list[Item],
) -> None:
    path = truncated_file(tmp_path, reference_bytes)
    assert main(["dump", str(path), *ITEM]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert [item_from_json(line) for line in out.splitlines()] == reference_items[:-1]
    line = error_line(err)
    assert line.startswith(f"error: {path}: ")
    assert "record 9999" in line
    assert "byte 559383" in line


def test_truncated_file_dump_csv(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    reference_items: list[Item],
) -> None:
    path = truncated_file(tmp_path, reference_bytes)
    assert main(["dump", str(path), *ITEM, "--format", "csv"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == FIELD_NAMES
    assert [item_from_csv(row) for row in rows[1:]] == reference_items[:-1]
    assert "record 9999" in error_line(err)


def test_truncated_stdin_names_stdin(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_bytes: bytes,
) -> None:
    fake_stdin(monkeypatch, io.BytesIO(reference_bytes[:-10]))
    assert main(["read", "-"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    line = error_line(err)
    assert line.startswith("error: <stdin>: ")
    assert "record 9999" in line
    assert "byte 559383" in line


def test_corrupt_byte(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    reference_items: list[Item],
    record_offsets: list[int],
) -> None:
    data = bytearray(reference_bytes)
    data[record_offsets[5]] = 0xC1  # never valid MessagePack
    path = tmp_path / "corrupt.msgpack"
    path.write_bytes(data)
    assert main(["dump", str(path), *ITEM]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert [item_from_json(line) for line in out.splitlines()] == reference_items[:5]
    line = error_line(err)
    assert line.startswith(f"error: {path}: record 5 at byte {record_offsets[5]}: ")
    assert "not valid MessagePack" in line


def test_corrupt_byte_inside_a_record(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    record_offsets: list[int],
) -> None:
    data = bytearray(reference_bytes)
    data[record_offsets[7] + 2] = 0xC1  # the type byte of the record's second field
    path = tmp_path / "corrupt.msgpack"
    path.write_bytes(data)
    assert main(["read", str(path)]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    line = error_line(err)
    assert f"record 7 at byte {record_offsets[7]}" in line
    assert "not valid MessagePack" in line


# value -> the reason the error line gives after "record 3 at byte N: "
NOT_AN_ITEM: dict[str, tuple[object, str]] = {
    "int": (5, "expected an array or a map of 8 fields, found int 5"),
    "str": ("text", "expected an array or a map of 8 fields, found str 'text'"),
    "short-array": (
        [1, 2, 3],
        "expected an array or a map of 8 fields, found an array of 3 values",
    ),
    "long-array": (
        [*GOOD_RECORD.to_list(), 9],
        "expected an array or a map of 8 fields, found an array of 9 values",
    ),
    "map-without-line": (
        without(reversed_map(GOOD_RECORD), "line"),
        "field `line` is missing (a map without its key, and no default)",
    ),
    "map-with-a-str-line": (
        {**reversed_map(GOOD_RECORD), "line": "x"},
        "field `line` expected int, got str 'x'",
    ),
    "map-with-a-bool-id": (
        {**reversed_map(GOOD_RECORD), "id": True},
        "field `id` expected int, got bool True",
    ),
}


@pytest.mark.parametrize("name", list(NOT_AN_ITEM))
def test_a_record_that_is_not_an_item(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_items: list[Item],
    record_offsets: list[int],
    name: str,
) -> None:
    value, reason = NOT_AN_ITEM[name]
    path = tmp_path / "not-a-record.msgpack"
    path.write_bytes(pack_items(reference_items[:3]) + msgpack.packb(value))
    assert main(["dump", str(path), *ITEM]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert [item_from_json(line) for line in out.splitlines()] == reference_items[:3]
    assert error_line(err) == (
        f"error: {path}: record 3 at byte {record_offsets[3]}: {reason}{NOT_ITEMS_HINT}"
    )


def test_stdin_io_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_stdin(monkeypatch, InterruptedStream(b"", OSError(errno.EIO, os.strerror(errno.EIO))))
    assert main(["read", "-"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err) == f"error: <stdin>: {os.strerror(errno.EIO)}"


def test_stdin_io_error_without_strerror(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_bytes: bytes
) -> None:
    fake_stdin(monkeypatch, InterruptedStream(reference_bytes[:1000], OSError("device gone")))
    assert main(["dump", "-"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert len(out.splitlines()) > 0
    assert error_line(err) == "error: <stdin>: device gone"


def test_error_after_a_failed_stdout_flush(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The error line is still written when stdout cannot be flushed (its reader went away).
    monkeypatch.setattr(sys, "stdout", UnflushableStdout())
    assert main(["read", str(tmp_path / "missing.msgpack")]) == EXIT_DATA_ERROR
    assert error_line(capsys.readouterr().err).startswith("error: ")


def test_error_with_a_closed_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stdout", closed)
    assert main(["read", str(tmp_path / "missing.msgpack")]) == EXIT_DATA_ERROR
    assert error_line(capsys.readouterr().err).startswith("error: ")


# --- closed stdout and Ctrl-C --------------------------------------------------------------------


def test_broken_pipe_during_dump(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_file: Path,
    reference_items: list[Item],
) -> None:
    stdout = BrokenPipeStdout(good_writes=3)
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["dump", str(reference_file), *ITEM]) == EXIT_BROKEN_PIPE
    # dump writes a batch of records at a time: the three writes that went through held whole
    # lines, the first records in order, and nothing was written after the pipe closed.
    assert len(stdout.writes) == 3
    assert all(write.endswith("\n") for write in stdout.writes)
    dumped = [item_from_json(line) for line in "".join(stdout.writes).splitlines()]
    assert len(dumped) >= 3
    assert dumped == reference_items[: len(dumped)]
    assert capsys.readouterr().err == ""


def test_broken_pipe_during_dump_csv(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    monkeypatch.setattr(sys, "stdout", BrokenPipeStdout())
    assert main(["dump", str(reference_file), "--format", "csv"]) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""


def test_broken_pipe_during_read(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    monkeypatch.setattr(sys, "stdout", BrokenPipeStdout())
    assert main(["read", str(reference_file)]) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""


def test_broken_pipe_during_default_job(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", BrokenPipeStdout())
    assert main([]) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""


def test_broken_pipe_during_generate_to_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdout = BrokenPipeStdout()
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["generate", "--path", "-"]) == EXIT_BROKEN_PIPE
    assert stdout.buffer.getvalue() == b""
    assert capsys.readouterr().err == ""


def test_broken_pipe_points_stdout_at_devnull(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    # Python flushes stdout again at exit: after a broken pipe, stdout's descriptor must lead
    # to the null device so that flush cannot fail.
    with open(reference_file.parent / "stdout.txt", "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        monkeypatch.setattr(cli_read.Summary, "line", raise_broken_pipe)
        assert main(["read", str(reference_file)]) == EXIT_BROKEN_PIPE
        now = os.fstat(stdout.fileno())
        devnull = os.stat(os.devnull)
        assert (now.st_dev, now.st_ino, now.st_rdev) == (
            devnull.st_dev,
            devnull.st_ino,
            devnull.st_rdev,
        )
    assert capsys.readouterr().err == ""


def test_keyboard_interrupt_during_default_job(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "pack_items", raise_keyboard_interrupt)
    assert main([]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(
    ("stop", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["term", "hup"]
)
def test_sigterm_and_sighup_unwind_as_ctrl_c_does(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stop: signal.Signals,
    status: int,
) -> None:
    # The handler raises where the program is, so that it unwinds as for Ctrl-C (an unfinished
    # output file removed: integration/test_jobs_subprocess.py), with the shell's 128 + N.
    def terminated(items: Any) -> bytes:
        os.kill(os.getpid(), stop)
        raise AssertionError("the signal did not stop the command")  # pragma: no cover

    monkeypatch.setattr(cli, "pack_items", terminated)
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {signum: signal.getsignal(signum) for signum in stops}
    assert main([]) == status
    after = {signum: signal.getsignal(signum) for signum in stops}
    assert after == before  # the handlers are the command's alone
    assert capsys.readouterr() == ("", "")


def test_a_signal_ignored_when_the_command_starts_stays_ignored(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # nohup starts a command with SIGHUP ignored: a closed terminal must not stop it.
    handlers: list[Any] = []

    def packed(items: Any) -> bytes:
        handlers.append(signal.getsignal(signal.SIGHUP))
        return pack_items(items)

    monkeypatch.setattr(cli, "pack_items", packed)
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        assert main([]) == 0
    finally:
        signal.signal(signal.SIGHUP, previous)
    assert handlers == [signal.SIG_IGN]
    assert "Read" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("stop", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "term"]
)
def test_a_stop_lost_in_a_finaliser_still_stops_the_command(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_file: Path,
    stop: signal.Signals,
    status: int,
) -> None:
    # A signal's handler runs wherever the program is. In a finaliser, Python reports the
    # exception it raises as ignored and goes on: the command must stop all the same, its
    # output file not put in place, and say nothing of the lost exception (CI met one lost
    # in an import's module lock, its "Exception ignored" and traceback on stderr).
    reported: list[BaseException | None] = []

    def hook(report: Any) -> None:
        reported.append(report.exc_value)

    monkeypatch.setattr(sys, "unraisablehook", hook)
    finalised: list[str] = []
    real = writers.text_out

    class Finalised:
        def __del__(self) -> None:
            finalised.append("signalled")
            signal.raise_signal(stop)
            finalised.append("went on")  # never: the handler raised here, and it was lost

    @contextlib.contextmanager
    def text_out(*arguments: Any, **keywords: Any) -> Iterator[Callable[[Any], None]]:
        with real(*arguments, **keywords) as write:

            def writing(batch: Any) -> None:
                Finalised()  # dropped at once: the signal's handler runs in its finaliser
                write(batch)

            yield writing

    monkeypatch.setattr(convert_module, "text_out", text_out)
    out = reference_file.parent / "out.jsonl"
    out.write_bytes(PREVIOUS)
    assert main(["convert", str(reference_file), *ITEM, "--to", "jsonl", "-o", str(out)]) == status
    # Each batch signalled in a finaliser, and each stop was lost there, none reported: the
    # command's own hook kept them to itself, and gave the program's back.
    assert finalised
    assert set(finalised) == {"signalled"}
    assert reported == []
    assert sys.unraisablehook is hook
    assert out.read_bytes() == PREVIOUS
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([out.name, reference_file.name])
    assert capsys.readouterr().err == ""


def test_other_exceptions_lost_in_a_finaliser_are_reported_as_python_reports_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reported: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: reported.append(report.exc_value))

    class Finalised:
        def __del__(self) -> None:
            raise ValueError("a finaliser's own failure")

    with cli._terminable():
        Finalised()
    assert [str(exc) for exc in reported] == ["a finaliser's own failure"]


def test_keyboard_interrupt_while_reading_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_bytes: bytes
) -> None:
    # Ctrl-C while blocked on stdin, after part of the stream arrived.
    fake_stdin(monkeypatch, InterruptedStream(reference_bytes[:5000], KeyboardInterrupt()))
    assert main(["read", "-"]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("", "")


def test_keyboard_interrupt_during_dump(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_bytes: bytes,
    reference_items: list[Item],
) -> None:
    fake_stdin(monkeypatch, InterruptedStream(reference_bytes[:5000], KeyboardInterrupt()))
    assert main(["dump", "-", *ITEM]) == EXIT_INTERRUPTED
    out, err = capsys.readouterr()
    assert err == ""
    dumped = [item_from_json(line) for line in out.splitlines()]
    assert dumped == reference_items[: len(dumped)]
    assert len(dumped) > 0


@pytest.mark.parametrize("previous", [None, b"kept"], ids=["new", "over-a-file"])
def test_keyboard_interrupt_during_generate(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    previous: bytes | None,
) -> None:
    """An interrupted generate leaves no file begun, and a file that was there as it was."""
    path = tmp_path / "generated.msgpack"
    if previous is not None:
        path.write_bytes(previous)
    monkeypatch.setattr(cli_generate, "write_items", raise_keyboard_interrupt)
    assert main(["generate", "--path", str(path)]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if previous is None else [path.name])
    if previous is not None:
        assert path.read_bytes() == previous


def test_a_map_as_a_maps_key_is_one_error_line_after_the_good_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "keys.msgpack"
    path.write_bytes(msgpack.packb({"v": 1}) + b"\x81\xa1v\x81\x81\xa1a\x01\x02")
    status = main(["dump", str(path), "--format", "jsonl"])
    out, err = capsys.readouterr()
    assert status != 0
    assert out == '{"v":1}\n'
    assert err == (
        f"error: {path}: record 1 at byte 4: a map's key is a map, which no Python dict holds\n"
    )
