"""The local files a path, a glob or a list of them name, for the readers of many files
(Polars, Ray, DuckDB's examples); Dask's reader names files through fsspec instead."""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence

__all__ = ["Paths", "is_glob", "local_files"]

Paths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
"""A path, a glob (``*``, ``?``, ``[...]``, ``**`` for any depth), or a list of them."""

_GLOB = frozenset("*?[")


def is_glob(path: str) -> bool:
    """Whether ``path`` is a pattern (``*``, ``?`` or ``[...]`` in it), not a name."""
    return not _GLOB.isdisjoint(path)


def local_files(paths: Paths) -> list[str]:
    """The files ``paths`` names, in order: a glob gives its matching files (not directories),
    sorted. Raises ``FileNotFoundError`` when a glob matches nothing (a mistyped pattern must
    not quietly leave its files out) and ``ValueError`` for an empty list; a plain path is
    not checked here: a missing file fails when it is read, naming it."""
    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not given:
        raise ValueError("no paths given")
    files: list[str] = []
    for path in given:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"a path is a str or os.PathLike, got {type(path).__name__}")
        name = os.fsdecode(path)
        if not is_glob(name):
            files.append(name)
            continue
        found = sorted(f for f in glob.glob(name, recursive=True) if not os.path.isdir(f))
        if not found:
            raise FileNotFoundError(f"no files match {name!r}")
        files.extend(found)
    return files
