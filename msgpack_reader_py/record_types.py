"""Record types named by text, as the command line's ``--type`` names them."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from .engine import record_kind
from .model import Item

__all__ = ["TypeNotFound", "record_type_named"]


class TypeNotFound(ValueError):
    """A name that names no record type; the message says what was wrong."""


def record_type_named(name: str) -> type[Any] | None:
    """The record type ``name`` names: ``item`` (:class:`~msgpack_reader_py.Item`), ``any``
    (``None``: no record type), or ``MODULE:CLASS``, where MODULE is an importable dotted
    name (the current directory comes first) or the path of a ``.py`` file, and CLASS a
    dataclass, ``typing.NamedTuple`` or ``msgspec.Struct`` in it (``Outer.Inner`` for a nested
    class). Raises :class:`TypeNotFound`."""
    if name == "item":
        return Item
    if name == "any":
        return None
    module_name, colon, class_name = name.rpartition(":")
    if not colon or not module_name or not class_name:
        raise TypeNotFound("expected item, any or MODULE:CLASS (e.g. records.py:Record)")
    module = _module(module_name)
    found: Any = module
    for part in class_name.split("."):
        found = getattr(found, part, None)
        if found is None:
            defined = sorted(n for n, v in vars(module).items() if record_kind(v) is not None)
            offer = f"; it defines {', '.join(defined)}" if defined else ""
            raise TypeNotFound(f"{module_name} has no {class_name}{offer}")
    if record_kind(found) is None:
        raise TypeNotFound(
            f"{class_name} is not a record type (a dataclass, NamedTuple, msgspec.Struct or "
            f"tuple[...] type), it is {found!r}"
        )
    record_type: type[Any] = found
    return record_type


def _module(name: str) -> Any:
    """The module ``name`` names: a ``.py`` file's path, or an importable dotted name."""
    if name.endswith(".py") or os.sep in name or "/" in name:
        path = Path(name)
        if not path.is_file():
            raise TypeNotFound(f"no such file: {name}")
        # A module of its own under a name no import uses, registered while it runs so that
        # dataclasses and postponed annotations can find it.
        unique = f"msgpack_reader_py._loaded_{abs(hash(str(path.resolve())))}"
        spec = importlib.util.spec_from_file_location(unique, path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[unique] = module
        loader = spec.loader
        _run(lambda: loader.exec_module(module), name)
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return _run(lambda: importlib.import_module(name), name)


def _run(load: Any, name: str) -> Any:
    try:
        return load()
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            raise TypeNotFound(f"no module named {exc.name!r}") from None
        raise TypeNotFound(f"importing {name} failed: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - whatever the user's module raises, said in one line
        raise TypeNotFound(f"importing {name} failed: {type(exc).__name__}: {exc}") from None
