"""Names of what inference writes: Python identifiers made of map keys (field names) and of
tags (class names), in the form Python reads them, each unique where it is used."""

from __future__ import annotations

import keyword
import unicodedata

__all__ = ["identifier", "pascal", "unique", "word_characters"]

# Names the generated classes' annotations and defaults use: a field of that name with a
# default would hide them from the fields after it.
_RESERVED = frozenset(
    {"Any", "None", "bool", "bytes", "dataclass", "datetime", "dict", "field", "float", "int"}
    | {"list", "msgspec", "str"}
)


def word_characters(text: str) -> str:
    """``text`` with every character that cannot be in a Python identifier made ``_``, in the
    form Python reads an identifier in (NFKC): two keys that Python would read as one name
    (``ﬁ`` and ``fi``) are one name here too, and made unique as such."""
    normal = unicodedata.normalize("NFKC", text)
    made = "".join(c if ("a" + c).isidentifier() else "_" for c in normal)
    if unicodedata.normalize("NFKC", made) != made:  # pragma: no cover - NFKC is stable
        made = "".join(c if c.isascii() else "_" for c in made)
    return made


def identifier(key: str, used: set[str]) -> str:
    """A Python identifier for ``key``, not in ``used`` (and now in it)."""
    # Not starting with "_": a msgspec.Struct refuses such field names.
    name = word_characters(key).lstrip("_") or "field"
    if not name.isidentifier():  # a digit first
        name = "f_" + name
    # Soft keywords (match, case, type) are names like any other, on every Python.
    if keyword.iskeyword(name) or name in _RESERVED:
        name += "_"
    return unique(name, used, "_")


def unique(name: str, used: set[str], joiner: str) -> str:
    """``name``, or ``name`` + joiner + 2, 3, ... if taken; now in ``used``."""
    unique, number = name, 2
    while unique in used:
        unique, number = f"{name}{joiner}{number}", number + 1
    used.add(unique)
    return unique


def pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)
