"""Helpers shared by the test modules, in one place, by topic: records and their bytes, every
kind of source, reading to an error, open files, Arrow batches, the command line, converted
output, following a growing file, and benchmarks.

Kept free of pytest, and of pyarrow until a helper needs it, so that a child process
(integration/test_memory.py) can import it cheaply. Shared fixtures are in conftest.py.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import gc
import importlib
import importlib.util
import io
import itertools
import json
import os
import struct
import sys
import tempfile
import threading
import time
import types
import typing
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Optional, TypeVar

import msgpack
from hypothesis import strategies as st

from msgpack_reader_py import Item, ReaderError, get_iter, pack_items

if TYPE_CHECKING:
    import pyarrow as pa
    import pytest

    from msgpack_reader_py._output.formats import OutputFormat


# --- records and their bytes -----------------------------------------------------------------


T = TypeVar("T")
CI = os.environ.get("CI") == "true"


def examples(*, ci: int, local: int) -> int:
    """Hypothesis examples for a property: more on CI (``CI=true``), fewer for a quick local run."""
    return ci if CI else local


@dataclass
class Loose:
    """A record of two fields, the second of any type: nested values pass straight through."""

    key: str
    payload: Any


@dataclass
class Checked:
    """A record whose own ``__post_init__`` refuses a negative id, with a ``TypeError``: the
    exception the reader also meets when it builds a record it cannot unpack."""

    id: int
    name: str

    def __post_init__(self) -> None:
        if self.id < 0:
            raise TypeError("id must not be negative")


FIELD_NAMES = [field.name for field in dataclasses.fields(Item)]
FIELD_TYPES: dict[str, Any] = typing.get_type_hints(Item)
SAMPLE = Item(1, 2, 3, 1_700_000_000_000_000_000, 40, 2.5, "FILENAME", "PATH0123456789A")


def rec(*values: Any) -> bytes:
    """One record: the MessagePack array of ``values``."""
    return msgpack.packb(list(values))


def packed(value: Any) -> bytes:
    """``value`` as MessagePack."""
    data: bytes = msgpack.packb(value)
    return data


def zstd_frames(data: bytes, cuts: Iterable[int], *, checksum: bool = False) -> bytes:
    """``data`` as a zstd file of frames, one per piece between the ``cuts`` (offsets of
    ``data``, anywhere in a record), each declaring its size: what ``.zst`` files joined
    with ``cat`` look like."""
    import zstandard  # the zstd extra, only where a test asks for it

    compress = zstandard.ZstdCompressor(write_checksum=checksum).compress
    marks = [0, *sorted({cut for cut in cuts if 0 < cut < len(data)}), len(data)]
    return b"".join(compress(data[a:b]) for a, b in itertools.pairwise(marks))


def item_values(**changes: Any) -> list[Any]:
    values = SAMPLE.to_list()
    for name, value in changes.items():
        values[FIELD_NAMES.index(name)] = value
    return values


def item_map(**changes: Any) -> bytes:
    """One record: ``SAMPLE`` (with ``changes``) as a MessagePack map keyed by field name."""
    return msgpack.packb({**dict(zip(FIELD_NAMES, SAMPLE.to_list(), strict=True)), **changes})


def as_map(item: Item) -> dict[str, Any]:
    """``item`` as a map of its fields by name (the other wire form a record has), in field
    order."""
    return {field.name: getattr(item, field.name) for field in dataclasses.fields(item)}


def reversed_map(item: Item) -> dict[str, Any]:
    """``item`` as a map keyed by field name, its keys in the reverse of the fields' order."""
    return dict(reversed(list(zip(FIELD_NAMES, item.to_list(), strict=True))))


def without(record: dict[str, Any], field: str) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key != field}


GOOD_RECORD = next(iter(get_iter(1, seed=5)))


