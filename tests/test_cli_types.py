"""The command line on anyone's MessagePack: ``--type``, untyped ``dump``, ``schema``, inferred
``convert``, ``--fluentd``, on the streams written by Go, Node.js, Rust and Java encoders."""

from __future__ import annotations

import base64
import csv
import datetime as dt
import io
import json
import math
import sys
import types
from pathlib import Path
from typing import Any

import msgpack
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from msgpack_reader_py._analysis import inferred
from msgpack_reader_py.cli import main

from .encoders import DATA, EVENT_FIELDS, EXPECTED, INNER_FIELDS
from .helpers import error_line

MAP_FIXTURES = sorted(DATA.glob("*_events_map.msgpack"))
ARRAY_FIXTURES = sorted(DATA.glob("*_events_array.msgpack"))
FLUENTD = DATA / "go_fluentd.msgpack"
EVENTS: list[dict[str, Any]] = EXPECTED["events"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def unix_nanoseconds(text: str) -> int:
    """An RFC 3339 instant (any fractional digits) in nanoseconds from the epoch."""
    seconds, _, fraction = text.rstrip("Z").partition(".")
    base = dt.datetime.fromisoformat(seconds).replace(tzinfo=dt.timezone.utc)
    return int(base.timestamp()) * 10**9 + int(fraction.ljust(9, "0"))


def stored(event: dict[str, Any]) -> dict[str, Any]:
    """An event as Arrow columns hold it (:func:`in_nanoseconds`): the timestamp to the
    nanosecond, the attributes (a map column) as key-value pairs."""
    attrs = list(event["attrs"].items())
    return {**event, "timestamp": unix_nanoseconds(event["timestamp"]), "attrs": attrs}


def in_nanoseconds(table: pa.Table) -> pa.Table:
    """``table`` with each timestamp column as its int64 nanoseconds from the epoch."""
    columns = [
        column.cast(pa.int64()) if pa.types.is_timestamp(column.type) else column
        for column in table.columns
    ]
    return pa.table(columns, names=table.column_names)


def as_array(event: dict[str, Any]) -> list[Any]:
    inner = [event["inner"][name] for name in INNER_FIELDS]
    return [inner if name == "inner" else event[name] for name in EVENT_FIELDS]


# --- dump: any stream, untyped -----------------------------------------------------------------


@pytest.mark.parametrize("path", MAP_FIXTURES, ids=lambda p: p.name)
def test_dump_prints_a_stream_of_maps_exactly(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    status, out, err = run(capsys, "dump", str(path))
    assert (status, err) == (0, "")
    # Timestamps to the nanosecond, floats as floats, nested maps as objects.
    assert [json.loads(line) for line in out.splitlines()] == EVENTS
    assert '"value":3.0' in out


@pytest.mark.parametrize("path", ARRAY_FIXTURES, ids=lambda p: p.name)
def test_dump_prints_a_stream_of_arrays_exactly(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    status, out, err = run(capsys, "dump", str(path), "--limit", "5")
    assert (status, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == [as_array(e) for e in EVENTS[:5]]


def test_dump_of_fluentd_entries_with_and_without_event_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(capsys, "dump", "--fluentd", str(FLUENTD))
    assert status == 0
    entries = [json.loads(line) for line in out.splitlines()]
    assert entries == [[e["time"], e["record"]] for e in EXPECTED["fluentd"]]
    status, out, _ = run(capsys, "dump", str(FLUENTD), "--limit", "1")
    (time, record) = json.loads(out)
    assert time["ext"] == 0
    assert len(base64.b64decode(time["base64"])) == 8
    assert record == EXPECTED["fluentd"][0]["record"]


def test_dump_renders_every_kind_of_value(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    value = {
        1: b"\x00\xff",
        None: True,
        2.5: "f",
        (1, "a"): [],
        "ts": msgpack.Timestamp(1730374586, 108998696),
        "ext": msgpack.ExtType(7, b"ab"),
        "floats": [math.nan, math.inf, -math.inf, 0.5],
        "nested": {"list": [1, [2, {"k": "v"}]]},
    }
    path = tmp_path / "values.msgpack"
    path.write_bytes(msgpack.packb(value, datetime=False))
    status, out, _ = run(capsys, "dump", str(path))
    assert status == 0
    assert json.loads(out) == {
        "1": "AP8=",
        "null": True,
        "2.5": "f",
        '[1,"a"]': [],
        "ts": "2024-10-31T11:36:26.108998696Z",
        "ext": {"ext": 7, "base64": "YWI="},
        "floats": [None, None, None, 0.5],
        "nested": {"list": [1, [2, {"k": "v"}]]},
    }
    status, out, _ = run(capsys, "dump", "--allow-nan", str(path))
    assert '"floats":[NaN,Infinity,-Infinity,0.5]' in out


def test_dump_of_broken_data_writes_the_good_records_then_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = (MAP_FIXTURES[0]).read_bytes()
    path = tmp_path / "cut.msgpack"
    path.write_bytes(good + b"\x82\xa1a")
    status, out, err = run(capsys, "dump", str(path))
    assert status == 1
    assert len(out.splitlines()) == len(EVENTS)
    line = error_line(err)
    assert f"record {len(EVENTS)} at byte {len(good)}: stream ends inside a record" in line


# --- schema, then --type FILE:Record -----------------------------------------------------------


@pytest.mark.parametrize("form", ["dataclass", "struct"])
@pytest.mark.parametrize("path", MAP_FIXTURES + ARRAY_FIXTURES, ids=lambda p: p.name)
def test_schema_prints_a_type_that_reads_the_stream_back_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, path: Path, form: str
) -> None:
    status, source, err = run(capsys, "schema", "--format", form, str(path))
    assert (status, err) == (0, "")
    module = tmp_path / "record.py"
    module.write_text(source)
    status, out, err = run(capsys, "read", "--type", f"{module}:Record", str(path))
    assert (status, err) == (0, "")
    assert out.startswith(f"Read {len(EVENTS)} records (")
    # The same type, through dump: every value as the stream holds it, timestamps to the
    # nanosecond (a msgpack.Timestamp: the encoders wrote nanoseconds).
    status, out, err = run(capsys, "dump", "--type", f"{module}:Record", str(path))
    assert (status, err) == (0, "")
    rows = [json.loads(line) for line in out.splitlines()]
    if "map" in path.name:
        assert [row["id"] for row in rows] == [e["id"] for e in EVENTS]
        assert [row["inner"] for row in rows] == [e["inner"] for e in EVENTS]
        assert [row["attrs"] for row in rows] == [e["attrs"] for e in EVENTS]
        stamps = [row["timestamp"] for row in rows]
    else:
        assert [row["f0"] for row in rows] == [e["id"] for e in EVENTS]
        assert [row["f10"] for row in rows] == [
            {"f0": e["inner"]["name"], "f1": e["inner"]["level"]} for e in EVENTS
        ]
        stamps = [row["f3"] for row in rows]
    assert stamps == [e["timestamp"] for e in EVENTS]


def test_schema_of_maps_names_fields_by_key(capsys: pytest.CaptureFixture[str]) -> None:
    status, source, _ = run(capsys, "schema", str(MAP_FIXTURES[0]))
    assert status == 0
    assert (
        "@dataclass\nclass RecordInner:\n    __forbid_unknown_keys__ = True\n"
        '    __wire_form__ = "map"\n    name: str\n'
        "    level: int\n"
    ) in source
    # Only the imports the classes use: the file passes a linter as it is.
    assert "from dataclasses import dataclass\n\nimport msgpack\n\n\n@dataclass" in source
    for line in (
        "    timestamp: msgpack.Timestamp",  # Go writes nanoseconds: a datetime would round them
        "    value: float",
        "    tags: list[str]",
        "    attrs: dict[str, int]",
        "    inner: RecordInner",
        "    note: str | None",
    ):
        assert line + "\n" in source


def test_schema_with_fluentd_reads_entries_as_timestamps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, source, _ = run(capsys, "schema", "--fluentd", str(FLUENTD))
    assert status == 0
    assert "    f0: msgpack.Timestamp\n    f1: RecordF1\n" in source  # Go's, to the nanosecond
    module = tmp_path / "entry.py"
    module.write_text(source)
    status, out, err = run(capsys, "dump", "--fluentd", "--type", f"{module}:Record", str(FLUENTD))
    assert (status, err) == (0, "")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["f1"] for r in rows] == [e["record"] for e in EXPECTED["fluentd"]]
    assert [r["f0"] for r in rows] == [e["time"] for e in EXPECTED["fluentd"]]  # every digit


def test_schema_renames_keys_that_are_not_identifiers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = [{"user-agent": "curl", "class": 1, "2xx": True, "@timestamp": "t"}] * 3
    path = tmp_path / "keys.msgpack"
    path.write_bytes(b"".join(msgpack.packb(r) for r in records))
    for form in ("dataclass", "struct"):
        status, source, _ = run(capsys, "schema", "--format", form, str(path))
        assert status == 0
        assert ("from dataclasses import dataclass, field\n" in source) is (form == "dataclass")
        module = tmp_path / f"keys_{form}.py"
        module.write_text(source)
        status, out, err = run(capsys, "dump", "--type", f"{module}:Record", str(path))
        assert (status, err) == (0, "")
        assert [json.loads(line) for line in out.splitlines()] == [
            {"user_agent": "curl", "class_": 1, "f_2xx": True, "timestamp": "t"}
        ] * 3


# --- convert: inferred columns ------------------------------------------------------------------


@pytest.mark.parametrize("path", MAP_FIXTURES, ids=lambda p: p.name)
def test_convert_infers_parquet_columns_with_exact_values(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, path: Path
) -> None:
    out_path = tmp_path / "events.parquet"
    status, out, err = run(capsys, "convert", str(path), "--to", "parquet", "-o", str(out_path))
    assert (status, err) == (0, "")
    assert out == f"Wrote {len(EVENTS)} records to {out_path} (parquet)\n"
    table = pq.read_table(out_path)
    schema = table.schema
    # Every encoder wrote nanoseconds, which a datetime would round.
    assert schema.field("timestamp").type == pa.timestamp("ns", tz="UTC")
    assert schema.field("inner").type == pa.struct(
        [pa.field("name", pa.string(), nullable=False), pa.field("level", pa.int64(), False)]
    )
    assert schema.field("tags").type.value_type == pa.string()
    assert pa.types.is_map(schema.field("attrs").type)
    assert schema.field("note").nullable
    assert in_nanoseconds(table).to_pylist() == [stored(event) for event in EVENTS]


@pytest.mark.parametrize("path", ARRAY_FIXTURES, ids=lambda p: p.name)
def test_convert_infers_columns_of_arrays_by_position(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, path: Path
) -> None:
    out_path = tmp_path / "events.arrow"
    status, _, err = run(capsys, "convert", str(path), "--to", "arrow", "-o", str(out_path))
    assert (status, err) == (0, "")
    with pa.ipc.open_file(str(out_path)) as reader:
        table = reader.read_all()
    assert table.schema.names == [f"f{i}" for i in range(len(EVENT_FIELDS))]
    inner = EVENT_FIELDS.index("inner")
    for row, event in zip(in_nanoseconds(table).to_pylist(), EVENTS, strict=True):
        values = as_array(stored(event))
        values[inner] = dict(zip(("f0", "f1"), values[inner], strict=True))
        assert list(row.values()) == values


def test_convert_to_csv_writes_nested_values_as_json_text(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, err = run(capsys, "convert", str(MAP_FIXTURES[0]), "--to", "csv", "-o", "-")
    assert (status, err) == (0, "")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [json.loads(r["inner"]) for r in rows] == [e["inner"] for e in EVENTS]
    assert [json.loads(r["tags"]) for r in rows] == [e["tags"] for e in EVENTS]
    assert [r["note"] or None for r in rows] == [e["note"] or None for e in EVENTS]


def test_a_later_record_of_another_type_is_seen_by_the_inference(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = [{"a": i, "b": "x"} for i in range(1500)] + [{"a": "oops", "b": "y"}]
    path = tmp_path / "late.msgpack"
    path.write_bytes(b"".join(msgpack.packb(r) for r in records))
    out_path = tmp_path / "late.parquet"
    # Inferred from every record, the column holds both: as JSON text, one type per column.
    status, _, err = run(capsys, "convert", str(path), "--to", "parquet", "-o", str(out_path))
    assert (status, err) == (0, "")
    assert pq.read_table(out_path).column("a").to_pylist() == [
        *map(str, range(1500)),
        '"oops"',
    ]
    # CSV holds such a column: each value as it is.
    status, out, err = run(capsys, "convert", str(path), "--to", "csv", "-o", "-")
    assert (status, err) == (0, "")
    assert out.splitlines()[-1] == "oops,y"


def test_inferred_from_the_first_records_only_a_misfit_names_its_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    records = [{"a": i, "b": "x"} for i in range(1500)] + [{"a": "oops", "b": "y"}]
    data = [msgpack.packb(r) for r in records]
    path = tmp_path / "late.msgpack"
    path.write_bytes(b"".join(data))
    out_path = tmp_path / "late.parquet"
    command = ("convert", str(path), "--to", "parquet", "-o", str(out_path), "--infer-from", "1000")
    status, _, err = run(capsys, *command)
    assert status == 1
    offset = sum(map(len, data[:1500]))
    assert error_line(err) == (
        f"error: {path}: record 1500 at byte {offset}: field `a` expected int, got str 'oops'; "
        "the record type was inferred from the first 1000 records, and does not hold this one: "
        "--infer-from all infers it from every record"
    )
    assert not out_path.exists()


def late_key_log(tmp_path: Path) -> tuple[Path, list[dict[str, Any]], int]:
    """A service's log whose trace_id key first appears at record 2500."""
    records: list[dict[str, Any]] = [
        {"level": "info", "message": f"m{i}", "ms": i} for i in range(2500)
    ]
    records += [{"level": "warn", "message": "late", "ms": 1, "trace_id": "t-1"}]
    records += [{"level": "info", "message": "after", "ms": 2}]
    data = [msgpack.packb(r) for r in records]
    path = tmp_path / "service.msgpack"
    path.write_bytes(b"".join(data))
    return path, records, sum(map(len, data[:2500]))


@pytest.mark.parametrize("to", ["parquet", "arrow", "csv"])
def test_a_key_first_seen_late_is_a_column_in_every_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, to: str
) -> None:
    path, records, _ = late_key_log(tmp_path)
    out_path = tmp_path / f"service.{to}"
    status, out, err = run(capsys, "convert", str(path), "--to", to, "-o", str(out_path))
    assert (status, err) == (0, "")
    assert out == f"Wrote {len(records)} records to {out_path} ({to})\n"
    if to == "csv":
        rows: list[dict[str, Any]] = list(csv.DictReader(io.StringIO(out_path.read_text())))
        assert [r["trace_id"] for r in rows] == [r.get("trace_id", "") for r in records]
    else:
        table = (
            pq.read_table(out_path)
            if to == "parquet"
            else pa.ipc.open_file(str(out_path)).read_all()
        )
        assert table.column("trace_id").to_pylist() == [r.get("trace_id") for r in records]
        assert table.to_pylist() == [{"trace_id": None, **r} for r in records]


def test_dump_as_csv_keeps_a_key_first_seen_late(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, records, _ = late_key_log(tmp_path)
    status, out, err = run(capsys, "dump", str(path), "--format", "csv")
    assert (status, err) == (0, "")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[2500]["trace_id"] == "t-1"
    assert len(rows) == len(records)


@pytest.mark.parametrize("to", ["parquet", "csv"])
def test_a_key_first_seen_late_on_stdin_is_a_column_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, to: str
) -> None:
    path, records, _ = late_key_log(tmp_path)
    stream = io.BufferedReader(io.BytesIO(path.read_bytes()))
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=stream))
    out_path = tmp_path / f"stdin.{to}"
    status, _, err = run(capsys, "convert", "-", "--to", to, "-o", str(out_path))
    assert (status, err) == (0, "")
    if to == "csv":
        rows = list(csv.DictReader(io.StringIO(out_path.read_text())))
        assert [r["trace_id"] for r in rows] == [r.get("trace_id", "") for r in records]
    else:
        assert pq.read_table(out_path).to_pylist() == [{"trace_id": None, **r} for r in records]
    assert sorted(tmp_path.iterdir()) == sorted([path, out_path])  # no temporary file left


@pytest.mark.parametrize("to", ["parquet", "csv"])
def test_past_what_is_kept_of_stdin_a_new_key_is_refused_naming_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, to: str
) -> None:
    """Of a stream longer than what is kept of it, a later record the types do not hold is
    an error naming it and --infer-from all; with --infer-from all it is a column."""
    path, records, offset = late_key_log(tmp_path)
    monkeypatch.setattr(inferred, "SPOOL_LIMIT", offset // 2)
    out_path = tmp_path / f"stdin.{to}"
    for command in [(), ("--infer-from", "all")]:
        stream = io.BufferedReader(io.BytesIO(path.read_bytes()))
        monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=stream))
        status, out, err = run(capsys, "convert", "-", "--to", to, "-o", str(out_path), *command)
        if command:
            assert (status, err) == (0, "")
            assert out == f"Wrote {len(records)} records to {out_path} ({to})\n"
            continue
        assert (status, out) == (1, "")
        assert error_line(err) == (
            f"error: <stdin>: record 2500 at byte {offset}: map has key 'trace_id', which names "
            f"no field; the record type was inferred from the records of the first {offset // 2} "
            "bytes of a stream, and does not hold this one: --infer-from all infers it from "
            "every record"
        )
        assert not out_path.exists()


