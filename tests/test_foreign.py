"""Errors name their source, and input that is not MessagePack is named for what it looks like."""

from __future__ import annotations

import codecs
import io
import pickle
from pathlib import Path

import msgpack
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from msgpack_reader_py import (
    DecodeError,
    ReaderError,
    RecordError,
    StreamingReader,
    get_iter,
    pack_items,
)
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py._readers.values import ValueReader
from msgpack_reader_py._stream import compression, sniff

from .helpers import drain

GOOD = pack_items(get_iter(5))
NOT_AN_ITEM = msgpack.packb("not an item")


# --- .source -------------------------------------------------------------------------------------


def test_a_path_names_the_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.msgpack"
    path.write_bytes(GOOD + NOT_AN_ITEM)
    _, error = drain(StreamingReader(path))
    assert error.source == str(path)
    assert str(error).startswith(f"{path}: record 5 at byte {len(GOOD)}: ")
    assert str(error).count(str(path)) == 1


def test_a_named_stream_names_the_errors() -> None:
    stream = io.BytesIO(GOOD + NOT_AN_ITEM)
    stream.name = "<stdin>"
    _, error = drain(StreamingReader(stream))
    assert error.source == "<stdin>"
    assert str(error).startswith("<stdin>: record 5 at byte ")


@pytest.mark.parametrize("source", [GOOD + NOT_AN_ITEM, io.BytesIO(GOOD + NOT_AN_ITEM)])
def test_bytes_and_nameless_streams_leave_it_unset(source: object) -> None:
    _, error = drain(StreamingReader(source))
    assert error.source is None
    assert str(error).startswith("record 5 at byte ")


def test_a_file_descriptor_name_is_not_a_source(tmp_path: Path) -> None:
    path = tmp_path / "bad.msgpack"
    path.write_bytes(GOOD + NOT_AN_ITEM)
    with open(path, "rb") as named, open(named.fileno(), "rb", closefd=False) as by_fd:
        _, error = drain(StreamingReader(by_fd))
    assert error.source is None


def test_skipped_errors_name_their_source_and_pickle(tmp_path: Path) -> None:
    path = tmp_path / "mixed.msgpack"
    path.write_bytes(GOOD + NOT_AN_ITEM + GOOD)
    reader = StreamingReader(path, on_error="skip")
    assert len(list(reader)) == 10
    (error,) = reader.errors
    assert (error.source, error.index, error.offset) == (str(path), 5, len(GOOD))
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.source, str(again)) == (RecordError, str(path), str(error))


# --- foreign input -------------------------------------------------------------------------------


FOREIGN = pytest.mark.parametrize(
    ("data", "phrase"),
    [
        (b'{"id": 1, "value": 2.5}\n', "this looks like JSON text, not MessagePack"),
        (b'\n  [{"id": 1}]', "this looks like JSON text, not MessagePack"),
        (codecs.BOM_UTF8 + b'{"a": 1}', "this looks like JSON text, not MessagePack"),
        (b"hello world\nsecond line\n", "this looks like text, not MessagePack"),
        (b"id,value\n1,2.5\n", "this looks like text, not MessagePack"),
        ("\u00e9t\u00e9 \u2014 caf\u00e9".encode(), "this looks like text, not MessagePack"),
        ("hi there".encode("utf-16"), "this looks like UTF-16 text, not MessagePack"),
        (b"\x04\x22\x4d\x18" + b"\x00" * 20, "an LZ4 frame"),
        (b"PK\x03\x04" + b"\x00" * 20, "a zip archive"),
        (b"7z\xbc\xaf\x27\x1c" + b"\x00" * 20, "a 7z archive"),
        (b"\xff\x06\x00\x00sNaPpY" + b"\x00" * 20, "a snappy framed stream"),
        (b"PAR1" + b"\x00" * 20, "this looks like a Parquet file, not MessagePack"),
        (b"ARROW1\x00\x00" + b"\x00" * 20, "this looks like an Arrow IPC file, not MessagePack"),
    ],
)


@FOREIGN
def test_the_first_records_error_says_what_the_input_looks_like(data: bytes, phrase: str) -> None:
    items, error = drain(StreamingReader(data))
    assert items == []
    assert error.index == 0
    assert error.offset == 0
    assert phrase in str(error)
    assert str(error).endswith(error.reason)


def test_a_later_records_error_gets_no_hint() -> None:
    _, error = drain(StreamingReader(GOOD + b'{"id": 1}'))
    assert error.index == 5
    assert "looks like" not in str(error)


def test_skip_mode_puts_the_hint_on_the_first_error() -> None:
    reader = StreamingReader(b"plain text, many records\n", on_error="skip")
    assert list(reader) == []
    assert "this looks like text, not MessagePack" in reader.errors[0].reason
    assert all("looks like" not in error.reason for error in reader.errors[1:])


@given(st.lists(st.integers(min_value=0, max_value=9999), max_size=30))
def test_valid_streams_never_look_foreign(ids: list[int]) -> None:
    items = list(get_iter(len(ids)))
    data = pack_items(items)
    assert sniff.foreign(data) is None
    assert compression.compression(data) is None


def test_binary_noise_is_not_named() -> None:
    assert sniff.foreign(b"\x00\x01\x02\xc1\xff") is None
    assert sniff.foreign(b"") is None


