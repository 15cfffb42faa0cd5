"""``msgpack-reader inspect``: each record's index, offset, size and shape, checked against
offsets recorded while packing; ``--at``, ``--start``, ``--limit``, ``--hex``, ``--json``; and
the account of a stream that breaks (cut off, a byte that is not MessagePack, too large,
foreign), with every record before it shown."""

from __future__ import annotations

import argparse
import bisect
import datetime
import gzip
import io
import json
import re
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msgpack_reader_py._split.index import write_index
from msgpack_reader_py._stream import wire
from msgpack_reader_py.cli import main

from .helpers import EXIT_DATA_ERROR, EXIT_USAGE, error_line, examples, fake_stdin, msgpack_values
from .test_cli_help import subcommands

LINE = re.compile(
    r"^record +(?P<index>\d+)  at byte +(?P<offset>\d+)  size +(?P<size>\d+)  (?P<shape>.+)$"
)
END = re.compile(r"^end +at byte +(?P<end>\d+)  \((?P<records>\d+) records?\)$")
EVENT_TIME = msgpack.ExtType(0, b"\x00\x00\x00\x01\x00\x00\x00\x02")
TIMESTAMP = msgpack.Timestamp(1_700_000_000, 5)

# Values of every top-level shape, with what the text line must say of each.
VALUES: list[tuple[Any, str]] = [
    ([1, 2, 3], "array of 3"),
    ({"a": 1, "b": [2]}, "map of 2"),
    (5, "int"),
    (-3, "int"),
    (2**64 - 1, "int"),
    ("hello", "str of 5 bytes"),
    ("é", "str of 2 bytes"),
    (b"\x00" * 300, "bin of 300 bytes"),
    (b"x", "bin of 1 byte"),
    (None, "nil"),
    (True, "bool"),
    (1.5, "float"),
    (msgpack.ExtType(5, b"abc"), "ext 5 of 3 bytes"),
    (TIMESTAMP, "ext -1 of 8 bytes (timestamp)"),
    (EVENT_TIME, "ext 0 of 8 bytes"),
    ("s" * 70_000, "str of 70000 bytes"),
    (list(range(20)), "array of 20"),
]


def pack(values: list[Any]) -> tuple[bytes, list[int]]:
    """The values packed one after another, and the offset of each, then the stream's end,
    recorded as they are packed."""
    pieces = [msgpack.packb(value) for value in values]
    offsets = [0]
    for piece in pieces:
        offsets.append(offsets[-1] + len(piece))
    return b"".join(pieces), offsets


def inspect(
    capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0
) -> tuple[list[str], str]:
    """``msgpack-reader inspect ARGV``: its stdout lines and its stderr, once its exit status
    was checked."""
    assert main(["inspect", *argv]) == status
    out, err = capsys.readouterr()
    assert out.endswith("\n") or out == ""
    if status == 0:
        assert err == ""
    return out.splitlines(), err


def parsed(line: str) -> dict[str, Any]:
    match = LINE.fullmatch(line)
    assert match is not None, line
    fields: dict[str, Any] = match.groupdict()
    return {key: fields[key] if key == "shape" else int(fields[key]) for key in fields}


def write(tmp_path: Path, data: bytes, name: str = "data.msgpack") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.fixture
def mixed(tmp_path: Path) -> tuple[str, list[int]]:
    """A file of ``VALUES``, and their offsets."""
    data, offsets = pack([value for value, _ in VALUES])
    return write(tmp_path, data), offsets


# --- records ---------------------------------------------------------------------------------


def test_a_line_per_record_with_its_offset_size_and_shape(
    capsys: pytest.CaptureFixture[str], mixed: tuple[str, list[int]]
) -> None:
    path, offsets = mixed
    lines, _ = inspect(capsys, path)
    assert len(lines) == len(VALUES) + 1
    for index, (line, (_, shape)) in enumerate(zip(lines, VALUES, strict=False)):
        assert parsed(line) == {
            "index": index,
            "offset": offsets[index],
            "size": offsets[index + 1] - offsets[index],
            "shape": shape,
        }
    end = END.fullmatch(lines[-1])
    assert end is not None, lines[-1]
    assert (int(end["end"]), int(end["records"])) == (offsets[-1], len(VALUES))


