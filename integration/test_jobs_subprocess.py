"""--jobs in real processes: a conversion in byte ranges stopped by Ctrl-C, SIGTERM or SIGHUP,
to any format, leaves no output file, no temporary file and no worker process behind, and
workers end with a reader that is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from integration.test_cli_subprocess import MODULE, TIMEOUT
from msgpack_reader_py import generate
from msgpack_reader_py._output.formats import FORMATS
from tests.helpers import ITEM, PREVIOUS, assert_directory_holds, temporaries

RECORDS = 600_000  # enough for a conversion to be under way when it is stopped


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("jobs") / "items.msgpack"
    generate(path, RECORDS)
    return path


def group_ends(group: int) -> bool:
    """Whether every process of ``group`` is gone, within the timeout."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("to", FORMATS)
@pytest.mark.parametrize(
    ("stop", "status"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
    ids=["ctrl-c", "sigterm", "sighup"],
)
def test_a_conversion_in_ranges_stopped_leaves_nothing_behind(
    tmp_path: Path, big: Path, stop: signal.Signals, status: int, to: str
) -> None:
    out = tmp_path / f"out.{to}"
    out.write_bytes(PREVIOUS)
    command = [*MODULE, "convert", str(big), *ITEM, "--to", to, "-o", str(out), "-j", "2"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    ) as process:
        deadline = time.monotonic() + TIMEOUT
        while not temporaries(out):  # under way: its output file is being written
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the conversion never started"
            time.sleep(0.01)
        if stop == signal.SIGINT:
            os.killpg(process.pid, stop)  # Ctrl-C reaches the whole foreground group
        else:
            process.send_signal(stop)  # a TERM or a HUP reaches the reader alone
        out_bytes, err = process.communicate(timeout=TIMEOUT)
    assert (process.returncode, out_bytes, err) == (status, b"", b"")
    assert out.read_bytes() == PREVIOUS
    assert_directory_holds(tmp_path, {out.name})
    assert group_ends(process.pid)


def test_workers_end_with_a_reader_that_is_killed(big: Path) -> None:
    with subprocess.Popen(
        [*MODULE, "read", "-j", "2", str(big)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    ) as process:
        time.sleep(0.5)  # the workers have started
        process.kill()
    assert group_ends(process.pid)
