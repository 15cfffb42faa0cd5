"""Following a growing file (``follow=True``, ``read --follow``, ``dump --follow``), as ``tail -F``.

A follower reads a file that another process is still writing: it must hand over every record
exactly once and in order, however the writer's pieces cut the records; wait at the end of the
file (and inside a record cut off there) without spinning; end quietly, its file closed, when
``close()`` comes from another thread; and, when the file is rotated (renamed and created again,
or truncated in place), read the new file from its start with a note that says so, its records
and errors then located in the new file. Broken data still fails exactly where the ordinary
reader fails. The command line's ``--follow`` is run in real child processes, ended by SIGINT as
a user's Ctrl-C ends it.

The follower's pauses are shortened here (``LONGEST_WAIT``) to keep the tests quick; the test of
an idle follower's cost keeps the real ones. Every wait for something to happen is bounded by
``TIMEOUT``, a guard against a hang, never a measure of speed.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import logging
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

import msgpack
import pyarrow as pa
import pytest

from msgpack_reader_py import (
    AsyncStreamingReader,
    DecodeError,
    Item,
    ReaderError,
    RecordError,
    StreamingReader,
    TruncatedStreamError,
    follow,
    get_iter,
    item_to_list,
    pack_items,
    sources,
)
from msgpack_reader_py.arrow import BatchReader
from msgpack_reader_py.cli import main
from msgpack_reader_py.convert import convert
from msgpack_reader_py.values import ValueReader

from .helpers import as_rows, assert_located, drain, is_open
from .reference import offsets_of

T = TypeVar("T")

TIMEOUT = 30.0
POLL = 0.005  # seconds between two checks of a condition being waited for
DEFAULT_LONGEST_WAIT = follow.LONGEST_WAIT  # as shipped, before any test shortens it
MODULE = [sys.executable, "-m", "msgpack_reader_py"]
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
LOGGER = "msgpack_reader_py"
HAS_PROC = os.path.isdir("/proc/self/fd")

# Appends stdin to the file argv[1] in pieces of the sizes argv[2] lists, a short pause after
# some of them, each piece one unbuffered write: what a slow writer of records leaves in a file.
WRITER = """
import sys, time
path, sizes = sys.argv[1], [int(size) for size in sys.argv[2].split(",")]
data = sys.stdin.buffer.read()
at = 0
with open(path, "ab", buffering=0) as out:
    for number, size in enumerate(sizes):
        out.write(data[at : at + size])
        at += size
        time.sleep(0.001 * (number % 3))
assert at == len(data)
"""


# --- helpers -------------------------------------------------------------------------------------


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it holds; fail, naming ``what`` was awaited, after TIMEOUT."""
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(POLL)


def append(path: Path, data: bytes) -> None:
    with open(path, "ab", buffering=0) as out:
        out.write(data)


class Tail(threading.Thread, Generic[T]):
    """Iterates a reader in a thread of its own, as a follower's user does; keeps what it got
    and how its ``for`` loop ended: normally (``ended``) or with ``error``."""

    def __init__(self, reader: Iterable[T]) -> None:
        super().__init__(daemon=True)
        self._reader = reader
        self.got: list[T] = []
        self.error: BaseException | None = None
        self.ended = False
        self.start()

    def run(self) -> None:
        try:
            for record in self._reader:
                self.got.append(record)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            self.error = exc
        else:
            self.ended = True

    def wait_for(self, count: int) -> None:
        """Until ``count`` records (or batches) have arrived; fails if the loop ended first."""
        wait_until(lambda: len(self.got) >= count or not self.is_alive(), f"{count} records")
        assert self.error is None, repr(self.error)
        assert len(self.got) >= count, f"the loop ended after {len(self.got)} of {count}"

    def finish(self) -> None:
        """Until the thread has ended (a hang fails the test)."""
        self.join(TIMEOUT)
        assert not self.is_alive(), "the follower's thread did not end"

    def ended_quietly(self) -> None:
        self.finish()
        assert self.error is None, repr(self.error)
        assert self.ended


