"""Spark reads MessagePack: after :func:`register`, ``spark.read.format("msgpack")`` reads a
path, a glob, a directory or a list of them, each file in byte ranges, through Spark 4's
Python Data Source API (``pyspark.sql.datasource``), as Arrow record batches.

Needs the ``spark`` extra (``pip install '.[spark]'`` in the project's clone): pyspark 4, whose
local mode needs Java 17.

>>> from msgpack_reader_py.spark import register
>>> register(spark)  # doctest: +SKIP
>>> events = spark.read.format("msgpack").option("type", "records:Event")  # doctest: +SKIP
>>> events.load("events/").groupBy("kind").count().show()  # doctest: +SKIP

A file is cut into byte ranges, one Spark partition each. Spark runs a source's partitions as
tasks that know nothing of each other, so there is no chain of tasks to prove where each
range's first record starts, as on Dask and Ray (:mod:`._split.ranges`). The ranges are
proved where Spark plans the read instead (``partitions()``, one Python process): each file
to be split is framed from its first byte on, no value decoded
(:class:`~._split.seek.Counting`), and each range is handed its first record's offset and how
many records come before it. A task reads its range from there, with no guess, and its errors
carry the file's own record index. A task that meets an error first reads the file's ranges
before its own, in case one of them holds an earlier error, so that whichever task Spark hears
from first, the job fails with the error a sequential read of the file raises.

A record type given to :func:`register` travels to Spark's Python workers as
:mod:`~msgpack_reader_py._types.shipping` sends it to Dask's and Ray's: by reference where
they can import it, by value where they cannot (a type defined in a notebook or a script).
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import json
import os
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from ._base.extras import missing_extra

try:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
    from pyspark.sql.types import StructType
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
    raise missing_extra(exc, "spark", feature="msgpack_reader_py.spark") from None

from ._analysis.infer import Inferred
from ._analysis.inferred import InferFrom, infer_sources, table_type
from ._arrow.json_columns import leaves_changed, typed
from ._arrow.reader import DEFAULT_BATCH_SIZE, ArrowJob, arrow_schema, read_batches, rebatched
from ._base.errors import ReaderError
from ._base.ext import fluentd_event_time
from ._base.log import note_skipped
from ._base.options import OnError, ReadOptions
from ._split.index import INDEX_SUFFIX
from ._split.ranges import (
    ByteRange,
    Proof,
    RangeArguments,
    cut_file,
    read_range,
    size_of,
    splittable,
)
from ._split.seek import Counting
from ._stream.files import is_glob
from ._types.decoding import record_decoder
from ._types.names import TypeNotFound, record_type_named
from ._types.record_type import record_kind, type_label
from ._types.shipping import Shipped

__all__ = ["FORMAT", "OPTIONS", "MsgpackDataSource", "register", "spark_schema"]

FORMAT = "msgpack"
"""The name :func:`register` gives the source by default: ``spark.read.format("msgpack")``."""

OPTIONS = {
    "type": "the record type, as the command line's --type names it: item, MODULE:NAME (a "
    "module the workers import, or a .py file's path), or the name of a type given to "
    "register(); without it, one is inferred from every record of the files, as convert infers "
    "one for Parquet",
    "infer_from": "without type: infer it from the first N records of the files only (a later "
    "record the types do not hold then fails its task, named), or all (the default: every "
    "record, nothing dropped)",
    "blocksize": "the size in bytes of the ranges a file is cut into (default: eight per core "
    "Spark had when register() was called, 1 to 64 MiB each)",
    "on_error": "raise (default) or skip: pass over records that are not records of the type, "
    "counting them on the msgpack_reader_py logger of the worker that read them",
    "max_record_size": "the largest encoded record accepted, in bytes",
    "read_size": "the most bytes asked of a file in one read",
    "forbid_unknown_keys": "true: refuse a map-shaped record with a key that names no field",
    "forbid_repeated_keys": "true: refuse a record with a map that names a key twice (by "
    "default its last value is read)",
    "decompress": "false: read compressed files as they are (default true)",
    "fluentd": "true: read Fluentd's EventTime extension as a timestamp",
}
"""The options ``spark.read.format("msgpack")`` takes (besides the paths), and what each means."""

_PATHS = frozenset({"path", "paths"})
_HIDDEN = ("_", ".")  # as Spark's own file sources: _SUCCESS markers, dot files


def register(
    spark: SparkSession,
    *record_types: Any,
    types: Mapping[str, Any] | None = None,
    name: str = FORMAT,
) -> None:
    """Make ``spark.read.format(name)`` (``"msgpack"``) read MessagePack files.

    ``record_types`` (classes, named by their ``__name__``) and ``types`` (any record type,
    a union of kinds among them, by the name given) can then be named by the ``type`` option.
    They travel to Spark's Python workers with the source, as Dask's and Ray's tasks receive
    theirs (:mod:`~msgpack_reader_py._types.shipping`): by reference where the workers can
    import them, by value where they cannot (a class defined in a notebook or a script,
    ``__main__``; a ``msgspec.Struct`` made again there with its fields). One that cannot
    travel is refused here, with a ``TypeError`` saying what to do. The default size of the
    ranges a file is cut into is set from the cores Spark has now (``defaultParallelism``),
    and a relative path is taken from the current directory, as Spark's own file sources take
    one from the driver's (the workers' may be another).
    """
    named: dict[str, Any] = {}
    for record_type in record_types:
        label = getattr(record_type, "__name__", None)
        if not isinstance(label, str) or record_kind(record_type) is None:
            raise TypeError(
                f"register() takes record classes by position, got {record_type!r}: pass a "
                "union of kinds by name, types={'Event': Click | Key}"
            )
        named[label] = record_type
    named.update(types or {})
    shipped = {label: _shipped(label, record_type) for label, record_type in named.items()}
    try:
        parallelism = int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001  # pragma: no cover - Spark Connect, not run in the tests
        # Spark Connect has no SparkContext: the machine's cores.
        parallelism = os.cpu_count() or 1
    attributes = {
        "format": name,
        "types": shipped,
        "parallelism": parallelism,
        "directory": os.getcwd(),
    }
    # A class made here is sent to Spark's workers by value, these attributes with it.
    source = type("MsgpackDataSource", (MsgpackDataSource,), attributes)
    spark.dataSource.register(source)


def _shipped(label: str, record_type: Any) -> Shipped:
    """``record_type`` as it travels to Spark's workers, pickled now: what no reader reads,
    or what cannot be sent, is refused by ``register`` rather than by a worker."""
    if not isinstance(label, str) or not label:
        raise TypeError(f"a record type's name must be a non-empty str, got {label!r}")
    try:
        record_decoder(record_type)  # refuses what no reader reads, as --type does
        shipped = Shipped(record_type, type_label(record_type))
        shipped.payload  # noqa: B018 - pickled once, here, for every worker
    except TypeError as exc:  # shipping.UnshippableType among them
        raise type(exc)(f"register(): {label}: {exc}") from None
    return shipped


def spark_schema(record_type: Any) -> StructType:
    """The Spark schema of ``record_type``'s records: its Arrow schema
    (:func:`~msgpack_reader_py.arrow_schema`: nested records as structs, lists as
    arrays, maps as maps, ``X | None`` nullable, a union of kinds as its tag and every kind's
    fields) as Spark takes it on; a column of JSON text (a field of no one type) is a
    ``StringType`` column of that text, and one of ``uint64``
    (:data:`~msgpack_reader_py.UInt64`) a ``DecimalType(20, 0)`` (Spark has no unsigned type,
    and its ``LongType`` holds half of one). Raises ``TypeError`` for a ``msgpack.Timestamp``
    field: its nanoseconds have no Spark type."""
    stored = pa.schema(
        [
            field.with_type(leaves_changed(field.type, functools.partial(_spark_leaf, field.name)))
            for field in arrow_schema(record_type)
        ]
    )
    return from_arrow_schema(stored)


_UNSIGNED = pa.decimal128(20, 0)  # every uint64, exactly: 2**64 - 1 has 20 digits


def _spark_leaf(name: str, arrow_type: pa.DataType) -> pa.DataType:
    """A leaf of the field ``name`` as Spark holds it."""
    if pa.types.is_timestamp(arrow_type) and arrow_type.unit == "ns":
        raise TypeError(
            f"field `{name}`: a msgpack.Timestamp field holds nanoseconds, and Spark's "
            "timestamps hold microseconds: declare the field datetime to read it rounded to "
            "the microsecond"
        )
    return _UNSIGNED if pa.types.is_uint64(arrow_type) else arrow_type


@dataclasses.dataclass(frozen=True)
class _Typed:
    """How the reader gets its record type in each process it runs in: by its name (resolved
    there), as a type given to :func:`register` (shipped: made once per process from the
    same bytes, however many processes it passes through), or inferred (rebuilt there from
    what was inferred: the types inferred are made in one process, and pickle by reference
    to a module no other process has)."""

    name: str | None = None
    given: Shipped | None = None
    inferred: Inferred | None = None

    @property
    def record_type(self) -> Any:
        if self.inferred is not None:
            return table_type(self.inferred)  # made once per process (cached)
        if self.name is not None:
            return _named(self.name)
        assert self.given is not None
        return self.given.value


@functools.lru_cache(maxsize=64)
def _named(name: str) -> Any:
    """The record type ``name`` names (:func:`~._types.names.record_type_named`), once per process:
    a ``.py`` file's path makes a new module each time it is loaded."""
    return record_type_named(name)


