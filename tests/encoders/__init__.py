"""Fixture streams written by MessagePack encoders in other languages (see README.md), and the
records they hold as the tests type them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

from tests.helpers import instant

ENCODERS = Path(__file__).resolve().parent
DATA = ENCODERS / "data"
EXPECTED: dict[str, Any] = json.loads((ENCODERS / "expected.json").read_text(encoding="utf-8"))
EVENT_FILES = sorted(p.name for p in DATA.glob("*_events_*.msgpack"))

# The documented field order of the array forms.
EVENT_FIELDS = (
    "id",
    "process_id",
    "thread_id",
    "timestamp",
    "line",
    "value",
    "filename",
    "path",
    "tags",
    "attrs",
    "inner",
    "note",
)
INNER_FIELDS = ("name", "level")


@dataclasses.dataclass
class Inner:
    name: str
    level: int


@dataclasses.dataclass
class Event:
    """One of the ``events`` records, as nested dataclasses."""

    id: int
    process_id: int
    thread_id: int
    timestamp: dt.datetime
    line: int
    value: float
    filename: str
    path: str
    tags: list[str]
    attrs: dict[str, int]
    inner: Inner
    note: str | None


def expected_events() -> list[Event]:
    """The ``events`` records of ``expected.json`` as the reader makes them."""
    return [
        Event(
            **{
                **record,
                "timestamp": instant(record["timestamp"]),
                "inner": Inner(**record["inner"]),
            }
        )
        for record in EXPECTED["events"]
    ]