class Looks:
    """Counts the followers' looks at their file (each a check for truncation or replacement,
    made when the file has nothing more to read). A look begun after every record expected has
    arrived shows the follower waiting inside the reader: where ``close()`` from another thread
    is documented to end it."""

    def __init__(self) -> None:
        self.count = 0

    def wait_next(self) -> None:
        then = self.count
        wait_until(lambda: self.count > then, "the follower to look at its file again")


@pytest.fixture(autouse=True)
def short_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pauses of at most 20 ms instead of 250 ms, so that the tests wait less."""
    monkeypatch.setattr(follow, "LONGEST_WAIT", 0.02)


@pytest.fixture
def looks(monkeypatch: pytest.MonkeyPatch) -> Looks:
    counter = Looks()
    original = follow.Follower.changed

    def counted(self: follow.Follower, stream: IO[bytes]) -> str | None:
        counter.count += 1
        return original(self, stream)

    monkeypatch.setattr(follow.Follower, "changed", counted)
    return counter


def caught_up(tail: Tail[Any], count: int, looks: Looks) -> None:
    """Until ``count`` records have arrived and the follower is waiting for more."""
    tail.wait_for(count)
    looks.wait_next()


def notes(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The library's notes so far: the warnings of its logger, from any thread."""
    found = [r for r in caplog.records if r.name == LOGGER]
    assert all(r.levelno == logging.WARNING for r in found)
    return [r.getMessage() for r in found]


def replaced(path: Path) -> str:
    return f"{path} was replaced by another file: reading it again from its start"


def dropped(index: int, offset: int, size: int) -> str:
    return f"; the unfinished record {index} at byte {offset} ({size} bytes of it) is dropped"


def rotate(path: Path, data: bytes, suffix: str = ".1") -> Path:
    """Log rotation by renaming: ``path`` becomes ``path`` + ``suffix``, and a new file with
    ``data`` appears at ``path`` whole (written beside it, then renamed into place)."""
    rotated = path.with_name(path.name + suffix)
    os.rename(path, rotated)
    fresh = path.with_name(path.name + ".new")
    fresh.write_bytes(data)
    os.rename(fresh, path)
    return rotated


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


# --- a writer process, followed ----------------------------------------------------------------


