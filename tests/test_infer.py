"""Record types inferred from untyped records (``msgpack_reader_py._analysis.infer``)."""

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
from msgpack_reader_py._analysis.infer import MAX_FIELDS, InferenceError, infer
from msgpack_reader_py._analysis.inferred import FIRST_CHECKED, infer_sources
from msgpack_reader_py._arrow.reader import read_table
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py._readers.values import ValueReader

from .helpers import drain, examples

# The first lines of every dataclass inferred from maps.
F = '    __forbid_unknown_keys__ = True\n    __wire_form__ = "map"\n'

# A column: how to make one value of it (the kinds inference tells apart).
COLUMN_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False),
    "str": st.text(max_size=8),
    "bytes": st.binary(max_size=8),
    "bool": st.booleans(),
    # Whole microseconds, as a datetime holds them, to the year 2514 the 8-byte form reaches;
    # and nanoseconds, which make the field a msgpack.Timestamp, in an Arrow column's years.
    "timestamp": st.builds(
        msgpack.Timestamp,
        st.integers(0, 2**34 - 1),
        st.integers(0, 999_999).map(lambda us: us * 1000),
    ),
    "timestamp_ns": st.builds(
        msgpack.Timestamp, st.integers(0, 2**33 - 1), st.integers(0, 999_999_999)
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


_UNIT_NANOSECONDS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def instants(value: Any) -> Any:
    """``value`` with each timestamp (a ``msgpack.Timestamp``, a ``datetime``) as its
    nanoseconds from the epoch: read back exactly, the two are the same."""
    if isinstance(value, msgpack.Timestamp):
        return value.to_unix_nano()
    if isinstance(value, dt.datetime):
        return (value - EPOCH) // dt.timedelta(microseconds=1) * 1000
    if isinstance(value, dict):
        return {k: instants(v) for k, v in value.items()}
    if isinstance(value, list):
        return [instants(v) for v in value]
    return value


def table_instants(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of ``table``, each timestamp column's values as nanoseconds from the epoch."""
    columns = []
    for column in table.columns:
        if pa.types.is_timestamp(column.type):
            scale = _UNIT_NANOSECONDS[column.type.unit]
            ints = column.cast(pa.int64()).to_pylist()
            columns.append([None if v is None else v * scale for v in ints])
        else:
            columns.append(instants(column.to_pylist()))
    return [dict(zip(table.column_names, row, strict=True)) for row in zip(*columns, strict=True)]


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


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
    # Every value as it was, timestamps to the nanosecond (a datetime where they were whole
    # microseconds, a msgpack.Timestamp where one was not).
    for form in ("dataclass", "struct"):
        record_type = schema.record_type(form)
        read = list(StreamingReader(data, record_type))
        got = [
            msgspec.to_builtins(r, builtin_types=(bytes, dt.datetime), enc_hook=_timestamp)
            for r in read
        ]
        assert instants(got) == instants(rows)
    # And as Arrow columns, with the same values.
    table_read = read_table(data, schema.record_type(columns=True))
    assert table_read.num_rows == len(rows)
    assert table_instants(table_read) == instants(rows)


def _timestamp(value: Any) -> Any:
    assert isinstance(value, msgpack.Timestamp)
    return value.to_unix_nano()


def test_widening_and_nullability() -> None:
    rows = [{"a": 1, "b": None, "c": "x"}, {"a": 2.5, "b": None}, {"a": 3, "b": None, "c": None}]
    source = infer(rows).source()
    assert "    a: int | float\n" in source
    assert "    b: None\n" in source
    assert "    c: str | None = None\n" in source


def test_values_that_do_not_mix_are_any_values_and_said_so() -> None:
    rows = [{"a": 1, "inner": {"b": "x"}}, {"a": "one", "inner": {"b": 2}}]
    schema = infer(rows)
    assert schema.mixed == ["a (int, str)", "inner.b (int, str)"]
    source = schema.source()
    assert "    a: AnyValue\n" in source
    assert "\nfrom msgpack_reader_py import AnyValue\n" in source
    assert "from typing import" not in source  # only what the classes use


def test_an_any_value_keeps_a_timestamps_nanoseconds() -> None:
    """A field of values of no one type holds each as a read with no type gives it: a
    timestamp to the nanosecond (a field of ``Any`` would hold msgspec's datetime, rounded),
    at any depth, in records and in their column of JSON text."""
    stamp = msgpack.Timestamp(1, 5)
    rows = [{"a": stamp, "b": [stamp, {"c": stamp}]}, {"a": {}, "b": 1}]
    data = b"".join(map(msgpack.packb, rows))
    schema = infer(ValueReader(data))
    assert "    a: AnyValue\n    b: AnyValue\n" in schema.source()
    for form in ("dataclass", "struct"):
        read = list(StreamingReader(data, schema.record_type(form)))
        assert [(r.a, r.b) for r in read] == [(stamp, [stamp, {"c": stamp}]), ({}, 1)]
    table = read_table(data, schema.record_type(checked=True, columns=True))
    assert table.column("a").to_pylist() == ['"1970-01-01T00:00:01.000000005Z"', "{}"]


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
    # Records with nothing in them: no field to type, never a class that would read none.
    with pytest.raises(InferenceError, match="every record is an empty map: no field to infer"):
        infer([{}, {}])
    with pytest.raises(InferenceError, match="every record is an empty array"):
        infer([[], []])
    assert "    a: int | None = None\n" in infer([{}, {"a": 1}]).source()


def test_infer_sources_replays_a_stream_it_sampled() -> None:
    rows = [{"n": i} for i in range(50)]
    stream = io.BytesIO(b"".join(msgpack.packb(r) for r in rows))
    again, schema = infer_sources([stream], 10)
    assert schema.records == 10
    assert [plain(r) for r in StreamingReader(again[0], schema.record_type())] == rows


def test_convert_untyped_to_arrow_writes_values_that_do_not_mix_as_json_text() -> None:
    data = msgpack.packb({"a": 1}) + msgpack.packb({"a": "x"})
    out = io.BytesIO()
    convert(data, out, "arrow", record_type=None)
    with pa.ipc.open_file(pa.BufferReader(out.getvalue())) as reader:
        assert reader.read_all().to_pylist() == [{"a": "1"}, {"a": '"x"'}]


def test_a_map_with_too_many_keys_is_a_dict_of_what_its_values_share() -> None:
    wide = {f"k{i}": i for i in range(MAX_FIELDS + 1)}
    rows = [{"wide": wide, "nested": {"a": [{"x": 1}], "b": [{"x": 2, "y": None}]}}] * 2
    wider = [{"wide": {**wide, "z": 1.5}, "nested": rows[0]["nested"]}]
    source = infer(rows + wider).source()
    assert "    wide: dict[str, int | float]\n" in source
    assert "    a: list[RecordNestedAItem]\n" in source


def test_infer_sources_keeps_the_name_of_a_stream_it_replays() -> None:
    class Named(io.BytesIO):
        name = "events.msgpack"

    data = msgpack.packb({"n": 1}) + msgpack.packb({"n": "x"})
    again, _ = infer_sources([Named(data)], 1)
    records, error = drain(StreamingReader(again[0], infer([{"n": 1}]).record_type()))
    assert [plain(r) for r in records] == [{"n": 1}]
    assert (error.index, error.source) == (1, "events.msgpack")


# --- records of several kinds -------------------------------------------------------------------

EVENTS: list[dict[str, Any]] = [
    {"type": "click", "x": 1, "y": 2},
    {"type": "key", "code": "a", "mods": ["shift"]},
    {"type": "click", "x": 3, "y": 4, "button": "left"},
    {"type": "scroll", "dy": 1.5},
    {"type": "key", "code": "b", "mods": []},
]


def test_a_tag_splits_records_into_kinds_joined_as_a_union() -> None:
    schema = infer(EVENTS)
    assert schema.kinds == ["Click", "Key", "Scroll"]
    assert schema.tag == "type"
    source = schema.source()
    assert (
        f'@dataclass\nclass Click:\n{F}    type: Literal["click"]\n    x: int\n    y: int\n'
        in source
    )
    assert "    button: str | None = None\n" in source
    assert (
        f'class Key:\n{F}    type: Literal["key"]\n    code: str\n    mods: list[str]\n' in source
    )
    assert source.endswith("\nRecord = Click | Key | Scroll\n")
    assert "from typing import Literal\n" in source
    struct = schema.source("struct")
    assert (
        'class Click(msgspec.Struct, tag_field="type", tag="click", forbid_unknown_fields=True):'
        '\n    __wire_form__ = "map"\n    x: int\n'
    ) in struct


@pytest.mark.parametrize("form", ["dataclass", "struct"])
def test_the_union_reads_back_every_kind(form: Any) -> None:
    union = infer(EVENTS).record_type(form)
    data = b"".join(msgpack.packb(e) for e in EVENTS)
    read = list(StreamingReader(data, union))
    assert [type(r).__name__ for r in read] == ["Click", "Key", "Click", "Scroll", "Key"]
    assert [msgspec.to_builtins(r) for r in read] == [
        {"type": "click", "x": 1, "y": 2, "button": None},
        {"type": "key", "code": "a", "mods": ["shift"]},
        {"type": "click", "x": 3, "y": 4, "button": "left"},
        {"type": "scroll", "dy": 1.5},
        {"type": "key", "code": "b", "mods": []},
    ]


def test_flat_merges_the_kinds_into_one_type() -> None:
    schema = infer(EVENTS, flat=True)
    assert schema.kinds is None
    source = schema.source()
    assert f"class Record:\n{F}    type: str\n    x: int | None = None\n" in source
    assert "Literal" not in source


def test_a_key_of_well_known_name_is_the_tag_before_another() -> None:
    records = [
        {"level": "info", "kind": "a", "n": 1},
        {"level": "warn", "kind": "b", "s": "x"},
        {"level": "info", "kind": "a", "n": 2},
        {"level": "warn", "kind": "b", "s": "y"},
    ]
    assert infer(records).tag == "kind"


@pytest.mark.parametrize(
    "records",
    [
        pytest.param([{"type": "a", "n": 1}, {"type": "b", "n": 2}], id="every value once"),
        pytest.param([{"type": "a", "n": 1}, {"type": "b", "n": 2}] * 2, id="the same keys"),
        pytest.param([{"name": f"n{i}", "n": i} for i in range(40)], id="a name, not a tag"),
        pytest.param([{"type": 1, "n": 1}, {"type": 2, "s": ""}] * 2, id="not str values"),
    ],
)
def test_no_tag_where_none_splits_the_records(records: list[dict[str, Any]]) -> None:
    assert infer(records).kinds is None


def test_a_tag_that_is_no_identifier_keeps_its_key() -> None:
    records = [{"@type": "page.view", "url": "/"}, {"@type": "user-login", "id": 1}] * 2
    schema = infer(records)
    assert schema.kinds == ["PageView", "UserLogin"]
    source = schema.source()
    assert '    type: Literal["page.view"] = field(metadata={"msgpack_key": "@type"})\n' in source
    union = schema.record_type()
    data = b"".join(msgpack.packb(r) for r in records)
    assert [r.type for r in StreamingReader(data, union)] == ["page.view", "user-login"] * 2
    struct = schema.record_type("struct")
    assert [type(r).__name__ for r in StreamingReader(data, struct)] == [
        "PageView",
        "UserLogin",
    ] * 2


def test_a_field_two_kinds_type_differently_is_any_in_columns_only() -> None:
    records = [{"type": "a", "value": 1}, {"type": "b", "value": "x", "more": 0}] * 2
    schema = infer(records)
    assert schema.conflicts == ["value (int in A, str in B)"]
    assert "    value: int\n" in schema.source()
    assert "    value: AnyValue\n" in schema.source(columns=True)


def test_a_list_only_ever_empty_is_of_any_value_and_of_none_in_columns() -> None:
    schema = infer([{"tags": []}, {"tags": []}])
    assert "    tags: list[AnyValue]\n" in schema.source()
    assert "    tags: list[None]\n" in schema.source(columns=True)


def test_checked_types_refuse_unknown_keys_and_read_arrays_natively() -> None:
    schema = infer([[1, "a"], [2, "b"]])
    source = schema.source("struct", checked=True)
    assert (
        "class Record(msgspec.Struct, forbid_unknown_fields=True, gc=False, array_like=True):"
        in source
    )
    mapped = infer([{"a": 1}]).record_type("struct", checked=True)
    _, error = drain(StreamingReader(msgpack.packb({"a": 1, "b": 2}), mapped))
    assert error.reason == "map has key 'b', which names no field"


@pytest.mark.parametrize("form", ["dataclass", "struct"])
@pytest.mark.parametrize("checked", [False, True])
def test_inferred_types_refuse_the_shape_they_never_saw(form: Any, checked: bool) -> None:
    """A record (or a record inside one) of the other shape than the records inferred from
    is refused, never read with names it never had: an array's values are no map's fields."""
    if form == "dataclass" and checked:
        return  # checked types are Structs
    mapped = infer([{"a": 1, "e": [{"b": True}]}]).record_type(form, checked=checked)
    kept, error = drain(StreamingReader(msgpack.packb([2, []]), mapped))
    assert (kept, error.index) == ([], 0)
    assert error.reason == (
        "expected a map of 2 fields (Record is read from maps only), found an array of 2 values"
    )
    nested = msgpack.packb({"a": 1, "e": [{"b": False}]}) + msgpack.packb({"a": 2, "e": [[True]]})
    kept, error = drain(StreamingReader(nested, mapped))
    assert (len(kept), error.index) == (1, 1)
    assert error.reason.startswith("field `e[0]` expected")
    arrays = infer([[1, "x"], [2, "y"]]).record_type(form, checked=checked)
    kept, error = drain(StreamingReader(msgpack.packb({"f0": 3, "f1": "z"}), arrays))
    assert (kept, error.index) == ([], 0)
    assert "(Record is read from arrays only), found a map of 2 entries" in error.reason


def test_the_other_shape_after_the_first_records_widens_the_type() -> None:
    """Found in a later record than those inferred from, an array where maps were seen fails
    the check of every record, and the type is widened: read back, every value is as it was."""
    first = [{"id": 0, "e": [{"a": False}]}, *({"id": i} for i in range(1, FIRST_CHECKED))]
    records = [*first, {"id": FIRST_CHECKED, "e": [[False]]}]
    data = b"".join(map(msgpack.packb, records))
    schema = infer_sources([data])[1]
    assert schema.checked == FIRST_CHECKED + 1  # every record, the one of another shape too
    assert "    e: list[AnyValue] | None = None\n" in schema.source()
    read = list(StreamingReader(data, schema.record_type()))
    assert [r.e for r in read if r.e is not None] == [[{"a": False}], [[False]]]


@st.composite
def event_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Records of 2 to 4 kinds, each kind a few columns of its own."""
    kinds = draw(st.integers(2, 4))
    fields = {
        f"k{kind}": {f"k{kind}f{i}": draw(st.sampled_from(sorted(COLUMN_VALUES))) for i in range(3)}
        for kind in range(kinds)
    }
    records = []
    for kind in list(fields) * 2 + draw(st.lists(st.sampled_from(list(fields)), max_size=10)):
        record = {"type": kind}
        record.update({name: draw(COLUMN_VALUES[c]) for name, c in fields[kind].items()})
        records.append(record)
    return records


@settings(max_examples=examples(ci=100, local=30), deadline=None)
@given(event_streams())
def test_any_mix_of_kinds_is_inferred_as_kinds_that_read_it_back(records: list[Any]) -> None:
    schema = infer(records)
    assert schema.kinds is not None
    data = b"".join(msgpack.packb(r, datetime=False) for r in records)
    for form in ("dataclass", "struct"):
        read = list(StreamingReader(data, schema.record_type(form)))
        got = [
            msgspec.to_builtins(r, builtin_types=(bytes, dt.datetime), enc_hook=_timestamp)
            for r in read
        ]
        assert instants(got) == instants(records)


def test_soft_keywords_are_field_names_on_every_python() -> None:
    source = infer([{"type": "a", "match": 1, "case": 2.5, "class": 3}]).source()
    assert "    type: str\n    match: int\n    case: float\n    class_: int = field(" in source


@pytest.mark.parametrize("form", ["dataclass", "struct"])
def test_inferred_kinds_refuse_the_shape_they_never_saw(form: Any) -> None:
    mapped = infer(EVENTS).record_type(form)
    kept, error = drain(StreamingReader(msgpack.packb(["click", 1, 2]), mapped))
    assert (kept, error.reason) == (
        [],
        "expected a map (every kind of Click | Key | Scroll is read from maps only), found an "
        "array of 3 values",
    )
    arrays = [[e["type"], *(v for k, v in e.items() if k != "type")] for e in EVENTS]
    positional = infer(arrays).record_type(form)
    assert [type(r).__name__ for r in StreamingReader(msgpack.packb(arrays[1]), positional)] == [
        "Key"
    ]
    kept, error = drain(StreamingReader(msgpack.packb({"f0": "key", "f1": "a"}), positional))
    assert (kept, error.reason) == (
        [],
        "expected an array (every kind of Click | Key | Scroll is read from arrays only), found "
        "a map of 2 entries",
    )