def as_rows(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Flat dataclass records as the dicts a reader of converted output gives back.

    Shallow, unlike ``dataclasses.asdict``, whose deep copy of every field made this the
    costliest line of the convert and Arrow tests.
    """
    rows = []
    for record in records:
        names = [field.name for field in dataclasses.fields(record)]
        rows.append({name: getattr(record, name) for name in names})
    return rows


def instant(text: str) -> datetime.datetime:
    """An RFC 3339 instant with nanoseconds, rounded half up to microseconds, as the reader
    makes a ``datetime`` of a timestamp."""
    seconds, fraction = text.rstrip("Z").split(".")
    base = datetime.datetime.fromisoformat(seconds).replace(tzinfo=datetime.timezone.utc)
    return base + datetime.timedelta(microseconds=(int(fraction) + 500) // 1000)


@dataclass
class AllTypes:
    """Every supported field type, plain and nullable."""

    i: int
    f: float
    s: str
    b: bytes
    t: bool
    oi: int | None
    of: float | None
    os: str | None
    ob: bytes | None
    ot: Optional[bool]  # noqa: UP045 - both spellings of nullable in one record type


# One record per line, in AllTypes' field order: i, f, s, b, t, oi, of, os, ob, ot.
ALL_TYPES_VALUES: list[list[Any]] = [
    [0, 0.0, "", b"", False, None, None, None, None, None],
    [-(2**63), 1.5, "héllo wörld ✓", b"\x00\xff", True, 2**63 - 1, -0.0, "", b"", False],
    [2**63 - 1, 3, "日本語 🎉", b"x" * 300, False, -(2**63), 7, "ünï", b"\x80", True],
    [1, -(2**53), "s" * 70_000, b"b" * 70_000, True, 0, 2**53, "\x00nul", b"\x00", None],
    [-1, float("inf"), "a", b"a", False, None, float("-inf"), "Ωmega", None, True],
    [-2, float("nan"), "nan", b"n", True, None, float("nan"), None, b"", None],
    [2**32, 1e-308, "é", b"\xc1", True, -(2**31), None, None, b"z", None],
    [127, -0.0, "emoji 🙂", b"\xff" * 3, False, 128, 0, "", b"", False],
]


ALL_TYPES_FLOAT_FIELDS = {"f", "of"}


def all_types_rows(values: list[list[Any]]) -> list[Row]:
    """The rows a table of these records must hold: ints written to float fields as floats."""
    names = [f.name for f in dataclasses.fields(AllTypes)]
    rows = []
    for record in values:
        row = dict(zip(names, record, strict=True))
        for name in ALL_TYPES_FLOAT_FIELDS:
            if type(row[name]) is int:
                row[name] = float(row[name])
        rows.append(row)
    return rows


class Reading(NamedTuple):
    sensor: str
    value: float | None
    ok: bool


# --- sources ---------------------------------------------------------------------------------


class ReadOnlyStream:
    """A source with only ``read(n)``: no ``read1``, no ``name``, no ``close``."""

    def __init__(self, data: bytes) -> None:
        self._buffer = io.BytesIO(data)
        self.requested: list[int] = []

    def read(self, size: int = -1) -> bytes:
        self.requested.append(size)
        return self._buffer.read(size)


class OneBytePerRead(ReadOnlyStream):
    """A source that never returns more than one byte per read, like a slow pipe."""

    def read(self, size: int = -1) -> bytes:
        self.requested.append(size)
        return self._buffer.read(1)


class Trickle(io.RawIOBase):
    """A pipe that hands over at most ``piece`` bytes a read, ``pause`` seconds apart."""

    def __init__(self, data: bytes, piece: int, pause: float = 0.0) -> None:
        super().__init__()
        self._data = io.BytesIO(data)
        self._piece = piece
        self._pause = pause

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1, /) -> bytes:
        if self._pause:
            time.sleep(self._pause)
        return self._data.read(self._piece if size < 0 else min(size, self._piece))


class UnreadableSource:
    """A stream that must not be read: construction-time refusals happen before any read."""

    def __init__(self) -> None:
        self.reads = 0

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        raise AssertionError("the source was read")


class InterruptedStream(io.RawIOBase):
    """A binary stream that delivers ``data`` and is then interrupted (Ctrl-C) or fails."""

    def __init__(self, data: bytes, exc: BaseException) -> None:
        super().__init__()
        self._data = io.BytesIO(data)
        self._exc = exc

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1, /) -> bytes:
        chunk = self._data.read(size)
        if not chunk:
            raise self._exc
        return chunk


Way = tuple[str, Any, "int | None"]
"""One way a stream reaches a reader: a name, the source, and the ``read_size`` to ask for
(``None``: the default)."""


@contextmanager
def every_source(data: bytes, *, byte_by_byte: bool = True) -> Iterator[list[Way]]:
    """Every kind of source ``data`` can come from, each to read once: bytes (read 65536 and 7
    bytes at a time), a memoryview, an ``io.BytesIO``, a path, an open file, and, with
    ``byte_by_byte``, bytes read 1 and 2 at a time and a source that gives one byte a read."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "data.msgpack")
        with open(path, "wb") as file:
            file.write(data)
        with open(path, "rb") as opened:
            ways: list[Way] = [
                ("bytes/65536", data, 65536),
                ("bytes/7", data, 7),
                ("memoryview", memoryview(data), None),
                ("BytesIO", io.BytesIO(data), None),
                ("BytesIO/7", io.BytesIO(data), 7),
                ("path", path, None),
                ("file/7", opened, 7),
            ]
            if byte_by_byte:
                ways += [
                    ("bytes/1", data, 1),
                    ("bytes/2", data, 2),
                    ("one byte per read", OneBytePerRead(data), None),
                ]
            yield ways


# --- reading to the end or to an error -------------------------------------------------------


PREFIX_ITEMS = list(get_iter(3, seed=7))
PREFIX = pack_items(PREFIX_ITEMS)
START = len(PREFIX)  # where the failing record starts, after the three good ones
LOOSE_PREFIX = packed(["k", 1]) + packed(["l", [2]])
LOOSE_ITEMS = [Loose("k", 1), Loose("l", [2])]  # an Any field holds arrays as lists
LONG_PATH = Item(1, 2, 3, 4, 5, 6.0, "F", "x" * 2000)


def drain(reader: Iterable[T]) -> tuple[list[T], ReaderError]:
    """Iterate until the reader raises a ``ReaderError``; return what it yielded and the error.

    Fails if the reader ends without one.
    """
    got: list[T] = []
    try:
        got.extend(reader)
    except ReaderError as error:
        return got, error
    raise AssertionError(f"no ReaderError after {len(got)} records")


def assert_located(error: ReaderError, index: int, offset: int) -> None:
    """``error`` names record ``index`` at byte ``offset``, and its reason, in its message."""
    assert error.index == index
    assert error.offset == offset
    message = str(error)
    assert f"record {index} at byte {offset}" in message
    assert error.reason
    assert error.reason in message


def assert_finished(reader: Iterator[Any]) -> None:
    """After an error a reader yields nothing more, ever: no resynchronisation."""
    for _ in range(2):
        try:
            next(reader)
        except StopIteration:
            continue
        raise AssertionError("the reader went on after its error")


def cut_inside(data: bytes, offsets: list[int], items: list[Item], index: int) -> bytes:
    """The stream ends halfway through record ``index``."""
    start, end = offsets[index], offsets[index + 1]
    return data[: start + (end - start) // 2]


# --- open files ------------------------------------------------------------------------------


def fds_pointing_at(path: Path) -> int:
    """How many of this process's file descriptors refer to ``path``."""
    target = os.path.realpath(path)
    fd_dir = "/proc/self/fd"
    if os.path.isdir(fd_dir):
        count = 0
        for entry in os.listdir(fd_dir):
            try:
                link = os.readlink(os.path.join(fd_dir, entry))
            except OSError:  # closed since it was listed
                continue
            count += link == target
        return count
    # Without /proc: count the live, open file objects that name the path.
    return sum(
        1
        for obj in gc.get_objects()
        if isinstance(obj, io.IOBase)
        and os.path.realpath(str(getattr(obj, "name", ""))) == target
        and not obj.closed
    )


def is_open(path: Path) -> bool:
    """Whether any of this process's file descriptors (or live file objects) refer to ``path``."""
    return fds_pointing_at(path) > 0


@contextmanager
def no_resource_warning() -> Iterator[None]:
    """A reader closes the file it opened itself: the file's own finaliser never has to (and
    warn). Collects garbage once, at the end of the block."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
        gc.collect()
    assert [w.message for w in caught if issubclass(w.category, ResourceWarning)] == []


# --- arrow batches ---------------------------------------------------------------------------


Row = dict[str, Any]


def rows_of(batches: list[pa.RecordBatch]) -> list[Row]:
    """Every row of ``batches``, in order, as dicts."""
    import pyarrow

    return pyarrow.Table.from_batches(batches).to_pylist() if batches else []


def expected_sizes(count: int, batch_size: int) -> list[int]:
    """Rows per batch for ``count`` records: full batches, then what is left, if anything."""
    rest = [count % batch_size] if count % batch_size else []
    return [batch_size] * (count // batch_size) + rest


def canonical(value: object) -> tuple[object, ...]:
    """A value with its exact type, floats by their bits (NaN == NaN, 0.0 != -0.0)."""
    if isinstance(value, float):
        return (float, struct.pack(">d", value))
    return (type(value), value)


def canonical_rows(rows: list[Row]) -> list[dict[str, tuple[object, ...]]]:
    return [{name: canonical(value) for name, value in row.items()} for row in rows]


BATCH = 100


# --- the command line ------------------------------------------------------------------------


# dump and convert read records untyped unless told: tests of Item semantics ask for Items.
ITEM = ["--type", "item"]
# How an error line about a record that is not an Item ends.
NOT_ITEMS_HINT = (
    "; if the stream does not hold Items, look at it with --type any, or get a record type for "
    "it from: msgpack-reader schema SOURCE"
)


EXIT_DATA_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def error_line(err: str) -> str:
    """The single ``error: ...`` line of ``err``; fails unless that is all there is."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert err == lines[0] + "\n"
    assert "Traceback" not in err
    return lines[0]


def fake_stdin(monkeypatch: pytest.MonkeyPatch, buffer: Any) -> None:
    """Replace ``sys.stdin`` by an object whose ``.buffer`` is ``buffer``."""
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=buffer))


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def item_from_json(line: str) -> Item:
    record = json.loads(line)
    assert list(record) == FIELD_NAMES
    return Item(**record)