def test_a_writer_process_appending_in_pieces_is_followed_record_by_record(
    tmp_path: Path, looks: Looks
) -> None:
    """Every record a writer process appends arrives once, in order, however its writes cut the
    records; close() from the main thread then ends the follower's loop, its file closed."""
    items = list(get_iter(300, seed=11))
    data = pack_items(items)
    starts = set(offsets_of(items))
    rng = random.Random(5)
    sizes: list[int] = []
    while sum(sizes) < len(data):
        sizes.append(min(rng.randint(1, 150), len(data) - sum(sizes)))
    ends = [sum(sizes[: n + 1]) for n in range(len(sizes))]
    assert sum(end not in starts for end in ends) >= 20  # many writes end inside a record
    path = tmp_path / "live.msgpack"
    path.write_bytes(b"")
    reader = StreamingReader(path, follow=True)
    tail = Tail(reader)
    writer = subprocess.run(
        [sys.executable, "-c", WRITER, str(path), ",".join(map(str, sizes))],
        input=data,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert (writer.returncode, writer.stderr) == (0, b"")
    caught_up(tail, len(items), looks)
    assert tail.is_alive()  # the writer is gone, the file still followed
    reader.close()
    tail.ended_quietly()
    assert tail.got == items
    assert reader.bytes_read == len(data)
    assert reader.closed
    assert not is_open(path)


def test_a_record_cut_off_at_the_end_waits_for_the_rest_of_its_bytes(
    tmp_path: Path, looks: Looks
) -> None:
    """A record half written is not a truncated stream: the follower looks again and again,
    then hands it over once its last byte is there."""
    items = list(get_iter(3))
    data = pack_items(items)
    cut = offsets_of(items)[2] + 10
    path = tmp_path / "half.msgpack"
    path.write_bytes(data[:cut])
    with StreamingReader(path, follow=True) as reader:
        tail = Tail(reader)
        caught_up(tail, 2, looks)
        looks.wait_next()  # and again: still waiting, no TruncatedStreamError
        assert tail.is_alive()
        assert tail.got == items[:2]
        append(path, data[cut:])
        caught_up(tail, 3, looks)
        assert tail.got == items
        assert reader.bytes_read == len(data)
    tail.ended_quietly()
    assert not is_open(path)


# --- rotation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("partial", [0, 20], ids=["at-a-boundary", "inside-a-record"])
def test_a_file_renamed_and_created_again_is_read_from_its_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, looks: Looks, partial: int
) -> None:
    """Rotation by rename: the old file is read to its end, then the new one from its start,
    with a note that names a dropped unfinished record; counts restart in the new file."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    old = list(get_iter(5, seed=1))
    new = list(get_iter(7, seed=2))
    old_data = pack_items(old)
    tail_bytes = pack_items(list(get_iter(1, seed=3)))[:partial]
    path = tmp_path / "app.msgpack"
    path.write_bytes(old_data + tail_bytes)
    reader = StreamingReader(path, follow=True)
    tail = Tail(reader)
    caught_up(tail, len(old), looks)
    assert notes(caplog) == []
    rotated = rotate(path, pack_items(new))
    caught_up(tail, len(old) + len(new), looks)
    assert tail.got == old + new
    lost = dropped(len(old), len(old_data), partial) if partial else ""
    assert notes(caplog) == [replaced(path) + lost]
    assert reader.bytes_read == len(pack_items(new))  # of the file being read
    assert not is_open(rotated)  # the old file was closed when the new one was opened
    reader.close()
    tail.ended_quietly()
    assert not is_open(path)


def test_an_error_in_the_new_file_is_located_from_its_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, looks: Looks
) -> None:
    """After a rotation, broken data is named by its index and offset in the new file, as a
    reader of that file alone names it."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    old = list(get_iter(6, seed=1))
    new = list(get_iter(4, seed=2))
    new_data = pack_items(new) + b"\xc1" + pack_items(new)
    path = tmp_path / "app.msgpack"
    path.write_bytes(pack_items(old))
    reader = StreamingReader(path, follow=True)
    tail = Tail(reader)
    caught_up(tail, len(old), looks)
    rotated = rotate(path, new_data)
    tail.finish()
    assert tail.got == old + new
    error = tail.error
    assert isinstance(error, DecodeError)
    assert_located(error, len(new), len(pack_items(new)))
    assert error.source == str(path)
    _, alone = drain(StreamingReader(new_data))
    assert (type(alone), alone.index, alone.offset, alone.reason) == (
        DecodeError,
        error.index,
        error.offset,
        error.reason,
    )
    assert notes(caplog) == [replaced(path)]
    assert not is_open(path)
    assert not is_open(rotated)


def test_a_path_renamed_away_is_waited_for_while_the_old_file_is_read_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, looks: Looks
) -> None:
    """Between the rename and the new file, the follower reads on from the file it has open
    (records still appended to it arrive); then it moves to the new file."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    items = list(get_iter(12, seed=4))
    data = pack_items(items)
    middle = offsets_of(items)[5]
    path = tmp_path / "app.msgpack"
    path.write_bytes(data[:middle])
    reader = StreamingReader(path, follow=True)
    tail = Tail(reader)
    caught_up(tail, 5, looks)
    rotated = path.with_name("app.msgpack.1")
    os.rename(path, rotated)
    looks.wait_next()
    looks.wait_next()  # it has looked at a path naming no file, and goes on waiting
    assert tail.is_alive()
    append(rotated, data[middle:])  # the writer has not reopened its file yet
    caught_up(tail, len(items), looks)
    assert notes(caplog) == []
    new = list(get_iter(3, seed=5))
    path.write_bytes(pack_items(new))
    caught_up(tail, len(items) + len(new), looks)
    assert tail.got == items + new
    assert notes(caplog) == [replaced(path)]
    reader.close()
    tail.ended_quietly()
    assert not is_open(path)
    assert not is_open(rotated)


def test_a_file_truncated_then_renamed_away_is_read_again_through_its_open_handle(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, looks: Looks
) -> None:
    """No file at the path to reopen: the truncated file still open is read from its start."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    items = list(get_iter(6, seed=2))
    path = tmp_path / "app.msgpack"
    path.write_bytes(pack_items(items))
    reader = StreamingReader(path, follow=True)
    tail = Tail(reader)
    caught_up(tail, len(items), looks)
    with open(path, "r+b") as log:
        log.truncate(0)
    rotated = path.with_name("app.msgpack.1")
    os.rename(path, rotated)
    append(rotated, pack_items(items[:2]))
    caught_up(tail, len(items) + 2, looks)
    assert tail.got == items + items[:2]
    assert len(notes(caplog)) == 1
    assert notes(caplog)[0].startswith(f"{path} was truncated (to ")
    reader.close()
    tail.ended_quietly()
    assert not is_open(rotated)