def test_convert_infers_from_stdin_and_reads_it_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    records = [{"n": i, "s": str(i)} for i in range(3000)]
    stream = io.BufferedReader(io.BytesIO(b"".join(msgpack.packb(r) for r in records)))
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=stream))
    out_path = tmp_path / "stdin.parquet"
    status, _, err = run(capsys, "convert", "-", "--to", "parquet", "-o", str(out_path))
    assert (status, err) == (0, "")
    assert pq.read_table(out_path).to_pylist() == records


def test_convert_of_records_that_are_not_maps_or_arrays_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "ints.msgpack"
    path.write_bytes(msgpack.packb(1) + msgpack.packb([1]))
    status, _, err = run(capsys, "convert", str(path), "--to", "csv", "-o", "-")
    assert status == 1
    assert error_line(err).startswith(f"error: {path}: cannot infer columns for csv: records ")
    status, _, err = run(capsys, "schema", str(path))
    assert status == 1
    assert error_line(err).startswith(f"error: {path}: cannot infer a record type: ")


# --- read --type -------------------------------------------------------------------------------


def test_read_any_reports_records_bytes_and_rate(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "read", "--type", "any", str(FLUENTD))
    assert (status, err) == (0, "")
    size = FLUENTD.stat().st_size
    assert out.startswith(f"Read {len(EXPECTED['fluentd'])} records ({size:,} bytes) in ")
    assert "records/s" in out
    status, out, _ = run(capsys, "read", "--type", "any", "--json", str(FLUENTD))
    summary = json.loads(out)
    assert summary["records"] == len(EXPECTED["fluentd"])
    assert summary["bytes"] == size
    assert summary["sum_of_ids"] is None