def test_the_columns_are_aligned(
    capsys: pytest.CaptureFixture[str], mixed: tuple[str, list[int]]
) -> None:
    lines, _ = inspect(capsys, mixed[0])
    for column in ("at byte", "size"):
        assert len({line.index(column) for line in lines[:-1]}) == 1, column
    assert lines[-1].index("at byte") == lines[0].index("at byte")


def test_json_says_the_same_with_the_format_and_length(
    capsys: pytest.CaptureFixture[str], mixed: tuple[str, list[int]]
) -> None:
    path, offsets = mixed
    lines, _ = inspect(capsys, path, "--json")
    objects = [json.loads(line) for line in lines]
    assert objects[-1] == {"source": path, "end": offsets[-1], "records": len(VALUES)}
    first, timestamp = objects[0], objects[[v for v, _ in VALUES].index(TIMESTAMP)]
    assert first == {
        "source": path,
        "index": 0,
        "offset": 0,
        "size": 4,
        "shape": "array",
        "length": 3,
        "format": "fixarray",
    }
    assert timestamp["shape"] == "ext"
    assert (timestamp["ext_type"], timestamp["length"], timestamp["format"]) == (-1, 8, "fixext 8")
    for index, record in enumerate(objects[:-1]):
        assert (record["index"], record["offset"]) == (index, offsets[index])
        assert record["size"] == offsets[index + 1] - offsets[index]
    assert [record["length"] for record in objects[2:5]] == [None, None, None]


@pytest.mark.parametrize(
    ("value", "format_", "length"),
    [
        (0, "positive fixint", None),
        (-1, "negative fixint", None),
        (200, "uint 8", None),
        (2**16 - 1, "uint 16", None),
        (2**32 - 1, "uint 32", None),
        (2**64 - 1, "uint 64", None),
        (-100, "int 8", None),
        (-(2**15), "int 16", None),
        (-(2**31), "int 32", None),
        (-(2**63), "int 64", None),
        (None, "nil", None),
        (False, "false", None),
        (True, "true", None),
        (2.5, "float 64", None),
        ("a" * 31, "fixstr", 31),
        ("a" * 32, "str 8", 32),
        ("a" * 256, "str 16", 256),
        ("a" * 65536, "str 32", 65536),
        (b"b", "bin 8", 1),
        (b"b" * 256, "bin 16", 256),
        (b"b" * 65536, "bin 32", 65536),
        ([0] * 15, "fixarray", 15),
        ([0] * 16, "array 16", 16),
        ([0] * 65536, "array 32", 65536),
        (dict.fromkeys(range(15), 0), "fixmap", 15),
        (dict.fromkeys(range(16), 0), "map 16", 16),
        (dict.fromkeys(range(65536), 0), "map 32", 65536),
        (msgpack.ExtType(1, b"x"), "fixext 1", 1),
        (msgpack.ExtType(1, b"x" * 2), "fixext 2", 2),
        (msgpack.ExtType(1, b"x" * 4), "fixext 4", 4),
        (msgpack.ExtType(1, b"x" * 8), "fixext 8", 8),
        (msgpack.ExtType(1, b"x" * 16), "fixext 16", 16),
        (msgpack.ExtType(5, b"x" * 3), "ext 8", 3),
        (msgpack.ExtType(1, b"x" * 256), "ext 16", 256),
        (msgpack.ExtType(127, b"x" * 65536), "ext 32", 65536),
    ],
)
def test_every_header_is_named_by_its_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: Any, format_: str, length: int | None
) -> None:
    data = msgpack.packb(value)
    # --force: one value of a few bytes can look like text (int 8 -100 is d0 9c)
    lines, _ = inspect(capsys, write(tmp_path, data), "--json", "--force")
    record = json.loads(lines[0])
    assert (record["format"], record["length"], record["size"]) == (format_, length, len(data))
    if isinstance(value, msgpack.ExtType):
        assert record["ext_type"] == value.code
        assert record["shape"] == "ext"
    else:
        assert "ext_type" not in record


