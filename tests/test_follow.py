"""Following a growing file (``follow=True``), as ``tail -F``: a writer process followed, rotation,
broken data, and waiting that costs nothing.

A follower reads a file that another process is still writing: it must hand over every record
exactly once and in order, however the writer's pieces cut the records; wait at the end of the
file (and inside a record cut off there) without spinning; and, when the file is rotated (renamed
and created again, or truncated in place), read the new file from its start with a note that
says so, its records and errors then located in the new file. Broken data still fails exactly
where the ordinary reader fails.

The follower's pauses are shortened here (``short_pauses``) to keep the tests quick; the test of
an idle follower's cost keeps the real ones. Every wait for something to happen is bounded by
``TIMEOUT``, a guard against a hang, never a measure of speed.
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest

from msgpack_reader_py import (
    DecodeError,
    ReaderError,
    RecordError,
    StreamingReader,
    get_iter,
    pack_items,
)
from msgpack_reader_py._stream import follow

from .helpers import (
    TIMEOUT,
    Looks,
    Tail,
    append,
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

DEFAULT_LONGEST_WAIT = follow.LONGEST_WAIT  # as shipped, before any test shortens it
LOGGER = "msgpack_reader_py"
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


def notes(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The library's notes so far: the warnings of its logger, from any thread."""
    found = [r for r in caplog.records if r.name == LOGGER]
    assert all(r.levelno == logging.WARNING for r in found)
    return [r.getMessage() for r in found]


def dropped(index: int, offset: int, size: int) -> str:
    return f"; the unfinished record {index} at byte {offset} ({size} bytes of it) is dropped"


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