def item_from_csv(row: list[str]) -> Item:
    return Item(
        int(row[0]),
        int(row[1]),
        int(row[2]),
        int(row[3]),
        int(row[4]),
        float(row[5]),
        row[6],
        row[7],
    )


# --- converted output ------------------------------------------------------------------------


BAR_DELAY = 0.1  # seconds before the auto mode's bar may appear (0.5 outside these tests)
FORMATS: tuple[OutputFormat, ...] = ("parquet", "arrow", "csv", "jsonl")
TEXT_FORMATS: tuple[OutputFormat, ...] = ("csv", "jsonl")
COLUMN_FORMATS: tuple[OutputFormat, ...] = ("parquet", "arrow")
PREVIOUS = b"the previous contents of OUT\n"
BROKEN_KINDS = ("truncated", "corrupt byte", "wrong field type")
MAGIC = {"parquet": b"PAR1", "arrow": b"ARROW1"}


def read_back(data: bytes, to: str) -> list[dict[str, Any]]:
    """The records of an ``Item`` stream converted to ``to``, read back independently.

    Checks the container too: the Arrow schema, the CSV header, the JSON keys, and that nothing
    precedes or follows the data.
    """
    if to in MAGIC:
        import pyarrow.ipc
        import pyarrow.parquet

        from msgpack_reader_py._arrow.reader import arrow_schema

        magic = MAGIC[to]
        assert data.startswith(magic), data[:16]
        assert data.endswith(magic), data[-16:]
        if to == "parquet":
            table = pyarrow.parquet.read_table(pyarrow.BufferReader(data))
        else:
            with pyarrow.ipc.open_file(pyarrow.BufferReader(data)) as reader:
                table = reader.read_all()
        assert table.schema == arrow_schema(Item)
        return table.to_pylist()
    text = data.decode("utf-8")
    assert "\r" not in text
    if to == "csv":
        rows = csv.DictReader(io.StringIO(text, newline=""))
        assert rows.fieldnames == FIELD_NAMES, text[:200]
        return [{name: FIELD_TYPES[name](value) for name, value in row.items()} for row in rows]
    assert to == "jsonl"
    lines = text.split("\n")
    assert lines.pop() == ""  # every line ends with "\n", and only "\n" ends a line
    records: list[dict[str, Any]] = [json.loads(line) for line in lines]
    for record in records:
        assert list(record) == FIELD_NAMES
    return records


