"""The README runs: every ```python block as a script, and every ``msgpack-reader`` example line.
(A block that uses Spark runs in integration/test_spark.py, collected where pyspark is installed,
and always in CI.)

Each example runs in a directory of its own holding the input files examples name, made here by
the project's generator. An example that names an input this module cannot make fails, so a new
example cannot slip in untested.
"""

from __future__ import annotations

import gzip
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import msgpack
import pytest

from msgpack_reader_py import get_iter, pack_items
from tests.reference import REFERENCE_MESSAGES

README = Path(__file__).resolve().parents[1] / "README.md"
ENCODED = Path(__file__).resolve().parents[1] / "tests" / "encoders" / "data"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
INPUT_NAME = re.compile(r"[\w./*-]+\.msgpack(?:\.gz)?\b")
CONNECTION = re.compile(r"create_connection\(\(\"localhost\", (\d+)\)\)")
SUMMARY = re.compile(r"Read (\d+) messages, sum_of_ids is (\d+)")
TIMEOUT = 180


def fenced(language: str) -> list[str]:
    """The README's code blocks in ``language``, in order."""
    text = README.read_text(encoding="utf-8")
    return [body for lang, body in FENCE.findall(text) if lang == language]


def needs_spark(block: str) -> bool:
    """Whether a python block uses Spark (the ``spark`` extra, installed only when asked for)."""
    return "pyspark" in block


def python_blocks() -> list[str]:
    """The README's python blocks this module runs: all but those that use Spark."""
    return [block for block in fenced("python") if not needs_spark(block)]


def cli_examples() -> list[str]:
    return [
        line
        for block in fenced("sh")
        for line in block.splitlines()
        if line.split(" ", 1)[0] == "msgpack-reader"
    ]


def _items(count: int) -> bytes:
    return pack_items(get_iter(count))


def _spans() -> bytes:
    pack = msgpack.Packer().pack
    return b"".join(pack([i, f"span-{i}", None if i % 3 == 0 else i / 4]) for i in range(20))


INPUTS: dict[str, Callable[[], dict[str, bytes]]] = {
    "data.msgpack": lambda: {"data.msgpack": _items(REFERENCE_MESSAGES)},
    "data.msgpack.gz": lambda: {"data.msgpack.gz": gzip.compress(_items(500))},
    "spans.msgpack": lambda: {"spans.msgpack": _spans()},
    "go_items.msgpack": lambda: {
        "go_items.msgpack": (ENCODED / "go_items_untagged.msgpack").read_bytes()
    },
    "go_events.msgpack": lambda: {
        "go_events.msgpack": (ENCODED / "go_events_map.msgpack").read_bytes()
    },
    "fluentd.msgpack": lambda: {"fluentd.msgpack": (ENCODED / "go_fluentd.msgpack").read_bytes()},
    "fluentbit.msgpack": lambda: {
        "fluentbit.msgpack": (ENCODED / "go_fluentbit.msgpack").read_bytes()
    },
    "telemetry.msgpack": lambda: {"telemetry.msgpack": _items(300)},
    "live.msgpack": dict,  # the follow example writes it itself
    "telemetry/*.msgpack": lambda: {
        "telemetry/a.msgpack": _items(200),
        "telemetry/b.msgpack": _items(100),
    },
}
"""The files to make for each input the examples name."""


