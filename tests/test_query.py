"""--select and --where: records filtered and projected in SQL by DuckDB (``_output.query``),
in the library's convert() and on the command line's dump, head, tail and convert."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import msgpack
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msgpack_reader_py import Item, get_iter, pack_items
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py._output.query import Query, QueryError, parse_select
from msgpack_reader_py.cli import main

from .helpers import EXIT_USAGE, ITEM, error_line, examples

ITEMS = list(get_iter(300))
EVENTS: list[dict[str, Any]] = [
    {
        "id": i,
        "level": ("debug", "info", "warn")[i % 3],
        "inner": {"name": f"w{i % 4}", "depth": i % 5},
        "attrs": {"retries": i % 2},
        **({"note": "late"} if i >= 40 else {}),
    }
    for i in range(60)
]
NESTED: pa.DataType = pa.struct([pa.field("c", pa.int64()), pa.field('say "hi"', pa.string())])
FIELDS: list[pa.Field[Any]] = [
    pa.field("a", pa.int64()),
    pa.field("level", pa.string()),
    pa.field("b", NESTED),
]
SCHEMA = pa.schema(FIELDS)
TABLE = pa.table(
    {
        "a": [1, 2, 3],
        "level": ["warn", "info", "warn"],
        "b": [{"c": 1, 'say "hi"': "x"}, {"c": 5, 'say "hi"': "y"}, None],
    },
    schema=SCHEMA,
)


@pytest.fixture
def items(tmp_path: Path) -> Path:
    path = tmp_path / "items.msgpack"
    path.write_bytes(pack_items(ITEMS))
    return path


@pytest.fixture
def events(tmp_path: Path) -> Path:
    path = tmp_path / "events.msgpack"
    path.write_bytes(b"".join(msgpack.packb(e) for e in EVENTS))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> list[Any]:
    assert main(list(argv)) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return [json.loads(line) for line in out.splitlines()]


def as_dict(item: Item, *fields: str) -> dict[str, Any]:
    return {name: getattr(item, name) for name in fields}


# --- the query ------------------------------------------------------------------------------


def test_select_and_where_on_a_batch() -> None:
    query = Query(SCHEMA, ("a", "b.c", 'b.say "hi"'), "a > 1 and level = 'warn'")
    assert query.schema.names == ["a", "b.c", 'b.say "hi"']
    assert query.apply(TABLE.to_batches()[0]).to_pylist() == [
        {"a": 3, "b.c": None, 'b.say "hi"': None}
    ]
    query.close()


def test_every_record_and_every_field_by_default() -> None:
    query = Query(SCHEMA, where="b.c >= 1")
    assert query.schema == SCHEMA
    assert query.apply(TABLE.to_batches()[0]).to_pylist() == TABLE.to_pylist()[:2]


def test_a_batch_that_nothing_satisfies_is_empty_with_the_schema() -> None:
    query = Query(SCHEMA, ("level",), "a > 10")
    batch = query.apply(TABLE.to_batches()[0])
    assert (batch.num_rows, batch.schema) == (0, query.schema)


def test_timestamps_keep_their_zone() -> None:
    schema = pa.schema([("t", pa.timestamp("us", tz="UTC"))])
    assert Query(schema, ("t",)).schema == schema


@pytest.mark.parametrize(
    ("select", "where", "said"),
    [
        (("nope",), None, 'Referenced column "nope" not found'),
        (("b.nope",), None, 'Could not find key "nope"'),
        (None, "nope > 1", 'Referenced column "nope" not found'),
        (None, "a >", "syntax error"),
    ],
)
def test_what_names_no_field_is_refused_before_reading(
    select: tuple[str, ...] | None, where: str | None, said: str
) -> None:
    with pytest.raises(QueryError, match=said) as info:
        Query(SCHEMA, select, where)
    assert str(info.value).endswith('(the fields: a, level, b, b.c, b.say "hi")')
    assert "\n" not in str(info.value)


def test_a_where_is_one_expression() -> None:
    # Bracketed: an OR in it cannot escape the WHERE.
    query = Query(SCHEMA, None, "a = 1 or a = 3")
    assert query.apply(TABLE.to_batches()[0]).column("a").to_pylist() == [1, 3]


@pytest.mark.parametrize(
    ("text", "paths"), [("a", ("a",)), ("a, b.c", ("a", "b.c")), (" x.y.z ", ("x.y.z",))]
)
def test_select_lists(text: str, paths: tuple[str, ...]) -> None:
    assert parse_select(text) == paths


@pytest.mark.parametrize("text", ["", "a,", "a,,b", "b.", ".b", "a..b"])
def test_select_lists_with_an_empty_name_are_refused(text: str) -> None:
    with pytest.raises(QueryError, match="field paths separated by commas"):
        parse_select(text)


# --- convert() ------------------------------------------------------------------------------


@settings(
    max_examples=examples(ci=25, local=10),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    count=st.integers(0, 300),
    threshold=st.floats(0, 1300),
    last=st.none() | st.integers(0, 20),
    to=st.sampled_from(["jsonl", "parquet"]),
)
@example(count=2, threshold=0.0, last=3, to="jsonl")  # fewer matches than last
def test_the_records_kept_are_those_python_keeps(
    tmp_path: Path, count: int, threshold: float, last: int | None, to: str
) -> None:
    items = ITEMS[:count]
    expected = [as_dict(i, "id", "value") for i in items if i.value > threshold]
    if last is not None:
        expected = expected[max(len(expected) - last, 0) :] if last else []
    out = tmp_path / f"out.{to}"
    result = convert(
        pack_items(items),
        out,
        to,  # type: ignore[arg-type]
        select=["id", "value"],
        where=f"value > {threshold!r}",
        limit=last,
        from_end=last is not None,
        read_size=512,  # many batches
    )
    got = (
        [json.loads(line) for line in out.read_text().splitlines()]
        if to == "jsonl"
        else pq.read_table(out).to_pylist()
    )
    assert got == expected
    assert result.records == len(expected)


def test_untyped_records_get_columns_inferred(tmp_path: Path, events: Path) -> None:
    out = io.BytesIO()
    result = convert(
        events,
        out,
        "jsonl",
        record_type=None,
        select=["id", "inner.name"],
        where="note is not null and attrs.retries = 1",
    )
    expected = [
        {"id": e["id"], "inner.name": e["inner"]["name"]}
        for e in EVENTS
        if "note" in e and e["attrs"]["retries"] == 1
    ]
    assert [json.loads(line) for line in out.getvalue().splitlines()] == expected
    assert result.inferred is not None


@pytest.mark.parametrize(
    ("keywords", "said"),
    [
        ({"limit": -1, "from_end": True}, "limit must be a non-negative int"),
        ({"limit": True}, "limit must be a non-negative int"),
        ({"from_end": True}, "from_end writes the last limit records: give limit too"),
    ],
)
def test_bad_arguments_are_refused(keywords: dict[str, Any], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        convert(b"", io.BytesIO(), "jsonl", **keywords)


# --- the command line -----------------------------------------------------------------------


def test_head_with_where_is_the_first_records_that_match(
    capsys: pytest.CaptureFixture[str], items: Path
) -> None:
    got = run(
        capsys,
        "head",
        "-n",
        "3",
        *ITEM,
        str(items),
        "--where",
        "value > 600",
        "--select",
        "id,value",
    )
    assert got == [as_dict(i, "id", "value") for i in ITEMS if i.value > 600][:3]


def test_tail_with_where_is_the_last_records_that_match(
    capsys: pytest.CaptureFixture[str], items: Path
) -> None:
    got = run(capsys, "tail", "-n", "4", *ITEM, str(items), "--where", "id % 7 = 0")
    assert [r["id"] for r in got] == [i.id for i in ITEMS if i.id % 7 == 0][-4:]


def test_dump_skip_counts_records_and_limit_counts_matches(
    capsys: pytest.CaptureFixture[str], items: Path
) -> None:
    got = run(
        capsys,
        "dump",
        *ITEM,
        str(items),
        "--start",
        "100",
        "--limit",
        "2",
        "--where",
        "id % 2 = 1",
        "--select",
        "id",
    )
    assert got == [{"id": 101}, {"id": 103}]


def test_nested_paths_of_untyped_records(capsys: pytest.CaptureFixture[str], events: Path) -> None:
    got = run(
        capsys,
        "dump",
        str(events),
        "--where",
        "\"inner\".depth = 4 and level = 'info'",
        "--select",
        "id,inner.name,attrs",
    )
    assert got == [
        {"id": e["id"], "inner.name": e["inner"]["name"], "attrs": e["attrs"]}
        for e in EVENTS
        if e["inner"]["depth"] == 4 and e["level"] == "info"
    ]


def test_csv_has_the_selected_columns(capsys: pytest.CaptureFixture[str], events: Path) -> None:
    assert (
        main(
            [
                "dump",
                str(events),
                "--format",
                "csv",
                "--select",
                "level,inner.name",
                "--where",
                "id < 2",
            ]
        )
        == 0
    )
    out, _ = capsys.readouterr()
    assert list(csv.reader(io.StringIO(out))) == [
        ["level", "inner.name"],
        ["debug", "w0"],
        ["info", "w1"],
    ]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_convert_to_parquet(
    capsys: pytest.CaptureFixture[str], items: Path, tmp_path: Path, jobs: str
) -> None:
    out = tmp_path / "out.parquet"
    assert (
        main(
            [
                "convert",
                *ITEM,
                str(items),
                "--to",
                "parquet",
                "-o",
                str(out),
                "-j",
                jobs,
                "--where",
                "filename like 'A%'",
                "--select",
                "filename,id",
            ]
        )
        == 0
    )
    table = pq.read_table(out)
    assert table.schema.names == ["filename", "id"]
    assert table.to_pylist() == [
        as_dict(i, "filename", "id") for i in ITEMS if i.filename.startswith("A")
    ]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--where", "nope > 1"], "error: --where 'nope > 1': Binder Error: Referenced column"),
        (["--select", "id,nope"], "error: --select 'id,nope': Binder Error"),
        (["--select", "id,"], "error: --select 'id,': give field paths"),
        (["--where", "id >"], "error: --where 'id >': Parser Error: syntax error"),
    ],
)
def test_a_query_naming_no_field_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], items: Path, argv: list[str], said: str
) -> None:
    for command in ("dump", "head", "tail"):
        assert main([command, *ITEM, str(items), *argv]) == EXIT_USAGE
        out, err = capsys.readouterr()
        assert out == ""
        assert error_line(err).startswith(said), err
