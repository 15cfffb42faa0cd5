"""``msgpack-reader convert`` and ``dump``: records written as Parquet, Arrow, CSV or JSON
Lines, to a file that appears whole or not at all, or to stdout (``dump`` is ``convert`` to
stdout, with ``--limit``)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from typing import Any

from .._analysis.infer import InferenceError
from .._base.atomic import is_directory, replacing
from .._output.formats import CODECS, DEFAULT_CODEC, FORMATS, OutputFormat, output_settings
from .._output.progress import Mode
from .._output.text import TableRows
from .._split.seek import count_records
from .._stream.sources import Source, Spooled
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
    positive_int,
    progress_of,
    progress_option,
    read_options,
    reader_options,
    require_extra,
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
        "write the records as JSON Lines, CSV or a table",
        "Write the records of each SOURCE, in turn, to stdout: JSON Lines (one value per "
        "record; a typed record is an object keyed by field name), CSV (a header row, then "
        "one row per record) or a table to read (aligned columns, long cells cut; the "
        "default on a terminal). Any stream dumps: with the default --type any, each record is "
        "written as it is. With a record type every field is checked first; on bad data, "
        "every record before it has been written when the error line appears. This is "
        "convert to stdout, with --limit.",
    )
    reader_options(dump, "any")
    format_option(dump)
    output_options(dump)
    query_options(dump)
    dump.add_argument(
        "--limit",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="stop after N records in all (default: no limit)",
    )
    dump.add_argument(
        "--start",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="begin at record N (counting from 0, across the SOURCEs): the records before it "
        "are framed, not decoded, so only broken framing (a corrupt or cut-off stream) is "
        "found in them (default: %(default)s)",
    )
    follow_option(dump, "stop")
    jobs_option(dump)
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
        format_option(end)
        output_options(end)
        query_options(end)
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
        "inferred from every record (see schema and --infer-from), so no value is dropped: a "
        "field whose values have no one type is a column of their JSON text, and a record the "
        "type does not hold is an error naming it, never a row written short.",
    )
    reader_options(conv, "any")
    conv.add_argument("--to", required=True, choices=FORMATS, help="the output format (required)")
    conv.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the file to write, or - for stdout; or a directory (a path that ends with /, or "
        "one that exists) to write the records as parts in, part-00000.parquet, "
        "part-00001.parquet, ..., each written by the process that read it (see --jobs), "
        "read as one table by pyarrow.dataset, Polars, DuckDB and Dask (required)",
    )
    conv.add_argument(
        "--replace",
        action="store_true",
        help="with -o DIR/, replace the parts the directory holds (default: a directory that "
        "holds parts already is refused)",
    )
    output_options(conv)
    query_options(conv)
    conv.add_argument(
        "--compression",
        choices=CODECS,
        default=None,
        help="the codec, for parquet and arrow only: parquet takes any (default: "
        f"{DEFAULT_CODEC['parquet']}, the smallest file at about the speed of snappy on "
        "the reference data, as measured in doc/RESULTS.md); arrow takes zstd, lz4 or none "
        f"(default: {DEFAULT_CODEC['arrow']}, a file that can be mapped into memory)",
    )
    conv.add_argument(
        "--row-group-size",
        type=positive_int,
        default=None,
        metavar="N",
        help="parquet only: N records in each row group but the last, cut at the same records "
        "with any --jobs; a row group's records are held in memory until it is written "
        "(default: a row group per batch of up to 65536 records)",
    )
    jobs_option(conv)
    progress_option(conv, "bytes read, records and records per second")
    conv.set_defaults(run=_run_convert)


def format_option(command: argparse.ArgumentParser) -> None:
    """``--format`` of the commands that write to stdout."""
    command.add_argument(
        "--format",
        choices=("jsonl", "csv", "table"),
        default=None,
        help="the output format: jsonl; csv, which needs columns (untyped, they are inferred "
        "from every record as convert does); table, aligned columns for a person to read "
        f"(cells cut at {TableRows.WIDEST} characters, a header again where the columns "
        "change) (default: table on a terminal, jsonl when piped or redirected)",
    )


def _format(args: argparse.Namespace) -> OutputFormat:
    """The --format asked for, or the one for where stdout goes."""
    if args.format is not None:
        chosen: OutputFormat = args.format
        return chosen
    return "table" if sys.stdout.isatty() else "jsonl"


def query_options(command: argparse.ArgumentParser) -> None:
    """``--select`` and ``--where`` (:mod:`..query`)."""
    command.add_argument(
        "--select",
        default=None,
        metavar="PATHS",
        help="write only these fields, in this order: names separated by commas, a dot "
        "stepping into a nested record (id,inner.level makes columns id and inner.level); "
        "needs the 'duckdb' extra (default: every field)",
    )
    command.add_argument(
        "--where",
        default=None,
        metavar="EXPR",
        help="write only the records for which the SQL expression EXPR is true, as DuckDB "
        "evaluates it (\"value > 100 and level = 'warn'\", \"path like '/srv/%%'\", "
        "inner.level in (1, 2)); untyped records get their columns inferred first, as for "
        "csv; needs the 'duckdb' extra (default: every record)",
    )


def _run_dump(args: argparse.Namespace) -> int:
    _convert(args, _format(args), STDIO, args.limit, start=args.start)
    return 0


def _run_head(args: argparse.Namespace) -> int:
    _convert(args, _format(args), STDIO, args.lines)
    return 0


def _run_tail(args: argparse.Namespace) -> int:
    if args.where is not None:
        # Which records match is known only by reading them: one pass, keeping the last N.
        _convert(args, _format(args), STDIO, None, last=args.lines)
        return 0
    sources: list[tuple[str, Source]] = []
    for name, target in sources_of(args.sources):
        if name == "<stdin>":
            # Read once, a pipe is kept to be read twice: counted, then from its tail on.
            with phrased(name):
                target = Spooled(target)
        sources.append((name, target))
    options = dataclasses.replace(read_options(args), on_error="raise")
    total = 0
    for name, target in sources:
        with phrased(name):
            total += count_records(_from_start(target), force=args.force, options=options)
    again = [(name, _from_start(target)) for name, target in sources]
    _convert(args, _format(args), STDIO, None, start=max(total - args.lines, 0), sources=again)
    return 0


def _from_start(target: Source) -> Source:
    """``target`` to be read from its start: a kept stream's bytes, read again."""
    return target.head() if isinstance(target, Spooled) else target


