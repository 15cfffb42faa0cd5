"""``msgpack-reader read``: read streams, checked, and print a summary."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import operator
import time
from collections.abc import Iterator
from typing import Any

from .._base.options import ReadOptions
from .._readers.streaming_reader import PieceReader, SourceReader, rows_plan
from .._reference.model import Item
from .._split.parallel import Splitting
from .._stream.delivery import Plan
from .._stream.sources import Source
from ._common import (
    EXIT_INTERRUPTED,
    Skips,
    command,
    follow_option,
    jobs_option,
    phrased,
    read_options,
    reader_options,
    reading,
    sources_of,
    split_or_note,
    typing_of,
)


def add(commands: Any) -> None:
    """The ``read`` command and its options."""
    read = command(
        commands,
        "read",
        "read streams and print a summary",
        "Read every record of each SOURCE as a record of --type (the built-in Item unless "
        "told otherwise), checking every field, and print how many there were (and, for "
        "Items, the sum of their ids), how many bytes, and how long it took: one line for a "
        "single SOURCE; for several, a line for each and a total line. A bad record stops the "
        "run with one error line naming its source, record index and byte offset.",
    )
    reader_options(read, "item")
    jobs_option(read)
    read.add_argument(
        "--json",
        action="store_true",
        help="print each summary as a JSON object on a line of its own "
        "(source, records, sum_of_ids, bytes, seconds, skipped); with several SOURCEs a last "
        'line totals them, with "sources" listing them (default: text)',
    )
    follow_option(read, "print the summary of what was read")
    read.set_defaults(run=run_read)


_ITEM_ID = operator.itemgetter([f.name for f in dataclasses.fields(Item)].index("id"))
"""An Item row's id (a row holds the fields in their order)."""


def summarise(
    reader: SourceReader[Any], *, batches: bool = False, following: bool = False
) -> Summary:
    """Count the records (and sum the ids of Items) of a reader of records or, with
    ``batches``, of a reader of lists of them (checked rows,
    :class:`~.._readers.streaming_reader.RowBatches`, or untyped values): a batch at a time,
    in C. Following, Ctrl-C ends the count: the summary says it was interrupted."""
    count = 0
    sum_of_ids: int | None = None
    interrupted = False
    start = time.perf_counter()
    items = reader.record_type is Item
    try:
        if batches:
            sum_of_ids = 0 if items else None
            for batch in reader:
                count += len(batch)
                if items:
                    sum_of_ids += sum(map(_ITEM_ID, batch))
        elif items:
            sum_of_ids = 0
            for item in reader:
                count += 1
                sum_of_ids += item.id
        else:
            for _record in reader:
                count += 1
    except KeyboardInterrupt:
        if not following:
            raise
        interrupted = True
    summary = Summary(count, sum_of_ids, seconds=time.perf_counter() - start)
    summary.interrupted = interrupted
    return summary


@dataclasses.dataclass
class Summary:
    """What ``read`` reports of a source, or of several together."""

    records: int = 0
    sum_of_ids: int | None = None  # of Items only
    bytes: int = 0
    seconds: float = 0.0
    skipped: int = 0
    interrupted = False  # not a field: not reported, not added up

    def add(self, other: Summary) -> None:
        for field in dataclasses.fields(self):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            setattr(self, field.name, theirs if mine is None else mine + (theirs or 0))

    def line(self) -> str:
        rate = self.records / self.seconds if self.seconds > 0 else float("inf")
        if self.sum_of_ids is not None:
            return (
                f"Read {self.records} messages, sum_of_ids is {self.sum_of_ids} "
                f"in {self.seconds * 1e3:.2f} ms ({rate:,.0f} msg/s)"
            )
        megabytes = self.bytes / self.seconds / 1e6 if self.seconds > 0 else float("inf")
        return (
            f"Read {self.records} records ({self.bytes:,} bytes) in {self.seconds * 1e3:.2f} ms "
            f"({rate:,.0f} records/s, {megabytes:,.1f} MB/s)"
        )


def run_read(args: argparse.Namespace) -> int:
    typed = typing_of(args)
    sources = sources_of(args.sources)
    skips = Skips(typed.label)
    total = Summary()
    options = read_options(args)
    for (name, target), argument in zip(sources, args.sources, strict=True):
        with phrased(name, typed.hint):
            workers = split_or_note(name, target, typed, options, args.jobs)
        if workers > 1:
            with phrased(name, typed.hint):
                summary, reader = _summarised_in_ranges(target, typed.record_type, options, workers)
        else:
            with reading(name, target, options, typed, rows=True) as reader:
                summary = summarise(reader, batches=True, following=args.follow)
        summary.bytes = reader.bytes_read
        summary.skipped = reader.skipped
        skips.add(name, reader.skipped, reader.errors)
        total.add(summary)
        if len(sources) > 1:
            # Each source is reported as it is done, before a later one can fail.
            print(_report(args.json, name, {"source": argument}, summary), flush=True)
    skips.report(total.records, [name for name, _ in sources])
    if len(sources) == 1:
        print(_report(args.json, None, {"source": args.sources[0]}, total))
    else:
        print(_report(args.json, "total", {"sources": list(args.sources)}, total, len(sources)))
    return EXIT_INTERRUPTED if summary.interrupted else 0  # only one source is followed


@dataclasses.dataclass(frozen=True)
class _Summing:
    """A range job (:class:`~..ranges.RangeJob`): a range's records counted, and the ids of
    Items summed, in the worker that reads them."""

    items: bool

    def plan(self, record_type: Any, options: ReadOptions) -> Plan:
        return rows_plan(record_type, options)

    def collect(self, batches: Iterator[list[Any]]) -> list[tuple[int, int]]:
        count = total = 0
        for rows in itertools.chain.from_iterable(batches):  # a run's rows each
            count += len(rows)
            if self.items:
                total += sum(map(_ITEM_ID, rows))
        return [(count, total)]


def _summarised_in_ranges(
    target: Source, record_type: Any, options: ReadOptions, workers: int
) -> tuple[Summary, SourceReader[Any]]:
    """``read --jobs``: each range summarised where it is read, the summaries added up."""
    start = time.perf_counter()
    items = record_type is Item
    count = total = 0
    splitting = Splitting(workers)
    with PieceReader(
        target, record_type, _Summing(items), splitting=splitting, options=options
    ) as reader:
        for records, ids in reader:
            count += records
            total += ids
    summary = Summary(count, total if items else None, seconds=time.perf_counter() - start)
    return summary, reader


def _report(
    as_json: bool, label: str | None, keys: dict[str, Any], summary: Summary, sources: int = 1
) -> str:
    if as_json:
        return json.dumps({**keys, **dataclasses.asdict(summary)})
    line = summary.line() + (f" from {sources} sources" if sources > 1 else "")
    return f"{label}: {line}" if label else line
