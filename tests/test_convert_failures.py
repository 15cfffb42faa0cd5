"""``convert`` failing: broken input, Ctrl-C, a missing source, an output that cannot be written,
no pyarrow. Each failure is checked for what it leaves behind: nothing under the output's
name and no temporary file.
"""

from __future__ import annotations

import errno
import gc
import io
import json
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from msgpack_reader_py import Item
from msgpack_reader_py._base import atomic
from msgpack_reader_py._output import columnar
from msgpack_reader_py._output.formats import OutputFormat
from msgpack_reader_py.cli import main

from .helpers import (
    BROKEN_KINDS,
    COLUMN_FORMATS,
    EXIT_DATA_ERROR,
    EXIT_INTERRUPTED,
    FORMATS,
    ITEM,
    PREVIOUS,
    TEXT_FORMATS,
    TIMEOUT,
    InterruptedStream,
    as_rows,
    assert_directory_holds,
    broken_stream,
    data_lines,
    error_line,
    fake_stdin,
    read_back,
    summary,
    temporaries,
)
from .reference import REFERENCE_MESSAGES

pytestmark = pytest.mark.usefixtures("short_bar_delay")


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
    """Make pyarrow (and so ``msgpack_reader_py._arrow.reader``) impossible to import."""
    for name in list(sys.modules):
        if name == "pyarrow" or name.startswith("pyarrow."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.delitem(sys.modules, "msgpack_reader_py._arrow.reader", raising=False)


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


@pytest.mark.parametrize("to", COLUMN_FORMATS)
def test_ctrl_c_while_the_writer_thread_writes_the_last_batch_stops_quietly(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_file: Path,
    to: OutputFormat,
) -> None:
    """A Ctrl-C while the command waits for its writer's thread: the file is closed only once
    the thread has stopped (closed under it, pyarrow failed with an error of its own, and the
    command exited 1 with it), and the command stops as on any Ctrl-C."""
    finishing = threading.Event()
    writing: list[bool] = []
    real_init, real_finish = columnar._Behind.__init__, columnar._Behind.finish

    def init(behind: Any, write: Callable[[Any], None]) -> None:
        def slow(batch: Any) -> None:
            writing.append(True)
            assert finishing.wait(TIMEOUT)
            # Ctrl-C, a real signal: it wakes the main thread, which waits for this one.
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            time.sleep(0.2)
            write(batch)
            writing.append(False)

        real_init(behind, slow)

    def finish(behind: Any) -> None:
        finishing.set()
        real_finish(behind)

    monkeypatch.setattr(columnar._Behind, "__init__", init)
    monkeypatch.setattr(columnar._Behind, "finish", finish)
    out = tmp_path / f"out.{to}"
    assert main(["convert", str(reference_file), *ITEM, "--to", to, "-o", str(out)]) == 130
    assert capsys.readouterr() == ("", "")
    assert writing == [True, False]  # the batch being written was finished, no other begun
    assert_directory_holds(tmp_path, {reference_file.name})


def test_a_failure_in_the_clean_up_after_a_ctrl_c_is_not_what_the_user_hears_of(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
) -> None:
    """What fails as a conversion unwinds from a Ctrl-C (closing a writer the stop cut
    short) is its consequence: the command stops quietly with 130, not with that error."""

    def broken_close(writer: Any) -> None:
        raise OSError(errno.EIO, "Column 3 had 65536 while previous column had 40000")

    class CtrlC(io.RawIOBase):
        """Standard input, then a real Ctrl-C: the command's handler raises it, and keeps it."""

        def __init__(self) -> None:
            self._data = io.BytesIO(reference_bytes[:200_000])

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1, /) -> bytes:
            chunk = self._data.read(size)
            if not chunk:
                signal.raise_signal(signal.SIGINT)
            return chunk

    monkeypatch.setattr(columnar._Parquet, "close", broken_close)
    fake_stdin(monkeypatch, CtrlC())
    out = tmp_path / "out.parquet"
    assert main(["convert", "-", *ITEM, "--to", "parquet", "-o", str(out)]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("", "")
    assert_directory_holds(tmp_path, set())
    # Without a stop, the same failure is the command's error.
    fake_stdin(monkeypatch, io.BytesIO(reference_bytes[:200_000]))
    assert main(["convert", "-", *ITEM, "--to", "parquet", "-o", str(out)]) == EXIT_DATA_ERROR
    assert "Column 3 had 65536" in error_line(capsys.readouterr().err)
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
def test_output_onto_a_directory_writes_parts_beside_what_is_there(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference_path: Path, to: OutputFormat
) -> None:
    out = tmp_path / "a-directory"
    out.mkdir()
    (out / "inside").write_bytes(PREVIOUS)
    assert main(["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"Wrote {REFERENCE_MESSAGES} records to {out}")
    assert (out / "inside").read_bytes() == PREVIOUS
    assert_directory_holds(out, {"inside", f"part-00000.{to}"})
    assert_directory_holds(tmp_path, {out.name})


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_a_stop_as_the_temporary_file_is_made_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stop: type[BaseException]
) -> None:
    # Python runs a signal's handler right after a system call returns, before its result is
    # kept: the file exists, its descriptor is lost, and the handler raises (CI under load:
    # a TERM sent as soon as the file appeared left it behind).
    made: list[str] = []
    real_open = os.open

    def open_then_stopped(path: str, flags: int, mode: int = 0o777) -> int:
        os.close(real_open(path, flags, mode))
        made.append(path)
        raise stop

    monkeypatch.setattr(os, "open", open_then_stopped)
    out = tmp_path / "out.csv"
    out.write_bytes(PREVIOUS)
    with pytest.raises(stop), atomic.replacing(out):
        pytest.fail("the block never runs")  # pragma: no cover
    monkeypatch.undo()
    assert len(made) == 1
    assert out.read_bytes() == PREVIOUS
    assert_directory_holds(tmp_path, {out.name})


@pytest.mark.parametrize("where", ["missing directory", "a file as its directory"])
def test_output_error_names_the_output_not_a_temporary_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference_path: Path, where: str
) -> None:
    # The user named OUT; a temporary file beside it is an implementation detail they have
    # never seen, and cannot act upon.
    if where == "missing directory":
        out = tmp_path / "no-such-directory" / "out.csv"
        reason = os.strerror(errno.ENOENT)
    else:
        (tmp_path / "a-file").write_bytes(PREVIOUS)
        out = tmp_path / "a-file" / "out.csv"
        reason = os.strerror(errno.ENOTDIR)
    assert main(["convert", str(reference_path), *ITEM, "--to", "csv", "-o", str(out)]) == 1
    assert error_line(capsys.readouterr().err) == f"error: {out}: {reason}"


@pytest.mark.parametrize("to", FORMATS)
def test_an_output_write_error_is_not_blamed_on_the_input(
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    reference_path: Path,
    to: OutputFormat,
) -> None:
    # stdout on a full disk: the input is fine, the error line must not say otherwise; and
    # nothing else reaches stderr (pyarrow, given the failure, would print one of its own).
    monkeypatch.setattr(sys, "stdout", FullStdout())
    assert main(["convert", str(reference_path), *ITEM, "--to", to, "-o", "-"]) == EXIT_DATA_ERROR
    gc.collect()  # pyarrow's streams print what they could not write when they go
    line = error_line(capfd.readouterr().err)
    assert line.endswith(f": {os.strerror(errno.ENOSPC)}")
    assert str(reference_path) not in line


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
    assert error_line(err) == (
        f"error: --to {to} needs pyarrow, which is not installed: pip install pyarrow (or "
        "install msgpack-reader-py with its 'arrow' extra)"
    )
    assert_directory_holds(tmp_path, set())


@pytest.mark.parametrize(
    "argv",
    [
        ["convert", "--to", "parquet", "-o", "OUT"],
        ["convert", "--to", "arrow", "-o", "OUT"],
        ["dump", "--where", "id > 1"],
    ],
)
def test_a_pyarrow_too_old_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    argv: list[str],
) -> None:
    """pyarrow 22 and before would write some rows twice: refused before a record is read."""
    import pyarrow

    monkeypatch.setattr(pyarrow, "__version__", "22.0.0")
    monkeypatch.chdir(tmp_path)
    assert main([argv[0], str(reference_path), *ITEM, *argv[1:]]) == EXIT_DATA_ERROR
    stdout, err = capsys.readouterr()
    assert stdout == ""
    feature, extra = ("--where", "duckdb") if "--where" in argv else (f"--to {argv[2]}", "arrow")
    assert error_line(err) == (
        f"error: {feature} needs pyarrow 23 or later, and 22.0.0 is installed: pip install -U "
        f"'pyarrow>=23' (or install msgpack-reader-py with its '{extra}' extra)"
    )
    assert_directory_holds(tmp_path, set())


