"""Records as a Ray Data ``Dataset``: :func:`read_msgpack`, each file read in byte ranges by
Ray tasks.

Needs the ``ray`` extra (``pip install '.[ray]'`` in the project's clone).

>>> from msgpack_reader_py.ray import read_msgpack
>>> ds = read_msgpack("telemetry/*.msgpack", columns=["process_id", "value"])  # doctest: +SKIP
>>> ds.groupby("process_id").mean("value").take_all()  # doctest: +SKIP

A file is cut into byte ranges, each read by its own task anywhere on the cluster; where each
range's first record starts is guessed, then proved by a chain of small tasks that pass on
only where each range's records run (:mod:`._split.ranges`), so the dataset's rows,
their order and any error are exactly those of :func:`~msgpack_reader_py.read_table`
reading each file in turn.

The record type travels to the tasks as :mod:`~msgpack_reader_py._types.shipping` sends it: by
reference where they can import it, by value where they cannot (a type defined in a notebook
or a script).
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._base.checks import positive
from ._base.extras import missing_extra

try:
    import pyarrow as pa
    import ray
    import ray.data
    from ray.exceptions import RayTaskError
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
    raise missing_extra(exc, "ray", feature="msgpack_reader_py.ray") from None

from ._arrow.reader import ArrowJob, read_batches
from ._base.errors import ReaderError, RecordError
from ._base.log import note_skipped
from ._base.options import ReadKeywords, ReadOptions
from ._reference.model import Item
from ._split.ranges import (
    ByteRange,
    Piece,
    Proof,
    cut_file,
    read_range,
    splittable,
)
from ._stream.files import Paths, local_files
from ._types.record_type import type_label
from ._types.shipping import Shipped, UnshippableType, shipped_values

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["read_msgpack"]

Arguments = tuple[Any, ReadOptions, ArrowJob]
"""What every range's task reads with: the record type, the options and the job (sent as one
:class:`~msgpack_reader_py._types.shipping.Shipped`)."""


def _opened(arguments: Any) -> Arguments:
    """A task's arguments as it received them: shipped, or (called in this process) not."""
    (opened,) = shipped_values((arguments,))
    record_type, options, job = opened
    return record_type, options, job


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """What a file or a range came to, once its start was proved: small, fetched by the
    caller, which raises the first error in file order and says what was skipped."""

    error: ReaderError | None = None
    skipped: int = 0
    errors: list[RecordError] = dataclasses.field(default_factory=list)
    table: pa.Table | None = None
    """The range's rows, read again from the proved start where the guess was wrong; ``None``
    where the rows its read task made are the ones."""
    failure: OSError | None = None
    """Why the file could not be read (missing, a directory, not allowed), as ``read_table``
    raises it."""


def _table(arrays: list[pa.StructArray], schema: pa.Schema) -> pa.Table:
    batches = [pa.RecordBatch.from_struct_array(array) for array in arrays]
    return pa.Table.from_batches(batches, schema=schema)


def _whole(path: str, arguments: Any) -> tuple[pa.Table, _Outcome]:
    """A file read whole (one that cannot be split, or fits in one range): its rows, and
    the error that ends them."""
    record_type, options, job = _opened(arguments)
    schema = job.schema(record_type)
    rows: list[pa.RecordBatch] = []
    try:
        with read_batches(path, record_type, columns=job.columns, options=options) as batches:
            try:
                rows.extend(batches)
            except ReaderError as exc:
                error: ReaderError | None = exc
            else:
                error = None
    except OSError as exc:
        # Returned, not raised: a failed task fails both its results, and Ray prints the one
        # never fetched (the table) as an unhandled error, a traceback, when it is dropped.
        return pa.Table.from_batches([], schema=schema), _Outcome(failure=exc)
    table = pa.Table.from_batches(rows, schema=schema)
    return table, _Outcome(error, batches.skipped, batches.errors)


