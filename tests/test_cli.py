"""The command line, run in-process through ``msgpack_reader_py.cli.main``."""

from __future__ import annotations

import csv
import dataclasses
import errno
import hashlib
import io
import itertools
import json
import os
import re
import sys
import types
from pathlib import Path
from typing import Any, NoReturn

import msgpack
import pytest

import msgpack_reader_py
from msgpack_reader_py import Item, cli, get_iter, pack_items
from msgpack_reader_py.cli import generate as cli_generate
from msgpack_reader_py.cli import main
from msgpack_reader_py.cli import read as cli_read

from .reference import (
    REFERENCE_MESSAGES,
    REFERENCE_SEED,
    REFERENCE_SHA256,
    REFERENCE_SIZE,
    REFERENCE_SUM_OF_IDS,
)

SUMMARY = re.compile(r"^Read (\d+) messages, sum_of_ids is (\d+) in [0-9.]+ ms \([0-9,]+ msg/s\)$")
FIELD_NAMES = [field.name for field in dataclasses.fields(Item)]
# dump and convert read records untyped unless told: tests of Item semantics ask for Items.
ITEM = ["--type", "item"]
# How an error line about a record that is not an Item ends.
NOT_ITEMS_HINT = (
    "; if the stream does not hold Items, look at it with --type any, or get a record type for "
    "it from: msgpack-reader schema SOURCE"
)
EXIT_DATA_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


# --- helpers -------------------------------------------------------------------------------------


def fake_stdin(monkeypatch: pytest.MonkeyPatch, buffer: Any) -> None:
    """Replace ``sys.stdin`` by an object whose ``.buffer`` is ``buffer``."""
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=buffer))


def error_line(err: str) -> str:
    """The single ``error: ...`` line of ``err``; fails unless that is all there is."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert err == lines[0] + "\n"
    assert "Traceback" not in err
    return lines[0]


def item_from_json(line: str) -> Item:
    record = json.loads(line)
    assert list(record) == FIELD_NAMES
    return Item(**record)


def item_from_csv(row: list[str]) -> Item:
    return Item(
        int(row[0]),
        int(row[1]),
        int(row[2]),
        int(row[3]),
        int(row[4]),
        float(row[5]),
        row[6],
        row[7],
    )


def record_sizes(record_offsets: list[int]) -> list[int]:
    return [end - start for start, end in itertools.pairwise(record_offsets)]


def assert_summary(line: str, records: int, sum_of_ids: int) -> None:
    match = SUMMARY.fullmatch(line)
    assert match is not None, line
    assert int(match.group(1)) == records
    assert int(match.group(2)) == sum_of_ids


class BrokenPipeBuffer(io.BytesIO):
    """The binary side of a :class:`BrokenPipeStdout`: its writes count against the same
    ``good_writes``."""

    def __init__(self, stdout: BrokenPipeStdout) -> None:
        super().__init__()
        self._stdout = stdout

    def write(self, data: Any, /) -> int:
        self._stdout.take_a_write(bytes(data))
        return super().write(data)


class BrokenPipeStdout(io.StringIO):
    """A text stdout whose reader goes away after ``good_writes`` writes, to it or to its
    binary ``buffer``; ``writes`` holds what each of those delivered (binary writes as UTF-8
    text)."""

    def __init__(self, good_writes: int = 0) -> None:
        super().__init__()
        self.good_writes = good_writes
        self.writes: list[str] = []
        self._buffer = BrokenPipeBuffer(self)

    @property
    def buffer(self) -> BrokenPipeBuffer:
        return self._buffer

    def take_a_write(self, data: str | bytes) -> None:
        if self.good_writes <= 0:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        self.good_writes -= 1
        self.writes.append(data if isinstance(data, str) else data.decode("utf-8"))

    def write(self, text: str, /) -> int:
        self.take_a_write(text)
        return super().write(text)


class UnflushableStdout(io.StringIO):
    """A stdout whose flush fails as a closed pipe's does."""

    def flush(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


class InterruptedStream(io.RawIOBase):
    """A binary stream that delivers ``data`` and is then interrupted (Ctrl-C) or fails."""

    def __init__(self, data: bytes, exc: BaseException) -> None:
        super().__init__()
        self._data = io.BytesIO(data)
        self._exc = exc

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1, /) -> bytes:
        chunk = self._data.read(size)
        if not chunk:
            raise self._exc
        return chunk


