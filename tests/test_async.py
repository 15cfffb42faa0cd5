"""``AsyncStreamingReader``: ``async for`` over asyncio streams, async chunk iterables and
awaitable ``read(n)``s, with the synchronous reader's records and error contract.

The loopback tests run a real asyncio server on 127.0.0.1 that drips the reference stream in
random pieces with pauses; the property tests compare the asynchronous reader with the
synchronous one on every kind of broken stream, chunked at random.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import random
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgpack
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from msgpack_reader_py import (
    AsyncStreamingReader,
    DecodeError,
    Item,
    ReaderError,
    RecordError,
    RecordTooLargeError,
    StreamingReader,
    TruncatedStreamError,
    get_iter,
    pack_items,
)
from msgpack_reader_py._readers.aio import _Awaited
from msgpack_reader_py._stream.pending import READ_MORE

from .helpers import examples, is_open

T = TypeVar("T")
TIMEOUT = 30.0
ITEMS = list(get_iter(300, seed=11))
DATA = pack_items(ITEMS)


def whole_records(cut: int) -> list[Item]:
    """The items wholly within ``DATA[:cut]``."""
    ends = itertools.accumulate(len(msgpack.packb(item.to_list())) for item in ITEMS)
    return [item for item, end in zip(ITEMS, ends, strict=True) if end <= cut]


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` in a fresh event loop, failing (not hanging) after ``TIMEOUT``."""
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT))


async def chunked(data: bytes, sizes: list[int]) -> AsyncIterator[bytes]:
    """``data`` as an async iterable of chunks of the given sizes (cycled), yielding to the
    loop between them."""
    at = 0
    for size in _cycle(sizes):
        if at >= len(data):
            return
        yield data[at : at + size]
        at += size
        await asyncio.sleep(0)


def _cycle(sizes: list[int]) -> Any:
    while True:
        yield from sizes


def stream_of(data: bytes, *, eof: bool = True) -> asyncio.StreamReader:
    """An ``asyncio.StreamReader`` holding ``data`` (and its end, with ``eof``)."""
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    if eof:
        reader.feed_eof()
    return reader


async def collect(reader: AsyncStreamingReader[T]) -> tuple[list[T], BaseException | None]:
    """What ``reader`` yields, and what it raised at the end (``None`` if it ended)."""
    got: list[T] = []
    try:
        async with reader:
            async for record in reader:
                got.append(record)  # noqa: PERF401 - one by one: kept when it fails
    except Exception as exc:  # noqa: BLE001 - returned for the test to compare
        return got, exc
    return got, None


def consuming(reader: AsyncStreamingReader[T]) -> tuple[asyncio.Future[None], list[T]]:
    """A task iterating ``reader``, and the list it appends each record to as it comes."""
    got: list[T] = []

    async def consume() -> None:
        async for record in reader:
            got.append(record)  # noqa: PERF401 - one by one: seen while the task runs

    return asyncio.ensure_future(consume()), got


def sync_outcome(data: bytes, **options: Any) -> tuple[list[Any], BaseException | None]:
    got: list[Any] = []
    try:
        with StreamingReader(data, **options) as reader:
            got.extend(reader)
    except ReaderError as exc:
        return got, exc
    return got, None


def same_error(mine: BaseException | None, theirs: BaseException | None) -> None:
    assert type(mine) is type(theirs)
    if isinstance(theirs, ReaderError):
        assert isinstance(mine, ReaderError)
        assert (mine.index, mine.offset, str(mine)) == (theirs.index, theirs.offset, str(theirs))


# --- sources ---------------------------------------------------------------------------------


def test_an_asyncio_stream_reader_is_read_whole() -> None:
    async def main() -> list[Item]:
        async with AsyncStreamingReader(stream_of(DATA)) as reader:
            return [item async for item in reader]

    assert run(main()) == ITEMS


def test_an_async_iterable_of_chunks_of_any_size_is_read_whole() -> None:
    """Chunks larger than read_size are split; empty chunks do not end the stream."""

    async def main() -> list[Item]:
        sizes = [1, 0, 7, 70000, 3, 0, 512]
        reader = AsyncStreamingReader(chunked(DATA * 40, sizes), read_size=4096)
        return [item async for item in reader]

    assert run(main()) == ITEMS * 40


