"""``msgpack-reader count``: how many records, by framing alone."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .._analysis.infer import InferenceError
from .._base.options import ReadOptions
from .._split.seek import count_records
from .._stream.sources import Source
from ._common import (
    GIVE_A_TYPE,
    Failure,
    Typing,
    UsageFailure,
    command,
    infer_option,
    inference,
    jobs_option,
    phrased,
    read_options,
    reader_options,
    require_extra,
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
        "where a record starts in the middle of a file. With --where, the records that "
        "satisfy it are counted: every record is read and checked (untyped, against a record "
        "type inferred from every record, as convert infers it).",
    )
    reader_options(count, "any")
    jobs_option(count)
    count.add_argument(
        "--where",
        default=None,
        metavar="EXPR",
        help="count only the records for which the SQL expression EXPR is true, as dump "
        "--where keeps them; needs the 'duckdb' extra (default: every record, by framing)",
    )
    infer_option(count)
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
    if args.where is not None:
        require_extra("--where", "duckdb")
    total = 0
    for (name, target), argument in zip(sources, args.sources, strict=True):
        with phrased(name, typed.hint):
            workers = split_or_note(name, target, typed, options, args.jobs)
            if args.where is None:
                records = count_records(
                    target, typed.record_type, workers=workers, force=args.force, options=options
                )
            else:
                records = _matching(target, typed, workers, options, args)
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


def _matching(
    target: Source, typed: Typing, workers: int, options: ReadOptions, args: argparse.Namespace
) -> int:
    """How many records of ``target`` satisfy ``--where``: a conversion that writes nothing."""
    from .._output.convert import convert
    from .._output.query import QueryError

    try:
        done = convert(
            target,
            None,
            "jsonl",
            record_type=typed.record_type,
            where=args.where,
            workers=workers,
            force=args.force,
            options=options,
            **inference(args),
        )
    except QueryError as exc:
        raise UsageFailure(f"--{exc}") from None
    except InferenceError as exc:
        raise Failure(f"cannot infer columns for --where: {exc}; {GIVE_A_TYPE}") from exc
    return done.records
