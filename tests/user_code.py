"""Code run the way users run it, in a process of its own: record types of every kind defined
in ``__main__`` (a notebook, ``python -c``, standard input, a script), with a thread running
as a notebook's kernel has, read on every path that sends them to other processes.

:data:`TYPES` is the code a user writes first (the types, and files of their records);
each test adds what it reads and runs it with :func:`run_user_code`, which fails the test
with the process's output if it fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Literal

TIMEOUT = 240

TYPES = """
import dataclasses
import enum
import sys
import threading
import typing
from pathlib import Path

import attrs
import msgspec
from msgpack_reader_py import UInt64

# A notebook's kernel has threads of its own running.
threading.Thread(target=threading.Event().wait, daemon=True).start()


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(msgspec.Struct, array_like=True):
    x: int
    y: int = 0


class Place(msgspec.Struct):
    city: str
    floor: typing.Annotated[int, msgspec.Meta(ge=0)] = 0  # a constraint travels too


class Pair(typing.NamedTuple):
    left: int
    right: str


class Extra(typing.TypedDict):
    note: str


@attrs.define
class Owner:
    name: str
    rank: UInt64 = 0


class Ping(msgspec.Struct, tag="ping", rename="camel"):
    seq_no: int

    def __post_init__(self) -> None:
        if self.seq_no < 0:
            raise ValueError("a sequence number is never negative")


class Pong(msgspec.Struct, tag="pong", kw_only=True):
    delay: float = 0.0
    hops: list[int] = msgspec.field(default_factory=list)


@dataclasses.dataclass
class Event:
    id: int
    color: Color
    place: Place
    pair: Pair
    extra: Extra
    owner: Owner
    message: Ping | Pong

    def __post_init__(self) -> None:
        if self.id < 0:
            raise ValueError("an id is never negative")


def event(i: int) -> Event:
    message = Ping(i) if i % 2 else Pong(delay=i / 4, hops=[i, i + 1])
    owner = Owner(f"owner{i % 5}", i % 3)
    color = Color.RED if i % 3 else Color.BLUE
    place = Place(f"city{i % 4}", i % 9)
    return Event(i, color, place, Pair(i, "r" * (i % 7)), {"note": f"n{i}"}, owner, message)


def write(name: str, records: list[typing.Any]) -> Path:
    path = DIRECTORY / name
    path.write_bytes(b"".join(msgspec.msgpack.encode(r) for r in records))
    return path


def error_of(call: typing.Callable[[], object]) -> str:
    try:
        call()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError("no error")


def point(i: int) -> Point:
    return Point(i, -i)


DIRECTORY = Path(sys.argv[1])
EVENTS = [event(i) for i in range(400)]
BROKEN = [msgspec.to_builtins(e) for e in EVENTS]
BROKEN[300]["id"] = -1  # refused by Event's __post_init__, here and in every worker
BLOCKSIZE = 1024  # a file in many ranges
"""

How = Literal["stdin", "-c", "script"]


def run_user_code(code: str, how: How, directory: Path, *arguments: str) -> str:
    """Run ``code`` as a user does (``how``: fed to ``python -`` on standard input, as
    ``python -c``, or as a script file in ``directory``), with ``directory`` its first
    argument and then ``arguments``; its output, once it has succeeded."""
    given = [str(directory), *arguments]
    if how == "script":
        script = directory / "user_script.py"
        script.write_text(code)
        command, feed = [sys.executable, str(script), *given], None
    elif how == "-c":
        command, feed = [sys.executable, "-c", code, *given], None
    else:
        command, feed = [sys.executable, "-", *given], code
    result = subprocess.run(
        command,
        input=feed,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=directory,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return result.stdout
