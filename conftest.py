"""Fixtures shared by tests/ and integration/: the reference stream (made by our own generator)
and its rows, a follower's shortened pauses and counted looks, a progress bar's shorter
delay, and small files split into ranges (``splits``). Also which test files need the
``spark`` extra, left out (and said so) where pyspark is not installed."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import signal
import sys
from pathlib import Path
from typing import IO, Any

# Where the environment asks for no bytecode (PYTHONDONTWRITEBYTECODE, as containers and CI
# runners set), each xdist worker would rewrite and compile every test module again, and every
# process a test starts (the command line, workers, Dask's and Ray's) compile the package from
# source: the bytecode is kept in the cache folder git ignores instead, never beside a source.
if sys.dont_write_bytecode:
    _BYTECODE = str(Path(__file__).resolve().parent / ".pytest_cache" / "bytecode")
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"] = _BYTECODE
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import pytest

from msgpack_reader_py import Item, get_iter, pack_items
from msgpack_reader_py._output import progress as _progress
from msgpack_reader_py._split import parallel, ranges
from msgpack_reader_py._stream import follow
from tests.helpers import BAR_DELAY, Looks, as_rows
from tests.reference import REFERENCE_MESSAGES, REFERENCE_SEED, REFERENCE_SHA256, offsets_of

# The spark extra (pyspark, a 450 MB download) is installed only when asked for
# (`./scripts/setup --spark`): without it, its tests are not collected, and the run says so at
# its start and its end. CI installs it, and sets MSGPACK_READER_REQUIRE_SPARK so that a set-up
# that failed to is an error, not a run without them.
SPARK_TESTS = ["integration/test_spark.py"]
HAS_PYSPARK = importlib.util.find_spec("pyspark") is not None
collect_ignore = [] if HAS_PYSPARK else SPARK_TESTS
NO_SPARK = (
    f"pyspark is not installed, so {', '.join(SPARK_TESTS)} was not collected: "
    "./scripts/setup --spark installs the spark extra"
)


def pytest_configure(config: pytest.Config) -> None:
    if not HAS_PYSPARK and os.environ.get("MSGPACK_READER_REQUIRE_SPARK"):
        raise pytest.UsageError(f"MSGPACK_READER_REQUIRE_SPARK is set, but {NO_SPARK}")


def pytest_report_header(config: pytest.Config) -> str | None:
    return None if HAS_PYSPARK else f"spark: {NO_SPARK}"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not HAS_PYSPARK:
        terminalreporter.write_sep("-", "spark")
        terminalreporter.write_line(NO_SPARK)


# A process started in the background by a non-interactive shell (CI runners, `cmd &`) inherits
# SIGINT ignored, and so would every subprocess the tests start: their Ctrl-C tests would wait
# for an interrupt that never comes. A handler, unlike "ignored", is reset to the default on exec.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def reference_items() -> list[Item]:
    """The 10000 items of the reference fixture (seed 42)."""
    return list(get_iter(REFERENCE_MESSAGES, REFERENCE_SEED))


@pytest.fixture(scope="session")
def reference_bytes(reference_items: list[Item]) -> bytes:
    """The reference fixture's bytes; checked against its published hash."""
    data = pack_items(reference_items)
    assert hashlib.sha256(data).hexdigest() == REFERENCE_SHA256
    return data


@pytest.fixture(scope="session")
def record_offsets(reference_items: list[Item]) -> list[int]:
    """Byte offset of every record in the reference stream, plus the stream's length."""
    return offsets_of(reference_items)


@pytest.fixture(scope="session")
def reference_path(tmp_path_factory: pytest.TempPathFactory, reference_bytes: bytes) -> Path:
    """The reference stream in a file shared by the whole session: for reading only."""
    path = tmp_path_factory.mktemp("reference") / "reference.msgpack"
    path.write_bytes(reference_bytes)
    return path


@pytest.fixture
def small_path(tmp_path: Path) -> Path:
    """A 50-item stream in a file of the test's own."""
    path = tmp_path / "small.msgpack"
    path.write_bytes(pack_items(get_iter(50)))
    return path


@pytest.fixture
def reference_file(tmp_path: Path, reference_bytes: bytes) -> Path:
    """The reference stream in a file of the test's own (beside which it may write); where the
    file is only read, ``reference_path`` is enough."""
    path = tmp_path / "reference.msgpack"
    path.write_bytes(reference_bytes)
    return path


@pytest.fixture(scope="session")
def reference_rows(reference_items: list[Item]) -> list[dict[str, Any]]:
    """The reference items as the rows an Arrow table of them must hold."""
    return as_rows(reference_items)


@pytest.fixture
def short_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A follower's pauses at most 20 ms instead of 250 ms, so that the tests of following wait
    less (each of their modules asks for it)."""
    monkeypatch.setattr(follow, "LONGEST_WAIT", 0.02)


@pytest.fixture
def looks(monkeypatch: pytest.MonkeyPatch) -> Looks:
    """Counts the followers' looks at their file."""
    counter = Looks()
    original = follow.Follower.changed

    def counted(self: follow.Follower, stream: IO[bytes]) -> str | None:
        counter.count += 1
        return original(self, stream)

    monkeypatch.setattr(follow.Follower, "changed", counted)
    return counter


@pytest.fixture
def short_bar_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress bar's delay in auto mode, shortened so that the "slow job" tests of
    ``convert`` take a fraction of a second (each of their modules asks for it)."""
    monkeypatch.setattr(_progress, "_DELAY", BAR_DELAY)


@pytest.fixture
def splits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many ranges each read in worker processes had: ranges of a few KiB (not the
    mebibyte at the least a real file gets), so that these small files are split."""
    monkeypatch.setattr(ranges, "_MIN_BLOCKSIZE", 4096)
    seen: list[int] = []
    spread = parallel._parallel

    def spy(ranges: list[Any], *arguments: Any) -> Any:
        seen.append(len(ranges))
        return spread(ranges, *arguments)

    monkeypatch.setattr(parallel, "_parallel", spy)
    return seen
