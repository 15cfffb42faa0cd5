"""Readers in threads: one reader per thread, many readers side by side.

A reader keeps all of its state (decoder, buffered bytes, anchor, counts) to itself, so readers
in different threads must not see each other's records. The readers here are kept mid-stream
together: every thread waits at a barrier after each ``STEP`` records, so all of them are
suspended inside their iteration at once, again and again, while the GIL hands over often.
"""

from __future__ import annotations

import inspect
import io
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from msgpack_reader_py import Item, StreamingReader, get_iter, pack_items

TIMEOUT = 30.0
STEP = 100  # records between two lockstep barriers
ROUNDS = 20  # lockstep barriers each thread passes: every stream has more records than this
READ_SIZE = 1021  # small, so that each reader reads (and switches threads) often
ROOT = Path(__file__).resolve().parent.parent

Opener = Callable[[], StreamingReader[Item]]


@pytest.fixture(autouse=True)
def frequent_thread_switches() -> Iterator[None]:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


class Consumer(threading.Thread):
    """Opens its reader once every consumer has started, reads it all, in lockstep with them."""

    def __init__(self, open_reader: Opener, start: threading.Barrier, step: threading.Barrier):
        super().__init__(daemon=True)
        self._open = open_reader
        self._start = start
        self._step = step
        self.records: list[Item] = []
        self.bytes_read = -1
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._start.wait(TIMEOUT)
            with self._open() as reader:
                for record in reader:
                    self.records.append(record)
                    if len(self.records) % STEP == 0 and len(self.records) <= STEP * ROUNDS:
                        self._step.wait(TIMEOUT)
                self.bytes_read = reader.bytes_read
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            self.error = exc
            self._start.abort()  # so that the other threads do not wait for this one
            self._step.abort()


def run_together(openers: list[Opener]) -> list[Consumer]:
    start = threading.Barrier(len(openers))
    step = threading.Barrier(len(openers))
    consumers = [Consumer(open_reader, start, step) for open_reader in openers]
    for consumer in consumers:
        consumer.start()
    for consumer in consumers:
        consumer.join(TIMEOUT)
        assert not consumer.is_alive(), "a reader thread did not finish"
    errors = [c.error for c in consumers if c.error is not None]
    # The first failure, not the BrokenBarrierError it caused in the others.
    for error in sorted(errors, key=lambda e: isinstance(e, threading.BrokenBarrierError)):
        raise error
    return consumers


def test_four_readers_over_four_kinds_of_source_run_together(tmp_path: Path) -> None:
    expected = {
        "bytes": list(get_iter(2500, seed=1)),
        "file": list(get_iter(3001, seed=2)),
        "BytesIO": list(get_iter(2750, seed=3)),
        "pipe": list(get_iter(4000, seed=4)),
    }
    data = {kind: pack_items(records) for kind, records in expected.items()}
    assert all(len(records) > STEP * ROUNDS for records in expected.values())
    path = tmp_path / "items.msgpack"
    path.write_bytes(data["file"])
    read_fd, write_fd = os.pipe()

    def write_pipe() -> None:
        with os.fdopen(write_fd, "wb", buffering=0) as out:
            payload = memoryview(data["pipe"])
            for begin in range(0, len(payload), 4093):
                out.write(payload[begin : begin + 4093])

    writer = threading.Thread(target=write_pipe, daemon=True)
    writer.start()
    with os.fdopen(read_fd, "rb") as pipe:
        openers: list[Opener] = [
            lambda: StreamingReader(data["bytes"], read_size=READ_SIZE),
            lambda: StreamingReader(path, read_size=READ_SIZE),
            lambda: StreamingReader(io.BytesIO(data["BytesIO"]), read_size=READ_SIZE),
            lambda: StreamingReader(pipe, read_size=READ_SIZE),
        ]
        consumers = run_together(openers)
    writer.join(TIMEOUT)
    assert not writer.is_alive()
    for kind, consumer in zip(expected, consumers, strict=True):
        assert consumer.records == expected[kind], kind
        assert consumer.bytes_read == len(data[kind]), kind


def test_four_readers_over_one_shared_bytes_object_run_together() -> None:
    """Readers share nothing but the (immutable) source: each yields the whole stream."""
    expected = list(get_iter(3000, seed=5))
    data = pack_items(expected)

    def opener(read_size: int) -> Opener:
        return lambda: StreamingReader(data, read_size=read_size)

    consumers = run_together([opener(size) for size in (1021, 4096, 777, 65536)])
    for consumer in consumers:
        assert consumer.records == expected
        assert consumer.bytes_read == len(data)


def test_a_reader_is_documented_as_belonging_to_one_thread() -> None:
    """Sharing one reader between threads is unsupported, and the documentation says so."""
    sentence = "A reader belongs to one thread, except that"
    docstring = inspect.getdoc(StreamingReader)
    assert docstring is not None
    assert sentence in " ".join(docstring.split())
    readme = (ROOT / "docs" / "reading.md").read_text(encoding="utf-8")
    assert sentence in " ".join(readme.split())
