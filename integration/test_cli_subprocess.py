"""The command line in a real process: exit statuses, pipes, signals, the console script."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest

from msgpack_reader_py import Item, get_iter, pack_items
from tests.helpers import as_map
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
# dump and convert read records untyped unless told: tests of Item semantics ask for Items.
ITEM = ("--type", "item")


def run(*args: str, command: list[str] = MODULE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def after_generate(*args: str) -> tuple[int, bytes, bytes]:
    """``generate --path - | msgpack-reader ARGS``, both ends real pipes: the consumer's exit
    status, stdout and stderr, once the producer is checked to have succeeded quietly."""
    with (
        subprocess.Popen(
            [*MODULE, "generate", "--path", "-"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as producer,
        subprocess.Popen(
            [*MODULE, *args],
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
    return consumer.returncode, out, err


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
    result = run("dump", str(reference_file), *ITEM, "--limit", "100")
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
    returncode, out, err = after_generate("read", "-", "--json")
    assert (returncode, err) == (0, b"")
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
            [*MODULE, "dump", "-", *ITEM, "--limit", "5"],
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
        [*MODULE, "dump", str(reference_file), *ITEM],
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


# Run before the program (a sitecustomize on PYTHONPATH): a Ctrl-C, TERM or HUP as it lands
# while the command line is imported, before the command can have set a handler of its own.
INTERRUPTED_WHILE_STARTING = """
import os, signal, sys

class Interrupting:
    def find_spec(self, name, path=None, target=None):
        if name == "msgpack_reader_py.cli":
            os.kill(os.getpid(), int(os.environ["STOP_WITH"]))
        return None

sys.meta_path.insert(0, Interrupting())
"""


@pytest.mark.parametrize(
    "command", [MODULE, [str(CONSOLE_SCRIPT)]], ids=["module", "console-script"]
)
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("ignored", [False, True], ids=["handled", "ignored"])
def test_a_stop_while_the_command_line_starts_ends_it_quietly(
    tmp_path: Path, command: list[str], stop: signal.Signals, ignored: bool
) -> None:
    """Stopped while it imports, the command does nothing and exits with its status for the
    signal (130, 143, 129), no traceback; where the signal is ignored (nohup, started in the
    background), it runs."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(INTERRUPTED_WHILE_STARTING)
    source, out = tmp_path / "in.msgpack", tmp_path / "out.csv"
    source.write_bytes(GOOD)
    paths = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    result = subprocess.run(
        [*command, "convert", str(source), *ITEM, "--to", "csv", "-o", str(out)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths), "STOP_WITH": str(int(stop))},
        preexec_fn=(lambda: signal.signal(stop, signal.SIG_IGN)) if ignored else None,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    if ignored:
        assert (result.returncode, result.stderr) == (0, "")
        assert len(out.read_text().splitlines()) == 1 + len(GOOD_ITEMS)
    else:
        assert (result.returncode, result.stdout, result.stderr) == (128 + stop, "", "")
        assert not out.exists()


# A Ctrl-C that lands in code exec() runs from a string, as a dataclass's methods are made,
# once the command runs (its handler is set): here as `random`, which generate imports, is.
INTERRUPTED_IN_EXEC = """
import signal, sys

class Interrupting:
    def find_spec(self, name, path=None, target=None):
        if name == "random" and signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            exec("signal.raise_signal(signal.SIGINT)\\nfor _ in range(9): pass")
        return None

sys.meta_path.insert(0, Interrupting())
"""