def _read(
    path: str, byte_range: ByteRange, arguments: Any, schema: pa.Schema
) -> tuple[pa.Table, Piece]:
    """A range read from a guessed start: its rows as a table (put in the object store once,
    where the dataset takes it from), and apart from them where its records run, all that the
    proof takes, so that the chain moves no rows."""
    piece = read_range(path, byte_range, *_opened(arguments))
    return _table(piece.value, schema), piece.where()


def _settle(
    spot: Piece, proof: Proof, path: str, arguments: Any, schema: pa.Schema
) -> tuple[_Outcome, Proof]:
    """A range's outcome given the proof before it (its rows read again from the proved
    start, here, where the guess was wrong), and the proof after it."""
    piece, after = proof.settle(spot, path, _opened(arguments))
    table = None if piece.value is None else _table(piece.value, schema)
    return _Outcome(piece.error, piece.skipped, piece.errors, table), after


# Module-level functions: a worker unpickles them by importing this module.
_whole_task = ray.remote(num_returns=2)(_whole)
_read_task = ray.remote(num_returns=2)(_read)
_settle_task = ray.remote(num_returns=2)(_settle)

Part = tuple["ray.ObjectRef[pa.Table]", "ray.ObjectRef[_Outcome]"]
"""A block of the dataset as its tasks return it: its table, and what its proof came to."""


def _blocksize(blocksize: int | None) -> int | None:
    checked: int | None = positive("blocksize", blocksize, allowed=(None,))
    return checked


def _cpus() -> int:
    """The cluster's CPUs, for the default blocksize."""
    if not ray.is_initialized():
        ray.init()  # what Ray's own first call does: join the cluster there is, or start one
    resources = typing.cast("Callable[[], dict[str, float]]", ray.cluster_resources)()
    return max(1, int(resources.get("CPU", 1)))


def _parts(
    path: str,
    shipped: Shipped,
    blocksize: int | None,
    cpus: Callable[[], int],
) -> list[Part]:
    """The blocks of one file, in order: one per byte range, or one for the file read whole
    (one that cannot be split, or no larger than a range). ``cpus`` is asked only for a
    default blocksize."""
    record_type, options, job = _opened(shipped)
    try:
        whole = splittable(path, record_type, options) is not None
        workers = 1 if whole or blocksize else cpus()
        ranges = [] if whole else cut_file(path, blocksize, workers, decompress=options.decompress)
    except OSError:
        whole = True  # its task fails as read_table does, naming the file
    if whole or len(ranges) == 1:
        return [typing.cast(Part, _whole_task.remote(path, shipped))]
    schema = job.schema(record_type)
    parts: list[Part] = []
    proof: Any = Proof()
    for byte_range in ranges:
        # num_returns=2: a ref per returned value, which Ray's annotations cannot say.
        table, spot = typing.cast(
            "tuple[ray.ObjectRef[pa.Table], ray.ObjectRef[Piece]]",
            _read_task.remote(path, byte_range, shipped, schema),
        )
        outcome, proof = typing.cast(
            "tuple[ray.ObjectRef[_Outcome], ray.ObjectRef[Proof]]",
            _settle_task.remote(spot, proof, path, shipped, schema),
        )
        parts.append((table, outcome))
    return parts


def _blocks(files: list[str], parts: list[list[Part]]) -> list[ray.ObjectRef[pa.Table]]:
    """Each file's blocks, once every outcome is in: the first error in file order raised,
    naming its file, and each file's skipped records said here, in the caller's log."""
    outcomes = ray.get([outcome for file_parts in parts for _, outcome in file_parts])
    blocks: list[ray.ObjectRef[pa.Table]] = []
    done = iter(outcomes)
    for path, file_parts in zip(files, parts, strict=True):
        skipped, errors = 0, []
        for table, _ in file_parts:
            outcome = next(done)
            if outcome.failure is not None:
                raise outcome.failure
            skipped += outcome.skipped
            errors += outcome.errors
            if outcome.error is not None:
                note_skipped(path, skipped, errors)
                raise outcome.error.in_source(path) from outcome.error
            blocks.append(table if outcome.table is None else ray.put(outcome.table))
        note_skipped(path, skipped, errors)
    return blocks


