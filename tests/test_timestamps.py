"""``msgpack.Timestamp`` fields: the timestamp extension to the nanosecond, in records, Arrow
and Parquet columns, JSON Lines and CSV, from this package's own streams and from Go, Java,
JavaScript and Rust encoders; anything else refused, by name."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import importlib.metadata
import io
import json
import re
import typing
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import RecordError, StreamingReader, convert, fluentd_event_time, read_table
from msgpack_reader_py._analysis.inferred import FIRST_CHECKED, infer_sources, table_type
from msgpack_reader_py._types.extensions import WHOLE_MICROSECONDS
from msgpack_reader_py.cli import main

from .encoders import DATA, EVENT_FILES, EXPECTED, Event

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
DUCKDB_KEEPS_NANOSECONDS = int(importlib.metadata.version("duckdb").split(".")[0]) >= 2
LOST = r"field `at` holds timestamps to the nanosecond \(msgpack\.Timestamp\), and DuckDB"
ARROW_NS = (-(2**63), 2**63 - 1)  # what an int64 column of nanoseconds holds
PAST_THE_YEARS = msgpack.Timestamp(-(2**62), 0)  # a valid timestamp no datetime holds


@dataclasses.dataclass
class Stamped:
    id: int
    at: msgpack.Timestamp
    until: msgpack.Timestamp | None = None
    marks: list[msgpack.Timestamp] = dataclasses.field(default_factory=list)


# The encoders' ``events`` records with their timestamp read whole: the tests' Event, but for
# the one field.
ExactEvent: Any = dataclasses.make_dataclass(
    "ExactEvent",
    [
        (name, msgpack.Timestamp if name == "timestamp" else annotation)
        for name, annotation in typing.get_type_hints(Event).items()
    ],
)


def nanoseconds(text: str) -> int:
    """An RFC 3339 instant in UTC (any number of fractional digits) in ns from the epoch."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    moment = dt.datetime.fromisoformat(whole).replace(tzinfo=dt.timezone.utc)
    return (moment - EPOCH) // dt.timedelta(seconds=1) * 10**9 + int(fraction.ljust(9, "0"))


# Every instant an int64 of nanoseconds holds, and so every one a Parquet column holds: each
# of the extension's three forms (32, 64 and 96 bits) is drawn.
timestamps = st.integers(*ARROW_NS).map(msgpack.Timestamp.from_unix_nano)
records = st.builds(
    lambda i, at, until, marks: [i, at, until, marks],
    st.integers(0, 2**63 - 1),
    timestamps,
    st.none() | timestamps,
    st.lists(timestamps, max_size=3),
)


@settings(deadline=None)  # the first example compiles the decoders and starts pyarrow
@given(st.lists(records, min_size=1, max_size=8))
def test_every_nanosecond_reaches_records_columns_and_text(rows: list[list[Any]]) -> None:
    data = b"".join(msgpack.packb(r) for r in rows)
    read = [[r.id, r.at, r.until, r.marks] for r in StreamingReader(data, Stamped)]
    assert read == rows  # msgpack.Timestamp compares seconds and nanoseconds

    table = read_table(data, Stamped)
    assert str(table.schema.field("at").type) == "timestamp[ns, tz=UTC]"
    columns = {name: table.column(name).cast(pa.int64()).to_pylist() for name in ("at", "until")}
    assert columns["at"] == [r[1].to_unix_nano() for r in rows]
    assert columns["until"] == [None if r[2] is None else r[2].to_unix_nano() for r in rows]

    text = io.BytesIO()
    convert(data, text, "jsonl", record_type=Stamped)
    lines = [json.loads(line) for line in text.getvalue().splitlines()]
    assert [nanoseconds(line["at"]) for line in lines] == columns["at"]
    assert [[nanoseconds(m) for m in line["marks"]] for line in lines] == [
        [m.to_unix_nano() for m in r[3]] for r in rows
    ]

    text = io.BytesIO()
    convert(data, text, "csv", record_type=Stamped)
    cells = list(csv.DictReader(io.StringIO(text.getvalue().decode())))
    assert [nanoseconds(cell["at"]) for cell in cells] == columns["at"]
    assert [cell["until"] or None for cell in cells] == [
        None if r[2] is None else f"{r[2].to_datetime():%Y-%m-%dT%H:%M:%S}.{r[2].nanoseconds:09d}Z"
        for r in rows
    ]


