"""CSV as ``writers.CsvRows`` writes it: every cell as documented, read back by a CSV reader,
and the same text whether a batch takes the fast way (msgspec's JSON, reshaped) or the csv
module's."""

from __future__ import annotations

import csv
import io
import math
from typing import Annotated, Any, Literal

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from msgpack_reader_py.writers import CsvKind, CsvRows, csv_cell, csv_kind

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
cells: dict[CsvKind | None, st.SearchStrategy[Any]] = {
    "text": st.none() | plain_texts | texts,
    "number": st.none() | ints | st.booleans(),
    "float": st.none() | st.floats() | ints | st.booleans(),
    None: st.none() | st.lists(st.integers(), max_size=3) | st.binary(max_size=4) | texts,
}
plain_cells: dict[CsvKind | None, st.SearchStrategy[Any]] = {
    "text": st.none() | plain_texts,
    "number": st.none() | ints | st.booleans(),
    "float": st.none() | st.floats(allow_nan=False, allow_infinity=False) | st.booleans(),
    None: st.none() | st.binary(max_size=4),
}


@st.composite
def tables(
    draw: st.DrawFn, values: dict[CsvKind | None, st.SearchStrategy[Any]] = cells
) -> tuple[list[CsvKind | None], list[list[tuple[Any, ...]]]]:
    kinds = draw(st.lists(st.sampled_from(list(values)), min_size=1, max_size=5))
    row = st.tuples(*(values[k] for k in kinds))
    return kinds, draw(st.lists(st.lists(row, max_size=6), max_size=3))


def written(
    kinds: list[CsvKind | None], batches: list[list[tuple[Any, ...]]], rows: type[CsvRows] = CsvRows
) -> bytes:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="", write_through=True)
    writer = rows(out, [f"c{i}" for i in range(len(kinds))], kinds)
    for batch in batches:
        writer.write(batch)
    out.flush()
    data: bytes = out.buffer.getvalue()
    return data


class _CsvModuleOnly(CsvRows):
    """Every batch the csv module's way."""

    def _plain(self, batch: Any) -> bytes | None:
        return None


class _Counted(CsvRows):
    fast = 0

    def _plain(self, batch: Any) -> bytes | None:
        data = super()._plain(batch)
        _Counted.fast += data is not None
        return data


def expected_cell(value: Any) -> str:
    cell = csv_cell(value)
    return "" if cell is None else cell


@settings(max_examples=examples(ci=400, local=150))
@given(tables())
def test_every_cell_reads_back_as_documented(
    table: tuple[list[CsvKind | None], list[list[tuple[Any, ...]]]],
) -> None:
    kinds, batches = table
    text = written(kinds, batches).decode("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == [f"c{i}" for i in range(len(kinds))]
    assert rows[1:] == [[expected_cell(v) for v in row] for batch in batches for row in batch]


@settings(max_examples=examples(ci=400, local=150))
@given(tables())
@example((["text", "number"], [[("[null]", None), ("true]", True), ("x", None)]]))
def test_both_ways_write_the_same_text(
    table: tuple[list[CsvKind | None], list[list[tuple[Any, ...]]]],
) -> None:
    kinds, batches = table
    assert written(kinds, batches) == written(kinds, batches, _CsvModuleOnly)


@settings(max_examples=examples(ci=200, local=100))
@given(tables(plain_cells))
def test_plain_batches_take_the_fast_way_and_write_the_same_text(
    table: tuple[list[CsvKind | None], list[list[tuple[Any, ...]]]],
) -> None:
    kinds, batches = table
    _Counted.fast = 0
    assert written(kinds, batches, _Counted) == written(kinds, batches, _CsvModuleOnly)
    fast = len(kinds) > 1  # one column: the csv module's '""' for a lone empty cell
    assert _Counted.fast == (sum(1 for b in batches if b) if fast else 0)


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
def test_the_kind_of_each_annotation(annotation: Any, kind: CsvKind | None) -> None:
    assert csv_kind(annotation) == kind


def test_a_batch_with_one_value_to_quote_is_written_the_csv_module_way() -> None:
    _Counted.fast = 0
    data = written(["text", "float"], [[("a", 1.0), ('say "hi", then go', 2.5)]], _Counted)
    assert data == b'c0,c1\na,1.0\n"say ""hi"", then go",2.5\n'
    assert _Counted.fast == 0
