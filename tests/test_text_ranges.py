"""JSON Lines and CSV from a file read on many processes: each worker writes the text of the
records it read, this process copies it out in file order; the bytes, and the error that
ends them, are those of one process."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msgpack_reader_py import convert
from msgpack_reader_py._base.atomic import NamedOutput
from msgpack_reader_py._base.errors import ReaderError
from msgpack_reader_py._split import parallel
from tests.helpers import examples, item_values, packed

Outcome = tuple[bytes, str | None]


@st.composite
def item_files(draw: st.DrawFn) -> bytes:
    """Items whose text needs quoting or marking in CSV (commas, quotes, line breaks,
    brackets, backslashes; NaN and the infinities), sometimes broken: cut short, or a
    record of another shape put in."""
    texts = st.text(alphabet=st.sampled_from('ab,"\n\r[]\\é\x00 '), max_size=6)
    floats = st.floats(allow_nan=True, allow_infinity=True)
    records = [
        packed(item_values(id=i, filename=draw(texts), path=draw(texts), value=draw(floats)))
        for i in range(draw(st.integers(0, 200)))
    ]
    data = b"".join(records)
    damage = draw(st.sampled_from(["none", "none", "cut", "record"]))
    if data and damage == "cut":
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif damage == "record":
        at = sum(map(len, records[: draw(st.integers(0, len(records)))]))
        data = data[:at] + packed(item_values(line="x")) + data[at:]
    return data


def to_stream(path: Path, to: Any, **options: Any) -> Outcome:
    """What ``convert`` writes to a stream, and the error it ends with."""
    out = io.BytesIO()
    try:
        convert(path, out, to, **options)
    except ReaderError as exc:
        return out.getvalue(), f"{type(exc).__name__}: {exc}"
    return out.getvalue(), None


def to_file(path: Path, out: Path, to: Any, **options: Any) -> Outcome:
    """What ``convert`` leaves in the file ``out``, and the error it ends with."""
    try:
        convert(path, out, to, **options)
    except ReaderError as exc:
        assert not out.exists()
        return b"", f"{type(exc).__name__}: {exc}"
    return out.read_bytes(), None


@pytest.fixture
def spools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the workers leave their text: to be found empty after every conversion."""
    folder = tmp_path / "memory"
    folder.mkdir()
    monkeypatch.setattr(parallel, "_MEMORY", str(folder))
    return folder


@settings(
    max_examples=examples(ci=30, local=10),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=item_files(),
    to=st.sampled_from(["csv", "jsonl"]),
    blocksize=st.integers(300, 5000),
    on_error=st.sampled_from(["raise", "skip"]),
)
def test_any_file_in_processes_writes_the_bytes_of_one_process(
    tmp_path: Path, spools: Path, data: bytes, to: str, blocksize: int, on_error: str
) -> None:
    path = tmp_path / "items.msgpack"
    path.write_bytes(data)
    options = {"on_error": on_error}
    one = to_stream(path, to, **options)
    split = {"workers": 2, "blocksize": blocksize, **options}
    assert to_stream(path, to, **split) == one
    out = tmp_path / f"out.{to}"
    out.unlink(missing_ok=True)  # an example before wrote it
    assert to_file(path, out, to, **split) == (b"" if one[1] else one[0], one[1])
    assert list(spools.iterdir()) == []


