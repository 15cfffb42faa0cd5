"""The command line in a real process: exit statuses, pipes, signals, the console script."""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from msgpack_reader_py import Item, get_iter, pack_items
from tests.reference import (
    REFERENCE_MESSAGES,
    REFERENCE_SHA256,
    REFERENCE_SIZE,
    REFERENCE_SUM_OF_IDS,
)

MODULE = [sys.executable, "-m", "msgpack_reader_py"]
CONSOLE_SCRIPT = Path(sys.executable).parent / "msgpack-reader"
SUMMARY = re.compile(
    r"^Read 10000 messages, sum_of_ids is 49995000 in [0-9.]+ ms \([0-9,]+ msg/s\)$"
)
TIMEOUT = 60
EXIT_DATA_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def run(*args: str, command: list[str] = MODULE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def assert_one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_main_job() -> None:
    result = run()
    assert result.returncode == 0
    assert result.stderr == ""
    assert result.stdout.count("\n") == 1
    assert SUMMARY.fullmatch(result.stdout.rstrip("\n"))


def test_read_file(reference_file: Path) -> None:
    result = run("read", str(reference_file))
    assert (result.returncode, result.stderr) == (0, "")
    assert SUMMARY.fullmatch(result.stdout.rstrip("\n"))


def test_read_file_json(reference_file: Path) -> None:
    result = run("read", str(reference_file), "--json")
    assert (result.returncode, result.stderr) == (0, "")
    summary = json.loads(result.stdout)
    assert summary["records"] == REFERENCE_MESSAGES
    assert summary["sum_of_ids"] == REFERENCE_SUM_OF_IDS
    assert summary["bytes"] == REFERENCE_SIZE
    assert summary["seconds"] > 0


def test_dump_file(reference_file: Path, reference_items: list[Item]) -> None:
    result = run("dump", str(reference_file), "--limit", "100")
    assert (result.returncode, result.stderr) == (0, "")
    assert [Item(**json.loads(line)) for line in result.stdout.splitlines()] == reference_items[
        :100
    ]


def test_generate_file(tmp_path: Path) -> None:
    path = tmp_path / "generated.msgpack"
    result = run("generate", "--path", str(path), "--messages", "10000", "--seed", "42")
    assert (result.returncode, result.stderr) == (0, "")
    data = path.read_bytes()
    assert len(data) == REFERENCE_SIZE
    assert hashlib.sha256(data).hexdigest() == REFERENCE_SHA256


def test_generate_to_stdout() -> None:
    result = subprocess.run(
        [*MODULE, "generate", "--path", "-"], capture_output=True, timeout=TIMEOUT, check=False
    )
    assert (result.returncode, result.stderr) == (0, b"")
    assert hashlib.sha256(result.stdout).hexdigest() == REFERENCE_SHA256


def test_stdin_from_a_real_pipe() -> None:
    with (
        subprocess.Popen(
            [*MODULE, "generate", "--path", "-"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as producer,
        subprocess.Popen(
            [*MODULE, "read", "-", "--json"],
            stdin=producer.stdout,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as consumer,
    ):
        assert producer.stdout is not None
        producer.stdout.close()  # the consumer holds the only read end now
        out, err = consumer.communicate(timeout=TIMEOUT)
        _, producer_err = producer.communicate(timeout=TIMEOUT)
    assert (producer.returncode, producer_err) == (0, b"")
    assert (consumer.returncode, err) == (0, b"")
    summary = json.loads(out)
    assert summary["source"] == "-"
    assert summary["records"] == REFERENCE_MESSAGES
    assert summary["sum_of_ids"] == REFERENCE_SUM_OF_IDS
    assert summary["bytes"] == REFERENCE_SIZE


def test_dump_from_a_pipe_that_stops_early(reference_items: list[Item]) -> None:
    # ``generate --path - | dump - --limit 5``: dump leaves after 5 records and the producer,
    # with megabytes still to write, meets a closed pipe and must end quietly.
    with (
        subprocess.Popen(
            [*MODULE, "generate", "--path", "-", "--messages", "200000"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as producer,
        subprocess.Popen(
            [*MODULE, "dump", "-", "--limit", "5"],
            stdin=producer.stdout,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as consumer,
    ):
        assert producer.stdout is not None
        producer.stdout.close()
        out, err = consumer.communicate(timeout=TIMEOUT)
        _, producer_err = producer.communicate(timeout=TIMEOUT)
    assert (consumer.returncode, err) == (0, "")
    assert [Item(**json.loads(line)) for line in out.splitlines()] == reference_items[:5]
    assert producer_err == b""
    assert producer.returncode == EXIT_BROKEN_PIPE


def test_closed_stdout_ends_quietly(reference_file: Path, reference_items: list[Item]) -> None:
    # ``dump FILE | head -1``: the JSON Lines output (megabytes) cannot fit in the pipe, so the
    # process is still writing when its reader goes away.
    with subprocess.Popen(
        [*MODULE, "dump", str(reference_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()
        status = process.wait(timeout=TIMEOUT)
        err = process.stderr.read()
    assert Item(**json.loads(first)) == reference_items[0]
    assert err == b""
    assert status == EXIT_BROKEN_PIPE


def pipe_pending(fd: int) -> int:
    """Bytes written into a pipe and not yet read by the other end (Linux FIONREAD)."""
    buffer = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    pending: int = struct.unpack("i", buffer)[0]
    return pending


def test_sigint_while_blocked_on_stdin() -> None:
    with subprocess.Popen(
        [*MODULE, "read", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        # Three records, then nothing: once the process has read them it is running the reader
        # (so Python's SIGINT handler is installed) and blocks on a pipe that never closes.
        process.stdin.write(pack_items(get_iter(3)))
        process.stdin.flush()
        deadline = time.monotonic() + TIMEOUT
        while pipe_pending(process.stdin.fileno()) > 0:
            assert time.monotonic() < deadline, "the process never read its stdin"
            time.sleep(0.01)
        time.sleep(0.1)
        assert process.poll() is None  # still blocked: stdin is open
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=TIMEOUT)
        out = process.stdout.read()
        err = process.stderr.read()
        process.stdin.close()
    assert status == EXIT_INTERRUPTED
    assert b"Traceback" not in err
    assert err == b""
    assert out == b""


def test_truncated_file(tmp_path: Path, reference_bytes: bytes) -> None:
    path = tmp_path / "truncated.msgpack"
    path.write_bytes(reference_bytes[:-10])
    result = run("read", str(path))
    assert result.returncode == EXIT_DATA_ERROR
    assert result.stdout == ""
    line = assert_one_error_line(result.stderr)
    assert str(path) in line
    assert "record 9999" in line
    assert "byte 559383" in line


def test_truncated_file_dump_keeps_the_good_records(
    tmp_path: Path, reference_bytes: bytes, reference_items: list[Item]
) -> None:
    path = tmp_path / "truncated.msgpack"
    path.write_bytes(reference_bytes[:-10])
    result = run("dump", str(path), "--format", "csv")
    assert result.returncode == EXIT_DATA_ERROR
    assert len(result.stdout.splitlines()) == 1 + len(reference_items) - 1
    assert "record 9999" in assert_one_error_line(result.stderr)


def test_corrupt_file(tmp_path: Path, reference_bytes: bytes, record_offsets: list[int]) -> None:
    data = bytearray(reference_bytes)
    data[record_offsets[42]] = 0xC1
    path = tmp_path / "corrupt.msgpack"
    path.write_bytes(data)
    result = run("read", str(path), "--json")
    assert result.returncode == EXIT_DATA_ERROR
    assert result.stdout == ""
    line = assert_one_error_line(result.stderr)
    assert f"record 42 at byte {record_offsets[42]}" in line


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.msgpack"
    result = run("read", str(path))
    assert result.returncode == EXIT_DATA_ERROR
    assert str(path) in assert_one_error_line(result.stderr)


def test_usage_error() -> None:
    result = run("frobnicate")
    assert result.returncode == EXIT_USAGE
    assert result.stdout == ""
    assert "frobnicate" in assert_one_error_line(result.stderr)


def test_console_script(reference_file: Path) -> None:
    assert CONSOLE_SCRIPT.is_file()
    result = run(command=[str(CONSOLE_SCRIPT)])
    assert (result.returncode, result.stderr) == (0, "")
    assert SUMMARY.fullmatch(result.stdout.rstrip("\n"))
    result = run("read", str(reference_file), "--json", command=[str(CONSOLE_SCRIPT)])
    assert (result.returncode, result.stderr) == (0, "")
    assert json.loads(result.stdout)["sum_of_ids"] == REFERENCE_SUM_OF_IDS


def test_console_script_errors(tmp_path: Path) -> None:
    result = run("read", str(tmp_path / "missing.msgpack"), command=[str(CONSOLE_SCRIPT)])
    assert result.returncode == EXIT_DATA_ERROR
    assert_one_error_line(result.stderr)
    result = run("dump", "x", "--limit", "-1", command=[str(CONSOLE_SCRIPT)])
    assert result.returncode == EXIT_USAGE
    assert_one_error_line(result.stderr)


HEAVY = ("pyperf", "matplotlib", "msgspec", "numpy", "hypothesis", "benchmarks")


def test_import_and_help_load_no_bench_or_optional_dependency() -> None:
    probe = (
        "import sys\n"
        "import msgpack_reader_py\n"
        "from msgpack_reader_py.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "print('loaded:', heavy, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    assert "usage: msgpack-reader" in result.stdout
    assert result.stderr.strip() == "loaded: []"