def test_ctrl_c_in_code_run_from_a_string_exits_130_not_by_the_signal(tmp_path: Path) -> None:
    """CPython ends a `python -m` program by SIGINT once a KeyboardInterrupt has left code
    exec() ran from a string, whatever status it returns: the command returns 130 still."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(INTERRUPTED_IN_EXEC)
    out = tmp_path / "out.msgpack"
    paths = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    result = subprocess.run(
        [*MODULE, "generate", "--path", str(out)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (EXIT_INTERRUPTED, "", "")
    assert not out.exists()


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


# msgspec is not here: it is a core dependency, which decodes every record.
HEAVY = (
    *("pyperf", "matplotlib", "numpy", "hypothesis", "benchmarks"),
    *("pyarrow", "tqdm", "pandas", "dask", "distributed", "fsspec", "zstandard", "duckdb"),
)


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


def test_the_package_imports_nothing_until_a_name_is_used() -> None:
    """``import msgpack_reader_py``, which the command line runs before it can handle a
    Ctrl-C, loads only its version; every public name is there once it is used."""
    probe = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "import msgpack_reader_py as package\n"
        "loaded = sorted(set(sys.modules) - before)\n"
        "absent = [name for name in package.__all__ if not hasattr(package, name)]\n"
        "print(json.dumps([loaded, absent, sorted(set(package.__all__) - set(dir(package)))]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    loaded, absent, undisclosed = json.loads(result.stdout)
    ours = [f"msgpack_reader_py{name}" for name in ("", "._base", "._base.version")]
    assert loaded == ["__future__", *ours]
    assert (absent, undisclosed) == ([], [])


# --- failure paths, each in a real process --------------------------------------------------

NOBODY = 65534  # the unprivileged user a root test run drops to
GOOD_ITEMS = list(get_iter(3, seed=11))
GOOD = pack_items(GOOD_ITEMS)
BAD_AT = len(GOOD)  # the failing record is record 3, at this byte
DEFAULT_LIMIT = 100 * 1024 * 1024


def without_line(item: Item) -> dict[str, Any]:
    return {field: value for field, value in as_map(item).items() if field != "line"}


# name -> (the file's bytes, what the error line says after "error: <path>: ")
DATA_FAILURES: dict[str, tuple[bytes, str]] = {
    "truncated": (
        GOOD + pack_items(get_iter(1))[:-3],
        f"record 3 at byte {BAD_AT}: stream ends inside a record",
    ),
    "corrupt": (
        GOOD + b"\xc1" + GOOD,
        f"record 3 at byte {BAD_AT}: not valid MessagePack",
    ),
    "hostile str32 header": (
        GOOD + b"\x98\x01\xdb\xff\xff\xff\xff" + b"x" * 10,
        f"record 3 at byte {BAD_AT}: declares a str of 4294967295 bytes, "
        f"over --max-record-size={DEFAULT_LIMIT}; pass a larger --max-record-size to read it",
    ),
    "not an item": (
        GOOD + msgpack.packb("ABCDEFGH") + GOOD,
        f"record 3 at byte {BAD_AT}: expected an array or a map of 8 fields, found str 'ABCDEFGH'",
    ),
    "a map without line": (
        GOOD + msgpack.packb(without_line(GOOD_ITEMS[0])) + GOOD,
        f"record 3 at byte {BAD_AT}: "
        "field `line` is missing (a map without its key, and no default)",
    ),
}


def assert_failed_with(result: subprocess.CompletedProcess[str], expected: str) -> None:
    """Status 1 and one stderr line, ``error: `` then ``expected`` (a prefix of the rest)."""
    assert result.returncode == EXIT_DATA_ERROR, result.stderr
    line = assert_one_error_line(result.stderr)
    assert line.startswith(f"error: {expected}"), line


def dumped(stdout: str) -> list[Item]:
    return [Item(**json.loads(line)) for line in stdout.splitlines()]


@pytest.mark.parametrize("command", ["read", "dump"])
@pytest.mark.parametrize("name", list(DATA_FAILURES))
def test_broken_file_is_one_error_line_with_the_record_and_byte(
    tmp_path: Path, name: str, command: str
) -> None:
    data, message = DATA_FAILURES[name]
    path = tmp_path / "broken.msgpack"
    path.write_bytes(data)
    result = run(command, str(path), *ITEM)
    assert_failed_with(result, f"{path}: {message}")
    # Records before the broken one stay written by dump; read prints no summary.
    assert dumped(result.stdout) == (GOOD_ITEMS if command == "dump" else [])


@pytest.mark.parametrize("command", ["read", "dump"])
def test_map_shaped_items_are_read(tmp_path: Path, command: str) -> None:
    path = tmp_path / "maps.msgpack"
    path.write_bytes(b"".join(msgpack.packb(as_map(item)) for item in GOOD_ITEMS) + GOOD)
    extra = ["--json"] if command == "read" else []
    result = run(command, str(path), *ITEM, *extra)
    assert (result.returncode, result.stderr) == (0, "")
    if command == "dump":
        assert dumped(result.stdout) == GOOD_ITEMS + GOOD_ITEMS
    else:
        summary = json.loads(result.stdout)
        assert summary["records"] == 2 * len(GOOD_ITEMS)
        assert summary["sum_of_ids"] == 2 * sum(item.id for item in GOOD_ITEMS)


def test_broken_stdin_names_stdin() -> None:
    data, message = DATA_FAILURES["hostile str32 header"]
    result = subprocess.run(
        [*MODULE, "read", "-", "--json"],
        input=data,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    text = subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )
    assert_failed_with(text, f"<stdin>: {message}")
    assert text.stdout == ""


@pytest.mark.parametrize("command", ["read", "dump"])
def test_hostile_header_with_a_long_tail_and_a_small_limit(tmp_path: Path, command: str) -> None:
    path = tmp_path / "hostile.msgpack"
    path.write_bytes(GOOD + b"\x98\x01\xdb\xff\xff\xff\xff" + b"x" * 200_000)
    result = run(command, str(path), *ITEM, "--max-record-size", "1000")
    assert_failed_with(result, f"{path}: record 3 at byte {BAD_AT}: ")
    line = result.stderr.rstrip("\n")
    assert "over --max-record-size=1000; pass a larger --max-record-size" in line
    assert line.endswith("; pass a larger --max-record-size to read it")
    assert dumped(result.stdout) == (GOOD_ITEMS if command == "dump" else [])


@pytest.mark.parametrize("command", ["read", "dump"])
def test_missing_file_is_one_error_line(tmp_path: Path, command: str) -> None:
    path = tmp_path / "missing.msgpack"
    result = run(command, str(path), *ITEM)
    assert_failed_with(result, f"{path}: No such file or directory")
    assert result.stderr == f"error: {path}: No such file or directory\n"
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["read", "dump"])
def test_directory_is_one_error_line(tmp_path: Path, command: str) -> None:
    result = run(command, str(tmp_path))
    assert result.stderr == f"error: {tmp_path}: Is a directory\n"
    assert_failed_with(result, f"{tmp_path}: Is a directory")
    assert result.stdout == ""


# Run the CLI as an unprivileged user. root reads any file whatever its mode, so a root test
# run drops to NOBODY; it does so inside the child once the interpreter has started, because
# the interpreter and its standard library (under /root here) may be out of that user's reach,
# which rules out a preexec_fn. Parsing the arguments once first loads what argparse imports
# lazily, and the conversion's modules, which the commands import only when they convert (a
# clone of the project may be out of that user's reach too). A non-root run stays who it is:
# a mode that denies it is enough.
AS_UNPRIVILEGED = (
    "import os, sys\n"
    "import msgpack_reader_py._output.convert, msgpack_reader_py._output.query\n"
    "from msgpack_reader_py.cli import build_parser, main\n"
    "build_parser().parse_args(sys.argv[1:])\n"
    "if os.geteuid() == 0:\n"
    "    os.setgroups([])\n"
    f"    os.setgid({NOBODY})\n"
    f"    os.setuid({NOBODY})\n"
    "if os.geteuid() == 0:\n"
    "    sys.exit(99)\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def run_unprivileged(*args: str) -> subprocess.CompletedProcess[str]:
    return run(*args, command=[sys.executable, "-c", AS_UNPRIVILEGED])


@pytest.mark.parametrize("where", ["file of mode 000", "file in a directory of mode 000"])
@pytest.mark.parametrize("command", ["read", "dump"])
def test_unreadable_file_is_one_error_line(shared_dir: Path, where: str, command: str) -> None:
    readable = shared_dir / "readable.msgpack"
    readable.write_bytes(GOOD)
    readable.chmod(0o644)
    if where == "file of mode 000":
        denied = shared_dir / "denied.msgpack"
        denied.write_bytes(GOOD)
        denied.chmod(0o000)
    else:
        locked = shared_dir / "locked"
        locked.mkdir()
        denied = locked / "inside.msgpack"
        denied.write_bytes(GOOD)
        denied.chmod(0o644)
        locked.chmod(0o000)
    if os.geteuid() != 0:
        assert not os.access(denied, os.R_OK)  # the test means something for this user

    # The control: the same user, the same data, a mode that allows it, reads every record.
    control = run_unprivileged(command, str(readable), *ITEM)
    assert (control.returncode, control.stderr) == (0, "")
    if command == "dump":
        assert dumped(control.stdout) == GOOD_ITEMS
    else:
        assert control.stdout.startswith("Read 3 messages")

    result = run_unprivileged(command, str(denied), *ITEM)
    assert result.stderr == f"error: {denied}: Permission denied\n"
    assert_failed_with(result, f"{denied}: Permission denied")
    assert result.stdout == ""


INVALID_RECORDS: list[object] = [
    [1, 2, 3, 4, 5, 6.0, "seven fields"],
    "ABCDEFGH",
    [*GOOD_ITEMS[0].to_list()[:4], True, *GOOD_ITEMS[0].to_list()[5:]],
]


FIRST_INVALID = "expected an array or a map of 8 fields, found an array of 7 values"


def with_invalid_records() -> tuple[bytes, int]:
    """GOOD's records with an invalid one after each; and where the first invalid one starts."""
    data = b""
    first = -1
    for item, invalid in zip(GOOD_ITEMS, INVALID_RECORDS, strict=True):
        data += pack_items([item])
        first = len(data) if first < 0 else first
        data += msgpack.packb(invalid)
    return data, first