def raise_keyboard_interrupt(*args: object, **kwargs: object) -> NoReturn:
    raise KeyboardInterrupt


def raise_broken_pipe(*args: object, **kwargs: object) -> NoReturn:
    raise BrokenPipeError(errno.EPIPE, "Broken pipe")


# --- the default job -----------------------------------------------------------------------------


def test_no_arguments_reads_the_reference_stream(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == 1
    assert out == lines[0] + "\n"
    assert re.fullmatch(
        r"^Read 10000 messages, sum_of_ids is 49995000 in [0-9.]+ ms \([0-9,]+ msg/s\)$",
        lines[0],
    )
    assert_summary(lines[0], REFERENCE_MESSAGES, REFERENCE_SUM_OF_IDS)


def test_argv_defaults_to_sys_argv(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    monkeypatch.setattr(sys, "argv", ["msgpack-reader", "read", str(reference_file), "--json"])
    assert main() == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out)["records"] == REFERENCE_MESSAGES


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out, err = capsys.readouterr()
    assert out == f"msgpack-reader {msgpack_reader_py.__version__}\n"
    assert err == ""


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out, err = capsys.readouterr()
    assert err == ""
    for command in ("read", "dump", "generate"):
        assert command in out


# --- read ----------------------------------------------------------------------------------------


def test_read_file(capsys: pytest.CaptureFixture[str], reference_file: Path) -> None:
    assert main(["read", str(reference_file)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.count("\n") == 1
    assert_summary(out.rstrip("\n"), REFERENCE_MESSAGES, REFERENCE_SUM_OF_IDS)


def test_read_file_json(capsys: pytest.CaptureFixture[str], reference_file: Path) -> None:
    assert main(["read", str(reference_file), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.count("\n") == 1
    summary = json.loads(out)
    assert summary["source"] == str(reference_file)
    assert summary["records"] == REFERENCE_MESSAGES
    assert summary["sum_of_ids"] == REFERENCE_SUM_OF_IDS
    assert summary["bytes"] == REFERENCE_SIZE
    assert isinstance(summary["seconds"], float)
    assert summary["seconds"] > 0


def test_read_other_stream(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    items = list(get_iter(123, seed=5))
    path = tmp_path / "other.msgpack"
    path.write_bytes(pack_items(items))
    assert main(["read", "--json", str(path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == len(items)
    assert summary["sum_of_ids"] == sum(item.id for item in items)
    assert summary["bytes"] == path.stat().st_size


def test_read_empty_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.msgpack"
    path.write_bytes(b"")
    assert main(["read", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith("Read 0 messages, sum_of_ids is 0 in ")


def test_read_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_bytes: bytes
) -> None:
    fake_stdin(monkeypatch, io.BytesIO(reference_bytes))
    assert main(["read", "-"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert_summary(out.rstrip("\n"), REFERENCE_MESSAGES, REFERENCE_SUM_OF_IDS)


def test_read_stdin_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_bytes: bytes
) -> None:
    fake_stdin(monkeypatch, io.BytesIO(reference_bytes))
    assert main(["read", "-", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["source"] == "-"
    assert summary["records"] == REFERENCE_MESSAGES
    assert summary["sum_of_ids"] == REFERENCE_SUM_OF_IDS
    assert summary["bytes"] == REFERENCE_SIZE


# --- dump ----------------------------------------------------------------------------------------


def test_dump_jsonl(
    capsys: pytest.CaptureFixture[str], reference_file: Path, reference_items: list[Item]
) -> None:
    assert main(["dump", str(reference_file), *ITEM]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.endswith("\n")
    lines = out.splitlines()
    assert len(lines) == REFERENCE_MESSAGES
    assert [item_from_json(line) for line in lines] == reference_items


def test_dump_jsonl_is_the_default_format(
    capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    assert main(["dump", str(reference_file), "--limit", "50"]) == 0
    default = capsys.readouterr().out
    assert main(["dump", str(reference_file), "--limit", "50", "--format", "jsonl"]) == 0
    assert capsys.readouterr().out == default


def test_dump_limit(
    capsys: pytest.CaptureFixture[str], reference_file: Path, reference_items: list[Item]
) -> None:
    assert main(["dump", str(reference_file), *ITEM, "--limit", "3"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == 3
    assert [item_from_json(line) for line in lines] == reference_items[:3]


def test_dump_limit_zero_prints_nothing(
    capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    assert main(["dump", str(reference_file), "--limit", "0"]) == 0
    assert capsys.readouterr() == ("", "")


def test_dump_limit_beyond_the_end(
    capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    assert main(["dump", str(reference_file), "--limit", str(REFERENCE_MESSAGES + 5)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == REFERENCE_MESSAGES


def test_dump_csv(
    capsys: pytest.CaptureFixture[str], reference_file: Path, reference_items: list[Item]
) -> None:
    assert main(["dump", str(reference_file), *ITEM, "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == FIELD_NAMES
    assert len(rows) == REFERENCE_MESSAGES + 1
    assert [item_from_csv(row) for row in rows[1:]] == reference_items
    assert "\r" not in out


def test_dump_csv_limit(
    capsys: pytest.CaptureFixture[str], reference_file: Path, reference_items: list[Item]
) -> None:
    assert main(["dump", str(reference_file), *ITEM, "--format", "csv", "--limit", "2"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == FIELD_NAMES
    assert [item_from_csv(row) for row in rows[1:]] == reference_items[:2]


def test_dump_csv_limit_zero_prints_only_the_header(
    capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    assert main(["dump", str(reference_file), *ITEM, "--format", "csv", "--limit", "0"]) == 0
    assert capsys.readouterr() == (",".join(FIELD_NAMES) + "\n", "")


def test_dump_stdin(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_bytes: bytes,
    reference_items: list[Item],
) -> None:
    fake_stdin(monkeypatch, io.BytesIO(reference_bytes))
    assert main(["dump", "-", *ITEM, "--limit", "10"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert [item_from_json(line) for line in out.splitlines()] == reference_items[:10]


# --- generate ------------------------------------------------------------------------------------


def test_generate_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "generated.msgpack"
    assert main(["generate", "--path", str(path), "--messages", str(REFERENCE_MESSAGES)]) == 0
    data = path.read_bytes()
    assert len(data) == REFERENCE_SIZE
    assert hashlib.sha256(data).hexdigest() == REFERENCE_SHA256
    out, err = capsys.readouterr()
    assert err == ""
    assert out == f"Wrote {REFERENCE_MESSAGES} messages ({REFERENCE_SIZE} bytes) to {path}\n"


def test_generate_defaults_are_the_reference_stream(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "generated.msgpack"
    assert main(["generate", "--path", str(path)]) == 0
    assert hashlib.sha256(path.read_bytes()).hexdigest() == REFERENCE_SHA256
    assert capsys.readouterr().err == ""


def test_generate_seed_and_messages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "generated.msgpack"
    assert main(["generate", "--path", str(path), "--messages", "25", "--seed", "7"]) == 0
    expected = pack_items(get_iter(25, 7))
    assert path.read_bytes() == expected
    assert pack_items(get_iter(25, REFERENCE_SEED)) != expected
    assert capsys.readouterr().out == f"Wrote 25 messages ({len(expected)} bytes) to {path}\n"


def test_generate_zero_messages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.msgpack"
    assert main(["generate", "--path", str(path), "--messages", "0"]) == 0
    assert path.read_bytes() == b""
    assert capsys.readouterr().out == f"Wrote 0 messages (0 bytes) to {path}\n"


def test_generate_stdout(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["generate", "--path", "-", "--messages", str(REFERENCE_MESSAGES)]) == 0
    out, err = capsysbinary.readouterr()
    assert err == b""
    assert len(out) == REFERENCE_SIZE
    assert hashlib.sha256(out).hexdigest() == REFERENCE_SHA256


def test_generate_stdout_seed(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["generate", "--path", "-", "--messages", "5", "--seed", "3"]) == 0
    assert capsysbinary.readouterr() == (pack_items(get_iter(5, 3)), b"")


def test_generate_into_a_missing_directory_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "no-such-directory" / "generated.msgpack"
    assert main(["generate", "--path", str(path)]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err) == f"error: {path}: {os.strerror(errno.ENOENT)}"


# --- reader options ------------------------------------------------------------------------------


def test_read_of_valid_data_passes_validation(
    capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    assert main(["read", str(reference_file), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == REFERENCE_MESSAGES
    assert summary["sum_of_ids"] == REFERENCE_SUM_OF_IDS


def test_dump_of_valid_data_passes_validation(
    capsys: pytest.CaptureFixture[str], reference_file: Path, reference_items: list[Item]
) -> None:
    assert main(["dump", str(reference_file), *ITEM, "--limit", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [item_from_json(line) for line in lines] == reference_items[:5]


# --- map-shaped records -------------------------------------------------------------------------


def as_map(item: Item) -> dict[str, Any]:
    """``item`` as a map keyed by field name, its keys in the reverse of the fields' order."""
    return dict(reversed(list(zip(FIELD_NAMES, item.to_list(), strict=True))))


GOOD_RECORD = next(iter(get_iter(1, seed=5)))


def maps_and_arrays(items: list[Item]) -> bytes:
    """``items`` packed alternately as maps (even indices, with an unknown key) and arrays."""
    return b"".join(
        msgpack.packb({**as_map(item), "host": "unknown keys are ignored"})
        if index % 2 == 0
        else msgpack.packb(item.to_list())
        for index, item in enumerate(items)
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["read", "--json"],
        ["dump"],
        ["dump", "--format", "csv"],
        ["convert", "--to", "jsonl", "-o", "-"],
        ["convert", "--to", "csv", "-o", "-"],
    ],
    ids=" ".join,
)
def test_map_shaped_items_are_read_like_arrays(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_items: list[Item],
    argv: list[str],
) -> None:
    items = reference_items[:50]
    data = maps_and_arrays(items)
    path = tmp_path / "maps.msgpack"
    path.write_bytes(data)
    assert main([argv[0], str(path), *argv[1:], *ITEM]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    if argv[0] == "read":
        summary = json.loads(out)
        assert (summary["records"], summary["bytes"]) == (len(items), len(data))
        assert summary["sum_of_ids"] == sum(item.id for item in items)
    elif "csv" in argv:
        rows = list(csv.reader(io.StringIO(out)))
        assert rows[0] == FIELD_NAMES
        assert [item_from_csv(row) for row in rows[1:]] == items
    else:
        assert [item_from_json(line) for line in out.splitlines()] == items


def test_a_map_missing_a_field_after_maps_is_located(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference_items: list[Item]
) -> None:
    good = maps_and_arrays(reference_items[:3])
    path = tmp_path / "maps.msgpack"
    path.write_bytes(good + msgpack.packb(without(as_map(reference_items[3]), "line")) + good)
    assert main(["dump", str(path), *ITEM]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert [item_from_json(line) for line in out.splitlines()] == reference_items[:3]
    assert error_line(err) == (
        f"error: {path}: record 3 at byte {len(good)}: "
        "field `line` is missing (a map without its key, and no default)" + NOT_ITEMS_HINT
    )


def test_skip_invalid_passes_over_maps_that_are_not_items(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference_items: list[Item]
) -> None:
    first, second, third = reference_items[:3]
    records: list[bytes] = [
        msgpack.packb(as_map(first)),
        msgpack.packb(without(as_map(reference_items[3]), "line")),
        msgpack.packb(second.to_list()),
        msgpack.packb({**as_map(reference_items[4]), "line": "x"}),
        msgpack.packb(as_map(third)),
    ]
    path = tmp_path / "maps.msgpack"
    path.write_bytes(b"".join(records))
    assert main(["dump", str(path), *ITEM, "--skip-invalid"]) == 0
    out, err = capsys.readouterr()
    assert [item_from_json(line) for line in out.splitlines()] == [first, second, third]
    assert err == (
        f"{path}: skipped 2 invalid records; the first: record 1 at byte {len(records[0])}: "
        "field `line` is missing (a map without its key, and no default)\n"
    )


def wrongly_typed_file(
    tmp_path: Path, reference_items: list[Item], index: int, field: str, value: object
) -> Path:
    """The first ``index + 2`` reference records with ``field`` of record ``index`` changed."""
    records: list[list[Any]] = [item.to_list() for item in reference_items[: index + 2]]
    records[index][FIELD_NAMES.index(field)] = value
    path = tmp_path / "wrongly-typed.msgpack"
    path.write_bytes(b"".join(msgpack.packb(record) for record in records))
    return path


def test_dump_rejects_a_wrongly_typed_field(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_items: list[Item],
    record_offsets: list[int],
) -> None:
    path = wrongly_typed_file(tmp_path, reference_items, 3, "line", "not a number")
    assert main(["dump", str(path), *ITEM]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert [item_from_json(line) for line in out.splitlines()] == reference_items[:3]
    line = error_line(err)
    assert line.startswith(f"error: {path}: ")
    assert f"record 3 at byte {record_offsets[3]}" in line
    assert "`line`" in line


def test_read_of_a_non_integer_id_is_an_error_line_not_a_crash(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_items: list[Item],
    record_offsets: list[int],
) -> None:
    # The CLI validates every record: an id it could not add up is a data error, one line.
    path = wrongly_typed_file(tmp_path, reference_items, 3, "id", "three")
    assert main(["read", str(path)]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    line = error_line(err)
    assert line.startswith(f"error: {path}: record 3 at byte {record_offsets[3]}: ")
    assert "field `id` expected int, got str 'three'" in line


def test_dump_of_a_bin_field_is_an_error_line_not_a_crash(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_items: list[Item],
    record_offsets: list[int],
) -> None:
    # A MessagePack bin decodes to bytes, which an Item's str field refuses: a record error.
    path = wrongly_typed_file(tmp_path, reference_items, 3, "filename", b"BINARY01")
    assert main(["dump", str(path), *ITEM]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert [item_from_json(line) for line in out.splitlines()] == reference_items[:3]
    line = error_line(err)
    assert line.startswith(f"error: {path}: record 3 at byte {record_offsets[3]}: ")
    assert "field `filename` expected str, got bytes" in line


def test_max_record_size_large_enough(
    capsys: pytest.CaptureFixture[str], reference_file: Path, record_offsets: list[int]
) -> None:
    largest = max(record_sizes(record_offsets))
    assert main(["read", str(reference_file), "--json", "--max-record-size", str(largest)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out)["records"] == REFERENCE_MESSAGES


def test_max_record_size_smaller_than_a_field(
    capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    # Every record's path is a 15-byte str: a 10-byte limit fails at the first record.
    assert main(["read", str(reference_file), "--max-record-size", "10"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    line = error_line(err)
    assert line.startswith(f"error: {reference_file}: record 0 at byte 0: ")
    assert "over --max-record-size=10; pass a larger --max-record-size" in line


def test_max_record_size_one_byte_too_small(
    capsys: pytest.CaptureFixture[str], reference_file: Path, record_offsets: list[int]
) -> None:
    # ``--max-record-size``: "refuse records larger than this". The first record of the largest
    # size must be refused when the limit is one byte below it.
    sizes = record_sizes(record_offsets)
    limit = max(sizes) - 1
    first_too_large = next(index for index, size in enumerate(sizes) if size > limit)
    argv = ["read", str(reference_file), "--json", "--max-record-size", str(limit)]
    status = main(argv)
    out, err = capsys.readouterr()
    assert (status, out) == (EXIT_DATA_ERROR, "")
    line = error_line(err)
    assert f"record {first_too_large} at byte {record_offsets[first_too_large]}" in line
    assert f"over --max-record-size={limit}; pass a larger --max-record-size" in line


# --- data and I/O errors -------------------------------------------------------------------------


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "missing.msgpack"
    assert main(["read", str(path)]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err) == f"error: {path}: {os.strerror(errno.ENOENT)}"


def test_missing_file_dump(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "missing.msgpack"
    assert main(["dump", str(path), "--format", "csv"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err) == f"error: {path}: {os.strerror(errno.ENOENT)}"


def test_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["read", str(tmp_path)]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err) == f"error: {tmp_path}: {os.strerror(errno.EISDIR)}"


def truncated_file(tmp_path: Path, reference_bytes: bytes) -> Path:
    path = tmp_path / "truncated.msgpack"
    path.write_bytes(reference_bytes[:-10])
    return path


def test_truncated_file_read(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    record_offsets: list[int],
) -> None:
    path = truncated_file(tmp_path, reference_bytes)
    assert main(["read", str(path), "--json"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    line = error_line(err)
    assert line.startswith(f"error: {path}: ")
    assert "record 9999" in line
    assert "byte 559383" in line
    assert f"record {REFERENCE_MESSAGES - 1} at byte {record_offsets[-2]}" in line


def test_truncated_file_dump_writes_the_records_before_the_error(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    reference_items: list[Item],
) -> None:
    path = truncated_file(tmp_path, reference_bytes)
    assert main(["dump", str(path), *ITEM]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert [item_from_json(line) for line in out.splitlines()] == reference_items[:-1]
    line = error_line(err)
    assert line.startswith(f"error: {path}: ")
    assert "record 9999" in line
    assert "byte 559383" in line


def test_truncated_file_dump_csv(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    reference_items: list[Item],
) -> None:
    path = truncated_file(tmp_path, reference_bytes)
    assert main(["dump", str(path), *ITEM, "--format", "csv"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == FIELD_NAMES
    assert [item_from_csv(row) for row in rows[1:]] == reference_items[:-1]
    assert "record 9999" in error_line(err)


def test_truncated_stdin_names_stdin(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_bytes: bytes,
) -> None:
    fake_stdin(monkeypatch, io.BytesIO(reference_bytes[:-10]))
    assert main(["read", "-"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    line = error_line(err)
    assert line.startswith("error: <stdin>: ")
    assert "record 9999" in line
    assert "byte 559383" in line


def test_corrupt_byte(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    reference_items: list[Item],
    record_offsets: list[int],
) -> None:
    data = bytearray(reference_bytes)
    data[record_offsets[5]] = 0xC1  # never valid MessagePack
    path = tmp_path / "corrupt.msgpack"
    path.write_bytes(data)
    assert main(["dump", str(path), *ITEM]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert [item_from_json(line) for line in out.splitlines()] == reference_items[:5]
    line = error_line(err)
    assert line.startswith(f"error: {path}: record 5 at byte {record_offsets[5]}: ")
    assert "not valid MessagePack" in line


def test_corrupt_byte_inside_a_record(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    record_offsets: list[int],
) -> None:
    data = bytearray(reference_bytes)
    data[record_offsets[7] + 2] = 0xC1  # the type byte of the record's second field
    path = tmp_path / "corrupt.msgpack"
    path.write_bytes(data)
    assert main(["read", str(path)]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    line = error_line(err)
    assert f"record 7 at byte {record_offsets[7]}" in line
    assert "not valid MessagePack" in line


def without(record: dict[str, Any], field: str) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key != field}


# value -> the reason the error line gives after "record 3 at byte N: "
NOT_AN_ITEM: dict[str, tuple[object, str]] = {
    "int": (5, "expected an array or a map of 8 fields, found int 5"),
    "str": ("text", "expected an array or a map of 8 fields, found str 'text'"),
    "short-array": (
        [1, 2, 3],
        "expected an array or a map of 8 fields, found an array of 3 values",
    ),
    "long-array": (
        [*GOOD_RECORD.to_list(), 9],
        "expected an array or a map of 8 fields, found an array of 9 values",
    ),
    "map-without-line": (
        without(as_map(GOOD_RECORD), "line"),
        "field `line` is missing (a map without its key, and no default)",
    ),
    "map-with-a-str-line": (
        {**as_map(GOOD_RECORD), "line": "x"},
        "field `line` expected int, got str 'x'",
    ),
    "map-with-a-bool-id": (
        {**as_map(GOOD_RECORD), "id": True},
        "field `id` expected int, got bool True",
    ),
}


@pytest.mark.parametrize("name", list(NOT_AN_ITEM))
def test_a_record_that_is_not_an_item(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_items: list[Item],
    record_offsets: list[int],
    name: str,
) -> None:
    value, reason = NOT_AN_ITEM[name]
    path = tmp_path / "not-a-record.msgpack"
    path.write_bytes(pack_items(reference_items[:3]) + msgpack.packb(value))
    assert main(["dump", str(path), *ITEM]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert [item_from_json(line) for line in out.splitlines()] == reference_items[:3]
    assert error_line(err) == (
        f"error: {path}: record 3 at byte {record_offsets[3]}: {reason}{NOT_ITEMS_HINT}"
    )


def test_stdin_io_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_stdin(monkeypatch, InterruptedStream(b"", OSError(errno.EIO, os.strerror(errno.EIO))))
    assert main(["read", "-"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err) == f"error: <stdin>: {os.strerror(errno.EIO)}"


def test_stdin_io_error_without_strerror(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_bytes: bytes
) -> None:
    fake_stdin(monkeypatch, InterruptedStream(reference_bytes[:1000], OSError("device gone")))
    assert main(["dump", "-"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert len(out.splitlines()) > 0
    assert error_line(err) == "error: <stdin>: device gone"


def test_error_after_a_failed_stdout_flush(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The error line is still written when stdout cannot be flushed (its reader went away).
    monkeypatch.setattr(sys, "stdout", UnflushableStdout())
    assert main(["read", str(tmp_path / "missing.msgpack")]) == EXIT_DATA_ERROR
    assert error_line(capsys.readouterr().err).startswith("error: ")


def test_error_with_a_closed_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stdout", closed)
    assert main(["read", str(tmp_path / "missing.msgpack")]) == EXIT_DATA_ERROR
    assert error_line(capsys.readouterr().err).startswith("error: ")


# --- usage errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["frobnicate"],
        ["--no-such-option"],
        ["read"],
        ["dump"],
        ["generate"],
        ["generate", "--path"],
        ["dump", "FILE", "--limit", "x"],
        ["dump", "FILE", "--limit", "-1"],
        ["dump", "FILE", "--limit=-1"],
        ["dump", "FILE", "--format", "xml"],
        ["read", "FILE", "--max-record-size", "0"],
        ["read", "FILE", "--max-record-size", "big"],
        ["read", "FILE", "--limit", "3"],
        ["generate", "--path", "FILE", "--messages", "-5"],
        ["generate", "--path", "FILE", "--messages", "many"],
        ["generate", "--path", "FILE", "--seed", "1.5"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    line = error_line(err)
    assert "--help" in line


def test_usage_error_names_the_problem(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["frobnicate"])
    assert "frobnicate" in error_line(capsys.readouterr().err)
    with pytest.raises(SystemExit):
        main(["dump", "FILE", "--limit", "x"])
    assert "--limit" in error_line(capsys.readouterr().err)
    with pytest.raises(SystemExit):
        main(["generate"])
    assert "--path" in error_line(capsys.readouterr().err)


def test_usage_error_does_not_touch_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "generated.msgpack"
    with pytest.raises(SystemExit):
        main(["generate", "--path", str(path), "--messages", "-1"])
    assert not path.exists()
    assert capsys.readouterr().out == ""


# --- closed stdout and Ctrl-C --------------------------------------------------------------------


def test_broken_pipe_during_dump(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_file: Path,
    reference_items: list[Item],
) -> None:
    stdout = BrokenPipeStdout(good_writes=3)
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["dump", str(reference_file), *ITEM]) == EXIT_BROKEN_PIPE
    # dump writes a batch of records at a time: the three writes that went through held whole
    # lines, the first records in order, and nothing was written after the pipe closed.
    assert len(stdout.writes) == 3
    assert all(write.endswith("\n") for write in stdout.writes)
    dumped = [item_from_json(line) for line in "".join(stdout.writes).splitlines()]
    assert len(dumped) >= 3
    assert dumped == reference_items[: len(dumped)]
    assert capsys.readouterr().err == ""


def test_broken_pipe_during_dump_csv(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    monkeypatch.setattr(sys, "stdout", BrokenPipeStdout())
    assert main(["dump", str(reference_file), "--format", "csv"]) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""


def test_broken_pipe_during_read(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    monkeypatch.setattr(sys, "stdout", BrokenPipeStdout())
    assert main(["read", str(reference_file)]) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""


def test_broken_pipe_during_default_job(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", BrokenPipeStdout())
    assert main([]) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""


def test_broken_pipe_during_generate_to_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdout = BrokenPipeStdout()
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["generate", "--path", "-"]) == EXIT_BROKEN_PIPE
    assert stdout.buffer.getvalue() == b""
    assert capsys.readouterr().err == ""


def test_broken_pipe_points_stdout_at_devnull(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    # Python flushes stdout again at exit: after a broken pipe, stdout's descriptor must lead
    # to the null device so that flush cannot fail.
    with open(reference_file.parent / "stdout.txt", "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        monkeypatch.setattr(cli_read.Summary, "line", raise_broken_pipe)
        assert main(["read", str(reference_file)]) == EXIT_BROKEN_PIPE
        now = os.fstat(stdout.fileno())
        devnull = os.stat(os.devnull)
        assert (now.st_dev, now.st_ino, now.st_rdev) == (
            devnull.st_dev,
            devnull.st_ino,
            devnull.st_rdev,
        )
    assert capsys.readouterr().err == ""


def test_keyboard_interrupt_during_default_job(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "pack_items", raise_keyboard_interrupt)
    assert main([]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("", "")


def test_keyboard_interrupt_while_reading_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_bytes: bytes
) -> None:
    # Ctrl-C while blocked on stdin, after part of the stream arrived.
    fake_stdin(monkeypatch, InterruptedStream(reference_bytes[:5000], KeyboardInterrupt()))
    assert main(["read", "-"]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("", "")


def test_keyboard_interrupt_during_dump(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_bytes: bytes,
    reference_items: list[Item],
) -> None:
    fake_stdin(monkeypatch, InterruptedStream(reference_bytes[:5000], KeyboardInterrupt()))
    assert main(["dump", "-", *ITEM]) == EXIT_INTERRUPTED
    out, err = capsys.readouterr()
    assert err == ""
    dumped = [item_from_json(line) for line in out.splitlines()]
    assert dumped == reference_items[: len(dumped)]
    assert len(dumped) > 0


def test_keyboard_interrupt_during_generate(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(cli_generate, "write_items", raise_keyboard_interrupt)
    assert main(["generate", "--path", str(tmp_path / "generated.msgpack")]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("", "")
