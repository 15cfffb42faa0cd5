"""``convert`` in a real process: real pipes, exit statuses, signals, a terminal for the bar."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import stat
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from tqdm import tqdm

from integration.test_cli_subprocess import (
    AS_UNPRIVILEGED,
    EXIT_BROKEN_PIPE,
    EXIT_DATA_ERROR,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    ITEM,
    MODULE,
    TIMEOUT,
    after_generate,
    assert_one_error_line,
    pipe_pending,
)
from msgpack_reader_py import Item, get_iter, pack_items
from msgpack_reader_py._output.formats import OutputFormat
from msgpack_reader_py._output.progress import (
    _DELAY as BAR_DELAY,  # the real one, in a real process
)
from tests.helpers import (
    COLUMN_FORMATS,
    MAGIC,
    PREVIOUS,
    TEXT_FORMATS,
    as_rows,
    assert_directory_holds,
    broken_stream,
    data_lines,
    read_back,
    summary,
    temporaries,
)
from tests.reference import REFERENCE_MESSAGES, REFERENCE_SIZE


def run(
    *args: str,
    data: bytes | None = None,
    stdin: IO[bytes] | None = None,
    umask: int = -1,
    command: list[str] = MODULE,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m msgpack_reader_py ARGS``, stdout and stderr captured as bytes."""
    return subprocess.run(
        [*command, *args],
        input=data,
        stdin=stdin,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
        umask=umask,
    )


def one_error_line(stderr: bytes) -> str:
    """The single ``error: ...`` line that is all of ``stderr``."""
    text = stderr.decode()
    line = assert_one_error_line(text)
    assert text == line + "\n"
    return line


# --- through files and real pipes ------------------------------------------------------------
# Each format's output, from a path or stdin, to a file or stdout, is tests/test_convert.py's
# (cli.main in this process); here, one real process each way. Every subprocess starts a fresh
# interpreter and, for Parquet or Arrow, imports pyarrow: seconds each.


def test_file_to_file(tmp_path: Path, reference_bytes: bytes, reference_items: list[Item]) -> None:
    to: OutputFormat = "parquet"
    source = tmp_path / "in.msgpack"
    source.write_bytes(reference_bytes)
    out = tmp_path / f"out.{to}"
    result = run("convert", str(source), *ITEM, "--to", to, "-o", str(out))
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout.decode() == summary(REFERENCE_MESSAGES, out, to)
    assert read_back(out.read_bytes(), to) == as_rows(reference_items)
    assert_directory_holds(tmp_path, {source.name, out.name})


@pytest.mark.parametrize("to", COLUMN_FORMATS)  # written to a pipe: an output that cannot seek
def test_pipe_to_pipe(reference_items: list[Item], to: OutputFormat) -> None:
    # generate --path - | convert - --to FORMAT -o - : both ends of convert are real pipes.
    returncode, out, err = after_generate("convert", "-", *ITEM, "--to", to, "-o", "-")
    assert (returncode, err) == (0, b"")
    assert read_back(out, to) == as_rows(reference_items)  # the data and nothing else


# stdin a regular file, to a file: test_progress_with_stderr_piped, below.


def test_empty_input(tmp_path: Path) -> None:
    to: OutputFormat = "parquet"  # an empty table with the schema; every format: test_convert.py
    result = run("convert", "-", *ITEM, "--to", to, "-o", "-", data=b"")
    assert (result.returncode, result.stderr) == (0, b"")
    assert read_back(result.stdout, to) == []
    out = tmp_path / f"out.{to}"
    result = run("convert", "-", *ITEM, "--to", to, "-o", str(out), data=b"")
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout.decode() == summary(0, out, to)
    assert read_back(out.read_bytes(), to) == []
    assert_directory_holds(tmp_path, {out.name})


@pytest.mark.parametrize("to", ["parquet", "jsonl"])
def test_a_query_in_the_program_as_in_a_caller(
    tmp_path: Path, reference_path: Path, to: str
) -> None:
    """The program starts pyarrow without numpy (cli._common._start_arrow), and DuckDB then
    imports numpy to run the query: the rows are those the same command gives called from a
    program, whose pyarrow has numpy."""
    query = ["--where", "value > 50 and filename like '%A%'", "--select", "path,id,value"]
    args = ["convert", str(reference_path), *ITEM, *query, "--to", to, "-o"]
    result = run(*args, str(tmp_path / "program"))
    assert (result.returncode, result.stderr) == (0, b"")
    called = run(
        "-c",
        "import sys; from msgpack_reader_py.cli import main; sys.exit(main(sys.argv[1:]))",
        *args,
        str(tmp_path / "called"),
        command=[sys.executable],
    )
    assert (called.returncode, called.stderr) == (0, b"")
    written = (tmp_path / "program").read_bytes()
    assert written == (tmp_path / "called").read_bytes()
    assert len(written) > 100  # rows written, not a schema alone


