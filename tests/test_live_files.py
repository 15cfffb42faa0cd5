"""Following a growing file: ``StreamingReader(path, follow=True)`` and ``read/dump --follow``.

A writer (a thread, or a process of its own) appends to a file, cutting records anywhere,
truncating or replacing the file as log rotation does, while a follower reads it. The follower
must get every record once, in order, wait (without spinning) for records cut at the end,
start again from a rotated file's start with a note, and end when it is closed from another
thread or, on the command line, on Ctrl-C with status 130.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from msgpack_reader_py import (
    DecodeError,
    ReaderError,
    StreamingReader,
    get_iter,
    pack_items,
)
from msgpack_reader_py import follow as follow_module
from msgpack_reader_py.arrow import BatchReader
from msgpack_reader_py.cli import main
from msgpack_reader_py.convert import convert
from msgpack_reader_py.values import ValueReader

from .helpers import is_open

TIMEOUT = 30.0
ITEMS = list(get_iter(400, seed=3))
DATA = pack_items(ITEMS)


@pytest.fixture(autouse=True)
def quick_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short pauses keep the tests quick; the waiting logic is the same."""
    monkeypatch.setattr(follow_module, "LONGEST_WAIT", 0.02)


class Follower:
    """A follower of ``path`` in a thread of its own, collecting records (or its error)."""

    def __init__(self, path: Path, **options: Any) -> None:
        self.reader: StreamingReader[Any] = StreamingReader(path, follow=True, **options)
        self.records: list[Any] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for record in self.reader:
                self.records.append(record)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + TIMEOUT
        while len(self.records) < count and self.error is None:
            assert time.monotonic() < deadline, f"{len(self.records)} of {count} records"
            time.sleep(0.002)

    def stop(self) -> None:
        self.reader.close()
        self._thread.join(TIMEOUT)
        assert not self._thread.is_alive(), "the follower did not end on close()"

    def ended(self) -> bool:
        self._thread.join(TIMEOUT)
        return not self._thread.is_alive()


def caught_up(path: Path) -> Follower:
    """A follower of ``path``, written with ``DATA``, that has read all of it."""
    path.write_bytes(DATA)
    follower = Follower(path)
    follower.wait_for(len(ITEMS))
    return follower


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as out:
        out.write(data)


def test_records_cut_anywhere_arrive_whole_and_in_order(tmp_path: Path) -> None:
    """Appended in pieces that cut records, with pauses: every record, once, in order; a cut
    record waits for its rest instead of failing."""
    path = tmp_path / "live.msgpack"
    path.touch()
    follower = Follower(path)
    for start in range(0, len(DATA), 333):
        append(path, DATA[start : start + 333])
        if start % 3000 == 0:
            time.sleep(0.005)
    follower.wait_for(len(ITEMS))
    follower.stop()
    assert follower.error is None
    assert follower.records == ITEMS
    assert not is_open(path)


_WRITER = """
import random, sys, time
path, data = sys.argv[1], open(sys.argv[2], "rb").read()
chance = random.Random(5)
at = 0
with open(path, "ab", buffering=0) as out:
    while at < len(data):
        size = chance.choice([1, 7, 55, 56, 57, 500, 4096])
        out.write(data[at : at + size])
        at += size
        if chance.random() < 0.05:
            time.sleep(0.002)
"""


def test_a_writer_process_appending_is_followed_to_the_last_record(tmp_path: Path) -> None:
    path = tmp_path / "live.msgpack"
    path.touch()
    items = list(get_iter(3000, seed=8))
    source = tmp_path / "all.msgpack"
    source.write_bytes(pack_items(items))
    follower = Follower(path)
    subprocess.run(
        [sys.executable, "-c", _WRITER, str(path), str(source)], check=True, timeout=TIMEOUT
    )
    follower.wait_for(len(items))
    follower.stop()
    assert follower.records == items


def test_close_from_another_thread_ends_a_follower_waiting_on_a_cut_record(
    tmp_path: Path,
) -> None:
    """Closing is the user's stop: no truncation error for the record half written."""
    path = tmp_path / "live.msgpack"
    path.write_bytes(DATA[:1000])
    follower = Follower(path)
    follower.wait_for(18)
    time.sleep(0.05)
    follower.stop()
    assert follower.error is None
    assert follower.records == ITEMS[:18]
    assert follower.reader.closed
    assert not is_open(path)