def test_anything_with_an_awaitable_read_is_read() -> None:
    """``async def read`` and a plain ``read`` that returns a future are both awaited."""

    class AsyncFile:
        def __init__(self, data: bytes) -> None:
            self._data = io.BytesIO(data)
            self.sizes: list[int] = []

        async def read(self, size: int) -> bytes:
            self.sizes.append(size)
            await asyncio.sleep(0)
            return self._data.read(min(size, 999))

    class FutureFile:
        def __init__(self, data: bytes) -> None:
            self._data = io.BytesIO(data)

        def read(self, size: int) -> Awaitable[bytes]:
            future = asyncio.get_running_loop().create_future()
            future.set_result(self._data.read(size))
            return future

    async def main() -> None:
        source = AsyncFile(DATA)
        assert [item async for item in AsyncStreamingReader(source, read_size=5000)] == ITEMS
        assert set(source.sizes) == {5000}
        assert [item async for item in AsyncStreamingReader(FutureFile(DATA))] == ITEMS

    run(main())


def test_paths_bytes_and_blocking_streams_are_read_too(tmp_path: Path) -> None:
    path = tmp_path / "items.msgpack"
    path.write_bytes(DATA)

    async def main() -> None:
        for source in (str(path), path, DATA, bytearray(DATA), io.BytesIO(DATA)):
            assert [item async for item in AsyncStreamingReader(source)] == ITEMS

    run(main())
    assert not is_open(path)


def test_a_chunk_that_is_not_bytes_is_refused_by_name() -> None:
    async def texts() -> AsyncIterator[Any]:
        yield DATA[:100]
        yield "text"

    async def main() -> None:
        with pytest.raises(TypeError, match="read\\(\\) returned str, not bytes"):
            async for _ in AsyncStreamingReader(texts()):
                pass

    run(main())


def test_typed_records_mapper_and_options_are_the_sync_readers() -> None:
    @dataclass
    class Event:
        name: str
        count: int = 0

    data = b"".join(
        msgpack.packb(value) for value in ({"name": "a", "count": 2}, ["b"], {"name": "c"})
    )

    async def main() -> None:
        events = [event async for event in AsyncStreamingReader(stream_of(data), Event)]
        assert events == [Event("a", 2), Event("b"), Event("c")]
        lengths = [n async for n in AsyncStreamingReader(stream_of(DATA), mapper=len)]
        assert lengths == [8] * len(ITEMS)
        bad = DATA + msgpack.packb(["not an item"]) + DATA
        reader = AsyncStreamingReader(stream_of(bad), on_error="skip")
        assert [item async for item in reader] == ITEMS * 2
        assert reader.skipped == 1
        assert isinstance(reader.errors[0], RecordError)
        assert reader.errors[0].index == len(ITEMS)

    run(main())


def test_anext_aclose_and_a_closed_reader() -> None:
    async def main() -> None:
        reader = AsyncStreamingReader(stream_of(DATA))
        assert await reader.__anext__() == ITEMS[0]
        assert await anext(reader) == ITEMS[1]
        await reader.aclose()
        assert reader.closed
        await reader.aclose()  # twice is fine
        with pytest.raises(ValueError, match="closed AsyncStreamingReader"):
            reader.__aiter__()
        with pytest.raises(ValueError, match="closed AsyncStreamingReader"):
            await reader.__anext__()
        assert repr(reader) == "<AsyncStreamingReader '<StreamReader>' record_type=Item closed>"

    run(main())


def test_options_are_checked_at_construction() -> None:
    with pytest.raises(ValueError, match="read_size"):
        AsyncStreamingReader(DATA, read_size=0)
    with pytest.raises(ValueError, match="on_error"):
        AsyncStreamingReader(DATA, on_error="ignore")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="mapper must be callable"):
        AsyncStreamingReader(DATA, mapper=3)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="follows a file by its path"):
        AsyncStreamingReader(io.BytesIO(DATA), follow=True)
    with pytest.raises(ValueError, match="follow=True: /dev/null is not a regular file"):
        AsyncStreamingReader("/dev/null", follow=True)


def test_a_compressed_stream_fails_at_its_first_record_naming_its_compression() -> None:
    import gzip

    async def main() -> None:
        got, error = await collect(AsyncStreamingReader(stream_of(gzip.compress(DATA))))
        assert got == []
        assert isinstance(error, ReaderError)
        assert error.index == 0
        assert "gzip-compressed data, not decompressed (an awaited source is read as it is)" in (
            str(error)
        )

    run(main())


