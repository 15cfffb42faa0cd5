"""The command line over several sources, and ``--skip-invalid`` on input that holds no record."""

from __future__ import annotations

import io
import json
import sys
import types
from pathlib import Path

import msgpack
import pytest

from msgpack_reader_py import Item, get_iter, pack_items
from msgpack_reader_py.cli import main

from .helpers import ITEM, NOT_ITEMS_HINT, error_line

EXIT_DATA_ERROR = 1
EXIT_USAGE = 2
TEXT = b"hello, world: this is not MessagePack\n" * 20


def write(path: Path, items: list[Item]) -> Path:
    path.write_bytes(pack_items(items))
    return path


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path, list[Item], list[Item]]:
    """Two files: ids 0-9, and ids 0-6 of another seed."""
    first, second = list(get_iter(10)), list(get_iter(7, seed=3))
    return (
        write(tmp_path / "a.msgpack", first),
        write(tmp_path / "b.msgpack", second),
        first,
        second,
    )


def test_read_reports_each_source_then_the_total(
    capsys: pytest.CaptureFixture[str], two: tuple[Path, Path, list[Item], list[Item]]
) -> None:
    a, b, _, _ = two
    assert main(["read", str(a), str(b)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"{a}: Read 10 messages, sum_of_ids is 45 in ")
    assert lines[1].startswith(f"{b}: Read 7 messages, sum_of_ids is 21 in ")
    assert lines[2].startswith("total: Read 17 messages, sum_of_ids is 66 in ")
    assert lines[2].endswith(" from 2 sources")


def test_read_json_reports_each_source_then_the_total(
    capsys: pytest.CaptureFixture[str], two: tuple[Path, Path, list[Item], list[Item]]
) -> None:
    a, b, _, _ = two
    assert main(["read", str(a), str(b), "--json"]) == 0
    each_a, each_b, total = map(json.loads, capsys.readouterr().out.splitlines())
    assert (each_a["source"], each_a["records"], each_a["bytes"]) == (str(a), 10, a.stat().st_size)
    assert (each_b["source"], each_b["records"], each_b["sum_of_ids"]) == (str(b), 7, 21)
    assert total["sources"] == [str(a), str(b)]
    assert total["records"] == 17
    assert total["sum_of_ids"] == 66
    assert total["bytes"] == a.stat().st_size + b.stat().st_size
    assert total["seconds"] == pytest.approx(each_a["seconds"] + each_b["seconds"])
    assert total["skipped"] == 0


def test_read_a_file_and_stdin(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    two: tuple[Path, Path, list[Item], list[Item]],
) -> None:
    a, _, _, second = two
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(pack_items(second))))
    assert main(["read", str(a), "-"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("<stdin>: Read 7 messages")
    assert lines[2].startswith("total: Read 17 messages")


def test_stdin_twice_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["read", "-", "-"])
    assert info.value.code == EXIT_USAGE
    assert "stdin (-) can be read only once" in error_line(capsys.readouterr().err)


def test_an_error_in_a_later_source_comes_after_the_earlier_reports(
    capsys: pytest.CaptureFixture[str], two: tuple[Path, Path, list[Item], list[Item]]
) -> None:
    a, b, _, _ = two
    b.write_bytes(b.read_bytes()[:-3])  # cut inside its last record
    assert main(["read", str(a), str(b)]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out.startswith(f"{a}: Read 10 messages")
    assert out.count("\n") == 1
    line = error_line(err)
    assert line.startswith(f"error: {b}: record 6 at byte ")
    assert "stream ends inside a record" in line
    assert line.count(str(b)) == 1  # the source is named once


def test_a_missing_later_source_is_one_error_line(
    capsys: pytest.CaptureFixture[str], two: tuple[Path, Path, list[Item], list[Item]]
) -> None:
    a, b, _, _ = two
    missing = b.parent / "missing.msgpack"
    assert main(["read", str(a), str(missing), str(b)]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out.startswith(f"{a}: Read 10 messages")
    assert error_line(err) == f"error: {missing}: No such file or directory"


def test_dump_concatenates_the_sources(
    capsys: pytest.CaptureFixture[str], two: tuple[Path, Path, list[Item], list[Item]]
) -> None:
    a, b, first, second = two
    assert main(["dump", str(a), str(b), *ITEM]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert [Item(**json.loads(line)) for line in out.splitlines()] == first + second


def test_dump_csv_writes_one_header_for_every_source(
    capsys: pytest.CaptureFixture[str], two: tuple[Path, Path, list[Item], list[Item]]
) -> None:
    a, b, first, second = two
    assert main(["dump", str(a), str(b), *ITEM, "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("id,process_id,")
    assert len(lines) == 1 + len(first) + len(second)
    assert "id,process_id" not in "".join(lines[1:])


@pytest.mark.parametrize("limit", [0, 4, 10, 13, 17, 100])
def test_dump_limit_counts_across_sources(
    capsys: pytest.CaptureFixture[str], two: tuple[Path, Path, list[Item], list[Item]], limit: int
) -> None:
    a, b, first, second = two
    assert main(["dump", str(a), str(b), *ITEM, "--limit", str(limit)]) == 0
    dumped = [Item(**json.loads(line)) for line in capsys.readouterr().out.splitlines()]
    assert dumped == (first + second)[:limit]


def test_dump_error_in_a_later_source_comes_after_the_earlier_records(
    capsys: pytest.CaptureFixture[str], two: tuple[Path, Path, list[Item], list[Item]]
) -> None:
    a, b, first, second = two
    b.write_bytes(pack_items(second[:2]) + msgpack.packb("not an item") + pack_items(second[2:]))
    assert main(["dump", str(a), str(b), *ITEM]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert [Item(**json.loads(line)) for line in out.splitlines()] == first + second[:2]
    line = error_line(err)
    offset = len(pack_items(second[:2]))
    assert line == (
        f"error: {b}: record 2 at byte {offset}: expected an array or a map of 8 fields, "
        f"found str 'not an item'{NOT_ITEMS_HINT}"
    )


# --- --skip-invalid on input with no record of the type ------------------------------------------


@pytest.mark.parametrize("command", [["read"], ["dump"], ["dump", "--format", "csv"]])
def test_skip_invalid_that_finds_no_record_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    text = tmp_path / "notes.txt"
    text.write_bytes(TEXT)
    assert main([*command, str(text), *ITEM, "--skip-invalid"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == (
        "id,process_id,thread_id,timestamp_ns,line,value,filename,path\n"
        if "csv" in command
        else ""
    )
    line = error_line(err)
    assert line.startswith(
        f"error: {text}: no record of type Item found: skipped {len(TEXT)} invalid records; "
        "the first: record 0 at byte 0: expected an array or a map of 8 fields, found int 104"
    )


def test_skip_invalid_over_several_sources_with_no_record_names_them_all(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first, second = tmp_path / "one.txt", tmp_path / "two.txt"
    first.write_bytes(TEXT)
    second.write_bytes(b"[1, 2, 3]\n")
    assert main(["read", str(first), str(second), "--skip-invalid"]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out.startswith(f"{first}: Read 0 messages")  # each source is reported as it ends
    line = error_line(err)
    skipped = len(TEXT) + len(b"[1, 2, 3]\n")
    assert line.startswith(
        f"error: no record of type Item found in {first}, {second}: skipped {skipped} invalid "
        f"records; the first: {first}: record 0 at byte 0: "
    )


def test_skip_invalid_with_a_good_record_succeeds_and_counts_on_stderr(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    two: tuple[Path, Path, list[Item], list[Item]],
) -> None:
    a, _, first, _ = two
    text = tmp_path / "notes.txt"
    text.write_bytes(TEXT)
    assert main(["dump", str(text), str(a), *ITEM, "--skip-invalid"]) == 0
    out, err = capsys.readouterr()
    assert [Item(**json.loads(line)) for line in out.splitlines()] == first
    # dump reports as convert does: one line for the sources together, the first skipped
    # record named by its source.
    assert err.splitlines() == [
        f"2 sources: skipped {len(TEXT)} invalid records; the first: {text}: record 0 at byte 0: "
        + err.split("record 0 at byte 0: ", 1)[1].rstrip("\n")
    ]
    assert "expected an array or a map of 8 fields, found int 104" in err


@pytest.mark.parametrize(
    "command",
    [
        ["dump"],
        ["read", "--type", "any"],
        ["schema"],
        ["convert", "--to", "csv", "-o", "-"],
        ["convert", "--to", "jsonl", "-o", "-"],
    ],
)
@pytest.mark.parametrize("stdin", [False, True], ids=["path", "stdin"])
def test_untyped_commands_refuse_json_and_text_as_typed_reads_do(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: list[str],
    stdin: bool,
) -> None:
    path = tmp_path / "data.json"
    path.write_bytes(b'{"id": 1, "value": 2.5}\n{"id": 2, "value": 3.5}\n')
    if stdin:
        monkeypatch.setattr(
            sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(path.read_bytes()))
        )
    source, name = ("-", "<stdin>") if stdin else (str(path), str(path))
    assert main([*command, source]) == EXIT_DATA_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert error_line(err) == (
        f"error: {name}: record 0 at byte 0: this looks like JSON text, not MessagePack; read "
        "untyped, its bytes would pass for small integers and other values, so it is refused "
        "(--force reads it anyway)"
    )


def test_force_reads_foreign_looking_bytes_untyped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(b"AB")
    assert main(["dump", "--force", str(path)]) == 0
    assert capsys.readouterr().out == "65\n66\n"
    assert main(["read", "--type", "any", "--force", str(path)]) == 0
    assert capsys.readouterr().out.startswith("Read 2 records (2 bytes) in ")
