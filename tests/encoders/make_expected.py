"""Write ``expected.json``: the logical records that every encoder in this folder writes.

Standard library only, deterministic: the encoders in ``go/``, ``node/``, ``rust/`` and
``java/`` read the JSON this writes (as ``../expected.json``), so every language encodes the
very same values, and ``tests/test_encoder_fixtures.py`` checks their files against it (and
that running this again reproduces ``expected.json`` byte for byte).

Regenerate with ``python3 tests/encoders/make_expected.py`` (from the repository root), then
rebuild the fixture files with ``tests/encoders/rebuild.sh``.

``events``: 12 records with the fields, in this order, ``id``, ``process_id``, ``thread_id``,
``timestamp`` (RFC 3339, UTC, always 9 fractional digits), ``line``, ``value`` (a float, even
when whole), ``filename``, ``path``, ``tags``, ``attrs`` (keys sorted), ``inner``
(``name``, ``level``) and ``note`` (a string or null).

``fluentd``: 6 Fluentd forward-protocol entries, ``time`` (an EventTime, given as RFC 3339)
and ``record`` (``message``, ``level``, ``count``), with the timestamps of the first 6 events.

``untagged_items``: the first 5 events as a flat Go struct without msgpack tags writes them:
keyed by the Go field names, the timestamp as Unix nanoseconds.

``tagged_events``: 12 records of three kinds, interleaved, told apart by the string ``type``,
each with the fields, in this order, ``type``, ``seq`` (0 to 11) and then its kind's own:
``click`` ``x``, ``y`` (ints), ``button`` (``left``, ``right`` or ``middle``); ``key``
``code`` (str), ``modifiers`` (0 to 2 strings), ``repeat`` (bool); ``scroll`` ``dx``, ``dy``
(floats, even when whole) and ``at`` (RFC 3339, UTC, always 9 fractional digits).

``fluentbit``: 8 entries of a Fluent Bit stream, ``form`` ``fluentbit`` (Fluent Bit 2.1+,
``[[EventTime, metadata], record]``) or ``fluentd`` (``[EventTime, record]``), mixed;
``time`` (an EventTime, given as RFC 3339), ``metadata`` (a map of strings or maps of strings,
keys sorted; only in the ``fluentbit`` form) and ``record`` (``message``, ``level``,
``count``).
"""

from __future__ import annotations

import calendar
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected.json"

# Between 2000 and 2100; whole seconds (a 32-bit timestamp), one nanosecond, the last one of a
# second, a leap day, just past 2**31 seconds, and two a nanosecond apart.
TIMESTAMPS = [
    "2024-10-31T11:36:26.108998696Z",
    "2024-10-31T11:36:27.000000000Z",
    "2000-01-01T00:00:00.000000001Z",
    "2099-12-31T23:59:59.999999999Z",
    "2024-02-29T12:00:00.500000000Z",
    "2038-01-19T03:14:08.000000123Z",
    "2024-10-31T11:36:26.108998697Z",
    "2015-06-30T23:59:59.999000000Z",
    "2021-03-14T01:59:26.535897932Z",
    "2001-09-09T01:46:40.000000000Z",
    "2070-07-04T00:00:00.000001000Z",
    "2024-10-31T11:36:26.108998000Z",
]
# Across the 8-, 16-, 32- and 64-bit integer encodings.
THREAD_IDS = [1, 2, 140234, 65535, 65536, 3, 4294967295, 4294967296, 7, 255, 256, 0]
LINES = [1, 42, 127, 128, 0, 300, 12345, 99, 7, 1000, 2, 65536]
# Zero, negatives, whole numbers (still floats), and the far ends of the exponent range.
VALUES = [
    0.0,
    -1.5,
    3.0,
    0.1,
    2.5e10,
    -273.15,
    3.141592653589793,
    1e100,
    1e-300,
    6.02214076e23,
    -7.0,
    123456.789,
]
FILENAMES = [
    "main.py",
    "données.txt",
    "日本語.log",
    "a",
    "",
    "README",
    "server.go",
    "lib.rs",
    "index.js",
    "Main.java",
    "data-0001.msgpack",
    "x" * 40,
]
NOTES = [
    "first",
    None,
    "ünïcödé",
    "",
    None,
    "✓ ok 🙂",
    None,
    "a note of more than thirty-one bytes, so a str8",
    "z",
    None,
    None,
    "last",
]
TAGS = [[], ["a"], ["a", "b"], ["x", "y", "z"]]
LEVELS = ["debug", "info", "warn", "error"]

# tagged_events: the kinds interleaved, twice two of a kind in a row.
KINDS = [
    "click",
    "key",
    "scroll",
    "scroll",
    "click",
    "key",
    "click",
    "scroll",
    "key",
    "key",
    "click",
    "scroll",
]
# x and y across the fixint, int8/uint8, int16/uint16 and uint32 encodings.
CLICKS = [(0, 0, "left"), (1920, 1080, "right"), (-200, 70000, "middle"), (127, 128, "left")]
KEYS: list[tuple[str, list[str], bool]] = [
    ("KeyA", [], False),
    ("é", ["shift"], False),
    ("Enter", ["ctrl", "alt"], True),
    ("ArrowLeft", ["meta"], True),
]
# Whole floats (0.0, -3.0, -42.0: still floats), and some that a float32 cannot hold.
SCROLLS = [
    (0.0, -3.0, "2025-01-15T08:30:00.000000000Z"),
    (-3.0, 0.1, "2025-01-15T08:30:00.000000001Z"),
    (0.25, 0.0, "2025-01-15T08:30:00.123456789Z"),
    (1.5e-5, -42.0, "2099-12-31T23:59:59.999999999Z"),
]
# fluentbit: the form of each entry (Fluent Bit 2.1+ or Fluentd), and the metadata of the
# Fluent Bit ones in turn.
FORMS = [
    "fluentbit",
    "fluentbit",
    "fluentd",
    "fluentbit",
    "fluentbit",
    "fluentd",
    "fluentbit",
    "fluentd",
]
METADATA: list[dict[str, Any]] = [
    {},
    {"otlp": {"severity": "INFO"}},
    {"tag": "app.web"},
    {"otlp": {"severity": "ERROR", "trace_id": "5b8efff798038103d269b633813fc60c"}},
    {"host": "db-1", "tag": "app.db"},
]
MESSAGES = [
    "started",
    "GET /index.html 200",
    "disk usage at 91%",
    "café ouvert",
    "",
    "retry ✓",
    "a message of more than thirty-one bytes, so a str8",
    "stopped",
]
COUNTS = [0, 1, -1, 300, 65536, -40000, 4294967296, 7]