def test_a_replaced_file_is_read_from_its_start_with_a_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Rotation by rename: the unfinished record of the old file is named as dropped, the new
    file is read whole, and an error in it counts from its own start."""
    path = tmp_path / "live.msgpack"
    path.write_bytes(DATA[:1000])  # 18 records and 28 bytes of the 19th
    follower = Follower(path)
    follower.wait_for(18)
    os.rename(path, tmp_path / "live.msgpack.1")
    time.sleep(0.05)  # no file at the path for a while: waited for
    fresh = pack_items(ITEMS[:5])
    path.write_bytes(fresh + b"\xc1")
    assert follower.ended()
    assert follower.records == ITEMS[:18] + ITEMS[:5]
    assert isinstance(follower.error, DecodeError)
    assert (follower.error.index, follower.error.offset) == (5, len(fresh))
    assert follower.error.source == str(path)
    [note] = [record.getMessage() for record in caplog.records]
    assert note == (
        f"{path} was replaced by another file: reading it again from its start; the "
        "unfinished record 18 at byte 972 (28 bytes of it) is dropped"
    )


def test_a_file_truncated_in_place_is_read_again_from_its_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "live.msgpack"
    follower = caught_up(path)
    with path.open("r+b") as log:  # copytruncate
        log.truncate(0)
    time.sleep(0.05)
    append(path, pack_items(ITEMS[:3]))
    follower.wait_for(len(ITEMS) + 3)
    follower.stop()
    assert follower.records == ITEMS + ITEMS[:3]
    assert follower.reader.bytes_read == len(pack_items(ITEMS[:3]))
    notes = [record.getMessage() for record in caplog.records]
    assert notes == [
        f"{path} was truncated (to 0 bytes, after {len(DATA)} were read): reading it again "
        "from its start"
    ]
    assert all(record.levelno == logging.WARNING for record in caplog.records)


def test_broken_data_appended_fails_where_the_plain_reader_fails(tmp_path: Path) -> None:
    path = tmp_path / "live.msgpack"
    path.write_bytes(DATA[:2000])
    follower = Follower(path)
    append(path, DATA[2000:] + b"\xc1" + DATA)
    assert follower.ended()
    with pytest.raises(ReaderError) as expected:
        list(StreamingReader(DATA + b"\xc1" + DATA))
    error = follower.error
    assert isinstance(error, DecodeError)
    assert (error.index, error.offset, error.reason) == (
        expected.value.index,
        expected.value.offset,
        expected.value.reason,
    )
    assert follower.records == ITEMS
    assert not is_open(path)


def test_skip_mode_passes_over_records_of_another_type(tmp_path: Path) -> None:
    path = tmp_path / "live.msgpack"
    path.write_bytes(pack_items(ITEMS[:9]) + msgpack.packb(["not", "an", "item"]))
    follower = Follower(path, on_error="skip")
    append(path, pack_items(ITEMS[9:]))
    follower.wait_for(len(ITEMS))
    follower.stop()
    assert follower.records == ITEMS
    assert follower.reader.skipped == 1


def test_an_idle_follower_does_not_spin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Half a second of following a quiet file costs a few milliseconds of CPU."""
    monkeypatch.setattr(follow_module, "LONGEST_WAIT", 0.25)
    path = tmp_path / "quiet.msgpack"
    follower = caught_up(path)
    cpu = time.process_time()
    time.sleep(0.5)
    used = time.process_time() - cpu
    follower.stop()
    assert used < 0.1, f"{used:.3f} s of CPU in 0.5 s of waiting"


