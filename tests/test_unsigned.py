"""Unsigned 64-bit ints, as tracers and Go services write them, reach every table whole: a
field declared :data:`~msgpack_reader_py.UInt64` is a ``uint64`` column, and types inferred
from records type such a field so, at any depth, however late its first large value comes;
an ``int`` field's ``int64`` column refuses such a value loudly, saying what to declare."""

from __future__ import annotations

import dataclasses
import io
import json
import typing
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import RecordError, StreamingReader, UInt64, arrow_schema
from msgpack_reader_py._analysis.infer import infer
from msgpack_reader_py._analysis.inferred import FIRST_CHECKED, infer_sources, table_type
from msgpack_reader_py._arrow.json_columns import JSON
from msgpack_reader_py._arrow.reader import read_table
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py.cli import main
from msgpack_reader_py.dask import pandas_dtypes
from msgpack_reader_py.duckdb import read_msgpack as duckdb_read
from msgpack_reader_py.polars import polars_schema, scan_msgpack

from .encoders import DATA, EXPECTED
from .helpers import error_line, examples

SPANS_FILE = DATA / "go_spans.msgpack"  # written by Go: its ids are uint64s (see README)
SPANS: list[dict[str, Any]] = EXPECTED["spans"]
IDS = ("trace_id", "span_id", "parent_id")
LARGEST = 2**64 - 1
INT64_MAX = 2**63 - 1


@dataclasses.dataclass
class Span:
    trace_id: UInt64
    span_id: UInt64
    parent_id: UInt64
    service: str
    name: str
    start: int
    duration: int
    error: int
    meta: dict[str, str]


@dataclasses.dataclass
class SignedSpan:
    """The same span with its ids declared ``int``: an ``int64`` column each."""

    trace_id: int
    span_id: int
    parent_id: int
    service: str
    name: str
    start: int
    duration: int
    error: int
    meta: dict[str, str]


def test_the_go_spans_read_typed_with_every_id_whole() -> None:
    with StreamingReader(SPANS_FILE, Span) as reader:
        spans = [dataclasses.asdict(span) for span in reader]
    assert spans == SPANS
    assert max(span["trace_id"] for span in spans) == LARGEST


def test_a_negative_value_of_an_unsigned_field_is_refused_naming_it() -> None:
    records = [{**SPANS[0]}, {**SPANS[1], "span_id": -1}]
    data = b"".join(msgpack.packb(r) for r in records)
    got: list[Span] = []
    with pytest.raises(RecordError) as caught, StreamingReader(data, Span) as reader:
        got.extend(reader)
    assert len(got) == 1
    assert caught.value.index == 1
    assert "field `span_id` expected int >= 0, got int -1" in str(caught.value)


@dataclasses.dataclass
class Inner:
    id: UInt64


@dataclasses.dataclass
class Everywhere:
    plain: UInt64
    maybe: UInt64 | None
    described: typing.Annotated[UInt64, msgspec.Meta(description="an id")]
    ids: list[UInt64]
    by_id: dict[UInt64, UInt64]
    inner: Inner
    signed: typing.Annotated[int, msgspec.Meta(ge=0)]  # a bound alone keeps int64


def test_unsigned_fields_are_uint64_columns_at_any_depth() -> None:
    schema = arrow_schema(Everywhere)
    assert {f.name: str(f.type) for f in schema if f.name != "by_id"} == {
        "plain": "uint64",
        "maybe": "uint64",
        "described": "uint64",
        "ids": "list<item: uint64 not null>",
        "inner": "struct<id: uint64 not null>",
        "signed": "int64",
    }
    by_id: Any = schema.field("by_id").type
    assert (by_id.key_type, by_id.item_type) == (pa.uint64(), pa.uint64())
    assert schema.field("maybe").nullable
    value = {
        "plain": LARGEST,
        "maybe": None,
        "described": 2**63,
        "ids": [0, LARGEST],
        "by_id": {LARGEST: 2**63},
        "inner": {"id": LARGEST},
        "signed": 7,
    }
    table = read_table(msgpack.packb(value), Everywhere)
    (row,) = table.to_pylist()
    assert row == {**value, "by_id": [(LARGEST, 2**63)]}


def test_the_go_spans_reach_arrow_polars_duckdb_and_pandas_as_uint64() -> None:
    table = read_table(SPANS_FILE, Span)
    for name in IDS:
        assert table.schema.field(name).type == pa.uint64()
        assert table.column(name).to_pylist() == [span[name] for span in SPANS]
    frame = scan_msgpack(SPANS_FILE, Span).collect()
    assert polars_schema(Span)["trace_id"] == pl.UInt64
    assert frame["trace_id"].to_list() == [span["trace_id"] for span in SPANS]
    relation = duckdb_read(SPANS_FILE, Span)
    assert relation.aggregate("max(trace_id)").fetchall() == [(LARGEST,)]
    assert str(relation.types[0]) == "UBIGINT"
    assert np.dtype(pandas_dtypes(Span)["span_id"]) == np.uint64
    assert pandas_dtypes(Everywhere)["maybe"] == pd.UInt64Dtype()  # nullable