def data_lines(data: bytes, to: str) -> int:
    """Lines of records in CSV or JSON Lines output (the CSV header not counted)."""
    lines = data.decode("utf-8").splitlines()
    return len(lines) - 1 if to == "csv" else len(lines)


def summary(count: int, out: Path | str, to: str) -> str:
    return f"Wrote {count} records to {out} ({to})\n"


def temporaries(out: Path) -> list[Path]:
    """The temporary files of a conversion into ``out``, as its documentation names them."""
    return sorted(out.parent.glob(f".{out.name}.*.part"))


def assert_directory_holds(directory: Path, names: set[str]) -> None:
    found = {entry.name for entry in directory.iterdir()}
    assert found == names, f"{directory} holds {sorted(found)}, not {sorted(names)}"


@dataclasses.dataclass(frozen=True)
class Broken:
    """A stream that fails at record ``index`` (at byte ``offset``), with ``message``."""

    data: bytes
    index: int
    offset: int
    message: str

    def error(self, name: object) -> str:
        """What the error line starts with, for a source shown as ``name``."""
        return f"error: {name}: record {self.index} at byte {self.offset}: {self.message}"


def broken_stream(
    kind: str, reference_items: list[Item], reference_bytes: bytes, record_offsets: list[int]
) -> Broken:
    """The reference stream, damaged as ``kind`` says, far enough in for output to exist."""
    if kind == "truncated":
        last = len(reference_items) - 1
        return Broken(
            reference_bytes[:-10], last, record_offsets[last], "stream ends inside a record"
        )
    if kind == "corrupt byte":
        index = 5000
        damaged = bytearray(reference_bytes)
        damaged[record_offsets[index]] = 0xC1  # never valid MessagePack
        return Broken(bytes(damaged), index, record_offsets[index], "not valid MessagePack")
    assert kind == "wrong field type"
    index = 7000
    record = reference_items[index].to_list()
    record[FIELD_NAMES.index("line")] = "not a number"
    data = (
        reference_bytes[: record_offsets[index]]
        + msgpack.packb(record)
        + reference_bytes[record_offsets[index + 1] :]
    )
    return Broken(
        data,
        index,
        record_offsets[index],
        "field `line` expected int, got str 'not a number'",
    )


