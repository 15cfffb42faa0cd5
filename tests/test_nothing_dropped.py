"""Nothing dropped by construction: a record type inferred from some records refuses, at every
depth, whatever they did not show, so every value of the input reaches every output, or the
command fails loudly naming the record. Checked as users work: ``schema`` and a typed read of
what it prints, ``convert`` to every format, ``dump --where``, Polars, DuckDB and Dask, on
generated streams whose keys, types and nulls first appear at any record, around every bound
of the inference (the first records it infers from, the records it gathers before widening)."""

from __future__ import annotations

import base64
import csv
import dataclasses
import datetime as dt
import io
import json
import math
import re
import tempfile
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import duckdb
import msgpack
import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msgpack_reader_py import ReaderError, RecordError, StreamingReader
from msgpack_reader_py._analysis.inferred import FIRST_CHECKED, MISFITS, files_type
from msgpack_reader_py._arrow.reader import read_table
from msgpack_reader_py._base.options import ReadOptions
from msgpack_reader_py._types.names import record_type_named
from msgpack_reader_py._types.record_type import record_fields, record_kind
from msgpack_reader_py.cli import main
from msgpack_reader_py.dask import read_dataframe
from msgpack_reader_py.duckdb import read_msgpack as duckdb_read
from msgpack_reader_py.polars import read_msgpack as polars_read

from .helpers import error_line, examples

# ------------------------------------------------------------------------------------------
# What the streams hold
# ------------------------------------------------------------------------------------------

KEYS = ["a", "b", "c", "d", "e"]  # identifiers: a field is named as its key
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

# Timestamps to the microsecond, which a datetime holds, to the year 2514 the 8-byte form
# reaches; and to the nanosecond, which make their field a msgpack.Timestamp (an AnyValue
# among values of other types), in the years an Arrow column of nanoseconds holds (past them,
# Arrow refuses one, loudly).
TIMESTAMPS = st.builds(
    lambda seconds, micros: msgpack.Timestamp(seconds, micros * 1000),
    st.integers(0, 2**34 - 1),
    st.integers(0, 999_999),
) | st.builds(msgpack.Timestamp, st.integers(0, 2**33 - 1), st.integers(0, 999_999_999))
SCALARS = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(2**63, 2**64 - 1),  # over int64: Arrow refuses it, loudly
    st.floats(),  # NaN and the infinities too: kept by every output, strict JSON's aside
    st.text(max_size=4),
    st.binary(max_size=3),
    st.booleans(),
    st.none(),
    TIMESTAMPS,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    ),
    max_leaves=6,
)
# Where something first appears: around every bound the inference has.
BOUNDS = sorted(
    {0, 1, FIRST_CHECKED - 1, FIRST_CHECKED, FIRST_CHECKED + 1, FIRST_CHECKED + MISFITS}
    | {FIRST_CHECKED + MISFITS + 1, 2 * FIRST_CHECKED + MISFITS - 1}
)


@st.composite
def streams(draw: st.DrawFn) -> list[Any]:
    """Records all maps or all arrays: most of them one shape, and a few others (new keys,
    types, nulls, nesting, lengths) first appearing at any of :data:`BOUNDS`."""
    count = draw(st.integers(1, max(BOUNDS) + 2))
    maps = draw(st.booleans())

    def record(index: int) -> Any:
        if maps:
            return {"id": index, **draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=3))}
        return [index, *draw(st.lists(VALUES, max_size=3))]

    usual = record(0)
    at = draw(st.lists(st.sampled_from([b for b in BOUNDS if b < count]), max_size=3))
    records = []
    for index in range(count):
        if index in at:
            records.append(record(index))
        elif maps:
            records.append({**usual, "id": index})
        else:
            records.append([index, *usual[1:]])
    return records


def packed(records: list[Any]) -> bytes:
    return b"".join(msgpack.packb(r, datetime=False) for r in records)


# ------------------------------------------------------------------------------------------
# What counts as the same value
# ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Bool:
    """A bool, told apart from the int it equals."""

    value: bool


