"""Record types sent to other processes (msgpack_reader_py._types.shipping): a class of ``__main__``
arrives by value with its fields, options and checks, what msgspec cached on it left behind;
its instances come back as the sender's own class; what cannot be sent says so in one line.

Another process is played here by :func:`elsewhere` (no class sent by value known: this
module's keys and cloudpickle's, empty), so that every case is quick; the tests in
``integration/test_main_types.py`` and the engines' run them in real processes."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import pickle
import sys
import threading
import types
import typing
import weakref
from collections.abc import Iterator
from typing import Any

import msgpack
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from msgpack_reader_py import AnyValue, StreamingReader
from msgpack_reader_py._analysis.infer import infer
from msgpack_reader_py._arrow.reader import read_table
from msgpack_reader_py._base.errors import ReaderError
from msgpack_reader_py._types import shipping
from msgpack_reader_py._types.ints import UInt64
from msgpack_reader_py._types.record_type import record_fields
from msgpack_reader_py._types.shipping import Shipped, UnshippableType, shipped_values

CELL = """
import dataclasses
import enum
import typing

import attrs
import msgspec
from msgpack_reader_py import UInt64


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Place(msgspec.Struct):
    city: str
    floor: typing.Annotated[int, msgspec.Meta(ge=0)] = 0  # msgspec cannot pickle a Meta


class Point(msgspec.Struct, array_like=True, frozen=True):
    x: int
    y: int = 0


class Pair(typing.NamedTuple):
    left: int
    right: str = ""


class Extra(typing.TypedDict, total=False):
    note: str


@attrs.define
class Owner:
    name: str
    rank: UInt64 = 0


class Base(msgspec.Struct, tag=True, tag_field="kind", kw_only=True):
    seq: int = 0

    def __post_init__(self):
        if self.seq < 0:
            raise ValueError("a sequence number is never negative")


class Ping(Base, rename="camel"):
    reply_to: str = ""

    def __post_init__(self):
        super().__post_init__()
        if self.reply_to == "nobody":
            raise ValueError("nobody is no one to reply to")


class Pong(Base):
    hops: list[int] = msgspec.field(default_factory=list)

    def total(self):
        return sum(self.hops)


@dataclasses.dataclass
class Event:
    id: int
    color: Color
    place: Place
    pair: Pair
    extra: Extra
    owner: Owner
    message: Ping | Pong
    when: typing.Literal["now", "later"] = "now"

    def __post_init__(self):
        if self.id < 0:
            raise ValueError("an id is never negative")
"""


def cell() -> types.SimpleNamespace:
    """The classes of :data:`CELL`, defined anew as a notebook's cell defines them: in
    ``__main__``, which no other process can import."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(CELL, "<cell>", "exec", dont_inherit=True), namespace)  # no future import
    return types.SimpleNamespace(**namespace)


def events(c: types.SimpleNamespace, count: int = 30) -> list[Any]:
    made = []
    for i in range(count):
        message = c.Ping(seq=i, reply_to=f"r{i}") if i % 2 else c.Pong(seq=i, hops=[i, 1])
        made.append(
            c.Event(
                i,
                c.Color.RED if i % 3 else c.Color.BLUE,
                c.Place(f"city{i}", i % 4),
                c.Pair(i, "r" * (i % 3)),
                {"note": f"n{i}"} if i % 4 else {},
                c.Owner(f"o{i}", i % 2),
                message,
                "later" if i % 5 == 0 else "now",
            )
        )
    return made


@contextlib.contextmanager
def elsewhere() -> Iterator[None]:
    """As in another process: no class sent by value is known there."""
    tracker = importlib.import_module("cloudpickle.cloudpickle")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shipping, "_CLASSES", weakref.WeakValueDictionary())
        patch.setattr(shipping, "_KEYS", weakref.WeakKeyDictionary())
        patch.setattr(shipping, "_FRESH", weakref.WeakSet())
        patch.setattr(shipping, "_REFERENCES", weakref.WeakKeyDictionary())
        patch.setattr(shipping, "_LOADED", {})
        patch.setattr(tracker, "_DYNAMIC_CLASS_TRACKER_BY_ID", weakref.WeakValueDictionary())
        patch.setattr(tracker, "_DYNAMIC_CLASS_TRACKER_BY_CLASS", weakref.WeakKeyDictionary())
        yield