def parse_rfc3339(text: str) -> tuple[int, int]:
    """``YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`` as (seconds since the Unix epoch, nanoseconds)."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", text):
        raise ValueError(f"not UTC RFC 3339 with 9 fractional digits: {text!r}")
    seconds = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    return seconds, int(text[20:29])


def path_of(index: int, filename: str) -> str:
    if index == 11:  # over 255 bytes: a str16
        return "/" + "deep/" * 60 + filename
    return f"/srv/app{index}/{filename}"


def attrs_of(index: int) -> dict[str, int]:
    if index % 3 == 0:
        return {}
    if index % 3 == 1:
        return {"retries": index}
    return {"code": -index, "size": 1000 * index}


def events() -> list[dict[str, Any]]:
    return [
        {
            "id": index,
            "process_id": 10000 + index * 7,
            "thread_id": THREAD_IDS[index],
            "timestamp": TIMESTAMPS[index],
            "line": LINES[index],
            "value": VALUES[index],
            "filename": FILENAMES[index],
            "path": path_of(index, FILENAMES[index]),
            "tags": TAGS[index % 4],
            "attrs": attrs_of(index),
            "inner": {"name": f"worker-{index % 3}", "level": index % 5 - 2},
            "note": NOTES[index],
        }
        for index in range(12)
    ]


def fluentd(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "time": event["timestamp"],
            "record": {
                "message": f"{event['filename']} line {event['line']}",
                "level": LEVELS[event["id"] % 4],
                "count": event["line"] - 5,
            },
        }
        for event in records[:6]
    ]


def untagged_items(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items = []
    for event in records[:5]:
        seconds, nanoseconds = parse_rfc3339(event["timestamp"])
        items.append(
            {
                "ID": event["id"],
                "ProcessID": event["process_id"],
                "ThreadID": event["thread_id"],
                "TimestampNs": seconds * 1_000_000_000 + nanoseconds,
                "Line": event["line"],
                "Value": event["value"],
                "Filename": event["filename"],
                "Path": event["path"],
            }
        )
    return items


def tagged_events() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    seen = dict.fromkeys(KINDS, 0)
    for seq, kind in enumerate(KINDS):
        nth = seen[kind]
        seen[kind] += 1
        record: dict[str, Any] = {"type": kind, "seq": seq}
        if kind == "click":
            record["x"], record["y"], record["button"] = CLICKS[nth]
        elif kind == "key":
            code, modifiers, repeat = KEYS[nth]
            record.update(code=code, modifiers=modifiers, repeat=repeat)
        else:
            record["dx"], record["dy"], record["at"] = SCROLLS[nth]
        records.append(record)
    return records


def fluentbit() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    metadata = iter(METADATA)
    for index, form in enumerate(FORMS):
        entry: dict[str, Any] = {"form": form, "time": TIMESTAMPS[index]}
        if form == "fluentbit":
            entry["metadata"] = next(metadata)
        entry["record"] = {
            "message": MESSAGES[index],
            "level": LEVELS[index % 4],
            "count": COUNTS[index],
        }
        entries.append(entry)
    return entries


# Trace and span ids are unsigned 64-bit ints, as a tracer makes them (Datadog's are uint64):
# every encoding of one, up to 2**64 - 1, half of them over int64's most (2**63 - 1).
SPAN_IDS = [
    1,
    255,
    65535,
    2**32 - 1,
    2**63 - 1,
    2**63,
    12345678901234567890,
    2**64 - 1,
]
SERVICES = ["web", "db", "cache", "web"]


def spans() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for index, span_id in enumerate(SPAN_IDS):
        trace = SPAN_IDS[-1 - index // 4 * 2]  # two traces: 2**64 - 1 and 2**63
        records.append(
            {
                "trace_id": trace,
                "span_id": span_id,
                "parent_id": 0 if index % 4 == 0 else SPAN_IDS[index - 1],
                "service": SERVICES[index % 4],
                "name": f"op.{index}",
                "start": 1_730_374_586_108_998_696 + index * 1_000_003,
                "duration": 10_000 * (index + 1) ** 2,
                "error": int(index == 6),
                "meta": {"env": "prod", "host": f"h{index % 3}"} if index % 2 else {},
            }
        )
    return records


def build() -> dict[str, Any]:
    records = events()
    return {
        "events": records,
        "fluentd": fluentd(records),
        "untagged_items": untagged_items(records),
        "tagged_events": tagged_events(),
        "fluentbit": fluentbit(),
        "spans": spans(),
    }


def expected_text() -> str:
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else EXPECTED
    target.write_text(expected_text(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