def test_a_file_truncated_then_renamed_away_is_read_again_through_its_open_handle(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No file at the path to reopen: the file still open is the one read from its start."""
    path = tmp_path / "live.msgpack"
    follower = caught_up(path)
    with path.open("r+b") as log:
        log.truncate(0)
    moved = tmp_path / "live.msgpack.1"
    os.rename(path, moved)
    time.sleep(0.05)
    append(moved, pack_items(ITEMS[:2]))
    follower.wait_for(len(ITEMS) + 2)
    follower.stop()
    assert follower.records == ITEMS + ITEMS[:2]
    assert "was truncated (to 0 bytes" in caplog.records[0].getMessage()
    assert not is_open(moved)


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
    monkeypatch.setattr("msgpack_reader_py.cli._run_read", interrupted)
    assert main(["read", "x.msgpack"]) == 130


def test_what_cannot_be_followed_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="follows a file by its path"):
        StreamingReader(DATA, follow=True)
    with pytest.raises(ValueError, match="regular file"):
        StreamingReader("/dev/null", follow=True)
    compressed = tmp_path / "live.msgpack.gz"
    compressed.write_bytes(gzip.compress(DATA))
    follower = Follower(compressed)
    assert follower.ended()
    assert isinstance(follower.error, ReaderError)
    assert follower.error.index == 0
    assert "gzip" in str(follower.error)


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.005)


def test_batch_value_and_convert_readers_follow_too(tmp_path: Path) -> None:
    path = tmp_path / "live.msgpack"
    path.write_bytes(DATA[:1000])
    batches = BatchReader(path, follow=True, batch_size=10)
    values = ValueReader(path, follow=True)
    rows: list[Any] = []
    raw: list[Any] = []

    def read_batches() -> None:
        for batch in batches:
            rows.extend(batch.column("id").to_pylist())

    def read_values() -> None:
        raw.extend(values)

    threads = [threading.Thread(target=run) for run in (read_batches, read_values)]
    for thread in threads:
        thread.start()
    append(path, DATA[1000:])
    _until(lambda: len(raw) == len(ITEMS) and len(rows) == len(ITEMS))
    batches.close()
    values.close()
    for thread in threads:
        thread.join(TIMEOUT)
    assert rows == [item.id for item in ITEMS]
    assert raw == [item.to_list() for item in ITEMS]


def test_convert_follows_the_source_until_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "live.msgpack"
    path.write_bytes(DATA[:1000])
    threading.Timer(0.1, append, args=(path, DATA[1000:])).start()
    out = tmp_path / "out.jsonl"
    done = convert(path, out, "jsonl", follow=True, limit=len(ITEMS))
    assert done.records == len(ITEMS)
    assert len(out.read_text().splitlines()) == len(ITEMS)


# --- the command line ---------------------------------------------------------------------


def _child(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    """The CLI in a process that Ctrl-C interrupts (a test runner's worker may ignore it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "msgpack_reader_py", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _lines(stream: Any, count: int) -> Iterator[bytes]:
    for _ in range(count):
        line = stream.readline()
        assert line, "the output ended early"
        yield line


def test_dump_follow_prints_records_as_they_arrive_and_ctrl_c_exits_130(
    tmp_path: Path,
) -> None:
    path = tmp_path / "live.msgpack"
    path.write_bytes(DATA[:1000])
    child = _child(["dump", "--follow", "--type", "item", path.name], tmp_path)
    try:
        assert child.stdout is not None
        first = list(_lines(child.stdout, 18))  # there before the rest is written: flushed
        append(path, DATA[1000:])
        rest = list(_lines(child.stdout, len(ITEMS) - 18))
        os.rename(path, tmp_path / "old.msgpack")
        path.write_bytes(DATA[:56])
        more = list(_lines(child.stdout, 1))
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=TIMEOUT)
    finally:
        child.kill()
    assert child.returncode == 130
    assert out == b""
    assert [msgpack_line_id(line) for line in first + rest + more] == [
        item.id for item in [*ITEMS, ITEMS[0]]
    ]
    assert err.decode() == (
        f"note: {path.name} was replaced by another file: reading it again from its start\n"
    )


def msgpack_line_id(line: bytes) -> int:
    value: dict[str, Any] = json.loads(line)
    return int(value["id"])


def test_read_follow_prints_its_summary_on_ctrl_c(tmp_path: Path) -> None:
    path = tmp_path / "live.msgpack"
    path.write_bytes(DATA[:1000])
    child = _child(["read", "-f", "--json", path.name], tmp_path)
    try:
        time.sleep(0.5)
        append(path, DATA[1000:])
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=TIMEOUT)
    finally:
        child.kill()
    assert child.returncode == 130
    assert err == b""
    summary = json.loads(out)
    assert summary["records"] == len(ITEMS)
    assert summary["sum_of_ids"] == sum(item.id for item in ITEMS)
    assert summary["bytes"] == len(DATA)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["read", "--follow", "a.msgpack", "b.msgpack"], "--follow follows one file"),
        (["dump", "-f", "-"], "--follow follows one file"),
        (["dump", "-f", "/dev/null"], "--follow follows a regular file"),
    ],
)
def test_what_cannot_be_followed_is_a_usage_error(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}")
    assert err.count("\n") == 1
