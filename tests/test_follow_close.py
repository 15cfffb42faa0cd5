"""Ending a follower with ``close()`` from another thread: it ends quietly, at once, its file
closed, whether it waits at the end of the file, inside a record cut off there, or reads.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from msgpack_reader_py import Item, StreamingReader, get_iter, pack_items
from msgpack_reader_py._stream import follow, sources

from .helpers import (
    TIMEOUT,
    Looks,
    Tail,
    caught_up,
    is_open,
    wait_until,
)

pytestmark = pytest.mark.usefixtures("short_pauses")


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