def test_go_java_javascript_and_rust_timestamps_keep_their_nine_digits(tmp_path: Path) -> None:
    expected = [nanoseconds(event["timestamp"]) for event in EXPECTED["events"]]
    assert any(n % 1000 for n in expected)  # a datetime would round these
    for name in EVENT_FILES:
        path = DATA / name
        read = [e.timestamp.to_unix_nano() for e in StreamingReader(path, ExactEvent)]
        assert read == expected, name
        out = tmp_path / f"{name}.parquet"
        convert(path, out, "parquet", record_type=ExactEvent)
        column = pq.read_table(out).column("timestamp")
        assert column.cast(pa.int64()).to_pylist() == expected, name


def stamps_1ns_apart(directory: Path) -> tuple[str, Path]:
    """A record type in a module of its own, as ``--type`` names it, and a stream of three of
    its records whose timestamps are 1 ns apart."""
    module = directory / "exact.py"
    module.write_text(
        "import dataclasses\nimport msgpack\n\n\n@dataclasses.dataclass\nclass Record:\n"
        "    id: int\n    at: msgpack.Timestamp\n"
    )
    path = directory / "stamps.msgpack"
    ones = [msgpack.Timestamp(946684800, n) for n in (0, 1, 2)]
    path.write_bytes(b"".join(msgpack.packb([i, t]) for i, t in enumerate(ones)))
    return f"{module}:Record", path


def test_the_command_line_writes_all_nine_digits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record, path = stamps_1ns_apart(tmp_path)
    assert main(["dump", "--type", record, "--format", "csv", str(path)]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (
        "id,at\n0,2000-01-01T00:00:00.000000000Z\n1,2000-01-01T00:00:00.000000001Z\n"
        "2,2000-01-01T00:00:00.000000002Z\n",
        "",
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (msgpack.ExtType(5, b"ab"), "field `at` expected Timestamp, got extension type 5"),
        ("2000-01-01", "field `at` expected Timestamp, got str '2000-01-01'"),
        (1700000000, "field `at` expected Timestamp, got int 1700000000"),
    ],
)
def test_anything_but_the_timestamp_is_refused_by_name(value: Any, reason: str) -> None:
    first = msgpack.packb([0, msgpack.Timestamp(1, 2)])
    reader = StreamingReader(first + msgpack.packb([1, value]), Stamped)
    assert next(reader).at == msgpack.Timestamp(1, 2)
    with pytest.raises(RecordError) as caught:
        next(reader)
    assert (caught.value.index, caught.value.offset) == (1, len(first))
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("extension", "why"),
    [
        (b"\xd5\xff\x00\x01", "a broken timestamp of 2 bytes"),  # no such form
        (b"\xd7\xff" + (10**9 << 34).to_bytes(8, "big"), "a broken timestamp of 8 bytes"),
    ],
)
def test_a_broken_timestamp_is_refused(extension: bytes, why: str) -> None:
    with pytest.raises(RecordError, match=f"field `at` expected Timestamp, got {why}"):
        list(StreamingReader(b"\x92\x00" + extension, Stamped))


@dataclasses.dataclass
class Wide:
    at: dt.datetime
    payload: Any = None


@pytest.mark.parametrize(
    ("record", "path"),
    [
        ([PAST_THE_YEARS], "at"),
        ([EPOCH, PAST_THE_YEARS], "payload"),
        ([EPOCH, {"k": [1, PAST_THE_YEARS]}], "payload['k'][1]"),
    ],
)
def test_a_timestamp_past_datetimes_years_is_named_where_a_datetime_holds_it(
    record: list[Any], path: str
) -> None:
    # msgspec refuses it with a path and no value: the reader says which, and where.
    with pytest.raises(RecordError) as caught:
        list(StreamingReader(msgpack.packb(record, datetime=True), Wide))
    assert caught.value.reason == (
        f"field `{path}` holds the timestamp -4611686018427387904000000000 ns since the epoch, "
        "outside datetime's range (years 1 to 9999, to the microsecond)"
    )


