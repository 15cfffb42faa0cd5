"""Peak memory on hostile input: a header claiming 4 GiB is refused at its header, not buffered.

Each test runs a child process that reads, with the default options (max_record_size 100 MiB),
a few good records and then a header claiming 0xffffffff bytes or elements, followed by about
300 MB of filler, from a file, a pipe or a socket. The child reports the error it got and its
peak resident set size, ``VmHWM`` from ``/proc/self/status`` (not ``ru_maxrss``, which on Linux
survives ``exec`` and would report the parent's peak). A reader that buffered the claimed
record up to max_record_size would hold well over 100 MB (the decoder's buffer plus the bytes
kept to locate the record); the reader that refuses the header holds one chunk.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest

from msgpack_reader_py import get_iter, pack_items

FILLER_SIZE = 300 * 1000 * 1000
WRITE_SIZE = 1 << 20
PEAK_LIMIT_KB = 100 * 1000 * 1000 // 1024  # 100 MB, in the KiB that VmHWM counts
TIMEOUT = 60.0
ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, socket, sys

from msgpack_reader_py import Item, ReaderError, StreamingReader
from tests.helpers import Loose

kind, where, type_name = sys.argv[1:4]
if kind == "file":
    source = where
elif kind == "pipe":
    source = os.fdopen(int(where), "rb")
else:
    source = socket.socket(fileno=int(where)).makefile("rb")
result = {"records": 0, "error": None}
try:
    for _ in StreamingReader(source, Loose if type_name == "Loose" else Item):
        result["records"] += 1
except ReaderError as error:
    result.update(error=type(error).__name__, index=error.index, offset=error.offset)
with open("/proc/self/status") as status:
    for line in status:
        if line.startswith("VmHWM:"):
            result["vmhwm_kb"] = int(line.split()[1])
print(json.dumps(result))
"""

GOOD_ITEMS = pack_items(get_iter(3, seed=9))
GOOD_LOOSE = msgpack.packb(["a", 1]) + msgpack.packb(["b", {"c": [1, 2]}])


class Hostile:
    """A few good records, then a record whose header claims 0xffffffff bytes or elements."""

    def __init__(self, record_type: str, good: bytes, records: int, header: bytes) -> None:
        self.record_type = record_type
        self.head = good + header
        self.records = records
        self.offset = len(good)  # where the hostile record starts


HOSTILE = {
    # An Item whose second field is a str32 claiming 4 GiB.
    "str32": Hostile("Item", GOOD_ITEMS, 3, b"\x98\x01\xdb\xff\xff\xff\xff"),
    # An array32 claiming 2**32 - 1 fields.
    "array32": Hostile("Item", GOOD_ITEMS, 3, b"\xdd\xff\xff\xff\xff"),
    # A Loose record whose payload is a map32 claiming 2**32 - 1 entries.
    "map32": Hostile("Loose", GOOD_LOOSE, 2, b"\x92\xa1k\xdf\xff\xff\xff\xff"),
}


def filler() -> bytes:
    return b"x" * WRITE_SIZE


class Writer(threading.Thread):
    """Writes the stream's head and then filler until FILLER_SIZE or the reader goes away."""

    def __init__(
        self, head: bytes, write: Callable[[bytes], Any], close: Callable[[], None]
    ) -> None:
        super().__init__(daemon=True)
        self._head = head
        self._write = write
        self._close = close
        self.written = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._write(self._head)
            block = filler()
            while self.written < FILLER_SIZE:
                self._write(block)
                self.written += len(block)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the reader refused the record and went away: expected
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            self.error = exc
        finally:
            self._close()


def run_child(args: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *args],
        cwd=ROOT,  # where ``tests.helpers`` is importable from
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=pass_fds,
    )


def result_of(child: subprocess.Popen[bytes]) -> dict[str, Any]:
    try:
        out, err = child.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise
    assert child.returncode == 0, err.decode(errors="replace")
    result: dict[str, Any] = json.loads(out)
    return result


def read_from_file(hostile: Hostile, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "hostile.msgpack"
    with open(path, "wb") as file:
        file.write(hostile.head)
        file.truncate(len(hostile.head) + FILLER_SIZE)  # sparse: zeros, written in no time
    assert path.stat().st_size > FILLER_SIZE
    return result_of(run_child(["file", str(path), hostile.record_type]))


def read_from_pipe(hostile: Hostile, tmp_path: Path) -> dict[str, Any]:
    read_end, write_end = os.pipe()
    try:
        child = run_child(["pipe", str(read_end), hostile.record_type], pass_fds=(read_end,))
    finally:
        os.close(read_end)
    stream = os.fdopen(write_end, "wb", buffering=0)
    writer = Writer(hostile.head, stream.write, stream.close)
    writer.start()
    result = result_of(child)
    finish(writer)
    return result


def read_from_socket(hostile: Hostile, tmp_path: Path) -> dict[str, Any]:
    ours, theirs = socket.socketpair()
    try:
        child = run_child(
            ["socket", str(theirs.fileno()), hostile.record_type], pass_fds=(theirs.fileno(),)
        )
    finally:
        theirs.close()
    writer = Writer(hostile.head, ours.sendall, ours.close)
    writer.start()
    result = result_of(child)
    finish(writer)
    return result


def finish(writer: Writer) -> None:
    writer.join(TIMEOUT)
    assert not writer.is_alive(), "the writer did not finish"
    if writer.error is not None:
        raise writer.error
    # The reader went away long before the end: it did not read the filler.
    assert writer.written < FILLER_SIZE


SOURCES: dict[str, Callable[[Hostile, Path], dict[str, Any]]] = {
    "file": read_from_file,
    "pipe": read_from_pipe,
    "socket": read_from_socket,
}


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("header", list(HOSTILE))
def test_hostile_header_is_refused_in_bounded_memory(
    header: str, source: str, tmp_path: Path
) -> None:
    hostile = HOSTILE[header]
    result = SOURCES[source](hostile, tmp_path)
    print(f"{header}/{source}: VmHWM {result['vmhwm_kb']} kB")
    assert result["error"] == "RecordTooLargeError", result
    assert result["records"] == hostile.records
    assert result["index"] == hostile.records
    assert result["offset"] == hostile.offset
    assert 0 < result["vmhwm_kb"] < PEAK_LIMIT_KB, result


def test_the_child_reads_good_records_and_reports_its_peak(tmp_path: Path) -> None:
    """The measurement works: a valid stream is read to its end, and the peak is plausible."""
    path = tmp_path / "good.msgpack"
    path.write_bytes(GOOD_ITEMS)
    result = result_of(run_child(["file", str(path), "Item"]))
    print(f"baseline: VmHWM {result['vmhwm_kb']} kB")
    assert result["error"] is None
    assert result["records"] == 3
    assert 1000 < result["vmhwm_kb"] < PEAK_LIMIT_KB