def test_read_of_maps_that_are_not_items_suggests_what_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(capsys, "read", str(MAP_FIXTURES[0]))
    assert status == 1
    assert error_line(err).endswith(
        "; if the stream does not hold Items, look at it with --type any, or get a record type "
        "for it from: msgpack-reader schema SOURCE"
    )


def test_type_from_an_importable_module(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fluentd_records.py").write_text(
        "import datetime\nfrom typing import NamedTuple\n\n\n"
        "class Body(NamedTuple):\n    message: str\n    level: str\n    count: int\n\n\n"
        "class Entry(NamedTuple):\n    time: datetime.datetime\n    record: Body\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    status, out, err = run(
        capsys, "dump", "--fluentd", "--type", "fluentd_records:Entry", str(FLUENTD)
    )
    assert (status, err) == (0, "")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["record"] for r in rows] == [list(e["record"].values()) for e in EXPECTED["fluentd"]]


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("nothing", "expected item, any or MODULE:NAME"),
        ("no_such_module_here:X", "no module named 'no_such_module_here'"),
        ("missing.py:Record", "no such file: missing.py"),
        ("{py}:Nope", "has no Nope; it defines Odd, Record"),
        ("{py}:helper", "helper is not a record type"),
        ("{broken}:Record", "failed: ZeroDivisionError: division by zero"),
        ("{py}:Odd", "field `x` of Odd: Odd holds itself: a recursive record type"),
    ],
)
def test_a_bad_type_is_one_usage_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, says: str
) -> None:
    py = tmp_path / "good.py"
    py.write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Record:\n    x: int\n\n\n"
        "def helper() -> None:\n    pass\n\n\n@dataclass\nclass Odd:\n    x: 'Odd | None'\n"
    )
    broken = tmp_path / "broken.py"
    broken.write_text("1 / 0\n")
    name = name.format(py=py, broken=broken)
    for command in (["read"], ["dump"], ["convert", "--to", "csv", "-o", "-"]):
        status, out, err = run(capsys, *command, "--type", name, str(FLUENTD))
        assert status == 2
        assert out == ""
        line = error_line(err)
        assert line.startswith(f"error: --type {name}: ")
        assert says in line