@pytest.mark.parametrize(
    ("package", "old", "statement", "said"),
    [
        (
            "pyarrow",
            "22.0.0",
            "from msgpack_reader_py import read_table",
            "the Arrow readers (read_table, read_batches, BatchReader, arrow_schema) needs "
            "pyarrow 23 or later, and 22.0.0 is installed: pip install -U 'pyarrow>=23' (or "
            "install msgpack-reader-py with its 'arrow' extra)",
        ),
        (
            "duckdb",
            "1.5.3",
            "import msgpack_reader_py.duckdb",
            "msgpack_reader_py.duckdb needs duckdb 1.5.4 or later, and 1.5.3 is installed: pip "
            "install -U 'duckdb>=1.5.4' (or install msgpack-reader-py with its 'duckdb' extra)",
        ),
    ],
)
def test_the_library_refuses_a_release_too_old_as_it_is_imported(
    package: str, old: str, statement: str, said: str
) -> None:
    """As a missing package is refused: the module that needs it does not import."""
    import subprocess

    code = (
        f"import {package}; {package}.__version__ = {old!r}\n"
        "from msgpack_reader_py._base.extras import MissingExtraError\n"
        "try:\n"
        f"    {statement}\n"
        "except MissingExtraError as exc:\n"
        "    print(exc)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout == said + "\n"


@pytest.mark.parametrize(
    ("package", "version", "refused"),
    [
        ("pyarrow", "22.0.0", True),
        ("pyarrow", "8.0.1", True),
        ("pyarrow", "", True),
        ("pyarrow", "23.0.0", False),
        ("pyarrow", "23.0.0.dev12", False),
        ("pyarrow", "100.0.0", False),
        ("duckdb", "1.5.3", True),
        ("duckdb", "1.4.5", True),
        ("duckdb", "1.5", True),
        ("duckdb", "1.5.4", False),
        ("duckdb", "1.5.10", False),
        ("duckdb", "1.6.0.dev379", False),
        ("duckdb", "2.0.1", False),
    ],
)
def test_check_version_refuses_a_release_before_the_oldest(
    package: str, version: str, refused: bool
) -> None:
    from msgpack_reader_py._base.extras import OLDEST, MissingExtraError, check_version

    wanted = ".".join(map(str, OLDEST[package]))
    if refused:
        with pytest.raises(MissingExtraError) as info:
            check_version(package, version, "it", "extra")
        assert str(info.value) == (
            f"it needs {package} {wanted} or later, and {version} is installed: pip install -U "
            f"'{package}>={wanted}' (or install msgpack-reader-py with its 'extra' extra)"
        )
        assert info.value.name == package
    else:
        check_version(package, version, "it", "extra")


def test_a_duckdb_too_old_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_path: Path,
) -> None:
    """DuckDB 1.5.3 and before would turn [false] into [true]: refused before a record is
    read, by the command line and by the library's query."""
    import duckdb

    from msgpack_reader_py._arrow.reader import arrow_schema
    from msgpack_reader_py._base.extras import MissingExtraError
    from msgpack_reader_py._output.query import Query

    monkeypatch.setattr(duckdb, "__version__", "1.5.3")
    assert main(["dump", str(reference_path), "--where", "id > 1"]) == EXIT_DATA_ERROR
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert error_line(err) == (
        "error: --where needs duckdb 1.5.4 or later, and 1.5.3 is installed: pip install -U "
        "'duckdb>=1.5.4' (or install msgpack-reader-py with its 'duckdb' extra)"
    )
    with pytest.raises(MissingExtraError, match=r"select and where needs duckdb 1\.5\.4 or later"):
        Query(arrow_schema(Item), where="id > 1")


