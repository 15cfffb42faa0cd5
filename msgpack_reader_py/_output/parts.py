"""A directory of parts: the records of the sources written as ``part-00000.parquet``,
``part-00001.parquet``, ..., each part encoded and written by the worker that read its byte
range, named in file order, as Spark, Dask and DuckDB (``COPY ... PER_THREAD_OUTPUT``) write
one table from many cores.

A worker writes its range's part into a hidden directory beside the destination
(:func:`~.._base.atomic.replacing_parts`); the parts are named only once every range is
proved, in file order, and put in place only once every source converted. A range the proof
read again (its guess was wrong) is written again, in this process, and the worker's part is
dropped; broken data ends the conversion with the sequential read's error and leaves no part
behind. Read as one table (``pyarrow.dataset``, Polars, DuckDB, Dask), the parts in name order
are the single-file conversion's records.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from .._base.atomic import PART_PREFIX
from .._base.options import ReadOptions
from .._readers.streaming_reader import PieceReader, SourceReader, rows_plan
from .._readers.values import values_plan
from .._split.parallel import Splitting
from .._stream.delivery import Plan
from .._stream.sources import Source
from .formats import Codec, OutputFormat

__all__ = ["Part", "PartsJob", "name_parts", "parts_of"]

SUFFIXES: dict[OutputFormat, str] = {
    "parquet": ".parquet",
    "arrow": ".arrow",
    "csv": ".csv",
    "jsonl": ".jsonl",
}


@dataclasses.dataclass(frozen=True)
class Part:
    """A part written: its file (in the directory being written) and how many records it
    holds (what ``on_error="skip"`` passed over is counted by the reader of the parts)."""

    path: str
    records: int


@dataclasses.dataclass(frozen=True)
class PartsJob:
    """A range job (:class:`~.._split.ranges.RangeJob`) that writes each range's records as
    one part file of ``to`` in ``directory``: a worker encodes and writes what it read."""

    to: OutputFormat
    record_type: Any  # None: untyped values (JSON Lines only)
    directory: str
    compression: Codec | None = None
    row_group_size: int | None = None
    allow_nan: bool = False
    force: bool = False  # untyped: read what looks foreign

    def plan(self, record_type: Any, options: ReadOptions) -> Plan:
        if record_type is None:
            return values_plan(options, force=self.force, batches=True)
        if self.to in ("parquet", "arrow"):
            from .._arrow.reader import ArrowJob

            return ArrowJob().plan(record_type, options)
        return rows_plan(record_type, options)

    def collect(self, batches: Iterator[list[Any]]) -> list[Part]:
        path = os.path.join(self.directory, f".{os.urandom(8).hex()}{SUFFIXES[self.to]}")
        records = 0
        with open(path, "wb") as out, self._output(out) as write:
            for batch in self._batches(batches):
                write(batch)
                records += len(batch)
        return [Part(path, records)]

    def prepare(self) -> None:
        """An empty part written to memory: forked workers start with the writer's modules
        imported (pyarrow.parquet and what it imports: about 0.3 s of CPU in each)."""
        with self._output(io.BytesIO()):
            pass

    def _output(self, out: Any) -> AbstractContextManager[Callable[[Any], None]]:
        if self.to in ("parquet", "arrow"):
            from .._arrow.schema import arrow_schema
            from .columnar import columns_out

            return columns_out(
                out,
                self.to,
                arrow_schema(self.record_type),
                compression=self.compression,
                row_group_size=self.row_group_size,
            )
        from .text import text_out

        return text_out(out, self.to, self.record_type, self.allow_nan)

    def _batches(self, batches: Iterator[list[Any]]) -> Iterator[Any]:
        """What the output takes: for the columnar formats, record batches of the single
        file's size (a run's columns each would make a row group of a thousand records)."""
        made = itertools.chain.from_iterable(batches)
        if self.to in ("parquet", "arrow"):
            from .._arrow.reader import rebatched

            return rebatched(made)
        return made


def parts_of(
    source: Source, job: PartsJob, options: ReadOptions, splitting: Splitting
) -> SourceReader[Part]:
    """A reader of the parts of ``source``: one per byte range, written by the workers, where
    ``splitting`` splits it; else one, written here."""
    if splitting.applies(source, job.record_type, options):
        return PieceReader(source, job.record_type, job, splitting=splitting, options=options)
    return _One(source, job, options)


class _One(SourceReader[Part]):
    """The one part of a source read in this process, with the reader's lifecycle."""

    def __init__(self, source: Source, job: PartsJob, options: ReadOptions) -> None:
        plan = job.plan(job.record_type, options)
        batches = self.open_batches(source, job.record_type, plan, options)
        self._records = _collected(job, batches)


def _collected(job: PartsJob, batches: Iterator[Any]) -> Iterator[Part]:
    """The parts ``job`` makes of ``batches``, made as they are asked for: broken data is
    raised where the reader is read, as every reader's is."""
    yield from job.collect(batches)


def name_parts(directory: str, parts: list[Part], to: OutputFormat) -> int:
    """Name the ``parts`` (in file order) ``part-00000``, ``part-00001``, ... in
    ``directory``, leaving out those with no record (but one, where every part is empty: the
    table's schema), and remove every other file a worker left there (a range read again);
    how many records they hold."""
    kept = [part for part in parts if part.records] or parts[:1]
    named = set()
    for number, part in enumerate(kept):
        name = f"{PART_PREFIX}{number:05d}{SUFFIXES[to]}"
        os.replace(part.path, os.path.join(directory, name))
        named.add(name)
    for left in os.listdir(directory):
        if left not in named:
            os.unlink(os.path.join(directory, left))
    return sum(part.records for part in kept)