def arrived(value: Any) -> Any:
    """``value`` as another process receives it."""
    sent = pickle.dumps(Shipped(value, "the type"))
    with elsewhere():
        received: Shipped = pickle.loads(sent)
        return received.value


def outcome(source: bytes, record_type: Any) -> tuple[list[Any], str | None]:
    """What a reader makes of ``source``: its records as builtins, and its error."""
    reader = StreamingReader(source, record_type)
    records: list[Any] = []
    try:
        records.extend(msgspec.to_builtins(record) for record in reader)
    except ReaderError as exc:
        return records, str(exc)
    return records, None


def test_a_class_of_main_arrives_by_value_and_reads_as_at_home(tmp_path: Any) -> None:
    c = cell()
    good = b"".join(msgspec.msgpack.encode(e) for e in events(c))
    bad = [msgspec.to_builtins(e) for e in events(c)]
    bad[7]["message"]["replyTo"] = "nobody"  # refused by Ping's __post_init__, after Base's
    bad[9]["message"]["seq"] = -1  # by Base's
    bad[11]["id"] = -1  # by Event's
    broken = [b"".join(msgspec.msgpack.encode(r) for r in bad[:end]) for end in (9, 11, 30)]
    home = [outcome(source, c.Event) for source in (good, *broken)]  # used before it is sent
    assert [error is None for _, error in home] == [True, False, False, False]
    event = arrived(c.Event)
    assert event is not c.Event
    assert (event.__module__, event.__qualname__) == ("__main__", "Event")
    assert [(f.name, f.wire_name, f.default) for f in record_fields(event)] == [
        (f.name, f.wire_name, f.default) for f in record_fields(c.Event)
    ]
    assert [outcome(source, event) for source in (good, *broken)] == home
    path = tmp_path / "events.msgpack"
    path.write_bytes(good)
    assert read_table(path, event).equals(read_table(path, c.Event))
    points = b"".join(msgspec.msgpack.encode(c.Point(i, -i)) for i in range(9))
    assert outcome(points, arrived(c.Point)) == outcome(points, c.Point)


def test_a_class_is_made_once_where_it_arrives() -> None:
    c = cell()
    sent = [pickle.dumps(Shipped(value, "x")) for value in (c.Event, c.Ping | c.Pong)]
    with elsewhere():
        event = pickle.loads(sent[0]).value
        union = pickle.loads(sent[1]).value
        message = typing.get_type_hints(event)["message"]
        assert typing.get_args(message) == typing.get_args(union)  # the same copies
        onwards = pickle.dumps(Shipped(event, "Event"))  # sent on from there
        assert pickle.loads(onwards).value is event
    assert pickle.loads(onwards).value is c.Event  # back where it was defined


def test_instances_come_back_as_the_senders_classes() -> None:
    c = cell()
    originals = events(c)
    source = b"".join(msgspec.msgpack.encode(e) for e in originals)
    sent = pickle.dumps(Shipped(c.Event, "Event"))
    cloudpickle = importlib.import_module("cloudpickle")
    with elsewhere():
        event = pickle.loads(sent).value
        records = list(StreamingReader(source, event))
        assert type(records[0]) is event
        by_pickle = pickle.dumps(records)
        by_cloudpickle = cloudpickle.dumps(records)  # as an engine sends them
        elsewhere_again = pickle.loads(by_pickle)
        assert type(elsewhere_again[0]) is event
    for data in (by_pickle, by_cloudpickle):
        back = pickle.loads(data)
        assert back == originals
        assert {type(r) for r in back} == {c.Event}
        assert {type(r.message) for r in back} == {c.Ping, c.Pong}
        assert {type(r.color) for r in back} == {c.Color}
    assert records[4].message.total() == 5  # methods travel too