def _run_convert(args: argparse.Namespace) -> int:
    _check_output(args)
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
    last: int | None = None,
    sources: list[tuple[str, Source]] | None = None,
) -> int:
    """Convert every SOURCE (or ``sources``) from record ``start`` on into ``output`` (``-``:
    stdout); the records written."""
    # Imported when a conversion runs: every other command starts without them.
    from .._output.convert import convert
    from .._output.query import QueryError, parse_select

    # What the command needs of the extras, said at once and whole, before anything is read.
    if args.where is not None or args.select is not None:
        require_extra("--where" if args.where is not None else "--select", "duckdb")
    elif to in ("parquet", "arrow"):
        require_extra(f"--to {to}", "arrow")
    typed = typing_of(args)
    sources = sources_of(args.sources) if sources is None else sources
    workers: int = getattr(args, "jobs", 1)
    if workers != 1 and (limit is not None or start or to == "table"):
        why = "a table's columns" if to == "table" else "--limit and --start"
        print(f"note: read on one process: {why} need every record before", file=sys.stderr)
        workers = 1
    for name, target in sources if workers != 1 else ():
        with phrased(name):
            split_or_note(name, target, typed, read_options(args), workers)
    names = [name for name, _ in sources]
    label = names[0] if len(sources) == 1 else f"{len(sources)} sources"
    sizes = [size_of(target) for _, target in sources]
    total = None if None in sizes else sum(size or 0 for size in sizes)
    to_stdout = output == STDIO
    if typed.record_type is not None and to in ("parquet", "arrow"):
        _check_columns(typed.name, typed.record_type)

    mode: Mode = getattr(args, "progress", "never")
    with progress_of(mode, label, total, unit="bytes") as progress:
        try:
            parts = is_directory(output)
            with (
                phrased(label, typed.hint),
                contextlib.nullcontext(sys.stdout.buffer if to_stdout else output)
                if to_stdout or parts
                else replacing(output) as out,
            ):
                result = convert(
                    [target for _, target in sources],
                    out,
                    to,
                    record_type=typed.record_type,
                    limit=limit if last is None else last,
                    from_end=last is not None,
                    allow_nan=args.allow_nan,
                    **inference(args),
                    progress=progress,
                    force=args.force,
                    start=start,
                    workers=workers,
                    select=None if args.select is None else parse_select(args.select),
                    where=args.where,
                    compression=getattr(args, "compression", None),
                    row_group_size=getattr(args, "row_group_size", None),
                    replace=getattr(args, "replace", False),
                    options=read_options(args),
                )
                # Inside the block: a run that found no record leaves no output file behind.
                skips = Skips(typed.label)
                skips.add(label, result.skipped, result.errors)
                skips.report(result.records, names)
                if to_stdout:
                    flush_stdout()
        except QueryError as exc:
            raise UsageFailure(f"--{exc}") from None
        except InferenceError as exc:
            raise Failure(f"{label}: cannot infer columns for {to}: {exc}; {GIVE_A_TYPE}") from exc
    return result.records


def _check_output(args: argparse.Namespace) -> None:
    """Refuse an output option that does nothing for ``--to`` (or for the output), as a usage
    error."""
    parts = is_directory(args.output)
    if args.replace and not parts:
        raise UsageFailure("--replace applies to -o DIR/ (a directory of parts) only")
    if parts:
        for flag, given in (("--where", args.where), ("--select", args.select)):
            if given is not None:
                raise UsageFailure(
                    f"{flag} applies to one output file, not to -o DIR/ (a directory of parts)"
                )
    if args.row_group_size is not None and args.to != "parquet":
        raise UsageFailure(f"--row-group-size applies to --to parquet only, not --to {args.to}")
    if args.compression is not None and args.to not in DEFAULT_CODEC:
        raise UsageFailure(f"--compression applies to --to parquet and arrow, not --to {args.to}")
    try:
        output_settings(args.to, args.compression, args.row_group_size)
    except ValueError as exc:
        raise UsageFailure(f"--compression {args.compression}: {exc}") from None


def _check_columns(name: str, record_type: Any) -> None:
    """Refuse a record type with fields Arrow has no column type for, as a usage error."""
    from .._arrow.reader import arrow_schema  # installed: require_extra said so

    try:
        arrow_schema(record_type)
    except TypeError as exc:
        raise UsageFailure(f"--type {name}: {exc}") from None
