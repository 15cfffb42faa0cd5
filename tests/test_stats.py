"""``_analysis.stats``: every statistic checked against one worked out here, directly,
for arbitrary records (a property), and the sketches' estimates against their stated bounds."""

from __future__ import annotations

import dataclasses
import datetime
import math
import statistics
import uuid
from collections import Counter
from typing import Any, NamedTuple

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.msgpack import Ext

from msgpack_reader_py import get_iter, pack_items
from msgpack_reader_py._analysis.stats import FieldStats, FieldSummary, summarise_fields
from msgpack_reader_py._readers.values import ValueReader

from .helpers import examples

TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str", type(None): "nil", dict: "map"}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.text(max_size=4),
)
nested = st.dictionaries(st.sampled_from(["x", "y"]), scalars, max_size=2)
records = st.lists(
    st.dictionaries(st.sampled_from(["a", "b", "c"]), st.one_of(scalars, nested), max_size=3),
    max_size=40,
)


def paths_of(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Every path's values, record by record, worked out the plain way."""
    found: dict[str, list[Any]] = {}

    def walk(record: dict[str, Any], prefix: str) -> None:
        for key, value in record.items():
            path = f"{prefix}{key}"
            found.setdefault(path, []).append(value)
            if isinstance(value, dict):
                walk(value, f"{path}.")

    for row in rows:
        walk(row, "")
    return found


def by_path(summaries: list[FieldSummary]) -> dict[str, FieldSummary]:
    return {summary.path: summary for summary in summaries}


def counted(values: list[Any]) -> Counter[tuple[type, Any]]:
    """The values distinct and top count: not nil, not maps; 1, 1.0 and true apart."""
    return Counter((type(v), v) for v in values if v is not None and not isinstance(v, dict))


@settings(deadline=None, max_examples=examples(ci=300, local=100))
@given(records)
def test_every_statistic_is_the_one_worked_out_directly(rows: list[dict[str, Any]]) -> None:
    summaries = by_path(summarise_fields(rows, top=3))
    expected = paths_of(rows)
    assert set(summaries) == set(expected)
    for path, values in expected.items():
        summary = summaries[path]
        assert summary.count == len(values)
        assert summary.missing == len(rows) - len(values)
        assert summary.nulls == values.count(None)
        assert summary.types == Counter(TYPE_NAMES[type(v)] for v in values)
        numbers = [v for v in values if type(v) in (int, float)]
        strings = [v for v in values if type(v) is str]
        if numbers and not strings:
            assert (summary.min, summary.max) == (min(numbers), max(numbers))
        elif strings and not numbers:
            assert (summary.min, summary.max) == (min(strings), max(strings))
        else:
            assert (summary.min, summary.max) == (None, None)
        if numbers:
            assert summary.mean == pytest.approx(statistics.fmean(numbers), rel=1e-9, abs=1e-6)
        else:
            assert summary.mean is None
        truth = counted(values)
        assert summary.distinct == len(truth)
        assert summary.distinct_exact
        assert summary.top_exact
        assert summary.top_error == 0
        for value, count in summary.top:
            assert count == truth[(type(value), value)]
        assert [count for _, count in summary.top] == sorted(truth.values(), reverse=True)[:3]


def test_nested_paths_come_after_their_parent_in_the_order_first_seen() -> None:
    rows = [{"b": 1, "inner": {"z": 1, "deep": {"q": "x"}}}, {"a": 2, "inner": {"y": None}}]
    assert [s.path for s in summarise_fields(rows)] == [
        "b",
        "inner",
        "inner.z",
        "inner.deep",
        "inner.deep.q",
        "inner.y",
        "a",
    ]


def test_a_missing_key_is_missing_and_a_nil_is_a_null() -> None:
    rows = [{"a": 1}, {"a": None}, {}, {"b": {"c": 1}}, {"b": None}]
    fields = by_path(summarise_fields(rows))
    assert (fields["a"].count, fields["a"].missing, fields["a"].nulls) == (2, 3, 1)
    assert fields["a"].types == {"int": 1, "nil": 1}
    assert (fields["b.c"].count, fields["b.c"].missing, fields["b.c"].nulls) == (1, 4, 0)
    assert fields["b"].distinct == 0


def test_array_shaped_records_are_fields_by_position() -> None:
    fields = by_path(summarise_fields([[1, "a", [1, 2]], [2, "b"], [3, "a", [], "extra"]]))
    assert list(fields) == ["f0", "f1", "f2", "f3"]
    assert (fields["f0"].min, fields["f0"].max, fields["f0"].mean) == (1, 3, 2)
    assert fields["f1"].top == (("a", 2), ("b", 1))
    assert (fields["f2"].count, fields["f2"].missing) == (2, 1)
    assert fields["f2"].types == {"array": 2}
    assert fields["f2"].ranges == {"array": (0, 2)}
    assert (fields["f2"].min, fields["f2"].max) == (None, None)
    assert fields["f2"].top == (([1, 2], 1), ([], 1))
    assert fields["f3"].missing == 2


def test_arrays_inside_maps_are_values_not_exploded() -> None:
    rows = [{"tags": ["a", "b"]}, {"tags": ["a", "b"]}, {"tags": [{"k": 1}]}]
    (tags,) = summarise_fields(rows)
    assert tags.types == {"array": 3}
    assert tags.distinct == 2
    assert tags.top == ((["a", "b"], 2), ([{"k": 1}], 1))


def test_records_that_are_not_containers_are_the_field_dot() -> None:
    (whole,) = summarise_fields([1, 2, 2, None])
    assert (whole.path, whole.count, whole.nulls, whole.mean) == (".", 4, 1, 5 / 3)
    assert whole.top == ((2, 2), (1, 1))


def test_keys_that_are_not_strings_are_written_in_brackets() -> None:
    rows = [{"codes": {404: 1, True: 2}, 7: "x"}]
    assert [s.path for s in summarise_fields(rows)] == ["codes", "codes[404]", "codes[true]", "[7]"]


def test_mixed_types_have_ranges_per_type_and_no_min_or_max() -> None:
    (field,) = summarise_fields([{"v": 3}, {"v": 1.5}, {"v": "z"}, {"v": "a"}, {"v": True}])
    assert (field.min, field.max) == (None, None)
    assert field.ranges == {"int": (3, 3), "float": (1.5, 1.5), "str": ("a", "z")}
    assert field.mean == 2.25  # the numbers': a bool is not one
    assert field.distinct == 5


def test_ints_and_floats_share_one_range_and_one_mean() -> None:
    (field,) = summarise_fields([{"v": 3}, {"v": -1.5}, {"v": 10}])
    assert (field.min, field.max, field.mean) == (-1.5, 10, 11.5 / 3)


def test_one_two_point_zero_and_true_are_three_values() -> None:
    (field,) = summarise_fields([{"v": 1}, {"v": 1.0}, {"v": True}, {"v": 1}])
    assert field.distinct == 3
    assert sorted((type(v).__name__, n) for v, n in field.top) == [
        ("bool", 1),
        ("float", 1),
        ("int", 2),
    ]


def test_nan_is_counted_once_and_left_out_of_min_max_and_mean() -> None:
    rows = [{"v": math.nan}, {"v": 2.0}, {"v": float("nan")}, {"v": 4.0}]
    (field,) = summarise_fields(rows)
    assert (field.count, field.min, field.max, field.mean) == (4, 2.0, 4.0, 3.0)
    assert field.distinct == 3
    (nan, count), *_ = field.top
    assert math.isnan(nan)
    assert count == 2


def test_a_field_of_nan_only_has_no_mean() -> None:
    (field,) = summarise_fields([{"v": math.nan}])
    assert (field.min, field.max, field.mean) == (None, None, None)


def test_infinities_of_both_signs_have_no_mean_but_a_range() -> None:
    (field,) = summarise_fields([{"v": math.inf}, {"v": -math.inf}, {"v": 1e308}, {"v": 1e308}])
    assert (field.min, field.max) == (-math.inf, math.inf)
    assert math.isnan(field.mean or 0.0)
    (big,) = summarise_fields([{"v": 1e308}, {"v": 1e308}])
    assert big.mean == math.inf  # the sum overflows, as IEEE says


def test_bools_have_no_range_and_no_mean() -> None:
    (field,) = summarise_fields([{"v": True}, {"v": False}, {"v": True}])
    assert (field.min, field.max, field.mean, field.ranges) == (None, None, None, {})
    assert field.top == ((True, 2), (False, 1))


def test_untyped_values_bins_timestamps_and_extensions() -> None:
    early, late = msgpack.Timestamp(1, 5), msgpack.Timestamp(2_000_000_000, 0)
    data = b"".join(
        msgpack.packb({"t": t, "b": b"\x00\x01", "e": msgpack.ExtType(5, b"xy")})
        for t in (late, early, late)
    )
    fields = by_path(summarise_fields(ValueReader(data)))
    assert fields["t"].types == {"timestamp": 3}
    assert (fields["t"].min, fields["t"].max) == (early, late)
    assert fields["t"].top == ((late, 2), (early, 1))
    assert fields["b"].types == {"bin": 3}
    assert fields["b"].top == ((b"\x00\x01", 3),)
    assert fields["e"].types == {"ext": 3}
    assert fields["e"].top == (({"ext": 5, "base64": "eHk="}, 3),)
    assert fields["e"].distinct == 1


def test_bins_of_every_kind_are_one_value() -> None:
    (field,) = summarise_fields([{"b": b"ab"}, {"b": bytearray(b"ab")}, {"b": memoryview(b"ab")}])
    assert (field.types, field.distinct, field.top) == ({"bin": 3}, 1, ((b"ab", 3),))


@dataclasses.dataclass
class Inner:
    level: int
    when: datetime.datetime


@dataclasses.dataclass
class Outer:
    name: str
    inner: Inner
    ident: uuid.UUID
    pair: tuple[int, int]


class Point(NamedTuple):
    x: int
    y: float


@dataclasses.dataclass
class Empty:
    pass


def test_typed_records_are_fields_by_name_and_their_values_by_wire_type() -> None:
    moment = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    ident = uuid.UUID(int=7)
    rows = [
        Outer("a", Inner(1, moment), ident, (1, 2)),
        Outer("b", Inner(3, moment + datetime.timedelta(days=1)), ident, (3, 4)),
    ]
    fields = by_path(summarise_fields(rows))
    assert list(fields) == ["name", "inner", "inner.level", "inner.when", "ident", "pair"]
    assert fields["inner"].types == {"map": 2}
    assert fields["inner.when"].types == {"timestamp": 2}
    assert fields["inner.when"].min == moment
    assert fields["inner.level"].mean == 2
    assert fields["ident"].types == {"UUID": 2}
    assert fields["ident"].top == ((ident, 2),)
    assert fields["pair"].ranges == {"array": (2, 2)}
    points = by_path(summarise_fields([Point(1, 2.0), Point(3, 4.0)]))
    assert (points["x"].max, points["y"].mean) == (3, 3.0)


def test_a_record_with_one_field_and_a_class_with_none() -> None:
    @dataclasses.dataclass
    class One:
        only: Empty

    (only,) = summarise_fields([One(Empty()), One(Empty())])
    assert only.types == {"Empty": 2}
    assert (only.distinct, only.top) == (1, (({}, 2),))  # unhashable: counted by their text


def test_naive_and_aware_datetimes_have_no_range() -> None:
    naive = datetime.datetime(2024, 1, 1)
    aware = naive.replace(tzinfo=datetime.timezone.utc)
    (field,) = summarise_fields([{"t": naive}] * 4096 + [{"t": aware}])  # in two batches
    assert (field.min, field.max, field.ranges) == (None, None, {})
    (one_batch,) = summarise_fields([{"t": naive}, {"t": aware}])
    assert one_batch.ranges == {}


def test_a_lone_surrogate_is_counted() -> None:
    (field,) = summarise_fields([{"s": "\ud800"}, {"s": "\ud800"}])
    assert (field.distinct, field.top) == (1, (("\ud800", 2),))


def test_add_one_by_one_is_update() -> None:
    rows = [{"a": i % 7, "b": str(i)} for i in range(10_000)]
    one = FieldStats()
    for row in rows:
        one.add(row)
    assert one.records == 10_000
    assert one.summaries() == summarise_fields(rows)


def test_distinct_is_exact_up_to_the_sketch_then_within_its_error() -> None:
    exact = by_path(summarise_fields([{"i": i, "s": f"k{i}"} for i in range(1024)]))
    assert (exact["i"].distinct, exact["i"].distinct_exact) == (1024, True)
    rows = [{"i": i * 1000, "s": f"key-{i}", "f": i / 7} for i in range(100_000)]
    for field in summarise_fields(rows * 2):
        assert not field.distinct_exact
        # The KMV estimate's standard error is 1 / sqrt(1022), about 3.1%: four of them.
        assert abs(field.distinct - 100_000) < 12_500, field
    assert summarise_fields(rows[:3000]) == summarise_fields(rows[:3000])  # the same every run


def test_top_values_past_the_capacity_are_within_their_error() -> None:
    # A skewed field: value v about 2000 / (v + 1) times, and 3000 values seen once.
    rows = [{"v": v} for v in range(40) for _ in range(2000 // (v + 1))]
    rows += [{"v": 1000 + i} for i in range(3000)]
    rows = [rows[(i * 7919) % len(rows)] for i in range(len(rows))]  # shuffled, fixed
    truth = Counter(row["v"] for row in rows)
    (field,) = summarise_fields(rows, top=5, capacity=64)
    assert not field.top_exact
    assert 0 < field.top_error <= len(rows) // 65
    assert [v for v, _ in field.top] == [0, 1, 2, 3, 4]
    for value, count in field.top:
        assert truth[value] - field.top_error <= count <= truth[value]


def test_a_field_of_unique_values_has_no_top_values_past_the_capacity() -> None:
    (field,) = summarise_fields([{"id": i} for i in range(5000)], capacity=16)
    assert (field.top, field.top_exact) == ((), False)


def test_fields_past_max_fields_are_counted_as_untracked() -> None:
    stats = FieldStats(max_fields=2)
    stats.update([{"a": 1, "b": {"c": 2, "d": 3}}, {"e": 4}])
    assert [s.path for s in stats.summaries()] == ["a", "b"]
    assert stats.untracked == 3


def test_the_reference_stream_read_untyped() -> None:
    items = list(get_iter(2000, seed=3))
    fields = summarise_fields(ValueReader(pack_items(items)))
    assert [f.path for f in fields] == [f"f{i}" for i in range(8)]
    assert (fields[0].min, fields[0].max, fields[0].mean) == (0, 1999, 999.5)
    values = [item.value for item in items]
    assert fields[5].mean == pytest.approx(statistics.fmean(values), rel=1e-12)
    assert fields[6].min == min(item.filename for item in items)


def test_as_json_holds_every_statistic() -> None:
    (field,) = summarise_fields([{"a": [1]}, {"a": [1, 2]}])
    assert field.as_json() == {
        "field": "a",
        "count": 2,
        "missing": 0,
        "nulls": 0,
        "types": {"array": 2},
        "min": None,
        "max": None,
        "mean": None,
        "distinct": 2,
        "distinct_exact": True,
        "top": [{"value": [1], "count": 1}, {"value": [1, 2], "count": 1}],
        "top_exact": True,
        "top_error": 0,
        "ranges": {"array": [1, 2]},
    }


@pytest.mark.parametrize(
    "keywords",
    [{"top": -1}, {"top": 10, "capacity": 5}, {"sketch": 1}, {"max_fields": -1}],
)
def test_bad_parameters_are_refused(keywords: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="expected top >= 0"):
        FieldStats(**keywords)


def test_extensions_inside_typed_values() -> None:
    (field,) = summarise_fields([{"e": Ext(1, b"a")}, {"e": Ext(1, b"a")}])
    assert (field.types, field.distinct) == ({"ext": 2}, 1)