# --- failures ------------------------------------------------------------------------------------


# Every kind of damage with every format: tests/test_convert.py. Here, that a real process
# exits with the data error status and only the error line on stderr (CSV: no pyarrow to load).


def test_broken_input_is_one_error_line_and_no_output(
    tmp_path: Path,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
) -> None:
    kind, to = "truncated", "csv"
    broken = broken_stream(kind, reference_items, reference_bytes, record_offsets)
    source = tmp_path / "broken.msgpack"
    source.write_bytes(broken.data)
    out = tmp_path / f"out.{to}"
    result = run("convert", str(source), *ITEM, "--to", to, "-o", str(out))
    assert result.returncode == EXIT_DATA_ERROR
    assert result.stdout == b""
    assert one_error_line(result.stderr).startswith(broken.error(source))
    assert not out.exists()
    assert temporaries(out) == []
    assert_directory_holds(tmp_path, {source.name})


def test_broken_stdin_leaves_a_previous_output_untouched(
    tmp_path: Path,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
) -> None:
    to: OutputFormat = "csv"
    broken = broken_stream("corrupt byte", reference_items, reference_bytes, record_offsets)
    out = tmp_path / f"out.{to}"
    out.write_bytes(PREVIOUS)
    inode = out.stat().st_ino
    result = run("convert", "-", *ITEM, "--to", to, "-o", str(out), data=broken.data)
    assert result.returncode == EXIT_DATA_ERROR
    assert result.stdout == b""
    assert one_error_line(result.stderr).startswith(broken.error("<stdin>"))
    assert out.read_bytes() == PREVIOUS
    assert out.stat().st_ino == inode
    assert_directory_holds(tmp_path, {out.name})


@pytest.mark.parametrize("to", ["csv", "parquet"])  # rows as they come; a file written by batches
def test_broken_input_to_stdout_writes_the_good_records_then_the_error(
    tmp_path: Path,
    reference_items: list[Item],
    reference_bytes: bytes,
    record_offsets: list[int],
    to: OutputFormat,
) -> None:
    broken = broken_stream("corrupt byte", reference_items, reference_bytes, record_offsets)
    source = tmp_path / "broken.msgpack"
    source.write_bytes(broken.data)
    # stderr into the same pipe as stdout: what arrives shows the order of the writes.
    result = subprocess.run(
        [*MODULE, "convert", str(source), *ITEM, "--to", to, "-o", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == EXIT_DATA_ERROR
    both = result.stdout
    start = both.rfind(broken.error(source).encode())
    assert start >= 0, both[-300:]
    one_error_line(both[start:])
    data = both[:start]
    assert read_back(data, to) == as_rows(reference_items[: broken.index])
    if to in TEXT_FORMATS:
        assert data_lines(data, to) == broken.index


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["-o", "OUT"], "--to"),
        (["--to", "xml", "-o", "OUT"], "xml"),
        (["--to", "csv"], "-o"),
    ],
    ids=["missing --to", "bad --to", "missing -o"],
)
def test_usage_errors(tmp_path: Path, reference_path: Path, args: list[str], named: str) -> None:
    result = subprocess.run(
        [*MODULE, "convert", str(reference_path), *args],
        capture_output=True,
        cwd=tmp_path,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == EXIT_USAGE
    assert result.stdout == b""
    line = one_error_line(result.stderr)
    assert named in line
    assert_directory_holds(tmp_path, set())


def test_output_into_a_missing_directory(tmp_path: Path, reference_path: Path) -> None:
    out = tmp_path / "no-such-directory" / "out.csv"
    result = run("convert", str(reference_path), *ITEM, "--to", "csv", "-o", str(out))
    assert result.returncode == EXIT_DATA_ERROR
    assert result.stdout == b""
    assert one_error_line(result.stderr).endswith(": No such file or directory")
    assert_directory_holds(tmp_path, set())


def unprivileged(*args: str) -> subprocess.CompletedProcess[bytes]:
    """The CLI as an unprivileged user (root drops to nobody), as in test_cli_subprocess."""
    return run(*args, command=[sys.executable, "-c", AS_UNPRIVILEGED])


def unwritable_setup(shared_dir: Path, reference_bytes: bytes) -> tuple[Path, Path, Path]:
    """A readable source, a directory anyone may write in, and one nobody may write in."""
    source = shared_dir / "in.msgpack"
    source.write_bytes(reference_bytes)
    source.chmod(0o644)
    writable = shared_dir / "writable"
    writable.mkdir()
    writable.chmod(0o777)
    locked = shared_dir / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    return source, writable, locked


def test_output_into_an_unwritable_directory(
    shared_dir: Path, reference_bytes: bytes, reference_items: list[Item]
) -> None:
    source, writable, locked = unwritable_setup(shared_dir, reference_bytes)
    if os.geteuid() != 0:
        assert not os.access(locked, os.W_OK)  # the test means something for this user

    # The control: the same user, the same input, a directory it may write in.
    control = unprivileged(
        "convert", str(source), *ITEM, "--to", "csv", "-o", str(writable / "o.csv")
    )
    assert (control.returncode, control.stderr) == (0, b"")
    assert read_back((writable / "o.csv").read_bytes(), "csv") == as_rows(reference_items)

    out = locked / "out.csv"
    result = unprivileged("convert", str(source), *ITEM, "--to", "csv", "-o", str(out))
    assert result.returncode == EXIT_DATA_ERROR
    assert result.stdout == b""
    assert one_error_line(result.stderr).endswith(": Permission denied")
    assert_directory_holds(locked, set())


@pytest.mark.parametrize("where", ["missing directory", "unwritable directory"])
def test_output_directory_error_names_the_output(
    shared_dir: Path, reference_bytes: bytes, where: str
) -> None:
    # The error names OUT, what the user typed, not a temporary file beside it.
    source, _, locked = unwritable_setup(shared_dir, reference_bytes)
    if where == "missing directory":
        out = shared_dir / "no-such-directory" / "out.csv"
        reason = "No such file or directory"
    else:
        out = locked / "out.csv"
        reason = "Permission denied"
    result = unprivileged("convert", str(source), *ITEM, "--to", "csv", "-o", str(out))
    assert result.returncode == EXIT_DATA_ERROR
    assert one_error_line(result.stderr) == f"error: {out}: {reason}"


@pytest.mark.parametrize("to", ["csv", "parquet"])
def test_a_full_stdout_is_not_blamed_on_the_input(reference_path: Path, to: str) -> None:
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [*MODULE, "convert", str(reference_path), *ITEM, "--to", to, "-o", "-"],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
            check=False,
        )
    assert result.returncode == EXIT_DATA_ERROR
    line = one_error_line(result.stderr)
    assert line.endswith(": No space left on device")
    assert str(reference_path) not in line