def test_text_is_written_by_the_workers(
    tmp_path: Path, spools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each range's text comes back as a file the worker left in the spool, not as rows.
    from msgpack_reader_py._output import convert as module

    path = tmp_path / "items.msgpack"
    path.write_bytes(b"".join(packed(item_values(id=i)) for i in range(3000)))
    opened: list[Any] = []
    original = module._opened

    def spy(spooled: Any) -> Any:
        assert Path(spooled.path).parent.parent == spools
        opened.append(spooled)
        return original(spooled)

    monkeypatch.setattr(module, "_opened", spy)
    assert to_stream(path, "jsonl", workers=2, blocksize=10_000) == to_stream(path, "jsonl")
    assert len(opened) > 2
    assert sum(spooled.records for spooled in opened) == 3000


def test_a_range_where_no_record_starts_leaves_no_file_open(
    tmp_path: Path, spools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A range inside one long record has no record of its own, so no text: no file is
    opened for it, to be dropped unwritten (closed by the garbage collector, with a
    ResourceWarning, when it came to it)."""
    from msgpack_reader_py._output import convert as module

    small = [packed(item_values(id=i)) for i in range(30)]
    data = b"".join([*small, packed(item_values(id=30, path="x" * 4000)), *small])
    path = tmp_path / "items.msgpack"
    path.write_bytes(data)
    opened: list[Any] = []
    original = module._opened

    def spy(spooled: Any) -> Any:
        opened.append(original(spooled))
        return opened[-1]

    monkeypatch.setattr(module, "_opened", spy)
    out = tmp_path / "out.csv"
    convert(path, out, "csv", workers=2, blocksize=700)
    assert out.read_bytes() == to_stream(path, "csv")[0]
    assert opened
    assert all(encoded.data.closed and encoded.records for encoded in opened)
    assert list(spools.iterdir()) == []


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_conversion_to_nowhere_in_processes_counts_and_makes_no_text(
    tmp_path: Path, spools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from msgpack_reader_py._output import convert as module

    path = tmp_path / "items.msgpack"
    path.write_bytes(b"".join(packed(item_values(id=i)) for i in range(3000)))

    def refused(*_arguments: Any) -> Any:
        raise AssertionError("text made for no output")

    monkeypatch.setattr(module, "text_encoder", refused)  # here, and in workers forked from here
    done = convert(path, None, "csv", workers=2, blocksize=10_000, on_error="skip")
    assert (done.records, done.skipped) == (3000, 0)
    assert list(spools.iterdir()) == []


# --- copying a file out ------------------------------------------------------------------------


def spooled_file(tmp_path: Path, data: bytes, at: int) -> Any:
    path = tmp_path / "spooled.txt"
    path.write_bytes(data)
    file = open(path, "rb")  # noqa: SIM115 - closed by the test
    file.seek(at)
    return file


DATA = bytes(range(256)) * 5000  # over a mebibyte: more than one step of each copy


@pytest.mark.parametrize("mode", ["wb", "ab"], ids=["sendfile", "append-refused-by-sendfile"])
def test_write_from_copies_a_file_from_where_it_stands(tmp_path: Path, mode: str) -> None:
    target = tmp_path / "out"
    target.write_bytes(b"kept:")
    with open(target, mode) as raw, spooled_file(tmp_path, DATA, 7) as file:
        out = NamedOutput(raw, "OUT")
        if mode == "wb":
            out.write(b"first:")  # buffered, written before the copy
        out.write_from(file)
        out.write(b":last")
        raw.flush()
    head = b"first:" if mode == "wb" else b"kept:"
    assert target.read_bytes() == head + DATA[7:] + b":last"


def test_write_from_to_a_stream_without_a_descriptor(tmp_path: Path) -> None:
    stream = io.BytesIO()
    with spooled_file(tmp_path, DATA, 3) as file:
        NamedOutput(stream, "<output>").write_from(file)
    assert stream.getvalue() == DATA[3:]


def test_write_from_to_a_pipe(tmp_path: Path) -> None:
    read, write = os.pipe()
    small = DATA[:1000]
    with open(write, "wb") as raw, spooled_file(tmp_path, small, 0) as file:
        NamedOutput(raw, "<pipe>").write_from(file)
    with open(read, "rb") as pipe:
        assert pipe.read() == small


def test_write_from_onto_a_full_disk_names_the_output(tmp_path: Path) -> None:
    with (
        open("/dev/full", "wb") as raw,
        spooled_file(tmp_path, DATA, 0) as file,
        pytest.raises(OSError, match="No space left") as info,
    ):
        NamedOutput(raw, "OUT").write_from(file)
    assert info.value.errno == errno.ENOSPC
    assert info.value.filename == "OUT"


@pytest.mark.parametrize("spare", [0, 1])
def test_the_workers_spool_in_memory_only_where_it_has_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spare: int
) -> None:
    """Room for the ranges in hand (two per worker, four times each: 16 times the widest
    range for two workers) is in memory; a byte less is the temporary directory. The free
    space is the test's, not the disk's, which other tests fill and empty meanwhile."""
    from msgpack_reader_py._split.ranges import ByteRange

    widest = 1500
    free = 16 * widest - 1 + spare
    monkeypatch.setattr(parallel, "_MEMORY", str(tmp_path))
    monkeypatch.setattr(
        os, "statvfs", lambda path: os.statvfs_result((0, 1, 0, 0, free, 0, 0, 0, 0, 0))
    )
    ranges = [ByteRange(0, 0, 1000), ByteRange(1, 1000, 1000 + widest)]
    assert parallel._spool_room(ranges, 2) == (str(tmp_path) if spare else None)
    monkeypatch.setattr(parallel, "_MEMORY", str(tmp_path / "none"))
    assert parallel._spool_room(ranges, 2) is None
