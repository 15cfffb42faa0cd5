"""The documentation runs: README.md and every page under docs/, page by page.

Each page's examples run in order, in a directory of its own that holds the input files the
page's examples name (made here by the project's generator, once per page) and the
repository's ``tests/`` (the files ``console`` blocks name): every ```python block as a
script, every ``msgpack-reader`` line of an ```sh block (a line whose comment shows a summary
must print it), and every command of a ```console block, whose output must be what the page
shows but for timings. An example may use what an example before it on its page made. An
example that names an input this module cannot make fails, so a new example cannot slip in
untested.
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

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
ENCODED = ROOT / "tests" / "encoders" / "data"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
INPUT_NAME = re.compile(r"[\w./*-]+\.msgpack(?:\.gz)?\b")
CONNECTION = re.compile(r"create_connection\(\(\"localhost\", (\d+)\)\)")
SUMMARY = re.compile(r"Read (\d+) messages, sum_of_ids is (\d+)")
TIMEOUT = 180
RUN = ("python", "sh", "console")
"""The languages of the blocks that run; ```text and unmarked blocks are shown, not run."""


def page_name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(page: Path) -> list[tuple[str, str]]:
    """``page``'s code blocks that run, as (language, body), in order."""
    text = page.read_text(encoding="utf-8")
    return [(lang, body) for lang, body in FENCE.findall(text) if lang in RUN]


def cli_lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.split(" ", 1)[0] == "msgpack-reader"]


def console_commands(block: str) -> list[tuple[str, str]]:
    """A ```console block's commands (after ``$ ``), each with the output shown."""
    commands: list[tuple[str, str]] = []
    for line in block.splitlines(keepends=True):
        if line.startswith("$ "):
            commands.append((line[2:].rstrip("\n"), ""))
        else:
            command, shown = commands[-1]
            commands[-1] = (command, shown + line)
    return commands


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
    "traces.msgpack": lambda: {"traces.msgpack": (ENCODED / "go_spans.msgpack").read_bytes()},
    "fluentd.msgpack": lambda: {"fluentd.msgpack": (ENCODED / "go_fluentd.msgpack").read_bytes()},
    "fluentbit.msgpack": lambda: {
        "fluentbit.msgpack": (ENCODED / "go_fluentbit.msgpack").read_bytes()
    },
    "telemetry.msgpack": lambda: {"telemetry.msgpack": _items(300)},
    "live.msgpack": dict,  # the follow example writes it itself
    "items.msgpack": dict,  # written by the example that reads it
    "readings.msgpack": dict,  # likewise
    "telemetry/*.msgpack": lambda: {
        "telemetry/a.msgpack": _items(200),
        "telemetry/b.msgpack": _items(100),
    },
}
"""The files to make for each input the examples name."""


def make_inputs(page: Path, directory: Path) -> None:
    """Create in ``directory`` every input the examples of ``page`` name; fail on one that
    cannot be made. ``console`` blocks name files of the repository's ``tests/``, which the
    directory links to."""
    text = "\n".join(
        body if lang == "python" else "\n".join(cli_lines(body))
        for lang, body in blocks(page)
        if lang != "console"
    )
    for name in sorted(set(INPUT_NAME.findall(text))):
        assert name in INPUTS, (
            f"{page_name(page)} names {name!r}: teach {__name__}.INPUTS to make it"
        )
        for relative, data in INPUTS[name]().items():
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    (directory / "tests").symlink_to(ROOT / "tests")


def run_in(directory: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` run in ``directory`` with no input, the virtualenv's scripts (``msgpack-reader``)
    first on PATH, its output captured as text."""
    scripts = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": scripts + os.pathsep + os.environ.get("PATH", "")}
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


def run_python(
    number: int, block: str, directory: Path, start_server: Callable[[int], None]
) -> None:
    """Run as ``python example_N.py``: names must be defined, and a ``__main__`` guard
    matters (worker processes import the script again)."""
    for port in CONNECTION.findall(block):
        start_server(int(port))
    script = f"example_{number}.py"
    (directory / script).write_text(block, encoding="utf-8")
    result = run_in(directory, [sys.executable, script])
    assert result.returncode == 0, f"python block {number}:\n{block}\n{result.stderr}"
    if "print(" in block:
        assert result.stdout.strip(), f"python block {number} printed nothing:\n{block}"


def run_sh(block: str, directory: Path) -> None:
    """Each ``msgpack-reader`` line succeeds quietly, and one whose comment shows a summary
    prints that summary."""
    for line in cli_lines(block):
        result = run_in(directory, ["bash", "-c", line])
        assert result.returncode == 0, f"{line}\n{result.stderr}"
        assert result.stderr == "", f"{line}\n{result.stderr}"
        shown = SUMMARY.search(line.partition("#")[2])
        if shown is not None:
            printed = SUMMARY.search(result.stdout)
            assert printed is not None, f"{line}\n{result.stdout}"
            assert printed.groups() == shown.groups(), f"{line}\n{result.stdout}"


TIMING = re.compile(r"\d[\d,.]*(?= ?(?:ms|records/s|MB/s))")
"""Figures that change from run to run: a time and the rates it gives."""


def run_console(block: str, directory: Path) -> None:
    """What each command prints is what the page shows, but for timings. Activating the
    virtualenv is left out: the commands run in it here."""
    for command, shown in console_commands(block):
        if command.startswith("source "):
            continue
        result = run_in(directory, ["bash", "-c", command])
        printed = result.stdout + result.stderr
        assert TIMING.sub("N", printed) == TIMING.sub("N", shown), command


def needs_spark(page: Path) -> bool:
    """Whether ``page``'s examples use Spark (the ``spark`` extra, installed only when asked
    for): integration/test_spark.py runs them, in its own Spark session."""
    return any("pyspark" in body for lang, body in blocks(page) if lang == "python")


RUNNABLE = [page for page in PAGES if blocks(page) and not needs_spark(page)]


def test_the_docs_have_examples_to_run() -> None:
    every = [block for page in PAGES for block in blocks(page)]
    assert sum(lang == "python" for lang, _ in every) >= 20
    assert sum(len(cli_lines(body)) for lang, body in every if lang == "sh") >= 20
    assert sum(len(console_commands(body)) for lang, body in every if lang == "console") >= 10
    # The README keeps one short example; the rest live in the site's pages.
    assert any(lang == "python" for lang, _ in blocks(ROOT / "README.md"))


@pytest.mark.parametrize("page", RUNNABLE, ids=page_name)
def test_every_example_of_the_page_runs(
    page: Path, tmp_path: Path, records_server: Callable[[int], None]
) -> None:
    make_inputs(page, tmp_path)
    python_blocks = 0
    for lang, body in blocks(page):
        if lang == "python":
            run_python(python_blocks, body, tmp_path, records_server)
            python_blocks += 1
        elif lang == "sh":
            run_sh(body, tmp_path)
        else:
            run_console(body, tmp_path)
