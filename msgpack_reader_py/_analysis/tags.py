"""The tag that tells records of several kinds apart, found in the records themselves: a key
(or, of arrays, the first position) whose few values split them into groups that are tidier
than all of them together (:func:`tag_key`), and the class name each kind gets."""

from __future__ import annotations

from typing import Any

from .._types.record_type import matchable
from .names import pascal, word_characters
from .seen import SCALARS

__all__ = ["MAX_KINDS", "kind_name", "tag_key", "value_kind"]

MAX_KINDS = 32
"""A tag has at most this many values (kinds)."""

_TAG_NAMES = ("type", "kind", "event", "event_type", "eventType", "msg_type", "@type", "_type")


def tag_key(records: list[dict[str, Any]], only: str | None = None) -> str | None:
    """The key that tells the records' kinds apart, if one does (``only``: that key or none,
    the first position of arrays, whose tags may be ints as well as strs): present in every
    record with a str value (or, ``only``, every one an int), a few values (at least 2, at most
    :data:`MAX_KINDS`, fewer than the records), whose groups of records differ in their keys or
    in the kinds of their values, and are tidier than all the records together (fewer keys
    missing now and then, or holding values of kinds that do not mix). A key of a well-known
    name (``type``, ``kind``, ``event``...) comes first; any other must split the records into
    groups of two or more with keys of their own. Then the key that leaves the groups
    tidiest."""
    tags = (str,) if only is None else (str, int)
    common = [
        k for k, v in records[0].items() if type(v) in tags and only in (None, k) and matchable(k)
    ]
    for record in records[1:]:
        common = [k for k in common if type(record.get(k)) is type(records[0][k])]
    flat = _untidy(records)
    best: tuple[Any, ...] | None = None
    found = None
    for key in common:
        groups: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            groups.setdefault(record[key], []).append(record)
        if not 2 <= len(groups) <= MAX_KINDS or len(groups) == len(records):
            continue
        known = key in _TAG_NAMES or key == only
        # Another key must show more: groups of two or more, with keys of their own.
        shapes: set[frozenset[Any]]
        if known:
            shapes = {frozenset(_shape(g[0], key)) for g in groups.values()}
        else:
            shapes = {frozenset(k for r in g for k in r) for g in groups.values()}
        untidy = sum(_untidy(group) for group in groups.values())
        if len(shapes) < 2 or untidy >= flat or (not known and min(map(len, groups.values())) < 2):
            continue
        rank = (not known, untidy, len(groups))
        if best is None or rank < best:
            best, found = rank, key
    return found


def _shape(record: dict[str, Any], tag: str) -> set[tuple[str, str | None]]:
    """A record's keys, each with the kind of its value (``None`` for ``None``)."""
    return {(k, value_kind(v)) for k, v in record.items() if k != tag}


def value_kind(value: Any) -> str | None:
    if value is None:
        return None
    kind = SCALARS.get(type(value))
    if kind in ("int", "float"):
        return "number"  # they mix, as int | float
    if kind is not None:
        return kind
    return (
        "array"
        if isinstance(value, (list, tuple))
        else "map"
        if isinstance(value, dict)
        else "other"
    )


def _untidy(records: list[dict[str, Any]]) -> int:
    """How many keys some of ``records`` lack, or hold values of kinds that do not mix."""
    present: dict[str, int] = {}
    kinds: dict[str, set[str]] = {}
    for record in records:
        for key, value in record.items():
            present[key] = present.get(key, 0) + 1
            kind = value_kind(value)
            if kind is not None:
                kinds.setdefault(key, set()).add(kind)
    return sum(
        count < len(records) or len(kinds.get(key, ())) > 1 for key, count in present.items()
    )


def kind_name(tag: str | int) -> str:
    """A class name for the kind whose tag is ``tag``: ``page_view`` -> ``PageView``, ``2`` ->
    ``Kind2``, ``-1`` -> ``KindMinus1``."""
    if isinstance(tag, int):
        return f"Kind{tag}" if tag >= 0 else f"KindMinus{-tag}"
    name = pascal(word_characters(tag)) or "Kind"
    return f"Kind{name}" if not name.isidentifier() else name
