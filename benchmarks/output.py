"""What writing costs: `dump` and `convert` on the reference stream, beside reading it (pyperf).

    poetry run python benchmarks/output.py -o doc/output.result.json

Each workload takes the 10000-record reference stream from memory and does what a command
does with it, output to ``/dev/null`` (the output's own medium is not measured):

- ``read_items``: ``msgpack-reader read``: every record an ``Item``, counted (the reader's rate);
- ``read_untyped``: ``read --type any``: every record as decoded;
- ``dump_untyped``: ``dump``: every record as it is, as JSON Lines;
- ``dump_items``: ``dump --type item``: Items, checked, as JSON Lines;
- ``dump_items_csv``: ``dump --type item --format csv``;
- ``convert_parquet_items``: ``convert --type item --to parquet``;
- ``convert_parquet_inferred``: ``convert --to parquet`` of a stream (stdin): kept in a
  temporary file as it is read, columns inferred from every record as a file's are, then read
  again into Parquet;
- ``convert_parquet_inferred_whole``: ``convert --to parquet`` of a file: columns inferred from
  its first 100 records, checked against every record (widened by any that does not fit), then
  every record read again into Parquet. Its target: at most 1.5x ``convert_parquet_items``, the
  same file converted with ``--type``; ``paired/convert_parquet_inferred_whole`` times the two
  in turn.

RESULTS.md gives each in records/s and as a ratio to ``read_items`` from the same run.
"""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Callable
from typing import Any

from msgpack_reader_py import StreamingReader
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py._output.formats import OutputFormat
from msgpack_reader_py._readers.values import ValueReader
from msgpack_reader_py._reference.model import Item
from msgpack_reader_py.streaming_reader_bench import (
    counter,
    reference_data,
    reference_runs,
)

BASELINE = "read_items"


def _converted(data: bytes, to: OutputFormat, record_type: Any, *, whole: bool = False) -> int:
    """Convert ``data`` (bytes, which can be read again as a file can: ``whole``; or a stream,
    read once) to ``to`` in /dev/null."""
    source = data if whole else io.BytesIO(data)
    with open(os.devnull, "wb") as sink:
        return convert(source, sink, to, record_type=record_type).records


def workloads() -> dict[str, Callable[[], int]]:
    """Each workload: one whole pass over the reference stream; returns the records it did."""
    data = reference_data()
    return {
        BASELINE: counter(lambda: StreamingReader(io.BytesIO(data))),
        "read_untyped": counter(lambda: ValueReader(io.BytesIO(data))),
        "dump_untyped": functools.partial(_converted, data, "jsonl", None),
        "dump_items": functools.partial(_converted, data, "jsonl", Item),
        "dump_items_csv": functools.partial(_converted, data, "csv", Item),
        "convert_parquet_items": functools.partial(_converted, data, "parquet", Item),
        "convert_parquet_inferred": functools.partial(_converted, data, "parquet", None),
        "convert_parquet_inferred_whole": functools.partial(
            _converted, data, "parquet", None, whole=True
        ),
    }


PAIRED = {"convert_parquet_inferred_whole": "convert_parquet_items"}
"""Output targets, each timed in turn with the workload it is a ratio of."""


def main() -> None:
    reference_runs(workloads, PAIRED)


if __name__ == "__main__":
    main()