def read_msgpack(
    paths: Paths,
    record_type: Any = Item,
    *,
    blocksize: int | None = None,
    columns: Sequence[str] | None = None,
    options: ReadOptions | None = None,
    **keywords: Unpack[ReadKeywords],
) -> ray.data.Dataset:
    """A Ray Data ``Dataset`` of the records of every file ``paths`` names, as Arrow rows.

    Its rows are exactly those of :func:`~msgpack_reader_py.read_table` reading each file
    in turn, in that order, with the schema of
    :func:`~msgpack_reader_py.arrow_schema` (the ``columns`` asked for, in that order): a
    block per byte range of a file, or per file where it is read whole. An empty file gives
    no rows.

    The reads start when ``read_msgpack`` is called, on the cluster Ray is connected to (or
    the one the call starts, as any Ray call does), and it returns once they are done, as
    ``ray.data.from_arrow_refs`` does: the dataset is materialized, its blocks in the object
    store.

    Args:
        paths: a local path, a glob (``*``, ``?``, ``[...]``, ``**`` for any depth), or a list
            of them (:func:`~._stream.files.local_files`); the files are read by the
            cluster's workers, so they must see them at the same paths.
        record_type: any record type :func:`~msgpack_reader_py.read_batches` reads.
            Default ``Item``.
        blocksize: the size in bytes of the ranges a file is read in, each by a task; default
            eight per CPU of the cluster, each between 1 MiB and 64 MiB. A compressed file
            (which cannot be entered in the middle, but for a zstd file of frames that declare
            their sizes, cut where frames start) and a file of at most ``blocksize`` bytes are
            read whole, by one task.
        columns: the names of the columns to build, in the order wanted (default: every
            field). The other fields are still decoded and checked, as ``read_batches`` does.
        options: a :class:`~msgpack_reader_py.ReadOptions`, the reading options as one
            value; keyword arguments given beside it take the place of its own.
        **keywords: the reading options
            (:class:`~msgpack_reader_py.ReadOptions`: ``ext_hook``, ``on_error``, ...;
            not ``follow``), which travel to the tasks. With ``on_error="skip"`` each file's
            skipped records are counted on the ``msgpack_reader_py`` logger, here.

    Raises:
        ReaderError: the error of the first broken file, in the order of ``paths``: exactly
            the one ``read_table`` raises for it (same class, ``index`` counted from the
            file's first record, ``offset``, message), its ``source`` the file's path. It is
            raised here, once every range's start is proved, not as a ``RayTaskError``.
        OSError: a file that cannot be read, as ``read_table`` raises it (``FileNotFoundError``
            for a missing one), in the same way; ``FileNotFoundError`` at once for a glob that
            matches nothing.
        ValueError, TypeError: a bad ``blocksize``, ``columns``, record type or reading
            option, and an empty list of paths, at once, before anything is read.
    """
    read = ReadOptions.of(options, dict(keywords), "read_msgpack()", to_the_end=True)
    size = _blocksize(blocksize)
    job = ArrowJob.of(columns)
    job.schema(record_type)  # a record type with no Arrow schema, or a bad column, refused here
    files = local_files(paths)
    cpus = functools.cache(_cpus)
    shipped = Shipped((record_type, read, job), type_label(record_type))
    shipped.payload  # noqa: B018 - a type that cannot be sent fails here, in one line
    parts = [_parts(path, shipped, size, cpus) for path in files]
    try:
        blocks = _blocks(files, parts)
    except RayTaskError as exc:
        # A file that cannot be read (OSError), or a record type a worker cannot make, fails
        # its task; its message is the task's traceback: the error itself says what is
        # wrong, and where.
        if isinstance(exc.cause, (OSError, UnshippableType)):
            raise exc.cause from exc
        raise
    # Ray Data annotates refs with ray.types.ObjectRef, tasks return ray.ObjectRef.
    return ray.data.from_arrow_refs(
        typing.cast("list[ray.types.ObjectRef[pa.Table | bytes]]", blocks)
    )
