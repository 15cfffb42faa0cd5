"""``follow`` beyond StreamingReader: the async reader, ``convert`` and the readers that refuse it,
and the command line's ``--follow``, run in real child processes ended by SIGINT as a user's
Ctrl-C ends them.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pytest

from msgpack_reader_py import (
    AsyncStreamingReader,
    Item,
    StreamingReader,
    TruncatedStreamError,
    get_iter,
    pack_items,
)
from msgpack_reader_py._arrow.reader import BatchReader
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py._readers.values import ValueReader
from msgpack_reader_py.cli import main

from .helpers import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    POLL,
    TIMEOUT,
    Looks,
    Tail,
    append,
    as_rows,
    assert_located,
    caught_up,
    drain,
    is_open,
    replaced,
    rotate,
    wait_until,
)
from .reference import offsets_of

pytestmark = pytest.mark.usefixtures("short_pauses")
MODULE = [sys.executable, "-m", "msgpack_reader_py"]
HAS_PROC = os.path.isdir("/proc/self/fd")


class Lines:
    """A pipe (a child's stdout), read a line at a time with a deadline: a writer that hangs
    fails the test instead of hanging it."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._fd = stream.fileno()
        self._buffer = b""

    def _more(self, deadline: float) -> bytes | None:
        """The pipe's next bytes (``b""`` at its end), or ``None`` if none came in a while."""
        left = deadline - time.monotonic()
        assert left > 0, f"timed out reading lines; so far: {self._buffer!r}"
        ready, _, _ = select.select([self._fd], [], [], min(left, 1.0))
        return os.read(self._fd, 65536) if ready else None

    def take(self, count: int) -> list[bytes]:
        deadline = time.monotonic() + TIMEOUT
        while self._buffer.count(b"\n") < count:
            chunk = self._more(deadline)
            assert chunk != b"", f"the pipe closed before {count} lines: {self._buffer!r}"
            self._buffer += chunk or b""
        *lines, self._buffer = self._buffer.split(b"\n", count)
        return lines

    def rest(self) -> bytes:
        """What is left, up to the end of the pipe (its writer has exited)."""
        deadline = time.monotonic() + TIMEOUT
        while (chunk := self._more(deadline)) != b"":
            self._buffer += chunk or b""
        rest, self._buffer = self._buffer, b""
        return rest


def as_items(lines: list[bytes]) -> list[Item]:
    return [Item(**json.loads(line)) for line in lines]


# --- the other readers pass follow through ----------------------------------------------------


def test_batch_reader_follows_a_growing_file(tmp_path: Path, looks: Looks) -> None:
    """Batches of ``batch_size`` rows as the file grows; the rows of an unfinished batch are
    delivered when close() ends following."""
    items = list(get_iter(10))
    data = pack_items(items)
    cut = offsets_of(items)[6] + 7
    path = tmp_path / "rows.msgpack"
    path.write_bytes(data[:cut])
    reader = BatchReader(path, follow=True, batch_size=4)
    tail: Tail[pa.RecordBatch] = Tail(reader)
    caught_up(tail, 1, looks)
    append(path, data[cut:])
    caught_up(tail, 2, looks)
    reader.close()
    tail.ended_quietly()
    assert [batch.num_rows for batch in tail.got] == [4, 4, 2]
    rows = [row for batch in tail.got for row in batch.to_pylist()]
    assert rows == as_rows(items)
    assert not is_open(path)


def test_value_reader_follows_a_growing_file(tmp_path: Path, looks: Looks) -> None:
    items = list(get_iter(6))
    data = pack_items(items)
    cut = offsets_of(items)[3] + 11
    path = tmp_path / "values.msgpack"
    path.write_bytes(data[:cut])
    reader = ValueReader(path, follow=True)
    tail = Tail(reader)
    caught_up(tail, 3, looks)
    append(path, data[cut:])
    caught_up(tail, len(items), looks)
    reader.close()
    tail.ended_quietly()
    assert tail.got == [item.to_list() for item in items]
    assert not is_open(path)


def test_convert_follows_a_growing_file_into_a_stream_until_its_limit(tmp_path: Path) -> None:
    """convert(follow=True) writes each batch to the stream as it is read (a pipe's reader sees
    the first records before the rest exist), and stops at ``limit``."""
    items = list(get_iter(7))
    data = pack_items(items)
    cut = offsets_of(items)[5] + 9
    path = tmp_path / "convert.msgpack"
    path.write_bytes(data[: offsets_of(items)[3]])
    read_end, write_end = os.pipe()
    results: list[Any] = []

    def run() -> None:
        with os.fdopen(write_end, "wb", buffering=0) as out:
            try:
                results.append(convert(path, out, "jsonl", follow=True, limit=len(items)))
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                results.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        lines = Lines(pipe)
        assert as_items(lines.take(3)) == items[:3]
        append(path, data[offsets_of(items)[3] : cut])
        assert as_items(lines.take(2)) == items[3:5]
        append(path, data[cut:] + pack_items(get_iter(5, seed=8)))  # more than the limit
        assert as_items(lines.take(2)) == items[5:]
        thread.join(TIMEOUT)
        assert not thread.is_alive()
        assert lines.rest() == b""
    [result] = results
    assert not isinstance(result, BaseException), repr(result)
    assert result.records == len(items)
    assert not is_open(path)


def test_the_async_reader_follows_and_ends_on_close(tmp_path: Path) -> None:
    """AsyncStreamingReader(follow=True) sleeps its pauses in the event loop; close() from
    another task ends its ``async for``."""
    items = list(get_iter(6))
    data = pack_items(items)
    cut = offsets_of(items)[4] + 5
    path = tmp_path / "async.msgpack"
    path.write_bytes(data[:cut])

    async def until(condition: Callable[[], bool]) -> None:
        while not condition():
            await asyncio.sleep(POLL)

    async def follow_it() -> list[Item]:
        reader = AsyncStreamingReader(path, follow=True)
        got: list[Item] = []

        async def consume() -> None:
            async for item in reader:
                got.append(item)  # noqa: PERF401 - each record as it arrives

        task = asyncio.create_task(consume())
        await asyncio.wait_for(until(lambda: len(got) == 4), TIMEOUT)
        append(path, data[cut:])
        await asyncio.wait_for(until(lambda: len(got) == len(items)), TIMEOUT)
        reader.close()
        await asyncio.wait_for(task, TIMEOUT)
        return got

    assert asyncio.run(follow_it()) == items
    assert not is_open(path)


# --- the command line --------------------------------------------------------------------------


def _default_sigint() -> None:
    # A child started by a parent that ignores SIGINT (an xdist worker, a background job) would
    # ignore it too, and Ctrl-C would never reach it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def cli(*args: str) -> Iterator[tuple[subprocess.Popen[bytes], Lines, Lines]]:
    """``python -m msgpack_reader_py ARGS`` running, with its stdout and stderr read by line;
    killed on the way out if it is still running (a failed test)."""
    with subprocess.Popen(
        [*MODULE, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stderr is not None
            yield child, Lines(child.stdout), Lines(child.stderr)
        finally:
            if child.poll() is None:
                child.kill()


def interrupt(child: subprocess.Popen[bytes]) -> int:
    """Ctrl-C: SIGINT, then the exit status."""
    assert child.poll() is None, "the child ended before Ctrl-C"
    child.send_signal(signal.SIGINT)
    return child.wait(TIMEOUT)


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:  # a descriptor closed since it was listed
        return None


def wait_open_in(pid: int, path: Path) -> None:
    """Until the process ``pid`` has ``path`` open (seen in /proc)."""
    target = os.path.realpath(path)
    fds = f"/proc/{pid}/fd"

    def has_it_open() -> bool:
        return any(_link(os.path.join(fds, entry)) == target for entry in os.listdir(fds))

    wait_until(has_it_open, f"process {pid} to open {path}")


def test_dump_follow_shows_records_as_they_are_appended_and_ctrl_c_exits_130(
    tmp_path: Path,
) -> None:
    """``dump --follow``: each record appears on stdout once it is whole in the file, a record
    cut off waits for its end; Ctrl-C leaves every record read on stdout, exit 130, no
    traceback."""
    items = list(get_iter(9))
    data = pack_items(items)
    offsets = offsets_of(items)
    path = tmp_path / "dump.msgpack"
    path.write_bytes(data[: offsets[3]])
    with cli("dump", "--follow", "--type", "item", str(path)) as (child, out, err):
        assert as_items(out.take(3)) == items[:3]
        append(path, data[offsets[3] : offsets[5] + 20])  # two records and part of a third
        assert as_items(out.take(2)) == items[3:5]
        append(path, data[offsets[5] + 20 :])
        assert as_items(out.take(4)) == items[5:]
        status = interrupt(child)
        assert out.rest() == b""
        assert err.rest() == b""
    assert status == EXIT_INTERRUPTED


def test_dump_follow_notes_a_rotation_on_stderr(tmp_path: Path) -> None:
    """A file rotated under ``dump -f``: the new file's records follow, and stderr holds the
    note, nothing else."""
    old = list(get_iter(3, seed=1))
    new = list(get_iter(4, seed=2))
    path = tmp_path / "dump.msgpack"
    path.write_bytes(pack_items(old))
    with cli("dump", "-f", "--type", "item", str(path)) as (child, out, err):
        assert as_items(out.take(3)) == old
        rotate(path, pack_items(new))
        assert as_items(out.take(4)) == new
        assert err.take(1) == [f"note: {replaced(path)}".encode()]
        status = interrupt(child)
        assert out.rest() == b""
        assert err.rest() == b""
    assert status == EXIT_INTERRUPTED


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc to see the child open its file")
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_read_follow_prints_its_summary_on_ctrl_c_and_exits_130(
    tmp_path: Path, as_json: bool
) -> None:
    """``read --follow`` counts the records of each file it follows through two rotations;
    Ctrl-C prints the summary of them all and exits 130. (Each rotation's note shows that the
    file before it was read to its end.)"""
    items = list(get_iter(11))
    path = tmp_path / "read.msgpack"
    path.write_bytes(pack_items(items[:6]))
    flags = ["--json"] if as_json else []
    with cli("read", "--follow", *flags, str(path)) as (child, out, err):
        wait_open_in(child.pid, path)
        rotate(path, pack_items(items[6:]), ".1")
        assert err.take(1) == [f"note: {replaced(path)}".encode()]
        rotate(path, b"", ".2")
        assert err.take(1) == [f"note: {replaced(path)}".encode()]
        status = interrupt(child)
        lines = out.rest().decode().splitlines()
        assert err.rest() == b""
    assert status == EXIT_INTERRUPTED
    assert len(lines) == 1, lines
    if as_json:
        summary = json.loads(lines[0])
        assert summary["source"] == str(path)
        assert (summary["records"], summary["sum_of_ids"]) == (11, 55)
    else:
        assert lines[0].startswith("Read 11 messages, sum_of_ids is 55 in "), lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["read", "--follow", "A", "B"],
        ["dump", "-f", "A", "B"],
        ["read", "--follow", "-"],
        ["dump", "--follow", "-"],
        ["read", "-f", "A", "-"],
    ],
    ids=["read-two", "dump-two", "read-stdin", "dump-stdin", "read-file-and-stdin"],
)
def test_follow_takes_exactly_one_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """``--follow`` with two sources or stdin is a usage error: exit 2, one ``error:`` line."""
    for name in ("A", "B"):
        (tmp_path / name).write_bytes(pack_items(get_iter(2)))
    argv = [str(tmp_path / arg) if arg in ("A", "B") else arg for arg in argv]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith("error: --follow follows one file: give one SOURCE, a path"), err
    assert "Traceback" not in err


def test_follow_refuses_a_path_that_is_not_a_regular_file_as_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["dump", "-f", "/dev/null"])
    assert info.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: --follow: /dev/null is not a regular file")
    assert err.count("\n") == 1


def test_ctrl_c_with_a_broken_stdout_still_exits_130_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Broken:
        def flush(self) -> None:
            raise BrokenPipeError

        def fileno(self) -> int:
            raise ValueError("no descriptor")

    def interrupted(_: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(sys, "stdout", Broken())
    monkeypatch.setattr("msgpack_reader_py.cli._read.run_read", interrupted)
    assert main(["read", "x.msgpack"]) == EXIT_INTERRUPTED


def test_truncated_stream_error_is_still_raised_without_follow(tmp_path: Path) -> None:
    """The same half-written file, not followed, ends in a TruncatedStreamError: the waiting
    is follow's alone."""
    items = list(get_iter(3))
    path = tmp_path / "half.msgpack"
    path.write_bytes(pack_items(items)[: offsets_of(items)[2] + 10])
    got, error = drain(StreamingReader(path))
    assert got == items[:2]
    assert isinstance(error, TruncatedStreamError)
    assert_located(error, 2, offsets_of(items)[2])