def test_compressed_paths_bytes_and_blocking_streams_are_decompressed(tmp_path: Path) -> None:
    import gzip

    packed = gzip.compress(DATA)
    path = tmp_path / "items.msgpack.gz"
    path.write_bytes(packed)

    async def main() -> None:
        for source in (path, packed, io.BytesIO(packed)):
            reader = AsyncStreamingReader(source)
            got, error = await collect(reader)
            assert error is None
            assert got == ITEMS
            assert reader.compression == "gzip"

    run(main())


# --- broken streams: the same errors as the synchronous reader ---------------------------------


@settings(max_examples=examples(ci=60, local=150), deadline=None)
@given(
    cut=st.integers(min_value=0, max_value=len(DATA) - 1),
    sizes=st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=5),
)
def test_a_cut_off_stream_fails_as_the_sync_reader_fails(cut: int, sizes: list[int]) -> None:
    data = DATA[:cut]
    got, error = run(collect(AsyncStreamingReader(chunked(data, sizes), read_size=1024)))
    expected, expected_error = sync_outcome(data, read_size=1024)
    assert got == expected
    same_error(error, expected_error)


@settings(max_examples=examples(ci=60, local=150), deadline=None)
@given(
    at=st.integers(min_value=0, max_value=len(DATA) - 1),
    byte=st.sampled_from([0xC1, 0xFF, 0xDD, 0xC4, 0x00, 0xA3, 0xCB]),
    sizes=st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=5),
    skip=st.booleans(),
)
# A float64 header inside a record makes it declare over max_record_size: read a byte at a
# time, its headers refuse it before it ends; read 2048 bytes at a time, it ends first. The
# same words either way.
@example(at=11640, byte=0xCB, sizes=[1], skip=False)
def test_a_corrupt_stream_fails_as_the_sync_reader_fails(
    at: int, byte: int, sizes: list[int], skip: bool
) -> None:
    """Whatever the byte and the chunking: the same records, then the same error class,
    index, offset and message (skip mode included)."""
    data = DATA[:at] + bytes([byte]) + DATA[at + 1 :]
    on_error = "skip" if skip else "raise"
    options: dict[str, Any] = {"read_size": 2048, "on_error": on_error, "max_record_size": 4096}
    got, error = run(collect(AsyncStreamingReader(chunked(data, sizes), **options)))
    expected, expected_error = sync_outcome(data, **options)
    assert got == expected
    same_error(error, expected_error)


def test_a_record_over_max_record_size_is_refused_when_its_header_arrives() -> None:
    """A header declaring 4 GiB is refused as it arrives, not after waiting for the bytes."""
    hostile = DATA[:560] + b"\x92\x01\xdb\xff\xff\xff\xff" + b"x" * 10

    async def main() -> None:
        stream = stream_of(hostile, eof=False)  # the stream stays open: waiting would hang
        got, error = await collect(AsyncStreamingReader(stream, max_record_size=1000))
        assert isinstance(error, RecordTooLargeError)
        assert error.index == 10
        assert len(got) == 10

    run(main())


# --- live behaviour ------------------------------------------------------------------------


def test_each_record_is_yielded_as_soon_as_its_last_byte_arrives() -> None:
    """The stream is never ended: each record comes out when its bytes are complete."""
    records = [msgpack.packb(item.to_list()) for item in ITEMS[:20]]

    async def main() -> None:
        stream = asyncio.StreamReader()
        reader = AsyncStreamingReader(stream)
        for item, record in zip(ITEMS, records, strict=False):
            stream.feed_data(record[:-1])
            pending = asyncio.ensure_future(anext(reader))
            await asyncio.sleep(0.01)
            assert not pending.done()  # one byte short
            stream.feed_data(record[-1:])
            assert await asyncio.wait_for(pending, 5) == item
        await reader.aclose()

    run(main())