def test_a_negative_extension_type(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, b"\xc7\x03\xfb" + b"abc")  # ext 8: 3 bytes of type -5
    lines, _ = inspect(capsys, path, "--json")
    assert json.loads(lines[0])["ext_type"] == -5
    assert parsed(inspect(capsys, path)[0][0])["shape"] == "ext -5 of 3 bytes"


def test_a_float_32_is_a_float(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = msgpack.packb(0.5, use_single_float=True)
    lines, _ = inspect(capsys, write(tmp_path, data), "--json")
    assert json.loads(lines[0])["format"] == "float 32"
    lines, _ = inspect(capsys, write(tmp_path, data))
    assert parsed(lines[0])["shape"] == "float"


def test_fluentd_names_extension_type_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, msgpack.packb(EVENT_TIME))
    lines, _ = inspect(capsys, path, "--fluentd")
    assert parsed(lines[0])["shape"] == "ext 0 of 8 bytes (EventTime)"


def shape_of(value: Any) -> tuple[str, int | None]:
    """The shape and length a top-level value must be shown with, from the Python value."""
    if isinstance(value, list):
        return "array", len(value)
    if isinstance(value, dict):
        return "map", len(value)
    if isinstance(value, str):
        return "str", len(value.encode("utf-8"))
    if isinstance(value, bytes):
        return "bin", len(value)
    if isinstance(value, msgpack.ExtType):
        return "ext", len(value.data)
    if value is None:
        return "nil", None
    if isinstance(value, bool):
        return "bool", None
    return ("int" if isinstance(value, int) else "float"), None


MSGPACK_VALUES = msgpack_values(size=40, items=5, leaves=12)


