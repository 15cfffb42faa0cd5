"""StreamingReader end to end on real sources: files, pipes, sockets, gzip, a large stream."""

from __future__ import annotations

import errno
import gc
import gzip
import os
import socket
import struct
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import pytest

from msgpack_reader_py import Item, ReaderError, StreamingReader, pack_items
from tests.reference import (
    REFERENCE_MESSAGES,
    REFERENCE_SIZE,
    REFERENCE_SUM_OF_IDS,
)

TIMEOUT = 10.0
WRITE_SIZE = 4093  # a prime, so writes end inside records


class Worker(threading.Thread):
    """A daemon thread that keeps the exception its target raised, for the test to re-raise."""

    def __init__(self, target: Callable[[], None]) -> None:
        super().__init__(daemon=True)
        self._work = target
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._work()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            self.error = exc

    def finish(self) -> None:
        self.join(TIMEOUT)
        assert not self.is_alive(), "the writer thread did not finish"
        if self.error is not None:
            raise self.error


def chunks(data: bytes, size: int = WRITE_SIZE) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


# --- files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("as_type", [str, Path], ids=["str", "Path"])
def test_file_path(
    reference_path: Path, reference_items: list[Item], as_type: Callable[[Path], Any]
) -> None:
    with StreamingReader(as_type(reference_path)) as reader:
        assert reader.name == str(reference_path)
        items = list(reader)
        assert reader.bytes_read == REFERENCE_SIZE
    assert reader.closed
    assert items == reference_items


def test_open_file_stays_open(reference_path: Path, reference_items: list[Item]) -> None:
    with open(reference_path, "rb") as stream:
        with StreamingReader(stream) as reader:
            items = list(reader)
            assert reader.bytes_read == REFERENCE_SIZE
        assert reader.closed
        assert not stream.closed  # the reader closes only what it opened
        assert stream.read() == b""
    assert items == reference_items


def test_open_file_from_the_middle(
    reference_path: Path, reference_items: list[Item], reference_bytes: bytes
) -> None:
    offset = len(pack_items(reference_items[:100]))
    with open(reference_path, "rb") as stream:
        stream.seek(offset)
        with StreamingReader(stream) as reader:
            items = list(reader)
            assert reader.bytes_read == len(reference_bytes) - offset
    assert items == reference_items[100:]


def test_unbuffered_file(reference_path: Path, reference_items: list[Item]) -> None:
    with open(reference_path, "rb", buffering=0) as stream:
        assert list(StreamingReader(stream, read_size=1000)) == reference_items


def test_gzip_file(tmp_path: Path, reference_bytes: bytes, reference_items: list[Item]) -> None:
    path = tmp_path / "reference.msgpack.gz"
    with gzip.open(path, "wb") as out:
        out.write(reference_bytes)
    assert path.stat().st_size < REFERENCE_SIZE
    with gzip.open(path, "rb") as stream, StreamingReader(stream) as reader:
        items = list(reader)
        assert reader.bytes_read == REFERENCE_SIZE
    assert items == reference_items


def million_records(reference_items: list[Item]) -> bytes:
    """1,000,000 records, ids 0 to 999,999, the other fields the reference items' in turn.

    Each record is put together from its packed id and a packed tail of seven fields (many
    times quicker than drawing a million items): an array of 8 is 0x98, then its elements.
    """
    tails = [msgpack.packb(item.to_list()[1:]) for item in reference_items]
    assert all(tail[:1] == b"\x97" for tail in tails)  # a fixarray of 7, dropped below
    pack = msgpack.Packer().pack
    count = len(tails)
    return b"".join([b"\x98" + pack(i) + tails[i % count][1:] for i in range(1_000_000)])


def test_one_million_records(tmp_path: Path, reference_items: list[Item]) -> None:
    path = tmp_path / "million.msgpack"
    data = million_records(reference_items)
    written = path.write_bytes(data)
    assert path.stat().st_size == written == len(data)
    final = [999_999, *reference_items[9_999].to_list()[1:]]
    assert data.endswith(msgpack.packb(final))
    count = 0
    sum_of_ids = 0
    last: Item | None = None
    with StreamingReader(path) as reader:
        for item in reader:
            count += 1
            sum_of_ids += item.id
            last = item
        assert reader.bytes_read == written
    assert count == 1_000_000
    assert sum_of_ids == 499999500000
    assert last is not None
    assert last.id == 999_999
    assert last == Item.from_list(final)


# --- pipes and sockets ---------------------------------------------------------------------------


def test_os_pipe(reference_bytes: bytes, reference_items: list[Item]) -> None:
    read_fd, write_fd = os.pipe()

    def write() -> None:
        with os.fdopen(write_fd, "wb") as out:
            for chunk in chunks(reference_bytes):
                out.write(chunk)
                out.flush()

    writer = Worker(write)
    writer.start()
    with os.fdopen(read_fd, "rb") as stream:
        items = list(StreamingReader(stream))
    writer.finish()
    assert items == reference_items


def test_socketpair(reference_bytes: bytes, reference_items: list[Item]) -> None:
    reader_sock, writer_sock = socket.socketpair()
    reader_sock.settimeout(TIMEOUT)
    writer_sock.settimeout(TIMEOUT)

    def write() -> None:
        with writer_sock:
            for chunk in chunks(reference_bytes):
                writer_sock.sendall(chunk)
            writer_sock.shutdown(socket.SHUT_WR)

    writer = Worker(write)
    writer.start()
    with reader_sock, reader_sock.makefile("rb") as stream, StreamingReader(stream) as reader:
        items = list(reader)
        assert reader.bytes_read == REFERENCE_SIZE
    writer.finish()
    assert items == reference_items