def test_the_senders_instances_still_copy_and_pickle_at_home() -> None:
    c = cell()
    Shipped(c.Event, "Event").payload  # noqa: B018 - sent by value
    for original in events(c, 4):
        assert copy.copy(original) == original
        assert copy.deepcopy(original) == original
        assert type(copy.deepcopy(original).message) is type(original.message)
        assert pickle.loads(pickle.dumps(original)) == original
    cloudpickle = importlib.import_module("cloudpickle")
    sent = cloudpickle.dumps(events(c, 4))  # as an engine sends the sender's records
    with elsewhere():
        there = pickle.loads(sent)
        assert {type(r).__qualname__ for r in there} == {"Event"}
        assert {type(r) for r in there}.isdisjoint({c.Event})
        assert [msgspec.to_builtins(r) for r in there] == msgspec.to_builtins(events(c, 4))


def test_what_msgspec_caches_stays_behind_and_the_token_stays() -> None:
    c = cell()
    union = c.Ping | c.Pong
    before = Shipped((c.Event, union), "x")
    token = before.__dask_tokenize__()
    for record_type in (c.Event, union, c.Pair, c.Owner, c.Extra):
        list(StreamingReader(b"", record_type))
    msgspec.msgpack.Decoder(c.Event)
    assert "__msgspec_cache__" in vars(c.Event)  # what made Dask's tokens fail
    assert "__msgspec_cache__" in vars(c.Color)
    after = Shipped((c.Event, union), "x")
    assert after.payload == before.payload
    assert after.__dask_tokenize__() == token
    assert b"__msgspec_cache__" not in after.payload
    defined_again = cell()
    assert Shipped((defined_again.Event, union), "x").__dask_tokenize__() != token


STRUCT_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "tag": st.one_of(st.booleans(), st.text(min_size=1, max_size=5), st.integers(0, 9)),
        "tag_field": st.sampled_from(["type", "kind"]),
        "array_like": st.booleans(),
        "kw_only": st.booleans(),
        "frozen": st.booleans(),
        "omit_defaults": st.booleans(),
        "forbid_unknown_fields": st.booleans(),
        "rename": st.sampled_from(["camel", "upper", None]),
    },
)
FIELD_TYPES = st.sampled_from(
    [
        int,
        str,
        list[int],
        int | None,
        UInt64,
        # Constraints of every kind, which msgspec cannot pickle: made again where they arrive.
        typing.Annotated[int, msgspec.Meta(ge=0, lt=10, multiple_of=2)],
        typing.Annotated[str, msgspec.Meta(pattern="^a", max_length=3, description="d")],
        list[typing.Annotated[float, msgspec.Meta(gt=0.5, title="t", examples=[1.0])]],
        typing.Annotated[dict[str, int], msgspec.Meta(min_length=1, extra={"x": 1})],
    ]
)


@given(
    options=STRUCT_OPTIONS,
    fields=st.lists(
        st.tuples(FIELD_TYPES, st.sampled_from(["none", "value", "factory"])),
        min_size=1,
        max_size=5,
    ),
)
def test_any_struct_arrives_with_its_fields_and_options(
    options: dict[str, Any], fields: list[tuple[Any, str]]
) -> None:
    declared: list[Any] = []
    defaulted = False
    for i, (annotation, default) in enumerate(fields):
        if default == "none" and not defaulted:
            declared.append((f"field_{i}", annotation))
        elif default == "factory":
            defaulted = True
            declared.append((f"field_{i}", annotation, msgspec.field(default_factory=list)))
        else:
            defaulted = True
            declared.append((f"field_{i}", annotation, None))
    made = msgspec.defstruct("Made", declared, module="__main__", **options)
    there = arrived(made)
    assert there is not made
    for attribute in ("__struct_fields__", "__struct_encode_fields__", "__match_args__"):
        assert getattr(there, attribute) == getattr(made, attribute)
    assert len(there.__struct_defaults__) == len(made.__struct_defaults__)
    for option in dir(made.__struct_config__):
        if not option.startswith("_"):
            assert getattr(there.__struct_config__, option) == getattr(
                made.__struct_config__, option
            ), option
    here = typing.cast(msgspec.inspect.StructType, msgspec.inspect.type_info(made))
    away = typing.cast(msgspec.inspect.StructType, msgspec.inspect.type_info(there))
    assert away.fields == here.fields