def test_an_int_column_refuses_a_large_id_saying_what_to_declare() -> None:
    with pytest.raises(RecordError) as caught:
        read_table(SPANS_FILE, SignedSpan)
    error = caught.value
    assert error.index == 0  # the first span's trace is 2**64 - 1
    assert "field `trace_id`: int 18446744073709551615 does not fit Arrow int64" in str(error)
    assert "msgpack_reader_py.UInt64" in str(error)


def test_types_inferred_from_the_go_spans_hold_their_ids(tmp_path: Path) -> None:
    inferred = infer(SPANS)
    source = inferred.source()
    assert "from msgpack_reader_py import UInt64\n" in source
    for name in IDS:
        assert f"    {name}: UInt64\n" in source
    assert "    start: int\n" in source
    out = tmp_path / "spans.parquet"
    assert convert(SPANS_FILE, out, "parquet", record_type=None).records == len(SPANS)
    table = pq.read_table(out)
    for name in IDS:
        assert table.schema.field(name).type == pa.uint64()
    assert table.schema.field("start").type == pa.int64()
    assert table.to_pylist() == [{**s, "meta": list(s["meta"].items())} for s in SPANS]


def test_the_printed_types_read_the_records_they_were_inferred_from() -> None:
    module: dict[str, Any] = {}
    source = infer(SPANS).source("struct")
    exec(compile(source, "<schema>", "exec", dont_inherit=True), module)  # as a file runs it
    with StreamingReader(SPANS_FILE, module["Record"]) as reader:
        assert [msgspec.to_builtins(span) for span in reader] == SPANS


def test_a_large_id_first_seen_late_widens_the_inferred_field(tmp_path: Path) -> None:
    records: list[Any] = [{"id": i, "ids": [i]} for i in range(3 * FIRST_CHECKED)]
    records.append({"id": LARGEST, "ids": [2**63]})
    path = tmp_path / "late.msgpack"
    path.write_bytes(b"".join(msgpack.packb(r) for r in records))
    _, schema = infer_sources([path])
    assert "    id: UInt64\n    ids: list[UInt64]\n" in schema.source()
    assert schema.checked == len(records)
    out = io.BytesIO()
    assert convert(path, out, "arrow", record_type=None).records == len(records)
    assert arrow_values(out.getvalue())[-1] == records[-1]


def test_from_the_first_records_only_a_later_large_id_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    records = [{"id": i} for i in range(20)] + [{"id": LARGEST}]
    path = tmp_path / "late.msgpack"
    path.write_bytes(b"".join(msgpack.packb(r) for r in records))
    with pytest.raises(RecordError) as caught:
        convert(path, io.BytesIO(), "arrow", record_type=None, infer_from=10)
    assert caught.value.index == 20
    assert "field `id`" in str(caught.value)
    assert "infer_from='all'" in str(caught.value)


def test_negative_and_large_ints_in_one_field_are_kept_as_json_text() -> None:
    records = [{"n": -1}, {"n": LARGEST}, {"n": None}]
    inferred = infer(records)
    assert "    n: int | None\n" in inferred.source()  # in Python, an int holds both
    table = read_table(b"".join(msgpack.packb(r) for r in records), table_type(inferred))
    assert table.schema.field("n").type == JSON
    assert table.column("n").to_pylist() == ["-1", str(LARGEST), None]


