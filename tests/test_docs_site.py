"""The documentation site stays whole: every command in the command-line reference (made from
the parser when the site is built), every public name in the API reference, every page in the
navigation, the README short with its Quick start first, and the blocks the benchmark report
fills on the performance page. Building the site itself (``mkdocs build --strict``) is a step
of CI; the examples on the pages run in ``integration/test_docs.py``."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from msgpack_reader_py.cli import build_parser
from tests.helpers import faces_here

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FACES = ["msgpack_reader_py", "msgpack_reader_py.cli"] + [
    f"msgpack_reader_py.{engine}" for engine in ("dask", "polars", "duckdb", "ray", "spark")
]


def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def subcommands() -> list[str]:
    (commands,) = [
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    return sorted(commands.choices)


@pytest.mark.parametrize("command", subcommands())
def test_every_command_is_in_the_reference(command: str) -> None:
    reference = hooks().cli_reference()
    assert f"\n## {command}\n" in reference
    assert f"usage: msgpack-reader {command} " in reference


def test_the_reference_is_each_commands_help() -> None:
    reference = hooks().cli_reference()
    assert reference.count("usage: msgpack-reader") == len(subcommands()) + 1
    assert "exit status:" in reference


def api_reference() -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in (DOCS / "api").glob("*.md"))


def public_names() -> list[str]:
    return [f"{module.__name__}.{name}" for module in faces_here(FACES) for name in module.__all__]


@pytest.mark.parametrize("name", public_names())
def test_every_public_name_is_in_the_api_reference(name: str) -> None:
    assert re.search(rf"^::: {re.escape(name)}$", api_reference(), re.MULTILINE), (
        f"{name} is public: add '::: {name}' to a page under docs/api/"
    )


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r"^ +- (?:[^:\n]+: )?([\w/.-]+\.md)$", config, re.MULTILINE))
    made = {"cli/reference.md", *hooks().INCLUDED}
    pages = {page.relative_to(DOCS).as_posix() for page in DOCS.rglob("*.md")}
    assert listed == pages | made
    assert not pages & made


def test_the_readme_is_short_and_begins_with_the_quick_start() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    sections = re.findall(r"^## (.+)$", readme, re.MULTILINE)
    assert sections[0] == "Quick start"
    quick_start = readme.split("## Quick start\n", 1)[1]
    assert quick_start.split("```sh\n", 1)[1].startswith("./scripts/setup")
    assert "./scripts/docs" in readme


def test_the_performance_page_holds_the_blocks_the_report_fills() -> None:
    from benchmarks import report

    page = report.README.read_text(encoding="utf-8")
    assert report.README == DOCS / "performance.md"
    for start, end in [
        (report.README_START, report.README_END),
        (report.SCALE_START, report.SCALE_END),
        (report.RUST_START, report.RUST_END),
        (report.COST_START, report.COST_END),
        (report.SPARK_START, report.SPARK_END),
    ]:
        assert page.index(start) < page.index(end)
