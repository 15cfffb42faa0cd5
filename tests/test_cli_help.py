"""The command line's help, and its progress bars."""

from __future__ import annotations

import argparse
import hashlib
import io
import re
import sys
from pathlib import Path

import pytest

from msgpack_reader_py._output.progress import ProgressUnavailable, progress_bar
from msgpack_reader_py.cli import build_parser, main
from msgpack_reader_py.cli import generate as cli_generate

from .helpers import Terminal
from .reference import REFERENCE_SHA256

EXIT_STATUSES = ("0", "1", "2", "129", "130", "141", "143")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    actions = build_parser()._subparsers._group_actions  # type: ignore[union-attr]
    (commands,) = actions
    assert isinstance(commands.choices, dict)
    return commands.choices


def help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def test_the_top_level_help_lists_commands_and_exit_statuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_of([], capsys)
    for command in ("read", "dump", "convert", "generate"):
        assert re.search(rf"^ +{command} +\w", text, re.MULTILINE), text
    statuses = text.split("exit status:", 1)[1]
    for status in EXIT_STATUSES:
        assert re.search(rf"^ +{status} +\w", statuses, re.MULTILINE), statuses


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_command_has_a_description_and_lists_the_exit_statuses(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    parser = subcommands()[command]
    assert parser.description is not None
    assert len(parser.description.split()) >= 20, parser.description
    text = help_of([command], capsys)
    assert "exit status:" in text
    assert " 141 " in text


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_option_says_what_it_does_and_its_default(command: str) -> None:
    for action in subcommands()[command]._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        assert action.help, (command, action.dest)
        assert "(default: " in action.help or "(required)" in action.help, (command, action.help)
        if action.default not in (None, False):
            assert "%(default)s" in action.help, (command, action.dest)


def test_defaults_are_shown_with_their_values(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(help_of(["generate"], capsys).split())
    assert "(default: 10000)" in text
    assert "(default: 42)" in text
    assert "(default: auto)" in text


# --- progress bars -------------------------------------------------------------------------------


def test_a_byte_bar_shows_units_on_sizes_and_rates(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress_bar("always", "input.msgpack", 3 * 1024 * 1024, unit="bytes") as update:
        assert update is not None
        update(1000, 1024 * 1024)
        update(3000, 3 * 1024 * 1024)
    drawn = terminal.getvalue()
    assert "input.msgpack: 100%" in drawn
    assert "3.00MB/3.00MB" in drawn, drawn
    assert re.search(r"[0-9.]+[kMG]?B/s", drawn), drawn
    assert "3,000 records" in drawn
    assert "records/s" in drawn
    assert drawn.endswith("\n")  # a finished bar stays, and the next line starts clean


def test_a_byte_bar_of_unknown_size_still_shows_units(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress_bar("always", "<stdin>", None, unit="bytes") as update:
        assert update is not None
        update(10, 2048)
    drawn = terminal.getvalue()
    assert "<stdin>: 2.00kB [" in drawn, drawn
    assert "B/s" in drawn


def test_a_record_bar_counts_records(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress_bar("always", "out.msgpack", 20000, unit="records") as update:
        assert update is not None
        update(20000, 20000)
    drawn = terminal.getvalue()
    assert "20.0k records/20.0k records" in drawn, drawn
    assert "records/s" in drawn


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, ValueError])
def test_an_interrupted_bar_is_wiped(
    monkeypatch: pytest.MonkeyPatch, interruption: type[BaseException]
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)

    def interrupted_job() -> None:
        with progress_bar("always", "input.msgpack", 100, unit="bytes") as update:
            assert update is not None
            update(1, 50)
            raise interruption

    with pytest.raises(interruption):
        interrupted_job()
    drawn = terminal.getvalue()
    # The last thing written blanks the line and returns to its start: what comes next (the
    # shell's prompt, an error line) starts on a clean line.
    assert drawn.endswith("\r"), repr(drawn)
    assert drawn.rsplit("\r", 2)[-2].strip() == "", repr(drawn)


def test_no_bar_when_stderr_is_not_a_terminal_or_never(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_bar("auto", "x", 1, unit="bytes") as update:
        assert update is None
    monkeypatch.setattr(sys, "stderr", Terminal())
    with progress_bar("never", "x", 1, unit="bytes") as update:
        assert update is None


def test_always_without_tqdm_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    with (
        pytest.raises(ProgressUnavailable, match="with its 'arrow' extra"),
        progress_bar("always", "x", 1, unit="records"),
    ):
        pass  # pragma: no cover - never entered


def test_generate_draws_a_record_bar(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(cli_generate, "_GENERATE_CHUNK", 1000)
    path = tmp_path / "out.msgpack"
    assert main(["generate", "--path", str(path), "--progress", "always"]) == 0
    assert capsys.readouterr().out == f"Wrote 10000 messages (559439 bytes) to {path}\n"
    drawn = terminal.getvalue()
    assert f"{path}: 100%" in drawn
    assert "10.0k records/10.0k records" in drawn
    assert hashlib.sha256(path.read_bytes()).hexdigest() == REFERENCE_SHA256


def test_generate_without_tqdm_under_always_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    path = tmp_path / "out.msgpack"
    assert main(["generate", "--path", str(path), "--progress", "always"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: --progress always: a progress bar needs tqdm")
    assert err.count("\n") == 1
    assert not path.exists()


def test_generate_on_a_terminal_draws_no_bar_for_a_quick_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["generate", "--path", str(tmp_path / "out.msgpack"), "--messages", "50"]) == 0
    assert terminal.getvalue() == ""
