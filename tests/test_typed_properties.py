"""Properties over typed records: any value of an annotated record type, written with any mix of
array- and map-shaped records at every level, reads back equal; the same value with one field
replaced by a value not of its type is a ``RecordError`` naming that field's path."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import enum
from typing import Annotated, Any, Literal, Protocol

import msgpack
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import DecodeError, ReaderError, RecordError, StreamingReader

from .helpers import examples


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Inner:
    name: str
    level: Level
    scores: list[float]


@dataclasses.dataclass
class Record:
    id: int
    flag: bool
    ratio: float
    blob: bytes
    when: dt.datetime
    tags: list[str]
    attrs: dict[str, int]
    pair: tuple[int, str]
    rest: tuple[int, ...]
    colour: Colour
    kind: Literal["a", "b"]
    small: Annotated[int, msgspec.Meta(ge=0, le=100)]
    inner: Inner
    inners: list[Inner]
    note: str | None = None


ints = st.integers(-(2**63), 2**64 - 1)
floats = st.floats(allow_nan=False)
texts = st.text(max_size=8)
instants = st.datetimes(
    min_value=dt.datetime(1970, 1, 1),
    max_value=dt.datetime(2200, 1, 1),
    timezones=st.just(dt.timezone.utc),
)
inners = st.builds(Inner, texts, st.sampled_from(Level), st.lists(floats, max_size=3))
records = st.builds(
    Record,
    id=ints,
    flag=st.booleans(),
    ratio=floats,
    blob=st.binary(max_size=8),
    when=instants,
    tags=st.lists(texts, max_size=3),
    attrs=st.dictionaries(texts, ints, max_size=3),
    pair=st.tuples(ints, texts),
    rest=st.lists(ints, max_size=3).map(tuple),
    colour=st.sampled_from(Colour),
    kind=st.sampled_from(["a", "b"]),
    small=st.integers(0, 100),
    inner=inners,
    inners=st.lists(inners, max_size=2),
    note=st.none() | texts,
)


class Draws(Protocol):
    """What ``wire`` draws shapes from: hypothesis's ``data()``, or a fixed choice."""

    def draw(self, strategy: Any) -> Any: ...


def wire(value: Any, as_array: Draws) -> Any:
    """``value`` as an encoder would write it, each record an array or a map as drawn."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: wire(getattr(value, f.name), as_array) for f in dataclasses.fields(value)}
        return list(fields.values()) if as_array.draw(st.booleans()) else fields
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dt.datetime):
        return msgpack.Timestamp.from_datetime(value)
    if isinstance(value, (list, tuple)):
        return [wire(v, as_array) for v in value]
    if isinstance(value, dict):
        return {k: wire(v, as_array) for k, v in value.items()}
    return value


@settings(deadline=None, max_examples=examples(ci=300, local=60))
@given(st.lists(records, min_size=1, max_size=4), st.data())
def test_any_value_of_the_type_reads_back_equal(values: list[Record], data: st.DataObject) -> None:
    stream = b"".join(msgpack.packb(wire(v, data)) for v in values)
    assert list(StreamingReader(stream, Record)) == values


# A field path, how to put a value at it in the record's map form, and values not of its type.
WRONG: list[tuple[str, Any, Any]] = [
    ("id", lambda r, v: r.__setitem__("id", v), st.sampled_from(["1", 1.5, True, None, [1]])),
    ("flag", lambda r, v: r.__setitem__("flag", v), st.sampled_from([0, 1, "true", None])),
    ("ratio", lambda r, v: r.__setitem__("ratio", v), st.sampled_from(["1.0", None, False])),
    ("blob", lambda r, v: r.__setitem__("blob", v), st.sampled_from(["text", 1, [1]])),
    ("when", lambda r, v: r.__setitem__("when", v), st.sampled_from([1, "2024-01-01", None])),
    ("tags[0]", lambda r, v: r.__setitem__("tags", [v]), st.sampled_from([1, None, b"x"])),
    ("pair[1]", lambda r, v: r.__setitem__("pair", [1, v]), st.sampled_from([1, None])),
    ("rest[1]", lambda r, v: r.__setitem__("rest", [1, v]), st.sampled_from(["1", 1.5])),
    ("colour", lambda r, v: r.__setitem__("colour", v), st.sampled_from(["green", 1])),
    ("kind", lambda r, v: r.__setitem__("kind", v), st.sampled_from(["c", 1])),
    ("small", lambda r, v: r.__setitem__("small", v), st.sampled_from([-1, 101])),
    ("inner.level", lambda r, v: r["inner"].__setitem__("level", v), st.sampled_from([3, "1"])),
    (
        "inner.scores[0]",
        lambda r, v: r["inner"].__setitem__("scores", [v]),
        st.sampled_from(["x", None]),
    ),
    (
        "inners[0].name",
        lambda r, v: r.__setitem__("inners", [{"name": v, "level": 1, "scores": []}]),
        st.sampled_from([1, None]),
    ),
]


@pytest.mark.parametrize(("path", "put", "wrong"), WRONG, ids=[w[0] for w in WRONG])
@settings(deadline=None, max_examples=examples(ci=60, local=15))
@given(value=records, bad=st.data())
def test_a_value_not_of_the_type_is_a_record_error_naming_its_path(
    path: str, put: Any, wrong: Any, value: Record, bad: st.DataObject
) -> None:
    good = msgpack.packb(wire(value, bad))
    record = wire(value, _Maps())
    put(record, bad.draw(wrong))
    with pytest.raises(RecordError) as caught:
        list(StreamingReader(good + msgpack.packb(record), Record))
    assert (caught.value.index, caught.value.offset) == (1, len(good))
    assert caught.value.reason.startswith(f"field `{path}` "), caught.value.reason


class _Maps:
    """Draws "not an array" every time: every record as a map, so that fields can be put."""

    def draw(self, strategy: Any) -> bool:
        return False


@settings(deadline=None, max_examples=examples(ci=1000, local=150))
@given(
    value=records,
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),
    data=st.data(),
)
def test_damaged_typed_records_raise_only_reader_errors(
    value: Record, edits: list[tuple[int, int]], data: st.DataObject
) -> None:
    """Any byte changed in any record, whatever it breaks (a type, a length, a UTF-8 string,
    a key, a header), ends in a ``ReaderError``, never another exception."""
    stream = bytearray(msgpack.packb(wire(value, data)))
    for position, byte in edits:
        stream[position % len(stream)] = byte
    with contextlib.suppress(ReaderError):
        list(StreamingReader(bytes(stream), Record, max_record_size=1 << 16))


def test_invalid_utf8_anywhere_in_a_record_is_a_decode_error() -> None:
    """Even after a field of the wrong type: what is reported does not depend on the order
    in which the decoder looks at the record."""
    record = {"id": "x", "flag": True, "name\xff": 1}
    data = msgpack.packb(record).replace(b"name\xc3\xbf", b"name\xff\xff")
    with pytest.raises(DecodeError) as caught:
        list(StreamingReader(data, Record, on_error="skip"))
    assert caught.value.reason.startswith("invalid UTF-8 in a str")
