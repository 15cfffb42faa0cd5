"""A map that names a key twice: read as every decoder reads it (its last value) by default,
refused with ``forbid_repeated_keys``, at any depth, in every reader and on the command line."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Literal

import msgpack
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import StreamingReader
from msgpack_reader_py._arrow.reader import read_table
from msgpack_reader_py._base.errors import RecordError
from msgpack_reader_py._base.options import ReadOptions
from msgpack_reader_py._readers.values import ValueReader
from msgpack_reader_py.cli import main
from tests.helpers import drain, examples

P = msgpack.packb


def wire_map(*pairs: tuple[Any, Any]) -> bytes:
    """A map of ``pairs`` as they are, repeats included (``msgpack.packb`` of a dict cannot
    repeat a key): keys and values are Python values, or bytes already encoded."""
    head = (
        bytes([0x80 | len(pairs)]) if len(pairs) < 16 else b"\xde" + len(pairs).to_bytes(2, "big")
    )
    return head + b"".join(_wire(part) for pair in pairs for part in pair)


def wire_array(*values: Any) -> bytes:
    return bytes([0x90 | len(values)]) + b"".join(map(_wire, values))


def _wire(value: Any) -> bytes:
    return value if isinstance(value, bytes) else P(value)


@dataclasses.dataclass
class Inner:
    x: int


@dataclasses.dataclass
class Record:
    name: str
    inner: list[Inner | None] = dataclasses.field(default_factory=list)
    attrs: dict[str, Any] = dataclasses.field(default_factory=dict)
    pair: tuple[int, dict[str, int]] = (0, {})


class Click(msgspec.Struct, tag="click"):
    at: dict[str, int]


class Press(msgspec.Struct, tag="press"):
    key: str


GOOD = P({"name": "g"})
TWICE = "map has key {!r} twice: one of its values would be lost (forbid_repeated_keys)"

CASES: dict[str, tuple[bytes, str]] = {
    "the record itself": (
        wire_map(("name", "a"), ("name", "b")),
        TWICE.format("name"),
    ),
    "a record in a list": (
        wire_map(("name", "n"), ("inner", wire_array(None, wire_map(("x", 1), ("x", 2))))),
        "field `inner[1]`: " + TWICE.format("x"),
    ),
    "a map of Any, keys equal in Python": (
        wire_map(("name", "n"), ("attrs", wire_map(("k", wire_map((1, "a"), (True, "b")))))),
        "field `attrs.k`: map has keys 1 and True, one key to Python: one of its values "
        "would be lost (forbid_repeated_keys)",
    ),
    "a record read from an array, a key not a name": (
        wire_array("n", [], {}, wire_array(1, wire_map(("a b", 1), ("a b", 1)))),
        "field `pair[1]`: " + TWICE.format("a b"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("typed", [True, False])
def test_a_repeated_key_at_any_depth_fails_its_record_after_the_records_before(
    case: str, typed: bool
) -> None:
    data, reason = CASES[case]
    stream = GOOD + GOOD + data + GOOD
    if typed:
        reader: Any = StreamingReader(stream, Record, forbid_repeated_keys=True)
    else:
        reader = ValueReader(stream, forbid_repeated_keys=True)
        # Untyped, a path runs through the keys themselves, not the fields they name.
        reason = reason.replace("pair[1]", "[3][1]")
    kept, error = drain(reader)
    assert isinstance(error, RecordError)
    assert len(kept) == 2
    assert (error.index, error.offset, error.reason) == (2, 2 * len(GOOD), reason)


@dataclasses.dataclass
class Odd:
    by_pair: dict[tuple[int, int], str] = dataclasses.field(default_factory=dict)
    sized: Annotated[dict[str, int], msgspec.Meta(max_length=4)] = dataclasses.field(
        default_factory=dict
    )
    anything: Any = None
    raw: dict[str, msgspec.msgpack.Ext] = dataclasses.field(default_factory=dict)


ODD_CASES: dict[str, tuple[bytes, str]] = {
    "arrays as keys, in one call for the run": (
        wire_map(("by_pair", wire_map((wire_array(1, 2), "a"), (wire_array(1, 2), "b")))),
        "field `by_pair`: " + TWICE.format([1, 2]),
    ),
    "inside Annotated": (
        wire_map(("sized", wire_map(("n", 1), ("n", 2)))),
        "field `sized`: " + TWICE.format("n"),
    ),
    "under a key that names no field (ignored, its value checked all the same)": (
        wire_map(("other", wire_map(("n", 1), ("n", 2)))),
        "field `other`: " + TWICE.format("n"),
    ),
    "after an extension, which holds no map to check": (
        wire_map(("anything", wire_array(b"\xd4\x05\x00", wire_map(("n", 1), ("n", 2))))),
        "field `anything[1]`: " + TWICE.format("n"),
    ),
    "a timestamp msgpack refuses, taken as an Ext: the keys cannot be checked": (
        wire_map(("raw", wire_map(("t", b"\xd4\xff\x00")))),
        "its map keys cannot be checked (invalid timestamp data (length 1))",
    ),
}


@pytest.mark.parametrize("case", sorted(ODD_CASES))
def test_odd_places_of_a_repeat(case: str) -> None:
    data, reason = ODD_CASES[case]
    kept, error = drain(StreamingReader(P({}) + data, Odd, forbid_repeated_keys=True))
    assert kept == [Odd()]
    assert (error.index, error.reason) == (1, reason)


def test_by_default_the_last_value_of_a_key_is_read() -> None:
    """What every MessagePack decoder does, documented: the option is what refuses it."""
    data = wire_map(("name", "first"), ("name", "last"))
    assert list(StreamingReader(data, Record)) == [Record("last")]
    assert list(ValueReader(data)) == [{"name": "last"}]


def test_a_union_of_kinds_names_the_path_by_keys() -> None:
    data = P({"type": "press", "key": "a"}) + wire_map(
        ("type", "click"), ("at", wire_map(("x", 1), ("x", 2)))
    )
    kept, error = drain(StreamingReader(data, Click | Press, forbid_repeated_keys=True))
    assert kept == [Press("a")]
    assert (error.index, error.reason) == (1, "field `at`: " + TWICE.format("x"))


def test_skipped_as_any_bad_record_is() -> None:
    data = GOOD + wire_map(("name", "a"), ("name", "b")) + GOOD
    reader = StreamingReader(data, Record, forbid_repeated_keys=True, on_error="skip")
    assert list(reader) == [Record("g"), Record("g")]
    assert reader.skipped == 1
    assert reader.errors[0].reason == TWICE.format("name")


def test_tables_refuse_it_too() -> None:
    data = GOOD + wire_map(("name", "a"), ("name", "b"))
    with pytest.raises(RecordError, match="record 1 at byte 8: map has key 'name' twice"):
        read_table(data, Record, forbid_repeated_keys=True)
    assert read_table(data, Record).column("name").to_pylist() == ["g", "b"]


def test_a_key_named_once_in_each_of_many_maps_is_not_a_repeat() -> None:
    """Keys repeat across maps, and a value equals a key: neither is a repeat."""
    record = wire_map(
        ("name", "name"),
        ("inner", wire_array(wire_map(("x", 1)), wire_map(("x", 2)))),
        ("attrs", wire_map(("name", wire_map(("name", 1))), ("x", 1))),
    )
    (read,) = StreamingReader(record, Record, forbid_repeated_keys=True)
    assert read == Record("name", [Inner(1), Inner(2)], {"name": {"name": 1}, "x": 1})
    keyed = wire_map((wire_array(1, 2), 3), (wire_array(1, 3), 4), (wire_array(2, 1), 5))
    assert len(list(ValueReader((record + keyed) * 2, forbid_repeated_keys=True))) == 4


def test_arrays_as_keys_are_compared_by_value() -> None:
    data = wire_map((wire_array(1, 2), "a"), (wire_array(1, 3), "b"), (wire_array(1, 2), "c"))
    kept, error = drain(ValueReader(GOOD + data, forbid_repeated_keys=True))
    assert len(kept) == 1
    assert error.reason == TWICE.format([1, 2])


def test_the_option_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="forbid_repeated_keys must be True or False"):
        ReadOptions(forbid_repeated_keys="yes")  # type: ignore[arg-type]


KEYS = st.sampled_from(["a", "b", 1, True, 1.0, 2, ""])
SCALARS = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["a", "x"]))


def _trees(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3).map(lambda v: ("array", v)),
        st.lists(st.tuples(KEYS, children), max_size=4).map(lambda p: ("map", p)),
    )


TREES = st.recursive(SCALARS, _trees, max_leaves=12)


def encoded(tree: Any) -> bytes:
    if isinstance(tree, tuple) and tree[0] == "array":
        return wire_array(*map(encoded, tree[1]))
    if isinstance(tree, tuple):
        return wire_map(*((key, encoded(value)) for key, value in tree[1]))
    return P(tree)


def loses_a_value(tree: Any) -> bool:
    """Whether a Python mapping of some map of ``tree`` holds fewer entries than the map."""
    if not isinstance(tree, tuple):
        return False
    if tree[0] == "array":
        return any(map(loses_a_value, tree[1]))
    pairs = tree[1]
    return len(dict(pairs)) != len(pairs) or any(loses_a_value(v) for _, v in pairs)


@settings(max_examples=examples(ci=150, local=60), deadline=None)
@given(st.lists(TREES, min_size=1, max_size=6))
def test_a_record_is_refused_exactly_when_a_map_of_it_would_lose_a_value(
    trees: list[Any],
) -> None:
    data = b"".join(map(encoded, trees))
    assert len(list(ValueReader(data))) == len(trees)
    first = next((i for i, tree in enumerate(trees) if loses_a_value(tree)), None)
    reader = ValueReader(data, forbid_repeated_keys=True)
    if first is None:
        assert len(list(reader)) == len(trees)
        return
    kept, error = drain(reader)
    assert len(kept) == first
    assert (error.index, error.offset) == (first, sum(len(encoded(t)) for t in trees[:first]))
    assert "one of its values would be lost" in error.reason


@pytest.mark.parametrize("where", ["dump", "convert"])
def test_the_command_line_names_the_flag_and_leaves_no_output(
    tmp_path: Path, where: Literal["dump", "convert"], capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "records.msgpack"
    source.write_bytes(GOOD + wire_map(("name", "a"), ("name", "b")))
    out = tmp_path / "out.csv"
    args = ["convert", "--to", "csv", "-o", str(out)] if where == "convert" else ["dump"]
    assert main([*args, str(source)]) == 0
    assert main([*args, "--forbid-repeated-keys", str(source)]) == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines()[-1] == (
        f"error: {source}: record 1 at byte 8: map has key 'name' twice: one of its values "
        "would be lost (--forbid-repeated-keys)"
    )
    if where == "convert":
        assert out.read_text() == "name\ng\nb\n"  # the first run's, left as it was
    else:
        assert captured.out.splitlines()[-1] == '{"name":"g"}'