@dataclasses.dataclass(frozen=True)
class Instant:
    """A timestamp, as nanoseconds from the epoch: a ``msgpack.Timestamp`` and a ``datetime``
    (pandas' ``Timestamp`` with its nanoseconds) that are the same instant are one."""

    nanoseconds: int

    @classmethod
    def of(cls, value: msgpack.Timestamp | dt.datetime) -> Instant:
        if isinstance(value, msgpack.Timestamp):
            return cls(value.to_unix_nano())
        micros = (value - EPOCH) // dt.timedelta(microseconds=1)
        return cls(micros * 1000 + getattr(value, "nanosecond", 0))


def canon(value: Any) -> Any:
    """A value as every output can give it back: a map without its null entries (a key left
    out and a key holding nil are one), an array without trailing nulls (a short array and one
    padded with nil are one), a record by position as the array it was, a timestamp its
    :class:`Instant`, a bool apart from the int it equals."""
    if isinstance(value, dict):
        keys = list(value)
        if keys and all(re.fullmatch(r"f\d+", str(k)) for k in keys):
            # A record by position (an array read as fields f0, f1, ...): the array again.
            ordered = sorted(keys, key=lambda k: int(str(k)[1:]))
            return canon([value[k] for k in ordered])
        return {k: canon(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        items = [canon(v) for v in value]
        while items and items[-1] is None:
            items.pop()
        return items
    if isinstance(value, (msgpack.Timestamp, dt.datetime)):
        return Instant.of(value)
    if isinstance(value, bool):
        return Bool(value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def wire(value: Any) -> Any:
    """A typed record as the plain value it was read from: fields by their map keys (a tagged
    Struct's tag too), nested records likewise."""
    kind = record_kind(type(value))
    if kind not in (None, "tuple"):
        plain = {s.wire_name: wire(getattr(value, s.name)) for s in record_fields(type(value))}
        config = getattr(type(value), "__struct_config__", None)
        if config is not None and config.tag is not None:
            plain[config.tag_field] = config.tag
        return plain
    if isinstance(value, (list, tuple)):
        return [wire(v) for v in value]
    if isinstance(value, dict):
        return {k: wire(v) for k, v in value.items()}
    return value


def same(got: Any, expected: Any) -> bool:
    """Whether ``got``, read back from a typed output, is the canonical ``expected``: JSON text
    where a column holds values of no one type (parsed, its strings standing for bytes and
    timestamps), a map column as pairs or as Polars' key/value structs."""
    if isinstance(got, str) and got != expected and expected is not None:
        try:
            parsed = json.loads(got)
        except ValueError:
            return False
        return same_json(parsed, expected)
    if isinstance(expected, dict) and isinstance(got, list):
        if all(isinstance(p, dict) and p.keys() == {"key", "value"} for p in got):
            got = {p["key"]: p["value"] for p in got}  # a map, as Polars lists it
        elif all(isinstance(p, tuple) and len(p) == 2 for p in got):
            got = dict(got)  # a map, as pyarrow lists its pairs
    got = canon(got)
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return False
        got = {k: v for k, v in got.items() if v is not None}
        return got.keys() == expected.keys() and all(same(got[k], expected[k]) for k in got)
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(map(same, got, expected))
    if isinstance(expected, Bool):
        return bool(got == expected)
    if isinstance(got, (int, float)) and isinstance(expected, (int, float)):
        return same_number(got, expected)
    return type(got) is type(expected) and got == expected


def same_number(got: float, expected: float) -> bool:
    """Equal, NaN to NaN (which equals nothing), -0.0 to -0.0 (which equals 0.0)."""
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(expected, float) and expected == 0.0:
        return isinstance(got, float) and math.copysign(1, got) == math.copysign(1, expected)
    return bool(got == expected)


def same_json(got: Any, expected: Any) -> bool:
    """Whether parsed JSON ``got`` holds the canonical ``expected``, as JSON writes it: bytes
    as base64, a timestamp as RFC 3339 text, a record by position as an object of its
    fields."""
    if isinstance(got, dict) and got and all(re.fullmatch(r"f\d+", k) for k in got):
        got = [got[k] for k in sorted(got, key=lambda k: int(k[1:]))]  # a record by position
    if isinstance(expected, Bool):
        return got is expected.value
    if isinstance(expected, bytes):
        return isinstance(got, str) and base64.b64decode(got) == expected
    if isinstance(expected, Instant):
        return isinstance(got, str) and parse_instant(got) == expected
    if isinstance(expected, dict):
        got = {k: v for k, v in got.items() if v is not None} if isinstance(got, dict) else got
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(same_json(got[k], expected[k]) for k in got)
        )
    if isinstance(expected, list):
        if not isinstance(got, list):
            return False
        got = list(got)
        while got and got[-1] is None:  # as canon trims the array expected
            got.pop()
        return len(got) == len(expected) and all(map(same_json, got, expected))
    if isinstance(got, (int, float)) and isinstance(expected, (int, float)):
        return type(got) is not bool and same_number(got, expected)
    return type(got) is type(expected) and got == expected


def parse_instant(text: str) -> Instant:
    """RFC 3339 text, any fractional digits, as the instant it names, to the nanosecond."""
    seconds, _, fraction = text.rstrip("Z").partition(".")
    whole = dt.datetime.fromisoformat(seconds).replace(tzinfo=dt.timezone.utc)
    return Instant(Instant.of(whole).nanoseconds + int((fraction or "0").ljust(9, "0")))


def same_rows(rows: list[Any], records: list[Any]) -> bool:
    return len(rows) == len(records) and all(
        same(canon(row), canon(record)) for row, record in zip(rows, records, strict=True)
    )


def same_cell(cell: str, value: Any) -> bool:
    """Whether a CSV cell holds ``value``: text as it is, nil an empty cell, bytes and a
    timestamp the text of their JSON strings, any other value its JSON text."""
    if value is None:
        return cell == ""
    if isinstance(value, str):
        return cell == value
    if isinstance(value, bytes):
        return base64.b64decode(cell) == value
    if isinstance(value, Instant):
        return parse_instant(cell) == value
    if isinstance(value, float) and not math.isfinite(value):
        return same_number(float(cell), value)  # nan, inf, -inf: no JSON
    return same_json(json.loads(cell), value)


def same_csv(text: str, records: list[Any]) -> bool:
    """Whether CSV ``text`` holds every value of ``records``."""
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    if len(body) != len(records):
        return False
    for cells, record in zip(body, records, strict=True):
        values = record if isinstance(record, dict) else dict(enumerate(record))
        named = {f"f{k}" if isinstance(k, int) else k: v for k, v in values.items()}
        if set(named) - set(header):
            return False
        if not all(
            same_cell(cell, canon(named.get(name)))
            for name, cell in zip(header, cells, strict=True)
        ):
            return False
    return True


# ------------------------------------------------------------------------------------------
# The property
# ------------------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def json_lines(text: str) -> list[str]:
    """The lines of JSON Lines: cut at line feeds only (a str may hold U+0085 or U+2028,
    which ``splitlines`` takes for line breaks too)."""
    return text.split("\n")[:-1]


def loud(status: int, err: str) -> None:
    """A command that fails says so: status 1 and one line, never a traceback."""
    assert status == 1
    assert "Traceback" not in err
    assert error_line(err).startswith("error: ")


@settings(
    max_examples=examples(ci=40, local=12),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(records=streams())
# A JSON column beside a list of structs of nothing but nils (pyarrow 26 casts such a list
# to an invalid array, which once failed the Arrow outputs with a traceback).
@example(records=[{"id": i, "b": [None, [], 0], "c": [{"a": None}, None]} for i in range(3)])
# An array where only maps were seen, past the first records inferred from: once read as the
# maps' record by position (`[false]` written as `{"a": false}`), now refused and widened.
@example(
    records=[
        {"id": 0, "e": [{"a": False}]},
        *({"id": i} for i in range(1, FIRST_CHECKED)),
        {"id": FIRST_CHECKED, "e": [[False]]},
    ]
)
# NaN and the infinities beside nil, in a float field and nested: a CSV cell of JSON once
# wrote them as strict JSON's null, told from nil by nothing.
@example(
    records=[
        {"id": i, "a": [math.nan, None, -0.0][i % 3], "b": [math.inf, None, -math.inf, -0.0]}
        for i in range(4)
    ]
)
# A carriage return in a text: a CSV cell that quotes it, once read back by the test itself with
# its newlines translated.
@example(records=[[0, "\r"]])
def test_every_value_reaches_every_output_or_the_command_fails_loudly(
    records: list[Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    path = folder / "stream.msgpack"
    path.write_bytes(packed(records))

    # schema, then a typed read with what it printed: every value, in either form.
    for form in ("dataclass", "struct"):
        status, source, err = run(capsys, "schema", "--format", form, str(path))
        assert (status, err) == (0, "")
        module = folder / f"inferred_{form}.py"
        module.write_text(source)
        record_type = record_type_named(f"{module}:Record")
        read = [wire(r) for r in StreamingReader(path, record_type)]
        assert same_rows(read, records)

    # convert to every format: every value written, or one error line and no file.
    for to in ("parquet", "arrow", "csv", "jsonl"):
        out = folder / f"out.{to}"
        # JSON Lines are strict JSON, NaN written null, unless --allow-nan (documented).
        nan = ["--allow-nan"] if to == "jsonl" else []
        status, _, err = run(capsys, "convert", str(path), "--to", to, "-o", str(out), *nan)
        if status:
            loud(status, err)
            assert not out.exists()
            continue
        if to == "parquet":
            assert same_rows(pq.read_table(out).to_pylist(maps_as_pydicts="strict"), records)
        elif to == "arrow":
            table = pa.ipc.open_file(str(out)).read_all()
            assert same_rows(table.to_pylist(maps_as_pydicts="strict"), records)
        elif to == "csv":
            # As written: read_text() would make a text's carriage return a line feed.
            assert same_csv(out.read_bytes().decode("utf-8"), records)
        else:
            lines = json_lines(out.read_text())
            assert len(lines) == len(records)
            assert all(map(same_json, map(json.loads, lines), map(canon, records)))

    # dump --where: the records it keeps, every value of each.
    where = "id % 2 = 0" if isinstance(records[0], dict) else "f0 % 2 = 0"
    status, out_text, err = run(
        capsys, "dump", str(path), "--where", where, "--format", "jsonl", "--allow-nan"
    )
    kept = [r for i, r in enumerate(records) if i % 2 == 0]
    if status and refused_by_duckdb(err):
        assert status == 2  # the query cannot be run as asked: before a record is read
    elif status:
        loud(status, err)
    else:
        lines = json_lines(out_text)
        assert len(lines) == len(kept)
        assert all(
            same_json(json.loads(line), canon(r)) for line, r in zip(lines, kept, strict=True)
        )

    # The engines, over the inferred type: every value, or the reader's own error.
    for name, rows_of in (("Polars", polars_rows), ("DuckDB", duckdb_rows), ("Dask", dask_rows)):
        rows = outcome(rows_of, path)
        if isinstance(rows, TypeError):
            assert refused_by_duckdb(str(rows)), name
            continue
        if isinstance(rows, Exception):
            # Loud: the reader's error, naming the record (DuckDB wraps it in its own).
            assert re.search(r"record \d+ at byte \d+", str(rows)), name
            continue
        assert same_rows(rows, records), name


def outcome(
    rows_of: Callable[[Path], list[dict[str, Any]]], path: Path
) -> list[dict[str, Any]] | Exception:
    """The rows an engine reads, or the error it raises for data the types do not hold (a
    ``TypeError`` for a type it cannot hold)."""
    try:
        return rows_of(path)
    except (ReaderError, duckdb.Error, TypeError) as exc:
        return exc


def refused_by_duckdb(said: str) -> bool:
    """Whether ``said`` is DuckDB 1.x's refusal of a field of timestamps to the nanosecond,
    which it would cut to the microsecond (DuckDB 2.0 keeps them)."""
    refused = "holds timestamps to the nanosecond (msgpack.Timestamp), and DuckDB 1." in said
    assert not refused or not duckdb.__version__.startswith("2.")
    return refused


def polars_rows(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = polars_read(path).to_arrow().to_pylist(maps_as_pydicts="strict")
    return rows


def duckdb_rows(path: Path) -> list[dict[str, Any]]:
    table = duckdb_read(path, connection=duckdb.connect()).to_arrow_table()
    rows: list[dict[str, Any]] = table.to_pylist(maps_as_pydicts="strict")
    return rows


def dask_rows(path: Path) -> list[dict[str, Any]]:
    record_type = files_type([str(path)], None, ReadOptions())
    frame = read_dataframe(str(path), record_type).compute(scheduler="sync")
    table = pa.Table.from_pandas(frame, preserve_index=False)
    rows: list[dict[str, Any]] = table.to_pylist(maps_as_pydicts="strict")
    return rows


# ------------------------------------------------------------------------------------------
# The forms every type is read through keep what the type refuses
# ------------------------------------------------------------------------------------------


def test_the_late_key_of_the_issue_is_in_the_schema_and_every_row(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """3,000 maps ``{"a": i, "k": {"p": 1}}``, the one at 2500 with a key more: a nested
    record made the top record's map form a generated one, which did not forbid the key."""
    records: list[dict[str, Any]] = [{"a": i, "k": {"p": 1}} for i in range(3000)]
    records[2500]["late"] = "x"
    path = tmp_path / "late.msgpack"
    path.write_bytes(packed(records))
    status, source, _ = run(capsys, "schema", str(path))
    assert (status, "    late: str | None = None\n" in source) == (0, True)
    out = tmp_path / "late.parquet"
    assert run(capsys, "convert", str(path), "--to", "parquet", "-o", str(out))[0] == 0
    assert pq.read_table(out).column("late").to_pylist()[2499:2502] == [None, "x", None]


class Inner(msgspec.Struct, forbid_unknown_fields=True):
    p: int


class Outer(msgspec.Struct, forbid_unknown_fields=True):
    a: int
    k: Inner


@dataclasses.dataclass
class MarkedInner:
    __forbid_unknown_keys__ = True
    p: int


@dataclasses.dataclass
class Marked:
    __forbid_unknown_keys__ = True
    a: int
    k: MarkedInner


class Positional(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    a: int
    k: list[Inner]


@pytest.mark.parametrize("record_type", [Outer, Marked, Positional])
@pytest.mark.parametrize("where", ["top", "nested"])
def test_a_type_that_forbids_unknown_keys_refuses_them_at_every_depth(
    record_type: Any, where: str
) -> None:
    good = {"a": 1, "k": [{"p": 1}] if record_type is Positional else {"p": 1}}
    bad = {**good, "late": 2} if where == "top" else {"a": 1, "k": {"p": 1, "late": 2}}
    if record_type is Positional and where == "nested":
        bad = {"a": 1, "k": [{"p": 1, "late": 2}]}
    data = msgpack.packb(good) + msgpack.packb(bad)
    for read in (
        lambda: list(StreamingReader(data, record_type)),
        lambda: read_table(data, record_type),
    ):
        with pytest.raises(RecordError) as caught:
            read()
        assert (caught.value.index, "'late', which names no field" in caught.value.reason) == (
            1,
            True,
        )


def test_an_array_like_struct_that_forbids_reads_maps_of_its_fields() -> None:
    data = msgpack.packb([1, [{"p": 2}]]) + msgpack.packb({"a": 3, "k": [[4]]})
    assert list(StreamingReader(data, Positional)) == [
        Positional(1, [Inner(2)]),
        Positional(3, [Inner(4)]),
    ]


@dataclasses.dataclass
class Hostile:
    __forbid_unknown_keys__ = True
    quoted: int = dataclasses.field(metadata={"msgpack_key": 'a"b'})
    tagged: list[int] = dataclasses.field(metadata={"msgpack_key": "c\\d\x01"})
    fine: str = "x"


@dataclasses.dataclass
class HoldsHostile:
    inner: Hostile


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({'a"b': 1, "c\\d\x01": [2]}, None),
        ({'a"b': 1, "c\\d\x01": [2], "fine": "y"}, None),
        (
            {"c\\d\x01": [2]},
            "field `inner.quoted` is missing (a map without its key, and no default)",
        ),
        ({'a"b': "1", "c\\d\x01": [2]}, "field `inner.quoted` expected int, got str"),
        ({'a"b': 1, "c\\d\x01": [2, "x"]}, "field `inner.tagged[1]` expected int, got str"),
        (
            {'a"b': 1, "c\\d\x01": [], "new": 0},
            "field `inner` map has key 'new', which names no field",
        ),
    ],
)
def test_a_key_msgspec_cannot_rename_to_is_read_by_key(
    record: dict[str, Any], reason: str | None
) -> None:
    data = msgpack.packb({"inner": record})
    if reason is None:
        (read,) = StreamingReader(data, HoldsHostile)
        assert dataclasses.asdict(read.inner) == {
            "quoted": 1,
            "tagged": record["c\\d\x01"],
            "fine": record.get("fine", "x"),
        }
        assert read_table(data, HoldsHostile).to_pylist() == [
            {"inner": {'a"b': 1, "c\\d\x01": record["c\\d\x01"], "fine": record.get("fine", "x")}}
        ]
        return
    with pytest.raises(RecordError) as caught:
        list(StreamingReader(data, HoldsHostile))
    assert caught.value.reason == reason


@dataclasses.dataclass
class RenamedInner:
    user_agent: str = dataclasses.field(metadata={"msgpack_key": "user-agent"})


@dataclasses.dataclass
class HoldsRenamed:
    inner: RenamedInner


def test_a_nested_dataclass_keyed_by_another_name_fills_its_struct_column() -> None:
    """Its column's child is named by the key; its value was null before."""
    data = msgpack.packb({"inner": {"user-agent": "curl"}})
    assert read_table(data, HoldsRenamed).to_pylist() == [{"inner": {"user-agent": "curl"}}]


# ------------------------------------------------------------------------------------------
# Keys of any text
# ------------------------------------------------------------------------------------------


@settings(max_examples=examples(ci=60, local=20), deadline=None)
@given(
    keys=st.lists(st.text(max_size=4), min_size=1, max_size=5, unique=True),
    inner=st.text(max_size=3),
    count=st.integers(1, 3),
)
def test_any_key_reads_and_converts(
    keys: list[str], inner: str, count: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Keys of any text (quotes, backslashes, control characters, Python keywords, non-ASCII,
    empty), at the top and in a nested record: ``schema`` prints a type that reads every
    value back, in either form, and every format holds them."""
    records = [{**dict.fromkeys(keys, i), "nested": {inner: str(i), "n": i}} for i in range(count)]
    folder = tmp_path_factory.mktemp("keys")
    path = folder / "keys.msgpack"
    path.write_bytes(packed(records))
    for form in ("dataclass", "struct"):
        module = folder / f"keys_{form}.py"
        with open(module, "w") as out, redirect_stdout(out):
            assert main(["schema", "--format", form, str(path)]) == 0
        record_type = record_type_named(f"{module}:Record")
        assert [wire(r) for r in StreamingReader(path, record_type)] == records
        fields = {spec.wire_name: spec.name for spec in record_fields(record_type)}
    for to in ("parquet", "arrow", "csv", "jsonl"):
        out_path = folder / f"keys.{to}"
        assert main(["convert", str(path), "--to", to, "-o", str(out_path)]) == 0
        if to == "jsonl":
            lines = out_path.read_text().split("\n")[:-1]  # "\x85" is no line break in JSON
            assert [json.loads(line) for line in lines] == records
            continue
        if to == "csv":
            with open(out_path, newline="") as text:
                rows: list[Any] = list(csv.DictReader(text))
            for row, record in zip(rows, records, strict=True):
                assert {k: row[fields[k]] for k in keys} == {k: str(record[k]) for k in keys}
            continue
        table = (
            pq.read_table(out_path)
            if to == "parquet"
            else pa.ipc.open_file(str(out_path)).read_all()
        )
        for row, record in zip(table.to_pylist(), records, strict=True):
            assert {k: row[fields[k]] for k in keys} == {k: record[k] for k in keys}
            assert row[fields["nested"]] == record["nested"]


# ------------------------------------------------------------------------------------------
# Broken input, and what inference reports
# ------------------------------------------------------------------------------------------


def test_schema_reports_broken_input_as_every_reader_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import gzip

    data = packed([{"n": i} for i in range(3000)])
    cut = tmp_path / "cut.msgpack.gz"
    cut.write_bytes(gzip.compress(data)[:-40])
    status, out, err = run(capsys, "schema", str(cut))
    assert (status, out) == (1, "")
    assert error_line(err).startswith(f"error: {cut}: record ")
    assert "stream ends" in error_line(err)
    # A record declaring a 4 GiB string, after 2000 good ones: refused at its header.
    huge = tmp_path / "huge.msgpack"
    huge.write_bytes(
        data[: len(packed([{"n": i} for i in range(2000)]))] + b"\x81\xa1n\xdb\xff\xff\xff\xff"
    )
    status, out, err = run(capsys, "schema", str(huge))
    assert (status, out) == (1, "")
    assert error_line(err).startswith(f"error: {huge}: record 2000 at byte ")
    assert "max-record-size" in error_line(err)


def test_schema_of_a_stream_past_what_is_kept_checks_the_rest(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys
    import types

    from msgpack_reader_py._analysis import inferred

    records: list[dict[str, Any]] = [{"n": i} for i in range(3000)]
    records[2900]["late"] = 1
    data = packed(records)
    monkeypatch.setattr(inferred, "SPOOL_LIMIT", 1000)
    for argv, fits in [((), False), (("--infer-from", "all"), True)]:
        stream = io.BufferedReader(io.BytesIO(data))
        monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=stream))
        status, out, err = run(capsys, "schema", "-", *argv)
        if fits:
            assert (status, err) == (0, "")
            assert "from the 3000 records of <stdin>" in out
            assert "    late: int | None = None\n" in out
        else:
            assert (status, out) == (1, "")
            line = error_line(err)
            assert line.startswith("error: <stdin>: record 2900 at byte ")
            assert line.endswith("--infer-from all infers it from every record")


# ------------------------------------------------------------------------------------------
# Tags at a fixed position of arrays: MessagePack-RPC
# ------------------------------------------------------------------------------------------


def rpc_messages() -> list[list[Any]]:
    messages: list[list[Any]] = []
    for i in range(60):
        messages.append([0, i, "add", [i, i + 1]])
        messages.append([1, i, None, {"sum": 2 * i + 1} if i % 2 else 2 * i + 1])
        if i % 3 == 0:
            messages.append([2, "log", ["line", i]])
    return messages


def test_schema_tells_rpc_messages_apart_by_their_integer_tag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "rpc.msgpack"
    messages = rpc_messages()
    path.write_bytes(packed(messages))
    for form in ("dataclass", "struct"):
        status, source, _ = run(capsys, "schema", "--format", form, str(path))
        assert status == 0
        assert source.endswith("\nRecord = Kind0 | Kind1 | Kind2\n")
        if form == "dataclass":
            assert "    f0: Literal[0]\n" in source
            assert "    f0: Literal[2]\n" in source
        else:
            assert 'class Kind1(msgspec.Struct, tag_field="f0", tag=1,' in source
        module = tmp_path / f"rpc_{form}.py"
        module.write_text(source)
        record_type = record_type_named(f"{module}:Record")
        read = list(StreamingReader(path, record_type))
        assert [type(r).__name__ for r in read] == [f"Kind{m[0]}" for m in messages]
        assert same_rows([wire(r) for r in read], messages)
    out = tmp_path / "rpc.parquet"
    assert run(capsys, "convert", str(path), "--to", "parquet", "-o", str(out))[0] == 0
    table = pq.read_table(out)
    assert table.column("f0").to_pylist() == [m[0] for m in messages]
    assert same_rows(table.to_pylist(), messages)


def test_where_filters_on_json_columns_with_duckdbs_json_functions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "rpc.msgpack"
    messages = rpc_messages()
    path.write_bytes(packed(messages))
    where = "f0 = 1 and json_extract(f3, '$.sum') is not null"
    status, out, err = run(capsys, "dump", str(path), "--where", where, "--format", "jsonl")
    assert (status, err) == (0, "")
    expected = [m for m in messages if m[0] == 1 and isinstance(m[3], dict)]
    got = [json.loads(line) for line in out.splitlines()]
    assert [row["f3"] for row in got] == [m[3] for m in expected]  # the value, not its text
    status, out, err = run(capsys, "count", str(path), "--where", where)
    assert (status, out, err) == (0, f"{len(expected)}\n", "")
    # In a file DuckDB reads itself, the column is JSON.
    parquet = tmp_path / "rpc.parquet"
    assert run(capsys, "convert", str(path), "--to", "parquet", "-o", str(parquet))[0] == 0
    relation = duckdb.sql(f"select distinct typeof(f3) from '{parquet}'")
    assert relation is not None
    types = relation.fetchall()
    assert types == [("JSON",)]


# ------------------------------------------------------------------------------------------
# One naming of untyped columns; count --where; the index for untyped reads
# ------------------------------------------------------------------------------------------


def test_untyped_columns_are_f0_f1_in_every_command_and_engine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "arrays.msgpack"
    path.write_bytes(packed([[i, f"s{i}"] for i in range(4)]))
    names = ["f0", "f1"]
    _, out, _ = run(capsys, "dump", str(path), "--format", "table")
    assert out.split("\n")[0].split() == names
    _, out, _ = run(capsys, "dump", str(path), "--format", "csv")
    assert out.split("\n")[0].split(",") == names
    _, out, _ = run(capsys, "stats", str(path), "--json")
    assert [json.loads(line)["field"] for line in out.splitlines()] == names
    _, out, _ = run(capsys, "schema", str(path))
    assert "    f0: int\n    f1: str\n" in out
    _, out, _ = run(capsys, "dump", str(path), "--where", "f0 > 1", "--select", "f1")
    assert out.splitlines() == ['{"f1":"s2"}', '{"f1":"s3"}']
    assert polars_read(path).columns == names
    assert duckdb_read(path, connection=duckdb.connect()).columns == names


def test_count_where_counts_what_dump_where_keeps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "maps.msgpack"
    path.write_bytes(packed([{"n": i, "s": "x" * (i % 3)} for i in range(50)]))
    assert run(capsys, "count", str(path), "--where", "n >= 40 and s = 'x'") == (0, "4\n", "")
    status, out, err = run(capsys, "count", str(path), "--where", "nope > 1")
    assert (status, out) == (2, "")
    assert error_line(err).startswith("error: --where 'nope > 1': Binder Error")


def test_untyped_skip_and_tail_seek_through_the_index(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A byte no MessagePack holds, before the records asked for and past what the index
    hashes: framed from the file's start it fails; seeking through the index, it is never
    read."""
    from msgpack_reader_py._split.index import index_path, write_index

    records = [[i, "x" * 40] for i in range(3000)]
    data = packed(records)
    path = tmp_path / "values.msgpack"
    path.write_bytes(data)
    write_index(path, every=100)
    at = len(packed(records[:1600])) + 1
    assert at > 64 * 1024
    path.write_bytes(data[:at] + b"\xc1" + data[at + 1 :])
    status, out, err = run(capsys, "dump", str(path), "--start", "2998", "--format", "jsonl")
    assert (status, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == records[2998:]
    status, out, err = run(capsys, "tail", "-n", "2", str(path), "--format", "jsonl")
    assert (status, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == records[2998:]
    assert run(capsys, "count", str(path)) == (0, "3000\n", "")
    Path(index_path(path)).unlink()
    status, _, err = run(capsys, "dump", str(path), "--start", "2998")
    assert status == 1
    assert "record 1600 at byte" in error_line(err)


def test_an_index_does_not_let_an_untyped_read_past_a_foreign_head(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from msgpack_reader_py._split.index import write_index

    path = tmp_path / "looks.json"
    path.write_bytes(b'{"a": 1}\n' * 200)
    write_index(path, every=10)
    status, _, err = run(capsys, "dump", str(path), "--start", "50")
    assert status == 1
    assert "looks like JSON text" in error_line(err)


@pytest.mark.parametrize("value", ["0", "-1", "some", "1.5"])
def test_infer_from_takes_a_positive_count_or_all(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str
) -> None:
    path = tmp_path / "n.msgpack"
    path.write_bytes(packed([{"n": 1}]))
    with pytest.raises(SystemExit) as caught:
        main(["schema", "--infer-from", value, str(path)])
    assert caught.value.code == 2
    assert f"expected a positive integer or all, got '{value}'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="infer_from must be a positive int, 'all' or None"):
        convert_untyped(path, 0)


def convert_untyped(path: Path, infer_from: Any) -> None:
    from msgpack_reader_py._output.convert import convert

    convert(path, io.BytesIO(), "csv", record_type=None, infer_from=infer_from)