def open_socket_stream() -> tuple[BinaryIO, Callable[[bytes], None], Callable[[], None]]:
    reader_sock, writer_sock = socket.socketpair()
    reader_sock.settimeout(TIMEOUT)
    writer_sock.settimeout(TIMEOUT)
    stream = reader_sock.makefile("rb")
    reader_sock.close()  # the file object keeps the connection open

    def close_writer() -> None:
        writer_sock.shutdown(socket.SHUT_WR)
        writer_sock.close()

    return stream, writer_sock.sendall, close_writer


def open_pipe_stream() -> tuple[BinaryIO, Callable[[bytes], None], Callable[[], None]]:
    read_fd, write_fd = os.pipe()
    out = os.fdopen(write_fd, "wb", buffering=0)

    def send(data: bytes) -> None:
        out.write(data)

    return os.fdopen(read_fd, "rb"), send, out.close


@pytest.mark.parametrize(
    "open_stream", [open_socket_stream, open_pipe_stream], ids=["socket", "pipe"]
)
def test_a_record_is_yielded_as_soon_as_it_arrives(
    open_stream: Callable[[], tuple[BinaryIO, Callable[[bytes], None], Callable[[], None]]],
    reference_bytes: bytes,
    reference_items: list[Item],
) -> None:
    # The writer sends three records and waits, with the stream open, until the reader has
    # them. A reader that waited for a full buffer or for the end of the stream would not get
    # them until the writer gives up waiting, and the test fails instead of hanging.
    stream, send, close_writer = open_stream()
    head = pack_items(reference_items[:3])
    received_three = threading.Event()
    waited: list[bool] = []

    def write() -> None:
        try:
            send(head)
            waited.append(received_three.wait(TIMEOUT))
            for chunk in chunks(reference_bytes[len(head) :]):
                send(chunk)
        finally:
            close_writer()

    writer = Worker(write)
    writer.start()
    items: list[Item] = []
    with stream, StreamingReader(stream) as reader:
        for item in reader:
            items.append(item)
            if len(items) == 3:
                assert not waited, "the writer stopped waiting before the third record arrived"
                received_three.set()
    writer.finish()
    assert waited == [True]
    assert items == reference_items


@pytest.mark.parametrize("tail", [0, 20], ids=["on a record boundary", "inside a record"])
def test_tcp_peer_reset_passes_through_after_the_records_that_arrived(
    reference_bytes: bytes, reference_items: list[Item], tail: int
) -> None:
    # The peer sends three records (and maybe the start of a fourth), waits until the reader
    # has handed over the third, then closes with SO_LINGER 0: an abortive close, a TCP RST.
    # The reader's next read fails with ECONNRESET, which must come out as it is.
    head = pack_items(reference_items[:3])
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname(), timeout=TIMEOUT)
        peer, _ = server.accept()
    received_three = threading.Event()

    def write() -> None:
        with peer:
            peer.sendall(reference_bytes[: len(head) + tail])
            assert received_three.wait(TIMEOUT)
            peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    writer = Worker(write)
    writer.start()
    items: list[Item] = []

    def consume(reader: StreamingReader[Item]) -> None:
        for item in reader:
            items.append(item)
            if len(items) == 3:
                received_three.set()

    with client, client.makefile("rb") as stream, StreamingReader(stream) as reader:
        with pytest.raises(ConnectionResetError) as info:
            consume(reader)
        assert reader.bytes_read == len(head) + tail
    writer.finish()
    assert items == reference_items[:3]
    assert info.value.errno == errno.ECONNRESET
    assert not isinstance(info.value, ReaderError)
    assert info.value.__context__ is None


# --- resource handling ---------------------------------------------------------------------------


def test_temporary_reader_yields_everything_and_leaks_nothing(
    monkeypatch: pytest.MonkeyPatch, reference_path: Path
) -> None:
    # A file left open warns (ResourceWarning) from its finaliser, where the warning, an error
    # here, is reported through sys.unraisablehook rather than raised.
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    count = 0
    sum_of_ids = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for item in StreamingReader(reference_path):
            count += 1
            sum_of_ids += item.id
        gc.collect()
    assert count == REFERENCE_MESSAGES
    assert sum_of_ids == REFERENCE_SUM_OF_IDS
    assert unraisable == []


def test_temporary_reader_left_early_leaks_nothing(
    monkeypatch: pytest.MonkeyPatch, reference_path: Path, reference_items: list[Item]
) -> None:
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    items: list[Item] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for item in StreamingReader(reference_path):
            items.append(item)
            if len(items) == 10:
                break
        gc.collect()
    assert items == reference_items[:10]
    assert unraisable == []


def test_leak_detection_works(monkeypatch: pytest.MonkeyPatch, reference_path: Path) -> None:
    # The check used above does see a file that is never closed.
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stream = open(reference_path, "rb")  # noqa: SIM115 - leaked on purpose
        del stream
        gc.collect()
    assert len(unraisable) == 1
    assert isinstance(unraisable[0].exc_value, ResourceWarning)
