"""``msgpack-reader schema``: a record type inferred from a stream's records, printed as
Python."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._analysis.infer import InferenceError, Inferred
from .._analysis.inferred import infer_sources, unseen
from .._base.errors import RecordError
from .._base.options import ReadOptions
from .._readers.streaming_reader import StreamingReader
from ._common import (
    Failure,
    command,
    infer_option,
    inference,
    phrased,
    read_options,
    reader_options,
    sources_of,
)


def add(commands: Any) -> None:
    """The ``schema`` command and its options."""
    schema = command(
        commands,
        "schema",
        "print a record type for a stream's records",
        "Infer a record type from every record of the SOURCEs (the first records, then a "
        "check of every record, the type widened by any that does not fit; stdin is kept in a "
        "temporary file to be read again, see --infer-from) and print it as Python source: "
        "each class refuses a map key it does not name, and records of the shape (array or "
        "map) it never saw, so that no value is ever read past or renamed; "
        "broken data is an error, as for every command. A dataclass named Record, with a "
        "class of its own for each nested record; records of several kinds, told apart by a "
        "tag such as type, get a class each, and Record is their union. Save it to a file and "
        "read the "
        "stream with it, checked: --type FILE.py:Record. Map keys become fields; arrays become "
        "fields f0, f1, ...",
    )
    reader_options(schema, None)
    schema.add_argument(
        "--format",
        choices=("dataclass", "struct"),
        default="dataclass",
        help="a dataclass or a msgspec.Struct (default: %(default)s)",
    )
    infer_option(schema)
    schema.set_defaults(run=_run_schema)


def _run_schema(args: argparse.Namespace) -> int:
    sources = sources_of(args.sources)
    names = [name for name, _ in sources]
    label = names[0] if len(sources) == 1 else ", ".join(names)
    try:
        with phrased(label):
            again, schema = infer_sources(
                [target for _, target in sources],
                force=args.force,
                options=read_options(args),
                **inference(args),
            )
            if schema.error is not None:
                # Broken data ended the records the type was inferred from: it is no type of
                # the stream, and the stream's error is what to say.
                raise schema.error
            if not schema.every and args.infer_from is None:
                # Of a stream longer than what is kept of it, the rest is read once: checked,
                # so that no type is printed that a later record does not fit.
                schema.checked = _rest_checked(again, schema, read_options(args))
                schema.every = True
    except InferenceError as exc:
        raise Failure(f"{label}: cannot infer a record type: {exc}") from exc
    if schema.checked is not None and schema.every:
        note = f" from the {schema.checked} records of {label}"
    else:
        note = f" from the first {schema.checked or schema.records} records of {label}"
    if args.fluentd:
        note += " (read it with --fluentd)"
    sys.stdout.write(schema.source(args.format, note=note))
    return 0


def _rest_checked(sources: list[Any], schema: Inferred, options: ReadOptions) -> int:
    """How many records ``sources`` hold, each read with ``schema``'s types, checked; a record
    they do not fit raises its error, saying how to infer the type from every record."""
    checked_type = schema.record_type("struct", checked=True)
    count = 0
    for source in sources:
        with StreamingReader(source, checked_type, options=options) as reader:
            try:
                count += sum(1 for _ in reader)
            except RecordError as exc:
                raise exc.amended(unseen(None)) from exc
    return count
