"""``msgpack-reader generate``: a reproducible stream of Items (the reference fixture)."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import sys
from typing import Any

from .._base.atomic import replacing
from .._reference.generator import DEFAULT_SEED, get_iter, write_items
from ._common import (
    DEFAULT_MESSAGES,
    STDIO,
    command,
    io_error,
    non_negative_int,
    progress_of,
    progress_option,
)


def add(commands: Any) -> None:
    """The ``generate`` command and its options."""
    gen = command(
        commands,
        "generate",
        "write a reproducible stream of items",
        "Write N pseudo-random Items as concatenated MessagePack, reproducibly from a seed. "
        f"The defaults write the {DEFAULT_MESSAGES}-record reference stream byte for byte "
        "(559,439 bytes).",
    )
    gen.add_argument("--path", required=True, help="the file to write, or - for stdout (required)")
    gen.add_argument(
        "--messages",
        type=non_negative_int,
        default=DEFAULT_MESSAGES,
        metavar="N",
        help="how many records to write (default: %(default)s)",
    )
    gen.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help="the random seed; the same seed writes the same bytes (default: %(default)s)",
    )
    progress_option(gen, "records written and records per second")
    gen.set_defaults(run=_run_generate)


_GENERATE_CHUNK = 8192  # records written between two updates of generate's bar


def _run_generate(args: argparse.Namespace) -> int:
    to_stdout = args.path == STDIO
    items = get_iter(args.messages, args.seed)
    label = "<stdout>" if to_stdout else args.path
    try:
        with (
            progress_of(args.progress, label, args.messages, unit="records") as progress,
            contextlib.nullcontext(sys.stdout.buffer)
            if to_stdout
            else replacing(args.path) as out,  # whole or not at all, as every output
        ):
            written = 0
            records = 0
            while chunk := list(itertools.islice(items, _GENERATE_CHUNK)):
                written += write_items(out, chunk)
                records += len(chunk)
                if progress is not None:
                    progress(records, records)
            out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise io_error(args.path, exc) from exc
    if not to_stdout:
        print(f"Wrote {args.messages} messages ({written} bytes) to {args.path}")
    return 0