# --- following a growing file ----------------------------------------------------------------


TIMEOUT = 30.0
"""Seconds a test waits for something to happen: a guard against a hang, never a measure of
speed."""


POLL = 0.005  # seconds between two checks of a condition being waited for


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


def caught_up(tail: Tail[Any], count: int, looks: Looks) -> None:
    """Until ``count`` records have arrived and the follower is waiting for more."""
    tail.wait_for(count)
    looks.wait_next()


def replaced(path: Path) -> str:
    return f"{path} was replaced by another file: reading it again from its start"


def rotate(path: Path, data: bytes, suffix: str = ".1") -> Path:
    """Log rotation by renaming: ``path`` becomes ``path`` + ``suffix``, and a new file with
    ``data`` appears at ``path`` whole (written beside it, then renamed into place)."""
    rotated = path.with_name(path.name + suffix)
    os.rename(path, rotated)
    fresh = path.with_name(path.name + ".new")
    fresh.write_bytes(data)
    os.rename(fresh, path)
    return rotated


# --- benchmarks ------------------------------------------------------------------------------


def fake_pyperf(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Stand in for ``pyperf.Runner``: what a harness's main registers, by name, as its time
    function and metadata (filled in as the harness runs)."""
    registered: dict[str, tuple[Any, dict[str, Any]]] = {}

    class FakeRunner:
        def __init__(self) -> None:
            self.metadata: dict[str, Any] = {}

        def bench_time_func(self, name: str, func: Any, metadata: dict[str, Any]) -> None:
            registered[name] = (func, metadata)

    monkeypatch.setitem(sys.modules, "pyperf", type(sys)("pyperf"))
    monkeypatch.setattr(sys.modules["pyperf"], "Runner", FakeRunner, raising=False)
    return registered


def msgpack_values(*, size: int, items: int, leaves: int) -> st.SearchStrategy[Any]:
    """Any MessagePack value: scalars (str and bin of up to ``size`` bytes, ext), and arrays
    and maps of up to ``items`` of them, nested, at most ``leaves`` scalars in all."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**63), max_value=2**64 - 1)
        | st.floats(allow_nan=False)
        | st.text(max_size=size)
        | st.binary(max_size=size)
        | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=size // 2))
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=items)
            | st.dictionaries(st.text(max_size=8), children, max_size=items)
        ),
        max_leaves=leaves,
    )


# The one extra set-up leaves out unless asked for, and the package it needs.
OPTIONAL_FACES = {"msgpack_reader_py.spark": "pyspark"}


def faces_here(faces: Iterable[str]) -> list[types.ModuleType]:
    """The public faces of ``faces``, imported, but for Spark's where pyspark is not installed
    (``./scripts/setup --spark`` adds it; CI's main run checks it). Any other face that fails
    to import fails the caller."""
    return [
        importlib.import_module(face)
        for face in faces
        if face not in OPTIONAL_FACES or importlib.util.find_spec(OPTIONAL_FACES[face]) is not None
    ]