class MsgpackDataSource(DataSource):
    """The ``msgpack`` data source (register it with :func:`register`): the files the path
    names, their records read with the options of :data:`OPTIONS`, as Spark rows whose schema
    is :func:`spark_schema` of the record type."""

    format: ClassVar[str] = FORMAT
    types: ClassVar[dict[str, Shipped]] = {}
    parallelism: ClassVar[int] = 1
    directory: ClassVar[str | None] = None
    """Where a relative local path is taken from (``None``: the worker's current directory)."""

    @classmethod
    def name(cls) -> str:
        return cls.format

    def schema(self) -> StructType:
        return spark_schema(self._typed().record_type)

    def reader(self, schema: StructType) -> DataSourceReader:
        typed = self._typed()
        expected = spark_schema(typed.record_type)
        if schema != expected:
            raise ValueError(
                f"{self.format}: the schema given to Spark must be the record type's, "
                f"{expected.simpleString()}; got {schema.simpleString()}: give the record type "
                "with the type option instead"
            )
        return _Reader(
            files=tuple(self._files()),
            typed=typed,
            options=self._read_options(),
            blocksize=self._blocksize(),
            workers=self.parallelism,
            target=to_arrow_schema(schema, timezone="UTC"),
        )

    def _typed(self) -> _Typed:
        """The record type the options ask for, or the one inferred from the files; every
        option checked and the files listed first, so that a mistake fails the ``load()``.
        Kept: Spark plans the read with the very instance ``schema()`` ran in, pickled."""
        known: _Typed | None = getattr(self, "_known", None)
        if known is not None:
            return known
        self._check_options()
        options = self._read_options()
        self._blocksize()
        files = self._files()
        name = self.options.get("type")
        infer_from = self._infer_from()
        if name is None:
            typed = _Typed(inferred=_inferred(self.format, files, options, infer_from))
        elif infer_from is not None:
            raise ValueError(
                f"{self.format}: option infer_from applies where a type is inferred: give it "
                "or the type option, not both"
            )
        elif name in self.types:
            typed = _Typed(given=self.types[name])
        else:
            typed = _Typed(name=name)
            self._check_named(name)
        self._known = typed
        return typed

    def _check_named(self, name: str) -> None:
        where = f"{self.format}: option type {name!r}"
        if name == "any":
            raise ValueError(
                f"{where}: Spark's columns need a record type; leave the option out to have "
                "one inferred from the records"
            )
        if name.rpartition(":")[0] == "__main__":
            raise ValueError(
                f"{where}: Spark's Python workers do not run your __main__ (a notebook, a "
                "script): pass the class to register(spark, Record) and name it "
                "type=Record, or define it in a module the workers import"
            )
        try:
            record_decoder(_named(name))  # refuses what no reader reads, as --type does
        except (TypeNotFound, TypeError) as exc:
            raise ValueError(f"{where}: {exc}") from None

    def _check_options(self) -> None:
        unknown = sorted(set(map(str.lower, self.options)) - _PATHS - set(OPTIONS))
        if unknown:
            raise ValueError(
                f"{self.format}: unknown option {unknown[0]!r}; the options are "
                f"{', '.join(OPTIONS)}"
            )

    def _read_options(self) -> ReadOptions:
        options = self.options
        where = f"{self.format}: option"
        try:
            return ReadOptions(
                ext_hook=fluentd_event_time if _flag(options, "fluentd", False) else None,
                forbid_unknown_keys=_flag(options, "forbid_unknown_keys", False),
                forbid_repeated_keys=_flag(options, "forbid_repeated_keys", False),
                max_record_size=_size(options, "max_record_size", ReadOptions.max_record_size),
                read_size=_size(options, "read_size", ReadOptions.read_size),
                on_error=typing.cast("OnError", options.get("on_error", "raise")),
                decompress=_flag(options, "decompress", True),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where} {exc}") from None

    def _infer_from(self) -> InferFrom:
        value = self.options.get("infer_from")
        if value is None or value.lower() == "all":
            return None if value is None else "all"
        try:
            return _size(self.options, "infer_from", 0, what="number of records or all")
        except ValueError as exc:
            raise ValueError(f"{self.format}: option {exc}") from None

    def _blocksize(self) -> int | None:
        if "blocksize" not in self.options:
            return None
        try:
            return _size(self.options, "blocksize", 0)
        except ValueError as exc:
            raise ValueError(f"{self.format}: option {exc}") from None

    def _files(self) -> list[Any]:
        """The files the paths name, in order: a local path as itself, a URL (``scheme://``) as
        an fsspec ``OpenFile``. Listed once, when the frame is made, as Spark's own file
        sources list theirs."""
        listed: list[Any] | None = getattr(self, "_listed", None)
        if listed is not None:
            return listed
        options = self.options
        if "paths" in options:
            paths = json.loads(options["paths"])
        elif "path" in options:
            paths = [options["path"]]
        else:
            raise ValueError(
                f'{self.format}: no path: spark.read.format("{self.format}").load(PATH)'
            )
        files: list[Any] = []
        for path in paths:
            if "://" in path:
                files.extend(_remote(path))
            else:
                files.extend(_local(os.path.join(self.directory or "", path)))
        self._listed = files
        return files


