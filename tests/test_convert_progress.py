"""``convert``'s progress bar (``--progress never|always|auto``): drawn on stderr only when asked
or when a slow job runs on a terminal, without tqdm one error line or no bar, and the size it
knows for files only.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from tqdm import tqdm

from msgpack_reader_py import Item, get_iter, pack_items
from msgpack_reader_py._output.formats import OutputFormat
from msgpack_reader_py.cli import main

from .helpers import (
    BAR_DELAY,
    EXIT_DATA_ERROR,
    FORMATS,
    ITEM,
    Terminal,
    Trickle,
    as_rows,
    assert_directory_holds,
    data_lines,
    error_line,
    fake_stdin,
    read_back,
    summary,
)
from .reference import REFERENCE_MESSAGES, REFERENCE_SIZE

pytestmark = pytest.mark.usefixtures("short_bar_delay")


# --- the progress bar ----------------------------------------------------------------------------


def test_progress_never_draws_nothing_even_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_bytes: bytes,
    tmp_path: Path,
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    fake_stdin(monkeypatch, Trickle(reference_bytes, 65536, BAR_DELAY / 5))
    out = tmp_path / "out.csv"
    assert main(["convert", "-", *ITEM, "--to", "csv", "-o", str(out), "--progress", "never"]) == 0
    assert terminal.getvalue() == ""
    assert capsys.readouterr() == (summary(REFERENCE_MESSAGES, out, "csv"), "")


@pytest.mark.parametrize("to", FORMATS)
def test_progress_always_draws_the_bar_on_stderr(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    reference_items: list[Item],
    to: OutputFormat,
) -> None:
    out = tmp_path / f"out.{to}"
    argv = ["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]
    assert main([*argv, "--progress", "always"]) == 0
    stdout, err = capsys.readouterr()
    assert stdout == summary(REFERENCE_MESSAGES, out, to)
    assert read_back(out.read_bytes(), to) == as_rows(reference_items)
    size = tqdm.format_sizeof(REFERENCE_SIZE, divisor=1024)
    assert str(reference_path) in err  # the bar's label
    assert f"{size}B/{size}B" in err, err  # bytes read of the file's size, to the end
    assert f"{REFERENCE_MESSAGES:,} records" in err, err
    assert "records/s" in err, err
    assert "Traceback" not in err


def test_progress_always_from_a_pipe_counts_bytes(
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
    reference_bytes: bytes,
) -> None:
    # stdin of unknown size, to stdout: the bar counts bytes without a total.
    fake_stdin(monkeypatch, io.BytesIO(reference_bytes))
    assert main(["convert", "-", *ITEM, "--to", "jsonl", "-o", "-", "--progress", "always"]) == 0
    out, err = capsysbinary.readouterr()
    assert data_lines(out, "jsonl") == REFERENCE_MESSAGES
    text = err.decode()
    assert "<stdin>" in text
    assert f"{tqdm.format_sizeof(REFERENCE_SIZE, divisor=1024)}B" in text, text
    assert f"{REFERENCE_MESSAGES:,} records" in text
    assert "records/s" in text


def test_progress_auto_draws_nothing_when_stderr_is_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference_bytes: bytes
) -> None:
    fake_stdin(monkeypatch, Trickle(reference_bytes, 65536, BAR_DELAY / 5))
    assert main(["convert", "-", *ITEM, "--to", "jsonl", "-o", "-"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert len(out.splitlines()) == REFERENCE_MESSAGES


def test_progress_auto_on_a_terminal_draws_no_bar_for_a_quick_job(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    source = tmp_path / "small.msgpack"
    source.write_bytes(pack_items(get_iter(100)))
    out = tmp_path / "out.csv"
    assert main(["convert", str(source), *ITEM, "--to", "csv", "-o", str(out)]) == 0
    assert terminal.getvalue() == ""
    assert capsys.readouterr().out == summary(100, out, "csv")


def test_progress_auto_on_a_terminal_draws_the_bar_for_a_slow_job(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_bytes: bytes,
    reference_items: list[Item],
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    # Ten reads a fifth of the bar's delay apart: the job lasts about twice the delay.
    fake_stdin(monkeypatch, Trickle(reference_bytes, 65536, BAR_DELAY / 5))
    out = tmp_path / "out.csv"
    assert main(["convert", "-", *ITEM, "--to", "csv", "-o", str(out)]) == 0
    drawn = terminal.getvalue()
    assert "<stdin>" in drawn
    assert f"{REFERENCE_MESSAGES:,} records" in drawn, drawn
    assert "records/s" in drawn
    assert capsys.readouterr().out == summary(REFERENCE_MESSAGES, out, "csv")
    assert read_back(out.read_bytes(), "csv") == as_rows(reference_items)


@pytest.mark.parametrize("to", FORMATS)
def test_progress_always_without_tqdm_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference_path: Path,
    to: OutputFormat,
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    out = tmp_path / f"out.{to}"
    argv = ["convert", str(reference_path), *ITEM, "--to", to, "-o", str(out)]
    assert main([*argv, "--progress", "always"]) == EXIT_DATA_ERROR
    stdout, err = capsys.readouterr()
    assert stdout == ""
    line = error_line(err)
    assert line.startswith("error: --progress")
    assert "tqdm" in line
    assert "with its 'arrow' extra" in line
    assert_directory_holds(tmp_path, set())


def test_progress_auto_without_tqdm_on_a_terminal_just_draws_no_bar(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reference_bytes: bytes,
    reference_items: list[Item],
    tmp_path: Path,
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    fake_stdin(monkeypatch, Trickle(reference_bytes, 65536, BAR_DELAY / 5))
    out = tmp_path / "out.jsonl"
    assert main(["convert", "-", *ITEM, "--to", "jsonl", "-o", str(out)]) == 0
    assert terminal.getvalue() == ""
    assert capsys.readouterr() == (summary(REFERENCE_MESSAGES, out, "jsonl"), "")
    assert read_back(out.read_bytes(), "jsonl") == as_rows(reference_items)
