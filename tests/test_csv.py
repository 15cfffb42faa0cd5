"""CSV as ``writers.CsvRows`` writes it: every cell as documented, read back by a CSV reader,
and exactly the text of RFC 4180 written a cell at a time, whatever the values hold."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

import duckdb
import msgpack
import msgspec
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from msgpack_reader_py._output.convert import convert
from msgpack_reader_py._output.text import CsvRows, CsvType, csv_cell, csv_type

from .helpers import examples

# Text that takes every way there is: plain, or with what CSV quotes for and JSON escapes.
# Pieces, not characters, so that ``[null]`` or ``true,`` come up: what JSON's text of a row
# holds between its values.
texts = st.lists(
    st.sampled_from(
        ["a", " ", ",", '"', "[", "]", "\\", "\r", "\n", "\t", "\x00", "é😀", "null", "[true]"]
    ),
    max_size=6,
).map("".join)
plain_texts = st.lists(
    st.sampled_from(["a", " ", ".", "-", "é€😀", "null", "true"]), max_size=6
).map("".join)
ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)
cells: dict[CsvType | None, st.SearchStrategy[Any]] = {
    "text": st.none() | plain_texts | texts,
    "number": st.none() | ints | st.booleans(),
    "float": st.none() | st.floats() | ints | st.booleans(),
    None: st.none() | st.lists(st.integers(), max_size=3) | st.binary(max_size=4) | texts,
}


# Without a null anywhere (no None, NaN, infinity or "null" in text): the writer then checks
# the JSON of a batch without counting its quotes, which only such batches exercise.
no_null_texts = (plain_texts | texts).filter(lambda text: "null" not in text)
finite = st.floats(allow_nan=False, allow_infinity=False)
no_null_cells: dict[CsvType | None, st.SearchStrategy[Any]] = {
    "text": no_null_texts,
    "number": ints | st.booleans(),
    "float": finite | ints | st.booleans(),
    None: st.lists(st.integers(), max_size=3) | st.binary(max_size=4) | no_null_texts,
}


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[CsvType | None], list[list[tuple[Any, ...]]]]:
    kinds = draw(st.lists(st.sampled_from(list(cells)), min_size=1, max_size=5))
    kind_cells = draw(st.sampled_from([cells, no_null_cells]))
    row = st.tuples(*(kind_cells[k] for k in kinds))
    return kinds, draw(st.lists(st.lists(row, max_size=6), max_size=3))


def written(kinds: list[CsvType | None], batches: list[list[tuple[Any, ...]]]) -> bytes:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="", write_through=True)
    writer = CsvRows(out, [f"c{i}" for i in range(len(kinds))], kinds)
    for batch in batches:
        writer.write(batch)
    out.flush()
    data: bytes = out.buffer.getvalue()
    return data


def reference(kinds: list[CsvType | None], batches: list[list[tuple[Any, ...]]]) -> bytes:
    """RFC 4180 written the plain way, a cell at a time."""

    def quoted(cell: str) -> str:
        if any(c in cell for c in ',"\r\n') or (cell == "" and len(kinds) == 1):
            return '"' + cell.replace('"', '""') + '"'
        return cell

    rows = [[f"c{i}" for i in range(len(kinds))]]
    rows += [[expected_cell(v) for v in row] for batch in batches for row in batch]
    return "".join(",".join(map(quoted, row)) + "\n" for row in rows).encode("utf-8")


def expected_cell(value: Any) -> str:
    cell = csv_cell(value)
    return "" if cell is None else cell


@settings(max_examples=examples(ci=400, local=150))
@given(tables())
def test_every_cell_reads_back_as_documented(
    table: tuple[list[CsvType | None], list[list[tuple[Any, ...]]]],
) -> None:
    kinds, batches = table
    # Python 3.10's csv reader refuses a NUL ("line contains NUL"): one stands in for it,
    # a character the cells never hold.
    text = written(kinds, batches).decode("utf-8").replace("\x00", "\ue000")
    rows = [
        [cell.replace("\ue000", "\x00") for cell in row]
        for row in csv.reader(io.StringIO(text, newline=""))
    ]
    assert rows[0] == [f"c{i}" for i in range(len(kinds))]
    assert rows[1:] == [[expected_cell(v) for v in row] for batch in batches for row in batch]


@settings(max_examples=examples(ci=400, local=150))
@given(tables())
@example((["text", "number"], [[("[null]", None), ("true]", True), ("x", None)]]))
@example((["text", "float"], [[("[0]", math.nan), ("a,b", 1.5), ("[1]", math.inf)]]))
@example((["text"], [[("",), (None,), ("a",), ('"',)]]))
@example((["text", "number"], [[("a[b", 1), ("c]", 2)]]))  # brackets in a batch without null
@example(([None], [[("\n\n",), ("",), (b"",)]]))
def test_the_text_is_exactly_rfc_4180_cell_by_cell(
    table: tuple[list[CsvType | None], list[list[tuple[Any, ...]]]],
) -> None:
    kinds, batches = table
    assert written(kinds, batches) == reference(kinds, batches)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_is_its_shortest_json_text_and_reads_back_exactly(value: float) -> None:
    cell = csv_cell(value)
    assert cell == msgspec.json.encode(value).decode()
    assert cell is not None
    assert float(cell) == value


def test_cells_that_are_not_plain_values() -> None:
    assert [csv_cell(v) for v in (math.nan, math.inf, -math.inf)] == ["nan", "inf", "-inf"]
    assert [csv_cell(v) for v in (True, False, None, "", 7)] == ["true", "false", None, "", "7"]
    assert csv_cell(b"\x00\x01") == "AAE="
    assert csv_cell({"a": [1, 2.5]}) == '{"a":[1,2.5]}'


def same_floats(got: Any, expected: Any) -> bool:
    """Equal, NaN equal to NaN, a list to a list, a map to a map."""
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(map(same_floats, got, expected))
        )
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(same_floats(got[k], expected[k]) for k in expected)
        )
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(got, float) and math.isnan(got)
    return type(got) is type(expected) and got == expected


nested_floats = st.recursive(
    st.floats() | st.none() | st.integers(-(2**63), 2**63 - 1),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner),
    max_leaves=6,
).filter(lambda value: isinstance(value, (list, dict)))


@given(nested_floats)
@example([1.5, math.nan, -math.inf, None])
def test_a_nested_nan_or_infinity_is_kept_in_its_cell_apart_from_nil(value: Any) -> None:
    # Strict JSON has no NaN: written as null, it was lost, and told from nil by nothing.
    cell = csv_cell(value)
    assert cell is not None
    assert same_floats(json.loads(cell), value)


@pytest.mark.parametrize(
    ("annotation", "kind"),
    [
        (str, "text"),
        (str | None, "text"),
        (Literal["click", "key"], "text"),
        (int, "number"),
        (bool | None, "number"),
        (Annotated[int, msgspec.Meta(ge=0)], "number"),
        (Literal[1, 2], "number"),
        (float, "float"),
        (int | float | None, "float"),
        (int | str, None),
        (bytes, None),
        (list[int], None),
        (dict[str, int] | None, None),
    ],
)
def test_the_kind_of_each_annotation(annotation: Any, kind: CsvType | None) -> None:
    assert csv_type(annotation) == kind


def test_a_value_not_of_its_columns_kind_is_written_as_its_cell() -> None:
    # Not what a typed read gives; a column's values are then each written as csv_cell has them.
    data = written(["text", "number"], [[(7, "x"), ("a,b", 1.5), (None, True)]])
    assert data == b'c0,c1\n7,x\n"a,b",1.5\n,true\n'


def test_names_that_need_quoting_are_quoted() -> None:
    out = io.StringIO()
    CsvRows(out, ["a,b", 'say "x"', "plain"])
    assert out.getvalue() == '"a,b","say ""x""",plain\n'


