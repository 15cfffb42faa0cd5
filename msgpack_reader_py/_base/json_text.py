"""Values as JSON text, as every text output writes them (JSON Lines, CSV cells, a table's
cells) and as a column of values of no one type holds them.

- maps are objects; a key that is not a string becomes its JSON text (``1`` -> ``"1"``,
  ``true`` -> ``"true"``, ``[1, 2]`` -> ``"[1,2]"``), a bin or timestamp key the string it
  renders as;
- arrays are arrays; ``bin`` is base64 text;
- the timestamp extension is RFC 3339 text in UTC with nine fractional digits
  (``"2024-10-31T11:36:26.108998696Z"``), or, outside the years 1 to 9999, an extension
  object like any other;
- any other extension is ``{"ext": CODE, "base64": "..."}``;
- NaN and the infinities are ``null`` (strict JSON, as RFC 8259 wants), or, with
  ``allow_nan``, ``NaN``, ``Infinity`` and ``-Infinity`` as Python's ``json`` writes them.

Typed records render the same way: a record is an object keyed by its fields' names, a
``datetime`` RFC 3339 text (to the microsecond), an ``Enum`` its value.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from typing import Any

import msgpack
import msgspec
from msgspec.msgpack import Ext

from .ext import TIMESTAMP_CODE, rfc3339

__all__ = ["json_key", "json_lines", "json_text", "json_text_kept"]


def _ext(code: int, data: bytes) -> dict[str, Any]:
    return {"ext": code, "base64": base64.b64encode(data).decode("ascii")}


def _encode_hook(value: Any) -> Any:
    """What msgspec's JSON encoder cannot write itself."""
    if isinstance(value, msgpack.Timestamp):
        text = rfc3339(value)
        return _ext(TIMESTAMP_CODE, value.to_bytes()) if text is None else text
    if isinstance(value, Ext):
        return _ext(value.code, bytes(value.data))
    raise NotImplementedError(f"no JSON for {type(value).__name__}")


_encoder = msgspec.json.Encoder(enc_hook=_encode_hook)
_UNWRITABLE = (TypeError, NotImplementedError)  # what msgspec raises for such a key


def _jsonable(value: Any) -> Any:
    """``value`` made of what Python's ``json`` writes (floats left as they are): the slow
    path, for keys msgspec does not take and for ``allow_nan``."""
    if isinstance(value, dict):
        return {json_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    converted = msgspec.to_builtins(value, enc_hook=_encode_hook, builtin_types=(float,))
    if converted is value or isinstance(converted, str):
        return converted
    return _jsonable(converted)


def json_key(key: Any) -> str:
    """A map key as a JSON object's key: a str as it is, anything else its JSON text."""
    if isinstance(key, str):
        return key
    plain = _jsonable(key)
    if isinstance(plain, str):
        return plain
    return _dumps(plain)


def json_text(value: Any, *, allow_nan: bool = False) -> str:
    """``value`` (untyped, or a typed record or field value) as one line of JSON."""
    if allow_nan:
        return _dumps(_jsonable(value))
    try:
        return _encoder.encode(value).decode("utf-8")
    except _UNWRITABLE:  # a key msgspec does not write (a bool, None, an array, bytes)
        return _encoder.encode(_jsonable(value)).decode("utf-8")


def json_text_kept(value: Any) -> str:
    """``value`` as :func:`json_text` writes it, but with NaN and the infinities kept (``NaN``,
    ``Infinity``, ``-Infinity``, as with ``allow_nan``): the text of a cell, where a value is
    written in full, not a line of strict JSON.

    Written the slow way (in Python, about 17 times as slow) only where the strict text shows
    a null and the value's MessagePack holds such a float."""
    text = json_text(value)
    if "null" in text and _non_finite(value):
        return json_text(value, allow_nan=True)
    return text


# A float64 (0xcb) whose exponent is all ones: NaN or an infinity (or text that looks so).
_NON_FINITE = re.compile(rb"\xcb[\x7f\xff][\xf0-\xff]")
_packed = msgspec.msgpack.Encoder().encode


def _non_finite(value: Any) -> bool:
    """Whether ``value`` may hold NaN or an infinity (``True`` where it cannot be told)."""
    try:
        return _NON_FINITE.search(_packed(value)) is not None
    except (TypeError, ValueError, OverflowError):
        return True


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)


def json_lines(values: Sequence[Any]) -> bytes | None:
    """``values`` as JSON Lines, each as :func:`json_text` writes it, in one call in C;
    ``None`` where a value holds a map key msgspec does not write (a bool, None, an array,
    bytes): :func:`json_text` writes each then, the slow way."""
    try:
        return _encoder.encode_lines(values)
    except _UNWRITABLE:
        return None
