"""--format table: aligned columns for a person to read, and the default on a terminal
(msgpack_reader_py._output.text.TableRows)."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest

from msgpack_reader_py import Item, get_iter, pack_items
from msgpack_reader_py._output.text import TableRows
from msgpack_reader_py.cli import main

from .helpers import ITEM

ITEMS = list(get_iter(50))
GAP = re.compile(r"  +")


def table(rows: list[Any], batches: int = 1, **keywords: Any) -> list[str]:
    out = io.StringIO()
    writer = TableRows(out, **keywords)
    size = -(-len(rows) // batches)
    for start in range(0, len(rows), size):
        writer.write(rows[start : start + size])
    return out.getvalue().splitlines()


def test_typed_records_line_up_under_their_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "items.msgpack"
    path.write_bytes(pack_items(ITEMS))
    assert main(["dump", *ITEM, str(path), "--format", "table"]) == 0
    header, rule, *lines = capsys.readouterr().out.splitlines()
    assert GAP.split(header) == [f.name for f in dataclasses.fields(Item)]
    assert [GAP.split(line.strip()) for line in lines] == [
        [repr(v) if not isinstance(v, str) else v for v in dataclasses.astuple(item)]
        for item in ITEMS
    ]
    ends = {m.end() for m in re.finditer(r"\S+", rule)}
    for line in lines:  # numbers aligned right: each ends where its rule ends
        assert {m.end() for m in re.finditer(r"\S+", line)} <= ends


def test_records_of_several_kinds_share_columns() -> None:
    rows = [{"type": "click", "x": 1}, {"type": "key", "code": "KeyA"}, {"type": "click", "x": 22}]
    assert table(rows) == [
        "type   x   code",
        "-----  --  ----",
        "click   1",
        "key        KeyA",
        "click  22",
    ]


def test_a_new_field_or_a_wider_cell_brings_a_header() -> None:
    rows = [{"a": 1}, {"a": 2}, {"a": 3, "b": True}, {"a": 4000, "b": None}]
    assert table(rows, batches=4) == [
        "a", "-", "1", "2",
        "a  b", "-  ----", "3  true",
        "a     b", "----  ----", "4000",
    ]  # fmt: skip


def test_untyped_values() -> None:
    assert table([[1, "x"], {1: [2]}, "text", None]) == [
        "f0  f1  1    value",
        "--  --  ---  -----",
        " 1  x",
        "        [2]",  # a map keyed 1: the column "1"
        "             text",
        "",
    ]


def test_long_wide_and_broken_cells() -> None:
    long = "x" * 100
    wide = "日本語" * 20
    lines = table([{"s": long}, {"s": wide}, {"s": "a\nb\tc"}])
    assert lines[2] == "x" * 39 + "…"
    assert lines[3] == "日本語" * 6 + "日…"  # two columns a character: 39, then the mark
    assert lines[4] == "a\\nb\\tc"


def test_the_default_is_a_table_on_a_terminal_and_json_lines_when_piped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "events.msgpack"
    path.write_bytes(b"".join(msgpack.packb({"id": i, "name": f"n{i}"}) for i in range(3)))
    assert main(["head", "-n", "2", str(path)]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [
        {"id": 0, "name": "n0"},
        {"id": 1, "name": "n1"},
    ]
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["head", "-n", "2", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == ["id  name", "--  ----", " 0  n0", " 1  n1"]