@pytest.mark.parametrize("partial", [0, 25], ids=["at-a-boundary", "inside-a-record"])
def test_a_file_truncated_in_place_is_read_again_from_its_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, looks: Looks, partial: int
) -> None:
    """copytruncate rotation: the file shrinks under the follower, which notes it and reads the
    records written after it from the file's start, indexes counted from 0 again."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    old = list(get_iter(6, seed=1))
    new = list(get_iter(3, seed=2))
    old_data = pack_items(old)
    read_before = len(old_data) + partial
    path = tmp_path / "app.msgpack"
    path.write_bytes(old_data + pack_items(list(get_iter(1, seed=3)))[:partial])
    reader = StreamingReader(path, follow=True, read_size=64)
    tail = Tail(reader)
    caught_up(tail, len(old), looks)
    os.truncate(path, 0)
    wait_until(lambda: notes(caplog) != [], "the note on the truncation")
    lost = dropped(len(old), len(old_data), partial) if partial else ""
    assert notes(caplog) == [
        f"{path} was truncated (to 0 bytes, after {read_before} were read): "
        f"reading it again from its start{lost}"
    ]
    append(path, pack_items(new) + b"\xc1")
    tail.finish()
    assert tail.got == old + new
    assert isinstance(tail.error, DecodeError)
    assert_located(tail.error, len(new), len(pack_items(new)))
    assert len(notes(caplog)) == 1
    assert not is_open(path)


# --- close() from another thread ---------------------------------------------------------------


@pytest.mark.parametrize("partial", [0, 30], ids=["at-a-boundary", "inside-a-record"])
def test_close_from_another_thread_ends_a_waiting_follower_quietly(
    tmp_path: Path, looks: Looks, partial: int
) -> None:
    """close() from another thread while the follower waits, at a record boundary or with half
    a record read: its ``for`` loop ends without an error, and the file is closed."""
    items = list(get_iter(4))
    path = tmp_path / "idle.msgpack"
    path.write_bytes(pack_items(items) + pack_items(list(get_iter(1, seed=9)))[:partial])
    reader = StreamingReader(path, follow=True)
    tail = Tail(reader)
    caught_up(tail, len(items), looks)
    assert is_open(path)
    reader.close()
    reader.close()  # twice is harmless
    tail.ended_quietly()
    assert tail.got == items
    assert reader.closed
    assert not is_open(path)


def test_close_wakes_a_follower_in_the_middle_of_a_long_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, looks: Looks
) -> None:
    """The pause is an Event wait that close() cuts short: with pauses of an hour, the
    follower still ends (well within the test's time limit)."""
    monkeypatch.setattr(follow, "FIRST_WAIT", 3600.0)
    monkeypatch.setattr(follow, "LONGEST_WAIT", 3600.0)
    items = list(get_iter(2))
    path = tmp_path / "idle.msgpack"
    path.write_bytes(pack_items(items))
    reader = StreamingReader(path, follow=True)
    tail = Tail(reader)
    # Its first look at the file comes after the records, right before the hour-long pause.
    wait_until(lambda: looks.count >= 1, "the follower's first look at its file")
    assert tail.got == items
    reader.close()
    tail.ended_quietly()
    assert not is_open(path)


def test_a_follower_in_a_with_block_closed_from_another_thread(
    tmp_path: Path, looks: Looks
) -> None:
    """The reading thread's own ``with`` block closes the reader again on the way out: fine."""
    items = list(get_iter(3))
    path = tmp_path / "idle.msgpack"
    path.write_bytes(pack_items(items))
    reader = StreamingReader(path, follow=True)
    got: list[Item] = []

    def read() -> None:
        with reader:
            got.extend(reader)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    wait_until(lambda: len(got) == len(items), "the records")
    looks.wait_next()
    reader.close()
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert got == items
    assert not is_open(path)


def test_close_from_another_thread_while_the_reader_is_busy_with_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() from another thread while the reading thread is busy with a record (between two
    steps of the reader, not waiting in it) must end the loop without an error too. The race is
    made certain: closing the file waits until the reading thread has stepped the reader."""
    item = next(get_iter(1))
    path = tmp_path / "one.msgpack"
    path.write_bytes(pack_items([item]))
    closing = threading.Event()
    stepped = threading.Event()
    main_thread = threading.current_thread()
    original = sources.Chunks.close

    def slow_close(self: Any) -> None:
        if threading.current_thread() is main_thread:
            closing.set()
            stepped.wait(2.0)
        original(self)

    monkeypatch.setattr(sources.Chunks, "close", slow_close)
    reader = StreamingReader(path, follow=True)
    got: list[Item] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for record in reader:
                got.append(record)
                closing.wait(2.0)  # busy with the record while close() runs
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)
        finally:
            stepped.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    wait_until(lambda: got != [], "the record")
    reader.close()
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert got == [item]
    assert errors == []


def test_close_from_another_thread_ends_a_follower_that_is_behind(tmp_path: Path) -> None:
    """Iteration ends when close() is called: a follower still reading a backlog does not read
    on to the end of the file first. (The first records' mapper holds the reading thread inside
    the reader until close() has returned.)"""
    items = list(get_iter(2000))
    path = tmp_path / "backlog.msgpack"
    path.write_bytes(pack_items(items))
    inside = threading.Event()
    closed = threading.Event()

    def held(value: Any) -> Any:
        inside.set()
        closed.wait(TIMEOUT)
        return value

    reader = StreamingReader(path, follow=True, mapper=held, read_size=256)
    tail = Tail(reader)
    assert inside.wait(TIMEOUT)
    reader.close()
    closed.set()
    tail.ended_quietly()
    assert len(tail.got) < 50  # a read's records (about 5), not the 2000 of the file


# --- broken data, skip mode, refused sources --------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "kind"),
    [(b"\xc1", DecodeError), (msgpack.packb("not an Item"), RecordError)],
    ids=["not-msgpack", "not-an-item"],
)
def test_broken_bytes_appended_fail_where_the_plain_reader_fails(
    tmp_path: Path, looks: Looks, bad: bytes, kind: type[ReaderError]
) -> None:
    """Bytes appended that are not a record raise the located error the ordinary reader raises
    on the same file, after the good records; the file is then closed."""
    items = list(get_iter(5))
    good = pack_items(items)
    path = tmp_path / "broken.msgpack"
    path.write_bytes(good[:100])
    tail = Tail(StreamingReader(path, follow=True))
    caught_up(tail, 1, looks)
    append(path, good[100:])
    caught_up(tail, len(items), looks)
    append(path, bad + good)
    tail.finish()
    assert tail.got == items
    error = tail.error
    assert isinstance(error, kind)
    assert_located(error, len(items), len(good))
    assert error.source == str(path)
    plain, expected = drain(StreamingReader(path))
    assert plain == items
    assert (type(error), error.index, error.offset, error.reason, error.source) == (
        type(expected),
        expected.index,
        expected.offset,
        expected.reason,
        expected.source,
    )
    assert not is_open(path)


def test_skip_mode_passes_over_records_that_are_not_items_while_following(
    tmp_path: Path, looks: Looks
) -> None:
    """``on_error="skip"`` works as it does on a whole file: the bad record is counted and
    kept, located, and the records after it arrive."""
    items = list(get_iter(6))
    first, second = pack_items(items[:3]), pack_items(items[3:])
    bad = msgpack.packb({"id": "not an int"})
    path = tmp_path / "skip.msgpack"
    path.write_bytes(first)
    reader = StreamingReader(path, follow=True, on_error="skip")
    tail = Tail(reader)
    caught_up(tail, 3, looks)
    append(path, bad + second)
    caught_up(tail, len(items), looks)
    assert tail.got == items
    assert reader.skipped == 1
    [error] = reader.errors
    assert isinstance(error, RecordError)
    assert_located(error, 3, len(first))
    assert error.source == str(path)
    reader.close()
    tail.ended_quietly()


@pytest.mark.parametrize(
    "source",
    [b"", bytearray(), memoryview(b""), io.BytesIO()],
    ids=["bytes", "bytearray", "memoryview", "BytesIO"],
)
def test_follow_refuses_a_source_that_is_not_a_path(source: Any) -> None:
    """Only a path can be followed: anything else is a TypeError that says so."""
    with pytest.raises(TypeError, match=r"follow=True follows a file by its path"):
        StreamingReader(source, follow=True)


def test_follow_refuses_an_open_file(tmp_path: Path) -> None:
    path = tmp_path / "a.msgpack"
    path.write_bytes(pack_items(get_iter(2)))
    with open(path, "rb") as stream, pytest.raises(TypeError, match=r"by its path"):
        StreamingReader(stream, follow=True)


def test_follow_refuses_a_path_that_is_not_a_regular_file() -> None:
    with pytest.raises(ValueError, match=r"follow=True: /dev/null is not a regular file"):
        StreamingReader("/dev/null", follow=True)


def test_a_followed_gzip_file_is_read_as_it_is_and_fails_naming_gzip(tmp_path: Path) -> None:
    """No decompression while following: the first record fails, the error says gzip."""
    path = tmp_path / "items.msgpack.gz"
    path.write_bytes(gzip.compress(pack_items(get_iter(20))))
    reader = StreamingReader(path, follow=True)
    got, error = drain(reader)
    assert got == []
    assert error.index == 0
    assert error.offset == 0
    assert "gzip-compressed data, not decompressed (a followed file is read as it is)" in str(error)
    assert error.source == str(path)
    assert reader.compression is None
    assert not is_open(path)


# --- waiting costs nothing ---------------------------------------------------------------------


def test_an_idle_follower_does_not_spin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, looks: Looks
) -> None:
    """With the shipped pauses, half a second of following a file that does not grow costs a
    handful of looks at it and next to no CPU time; the follower still sees what comes next."""
    monkeypatch.setattr(follow, "LONGEST_WAIT", DEFAULT_LONGEST_WAIT)
    items = list(get_iter(3))
    path = tmp_path / "idle.msgpack"
    path.write_bytes(pack_items(items[:2]))
    reader = StreamingReader(path, follow=True)
    tail = Tail(reader)
    caught_up(tail, 2, looks)
    looks_before = looks.count
    cpu_before = time.process_time()
    began = time.monotonic()
    time.sleep(0.5)
    elapsed = time.monotonic() - began
    cpu = time.process_time() - cpu_before
    idle_looks = looks.count - looks_before
    assert cpu < 0.2, f"{cpu:.3f} s of CPU in {elapsed:.3f} s of waiting"
    # The pauses double up to LONGEST_WAIT: a few short ones, then four looks a second.
    assert 1 <= idle_looks <= 8 + elapsed / DEFAULT_LONGEST_WAIT, idle_looks
    append(path, pack_items(items[2:]))
    tail.wait_for(3)
    assert tail.got == items
    reader.close()
    tail.ended_quietly()


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
    assert tail.got == [item_to_list(item) for item in items]
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
    monkeypatch.setattr("msgpack_reader_py.cli.read.run_read", interrupted)
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