EVENTS_PY = """\
import msgspec


class Click(msgspec.Struct, tag="click"):
    seq: int
    x: int
    y: int
    button: str


class Key(msgspec.Struct, tag="key"):
    seq: int
    code: str
    modifiers: list[str]
    repeat: bool


class Scroll(msgspec.Struct, tag="scroll"):
    seq: int
    dx: float
    dy: float
    at: object


Event = Click | Key | Scroll
"""

TAGGED_MAPS = DATA / "go_tagged_map.msgpack"


def test_type_names_a_module_level_union_alias(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = tmp_path / "events.py"
    module.write_text(EVENTS_PY)
    status, out, err = run(capsys, "read", "--type", f"{module}:Event", str(TAGGED_MAPS))
    assert (status, err) == (0, "")
    assert out.startswith("Read 12 records (")
    status, out, err = run(capsys, "dump", "--type", f"{module}:Event", str(TAGGED_MAPS))
    assert (status, err) == (0, "")
    first = json.loads(out.splitlines()[0])
    assert first == {"type": "click", "seq": 0, "x": 0, "y": 0, "button": "left"}


def test_a_union_that_cannot_be_told_apart_is_one_usage_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = tmp_path / "bad.py"
    module.write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass A:\n    a: int\n\n\n"
        "@dataclass\nclass B:\n    b: int\n\n\nEither = A | B\n"
    )
    status, out, err = run(capsys, "read", "--type", f"{module}:Either", str(TAGGED_MAPS))
    assert (status, out) == (2, "")
    line = error_line(err)
    assert line.startswith(f"error: --type {module}:Either: A | B: cannot tell A and B apart")
    assert "_loaded_" not in line


def test_schema_gives_a_type_per_kind_and_flat_one_for_all(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, err = run(capsys, "schema", str(TAGGED_MAPS))
    assert (status, err) == (0, "")
    assert f"from the 12 records of {TAGGED_MAPS}" in out
    assert out.endswith("Record = Click | Key | Scroll\n")
    saved = tmp_path / "inferred.py"
    saved.write_text(out)
    status, out, err = run(capsys, "read", "--type", f"{saved}:Record", str(TAGGED_MAPS))
    assert (status, err) == (0, "")
    status, out, err = run(capsys, "schema", "--flat", str(TAGGED_MAPS))
    assert (status, err) == (0, "")
    assert "Record =" not in out
    assert (
        'class Record:\n    __forbid_unknown_keys__ = True\n    __wire_form__ = "map"\n'
        "    type: str\n"
    ) in out
