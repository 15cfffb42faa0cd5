"""Build the corpus of broken and hostile streams, and its manifest, from code.

Every ``*.msgpack`` file in this folder and ``manifest.json`` are made here, deterministically:
the bytes are spelled out (or packed by ``msgpack.packb``, which is deterministic), and what the
reader must do with them is worked out from how they were built, never by running the reader.
``tests/test_corpus.py`` reads every file as the manifest says and checks that running this
script again reproduces the folder byte for byte.

Regenerate with ``poetry run python -m tests.corpus.make_corpus`` (from the repository root).

Each manifest case names a file, the reader options (``record_type`` is ``"Item"`` or
``"Loose"``, a dataclass ``key: str, payload: Any`` that the test defines; ``max_record_size``
``null`` means the default), the records the reader must yield (their count, their ids for
``Item`` records, and the sha256 of ``repr(list_of_records)``), then either ``error: null``
for a clean end, or the error's class name with its ``index`` and ``offset``; ``skipped`` and
``skipped_at`` are what ``on_error="skip"`` must have passed over (``[index, offset]`` each).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
from msgpack import ExtType, Timestamp

from msgpack_reader_py import Item

HERE = Path(__file__).resolve().parent
MANIFEST = "manifest.json"

# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


def pack(value: Any) -> bytes:
    data = msgpack.packb(value)
    assert isinstance(data, bytes)
    return data


def item(n: int) -> list[Any]:
    """The wire form of good item ``n``: every field distinct, all minimal encodings."""
    return [
        n,
        4000 + n,
        70 + n,
        1_700_000_000_000_000_000 + n,
        100 + n,
        n + 0.25,
        f"f{n}.py",
        f"/srv/{n}",
    ]


def items(ids: Iterable[int]) -> bytes:
    return b"".join(pack(item(n)) for n in ids)


@dataclass(frozen=True)
class Expected:
    """A record the reader must yield: its repr, and its id if it is an Item."""

    text: str
    id: int | None = None


def item_record(values: list[Any]) -> Expected:
    assert type(values[0]) is int
    return Expected(repr(Item(*values)), values[0])


def good(ids: Iterable[int]) -> list[Expected]:
    return [item_record(item(n)) for n in ids]


EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class Shown:
    """An extension value as a record's repr shows it (``shown`` turns the reader's into it)."""

    code: int
    data: bytes


def as_read(value: Any) -> Any:
    """A payload as written here, as the reader hands it over: arrays as lists (map keys as
    tuples), timestamps as ``datetime``, other extension types as ``Shown``."""
    if isinstance(value, Timestamp):
        # Nanoseconds rounded half up to microseconds, as the reader documents.
        seconds, nanoseconds = divmod(value.to_unix_nano(), 10**9)
        micro = (nanoseconds + 500) // 1000
        return EPOCH + datetime.timedelta(seconds=seconds, microseconds=micro)
    if isinstance(value, ExtType):
        return Shown(value.code, value.data)
    if isinstance(value, (list, tuple)):
        read = []
        for element in value:  # a loop, not a comprehension: one frame per level of nesting
            read.append(as_read(element))  # noqa: PERF401
        return read
    if isinstance(value, dict):
        return {_as_key(k): as_read(v) for k, v in value.items()}
    return value


def _as_key(key: Any) -> Any:
    return tuple(map(_as_key, key)) if isinstance(key, (list, tuple)) else key


def shown(value: Any) -> Any:
    """What the reader handed over, with every extension value (``msgspec.msgpack.Ext``, whose
    repr is its address) as ``Shown``, so that a repr can be compared."""
    if isinstance(value, list):
        seen = []
        for element in value:  # a loop, not a comprehension: one frame per level of nesting
            seen.append(shown(element))  # noqa: PERF401
        return seen
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items()}
    code, data = getattr(value, "code", None), getattr(value, "data", None)
    if isinstance(code, int) and isinstance(data, bytes):
        return Shown(code, data)
    return value


def loose(key: str, payload: Any) -> Expected:
    """A ``Loose`` record, as the dataclass repr of the test's ``Loose`` prints it, with the
    payload as the reader hands it over (see ``as_read``)."""
    return Expected(f"Loose(key={key!r}, payload={as_read(payload)!r})")


# Three good records before the broken one, two after it: the broken record is record 3.
PREFIX_IDS = [1, 2, 3]
SUFFIX_IDS = [4, 5]
PREFIX = items(PREFIX_IDS)
SUFFIX = items(SUFFIX_IDS)
START = len(PREFIX)  # where the broken record starts

LOOSE_PREFIX = pack(["a", 1]) + pack(["b", [2, "two"]])
LOOSE_PREFIX_RECORDS = [loose("a", 1), loose("b", (2, "two"))]
LOOSE_SUFFIX = pack(["z", None])
LOOSE_SUFFIX_RECORDS = [loose("z", None)]
LOOSE_START = len(LOOSE_PREFIX)

# An Item whose wire form has most kinds of value: uint32, uint64, int64, float64, fixstr, str8.
BIG = [70000, 2**16, 2**32, 2**64 - 1, -(2**63), 0.1, "FILENAME", "P" * 40]
BIG_WIRE = pack(BIG)


def value_offsets(values: list[Any]) -> list[int]:
    """Where each value of the array ``values`` starts in its wire form, then its length."""
    whole = pack(values)
    offsets = [len(whole) - sum(len(pack(v)) for v in values)]  # after the array header
    for value in values:
        offsets.append(offsets[-1] + len(pack(value)))
    assert offsets[-1] == len(whole)
    return offsets


BIG_AT = value_offsets(BIG)
ID_AT, TS_AT, LINE_AT, VALUE_AT, FILENAME_AT, PATH_AT = (BIG_AT[i] for i in (0, 3, 4, 5, 6, 7))
# The cut points below fall inside the parts they name.
assert BIG_WIRE[0] == 0x98  # fixarray of 8
assert BIG_WIRE[ID_AT] == 0xCE  # uint32
assert BIG_WIRE[TS_AT] == 0xCF  # uint64
assert BIG_WIRE[LINE_AT] == 0xD3  # int64
assert BIG_WIRE[VALUE_AT] == 0xCB  # float64
assert BIG_WIRE[FILENAME_AT] == 0xA8  # fixstr of 8
assert BIG_WIRE[PATH_AT] == 0xD9  # str8


def assert_unfinished(data: bytes) -> None:
    """``data`` holds no complete value: it is a record cut off, not a shorter record."""
    unpacker = msgpack.Unpacker()
    unpacker.feed(data)
    assert list(unpacker) == [], data


def u(n: int, width: int) -> bytes:
    return n.to_bytes(width, "big")


def s(n: int, width: int) -> bytes:
    return n.to_bytes(width, "big", signed=True)


HOSTILE_HEADERS = {
    "str32": b"\xdb\xff\xff\xff\xff",
    "bin32": b"\xc6\xff\xff\xff\xff",
    "ext32": b"\xc9\xff\xff\xff\xff\x05",  # with its type byte
    "array32": b"\xdd\xff\xff\xff\xff",
    "map32": b"\xdf\xff\xff\xff\xff",
}

# --------------------------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------------------------


@dataclass
class Corpus:
    files: dict[str, bytes] = field(default_factory=dict)
    cases: list[dict[str, Any]] = field(default_factory=list)

    def file(self, name: str, data: bytes) -> str:
        filename = f"{name}.msgpack"
        assert filename not in self.files, filename
        self.files[filename] = data
        return filename

    def case(
        self,
        name: str,
        file: str,
        description: str,
        records: list[Expected],
        error: tuple[str, int, int] | None,
        *,
        record_type: str = "Item",
        max_record_size: int | None = None,
        on_error: str = "raise",
        skipped_at: list[tuple[int, int]] | None = None,
    ) -> None:
        assert file in self.files, file
        assert name not in {case["name"] for case in self.cases}, name
        assert record_type in ("Item", "Loose")
        assert on_error in ("raise", "skip")
        skipped_at = skipped_at or []
        assert on_error == "skip" or not skipped_at
        if error is not None:
            # The index counts every record before the failing one, skipped ones too.
            assert error[1] == len(records) + len(skipped_at), name
            assert 0 <= error[2] < len(self.files[file]), name
        ids = [record.id for record in records]
        if record_type == "Item":
            assert all(isinstance(i, int) for i in ids), name
        self.cases.append(
            {
                "name": name,
                "file": file,
                "description": description,
                "options": {
                    "record_type": record_type,
                    "max_record_size": max_record_size,
                    "on_error": on_error,
                },
                "records": {
                    "count": len(records),
                    "ids": ids if record_type == "Item" else None,
                    "sha256": hashlib.sha256(
                        ("[" + ", ".join(r.text for r in records) + "]").encode()
                    ).hexdigest(),
                },
                "error": None if error is None else error[0],
                "index": None if error is None else error[1],
                "offset": None if error is None else error[2],
                "skipped": len(skipped_at),
                "skipped_at": [list(at) for at in skipped_at],
            }
        )

    def broken_item(
        self,
        name: str,
        bad: bytes,
        error: str,
        description: str,
        *,
        max_record_size: int | None = None,
        skip_too: bool = False,
    ) -> None:
        """PREFIX + bad + SUFFIX: the reader yields the prefix, then fails on record 3.

        With ``skip_too`` the same file is read with ``on_error="skip"`` as well: a
        ``RecordError`` is then passed over (and the suffix yielded), anything else still raises.
        """
        file = self.file(name, PREFIX + bad + SUFFIX)
        self.case(
            name,
            file,
            description,
            good(PREFIX_IDS),
            (error, 3, START),
            max_record_size=max_record_size,
        )
        if not skip_too:
            return
        if error == "RecordError":
            self.case(
                f"{name} (skip)",
                file,
                description + "; skipped",
                good(PREFIX_IDS + SUFFIX_IDS),
                None,
                max_record_size=max_record_size,
                on_error="skip",
                skipped_at=[(3, START)],
            )
        else:
            self.case(
                f"{name} (skip)",
                file,
                description + "; on_error='skip' does not skip it",
                good(PREFIX_IDS),
                (error, 3, START),
                max_record_size=max_record_size,
                on_error="skip",
            )

    def broken_loose(
        self, name: str, bad: bytes, error: str, description: str, *, skip_too: bool = False
    ) -> None:
        """LOOSE_PREFIX + bad + LOOSE_SUFFIX, read as Loose records: fails on record 2."""
        file = self.file(name, LOOSE_PREFIX + bad + LOOSE_SUFFIX)
        self.case(
            name,
            file,
            description,
            LOOSE_PREFIX_RECORDS,
            (error, 2, LOOSE_START),
            record_type="Loose",
        )
        if skip_too:
            skipped = error == "RecordError"
            self.case(
                f"{name} (skip)",
                file,
                description + ("; skipped" if skipped else "; on_error='skip' does not skip it"),
                LOOSE_PREFIX_RECORDS + (LOOSE_SUFFIX_RECORDS if skipped else []),
                None if skipped else (error, 2, LOOSE_START),
                record_type="Loose",
                on_error="skip",
                skipped_at=[(2, LOOSE_START)] if skipped else None,
            )

    def accepted_loose(self, name: str, key: str, payload_wire: bytes, payload: Any) -> None:
        """LOOSE_PREFIX + [key, payload] + LOOSE_SUFFIX: every record is yielded."""
        record = b"\x92" + pack(key) + payload_wire
        file = self.file(name, LOOSE_PREFIX + record + LOOSE_SUFFIX)
        self.case(
            name,
            file,
            f"a Loose record whose payload is {payload!r:.60}, accepted",
            [*LOOSE_PREFIX_RECORDS, loose(key, payload), *LOOSE_SUFFIX_RECORDS],
            None,
            record_type="Loose",
        )


def build() -> Corpus:
    """Every file and every case, in a fixed order."""
    corpus = Corpus()
    clean(corpus)
    truncation(corpus)
    not_msgpack(corpus)
    hostile_headers(corpus)
    not_records(corpus)
    accepted(corpus)
    skipping(corpus)
    return corpus


def clean(corpus: Corpus) -> None:
    empty = corpus.file("empty", b"")
    corpus.case("empty", empty, "an empty stream: no records, a clean end", [], None)
    corpus.case(
        "empty (Loose, skip)",
        empty,
        "an empty stream",
        [],
        None,
        record_type="Loose",
        on_error="skip",
    )
    five = corpus.file("five_items", PREFIX + SUFFIX)
    corpus.case("five items", five, "five good items", good(PREFIX_IDS + SUFFIX_IDS), None)
    corpus.case(
        "five items (skip)",
        five,
        "five good items",
        good(PREFIX_IDS + SUFFIX_IDS),
        None,
        on_error="skip",
    )


def truncation(corpus: Corpus) -> None:
    """The stream ends inside record 3, at each kind of place a record can be cut."""
    cuts: dict[str, tuple[bytes, str]] = {
        "cut_after_array_header": (BIG_WIRE[:1], "after a fixarray header"),
        "cut_in_array16_header": (b"\xdc\x00", "inside an array16 header"),
        "cut_in_array32_header": (b"\xdd\x00\x00\x00", "inside an array32 header"),
        "cut_after_uint32_type_byte": (BIG_WIRE[: ID_AT + 1], "after a uint32's type byte"),
        "cut_in_uint32": (BIG_WIRE[: ID_AT + 3], "inside a uint32"),
        "cut_after_uint64_type_byte": (BIG_WIRE[: TS_AT + 1], "after a uint64's type byte"),
        "cut_in_uint64": (BIG_WIRE[: TS_AT + 5], "inside a uint64"),
        "cut_in_int64": (BIG_WIRE[: LINE_AT + 3], "inside an int64"),
        "cut_after_float64_type_byte": (BIG_WIRE[: VALUE_AT + 1], "after a float64's type byte"),
        "cut_in_float64": (BIG_WIRE[: VALUE_AT + 4], "inside a float64"),
        "cut_in_float32": (b"\x98\x01\x02\x03\x04\x05\xca\x3f\xc0", "inside a float32"),
        "cut_after_fixstr_header": (BIG_WIRE[: FILENAME_AT + 1], "after a fixstr header"),
        "cut_in_fixstr_body": (BIG_WIRE[: FILENAME_AT + 4], "inside a fixstr's body"),
        "cut_after_str8_type_byte": (BIG_WIRE[: PATH_AT + 1], "inside a str8 header"),
        "cut_in_str8_body": (BIG_WIRE[: PATH_AT + 12], "inside a str8's body"),
        "cut_in_str16_header": (b"\x92\x01\xda\x01", "inside a str16 header"),
        "cut_in_str32_header": (b"\x92\x01\xdb\x00\x00", "inside a str32 header"),
        "cut_in_str32_body": (b"\x92\x01\xdb" + u(10, 4) + b"abcd", "inside a str32's body"),
        "cut_one_byte_short": (BIG_WIRE[:-1], "one byte before the record's end"),
        "cut_between_fields": (b"\x98\x01\x02\x03", "after 3 of the 8 declared fields"),
    }
    for name, (tail, where) in cuts.items():
        assert_unfinished(tail)
        file = corpus.file(name, PREFIX + tail)
        corpus.case(
            name,
            file,
            f"the stream ends {where}",
            good(PREFIX_IDS),
            ("TruncatedStreamError", 3, START),
        )
    corpus.case(
        "cut_in_uint64 (skip)",
        "cut_in_uint64.msgpack",
        "a truncation is not skipped",
        good(PREFIX_IDS),
        ("TruncatedStreamError", 3, START),
        on_error="skip",
    )
    first = corpus.file("cut_first_record", BIG_WIRE[:10])
    corpus.case(
        "cut_first_record", first, "the only record is cut", [], ("TruncatedStreamError", 0, 0)
    )
    nested = corpus.file(
        "cut_in_nested_map", LOOSE_PREFIX + pack(["m", {"a": [1, 2], "b": "xyz"}])[:-2]
    )
    corpus.case(
        "cut_in_nested_map",
        nested,
        "the stream ends inside a map nested in a Loose payload",
        LOOSE_PREFIX_RECORDS,
        ("TruncatedStreamError", 2, LOOSE_START),
        record_type="Loose",
    )


def not_msgpack(corpus: Corpus) -> None:
    corpus.broken_item(
        "reserved_c1_starting_a_record",
        b"\xc1",
        "DecodeError",
        "the reserved byte 0xc1 where a record starts",
        skip_too=True,
    )
    corpus.broken_item(
        "reserved_c1_inside_a_record",
        b"\x98\x01\x02\xc1",
        "DecodeError",
        "the reserved byte 0xc1 as a record's third field",
    )
    only = corpus.file("reserved_c1_only", b"\xc1")
    corpus.case("reserved_c1_only", only, "a stream of one 0xc1", [], ("DecodeError", 0, 0))
    corpus.broken_item(
        "invalid_utf8_in_a_field",
        BIG_WIRE[:FILENAME_AT] + b"\xa2\xff\xfe" + pack(BIG[7]),
        "DecodeError",
        "the filename field is a str of the bytes ff fe, not UTF-8",
        skip_too=True,
    )
    corpus.broken_item(
        "invalid_utf8_truncated_sequence",
        b"\x98\x01\x02\x03\x04\x05\xcb" + struct.pack(">d", 1.5) + b"\xa2\xe2\x82" + pack("p"),
        "DecodeError",
        "a str holding the first two bytes of a three-byte UTF-8 sequence",
    )
    corpus.broken_loose(
        "invalid_utf8_surrogate_key",
        b"\x92\xa3\xed\xa0\x80\x01",
        "DecodeError",
        "a key that is an encoded UTF-16 surrogate (ed a0 80), which UTF-8 forbids",
    )
    corpus.broken_loose(
        "invalid_utf8_in_a_map_key",
        b"\x92\xa1k\x81\xa2\xc3\x28\x01",
        "DecodeError",
        "a map key in the payload with an invalid two-byte sequence (c3 28)",
    )
    deep = b"\x91" * 2000 + b"\xc0"
    corpus.broken_item(
        "nesting_2000_deep", deep, "DecodeError", "2000 nested one-element arrays", skip_too=True
    )
    corpus.broken_loose(
        "nesting_2000_deep_in_a_payload",
        b"\x92\xa4deep" + deep,
        "DecodeError",
        "a Loose payload of 2000 nested one-element arrays",
    )
    corpus.broken_loose(
        "timestamp_of_invalid_length",
        b"\x92\xa1t\xc7\x03\xff\x00\x00\x00",
        "DecodeError",
        "a timestamp (ext -1) of 3 bytes: only 4, 8 and 12 are timestamps",
    )
    corpus.broken_loose(
        "timestamp_of_invalid_length_1",
        b"\x92\xa1t\xd4\xff\x00",
        "DecodeError",
        "a timestamp (ext -1) of 1 byte, as fixext1",
    )
    corpus.broken_loose(
        "timestamp64_nanoseconds_over_999999999",
        b"\x92\xa1t\xd7\xff" + b"\xff" * 8,
        "DecodeError",
        "a timestamp64 whose 30-bit nanoseconds field is 1073741823",
        skip_too=True,
    )
    corpus.broken_loose(
        "timestamp96_nanoseconds_over_999999999",
        b"\x92\xa1t\xc7\x0c\xff" + u(1_000_000_000, 4) + u(0, 8),
        "DecodeError",
        "a timestamp96 whose nanoseconds are 1000000000",
    )
    # Type -128 is reserved by the specification, but msgspec hands it over like any other
    # extension type (msgpack's ExtType takes 0..127 only): accepted, as an Ext.
    corpus.accepted_loose(
        "ext_of_a_reserved_negative_type", "e", b"\xd4\x80\x78", Shown(-128, b"x")
    )


def hostile_headers(corpus: Corpus) -> None:
    """Record 3 holds a 32-bit length header claiming 0xffffffff, as its second field."""
    for kind, header in HOSTILE_HEADERS.items():
        corpus.broken_item(
            f"hostile_{kind}_short_tail",
            b"\x98\x01" + header + b"x" * 10,
            "RecordTooLargeError",
            f"a {kind} header claiming 0xffffffff, then 10 bytes and the end of the stream",
        )
        corpus.broken_item(
            f"hostile_{kind}_long_tail",
            b"\x98\x01" + header + b"x" * 5000,
            "RecordTooLargeError",
            f"a {kind} header claiming 0xffffffff, then 5000 bytes (over max_record_size)",
            max_record_size=1000,
            skip_too=True,
        )
    record = pack([*item(6)[:7], "p" * 300])
    corpus.broken_item(
        "record_over_max_record_size",
        record,
        "RecordTooLargeError",
        f"a record of {len(record)} bytes, max_record_size=200",
        max_record_size=200,
        skip_too=True,
    )


def not_records(corpus: Corpus) -> None:
    """Valid MessagePack that is not an Item: RecordError, or skipped with on_error='skip'."""
    values = {
        "top_level_str": ("hello", "a top-level str"),
        "top_level_str_of_8": ("ABCDEFGH", "a top-level str of 8 characters"),
        "top_level_int": (42, "a top-level int"),
        "top_level_negative_int": (-7, "a top-level negative int"),
        "top_level_float": (2.5, "a top-level float"),
        "top_level_nil": (None, "a top-level nil"),
        "top_level_true": (True, "a top-level true"),
        "top_level_bin_of_8": (b"ABCDEFGH", "a top-level bin of 8 bytes"),
        "top_level_map": ({"id": 1}, "a top-level map"),
        "top_level_map_of_8": ({str(k): k for k in range(8)}, "a top-level map of 8 entries"),
        "top_level_map_non_str_keys": ({1: "a", 2: "b"}, "a top-level map with int keys"),
        "top_level_empty_array": ([], "an empty array"),
        "fields_7": (item(6)[:7], "a record of 7 fields"),
        "fields_9": ([*item(6), 9], "a record of 9 fields"),
    }
    for name, (value, description) in values.items():
        corpus.broken_item(name, pack(value), "RecordError", description, skip_too=True)
    validated = {
        "bool_for_int": ([*item(6)[:4], True, *item(6)[5:]], "true as the int field `line`"),
        "bool_for_int_id": ([False, *item(6)[1:]], "false as the int field `id`"),
        "bool_for_float": ([*item(6)[:5], True, *item(6)[6:]], "true as the float field `value`"),
        "str_for_int": ([*item(6)[:4], "104", *item(6)[5:]], "a str as the int field `line`"),
        "nested_arrays": (
            [[1, 2], [3, [4]], 70, 80, 90, 1.5, "f", "p"],
            "arrays nested in the int fields `id` and `process_id`",
        ),
        "nested_map": ([6, {"k": 1}, 70, 80, 90, 1.5, "f", "p"], "a map as `process_id`"),
    }
    for name, (value, description) in validated.items():
        corpus.broken_item(
            name,
            pack(value),
            "RecordError",
            description + "",
            skip_too=True,
        )
    # The bad record deep in the stream, 40 good records in: its offset is still exact.
    ids = list(range(1, 41))
    bad = pack([*item(41)[:4], True, *item(41)[5:]])
    late = corpus.file("bool_for_int_after_40_records", items(ids) + bad + items([42, 43]))
    corpus.case(
        "bool_for_int_after_40_records",
        late,
        "true as `line` in record 40",
        good(ids),
        ("RecordError", 40, len(items(ids))),
    )
    corpus.case(
        "bool_for_int_after_40_records (skip)",
        late,
        "true as `line` in record 40, skipped",
        good([*ids, 42, 43]),
        None,
        on_error="skip",
        skipped_at=[(40, len(items(ids)))],
    )
    corpus.broken_loose(
        "loose_top_level_map_non_str_keys",
        pack({1: "a", (2, 3): "b"}),
        "RecordError",
        "a top-level map with an int and an array key, read as Loose",
        skip_too=True,
    )
    corpus.broken_loose(
        "loose_top_level_str", pack("ab"), "RecordError", "a top-level str of 2 characters"
    )
    corpus.broken_loose(
        "loose_fields_3",
        pack(["k", 1, 2]),
        "RecordError",
        "a Loose record of 3 fields",
        skip_too=True,
    )
    corpus.broken_loose(
        "loose_int_key",
        pack([1, "v"]),
        "RecordError",
        "an int as the str field `key`",
        skip_too=True,
    )


def accepted(corpus: Corpus) -> None:
    """Valid records in unusual shapes and encodings: every one is yielded, with its value."""
    nested = [[1, [2, [3, []]]], [4], []]
    corpus.accepted_loose(
        "loose_nested_arrays", "nested", pack(nested), ((1, (2, (3, ()))), (4,), ())
    )
    depth = 500
    corpus.accepted_loose(
        "loose_nesting_500_deep", "deep", b"\x91" * depth + b"\xc0", nest(None, depth)
    )
    mapping = {1: "one", b"k": 2, None: 3, 2.5: 4, (1, 2): 5, -1: "neg", False: 6}
    corpus.accepted_loose("loose_map_non_str_keys", "m", pack(mapping), mapping)
    extensions = [
        ExtType(5, b"abcd"),  # fixext4
        ExtType(127, b""),  # ext8 of 0 bytes
        ExtType(0, b"\x00" * 16),  # fixext16
        ExtType(42, b"z" * 300),  # ext16
        ExtType(1, b"xyz"),  # ext8
    ]
    corpus.accepted_loose("loose_unknown_ext_types", "ext", pack(extensions), tuple(extensions))
    corpus.accepted_loose(
        "loose_ext32_of_3_bytes",
        "ext32",
        b"\xc9" + u(3, 4) + b"\x07abc",
        ExtType(7, b"abc"),
    )
    stamps = [Timestamp(1, 0), Timestamp(1, 5), Timestamp(2**34 + 1, 5), Timestamp(-1, 500)]
    wire = pack(stamps)
    assert [wire[1], wire[7], wire[17]] == [0xD6, 0xD7, 0xC7]  # timestamp 32, 64 and 96
    corpus.accepted_loose("loose_valid_timestamps", "ts", wire, tuple(stamps))
    non_minimal_payload = (
        b"\xdc" + u(4, 2)  # array16 of 4
        + b"\xc6" + u(2, 4) + b"xy"  # bin32 of 2 bytes
        + b"\xdf" + u(1, 4) + b"\xd9\x01a" + b"\xcf" + u(1, 8)  # map32 {str8 "a": uint64 1}
        + b"\xde" + u(0, 2)  # map16 of 0
        + b"\xca" + struct.pack(">f", -0.5)  # float32
    )  # fmt: skip
    corpus.accepted_loose(
        "loose_non_minimal_encodings", "k", non_minimal_payload, (b"xy", {"a": 1}, {}, -0.5)
    )
    non_minimal_item(corpus)


def nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = (value,)
    return value


def non_minimal_item(corpus: Corpus) -> None:
    """Items whose values use wider encodings than needed: each decodes to its plain value."""
    ts = 1_700_000_000_000_000_061
    first = (
        b"\xdc" + u(8, 2)  # array16 header
        + b"\xcf" + u(61, 8)  # id 61 as uint64
        + b"\xd3" + s(4061, 8)  # process_id as int64
        + b"\xcd" + u(7, 2)  # thread_id as uint16
        + b"\xd3" + s(ts, 8)  # timestamp_ns as int64
        + b"\xd0" + s(-5, 1)  # line -5 as int8 (a negative fixint would do)
        + b"\xca" + struct.pack(">f", 1.5)  # value 1.5 as float32
        + b"\xdb" + u(3, 4) + b"abc"  # filename as str32
        + b"\xda" + u(0, 2)  # path, empty, as str16
    )  # fmt: skip
    second = (
        b"\xdd" + u(8, 4)  # array32 header
        + b"\xcc" + u(62, 1)  # id 62 as uint8
        + b"\xce" + u(4062, 4)  # process_id as uint32
        + b"\xd1" + s(72, 2)  # thread_id as int16
        + b"\xcf" + u(ts + 1, 8)  # timestamp_ns as uint64
        + b"\xd2" + s(-100000, 4)  # line as int32
        + b"\xca" + struct.pack(">f", -2.25)  # value as float32
        + b"\xd9" + u(3, 1) + b"def"  # filename as str8
        + b"\xdb" + u(2, 4) + "\u00e9".encode()  # path "é" as str32
    )  # fmt: skip
    third = (
        b"\x98"
        + b"\xd3" + s(63, 8)  # id as int64
        + b"\xd0" + s(100, 1)  # process_id as int8
        + b"\xd1" + s(73, 2)  # thread_id as int16
        + b"\xcf" + u(ts + 2, 8)
        + b"\x00"
        + b"\xcf" + u(3, 8)  # value: an int where a float is declared (read as 3.0)
        + b"\xd9\x00"  # filename, empty, as str8
        + b"\xa1p"
    )  # fmt: skip
    expected = [
        item_record([61, 4061, 7, ts, -5, 1.5, "abc", ""]),
        item_record([62, 4062, 72, ts + 1, -100000, -2.25, "def", "\u00e9"]),
        item_record([63, 100, 73, ts + 2, 0, 3.0, "", "p"]),
    ]
    file = corpus.file("non_minimal_item_encodings", first + second + third + SUFFIX)
    corpus.case(
        "non_minimal_item_encodings",
        file,
        "Items whose values use wider encodings than needed, accepted with their values",
        expected + good(SUFFIX_IDS),
        None,
    )


def skipping(corpus: Corpus) -> None:
    """Several invalid records among good ones; then invalid records before a truncation."""
    invalid: list[Any] = [
        item(0)[:7],
        [*item(0), 9],
        "hello",
        42,
        {"a": 1},
        [*item(0)[:4], True, *item(0)[5:]],
        [[1], 2, 3, 4, 5, 6.0, "f", "p"],
        1.5,
        None,
    ]
    data = b""
    records: list[Expected] = []
    skipped: list[tuple[int, int]] = []
    ids = list(range(1, len(invalid) + 2))
    for position, n in enumerate(ids):
        data += pack(item(n))
        records += good([n])
        if position < len(invalid):
            skipped.append((len(records) + len(skipped), len(data)))
            data += pack(invalid[position])
    mixed = corpus.file("mixed_invalid_records", data)
    corpus.case(
        "mixed_invalid_records",
        mixed,
        "good items with an invalid record after each of the first nine",
        good(ids[:1]),
        ("RecordError", *skipped[0]),
    )
    corpus.case(
        "mixed_invalid_records (skip)",
        mixed,
        "good items with an invalid record after each of the first nine, skipped",
        records,
        None,
        on_error="skip",
        skipped_at=skipped,
    )
    parts = [pack(item(1)), pack("bad"), pack(item(2)), pack(item(0)[:7]), pack(item(3))]
    head = b"".join(parts)
    at = [sum(map(len, parts[:k])) for k in range(len(parts))]  # where each record starts
    two_skipped = [(1, at[1]), (3, at[3])]
    then_cut = corpus.file("skipped_then_truncated", head + BIG_WIRE[:20])
    corpus.case(
        "skipped_then_truncated (skip)",
        then_cut,
        "two invalid records skipped, then the stream ends inside record 5",
        good([1, 2, 3]),
        ("TruncatedStreamError", 5, len(head)),
        on_error="skip",
        skipped_at=two_skipped,
    )
    corpus.case(
        "skipped_then_truncated",
        then_cut,
        "an invalid record, raised",
        good([1]),
        ("RecordError", 1, at[1]),
    )
    then_c1 = corpus.file("skipped_then_reserved_c1", head + b"\xc1" + pack(item(4)))
    corpus.case(
        "skipped_then_reserved_c1 (skip)",
        then_c1,
        "two invalid records skipped, then 0xc1 as record 5",
        good([1, 2, 3]),
        ("DecodeError", 5, len(head)),
        on_error="skip",
        skipped_at=two_skipped,
    )


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def manifest_text(corpus: Corpus) -> str:
    # One case per line: reviewable, and a change to one case is a one-line diff.
    about = json.dumps("Made by make_corpus.py; see its docstring. Do not edit by hand.")
    cases = ",\n".join("  " + json.dumps(case, ensure_ascii=True) for case in corpus.cases)
    return f'{{\n "about": {about},\n "cases": [\n{cases}\n ]\n}}\n'


def write(directory: Path) -> Corpus:
    """Write every file and the manifest into ``directory``; remove stale ``*.msgpack`` files."""
    corpus = build()
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.msgpack"):
        if stale.name not in corpus.files:
            stale.unlink()
    for name, data in corpus.files.items():
        (directory / name).write_bytes(data)
    (directory / MANIFEST).write_text(manifest_text(corpus), encoding="utf-8")
    return corpus


def main(argv: list[str]) -> int:
    directory = Path(argv[0]) if argv else HERE
    corpus = write(directory)
    size = sum(map(len, corpus.files.values()))
    print(f"{len(corpus.files)} files ({size} bytes), {len(corpus.cases)} cases in {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