def _inferred(
    label: str, files: list[Any], options: ReadOptions, infer_from: InferFrom
) -> Inferred:
    """The record types of ``files``' records, inferred as ``convert`` infers them for Parquet:
    from every record, or the first ``infer_from``."""
    remote = [file for file in files if not isinstance(file, str)]
    if remote:
        raise ValueError(
            f"{label}: {_name(remote[0])}: a record type is inferred from local files only; "
            "give one with the type option"
        )
    return infer_sources(files, infer_from, options=options)[1]


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = options.get(name)
    if value is None:
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"{name} must be true or false, got {value!r}")


def _size(
    options: Mapping[str, str], name: str, default: int, *, what: str = "number of bytes"
) -> int:
    value = options.get(name)
    if value is None:
        return default
    try:
        size = int(value)
    except ValueError:
        size = 0
    if size <= 0:
        raise ValueError(f"{name} must be a positive {what}, got {value!r}")
    return size


def _listed(names: list[str]) -> list[str]:
    """The files of a glob or a directory, sorted: ``names`` less those Spark's own file
    sources hide (names starting with ``_`` or ``.``: ``_SUCCESS`` markers, dot files) and
    sidecar indexes (:mod:`._split.index`) of files among them, which are never records."""
    kept = {n for n in names if not os.path.basename(n).startswith(_HIDDEN)}
    return sorted(
        n for n in kept if not (n.endswith(INDEX_SUFFIX) and n[: -len(INDEX_SUFFIX)] in kept)
    )


