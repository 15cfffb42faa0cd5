"""MkDocs hooks (``mkdocs.yml`` names this file): pages made at build time from what they
describe, so that none can drift from it.

- ``cli/reference.md``: every command's ``--help``, from the command line's own parser;
- ``design.md`` and ``results.md``: ``doc/DESIGN.md`` and ``doc/RESULTS.md`` as they are, their
  links to each other made links between pages, with the figures beside them (``doc/*.png``);
- the docstrings' reST roles (``:func:`convert```) shown as the code they name, as Sphinx
  would, since mkdocstrings renders docstrings as Markdown.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

ROOT = Path(__file__).resolve().parent.parent
INCLUDED = {"design.md": "doc/DESIGN.md", "results.md": "doc/RESULTS.md"}
"""Pages of the site (by their path in it) that are files of the repository outside docs/."""
LINKS = {"](RESULTS.md)": "](results.md)", "](DESIGN.md)": "](design.md)"}
CLI_REFERENCE = "cli/reference.md"
HELP_WIDTH = 100
ROLE = re.compile(
    r":(?:func|class|mod|meth|attr|exc|data|obj|ref):<code>~?(?:[\w.]*\.)?([^<]+)</code>"
)


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command of ``msgpack-reader`` by its name, in the order its help lists them."""
    from msgpack_reader_py.cli import build_parser

    found: dict[str, argparse.ArgumentParser] = {}
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, parser in action.choices.items():
                if parser not in found.values():  # an alias names a parser already listed
                    found[name] = parser
    return found


def help_text(parser: argparse.ArgumentParser) -> str:
    """``parser``'s ``--help``, wrapped as on a terminal ``HELP_WIDTH`` columns wide."""
    # argparse wraps to the terminal's width, which it reads from COLUMNS first.
    with mock.patch.dict(os.environ, {"COLUMNS": str(HELP_WIDTH)}):
        return parser.format_help()


def cli_reference() -> str:
    """The command-line reference page: the top-level help, then each command's."""
    from msgpack_reader_py.cli import build_parser

    parts = [
        "# Command-line reference\n",
        "Every command's `--help`, made from the command line's own parser each time the site "
        "is built. The [guide](index.md) shows the commands at work.\n",
        "## msgpack-reader\n",
        f"```text\n{help_text(build_parser())}```\n",
    ]
    for name, parser in commands().items():
        parts += [f"## {name}\n", f"```text\n{help_text(parser)}```\n"]
    return "\n".join(parts)


def included(relative: str) -> str:
    text = (ROOT / relative).read_text(encoding="utf-8")
    for old, new in LINKS.items():
        text = text.replace(old, new)
    return text


def on_files(files: Files, config: MkDocsConfig) -> Files:
    from mkdocs.structure.files import File

    files.append(File.generated(config, CLI_REFERENCE, content=cli_reference()))
    for page, source in INCLUDED.items():
        files.append(File.generated(config, page, content=included(source)))
    for figure in sorted((ROOT / "doc").glob("*.png")):
        files.append(File.generated(config, figure.name, abs_src_path=str(figure)))
    return files


def on_page_content(html: str, **kwargs: Any) -> str:
    return ROLE.sub(r"<code>\1</code>", html)
