"""The command line's commands, run in-process through ``msgpack_reader_py.cli.main``: the default
job, ``read``, ``dump``, ``generate``, map-shaped records and usage errors.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import itertools
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest

import msgpack_reader_py
from msgpack_reader_py import Item, get_iter, pack_items
from msgpack_reader_py.cli import main

from .helpers import (
    EXIT_DATA_ERROR,
    EXIT_USAGE,
    FIELD_NAMES,
    ITEM,
    NOT_ITEMS_HINT,
    error_line,
    fake_stdin,
    item_from_csv,
    item_from_json,
    reversed_map,
    without,
)
from .reference import (
    REFERENCE_MESSAGES,
    REFERENCE_SEED,
    REFERENCE_SHA256,
    REFERENCE_SIZE,
    REFERENCE_SUM_OF_IDS,
)

SUMMARY = re.compile(r"^Read (\d+) messages, sum_of_ids is (\d+) in [0-9.]+ ms \([0-9,]+ msg/s\)$")


def record_sizes(record_offsets: list[int]) -> list[int]:
    return [end - start for start, end in itertools.pairwise(record_offsets)]


def assert_summary(line: str, records: int, sum_of_ids: int) -> None:
    match = SUMMARY.fullmatch(line)
    assert match is not None, line
    assert int(match.group(1)) == records
    assert int(match.group(2)) == sum_of_ids


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


def test_read_of_valid_data_passes_every_check(
    capsys: pytest.CaptureFixture[str], reference_file: Path
) -> None:
    assert main(["read", str(reference_file), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == REFERENCE_MESSAGES
    assert summary["sum_of_ids"] == REFERENCE_SUM_OF_IDS


def test_dump_of_valid_data_passes_every_check(
    capsys: pytest.CaptureFixture[str], reference_file: Path, reference_items: list[Item]
) -> None:
    assert main(["dump", str(reference_file), *ITEM, "--limit", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [item_from_json(line) for line in lines] == reference_items[:5]


# --- map-shaped records -------------------------------------------------------------------------


def maps_and_arrays(items: list[Item]) -> bytes:
    """``items`` packed alternately as maps (even indices, with an unknown key) and arrays."""
    return b"".join(
        msgpack.packb({**reversed_map(item), "host": "unknown keys are ignored"})
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
    path.write_bytes(good + msgpack.packb(without(reversed_map(reference_items[3]), "line")) + good)
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
        msgpack.packb(reversed_map(first)),
        msgpack.packb(without(reversed_map(reference_items[3]), "line")),
        msgpack.packb(second.to_list()),
        msgpack.packb({**reversed_map(reference_items[4]), "line": "x"}),
        msgpack.packb(reversed_map(third)),
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