def _local(path: str) -> list[str]:
    """The local files ``path`` names: itself, or a glob's matches or a directory's files
    (:func:`_listed`)."""
    if is_glob(path):
        found = _listed([f for f in glob.glob(path, recursive=True) if os.path.isfile(f)])
        if not found:
            raise FileNotFoundError(f"no files match {path!r}")
        return found
    if os.path.isdir(path):
        with os.scandir(path) as entries:
            names = [entry.path for entry in entries if entry.is_file()]
        return _listed(names)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file or directory: {path!r}")
    return [path]


def _remote(url: str) -> list[Any]:
    """The files a URL names, as fsspec ``OpenFile``s (a glob's matches, a directory's files)."""
    from fsspec.core import OpenFile, url_to_fs

    fs, path = url_to_fs(url)
    if is_glob(path):
        found = fs.glob(path, detail=True)
        paths = _listed([name for name, info in found.items() if info["type"] != "directory"])
        if not paths:
            raise FileNotFoundError(f"no files match {url!r}")
    elif fs.isdir(path):
        entries = fs.ls(path, detail=True)
        paths = _listed([info["name"] for info in entries if info["type"] != "directory"])
    elif fs.exists(path):
        paths = [path]
    else:
        raise FileNotFoundError(f"no such file or directory: {url!r}")
    return [OpenFile(fs, name, mode="rb") for name in paths]


