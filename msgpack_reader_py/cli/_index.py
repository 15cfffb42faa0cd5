"""``msgpack-reader index``: a sidecar index of a file's records."""

from __future__ import annotations

import argparse
from typing import Any

from .._split.index import DEFAULT_EVERY, index_path, write_index
from ._common import (
    UsageFailure,
    command,
    phrased,
    positive_int,
    read_options,
    reader_options,
)


def add(commands: Any) -> None:
    """The ``index`` command and its options."""
    index = command(
        commands,
        "index",
        "write a sidecar index of each file's records",
        "Write FILE.index beside each FILE: where every N-th record starts, with the file's "
        "size and a checksum of its first bytes. Readers then seek to a record (tail, dump "
        "--start, a reader's start) and split the file (--jobs, Dask) without guessing or "
        "framing what comes before; an index that no longer fits its file is ignored with a "
        "note. Run it again after a file has grown: it frames only the new bytes.",
    )
    reader_options(index, None)
    index.add_argument(
        "--every",
        type=positive_int,
        default=DEFAULT_EVERY,
        metavar="N",
        help="records between two entries (default: %(default)s)",
    )
    index.set_defaults(run=_run_index)


def _run_index(args: argparse.Namespace) -> int:
    options = read_options(args)
    for name in args.sources:
        if name == "-":
            raise UsageFailure("index: stdin has no place beside it for an index; give a path")
        with phrased(name):
            made = write_index(name, args.every, options)
        print(
            f"Indexed {made.count} records of {name} ({made.end:,} bytes), an entry every "
            f"{made.every}, in {index_path(name)}"
        )
    return 0
