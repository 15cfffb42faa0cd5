"""``msgpack-reader count``: how many records, by framing alone."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..seek import count_records
from ._common import (
    command,
    jobs_option,
    phrased,
    read_options,
    reader_options,
    sources_of,
    split_or_note,
    typing_of,
)


def add(commands: Any) -> None:
    """The ``count`` command and its options."""
    count = command(
        commands,
        "count",
        "count the records",
        "Count the records of each SOURCE by framing alone: each record's size is read from "
        "its headers and no value is decoded, so records are not checked against a type "
        "(read checks them) and a count takes a fraction of a read's time. Corrupt or "
        "cut-off data is still an error. Prints the count: one number for a single SOURCE; "
        "for several, a line for each and a total line. With --jobs, --type is what tells "
        "where a record starts in the middle of a file.",
    )
    reader_options(count, "any")
    jobs_option(count)
    count.add_argument(
        "--json",
        action="store_true",
        help='print {"source": ..., "records": N} on a line for each SOURCE (default: text)',
    )
    count.set_defaults(run=_run_count)


def _run_count(args: argparse.Namespace) -> int:
    typed = typing_of(args)
    sources = sources_of(args.sources)
    options = read_options(args)
    total = 0
    for (name, target), argument in zip(sources, args.sources, strict=True):
        with phrased(name):
            workers = split_or_note(name, target, typed, options, args.jobs)
            records = count_records(
                target, typed.record_type, workers=workers, force=args.force, options=options
            )
        total += records
        if args.json:
            print(json.dumps({"source": argument, "records": records}), flush=True)
        elif len(sources) > 1:
            print(f"{name}: {records}", flush=True)
        else:
            print(records)
    if len(sources) > 1 and not args.json:
        print(f"total: {total}")
    return 0