def test_a_column_refuses_a_timestamp_past_its_years_by_name() -> None:
    late = msgpack.Timestamp(2**40, 5)  # the year 36812: a record holds it, a column does not
    data = msgpack.packb([0, msgpack.Timestamp(0, 1)]) + msgpack.packb([1, late])
    assert list(StreamingReader(data, Stamped))[1].at == late
    with pytest.raises(RecordError) as caught:
        read_table(data, Stamped)
    assert caught.value.index == 1
    assert "field `at`: Timestamp of 1099511627776000000005 ns" in caught.value.reason
    assert "which holds the years 1677 to 2262" in caught.value.reason


def test_a_struct_and_a_union_of_kinds_hold_timestamps() -> None:
    class Start(msgspec.Struct, tag="start", array_like=True, gc=False):
        at: msgpack.Timestamp

    class Stop(msgspec.Struct, tag="stop", array_like=True, gc=False):
        code: int

    when = msgpack.Timestamp(1730374586, 108998696)
    data = msgpack.packb(["start", when]) + msgpack.packb(["stop", 3])
    assert list(StreamingReader(data, Start | Stop)) == [Start(when), Stop(3)]
    table = read_table(data, Start | Stop)
    assert table.column("at").cast(pa.int64()).to_pylist() == [when.to_unix_nano(), None]


@pytest.mark.parametrize("record_type", [Stamped, None], ids=["declared", "inferred"])
def test_polars_and_duckdb_keep_the_nanoseconds(tmp_path: Path, record_type: Any) -> None:
    import duckdb
    import polars as pl

    from msgpack_reader_py.duckdb import read_msgpack
    from msgpack_reader_py.polars import scan_msgpack

    stamps = [msgpack.Timestamp(1730374586, 108998696 + i) for i in range(3)]  # 1 ns apart
    path = tmp_path / "exact.msgpack"
    path.write_bytes(b"".join(msgpack.packb({"id": i, "at": t}) for i, t in enumerate(stamps)))
    wanted = [t.to_unix_nano() for t in stamps]
    frame = scan_msgpack(path, record_type).collect()
    assert frame.schema["at"] == pl.Datetime("ns", "UTC")
    assert frame["at"].dt.epoch("ns").to_list() == wanted
    connection = duckdb.connect()
    if not DUCKDB_KEEPS_NANOSECONDS:  # DuckDB 1.x: refused by name, never cut
        with pytest.raises(TypeError, match=LOST):
            read_msgpack(str(path), record_type, connection=connection)
        return
    relation = read_msgpack(str(path), record_type, connection=connection)
    got = relation.query("stamps", 'SELECT epoch_ns("at") FROM stamps')
    assert got is not None
    assert got.fetchall() == [(n,) for n in wanted]