def _name(file: Any) -> str:
    """How errors name a file: a local path as it was given, another file by its URL."""
    return file if isinstance(file, str) else str(file.full_name)


_FRAMED = Counting(force=True)
"""The proof's job: records framed, none decoded (a file that looks like another format is
still framed: its first record's error is the reader's, in its task)."""


@dataclasses.dataclass(frozen=True)
class _Part(InputPartition):
    """One Spark partition: a file read whole (``byte_range`` is ``None``), or one range of
    it, read from the proved offset ``proof.offset``, ``proof.before`` records before it, and
    the file's ranges before it, proved, in case its error is not the file's first."""

    file: Any
    byte_range: ByteRange | None = None
    proof: Proof = dataclasses.field(default_factory=Proof)
    earlier: tuple[tuple[ByteRange, Proof], ...] = ()


@dataclasses.dataclass
class _Reader(DataSourceReader):
    """Plans the read (:meth:`partitions`, proving each range's start) and reads a partition
    (:meth:`read`), in whatever process Spark runs each in."""

    files: tuple[Any, ...]
    typed: _Typed
    options: ReadOptions
    blocksize: int | None
    workers: int
    target: pa.Schema
    """The Arrow schema Spark expects of every batch (a column of JSON text as its text)."""

    def partitions(self) -> Sequence[InputPartition]:
        parts: list[InputPartition] = []
        for file in self.files:
            parts.extend(self._file_parts(file))
        return parts

    def _file_parts(self, file: Any) -> list[_Part]:
        record_type = self.typed.record_type
        ranges = self._ranges(file, record_type)
        if ranges is None:
            return [_Part(file)]
        arguments: RangeArguments = (record_type, self.options, _FRAMED)
        parts: list[_Part] = []
        earlier: list[tuple[ByteRange, Proof]] = []
        proof = Proof()
        for byte_range in ranges:
            if proof.offset >= byte_range.end:
                continue  # no record starts in it: one from before covers it whole
            parts.append(_Part(file, byte_range, proof, tuple(earlier)))
            earlier.append((byte_range, proof))
            piece = read_range(file, byte_range, *arguments, first=proof.offset)
            proof = proof.settle(piece, file, arguments)[1]
            if proof.error is not None:
                break  # the file's records end there: its task raises the error, exactly
        return parts

    def _ranges(self, file: Any, record_type: Any) -> list[ByteRange] | None:
        """The ranges of ``file``, or ``None`` for one read whole: it cannot be split
        (compressed other than in zstd frames on a local disk), or it fits in one range."""
        if splittable(file, record_type, self.options) is not None:
            return None
        if (
            self.blocksize is not None
            and size_of(file) <= self.blocksize
            and not isinstance(file, str)
        ):
            return None  # a remote file is never split at zstd frames: its size is its size
        ranges = cut_file(file, self.blocksize, self.workers, decompress=self.options.decompress)
        return ranges if len(ranges) > 1 else None

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Part)
        if partition.byte_range is None:
            return self._whole(partition.file)
        return self._range(partition)

    def _whole(self, file: Any) -> Iterator[pa.RecordBatch]:
        name = _name(file)
        record_type = self.typed.record_type
        try:
            with (
                _opened(file) as source,
                read_batches(source, record_type, options=self.options) as batches,
            ):
                for batch in batches:
                    yield self._spark_batch(batch.to_struct_array())
        except ReaderError as exc:
            raise exc.in_source(name) from None
        note_skipped(name, batches.skipped, batches.errors)

    def _range(self, part: _Part) -> Iterator[pa.RecordBatch]:
        assert part.byte_range is not None
        arguments: RangeArguments = (self.typed.record_type, self.options, ArrowJob())
        piece = read_range(part.file, part.byte_range, *arguments, first=part.proof.offset)
        piece = part.proof.settle(piece, part.file, arguments)[0]
        name = _name(part.file)
        where = f"{name} (bytes {part.proof.offset} to {part.byte_range.end})"
        note_skipped(where, piece.skipped, piece.errors)
        if piece.error is not None:
            raise self._first_error(part, piece.error, arguments).in_source(name) from None
        target = pa.struct(list(self.target))
        arrays = (typing.cast(pa.StructArray, typed(a, target)) for a in piece.value)
        yield from rebatched(arrays, DEFAULT_BATCH_SIZE)

    def _first_error(
        self, part: _Part, error: ReaderError, arguments: RangeArguments
    ) -> ReaderError:
        """The file's first error: one of the ranges before ``part``'s, read here, or
        ``error``, ``part``'s own. Another task may be reading them now, and Spark fails the
        job with whichever task fails first."""
        for byte_range, proof in part.earlier:
            piece = read_range(part.file, byte_range, *arguments, first=proof.offset)
            found = proof.settle(piece, part.file, arguments)[0].error
            if found is not None:
                return found
        return error

    def _spark_batch(self, array: pa.StructArray) -> pa.RecordBatch:
        spark = typing.cast(pa.StructArray, typed(array, pa.struct(list(self.target))))
        return pa.RecordBatch.from_struct_array(spark)


def _opened(file: Any) -> Any:
    """A local path as it is (the reader opens and owns it), an fsspec file opened."""
    if isinstance(file, str):
        return _Given(file)
    return file.open()


@dataclasses.dataclass
class _Given:
    """A path, in a ``with`` statement as an opened file would be."""

    path: str

    def __enter__(self) -> str:
        return self.path

    def __exit__(self, *exc: object) -> None:
        return None