def make_inputs(text: str, directory: Path) -> None:
    """Create every input ``text`` names in ``directory``; fail on one that cannot be made."""
    for name in sorted(set(INPUT_NAME.findall(text))):
        assert name in INPUTS, f"the README names {name!r}: teach {__name__}.INPUTS to make it"
        for relative, data in INPUTS[name]().items():
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def run_in(
    directory: Path, argv: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``argv`` run in ``directory`` with no input, its output captured as text."""
    return subprocess.run(
        argv,
        cwd=directory,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.fixture
def records_server() -> Iterator[Callable[[int], None]]:
    """Start a local server on a port an example connects to, sending it a few records."""
    servers: list[socket.socket] = []
    threads: list[threading.Thread] = []

    def start(port: int) -> None:
        server = socket.create_server(("localhost", port))
        servers.append(server)

        def serve() -> None:
            connection, _ = server.accept()
            with connection:
                connection.sendall(_items(25))

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        threads.append(thread)

    yield start
    for server in servers:
        server.close()
    for thread in threads:
        thread.join(timeout=TIMEOUT)


def test_the_readme_has_examples_to_run() -> None:
    assert len(python_blocks()) >= 5
    assert len(cli_examples()) >= 8


@pytest.mark.parametrize("number", range(len(python_blocks())))
def test_python_block_runs_as_a_script(
    number: int, tmp_path: Path, records_server: Callable[[int], None]
) -> None:
    """Run as ``python example.py``: names must be defined, and a ``__main__`` guard matters."""
    run_block(python_blocks()[number], number, tmp_path, records_server)


def run_block(
    block: str, number: int, tmp_path: Path, records_server: Callable[[int], None] | None = None
) -> None:
    """``block`` run as ``python example.py`` in ``tmp_path``, with the inputs it names, the
    virtualenv's scripts first on PATH (as ``poetry run`` has them)."""
    make_inputs(block, tmp_path)
    for port in CONNECTION.findall(block):
        assert records_server is not None
        records_server(int(port))
    (tmp_path / "example.py").write_text(block, encoding="utf-8")
    scripts = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": scripts + os.pathsep + os.environ.get("PATH", "")}
    result = run_in(tmp_path, [sys.executable, "example.py"], env=env)
    assert result.returncode == 0, f"README python block {number}:\n{block}\n{result.stderr}"
    if "print(" in block:
        assert result.stdout.strip(), f"README python block {number} printed nothing"


def test_every_cli_example_line_runs(tmp_path: Path) -> None:
    """The command-line examples, in order, in one directory: each succeeds, and a line whose
    comment shows a summary prints that summary."""
    lines = cli_examples()
    make_inputs("\n".join(lines), tmp_path)
    scripts = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": scripts + os.pathsep + os.environ.get("PATH", "")}
    for line in lines:
        result = run_in(tmp_path, ["bash", "-c", line], env=env)
        assert result.returncode == 0, f"{line}\n{result.stderr}"
        assert result.stderr == "", f"{line}\n{result.stderr}"
        shown = SUMMARY.search(line.partition("#")[2])
        if shown is not None:
            printed = SUMMARY.search(result.stdout)
            assert printed is not None, f"{line}\n{result.stdout}"
            assert printed.groups() == shown.groups(), f"{line}\n{result.stdout}"


TIMING = re.compile(r"\d[\d,.]*(?= ?(?:ms|records/s|MB/s))")
"""Figures that change from run to run: a time and the rates it gives."""


def console_sessions() -> list[list[tuple[str, str]]]:
    """Each ```console block: its commands (after ``$ ``), each with the output shown."""
    sessions = []
    for block in fenced("console"):
        commands: list[tuple[str, str]] = []
        for line in block.splitlines(keepends=True):
            if line.startswith("$ "):
                commands.append((line[2:].rstrip("\n"), ""))
            else:
                command, shown = commands[-1]
                commands[-1] = (command, shown + line)
        sessions.append(commands)
    return sessions


def test_console_blocks_print_what_they_show(tmp_path: Path) -> None:
    """The commands of the console blocks, in order, in one directory that holds the
    repository's tests/ (the files the blocks name; a block may use what one before it made):
    what each prints is what the README shows, but for timings. Activating the virtualenv is
    left out: the commands run in it here."""
    (tmp_path / "tests").symlink_to(README.parent / "tests")
    scripts = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": scripts + os.pathsep + os.environ.get("PATH", "")}
    ran = 0
    for session in console_sessions():
        for command, shown in session:
            if command.startswith("source "):
                continue
            result = run_in(tmp_path, ["bash", "-c", command], env=env)
            printed = result.stdout + result.stderr
            assert TIMING.sub("N", printed) == TIMING.sub("N", shown), command
            ran += 1
    assert ran >= 10
