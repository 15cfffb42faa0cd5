"""The columnar formats: Arrow batches written as Parquet or as an Arrow IPC file, encoded
on a thread of their own, a file's columns chosen for dictionary encoding from its first
records, row groups of a fixed size, and a failure of the output kept to be raised as it was.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Literal

from .formats import Codec, OutputFormat, output_settings

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["DICTIONARY_SAMPLE", "columns_out"]

_IPC_CODECS: dict[Codec | None, Literal["zstd", "lz4"]] = {"zstd": "zstd", "lz4": "lz4"}
# Arrow's own gzip level is 9: on a million reference records it took about six times as long
# as zlib's default, 6 (gzip's), for a file 0.3% smaller.
_PARQUET_LEVELS: dict[Codec | None, int] = {"gzip": 6}


@contextmanager
def columns_out(
    out: Any,
    to: OutputFormat,
    schema: pa.Schema,
    *,
    compression: Codec | None = None,
    row_group_size: int | None = None,
) -> Iterator[Callable[[Any], None]]:
    """Write Arrow batches as Parquet or as an Arrow IPC file, compressed with ``compression``
    (checked, and defaulted, as :func:`output_settings` says).

    Parquet has a row group per batch, or, with ``row_group_size``, exactly that many records
    in each row group but the last, however the batches were cut: the file is then the same
    whatever batches the reader made. Records wait for their row group to fill; whatever ends
    the writing early, those already given are written before the file is closed."""
    import pyarrow as pa

    codec = output_settings(to, compression, row_group_size)
    # pyarrow takes Python's lock for each write to a Python file object, which would stop
    # the reader while the writer's thread writes (see _Behind): it writes in large pieces.
    kept = _FailureKept(out)
    sink = pa.BufferedOutputStream(pa.PythonFile(kept, mode="w"), buffer_size=_SINK_BUFFER)
    write: Callable[[Any], None]
    groups: _RowGroups | None = None
    if to == "parquet":
        assert codec is not None
        level = _PARQUET_LEVELS.get(codec)
        writer: Any = _Parquet(sink, schema, compression=codec, compression_level=level)
        write = writer.write_batch
        if row_group_size is not None:
            groups = _RowGroups(writer, schema, row_group_size)
            write = groups.write
    else:
        options = pa.ipc.IpcWriteOptions(compression=_IPC_CODECS.get(codec))
        writer = pa.ipc.new_file(sink, schema, options=options)
        write = writer.write_batch
    behind = _Behind(write)
    try:
        yield behind.write
    finally:
        try:
            behind.finish()
            if groups is not None:
                groups.finish()
        finally:
            behind.abandon()  # cut short (a Ctrl-C): the writer is never closed under its thread
            writer.close()
            sink.detach()  # what is buffered is written; the stream stays the caller's
            kept.raise_failure()


_SINK_BUFFER = 4 << 20
DICTIONARY_SAMPLE = 16384
"""The records whose values decide which Parquet columns are dictionary-encoded. Counting
the distinct values of 65536 took 55 ms for the reference record's eight columns, paid again
by every part of a directory of parts; 16384 take about 7 ms, and show a column of few
distinct values as plainly."""


class _Parquet:
    """A ``pyarrow.parquet.ParquetWriter``, made once the first :data:`DICTIONARY_SAMPLE`
    records are there (or the last, if fewer): a column of those that holds fewer distinct
    values than half its records is dictionary-encoded, any other column of plain values is
    not, and nested columns are, as pyarrow does every column.

    pyarrow tries a dictionary for every column and gives up on one that grows too large: on
    columns of ids, timestamps and measurements that attempt took half of the writing's time,
    and the pages it left were larger (the reference data: 52.1 MB with it, 39.3 MB without,
    at zstd). The choice rests on the first records only, so a file is the same however the
    records came in batches. Calls before the writer is made are kept, then replayed."""

    def __init__(self, sink: Any, schema: pa.Schema, **options: Any) -> None:
        self._sink = sink
        self._schema = schema
        self._options = options
        self._writer: Any = None
        self._kept: list[tuple[str, Any, dict[str, Any]]] = []
        self._rows = 0

    def write_batch(self, batch: pa.RecordBatch) -> None:
        self._call("write_batch", batch, {})

    def write_table(self, table: pa.Table, row_group_size: int) -> None:
        self._call("write_table", table, {"row_group_size": row_group_size})

    def close(self) -> None:
        if self._writer is None:
            self._open()
        self._writer.close()

    def _call(self, name: str, data: Any, keywords: dict[str, Any]) -> None:
        if self._writer is not None:
            getattr(self._writer, name)(data, **keywords)
            return
        self._kept.append((name, data, keywords))
        self._rows += data.num_rows
        if self._rows >= DICTIONARY_SAMPLE:
            self._open()

    def _open(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        tables = [
            pa.Table.from_batches([d]) if isinstance(d, pa.RecordBatch) else d
            for _, d, _ in self._kept
        ]
        sample = pa.concat_tables(tables).slice(0, DICTIONARY_SAMPLE) if tables else None
        dictionary: Any = _dictionary_columns(self._schema, sample)  # a list: pyarrow takes it
        self._writer = pq.ParquetWriter(
            self._sink, self._schema, use_dictionary=dictionary, **self._options
        )
        kept, self._kept = self._kept, []
        for name, data, keywords in kept:
            getattr(self._writer, name)(data, **keywords)


def _dictionary_columns(schema: pa.Schema, sample: pa.Table | None) -> list[str]:
    """The Parquet columns (leaf paths) to dictionary-encode, given the first records."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .._arrow.json_columns import empty_table, storage

    written = pa.BufferOutputStream()
    pq.write_table(empty_table(schema), written)
    parquet = pq.ParquetFile(pa.BufferReader(written.getvalue())).schema
    leaves = [parquet.column(i).path for i in range(len(parquet))]
    varied = set()
    if sample is not None and sample.num_rows:
        for field in schema:
            if pa.types.is_nested(field.type) or pa.types.is_null(field.type):
                continue  # nothing to count: a null column is written as such
            if _varied(storage(sample.column(field.name))):
                varied.add(field.name)
    # A plain column's one leaf is its name (dots and all); nested columns are never varied.
    return [leaf for leaf in leaves if leaf not in varied]