@pytest.mark.parametrize("command", ["dump", "count", "convert"])
def test_where_without_its_extra_names_every_package_it_needs_at_once(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    command: str,
) -> None:
    """Not pyarrow first, then duckdb once pyarrow is there: both, in a form that works however
    the package was installed."""
    block_pyarrow(monkeypatch)
    for name in [n for n in sys.modules if n.partition(".")[0] == "duckdb"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "duckdb", None)
    argv = [command, str(reference_path), "--where", "id > 1"]
    if command == "convert":
        argv += ["--to", "csv", "-o", str(tmp_path / "out.csv")]
    assert main(argv) == EXIT_DATA_ERROR
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert error_line(err) == (
        "error: --where needs duckdb and pyarrow, which are not installed: pip install duckdb "
        "pyarrow (or install msgpack-reader-py with its 'duckdb' extra)"
    )
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
    assert "msgpack_reader_py._arrow.reader" not in sys.modules
    monkeypatch.undo()
    assert read_back(out.read_bytes(), to) == as_rows(reference_items)


# --- outputs that are no regular file --------------------------------------------------------


def test_a_named_pipe_is_written_as_a_stream_not_replaced(
    tmp_path: Path, reference_path: Path
) -> None:
    # Renamed onto, a pipe (or /dev/null, for root) would become a regular file.
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()))
    reader.start()
    assert main(["convert", str(reference_path), *ITEM, "--to", "jsonl", "-o", str(pipe)]) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)
    lines = received[0].decode().splitlines()
    assert [json.loads(line)["id"] for line in lines] == list(range(REFERENCE_MESSAGES))
    assert_directory_holds(tmp_path, {"pipe"})


def test_a_link_is_followed_and_kept(tmp_path: Path, reference_path: Path) -> None:
    (tmp_path / "real.csv").write_bytes(PREVIOUS)
    link = tmp_path / "link.csv"
    link.symlink_to("real.csv")
    assert main(["convert", str(reference_path), *ITEM, "--to", "csv", "-o", str(link)]) == 0
    assert link.is_symlink()
    assert len((tmp_path / "real.csv").read_text().splitlines()) == REFERENCE_MESSAGES + 1
    assert_directory_holds(tmp_path, {"real.csv", "link.csv"})
