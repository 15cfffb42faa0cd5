"""doc/DESIGN.md stays true: its module table lists every module of the package, and every
``module.name`` it cites exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "msgpack_reader_py"
DESIGN = (ROOT / "doc" / "DESIGN.md").read_text(encoding="utf-8")
TABLE_ROW = re.compile(r"^\| `([\w/]+\.py)` \|", re.MULTILINE)
# `sources.Chunks`, `errors.ReaderError.in_source`: a module of the package, then a name in it.
CITED = re.compile(r"`(_?[a-z_]+)\.([A-Za-z_][\w.]*)`")


def package_modules() -> set[str]:
    return {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")}


def test_the_module_table_lists_every_module_once() -> None:
    listed = TABLE_ROW.findall(DESIGN)
    assert len(listed) == len(set(listed))
    assert set(listed) == package_modules()


def cited_names() -> list[tuple[str, str]]:
    modules = {name.removesuffix(".py") for name in package_modules() if "/" not in name}
    return sorted({(m, name) for m, name in CITED.findall(DESIGN) if m in modules and name != "py"})


def test_names_are_cited() -> None:
    # The check below would pass on a document that cited nothing.
    assert len(cited_names()) > 20


@pytest.mark.parametrize(("module", "name"), cited_names())
def test_every_cited_name_exists(module: str, name: str) -> None:
    target: object = importlib.import_module(f"msgpack_reader_py.{module}")
    for part in name.split("."):
        target = getattr(target, part)
