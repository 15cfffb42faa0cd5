"""Record types inferred from untyped records (``msgpack_reader_py.infer``)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
from typing import Any

import msgpack
import msgspec
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import StreamingReader
from msgpack_reader_py.arrow import read_table
from msgpack_reader_py.convert import convert, infer_sources
from msgpack_reader_py.infer import MAX_FIELDS, InferenceError, infer
from msgpack_reader_py.values import ValueReader

from .helpers import drain, examples

# A column: how to make one value of it (the kinds inference tells apart).
COLUMN_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False),
    "str": st.text(max_size=8),
    "bytes": st.binary(max_size=8),
    "bool": st.booleans(),
    "timestamp": st.builds(
        msgpack.Timestamp, st.integers(0, 2**34 - 1), st.integers(0, 999_999_999)
    ),
    "list": st.lists(st.integers(-100, 100), max_size=3),
}


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[dict[str, Any]]]:
    """Map-shaped records with a few columns of one kind each, some nullable, some missing
    now and then, one nested record."""
    names = draw(
        st.lists(st.text("abcxyz", min_size=1, max_size=6), min_size=1, max_size=5, unique=True)
    )
    kinds = [draw(st.sampled_from(sorted(COLUMN_VALUES))) for _ in names]
    nullable = [draw(st.booleans()) for _ in names]
    count = draw(st.integers(1, 20))
    rows = []
    for _ in range(count):
        row: dict[str, Any] = {}
        for name, kind, null in zip(names, kinds, nullable, strict=True):
            value = draw(COLUMN_VALUES[kind])
            row[name] = None if null and draw(st.booleans()) else value
        row["inner"] = {"n": draw(st.integers(-5, 5)), "s": draw(st.text(max_size=3))}
        rows.append(row)
    return names, rows


def plain(value: Any) -> Any:
    """A typed value as the stream held it: records as dicts, datetimes as they were."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def as_datetime(value: Any) -> Any:
    if isinstance(value, msgpack.Timestamp):
        seconds, nanoseconds = divmod(value.to_unix_nano(), 10**9)
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return epoch + dt.timedelta(seconds=seconds, microseconds=(nanoseconds + 500) // 1000)
    if isinstance(value, dict):
        return {k: as_datetime(v) for k, v in value.items()}
    return value


@settings(max_examples=examples(ci=200, local=60), deadline=None)
@given(tables())
def test_an_inferred_type_reads_back_the_records_it_was_inferred_from(
    table: tuple[list[str], list[dict[str, Any]]],
) -> None:
    _, rows = table
    data = b"".join(msgpack.packb(r, datetime=False) for r in rows)
    schema = infer(ValueReader(data))
    assert schema.records == len(rows)
    assert schema.mixed == []
    for form in ("dataclass", "struct"):
        record_type = schema.record_type(form)
        read = list(StreamingReader(data, record_type))
        got = [msgspec.to_builtins(r, builtin_types=(bytes, dt.datetime)) for r in read]
        assert got == [as_datetime(r) for r in rows]
    # And as Arrow columns, with the same values.
    table_read = read_table(data, schema.record_type())
    assert table_read.to_pylist() == [as_datetime(r) for r in rows]


def test_widening_and_nullability() -> None:
    rows = [{"a": 1, "b": None, "c": "x"}, {"a": 2.5, "b": None}, {"a": 3, "b": None, "c": None}]
    source = infer(rows).source()
    assert "    a: float\n" in source
    assert "    b: None\n" in source
    assert "    c: str | None = None\n" in source


def test_values_that_do_not_mix_are_any_and_said_so() -> None:
    rows = [{"a": 1, "inner": {"b": "x"}}, {"a": "one", "inner": {"b": 2}}]
    schema = infer(rows)
    assert schema.mixed == ["a (int, str)", "inner.b (int, str)"]
    assert "    a: Any\n" in schema.source()


def test_arrays_give_positional_fields_and_short_arrays_optional_ones() -> None:
    rows = [[1, "a", [1, 2]], [2, "b", [3], True]]
    source = infer(rows).source()
    assert "    f0: int\n    f1: str\n    f2: list[int]\n    f3: bool | None = None\n" in source
    record_type = infer(rows).record_type()
    data = b"".join(msgpack.packb(r) for r in rows)
    assert [plain(r) for r in StreamingReader(data, record_type)] == [
        {"f0": 1, "f1": "a", "f2": [1, 2], "f3": None},
        {"f0": 2, "f1": "b", "f2": [3], "f3": True},
    ]


def test_maps_whose_keys_vary_or_are_not_strings_are_dicts() -> None:
    rows = [{"attrs": {"x": 1}, "codes": {1: "a"}}, {"attrs": {"y": 2}, "codes": {2: "b"}}]
    source = infer(rows).source()
    assert "    attrs: dict[str, int]\n" in source
    assert "    codes: dict[int, str]\n" in source


def test_records_must_all_be_maps_or_all_arrays() -> None:
    with pytest.raises(InferenceError, match="found arrays, maps"):
        infer([{"a": 1}, [1]])
    with pytest.raises(InferenceError, match="found int"):
        infer([1, 2])
    with pytest.raises(InferenceError, match="no records"):
        infer([])


def test_infer_sources_replays_a_stream_it_sampled() -> None:
    rows = [{"n": i} for i in range(50)]
    stream = io.BytesIO(b"".join(msgpack.packb(r) for r in rows))
    again, schema = infer_sources([stream], 10)
    assert schema.records == 10
    assert [plain(r) for r in StreamingReader(again[0], schema.record_type())] == rows


def test_convert_untyped_to_arrow_infers_and_refuses_columns_that_do_not_mix() -> None:
    data = msgpack.packb({"a": 1}) + msgpack.packb({"a": "x"})
    out = io.BytesIO()
    with pytest.raises(InferenceError, match=r"a \(int, str\) hold values of types"):
        convert(data, out, "arrow", record_type=None)
    convert(data[: len(msgpack.packb({"a": 1}))], out, "arrow", record_type=None)
    with pa.ipc.open_file(pa.BufferReader(out.getvalue())) as reader:
        assert reader.read_all().to_pylist() == [{"a": 1}]


def test_a_map_with_too_many_keys_is_a_dict_of_what_its_values_share() -> None:
    wide = {f"k{i}": i for i in range(MAX_FIELDS + 1)}
    rows = [{"wide": wide, "nested": {"a": [{"x": 1}], "b": [{"x": 2, "y": None}]}}] * 2
    wider = [{"wide": {**wide, "z": 1.5}, "nested": rows[0]["nested"]}]
    source = infer(rows + wider).source()
    assert "    wide: dict[str, float]\n" in source
    assert "    a: list[RecordNestedAItem]\n" in source


def test_infer_sources_keeps_the_name_of_a_stream_it_replays() -> None:
    class Named(io.BytesIO):
        name = "events.msgpack"

    data = msgpack.packb({"n": 1}) + msgpack.packb({"n": "x"})
    again, _ = infer_sources([Named(data)], 1)
    records, error = drain(StreamingReader(again[0], infer([{"n": 1}]).record_type()))
    assert [plain(r) for r in records] == [{"n": 1}]
    assert (error.index, error.source) == (1, "events.msgpack")