def test_the_command_line_converts_declared_and_inferred_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    types_file = tmp_path / "spans.py"
    types_file.write_text(
        "from dataclasses import dataclass\n\nfrom msgpack_reader_py import UInt64\n\n\n"
        "@dataclass\nclass Ids:\n    trace_id: UInt64\n    span_id: UInt64\n"
    )
    records = [{"trace_id": s["trace_id"], "span_id": s["span_id"]} for s in SPANS]
    source = tmp_path / "ids.msgpack"
    source.write_bytes(b"".join(msgpack.packb(r) for r in records))
    out = tmp_path / "ids.parquet"
    assert (
        main(
            [
                "convert",
                str(source),
                "--type",
                f"{types_file}:Ids",
                "--to",
                "parquet",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert pq.read_table(out).to_pylist() == records
    capsys.readouterr()
    assert main(["dump", str(source), "--format", "jsonl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == records  # JSON's ints are exact
    signed = tmp_path / "signed.py"
    signed.write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Ids:\n"
        "    trace_id: int\n    span_id: int\n"
    )
    refused = tmp_path / "refused.parquet"
    status = main(
        ["convert", str(source), "--type", f"{signed}:Ids", "--to", "parquet", "-o", str(refused)]
    )
    err = capsys.readouterr().err
    assert status != 0
    assert error_line(err).startswith("error: ")
    assert "msgpack_reader_py.UInt64" in err
    assert not refused.exists()


def arrow_values(data: bytes) -> list[dict[str, Any]]:
    """The rows of an Arrow file, each value of JSON text (at any depth) the value it holds."""
    with pa.ipc.open_file(pa.BufferReader(data)) as reader:
        table = reader.read_all()
    types = {f.name: f.type for f in table.schema}
    return [{k: parsed(v, types[k]) for k, v in row.items()} for row in table.to_pylist()]


def parsed(value: Any, arrow_type: pa.DataType) -> Any:
    if value is None:
        return None
    if arrow_type == JSON:
        return json.loads(value)
    if pa.types.is_list(arrow_type):
        return [parsed(v, arrow_type.value_type) for v in value]
    return value


# Every MessagePack int, from each end of each encoding's range.
INTS = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.sampled_from([-(2**63), -1, 0, INT64_MAX, 2**63, LARGEST]),
    st.integers(-5, 5),
)


NUMBERS = st.one_of(INTS, st.floats(allow_nan=False), st.sampled_from([2**53, 2**53 + 1]))


def first_rounded(records: list[dict[str, Any]]) -> int | None:
    """The first record with an int no float holds exactly (past 2**53) in a field that holds
    floats too (a float64 column), or ``None``."""
    found = []
    for key in ("x", "f"):
        values = [(i, r[key]) for i, r in enumerate(records) if key in r]
        if any(isinstance(v, float) for _, v in values):
            found += [i for i, v in values if isinstance(v, int) and abs(v) > 2**53]
    return min(found, default=None)


@settings(max_examples=examples(ci=60, local=25), deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"n": INTS, "ns": st.lists(INTS, max_size=3), "x": NUMBERS},
            optional={"f": st.floats(allow_nan=False) | INTS},
        ),
        min_size=1,
        max_size=FIRST_CHECKED + 20,
    ),
)
def test_an_inferred_table_keeps_every_number_exactly(records: list[dict[str, Any]]) -> None:
    """Whatever ints a field holds, with floats or not, and wherever the first that needs a
    wider column comes, the inferred conversion writes each of them exactly (Python compares
    an int and a float exactly), or, where a field holds floats and an int no float holds,
    fails at the first such int, naming it: never a value rounded."""
    data = b"".join(msgpack.packb(r) for r in records)
    out = io.BytesIO()
    rounded = first_rounded(records)
    if rounded is not None:
        with pytest.raises(RecordError, match="does not fit Arrow double") as caught:
            convert(data, out, "arrow", record_type=None)
        assert caught.value.index == rounded
        return
    result = convert(data, out, "arrow", record_type=None)
    assert result.records == len(records)
    rows = arrow_values(out.getvalue())
    assert [{k: v for k, v in row.items() if k != "f" or v is not None} for row in rows] == records


def test_a_large_int_late_among_floats_is_refused_never_rounded() -> None:
    """msgspec reads an int as a float where a float is expected: an inferred field of floats
    refuses an int a float cannot hold, so that the field widens to ``int | float``, whose
    float64 column refuses it loudly; a small int is kept as the int it is."""
    records: list[Any] = [{"x": i + 0.5} for i in range(3 * FIRST_CHECKED)]
    records += [{"x": 7}, {"x": 2**60 + 1}]
    data = b"".join(msgpack.packb(r) for r in records)
    out = io.BytesIO()
    with pytest.raises(RecordError) as caught:
        convert(data, out, "arrow", record_type=None)
    assert caught.value.index == len(records) - 1
    assert "field `x`: int 1152921504606846977 does not fit Arrow double" in str(caught.value)
    _, schema = infer_sources([data])
    assert "    x: int | float\n" in schema.source()
    small = b"".join(msgpack.packb(r) for r in records[:-1])
    assert convert(small, out, "arrow", record_type=None).records == len(records) - 1
    few = b"".join(msgpack.packb(r) for r in records[:20] + records[-1:])
    with pytest.raises(RecordError) as caught:
        convert(few, io.BytesIO(), "arrow", record_type=None, infer_from=10)
    assert "field `x` expected int <= 9007199254740992, got int 1152921504606846977" in str(
        caught.value
    )