def test_sigint_leaves_a_previous_output_untouched(tmp_path: Path, reference_bytes: bytes) -> None:
    # Every format, interrupted: tests/test_convert.py (KeyboardInterrupt); here, a real SIGINT.
    to = "parquet"
    out = tmp_path / f"out.{to}"
    out.write_bytes(PREVIOUS)
    with subprocess.Popen(
        [*MODULE, "convert", "-", *ITEM, "--to", to, "-o", str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        # Thousands of records, then nothing: the conversion is under way (its temporary
        # file exists) and blocks on a pipe that stays open.
        process.stdin.write(reference_bytes[:200_000])
        process.stdin.flush()
        deadline = time.monotonic() + TIMEOUT
        while pipe_pending(process.stdin.fileno()) > 0 or not temporaries(out):
            assert time.monotonic() < deadline, "the conversion never started"
            time.sleep(0.01)
        time.sleep(0.2)
        assert process.poll() is None
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=TIMEOUT)
        stdout = process.stdout.read()
        stderr = process.stderr.read()
        process.stdin.close()
    assert (status, stdout, stderr) == (EXIT_INTERRUPTED, b"", b"")
    assert out.read_bytes() == PREVIOUS
    assert_directory_holds(tmp_path, {out.name})


@pytest.mark.parametrize("to", ["csv", "parquet"])
def test_closed_stdout_ends_quietly(tmp_path: Path, to: str) -> None:
    # convert FILE -o - | head -c 4: the output cannot fit in the pipe, and is written in
    # several pieces (Parquet's of 4 MiB): one write cut short by a closed pipe can look
    # complete to the writer, the next one fails.
    source = tmp_path / "items.msgpack"
    source.write_bytes(pack_items(get_iter(200_000)))
    with subprocess.Popen(
        [*MODULE, "convert", str(source), *ITEM, "--to", to, "-o", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        first = process.stdout.read(4)
        process.stdout.close()
        status = process.wait(timeout=TIMEOUT)
        err = process.stderr.read()
    assert first == (MAGIC["parquet"] if to == "parquet" else b"id,p")
    assert (status, err) == (EXIT_BROKEN_PIPE, b"")


def test_permissions_follow_the_umask(tmp_path: Path, reference_path: Path) -> None:
    # Each format, each umask: tests/test_convert.py; here, a real process's umask.
    out = tmp_path / "out.csv"
    out.write_bytes(PREVIOUS)
    out.chmod(0o600)
    result = run("convert", str(reference_path), *ITEM, "--to", "csv", "-o", str(out), umask=0o027)
    assert (result.returncode, result.stderr) == (0, b"")
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


# --- the progress bar ----------------------------------------------------------------------------


# Each mode with each format: tests/test_convert.py. Here, stderr a real pipe (never a terminal)
# and stdin a regular file (the bar knows its size): without --progress, nothing drawn; with
# --progress always, the bar.
@pytest.mark.parametrize(("mode", "to"), [(None, "csv"), ("always", "jsonl")])
def test_progress_with_stderr_piped(
    tmp_path: Path, reference_path: Path, reference_items: list[Item], mode: str | None, to: str
) -> None:
    out = tmp_path / f"out.{to}"
    option = [] if mode is None else ["--progress", mode]
    with reference_path.open("rb") as stdin:  # stdin a regular file: the bar knows its size
        result = run("convert", "-", *ITEM, "--to", to, "-o", str(out), *option, stdin=stdin)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == summary(REFERENCE_MESSAGES, out, to)
    assert read_back(out.read_bytes(), to) == as_rows(reference_items)
    if mode != "always":
        assert result.stderr == b""
        return
    err = result.stderr.decode()
    size = tqdm.format_sizeof(REFERENCE_SIZE, divisor=1024)
    assert "<stdin>" in err
    assert f"{size}B/{size}B" in err, err
    assert f"{REFERENCE_MESSAGES:,} records" in err, err
    assert "records/s" in err, err
    assert "Traceback" not in err


def read_terminal(fd: int, into: bytearray, stop: threading.Event) -> None:
    """Read a pty master until the other side is closed (EIO) or ``stop`` is set."""
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], 0.05)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: every copy of the slave side is closed
            return
        if not chunk:
            return
        into.extend(chunk)


def on_a_terminal(args: list[str], feed: Callable[[IO[bytes]], None]) -> tuple[int, bytes, bytes]:
    """Run the CLI with stderr on a pseudo-terminal and stdin a pipe that ``feed`` writes.

    Returns the exit status, stdout, and everything the terminal showed.
    """
    master, slave = pty.openpty()
    shown = bytearray()
    stop = threading.Event()
    reader = threading.Thread(target=read_terminal, args=(master, shown, stop), daemon=True)
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
        with subprocess.Popen(
            [*MODULE, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=slave
        ) as process:
            os.close(slave)
            slave = -1
            reader.start()
            assert process.stdin is not None
            assert process.stdout is not None
            feed(process.stdin)
            process.stdin.close()
            out = process.stdout.read()
            status = process.wait(timeout=TIMEOUT)
        reader.join(timeout=TIMEOUT)
        assert not reader.is_alive()
    finally:
        stop.set()
        if reader.is_alive():
            reader.join(timeout=TIMEOUT)
        if slave >= 0:
            os.close(slave)
        os.close(master)
    return status, out, bytes(shown)


def test_progress_auto_on_a_terminal_shows_the_bar_for_a_slow_input(
    tmp_path: Path, reference_bytes: bytes, reference_items: list[Item]
) -> None:
    pieces = 10
    step = -(-len(reference_bytes) // pieces)

    def slowly(stdin: IO[bytes]) -> None:
        # First give the process time to start (a loaded machine may take a second), so that
        # what follows, about three times the bar's delay, happens while it converts.
        time.sleep(1.0)
        for start in range(0, len(reference_bytes), step):
            stdin.write(reference_bytes[start : start + step])
            stdin.flush()
            time.sleep(3 * BAR_DELAY / pieces)

    out = tmp_path / "out.csv"
    status, stdout, shown = on_a_terminal(
        ["convert", "-", *ITEM, "--to", "csv", "-o", str(out)], slowly
    )
    assert status == 0, shown
    assert stdout.decode() == summary(REFERENCE_MESSAGES, out, "csv")
    assert read_back(out.read_bytes(), "csv") == as_rows(reference_items)
    text = shown.decode()
    assert "<stdin>" in text, text
    assert f"{tqdm.format_sizeof(REFERENCE_SIZE, divisor=1024)}B" in text, text
    assert f"{REFERENCE_MESSAGES:,} records" in text, text
    assert "records/s" in text, text


def test_progress_auto_on_a_terminal_shows_nothing_for_a_quick_input(tmp_path: Path) -> None:
    items = list(get_iter(100))

    def at_once(stdin: IO[bytes]) -> None:
        stdin.write(pack_items(items))

    out = tmp_path / "out.csv"
    status, stdout, shown = on_a_terminal(
        ["convert", "-", *ITEM, "--to", "csv", "-o", str(out)], at_once
    )
    assert (status, shown) == (0, b"")
    assert stdout.decode() == summary(len(items), out, "csv")
    assert read_back(out.read_bytes(), "csv") == as_rows(items)