def test_a_query_keeps_the_nanoseconds_or_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--where`` runs in DuckDB: all nine digits come through it, or the command fails
    before a record is read (a DuckDB that holds microseconds)."""
    record, path = stamps_1ns_apart(tmp_path)
    argv = ["dump", "--type", record, "--format", "csv", "--where", "id > 0"]
    status = main([*argv, str(path)])
    out, err = capsys.readouterr()
    if DUCKDB_KEEPS_NANOSECONDS:
        assert (status, err) == (0, "")
        assert out.splitlines()[1:] == [
            "1,2000-01-01T00:00:00.000000001Z",
            "2,2000-01-01T00:00:00.000000002Z",
        ]
    else:
        assert (status, out) == (2, "")
        assert re.search(LOST, err)


# --------------------------------------------------------------------------------------------
# Inferred types: a timestamp with nanoseconds makes its field a msgpack.Timestamp, wherever it
# first appears; a type inferred from fewer records refuses it, never rounds it.
# --------------------------------------------------------------------------------------------

# Where the first timestamp with nanoseconds comes: among the first records inferred from, at
# the bound of those, and past the records a check gathers before it widens the type.
FIRST_NANOSECONDS = [0, 1, FIRST_CHECKED - 1, FIRST_CHECKED, FIRST_CHECKED + 1, 350]


def microsecond_stamps(count: int, late: int, nanoseconds: int) -> list[dict[str, Any]]:
    """``count`` records of whole microseconds, but record ``late``, whose timestamp is
    ``nanoseconds`` past its second, at any depth (a nested record's, a list's)."""
    records = []
    for index in range(count):
        fraction = nanoseconds if index == late else 1000 * index
        stamp = msgpack.Timestamp(1_700_000_000 + index, fraction)
        records.append({"id": index, "at": stamp, "inner": {"stamps": [stamp]}})
    return records


@settings(max_examples=30, deadline=None)
@given(
    late=st.sampled_from(FIRST_NANOSECONDS),
    nanoseconds=st.integers(0, 999_999_999).filter(lambda n: n % 1000 != 0),
)
def test_an_inferred_type_keeps_a_timestamps_nanoseconds_wherever_they_first_appear(
    late: int, nanoseconds: int
) -> None:
    records = microsecond_stamps(max(FIRST_NANOSECONDS) + 2, late, nanoseconds)
    data = b"".join(msgpack.packb(r) for r in records)
    out = io.BytesIO()
    convert(data, out, "csv", record_type=None)  # no type: inferred
    rows = list(csv.DictReader(io.StringIO(out.getvalue().decode())))
    assert [row["at"] for row in rows] == [rfc3339(r["at"]) for r in records]
    assert [json.loads(row["inner"])["stamps"] for row in rows] == [
        [rfc3339(r["at"])] for r in records
    ]
    table = read_table(data, files_type_of(data))
    assert table.schema.field("at").type == pa.timestamp("ns", tz="UTC")
    assert table.column("at").cast(pa.int64()).to_pylist() == [
        r["at"].to_unix_nano() for r in records
    ]


def test_a_type_inferred_from_the_first_records_refuses_a_later_nanosecond(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Inferred from the first 10 records, whole microseconds, a datetime: the 11th, with
    nanoseconds, is refused by name after the 10 before it, never rounded."""
    path = tmp_path / "late.msgpack"
    records = microsecond_stamps(12, 10, 1)
    path.write_bytes(b"".join(msgpack.packb(r) for r in records))
    argv = ["convert", str(path), "--infer-from", "10", "--to", "csv", "-o", "-"]
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 1
    assert len(out.splitlines()) == 1 + 10  # the header, the records before it
    offset = len(b"".join(msgpack.packb(r) for r in records[:10]))
    assert err == (
        f"error: {path}: record 10 at byte {offset}: field `at` expected datetime, got timestamp "
        "2023-11-14T22:13:30.000000001Z, whose nanoseconds a datetime would round; the record "
        "type was inferred from the first 10 records, and does not hold this one: "
        "--infer-from all infers it from every record\n"
    )
    # At any depth: a nested list's timestamp, the record's own whole microseconds.
    nested = [*records[:10], {**records[10], "at": records[9]["at"]}]
    data = b"".join(msgpack.packb(r) for r in nested)
    read: list[Any] = []
    with pytest.raises(
        RecordError, match=r"record 10 .*field `inner\.stamps\[0\]` expected datetime"
    ):
        read.extend(StreamingReader(data, files_type_of(data, 10)))
    assert len(read) == 10


