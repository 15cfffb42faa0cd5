"""``msgpack-reader convert`` and ``dump``: records written as Parquet, Arrow, CSV or JSON
Lines, to a file that appears whole or not at all, or to stdout (``dump`` is ``convert`` to
stdout, with ``--limit``)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import shutil
import sys
import tempfile
from typing import Any

from .._extras import MissingExtraError
from .._progress import Mode
from ..atomic import replacing
from ..convert import convert
from ..errors import ReaderError, RecordError
from ..infer import DEFAULT_SAMPLE, InferenceError
from ..seek import count_records
from ..sources import Source
from ..writers import FORMATS, OutputFormat
from ._common import (
    GIVE_A_TYPE,
    STDIO,
    Failure,
    Skips,
    UsageFailure,
    command,
    flush_stdout,
    follow_option,
    inference,
    jobs_option,
    non_negative_int,
    output_options,
    phrased,
    progress_of,
    progress_option,
    read_options,
    reader_options,
    size_of,
    sources_of,
    split_or_note,
    typing_of,
)


def add(commands: Any) -> None:
    """The ``dump`` and ``convert`` commands and their options."""
    dump = command(
        commands,
        "dump",
        "write the records as JSON Lines or CSV",
        "Write the records of each SOURCE, in turn, to stdout: JSON Lines (one value per "
        "record; a typed record is an object keyed by field name) or CSV (a header row, then "
        "one row per record). Any stream dumps: with the default --type any, each record is "
        "written as it is. With a record type every field is checked first; on bad data, "
        "every record before it has been written when the error line appears. This is "
        "convert to stdout, with --limit.",
    )
    reader_options(dump, "any")
    dump.add_argument(
        "--format",
        choices=("jsonl", "csv"),
        default="jsonl",
        help="the output format; CSV needs columns: untyped, they are inferred from every "
        "record as convert does (default: %(default)s)",
    )
    output_options(dump)
    dump.add_argument(
        "--limit",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="stop after N records in all (default: no limit)",
    )
    dump.add_argument(
        "--skip",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="begin at record N (counting from 0, across the SOURCEs): the records before it "
        "are framed, not decoded, so only broken framing (a corrupt or cut-off stream) is "
        "found in them (default: %(default)s)",
    )
    follow_option(dump, "stop")
    dump.set_defaults(run=_run_dump)

    for name, summary, which in (
        ("head", "write the first records as JSON Lines", "first"),
        ("tail", "write the last records as JSON Lines", "last"),
    ):
        end = command(
            commands,
            name,
            summary,
            f"Write the {which} N records of the SOURCEs (in turn, as one stream) to stdout, "
            "as dump writes them. "
            + (
                "This is dump --limit N."
                if which == "first"
                else "The records before them are counted by framing alone, never decoded "
                "(a second pass over each file; stdin is kept in a temporary file), so the "
                "tail of a large file takes a fraction of a full read."
            ),
        )
        reader_options(end, "any")
        end.add_argument(
            "-n",
            "--lines",
            type=non_negative_int,
            default=10,
            metavar="N",
            help="how many records (default: %(default)s)",
        )
        end.add_argument(
            "--format",
            choices=("jsonl", "csv"),
            default="jsonl",
            help="the output format, as dump takes it (default: %(default)s)",
        )
        output_options(end)
        end.set_defaults(run=_run_head if which == "first" else _run_tail)

    conv = command(
        commands,
        "convert",
        "convert streams to Parquet, Arrow, CSV or JSON Lines",
        "Convert the records of each SOURCE, in turn, into one output. A file named by -o "
        "appears only once every SOURCE has converted: on any failure (bad data, a full disk, "
        "Ctrl-C) nothing is left under its name and a file already there is untouched. "
        "Parquet and Arrow need the 'arrow' extra. Without --type, records are read untyped: "
        "JSON Lines takes them as they are; for Parquet, Arrow and CSV a record type is "
        "inferred from every record of each file (see schema), so no value is dropped; stdin, "
        "read once, from its first records, and a later record with a key or a type they never "
        "showed is an error naming it.",
    )
    reader_options(conv, "any")
    conv.add_argument("--to", required=True, choices=FORMATS, help="the output format (required)")
    conv.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the file to write, or - for stdout (required)",
    )
    output_options(conv)
    jobs_option(conv)
    progress_option(conv, "bytes read, records and records per second")
    conv.set_defaults(run=_run_convert)


def _run_dump(args: argparse.Namespace) -> int:
    _convert(args, args.format, STDIO, args.limit, start=args.skip)
    return 0


def _run_head(args: argparse.Namespace) -> int:
    _convert(args, args.format, STDIO, args.lines)
    return 0


def _run_tail(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        sources: list[tuple[str, Source]] = []
        for name, target in sources_of(args.sources):
            if name == "<stdin>":
                # Read once, a pipe is kept to be read twice: counted, then from its tail on.
                spool = stack.enter_context(tempfile.TemporaryFile())
                with phrased(name):
                    shutil.copyfileobj(sys.stdin.buffer, spool)
                spool.seek(0)
                target = spool
            sources.append((name, target))
        options = dataclasses.replace(read_options(args), on_error="raise")
        total = 0
        for name, target in sources:
            with phrased(name):
                total += count_records(target, force=args.force, options=options)
            if hasattr(target, "seek"):
                target.seek(0)
        _convert(args, args.format, STDIO, None, start=max(total - args.lines, 0), sources=sources)
    return 0


def _run_convert(args: argparse.Namespace) -> int:
    result = _convert(args, args.to, args.output, None)
    if args.output != STDIO:
        print(f"Wrote {result} records to {args.output} ({args.to})")
    return 0


def _convert(
    args: argparse.Namespace,
    to: OutputFormat,
    output: str,
    limit: int | None,
    *,
    start: int = 0,
    sources: list[tuple[str, Source]] | None = None,
) -> int:
    """Convert every SOURCE (or ``sources``) from record ``start`` on into ``output`` (``-``:
    stdout); the records written."""
    typed = typing_of(args)
    sources = sources_of(args.sources) if sources is None else sources
    workers: int = getattr(args, "jobs", 1)
    for name, target in sources if workers != 1 else ():
        with phrased(name):
            split_or_note(name, target, typed, read_options(args), workers)
    names = [name for name, _ in sources]
    label = names[0] if len(sources) == 1 else f"{len(sources)} sources"
    sizes = [size_of(target) for _, target in sources]
    total = None if None in sizes else sum(size or 0 for size in sizes)
    to_stdout = output == STDIO
    if typed.record_type is not None and to in ("parquet", "arrow"):
        _check_columns(typed.name, typed.record_type, to)

    def hint(exc: ReaderError) -> str:
        if typed.record_type is None and to != "jsonl" and isinstance(exc, RecordError):
            if args.infer_from is not None:
                which = f"the first {args.infer_from} records"
            elif STDIO in args.sources:
                which = f"the first {DEFAULT_SAMPLE} records, stdin being read once"
            else:
                which = "every record when it was read before"  # the file changed since
            return f"; the columns were inferred from {which}: {GIVE_A_TYPE}"
        return typed.hint(exc)

    mode: Mode = getattr(args, "progress", "never")
    with progress_of(mode, label, total, unit="bytes") as progress:
        try:
            with (
                phrased(label, hint),
                contextlib.nullcontext(sys.stdout.buffer)
                if to_stdout
                else replacing(output) as out,
            ):
                result = convert(
                    [target for _, target in sources],
                    out,
                    to,
                    record_type=typed.record_type,
                    limit=limit,
                    allow_nan=args.allow_nan,
                    **inference(args),
                    progress=progress,
                    force=args.force,
                    start=start,
                    workers=workers,
                    options=read_options(args),
                )
                # Inside the block: a run that found no record leaves no output file behind.
                skips = Skips(typed.label)
                skips.add(label, result.skipped, result.errors)
                skips.report(result.records, names)
                if to_stdout:
                    flush_stdout()
        except MissingExtraError as exc:
            raise Failure(f"--to {to}: {exc}") from exc
        except InferenceError as exc:
            raise Failure(f"{label}: cannot infer columns for {to}: {exc}; {GIVE_A_TYPE}") from exc
    return result.records


def _check_columns(name: str, record_type: Any, to: OutputFormat) -> None:
    """Refuse a record type with fields Arrow has no column type for, as a usage error."""
    try:
        from ..arrow import arrow_schema

        arrow_schema(record_type)
    except MissingExtraError as exc:
        raise Failure(f"--to {to}: {exc}") from exc
    except TypeError as exc:
        raise UsageFailure(f"--type {name}: {exc}") from None