@settings(
    max_examples=examples(ci=200, local=40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(values=st.lists(MSGPACK_VALUES, max_size=12), read_size=st.integers(1, 64))
def test_any_stream_shows_each_values_shape_offset_and_size(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, values: list[Any], read_size: int
) -> None:
    data, offsets = pack(values)
    path = write(tmp_path, data)
    capsys.readouterr()
    argv = ["inspect", path, "--json", "--force", "--read-size", str(read_size)]
    assert main(argv) == 0
    objects = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert objects.pop() == {"source": path, "end": len(data), "records": len(values)}
    assert len(objects) == len(values)
    for index, (record, value) in enumerate(zip(objects, values, strict=True)):
        assert (record["index"], record["offset"]) == (index, offsets[index])
        assert record["size"] == offsets[index + 1] - offsets[index]
        assert (record["shape"], record["length"]) == shape_of(value)


# --- where to begin and end ------------------------------------------------------------------


def small_stream() -> tuple[bytes, list[int]]:
    return pack([[1, "a"], 7, {"k": b"v" * 20}, "text", None, [[], {}], 2**40])


def test_at_every_byte_lands_on_the_record_that_holds_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data, offsets = small_stream()
    path = write(tmp_path, data)
    for at in range(len(data)):
        lines, _ = inspect(capsys, path, "--at", str(at), "--limit", "1")
        index = bisect.bisect_right(offsets, at) - 1
        assert len(lines) == 1
        record = parsed(lines[0])
        assert (record["index"], record["offset"]) == (index, offsets[index])
        assert record["offset"] <= at < record["offset"] + record["size"]


def test_at_shows_the_rest_of_the_stream_from_there(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data, offsets = small_stream()
    lines, _ = inspect(capsys, write(tmp_path, data), "--at", str(offsets[3] + 1), "--json")
    objects = [json.loads(line) for line in lines]
    assert [record.get("index") for record in objects] == [3, 4, 5, 6, None]
    assert objects[-1]["end"] == len(data)


def test_at_past_the_end_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data, _ = small_stream()
    path = write(tmp_path, data)
    lines, err = inspect(capsys, path, "--at", str(len(data)), status=EXIT_USAGE)
    assert lines == []
    assert error_line(err) == f"error: {path}: byte {len(data)} is past the end ({len(data)} bytes)"


def test_at_jumps_from_the_nearest_index_entry(
    capsys: pytest.CaptureFixture[str], reference_file: Path, record_offsets: list[int]
) -> None:
    write_index(reference_file, every=100)
    # Damage a record the index lets framing pass by: only a read from the start meets it. The
    # index stays valid: the damage is past the first 64 KiB, and the size is the same.
    damaged = bytearray(reference_file.read_bytes())
    damaged[record_offsets[2000]] = 0xC1
    reference_file.write_bytes(damaged)
    at = record_offsets[5000] + 3
    lines, _ = inspect(capsys, str(reference_file), "--at", str(at), "--limit", "2")
    assert [parsed(line)["offset"] for line in lines] == record_offsets[5000:5002]
    assert [parsed(line)["index"] for line in lines] == [5000, 5001]
    (reference_file.parent / "reference.msgpack.index").unlink()
    lines, err = inspect(capsys, str(reference_file), "--at", str(at), status=EXIT_DATA_ERROR)
    assert f"record 2000 at byte {record_offsets[2000]}: not valid MessagePack" in err


def test_at_past_what_an_index_holds(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data, _ = small_stream()
    path = write(tmp_path, data)
    write_index(path, every=2)
    more, more_offsets = pack(["appended", 1])
    Path(path).write_bytes(data + more)  # grown since indexed: the index holds its start
    at = len(data) + more_offsets[1]
    lines, _ = inspect(capsys, path, "--at", str(at))
    assert parsed(lines[0]) == {"index": 8, "offset": at, "size": 1, "shape": "int"}
    _, err = inspect(capsys, path, "--at", str(len(data) + len(more)), status=EXIT_USAGE)
    assert "is past the end" in error_line(err)


def test_skip_begins_at_a_record(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data, offsets = small_stream()
    path = write(tmp_path, data)
    lines, _ = inspect(capsys, path, "--start", "5")
    assert [parsed(line)["offset"] for line in lines[:-1]] == offsets[5:7]
    assert END.fullmatch(lines[-1]) is not None
    write_index(path, every=2)
    assert inspect(capsys, path, "--start", "5")[0] == lines
    lines, _ = inspect(capsys, path, "--start", "50")
    assert len(lines) == 1
    assert lines[0].startswith("end")


def test_skip_past_the_first_runs(
    capsys: pytest.CaptureFixture[str], reference_path: Path, record_offsets: list[int]
) -> None:
    lines, _ = inspect(capsys, str(reference_path), "--start", "9998", "--read-size", "1000")
    assert [parsed(line)["index"] for line in lines[:-1]] == [9998, 9999]
    assert [parsed(line)["offset"] for line in lines[:-1]] == record_offsets[9998:10000]


def test_at_and_skip_together_are_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, small_stream()[0])
    with pytest.raises(SystemExit) as info:
        main(["inspect", path, "--at", "1", "--start", "1"])
    assert info.value.code == EXIT_USAGE
    assert "not allowed with argument" in error_line(capsys.readouterr().err)


def test_limit_stops_without_an_end_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data, offsets = small_stream()
    path = write(tmp_path, data)
    lines, _ = inspect(capsys, path, "--limit", "3")
    assert [parsed(line)["offset"] for line in lines] == offsets[:3]
    assert inspect(capsys, path, "--limit", "0")[0] == []
    lines, _ = inspect(capsys, path, "--limit", "7")
    assert len(lines) == 7  # all there is, and no end line: --limit stopped it


def test_a_limit_stops_before_a_failure_past_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data, _ = small_stream()
    lines, _ = inspect(capsys, write(tmp_path, data[:-3]), "--limit", "2")
    assert len(lines) == 2


# --- hex -------------------------------------------------------------------------------------


def test_hex_shows_a_records_bytes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    values: list[Any] = [[1, 2], "x" * 100]
    data, offsets = pack(values)
    lines, _ = inspect(capsys, write(tmp_path, data), "--hex")
    assert lines[0].endswith("  92 01 02")
    long = data[offsets[1] : offsets[2]]
    assert lines[1].endswith(f"  {long[:64].hex(' ')} ... (38 bytes more)")
    lines, _ = inspect(capsys, write(tmp_path, data), "--hex", "--json")
    first, second = (json.loads(line) for line in lines[:2])
    assert (first["hex"], first["hex_omitted"]) == ("920102", 0)
    assert (bytes.fromhex(second["hex"]), second["hex_omitted"]) == (long[:64], 38)


def test_hex_of_a_failing_record(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    lines, _ = inspect(
        capsys, write(tmp_path, b"\x01\x93\x01"), "--hex", "--json", status=EXIT_DATA_ERROR
    )
    failure = json.loads(lines[-1])
    assert (failure["hex"], failure["hex_omitted"], failure["available"]) == ("9301", 0, 2)


# --- broken streams --------------------------------------------------------------------------


def test_a_cut_off_stream_shows_every_record_then_what_is_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    values = [[i, f"name-{i}"] for i in range(5)]
    data, offsets = pack(values)
    path = write(tmp_path, data[:-4])
    lines, err = inspect(capsys, path, status=EXIT_DATA_ERROR)
    assert [parsed(line)["offset"] for line in lines[:-1]] == offsets[:4]
    size = offsets[5] - offsets[4]
    # The last value is a str, whose length says exactly how many bytes are missing.
    assert lines[-1] == (
        f"record  4  at byte {offsets[4]}  size {size - 4:>2} of {size}  array of 2  "
        "cut off: 4 bytes missing"
    )
    assert error_line(err) == (
        f"error: {path}: record 4 at byte {offsets[4]}: stream ends inside a record "
        f"({size - 4} bytes of it, need more bytes); the record (array of 2) has "
        f"{size - 4} bytes of {size}: 4 bytes missing"
    )
    lines, _ = inspect(capsys, path, "--json", status=EXIT_DATA_ERROR)
    failure = json.loads(lines[-1])
    assert failure == {
        "source": path,
        "index": 4,
        "offset": offsets[4],
        "error": "TruncatedStreamError",
        "reason": f"stream ends inside a record ({size - 4} bytes of it, need more bytes)",
        "available": size - 4,
        "shape": "array",
        "length": 2,
        "format": "fixarray",
        "needs": size,
        "exact": True,
        "missing": 4,
    }


def test_values_not_there_yet_count_a_byte_each(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # An array of 3 with one element there: at least two more bytes, not exactly.
    lines, err = inspect(capsys, write(tmp_path, b"\x93\x01"), status=EXIT_DATA_ERROR)
    assert lines == [
        "record 0  at byte 0  size 2 of 4+  array of 3  cut off: at least 2 bytes missing"
    ]
    assert error_line(err).endswith(
        "the record (array of 3) has 2 bytes of at least 4: at least 2 bytes missing"
    )


def test_a_stream_cut_inside_a_header(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, b"\x01\xdc\x00")  # array 16, its length cut in two
    lines, err = inspect(capsys, path, status=EXIT_DATA_ERROR)
    assert lines[-1] == "record 1  at byte 1  size 2 of 3+  ?  cut off: at least 1 byte missing"
    assert "the record (its first header cut off) has 2 bytes of at least 3" in error_line(err)
    lines, _ = inspect(capsys, path, "--json", status=EXIT_DATA_ERROR)
    assert "shape" not in json.loads(lines[-1])
    lines, _ = inspect(capsys, write(tmp_path, b"\xd4"), status=EXIT_DATA_ERROR)  # fixext 1
    assert lines == ["record 0  at byte 0  size 1 of 2+  ?  cut off: at least 1 byte missing"]


def test_a_reserved_byte_inside_a_record_is_located(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    values = [[i, i * 2, "abc"] for i in range(6)]
    data, offsets = pack(values)
    damaged = bytearray(data)
    bad = offsets[3] + 2  # the array's second element: a header, not a payload byte
    damaged[bad] = 0xC1
    path = write(tmp_path, bytes(damaged))
    lines, err = inspect(capsys, path, status=EXIT_DATA_ERROR)
    assert [parsed(line)["index"] for line in lines[:-1]] == [0, 1, 2]
    assert lines[-1] == (
        f"record  3  at byte {offsets[3]}  size  ?  array of 3  "
        f"invalid: byte {bad} is 0xc1, never used in MessagePack"
    )
    assert error_line(err) == (
        f"error: {path}: record 3 at byte {offsets[3]}: not valid MessagePack (a reserved byte "
        f"such as 0xc1, never valid); byte {bad} is 0xc1, a byte MessagePack never uses"
    )
    lines, _ = inspect(capsys, path, "--json", status=EXIT_DATA_ERROR)
    failure = json.loads(lines[-1])
    assert (failure["error"], failure["index"], failure["offset"]) == ("DecodeError", 3, offsets[3])
    assert (failure["bad_offset"], failure["bad_byte"]) == (bad, 0xC1)


def test_a_reserved_byte_that_starts_a_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, b"\x01\x02\xc1\x03")
    lines, err = inspect(capsys, path, status=EXIT_DATA_ERROR)
    assert (
        lines[-1]
        == "record 2  at byte 2  size ?  ?  invalid: byte 2 is 0xc1, never used in MessagePack"
    )
    assert "byte 2 is 0xc1" in error_line(err)
    lines, _ = inspect(capsys, path, "--json", status=EXIT_DATA_ERROR)
    assert "shape" not in json.loads(lines[-1])


def test_nesting_too_deep_is_reported_with_the_readers_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, b"\x00" + b"\x91" * 5000 + b"\x00")
    lines, err = inspect(capsys, path, status=EXIT_DATA_ERROR)
    assert lines[-1].endswith("array of 1  error: nesting deeper than the decoder allows")
    assert error_line(err).endswith("record 1 at byte 1: nesting deeper than the decoder allows")


def test_a_record_over_the_limit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data, _ = pack([1, "x" * 40, 2])
    path = write(tmp_path, data)
    lines, err = inspect(capsys, path, "--max-record-size", "10", status=EXIT_DATA_ERROR)
    assert parsed(lines[0])["index"] == 0
    assert lines[1].startswith(
        "record  1  at byte  1  size  ?  str of 40 bytes  error: declares a str of 40 bytes"
    )
    assert "--max-record-size" in lines[1]
    assert "max_record_size" not in lines[1].replace("--max-record-size", "")
    assert error_line(err).startswith(
        f"error: {path}: record 1 at byte 1: declares a str of 40 bytes, over"
    )
    lines, _ = inspect(capsys, path, "--max-record-size", "10", "--json", status=EXIT_DATA_ERROR)
    assert json.loads(lines[-1])["error"] == "RecordTooLargeError"


def test_a_long_walk_is_cut_short(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, b"\x92\x01\xd9\x64" + b"x" * 10)  # [1, a str of 100], cut off
    lines, _ = inspect(capsys, path, status=EXIT_DATA_ERROR)
    assert lines[-1].endswith("size 14 of 104  array of 2  cut off: 90 bytes missing")
    monkeypatch.setattr(wire, "_WALK_LIMIT", 2)  # the str's header is not read
    lines, _ = inspect(capsys, path, status=EXIT_DATA_ERROR)
    assert lines[-1].endswith("size 14 of 15+  array of 2  cut off: at least 1 byte missing")


def test_foreign_input_is_refused_unless_forced(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, b'{"ab":1}\n', "data.json")
    lines, err = inspect(capsys, path, status=EXIT_DATA_ERROR)
    assert lines[-1].startswith("record 0  at byte 0  size ?  int  error: this looks like JSON")
    assert "(--force reads it anyway)" in lines[-1]
    assert "looks like JSON" in error_line(err)
    lines, _ = inspect(capsys, path, "--force")
    assert parsed(lines[0]) == {"index": 0, "offset": 0, "size": 1, "shape": "int"}


def test_a_missing_file_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.msgpack"
    _, err = inspect(capsys, str(missing), status=EXIT_DATA_ERROR)
    assert error_line(err) == f"error: {missing}: No such file or directory"


# --- sources ---------------------------------------------------------------------------------


def test_an_empty_file_ends_at_byte_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, b"")
    lines, _ = inspect(capsys, path)
    assert lines == ["end       at byte 0  (0 records)"]
    _, err = inspect(capsys, path, "--at", "0", status=EXIT_USAGE)
    assert error_line(err) == f"error: {path}: byte 0 is past the end (0 bytes)"


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    data, offsets = small_stream()
    fake_stdin(monkeypatch, io.BytesIO(data))
    lines, _ = inspect(capsys, "-", "--json")
    objects = [json.loads(line) for line in lines]
    assert [record.get("offset") for record in objects[:-1]] == offsets[:-1]
    assert objects[-1] == {"source": "-", "end": len(data), "records": len(offsets) - 1}
    fake_stdin(monkeypatch, io.BytesIO(data[:-2]))
    _, err = inspect(capsys, "-", status=EXIT_DATA_ERROR)
    assert error_line(err).startswith(f"error: <stdin>: record 6 at byte {offsets[6]}: stream ends")


def test_offsets_of_a_compressed_source_are_in_its_decompressed_bytes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data, offsets = small_stream()
    path = write(tmp_path, gzip.compress(data), "data.msgpack.gz")
    lines, _ = inspect(capsys, path, "--at", str(offsets[2]))
    assert [parsed(line)["offset"] for line in lines[:-1]] == offsets[2:-1]
    _, err = inspect(capsys, path, "--at", str(len(data) + 5), status=EXIT_USAGE)
    assert error_line(err) == (
        f"error: {path}: byte {len(data) + 5} is past the end ({len(data)} bytes, decompressed)"
    )
    cut = write(tmp_path, gzip.compress(data[:-3]), "cut.msgpack.gz")
    lines, err = inspect(capsys, cut, status=EXIT_DATA_ERROR)
    assert (
        lines[-1] == f"record  6  at byte {offsets[6]}  size  6 of 9  int  cut off: 3 bytes missing"
    )


def test_a_compressed_stream_that_ends_early(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data, offsets = small_stream()
    compressed = gzip.compress(data)
    path = write(tmp_path, compressed[:-12], "cut.msgpack.gz")  # the trailer and more cut off
    lines, err = inspect(capsys, path, status=EXIT_DATA_ERROR)
    shown = [parsed(line)["offset"] for line in lines[:-1]]
    assert shown == offsets[: len(shown)]
    failing = len(shown)
    assert lines[-1].startswith(f"record {failing:>2}  at byte {offsets[failing]:>2}  size ")
    assert f"record {failing} at byte {offsets[failing]}: the gzip stream ends early" in err


def test_several_sources_are_named_on_each_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = write(tmp_path, msgpack.packb([1]), "a.msgpack")
    second = write(tmp_path, msgpack.packb("xy") + msgpack.packb(None), "b.msgpack")
    lines, _ = inspect(capsys, first, second)
    assert lines == [
        f"{first}: record 0  at byte 0  size 2  array of 1",
        f"{first}: end       at byte 2  (1 record)",
        f"{second}: record 0  at byte 0  size 3  str of 2 bytes",
        f"{second}: record 1  at byte 3  size 1  nil",
        f"{second}: end       at byte 4  (2 records)",
    ]


# --- help ------------------------------------------------------------------------------------


def test_help_lists_the_options_output_and_exit_statuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["inspect", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--at OFFSET", "--start N", "--limit N", "--hex", "--json"):
        assert option in text
    assert "decompressed" in text
    assert "first 64" in text
    output = text.split("output:", 1)[1]
    for key in ("hex_omitted", "bad_offset", "missing", "TruncatedStreamError"):
        assert key in output
    statuses = text.split("exit status:", 1)[1]
    for status in ("0", "1", "2", "130", "141"):
        assert re.search(rf"^ +{status} +\w", statuses, re.MULTILINE), statuses


def test_every_option_says_what_it_does_and_its_default() -> None:
    parser = subcommands()["inspect"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        assert action.help, action.dest
        assert "(default: " in action.help, action.help
        if action.default not in (None, False):
            assert "%(default)s" in action.help, action.dest


def test_inspect_is_listed_among_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert re.search(r"^ +inspect +\w", capsys.readouterr().out, re.MULTILINE)


def test_a_timestamp_from_a_datetime(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    moment = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    path = write(tmp_path, msgpack.packb(moment, datetime=True))
    lines, _ = inspect(capsys, path)
    assert parsed(lines[0])["shape"] == "ext -1 of 4 bytes (timestamp)"