def test_the_source_is_read_one_chunk_ahead_at_most() -> None:
    """A consumer that stops after one record has had one chunk read for it."""

    class Counting:
        def __init__(self) -> None:
            self.reads = 0

        async def read(self, size: int) -> bytes:
            self.reads += 1
            return DATA[:size]

    async def main() -> None:
        source = Counting()
        reader = AsyncStreamingReader(source, read_size=4096)
        assert await anext(reader) == ITEMS[0]
        for _ in range(20):
            await asyncio.sleep(0)
        assert source.reads == 1
        await reader.aclose()

    run(main())


class _Server:
    """An asyncio server on the loopback interface that runs ``serve`` for each client."""

    def __init__(self, serve: Callable[[asyncio.StreamWriter], Awaitable[None]]) -> None:
        self._serve = serve
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> tuple[str, int]:
        async def handle(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await self._serve(writer)
            finally:
                writer.close()

        self.server = await asyncio.start_server(handle, "127.0.0.1", 0)
        host, port = self.server.sockets[0].getsockname()[:2]
        return host, port

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


async def drip(writer: asyncio.StreamWriter, data: bytes, seed: int) -> None:
    """Write ``data`` in random pieces of 1 byte to 64 KiB, with random short pauses."""
    chance = random.Random(seed)
    at = 0
    while at < len(data):
        size = chance.choice([1, 2, 5, 55, 56, 57, 1000, 4096, 65536])
        writer.write(data[at : at + size])
        at += size
        await writer.drain()
        if chance.random() < 0.2:
            await asyncio.sleep(chance.choice([0, 0.001, 0.005]))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_reference_stream_dripped_over_loopback_is_read_whole(seed: int) -> None:
    data = pack_items(get_iter(10000, seed=42))

    async def main() -> list[Item]:
        async with _Server(lambda writer: drip(writer, data, seed)) as (host, port):
            stream, writer = await asyncio.open_connection(host, port)
            try:
                async with AsyncStreamingReader(stream) as reader:
                    return [item async for item in reader]
            finally:
                writer.close()

    assert run(main()) == list(StreamingReader(data))


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (DATA[:-3], TruncatedStreamError),
        (pack_items(ITEMS[:10]) + b"\xc1" + pack_items(ITEMS[10:]), DecodeError),
        (DATA + msgpack.packb(["x"]), RecordError),
    ],
    ids=["cut-off", "corrupt", "not-an-item"],
)
def test_broken_streams_over_loopback_fail_as_the_sync_reader_fails(
    data: bytes, kind: type[ReaderError]
) -> None:
    async def main() -> tuple[list[Item], BaseException | None]:
        async with _Server(lambda writer: drip(writer, data, 7)) as (host, port):
            stream, writer = await asyncio.open_connection(host, port)
            try:
                return await collect(AsyncStreamingReader(stream))
            finally:
                writer.close()

    got, error = run(main())
    expected, expected_error = sync_outcome(data)
    assert isinstance(error, kind)
    assert got == expected
    same_error(error, expected_error)


def test_a_reset_connection_raises_its_oserror_after_every_complete_record() -> None:
    """The peer sends 100 records and half of one, then resets: 100 records, then the
    ``ConnectionResetError``, not a truncation error and not silence."""
    whole = pack_items(ITEMS[:100])
    half = msgpack.packb(ITEMS[100].to_list())[:20]

    async def main() -> tuple[list[Item], BaseException | None]:
        received = asyncio.Event()

        async def serve(writer: asyncio.StreamWriter) -> None:
            writer.write(whole + half)
            await writer.drain()
            await received.wait()
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()  # with SO_LINGER 0: a reset, not an orderly end

        async with _Server(serve) as (host, port):
            stream, writer = await asyncio.open_connection(host, port)
            got: list[Item] = []
            try:
                async for item in AsyncStreamingReader(stream):
                    got.append(item)
                    if len(got) == 100:
                        received.set()
            except OSError as exc:
                return got, exc
            finally:
                writer.close()
            return got, None

    got, error = run(main())
    assert got == ITEMS[:100]
    assert isinstance(error, ConnectionResetError)


