"""``msgpack-reader stats``, run in-process: the table, ``--json``, ``--type``, ``--limit``,
``--top``, and bad data as one error line with no statistics."""

from __future__ import annotations

import argparse
import io
import json
import re
import statistics
from pathlib import Path
from typing import Any

import msgpack
import pytest

from msgpack_reader_py import get_iter, pack_items
from msgpack_reader_py.cli import build_parser, main

from .helpers import EXIT_DATA_ERROR, EXIT_USAGE, ITEM, error_line, fake_stdin, item_values

ITEMS = list(get_iter(300, seed=11))
FIRST = len(pack_items(ITEMS[:1]))  # where the second record starts
EVENTS = Path(__file__).parent / "encoders" / "data" / "go_events_map.msgpack"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def json_fields(out: str) -> dict[str, dict[str, Any]]:
    fields = [json.loads(line) for line in out.splitlines()]
    return {field["field"]: field for field in fields}


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    path = tmp_path / "items.msgpack"
    path.write_bytes(pack_items(ITEMS))
    return path


def test_json_is_one_object_a_field_with_every_statistic(
    items_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(["stats", "--json", *ITEM, str(items_file)], capsys)
    assert (status, err) == (0, "")
    fields = json_fields(out)
    names = ["id", "process_id", "thread_id", "timestamp_ns", "line", "value", "filename", "path"]
    assert list(fields) == names
    ids = fields["id"]
    assert (ids["count"], ids["missing"], ids["nulls"], ids["types"]) == (300, 0, 0, {"int": 300})
    assert (ids["min"], ids["max"], ids["mean"]) == (0, 299, 149.5)
    assert (ids["distinct"], ids["distinct_exact"]) == (300, True)
    # 300 values, each once, past the 256 counted for the top: none stands out.
    assert (ids["top"], ids["top_exact"]) == ([], False)
    value = fields["value"]
    assert value["mean"] == pytest.approx(statistics.fmean(i.value for i in ITEMS), rel=1e-12)
    assert value["max"] == max(i.value for i in ITEMS)
    assert fields["filename"]["min"] == min(i.filename for i in ITEMS)
    assert fields["filename"]["mean"] is None


def test_untyped_records_are_fields_by_position(
    items_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(["stats", "--json", str(items_file)], capsys)
    assert status == 0
    fields = json_fields(out)
    assert list(fields) == [f"f{i}" for i in range(8)]
    assert fields["f3"]["max"] == max(i.timestamp_ns for i in ITEMS)


def test_the_table_has_a_row_a_field_aligned_under_its_header(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = run(["stats", str(EVENTS)], capsys)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "12 records, 17 fields"
    header, rule, *rows = lines[1:]
    assert header.split() == [
        "field",
        "count",
        "missing",
        "nulls",
        "types",
        "min",
        "max",
        "mean",
        "distinct",
        "top",
        "values",
    ]
    assert set(rule.replace("  ", "")) == {"-"}
    assert len(rows) == 17
    by_field = {row.split()[0]: row for row in rows}
    note = by_field["note"]
    assert note.split()[1:7] == ["12", "0", "5", "str", "7,", "nil"]
    retries = by_field["attrs.retries"].split()
    assert retries[1:4] == ["4", "8", "0"]
    assert by_field["tags"].split()[5:9] == ["[len", "0]", "[len", "3]"]
    # Every cell starts where its header does.
    start = header.index("distinct") + len("distinct")
    assert by_field["id"][:start].endswith("12")


def test_long_cells_are_cut_with_an_ellipsis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "long.msgpack"
    path.write_bytes(msgpack.packb({"k" * 40: "v" * 100}))
    status, out, _ = run(["stats", str(path)], capsys)
    assert status == 0
    row = out.splitlines()[3]
    assert row.startswith("k" * 31 + "…")
    assert '"' + "v" * 18 + "…" in row
    assert "v" * 50 not in row


def test_approximate_values_are_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "many.msgpack"
    path.write_bytes(b"".join(msgpack.packb({"v": i % 2000, "w": i % 3}) for i in range(6000)))
    status, out, _ = run(["stats", str(path)], capsys)
    assert status == 0
    rows = {row.split()[0]: row.split() for row in out.splitlines()[3:]}
    assert rows["v"][8].startswith("~")  # distinct: estimated
    assert rows["w"][8] == "3"
    status, out, _ = run(["stats", "--json", str(path)], capsys)
    v = json_fields(out)["v"]
    assert (v["distinct_exact"], v["top_exact"], v["top"]) == (False, False, [])
    assert abs(v["distinct"] - 2000) < 250


def test_estimated_top_values_are_marked_in_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "skewed.msgpack"
    rows = [{"v": 0}] * 3000 + [{"v": i} for i in range(1, 3000)]
    path.write_bytes(b"".join(map(msgpack.packb, rows)))
    status, out, _ = run(["stats", str(path)], capsys)
    assert status == 0
    match = re.search(r"  ~ 0 \((\d+)\)$", out.splitlines()[3])
    assert match is not None, out
    status, out, _ = run(["stats", "--json", str(path)], capsys)
    (v,) = json_fields(out).values()
    assert v["top"] == [{"value": 0, "count": int(match.group(1))}]
    assert 3000 - v["top_error"] <= int(match.group(1)) <= 3000


def test_top_zero_leaves_the_column_out_and_top_k_shows_k(
    items_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(["stats", "--top", "0", str(EVENTS)], capsys)
    assert status == 0
    assert "top values" not in out
    status, out, _ = run(["stats", "--top", "2", "--json", str(EVENTS)], capsys)
    assert status == 0
    assert json_fields(out)["inner.level"]["top"] == [
        {"value": -2, "count": 3},
        {"value": -1, "count": 3},
    ]


def test_limit_counts_records_of_every_source_together(
    items_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["stats", "--json", "--limit", "350", *ITEM, str(items_file), str(items_file)]
    status, out, _ = run(argv, capsys)
    assert status == 0
    ids = json_fields(out)["id"]
    assert (ids["count"], ids["max"], ids["distinct"]) == (350, 299, 300)
    argv = ["stats", "--json", "--limit", "300", str(items_file), "no such file"]
    status, out, _ = run(argv, capsys)  # the second source is never opened
    assert (status, json_fields(out)["f0"]["count"]) == (0, 300)


def test_stdin(items_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    fake_stdin(monkeypatch, io.BytesIO(items_file.read_bytes()))
    status, out, _ = run(["stats", "--json", "-"], capsys)
    assert (status, json_fields(out)["f0"]["count"]) == (0, 300)


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda data: data[:-3], "record 299 at byte"),
        (lambda data: data[:FIRST] + b"\xc1" + data[FIRST + 1 :], "not valid MessagePack"),
    ],
)
def test_bad_data_is_one_error_line_and_no_statistics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, says: str
) -> None:
    path = tmp_path / "broken.msgpack"
    path.write_bytes(damage(pack_items(ITEMS)))
    for argv in (["stats", str(path)], ["stats", "--json", *ITEM, str(path)]):
        status, out, err = run(argv, capsys)
        assert (status, out) == (EXIT_DATA_ERROR, "")
        line = error_line(err)
        assert line.startswith(f"error: {path}: ")
        assert says in line


def test_records_that_are_not_of_the_type_fail_or_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mixed.msgpack"
    bad = msgpack.packb(item_values(line="not a number"))
    path.write_bytes(pack_items(ITEMS[:5]) + bad + pack_items(ITEMS[5:10]))
    status, out, err = run(["stats", *ITEM, str(path)], capsys)
    assert (status, out) == (EXIT_DATA_ERROR, "")
    assert "record 5" in error_line(err)
    status, out, err = run(["stats", "--json", "--skip-invalid", *ITEM, str(path)], capsys)
    assert status == 0
    assert json_fields(out)["id"]["count"] == 10
    assert "skipped 1 invalid record" in err


def test_an_empty_stream_has_no_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.msgpack"
    path.write_bytes(b"")
    assert run(["stats", str(path)], capsys) == (0, "0 records, 0 fields\n", "")
    assert run(["stats", "--json", str(path)], capsys) == (0, "", "")


def test_one_record_of_scalars(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "one.msgpack"
    path.write_bytes(msgpack.packb(7))
    status, out, _ = run(["stats", str(path)], capsys)
    assert status == 0
    assert out.splitlines()[0] == "1 record, 1 field"
    assert out.splitlines()[3].split()[:2] == [".", "1"]


def test_fields_past_the_limit_are_noted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "wide.msgpack"
    path.write_bytes(msgpack.packb({f"k{i}": i for i in range(1005)}))
    status, out, err = run(["stats", "--json", str(path)], capsys)
    assert status == 0
    assert len(out.splitlines()) == 1000
    assert err == (
        "note: more fields than the 1000 summarised: 5 values of further fields not looked at\n"
    )


def test_a_bad_type_is_a_usage_error(items_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(["stats", "--type", "nosuchmodule:Nothing", str(items_file)], capsys)
    assert (status, out) == (EXIT_USAGE, "")
    assert error_line(err).startswith("error: --type nosuchmodule:Nothing")


def test_help_lists_the_options_their_defaults_and_the_exit_statuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["stats", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--limit", "--top", "--json", "--type", "--skip-invalid", "--force"):
        assert option in text
    assert "exit status:" in text
    assert "no\nstatistics" in text or "no statistics" in " ".join(text.split())
    (commands,) = build_parser()._subparsers._group_actions  # type: ignore[union-attr]
    assert isinstance(commands.choices, dict)
    for action in commands.choices["stats"]._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        assert action.help, action.dest
        assert "(default: " in action.help, action.dest
        if action.default not in (None, False):
            assert "%(default)s" in action.help, action.dest