def test_undecided_only_for_a_proper_prefix_of_a_magic_number() -> None:
    assert compression.undecided(b"\x1f")
    assert compression.undecided(b"\xfd7zX")
    assert not compression.undecided(b"\x1f\x8b\x08")
    assert not compression.undecided(b"\x98")
    assert compression.undecided(b"")  # nothing read yet: wait for the first bytes


def test_reader_errors_are_value_errors() -> None:
    _, error = drain(StreamingReader(b"{}"))
    assert isinstance(error, ReaderError)
    assert isinstance(error, ValueError)


# --- foreign input, read untyped ----------------------------------------------------------------


@FOREIGN
def test_an_untyped_read_refuses_what_looks_foreign(data: bytes, phrase: str) -> None:
    values, error = drain(ValueReader(data))
    assert values == []
    assert isinstance(error, DecodeError)
    assert (error.index, error.offset) == (0, 0)
    assert error.reason.startswith("this looks like ")
    assert phrase in error.reason
    assert error.reason.endswith(
        "; read untyped, its bytes would pass for small integers and other values, so it is "
        "refused (force=True reads it anyway)"
    )
    assert str(error).count("looks like") == 1


def test_force_reads_what_looks_foreign_as_the_values_it_is() -> None:
    assert list(ValueReader(b'{"a":1}', force=True)) == [123, 34, 97, 34, 58, 49, 125]


def test_skip_mode_does_not_pass_over_a_refusal() -> None:
    with pytest.raises(DecodeError, match="looks like text"):
        list(ValueReader(b"plain text, many records\n", on_error="skip"))


def test_an_untyped_conversion_refuses_what_looks_foreign() -> None:
    out = io.BytesIO()
    with pytest.raises(DecodeError, match="this looks like JSON text"):
        convert(b'[{"a": 1}]', out, "jsonl", record_type=None)
    assert out.getvalue() == b""
    assert convert(b'[{"a": 1}]', out, "jsonl", record_type=None, force=True).records == 10


def test_compressed_data_read_as_it_is_is_refused_untyped_saying_why(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "data.msgpack.gz"
    path.write_bytes(gzip.compress(msgpack.packb({"a": 1})))
    assert list(ValueReader(path)) == [{"a": 1}]  # decompressed: MessagePack
    with pytest.raises(DecodeError) as caught:
        next(iter(ValueReader(path, follow=True)))
    assert caught.value.reason.startswith(
        "this looks like gzip-compressed data, not decompressed (a followed file is read as it "
        "is), not MessagePack; read untyped"
    )


@given(
    st.lists(
        st.one_of(
            st.lists(st.integers(-(2**63), 2**64 - 1) | st.text(), max_size=5),
            st.dictionaries(
                st.text(max_size=5), st.integers(-(2**63), 2**64 - 1) | st.text(), max_size=5
            ),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_streams_of_maps_and_arrays_are_never_refused(records: list[object]) -> None:
    data = b"".join(msgpack.packb(r) for r in records)
    assert list(ValueReader(data)) == records


# --- short streams ------------------------------------------------------------------------------

EVIDENCE = 8
"""The fewest bytes, and visible characters of text, that name a stream for something else."""


def test_the_evidence_asked_for() -> None:
    assert sniff.EVIDENCE == EVIDENCE


@pytest.mark.parametrize(
    ("data", "values"),
    [
        (b"\xcc\x80", [128]),  # and, in UTF-8, a combining grave accent
        (b"\xd0\x80", [-128]),  # and a Cyrillic letter
        (b"\xd1\x80\x00", [-32768]),
        (b"\xff\xfe", [-1, -2]),  # and UTF-16's byte order mark
        (b"PK\x03\x04", [80, 75, 3, 4]),  # and a zip archive's magic number
        (b"PAR1", [80, 65, 82, 49]),
        (b'{"a":1}', [123, 34, 97, 34, 58, 49, 125]),  # seven characters of JSON
    ],
)
def test_a_short_valid_stream_is_read_untyped(data: bytes, values: list[int]) -> None:
    assert sniff.foreign(data) is None
    assert list(ValueReader(data)) == values


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-300, 300)  # one and two bytes, many of them valid UTF-8 as well
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(width=32, allow_nan=False)
    | st.text(max_size=3)
    | st.binary(max_size=3)
)
VALUES = SCALARS | st.lists(SCALARS, max_size=2) | st.dictionaries(st.text(max_size=1), SCALARS)


@given(st.lists(VALUES, min_size=1, max_size=EVIDENCE - 1))
def test_short_valid_streams_are_never_refused(values: list[object]) -> None:
    data = b"".join(msgpack.packb(v) for v in values)
    assume(len(data) < EVIDENCE)
    # A stream that starts as bzip2 or xz data does ("BZh9", b"\xfd7zXZ\x00") is read as
    # compressed, which a short stream cannot be: the source's decision, not a refusal.
    assume(compression.compression(data) is None)
    assert sniff.foreign(data) is None
    assert list(ValueReader(data)) == values


@given(st.lists(st.integers(0, 127), min_size=1, max_size=40))
def test_small_integers_are_taken_for_text_only_from_eight_characters(ints: list[int]) -> None:
    data = bytes(ints)  # each a positive fixint: a valid stream, and ASCII
    visible = data.decode().translate(str.maketrans("", "", " \t\n\r\f\v"))
    hint = sniff.foreign(data) or ""
    says_text = hint.endswith(("like text, not MessagePack", "like JSON text, not MessagePack"))
    if says_text:
        assert len(visible) >= EVIDENCE
        assert visible.isprintable()