def _varied(column: pa.ChunkedArray[Any]) -> bool:
    """Whether ``column`` holds as many distinct values as half its rows (``None`` one value;
    NaN one, though it is not equal to itself). Counted in Python, a slice at a time, until
    there are that many: pyarrow's own ``unique`` imports ``pyarrow.compute``, 50-70 ms of
    every conversion's start, and warms up its kernels, as long again, in every worker."""
    import pyarrow as pa

    floats = pa.types.is_floating(column.type)
    if pa.types.is_timestamp(column.type):  # as numbers: Python's datetime holds no nanosecond
        column = pa.chunked_array([c.view(pa.int64()) for c in column.chunks], pa.int64())
    enough = (len(column) + 1) // 2
    seen: set[Any] = set()
    for start in range(0, len(column), _SLICE):
        values = column.slice(start, _SLICE).to_pylist()
        seen.update([v if v == v else _NAN for v in values] if floats else values)
        if len(seen) >= enough:
            return True
    return False


_SLICE = 4096
_NAN = object()


class _FailureKept(io.RawIOBase):
    """The output as pyarrow writes to it, its first failure kept to be raised as it was.

    Raised inside pyarrow, an ``OSError`` (a full disk, a closed pipe) would come back as
    pyarrow's own error with a traceback in its message, and pyarrow would try the write
    again as it cleans up, printing the failure on stderr; kept, it is raised as it was, by
    :meth:`raise_failure`, and the writes after it are dropped (the output is broken)."""

    def __init__(self, out: Any) -> None:
        super().__init__()
        self._out = out
        self._failure: BaseException | None = None

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self._failure is not None:
            return len(data)
        view = memoryview(data).cast("B")
        try:
            while view:  # a raw stream may take part of it: the rest goes again
                written = self._out.write(view)
                view = view[len(view) if written is None else written :]
        except BaseException as exc:  # noqa: BLE001 - raised again by raise_failure
            self._failure = exc
        return len(data)

    def flush(self) -> None:
        """Nothing: the output is the caller's to flush."""

    def raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure


