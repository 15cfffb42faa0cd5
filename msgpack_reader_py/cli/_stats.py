"""``msgpack-reader stats``: every field's count, nulls, types, range, mean, distinct values
and most common values, as a table or as JSON Lines."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from itertools import islice
from typing import Any

from .._analysis.stats import DEFAULT_TOP, FieldStats, FieldSummary
from .._base.json_text import json_text
from .._output.text import cut, display_width
from ._common import (
    Skips,
    command,
    non_negative_int,
    read_options,
    reader_options,
    reading,
    sources_of,
    typing_of,
)

# How wide a cell may be before it is cut (with an ellipsis): a table of a few dozen fields
# stays one line per field on a wide terminal.
WIDTHS = {"field": 32, "types": 24, "min": 20, "max": 20, "top values": 48}
HEADER = ("field", "count", "missing", "nulls", "types", "min", "max", "mean", "distinct")
NUMERIC = {"count", "missing", "nulls", "mean", "distinct"}


def add(commands: Any) -> None:
    """The ``stats`` command and its options."""
    stats = command(
        commands,
        "stats",
        "summarise every field: counts, types, ranges, common values",
        "Read the records of every SOURCE (as one stream, untyped unless --type says "
        "otherwise) and print, for each field, nested paths included (a map's keys as "
        "a.b, an array-shaped record's values as f0, f1, ...), how many records hold it "
        "(count) and how many do not (missing), its nulls, the types of its values, their "
        "min and max (of numbers, strings or timestamps: none for a field mixing them), the "
        "mean of its numbers, how many distinct values it has (exact up to 1024, then "
        "estimated: marked ~) and its most common values with their counts (marked ~ where "
        "they are estimates). Memory stays bounded however many records there are. Bad or "
        "cut-off data stops the run with one error line and no statistics: none are printed "
        "for part of a stream.",
    )
    reader_options(stats, "any")
    stats.add_argument(
        "--limit",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="look at the first N records only, of all SOURCEs together; the data after "
        "them is not read, nor checked (default: every record)",
    )
    stats.add_argument(
        "--top",
        type=non_negative_int,
        default=DEFAULT_TOP,
        metavar="K",
        help="how many of each field's most common values to show (default: %(default)s)",
    )
    stats.add_argument(
        "--json",
        action="store_true",
        help="print JSON Lines, one object a field: field, count, missing, nulls, types, "
        "min, max, mean, distinct, distinct_exact, top (value and count pairs), top_exact, "
        "top_error (how far short of the truth each count may be) and ranges (each type's "
        "min and max; an array's, of its lengths); NaN and the infinities as null "
        "(default: an aligned table)",
    )
    stats.set_defaults(run=run_stats)


def run_stats(args: argparse.Namespace) -> int:
    typed = typing_of(args)
    sources = sources_of(args.sources)
    options = read_options(args)
    skips = Skips(typed.label)
    stats = FieldStats(top=args.top, capacity=max(args.top, 256))
    for name, target in sources:
        left = None if args.limit is None else args.limit - stats.records
        if left == 0:
            break
        with reading(name, target, options, typed) as reader:
            stats.update(reader if left is None else islice(reader, left))
        skips.add(name, reader.skipped, reader.errors)
    skips.report(stats.records, [name for name, _ in sources])
    summaries = stats.summaries()
    if stats.untracked:
        print(
            f"note: more fields than the {len(summaries)} summarised: "
            f"{stats.untracked} values of further fields not looked at",
            file=sys.stderr,
        )
    if args.json:
        for summary in summaries:
            print(json_text(summary.as_json()))
    else:
        print(table(summaries, stats.records, top=args.top))
    return 0


def table(summaries: Sequence[FieldSummary], records: int, *, top: int) -> str:
    """The summaries as an aligned table, under a line saying how many records there were."""
    lines = [f"{plural(records, 'record')}, {plural(len(summaries), 'field')}"]
    if not summaries:
        return lines[0]
    header = HEADER + (("top values",) if top else ())
    rows = [
        [
            cell if name not in WIDTHS else cut(cell, WIDTHS[name])
            for name, cell in zip(header, cells(s), strict=False)
        ]
        for s in summaries
    ]
    widths = [
        max([len(name), *(display_width(row[i]) for row in rows)]) for i, name in enumerate(header)
    ]
    for row in [list(header), ["-" * width for width in widths], *rows]:
        line = "  ".join(
            _padded(cell, width, right=name in NUMERIC)
            for name, cell, width in zip(header, row, widths, strict=True)
        )
        lines.append(line.rstrip())
    return "\n".join(lines)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def cells(summary: FieldSummary) -> list[str]:
    """The table's cells for one field."""
    types = summary.types
    named = (
        next(iter(types)) if len(types) == 1 else ", ".join(f"{t} {n}" for t, n in types.items())
    )
    low, high = summary.min, summary.max
    lengths = summary.ranges.get("array")
    if low is None and lengths is not None and set(summary.ranges) == {"array"}:
        low, high = (f"[len {n}]" for n in lengths)
    else:
        low, high = (text(v) for v in (low, high))
    mean = "" if summary.mean is None else f"{summary.mean:.10g}"
    distinct = f"{'' if summary.distinct_exact else '~'}{summary.distinct or ''}"
    values = ", ".join(f"{text(value)} ({count})" for value, count in summary.top)
    if values and not summary.top_exact:
        values = "~ " + values
    return [
        summary.path,
        str(summary.count),
        str(summary.missing),
        str(summary.nulls),
        named,
        low,
        high,
        mean,
        distinct,
        values,
    ]


def text(value: Any) -> str:
    """A value in a cell: its JSON text, as dump writes it; nothing for none."""
    return "" if value is None else json_text(value)


def _padded(cell: str, width: int, *, right: bool) -> str:
    pad = " " * (width - display_width(cell))
    return pad + cell if right else cell + pad