@pytest.mark.parametrize("command", ["read", "dump"])
def test_skip_invalid_reads_the_good_records_and_reports_the_skipped_count(
    tmp_path: Path, command: str
) -> None:
    data, first = with_invalid_records()
    path = tmp_path / "invalid.msgpack"
    path.write_bytes(data)
    extra = ["--json"] if command == "read" else []
    result = run(command, str(path), *ITEM, "--skip-invalid", *extra)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        f"{path}: skipped 3 invalid records; the first: record 1 at byte {first}: {FIRST_INVALID}"
    ), lines[0]
    if command == "dump":
        assert dumped(result.stdout) == GOOD_ITEMS
    else:
        summary = json.loads(result.stdout)
        assert summary["records"] == len(GOOD_ITEMS)
        assert summary["skipped"] == 3
        assert summary["sum_of_ids"] == sum(item.id for item in GOOD_ITEMS)
        assert summary["bytes"] == len(data)

    # Without the flag the first invalid record is the error.
    result = run(command, str(path), *ITEM)
    assert_failed_with(result, f"{path}: record 1 at byte {first}: {FIRST_INVALID}")


def test_skip_invalid_still_fails_on_a_truncated_file(tmp_path: Path) -> None:
    data, _ = with_invalid_records()
    path = tmp_path / "invalid-then-cut.msgpack"
    path.write_bytes(data + GOOD[:10])
    result = run("dump", str(path), *ITEM, "--skip-invalid")
    assert_failed_with(result, f"{path}: record 6 at byte {len(data)}: stream ends inside a record")
    assert dumped(result.stdout) == GOOD_ITEMS
