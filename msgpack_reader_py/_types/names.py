"""Record types named by text, as the command line's ``--type`` names them."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any

from .._reference.model import Item
from .record_type import record_kind, type_label, union_members

__all__ = ["TypeNotFound", "record_type_named"]


class TypeNotFound(ValueError):
    """A name that names no record type; the message says what was wrong."""


def record_type_named(name: str) -> Any:
    """The record type ``name`` names: ``item`` (:class:`~msgpack_reader_py.Item`), ``any``
    (``None``: no record type), or ``MODULE:NAME``, where MODULE is an importable dotted name
    (the current directory comes first) or the path of a ``.py`` file, and NAME a dataclass,
    attrs class, ``typing.NamedTuple``, ``TypedDict`` or ``msgspec.Struct`` in it
    (``Outer.Inner`` for a nested class), or a module-level union of them (``Event = Click |
    Key``). Raises :class:`TypeNotFound`."""
    if name == "item":
        return Item
    if name == "any":
        return None
    module_name, colon, class_name = name.rpartition(":")
    if not colon or not module_name or not class_name:
        raise TypeNotFound("expected item, any or MODULE:NAME (e.g. records.py:Record)")
    module = _module(module_name)
    found: Any = module
    for part in class_name.split("."):
        found = getattr(found, part, None)
        if found is None:
            defined = sorted(n for n, v in vars(module).items() if _is_record_type(v))
            offer = f"; it defines {', '.join(defined)}" if defined else ""
            raise TypeNotFound(f"{module_name} has no {class_name}{offer}")
    if not _is_record_type(found):
        what = type_label(found) if isinstance(found, type) or union_members(found) else repr(found)
        raise TypeNotFound(
            f"{class_name} is not a record type (a dataclass, attrs class, NamedTuple, "
            f"TypedDict, msgspec.Struct, tuple[...] type or a union of them), it is {what}"
        )
    return found


def _is_record_type(value: Any) -> bool:
    members = union_members(value)
    if members is not None:
        return all(record_kind(m) not in (None, "tuple") for m in members)
    return record_kind(value) is not None


def _module(name: str) -> Any:
    """The module ``name`` names: a ``.py`` file's path, or an importable dotted name."""
    if name.endswith(".py") or os.sep in name or "/" in name:
        # os.path, not pathlib: pathlib is 6 ms of every command's start.
        if not os.path.isfile(name):
            raise TypeNotFound(f"no such file: {name}")
        # A module of its own under a name no import uses, registered while it runs so that
        # dataclasses and postponed annotations can find it.
        unique = f"msgpack_reader_py._loaded_{abs(hash(os.path.realpath(name)))}"
        spec = importlib.util.spec_from_file_location(unique, name)
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