def test_fluentd_event_times_keep_their_nanoseconds_in_an_inferred_type(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Go's Fluentd EventTime (extension 0) carries nanoseconds: read with --fluentd, the
    inferred field is a msgpack.Timestamp, and every output writes all nine digits."""
    path = DATA / "go_fluentd.msgpack"
    status = main(["convert", "--fluentd", str(path), "--to", "csv", "-o", "-"])
    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    times = [row["f0"] for row in csv.DictReader(io.StringIO(out))]
    assert times == [e["time"] for e in EXPECTED["fluentd"]]


def rfc3339(stamp: msgpack.Timestamp) -> str:
    seconds, nanoseconds = divmod(stamp.to_unix_nano(), 10**9)
    return f"{EPOCH + dt.timedelta(seconds=seconds):%Y-%m-%dT%H:%M:%S}.{nanoseconds:09d}Z"


def files_type_of(data: bytes, infer_from: int | None = None) -> Any:
    """The record type ``convert`` infers for ``data``."""
    inferred = infer_sources([data], infer_from)[1]
    return table_type(inferred)


def test_a_timestamp_past_a_datetimes_years_makes_its_field_a_timestamp(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A timestamp a datetime cannot hold (past the year 9999) among later records: the
    check once refused it, and the same type inferred again refused it again, without end.
    Its field is a msgpack.Timestamp: JSON Lines writes it as the extension it is, and an Arrow
    column of nanoseconds refuses it by name."""
    far = msgpack.Timestamp(2**40, 5000)
    records = [{"id": i, "at": msgpack.Timestamp(i, 0) if i < 150 else far} for i in range(152)]
    path = tmp_path / "far.msgpack"
    path.write_bytes(b"".join(msgpack.packb(r) for r in records))
    status = main(["dump", str(path), "--format", "csv"])
    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    cells = [row["at"] for row in csv.DictReader(io.StringIO(out))]
    assert cells[:2] == ["1970-01-01T00:00:00.000000000Z", "1970-01-01T00:00:01.000000000Z"]
    assert json.loads(cells[150]) == {"ext": -1, "base64": "AAATiAAAAQAAAAAA"}
    status = main(["convert", str(path), "--to", "parquet", "-o", str(tmp_path / "far.parquet")])
    _, err = capsys.readouterr()
    assert status == 1
    assert "record 150 at byte" in err
    assert "field `at`: Timestamp of 1099511627776000005000 ns from the epoch" in err


@pytest.mark.parametrize(
    ("select", "where", "read"),
    [("id", "id > 0", False), ("id", "\"at\" > '2000-01-01'", True), ("id,at", "id > 0", True)],
)
def test_a_query_that_neither_reads_nor_writes_the_nanoseconds_runs_on_any_duckdb(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, select: str, where: str, read: bool
) -> None:
    """DuckDB 1.x would cut the nanoseconds: a query that reads or writes the field is refused
    there, by name, before a record is read; one that does neither runs without it (DuckDB
    itself tells which, binding the query with and without the field)."""
    record, path = stamps_1ns_apart(tmp_path)
    argv = ["dump", "--type", record, "--select", select, "--where", where, str(path)]
    status = main(argv)
    out, err = capsys.readouterr()
    if read and not DUCKDB_KEEPS_NANOSECONDS:
        assert (status, out) == (2, "")
        assert re.search(LOST, err)
        return
    assert (status, err) == (0, "")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["id"] for row in rows] == [1, 2]
    if "at" in select:
        assert [row["at"] for row in rows] == [
            "2000-01-01T00:00:00.000000001Z",
            "2000-01-01T00:00:00.000000002Z",
        ]