class _Behind:
    """``write`` called on a thread of its own, a batch or two behind the caller.

    pyarrow encodes and compresses a batch without Python's lock, so the reader decodes the
    next batch meanwhile, on another core: a conversion to Parquet takes about the longer of
    the two instead of their sum. Batches are written in order, by one thread; an error there
    is raised to the caller at its next batch, or at :meth:`finish`."""

    _AHEAD = 2  # batches waiting: enough to keep both sides busy, little memory

    def __init__(self, write: Callable[[Any], None]) -> None:
        import queue

        self._write = write
        self._queue: queue.Queue[Any] = queue.Queue(self._AHEAD)
        self._failure: BaseException | None = None
        self._dropping = False
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._run, name="columns-writer", daemon=True)

    def write(self, batch: Any) -> None:
        """Hand ``batch`` over to be written."""
        if self._thread.ident is None:
            # Started with the first batch, not before: a reader's worker processes start
            # before it, and a process with one thread starts them by a cheap fork.
            self._thread.start()
        self._raise()
        self._queue.put(batch)

    def finish(self) -> None:
        """Wait for every batch handed over to be written; raise what failed there."""
        if self._thread.ident is None:
            return  # no batch came
        self._queue.put(_DONE)
        self._ended.wait()
        self._raise()

    def abandon(self) -> None:
        """Where :meth:`finish` was cut short (a Ctrl-C while it waited): the batches not yet
        written dropped, and the thread waited for, so that nothing writes once this returns.
        A stop that comes meanwhile is raised once the thread has ended.

        The thread's end is its own event, not ``Thread.join`` or ``is_alive``: a join that a
        Ctrl-C interrupts marks the thread ended while it still runs (CPython 3.10 to 3.12)."""
        if self._thread.ident is None or self._ended.is_set():
            return
        import queue

        self._dropping = True
        with suppress(queue.Empty):  # room for the end: only this thread puts
            while True:
                self._queue.get_nowait()
        self._queue.put_nowait(_DONE)
        late: BaseException | None = None
        while not self._ended.is_set():
            try:
                self._ended.wait()
            except BaseException as exc:  # noqa: BLE001, PERF203 - raised once it has ended
                late = late or exc
        if late is not None:
            raise late

    def _raise(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def _run(self) -> None:
        try:
            while (batch := self._queue.get()) is not _DONE:
                # After a failure, or once abandoned, batches are only taken, not written.
                if self._failure is None and not self._dropping:
                    try:
                        self._write(batch)
                    except BaseException as exc:  # noqa: BLE001 - raised again in the caller
                        self._failure = exc
        finally:
            self._ended.set()


_DONE = object()


class _RowGroups:
    """Batches written as Parquet row groups of ``size`` records, the last one short.

    Batches are kept until ``size`` records are there, then every whole row group among them
    is written at once and the rest kept: pyarrow cuts row groups within one call only, and a
    reader's batches end where its reads (or, with ``workers``, its byte ranges) end. Nothing
    is copied: a table of the kept batches is sliced."""

    def __init__(self, writer: Any, schema: pa.Schema, size: int) -> None:
        self._writer = writer
        self._schema = schema
        self._size = size
        self._kept: list[pa.RecordBatch] = []
        self._rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        self._kept.append(batch)
        self._rows += batch.num_rows
        if self._rows < self._size:
            return
        import pyarrow as pa

        table = pa.Table.from_batches(self._kept, schema=self._schema)
        whole = self._rows - self._rows % self._size
        rest = table.slice(whole)
        self._kept, self._rows = rest.to_batches(), rest.num_rows
        self._writer.write_table(table.slice(0, whole), row_group_size=self._size)

    def finish(self) -> None:
        """Write the records kept, the last row group."""
        if not self._rows:
            return
        import pyarrow as pa

        table = pa.Table.from_batches(self._kept, schema=self._schema)
        self._kept, self._rows = [], 0
        self._writer.write_table(table, row_group_size=self._size)
