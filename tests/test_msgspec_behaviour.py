"""What the package relies on msgspec to do and say: the message formats ``messages.py``
parses into the reader's own, and the behaviours the wire forms and the kinds are built on.

An upgrade of msgspec that changes one of these fails here, by name, rather than garbling the
reader's messages or its decoding somewhere else.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, NamedTuple, Union

import msgpack
import msgspec
import pytest

from msgpack_reader_py._types import messages


def failure(tp: Any, value: Any, **options: Any) -> str:
    """msgspec's message for decoding ``value`` (packed by msgpack) as ``tp``."""
    data = value if isinstance(value, bytes) else msgpack.packb(value)
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.msgpack.Decoder(tp, **options).decode(data)
    return str(caught.value)


@dataclasses.dataclass
class Inner:
    level: int


@dataclasses.dataclass
class Outer:
    name: str
    inner: Inner
    tags: list[int]
    attrs: dict[str, int]


class Pair(NamedTuple):
    a: int


class Tagged(msgspec.Struct, tag="a", array_like=True):
    x: int


class Other(msgspec.Struct, tag="b", array_like=True):
    y: str


def test_a_value_of_the_wrong_type_says_expected_got_and_the_path() -> None:
    message = failure(Outer, {"name": "n", "inner": {"level": "x"}, "tags": [], "attrs": {}})
    assert message == "Expected `int`, got `str` - at `$.inner.level`"
    assert messages._GOT.match("Expected `int`, got `str`") is not None
    match = messages.AT_PATH.match(message)
    assert match is not None
    assert (match.group("message"), match.group("path")) == (
        "Expected `int`, got `str`",
        ".inner.level",
    )


def test_paths_index_arrays_and_hide_map_keys() -> None:
    assert failure(
        list[Outer], [{"name": "n", "inner": {"level": 1}, "tags": [1, "x"], "attrs": {}}]
    ) == ("Expected `int`, got `str` - at `$[0].tags[1]`")
    assert failure(dict[str, int], {"a": "x"}) == "Expected `int`, got `str` - at `$[...]`"


def test_a_map_key_of_the_wrong_type_names_the_key() -> None:
    message = failure(dict[str, int], {3: 4})
    assert message == "Expected `str`, got `int` - at `key` in `$`"
    assert messages._KEY_IN.match(message) is not None


def test_missing_and_unknown_keys() -> None:
    assert failure(Inner, {}) == "Object missing required field `level`"
    assert messages._MISSING_KEY.match("Object missing required field `level`") is not None
    forbidding = msgspec.defstruct("Forbidding", [("a", int)], forbid_unknown_fields=True)
    assert failure(forbidding, {"a": 1, "b": 2}) == "Object contains unknown field `b`"
    assert messages._UNKNOWN_KEY.match("Object contains unknown field `b`") is not None


def test_the_shape_of_a_record_is_named_array_object_or_both() -> None:
    assert failure(Inner, 3) == "Expected `object`, got `int`"
    assert failure(Inner | Pair, 3) == "Expected `object | array`, got `int`"
    assert messages.SHAPE.match("Expected `object | array`, got `int`") is not None


def test_optional_values_say_null() -> None:
    message = failure(int | None, "x")
    assert message == "Expected `int | null`, got `str`"
    match = messages._EXPECTED.match(message)
    assert match is not None
    assert set(match.group(1).split(" | ")) <= {"int", *messages._NAMES}


def test_array_lengths_and_tagged_structs() -> None:
    assert failure(Tagged, []) == "Expected `array` of at least length 2, got 0"  # with its tag
    assert failure(Tagged, ["c", 1]) == "Invalid value 'c' - at `$[0]`"
    # An array_like Struct passes over values beyond its fields, unless it forbids them.
    assert msgspec.msgpack.decode(msgpack.packb(["a", 1, 2]), type=Tagged) == Tagged(1)
    strict = msgspec.defstruct(
        "Strict", [("x", int)], array_like=True, tag="a", forbid_unknown_fields=True
    )
    assert failure(strict, ["a", 1, 2]).startswith("Expected `array` of at most length")


def test_a_union_holds_array_like_or_map_like_tagged_structs_not_both() -> None:
    class MapTagged(msgspec.Struct, tag="m"):
        z: int

    with pytest.raises(TypeError, match="array_like=True` and `array_like=False"):
        msgspec.msgpack.Decoder(Union[Tagged, Other, MapTagged])  # noqa: UP007
    both = msgspec.msgpack.Decoder(Tagged | Other)
    assert both.decode(msgpack.packb(["b", "q"])) == Other("q")


def test_an_invalid_timestamp_and_ones_past_datetimes_years() -> None:
    bad = b"\xc7\x05\xff" + b"\xff" * 5  # the timestamp extension, 5 bytes: no such length
    with pytest.raises(msgspec.ValidationError, match=f"^{messages._BAD_TIMESTAMP}"):
        msgspec.msgpack.decode(bad)
    # A valid one past datetime's years: refused untyped, where msgspec looks no further.
    wide = msgpack.packb(msgpack.Timestamp(-(2**62), 0))
    with pytest.raises(msgspec.ValidationError, match=f"^{messages._WIDE_TIMESTAMP}"):
        msgspec.msgpack.decode(wide)
    # Past year 9999 once rounded to the microsecond: a bare ValueError, with no path.
    last = msgpack.packb(msgpack.Timestamp(253402300799, 999999999))
    with pytest.raises(ValueError, match="year 10000 is out of range") as caught:
        msgspec.msgpack.decode(last, type=datetime.datetime)
    assert not isinstance(caught.value, msgspec.ValidationError)


def test_an_ext_hook_is_called_only_where_any_value_is_accepted() -> None:
    called: list[int] = []

    def hook(code: int, data: memoryview) -> Any:
        called.append(code)
        return code

    ext = msgpack.packb([msgpack.ExtType(5, b"x")])
    assert msgspec.msgpack.Decoder(list[Any], ext_hook=hook).decode(ext) == [5]
    decoded = msgspec.msgpack.Decoder(
        list[Union[datetime.datetime, msgspec.msgpack.Ext]],  # noqa: UP007
        ext_hook=hook,
    ).decode(ext)
    assert decoded == [msgspec.msgpack.Ext(5, b"x")]
    assert called == [5]


def test_a_post_init_is_called_as_structs_and_dataclasses_are_decoded() -> None:
    made: list[str] = []
    counted = msgspec.defstruct(
        "Counted", [("a", int)], namespace={"__post_init__": lambda self: made.append("s")}
    )
    msgspec.msgpack.decode(msgpack.packb({"a": 1}), type=counted)
    counting = dataclasses.make_dataclass(
        "Counting", [("a", int)], namespace={"__post_init__": lambda self: made.append("d")}
    )
    msgspec.msgpack.decode(msgpack.packb({"a": 1}), type=counting)
    assert made == ["s", "d"]


def test_raw_keeps_a_values_bytes() -> None:
    class Holder(msgspec.Struct):
        value: msgspec.Raw

    held = msgspec.msgpack.decode(msgpack.packb({"value": [1, "a"]}), type=Holder)
    assert bytes(held.value) == msgpack.packb([1, "a"])