def test_a_query_of_nanoseconds_keeps_every_other_column_as_it_is(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Through DuckDB 2.0 a bool comes back as Arrow's ``bool8`` extension; beside a column of
    nanoseconds (given to JSON Lines and CSV as its int64s) it once came back as 0 and 1."""
    path = tmp_path / "flags.msgpack"
    records = [{"id": i, "ok": i == 1, "at": msgpack.Timestamp(i, 1)} for i in range(2)]
    path.write_bytes(b"".join(msgpack.packb(r) for r in records))
    status = main(["dump", str(path), "--where", "id >= 0", "--format", "jsonl"])
    out, err = capsys.readouterr()
    if not DUCKDB_KEEPS_NANOSECONDS:
        assert status == 2
        assert re.search(r"field `at` holds timestamps to the nanosecond", err)
        return
    assert (status, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == [
        {"id": 0, "ok": False, "at": "1970-01-01T00:00:00.000000001Z"},
        {"id": 1, "ok": True, "at": "1970-01-01T00:00:01.000000001Z"},
    ]


@dataclasses.dataclass
class Containers:
    pair: tuple[int, msgpack.Timestamp]
    by_name: dict[str, msgpack.Timestamp]
    many: tuple[msgpack.Timestamp, ...]


@pytest.mark.parametrize(("at", "path"), [(0, "pair[1]"), (1, "by_name['b']"), (2, "many[2]")])
def test_a_value_refused_in_a_container_is_named_by_its_index_or_key(at: int, path: str) -> None:
    stamp = msgpack.Timestamp(1, 1)
    wrong = msgpack.ExtType(5, b"ab")
    fields: list[Any] = [[1, stamp], {"a": stamp, "b": stamp}, [stamp, stamp, stamp]]
    good = msgpack.packb(fields)
    fields[at] = (
        [1, wrong] if at == 0 else {"a": stamp, "b": wrong} if at == 1 else [stamp] * 2 + [wrong]
    )
    read: list[Containers] = []
    with pytest.raises(
        RecordError,
        match=rf"record 1 .*field `{re.escape(path)}` expected Timestamp, got extension type 5",
    ):
        read.extend(StreamingReader(good + msgpack.packb(fields), Containers))
    assert read == [Containers((1, stamp), {"a": stamp, "b": stamp}, (stamp, stamp, stamp))]


def test_a_timestamp_field_takes_an_event_time_with_fluentd_and_nothing_else() -> None:
    """With fluentd_event_time, a msgpack.Timestamp field reads Fluentd's EventTime (extension
    0) to the nanosecond, the timestamp extension too; any other extension is refused."""
    event_time = msgpack.ExtType(
        0, (1730374586).to_bytes(4, "big") + (108998696).to_bytes(4, "big")
    )
    stamp = msgpack.Timestamp(1, 5)
    data = msgpack.packb([0, event_time]) + msgpack.packb([1, stamp])
    read = list(StreamingReader(data, Stamped, ext_hook=fluentd_event_time))
    assert [r.at for r in read] == [msgpack.Timestamp(1730374586, 108998696), stamp]
    other = msgpack.packb([2, msgpack.ExtType(5, b"ab")])
    with pytest.raises(RecordError, match="field `at` expected Timestamp, got extension type 5"):
        list(StreamingReader(other, Stamped, ext_hook=fluentd_event_time))


@dataclasses.dataclass
class Checked:
    """An inferred type's checked datetime field, as the check of every record reads it."""

    at: typing.Annotated[dt.datetime, WHOLE_MICROSECONDS]


def test_a_checked_datetime_takes_what_a_hook_makes_and_refuses_what_a_datetime_cannot_hold() -> (
    None
):
    made = dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc)

    def hook(code: int, data: bytes) -> Any:
        return made if code == 5 else msgspec.msgpack.Ext(code, data)

    data = msgpack.packb([msgpack.ExtType(5, b"x")]) + msgpack.packb([msgpack.Timestamp(1, 2000)])
    read = list(StreamingReader(data, Checked, ext_hook=hook))
    assert [r.at for r in read] == [made, EPOCH + dt.timedelta(seconds=1, microseconds=2)]
    far = msgpack.packb([msgpack.Timestamp(2**40, 0)])
    with pytest.raises(
        RecordError, match=r"field `at` holds the timestamp .* outside datetime's range"
    ):
        list(StreamingReader(far, Checked))
    nanos = msgpack.packb([msgpack.Timestamp(1, 1)])
    with pytest.raises(
        RecordError,
        match=re.escape(
            "field `at` expected datetime, got timestamp 1970-01-01T00:00:01.000000001Z"
        ),
    ):
        list(StreamingReader(nanos, Checked))
