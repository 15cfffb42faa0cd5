"""doc/DESIGN.md stays true, and so does the layout it draws: its module table lists every
module of the package and every ``module.name`` it cites exists; no import runs up the
layers; the package's folder holds at most 12 modules, none over 700 lines; every module
behind the public faces is marked internal; the faces export at most 80 names, each
documented."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import types
from pathlib import Path

import pytest

from tests.helpers import faces_here

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "msgpack_reader_py"
DESIGN = (ROOT / "doc" / "DESIGN.md").read_text(encoding="utf-8")
TABLE_ROW = re.compile(r"^\| `([\w/]+\.py)` \|", re.MULTILINE)
# `sources.Chunks`, `errors.ReaderError.in_source`: a module of the package (by its file's
# name, where that names one module), then a name in it.
CITED = re.compile(r"`(_?[a-z_]+)\.([A-Za-z_][\w.]*)`")

# The floors, bottom up: a module may import its own floor and those below, never above.
LAYERS = [
    "_base",
    "_reference",
    "_types",
    "_stream",
    "_split",
    "_readers",
    "_arrow",
    "_analysis",
    "_output",
    "engines",
    "cli",
    "faces",
]
ENGINES = {"dask", "polars", "duckdb", "ray", "spark"}
FACES = {"__init__", "__main__", "streaming_reader_bench"}
# The public faces: the modules a user imports names from.
PUBLIC = ["msgpack_reader_py", *(f"msgpack_reader_py.{e}" for e in sorted(ENGINES))]


def package_modules() -> set[str]:
    return {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")}


def dotted(relative: str) -> str:
    name = "msgpack_reader_py." + relative.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def layer(module: str) -> str:
    """The floor of a module of the package (``msgpack_reader_py._stream.sources``)."""
    parts = module.split(".")[1:]
    if parts and parts[0] in ENGINES:
        return "engines"
    if parts and parts[0] in LAYERS:
        return parts[0]
    return "faces"  # the package itself, its __main__, the harness, a name of the package


def imported(path: Path) -> list[tuple[int, str]]:
    """Every module of the package that ``path`` imports (top-level or inside a function), as
    its dotted name, with the line."""
    module = dotted(path.relative_to(PACKAGE).as_posix())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names] if not node.module else [target]
            found.extend((node.lineno, n) for n in names if n.startswith("msgpack_reader_py"))
        elif isinstance(node, ast.Import):
            found.extend(
                (node.lineno, a.name) for a in node.names if a.name.startswith("msgpack_reader_py")
            )
    return found


def test_the_module_table_lists_every_module_once() -> None:
    listed = TABLE_ROW.findall(DESIGN)
    assert len(listed) == len(set(listed))
    assert set(listed) == package_modules()


def cited_names() -> list[tuple[str, str]]:
    stems: dict[str, list[str]] = {}
    for relative in package_modules():
        stems.setdefault(Path(relative).stem, []).append(dotted(relative))
    return sorted(
        {
            (stems[m][0], name)
            for m, name in CITED.findall(DESIGN)
            if len(stems.get(m, [])) == 1 and name != "py"
        }
    )


def test_names_are_cited() -> None:
    # The check below would pass on a document that cited nothing.
    assert len(cited_names()) > 20


@pytest.mark.parametrize(("module", "name"), cited_names())
def test_every_cited_name_exists(module: str, name: str) -> None:
    target: object = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)


def test_the_layers_are_those_the_design_draws() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(LAYERS) - {"engines", "faces"}
    for floor in folders:
        assert f"\n               {floor}" in DESIGN or floor == "cli", floor


def test_no_import_runs_up_the_layers() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = dotted(path.relative_to(PACKAGE).as_posix())
        mine = LAYERS.index(layer(module))
        for line, target in imported(path):
            theirs = LAYERS.index(layer(target))
            if theirs > mine or (
                layer(target) == "engines" and target != module and mine == theirs
            ):
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert upward == []


def test_the_package_folder_holds_at_most_twelve_modules() -> None:
    assert len(list(PACKAGE.glob("*.py"))) <= 12


def test_no_module_is_over_700_lines() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): count
        for path in PACKAGE.rglob("*.py")
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > 700
    }
    assert long == {}


def test_every_module_behind_the_faces_is_marked_internal() -> None:
    public = {f"{name}.py" for name in ENGINES | FACES} | {"cli/__init__.py"}
    unmarked = [
        relative
        for relative in package_modules()
        if relative not in public and not any(part.startswith("_") for part in relative.split("/"))
    ]
    assert unmarked == []


def public_names() -> list[tuple[str, str]]:
    return [
        (module.__name__, name)
        for module in faces_here([*PUBLIC, "msgpack_reader_py.cli"])
        for name in module.__all__
    ]


def test_the_faces_export_at_most_80_names() -> None:
    assert 30 < len(public_names()) <= 80


@pytest.mark.parametrize(("face", "name"), public_names())
def test_every_public_name_is_documented(face: str, name: str) -> None:
    value = getattr(importlib.import_module(face), name)
    # Python 3.10 counts a generic alias (``Callable[...]``) as a class; it is a constant.
    is_alias = isinstance(value, types.GenericAlias)
    if (inspect.isclass(value) and not is_alias) or inspect.isroutine(value):
        assert (inspect.getdoc(value) or "").strip(), f"{face}.{name} has no docstring"
        return
    # A constant: documented by the string after its assignment in the module that makes it.
    source = next(
        path
        for path in PACKAGE.rglob("*.py")
        if re.search(rf"^{re.escape(name)}(: [^=]+)? = ", path.read_text(), re.MULTILINE)
    )
    tree = ast.parse(source.read_text(encoding="utf-8"))
    documented = False
    for before, after in zip(tree.body, tree.body[1:], strict=False):
        targets = getattr(before, "targets", None) or [getattr(before, "target", None)]
        if any(getattr(t, "id", None) == name for t in targets):
            documented = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
    assert documented, f"{face}.{name} has no docstring after it in {source}"