def test_an_any_value_field_keeps_its_mark_when_sent_by_value() -> None:
    """A type from a script's __main__ arrives by value: an ``AnyValue`` field there still
    holds a timestamp to the nanosecond, as here, not the rounded datetime of ``Any``."""
    made: Any = msgspec.defstruct("Made", [("v", AnyValue)], module="__main__")
    there = arrived(made)
    stamp = msgpack.Timestamp(1, 5)
    data = msgpack.packb({"v": [stamp]})
    assert [r.v for r in StreamingReader(data, there)] == [[stamp]]
    assert [r.v for r in StreamingReader(data, made)] == [[stamp]]


def test_values_not_shipped_pass_as_they_are() -> None:
    shipped = Shipped(int, "int")
    assert shipped_values((1, shipped, "x")) == (1, int, "x")
    assert repr(shipped) == "<Shipped int>"
    assert pickle.loads(pickle.dumps(shipped)).value is int


@pytest.fixture
def no_cloudpickle(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if cloudpickle (and Ray's and pyspark's copies of it) were not installed."""
    monkeypatch.setitem(sys.modules, "cloudpickle", None)
    monkeypatch.setitem(sys.modules, "ray.cloudpickle", None)
    monkeypatch.setitem(sys.modules, "pyspark.cloudpickle", None)
    monkeypatch.setattr(shipping, "_PICKLER", None)


def test_without_cloudpickle_a_class_no_process_can_import_is_refused(
    no_cloudpickle: None,
) -> None:
    c = cell()

    @dataclasses.dataclass
    class Local:
        id: int

    for value, names, where in (
        (c.Event, "Event is", "in __main__ (a notebook, python -c or standard input)"),
        (Local, "Local is", "inside a function"),
        (Local | None, "Local is", "inside a function"),
    ):
        with pytest.raises(UnshippableType) as raised:
            Shipped(value, "Rec").payload  # noqa: B018
        message = str(raised.value)
        assert "\n" not in message
        assert message.startswith(
            f"the record type Rec cannot be sent to worker processes: {names} defined {where}"
        )
        assert "in a module, or install cloudpickle" in message
    assert pickle.loads(Shipped(int, "int").payload) is int  # importable: by reference


def test_a_class_that_cannot_be_pickled_is_refused_in_one_line() -> None:
    class Guarded(msgspec.Struct):
        lock: typing.ClassVar[Any] = threading.Lock()
        id: int = 0

    with pytest.raises(UnshippableType) as raised:
        Shipped(Guarded, "Guarded").payload  # noqa: B018
    assert str(raised.value) == (
        "the record type Guarded cannot be sent to other processes (cannot pickle "
        "'_thread.lock' object): define what it needs in a module they can import"
    )


def test_a_class_the_receiver_cannot_import_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = types.ModuleType("only_here")
    exec("class Rec:\n    pass\n", module.__dict__)
    monkeypatch.setitem(sys.modules, "only_here", module)
    sent = pickle.dumps(Shipped(module.Rec, "Rec"))
    monkeypatch.delitem(sys.modules, "only_here")
    received = pickle.loads(sent)
    with pytest.raises(UnshippableType) as raised:
        received.value  # noqa: B018
    assert str(raised.value) == (
        "the record type Rec cannot be made in this process (No module named 'only_here'): "
        "define what it needs in a module this process can import"
    )


@pytest.mark.parametrize("form", ["dataclass", "struct"])
def test_an_inferred_type_arrives_refusing_what_it_refuses_at_home(form: Any) -> None:
    """What an inferred class refuses of itself (a key it does not name, the shape its records
    never had) travels with it."""
    inferred = infer([{"a": 1, "e": [{"b": True}]}]).record_type(form)
    data = b"".join(
        msgspec.msgpack.encode(r) for r in ({"a": 1, "e": [{"b": True}]}, {"a": 2, "e": [[True]]})
    )
    home = outcome(data, inferred)
    assert "field `e[0]` expected a map (RecordEItem is read from maps only)" in str(home[1])
    assert outcome(data, arrived(inferred)) == home