class Reading(NamedTuple):
    sensor: str
    at: int
    value: float | None
    ok: bool
    note: str | None


READINGS = [
    Reading("a", 1, 1.5, True, None),
    Reading("b,c", -(2**63), 1e-7, False, 'said "hi"\nthen left'),
    Reading("[null]", 2**63, None, True, ""),
    Reading("d", 0, 1.7976931348623157e308, False, "x\ry"),
]


def test_duckdb_and_polars_read_the_csv_back_typed(tmp_path: Path) -> None:
    # A CSV file, written by the command line, read by the engines people read it with: every
    # value comes back as it was, typed (bools as bools, floats exactly, text with its commas,
    # quotes and line breaks); None is a NULL, as an empty cell is to them.
    source = tmp_path / "readings.msgpack"
    source.write_bytes(b"".join(msgpack.packb(list(r)) for r in READINGS))
    out = tmp_path / "readings.csv"
    convert(str(source), str(out), "csv", record_type=Reading)
    kept = [r._replace(note=r.note or None) for r in READINGS]  # an empty cell reads as NULL
    types = {"sensor": "VARCHAR", "at": "HUGEINT", "value": "DOUBLE", "ok": "BOOLEAN"}
    rows = duckdb.read_csv(str(out), header=True, dtype={**types, "note": "VARCHAR"}).fetchall()
    assert [Reading(*row) for row in rows] == kept
    schema = {"sensor": pl.String, "at": pl.Int128, "value": pl.Float64, "ok": pl.Boolean}
    frame = pl.read_csv(out, schema={**schema, "note": pl.String})
    assert [Reading(*row) for row in frame.iter_rows()] == kept