def test_a_cancelled_iteration_closes_the_reader_and_keeps_what_was_yielded(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        stream = stream_of(DATA[:5000], eof=False)  # then nothing: the reader waits
        reader = AsyncStreamingReader(stream)
        task, got = consuming(reader)
        expected = whole_records(5000)
        while len(got) < len(expected):
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert reader.closed
        assert got == expected
        stream.feed_data(DATA[5000:])  # the stream is the caller's: still usable
        assert await stream.readexactly(10) == DATA[5000:5010]

    run(main())


def test_a_cancelled_follower_closes_its_file(tmp_path: Path) -> None:
    path = tmp_path / "live.msgpack"
    path.write_bytes(DATA[:3000])

    async def main() -> None:
        reader = AsyncStreamingReader(path, follow=True)
        task, got = consuming(reader)
        expected = whole_records(3000)
        while len(got) < len(expected):
            await asyncio.sleep(0.005)
        with path.open("ab") as out:  # more arrives while following, the cut record's rest too
            out.write(DATA[3000:6000])
        expected = whole_records(6000)
        while len(got) < len(expected):
            await asyncio.sleep(0.005)
        assert is_open(path)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert reader.closed
        assert got == expected

    run(main())
    assert not is_open(path)


def test_an_async_follower_ends_on_close_from_another_thread(tmp_path: Path) -> None:
    path = tmp_path / "live.msgpack"
    path.write_bytes(DATA)

    async def main() -> list[Item]:
        reader = AsyncStreamingReader(path, follow=True)
        threading.Timer(0.3, reader.close).start()
        return [item async for item in reader]

    assert run(main()) == ITEMS
    assert not is_open(path)


def test_aclose_from_another_task_ends_the_iterating_one(tmp_path: Path) -> None:
    """A supervisor closes a follower that a consumer task is iterating: the consumer's loop
    ends after its pause, with every record it was given."""
    path = tmp_path / "live.msgpack"
    path.write_bytes(DATA)

    async def main() -> list[Item]:
        reader = AsyncStreamingReader(path, follow=True)
        task, got = consuming(reader)
        while len(got) < len(ITEMS):
            await asyncio.sleep(0.005)
        await reader.aclose()
        await asyncio.wait_for(task, 5)
        return got

    assert run(main()) == ITEMS
    assert not is_open(path)


_SLOW_CONSUMER = """
import asyncio, resource, sys
from dataclasses import dataclass
from msgpack_reader_py import AsyncStreamingReader

@dataclass
class Record:
    id: int
    payload: bytes

async def main(port: int) -> None:
    stream, writer = await asyncio.open_connection("127.0.0.1", port)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    count = 0
    async for record in AsyncStreamingReader(stream, Record):
        assert record.id == count
        count += 1
        if count % 1000 == 0:
            await asyncio.sleep(0.002)  # a slow consumer: the sender must wait for it
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    writer.close()
    print(count, before, peak)

asyncio.run(main(int(sys.argv[1])))
"""


def test_a_slow_consumer_of_100000_records_keeps_memory_bounded() -> None:
    """100,000 records of 1 KiB (100 MB) sent as fast as the socket takes them to a consumer
    that pauses: its peak RSS grows by a few MB, not by the stream."""
    records = 100_000
    payload = b"x" * 1000

    def serve(server: socket.socket) -> None:
        connection, _ = server.accept()
        with connection:
            batch = 64
            for first in range(0, records, batch):
                ids = range(first, min(first + batch, records))
                connection.sendall(b"".join(msgpack.packb([i, payload]) for i in ids))

    with socket.create_server(("127.0.0.1", 0)) as server:
        sender = threading.Thread(target=serve, args=(server,), daemon=True)
        sender.start()
        port = server.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-c", _SLOW_CONSUMER, str(port)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        sender.join(TIMEOUT)
    assert done.returncode == 0, done.stderr
    count, before, peak = map(int, done.stdout.split())
    assert count == records
    grown_mb = (peak - before) / 1024  # ru_maxrss is in KiB on Linux
    assert grown_mb < 30, f"peak RSS grew by {grown_mb:.1f} MB over a 100 MB stream"


def test_the_awaited_source_wrapper_reports_the_end_once() -> None:
    """Internal: after the end, the loop is told ``b""`` for good, never ``READ_MORE``."""

    async def main() -> None:
        awaited = _Awaited(stream_of(b"ab"))
        assert awaited.read1(10) is READ_MORE
        await awaited.fill()
        assert awaited.read1(10) == b"ab"
        assert awaited.read1(10) is READ_MORE
        await awaited.fill()
        assert awaited.read1(10) == b""
        assert awaited.read1(10) == b""

    run(main())
