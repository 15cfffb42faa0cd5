"""The output formats: records written as JSON Lines, CSV, Arrow IPC or Parquet.

Text formats take batches of records, as tuples of field values (typed) or as values
(untyped); Arrow and Parquet take ``pyarrow.RecordBatch``es (:mod:`.arrow`). Every writer is
fed a batch at a time and flushes it, so that what was read is there to see.

Rendered as JSON (:class:`JsonLines`, :func:`json_text`):

- maps are objects; a key that is not a string becomes its JSON text (``1`` -> ``"1"``,
  ``true`` -> ``"true"``, ``[1, 2]`` -> ``"[1,2]"``), a bin or timestamp key the string it
  renders as;
- arrays are arrays; ``bin`` is base64 text;
- the timestamp extension is RFC 3339 text in UTC with nine fractional digits
  (``"2024-10-31T11:36:26.108998696Z"``), or, outside the years 1 to 9999, an extension
  object like any other;
- any other extension is ``{"ext": CODE, "base64": "..."}``;
- NaN and the infinities are ``null`` (strict JSON, as RFC 8259 wants), or, with
  ``allow_nan``, ``NaN``, ``Infinity`` and ``-Infinity`` as Python's ``json`` writes them.

Typed records render the same way: a record is an object keyed by its fields' names, a
``datetime`` RFC 3339 text (to the microsecond), an ``Enum`` its value.

CSV (:class:`CsvRows`) has a header row of field names, then one row per record; a value that
is not text, a number or a bool is its JSON text (``bytes`` as base64), ``None`` an empty cell.
"""

from __future__ import annotations

import base64
import csv
import io
import itertools
import json
import operator
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, Literal

import msgpack
import msgspec
from msgspec.msgpack import Ext

from .columns import Columns, columns_of, members
from .ext import rfc3339

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "FORMATS",
    "CsvRows",
    "JsonLines",
    "OutputFormat",
    "columns_out",
    "json_text",
    "text_cell",
    "text_out",
]

OutputFormat = Literal["parquet", "arrow", "csv", "jsonl"]
FORMATS: tuple[OutputFormat, ...] = ("parquet", "arrow", "csv", "jsonl")


def _ext(code: int, data: bytes) -> dict[str, Any]:
    return {"ext": code, "base64": base64.b64encode(data).decode("ascii")}


def _encode_hook(value: Any) -> Any:
    """What msgspec's JSON encoder cannot write itself."""
    if isinstance(value, msgpack.Timestamp):
        text = rfc3339(value)
        return _ext(-1, value.to_bytes()) if text is None else text
    if isinstance(value, Ext):
        return _ext(value.code, bytes(value.data))
    raise NotImplementedError(f"no JSON for {type(value).__name__}")


_encoder = msgspec.json.Encoder(enc_hook=_encode_hook)
_UNWRITABLE = (TypeError, NotImplementedError)  # what msgspec raises for such a key


def _jsonable(value: Any) -> Any:
    """``value`` made of what Python's ``json`` writes (floats left as they are): the slow
    path, for keys msgspec does not take and for ``allow_nan``."""
    if isinstance(value, dict):
        return {_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    converted = msgspec.to_builtins(value, enc_hook=_encode_hook, builtin_types=(float,))
    if converted is value or isinstance(converted, str):
        return converted
    return _jsonable(converted)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    plain = _jsonable(key)
    if isinstance(plain, str):
        return plain
    return _dumps(plain)


def json_text(value: Any, *, allow_nan: bool = False) -> str:
    """``value`` (untyped, or a typed record or field value) as one line of JSON."""
    if allow_nan:
        return _dumps(_jsonable(value))
    try:
        return _encoder.encode(value).decode("utf-8")
    except _UNWRITABLE:  # a key msgspec does not write (a bool, None, an array, bytes)
        return _encoder.encode(_jsonable(value)).decode("utf-8")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)


class JsonLines:
    """JSON Lines: one JSON value per record. With ``names``, each record is a row of field
    values (typed records), written as an object keyed by the names; without, each record is
    an untyped value, written as it is. With ``kinds`` (rows of a union of kinds, the tag
    first: see :meth:`~.columns.Columns.own_columns`), each object holds its own kind's
    fields only."""

    def __init__(
        self,
        out: IO[str],
        names: Sequence[str] | None = None,
        *,
        allow_nan: bool = False,
        kinds: dict[Any, tuple[int, ...]] | None = None,
    ) -> None:
        self._write = out.write
        self._names = None if names is None else tuple(names)
        self._allow_nan = allow_nan
        self._kinds = kinds

    def write(self, rows: Iterable[Any]) -> None:
        """Write each record: a value, or (with ``names``) a tuple of field values."""
        names = self._names
        kinds = self._kinds
        if names is None:
            batch = list(rows)
        elif kinds is None:
            batch = [dict(zip(names, r, strict=True)) for r in rows]
        else:
            batch = [{names[p]: r[p] for p in kinds[r[0]]} for r in rows]
        if not batch:
            return
        if not self._allow_nan:
            try:
                self._write(_encoder.encode_lines(batch).decode("utf-8"))
                return
            except _UNWRITABLE:
                pass  # a key msgspec does not write: record by record, the slow way
        self._write("".join(json_text(v, allow_nan=self._allow_nan) + "\n" for v in batch))


def text_cell(value: Any) -> Any:
    """A CSV cell: ``None``, text and numbers as they are, anything else as its JSON text (a
    ``datetime``, a timestamp or ``bytes`` as the string that text holds)."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    text = json_text(value)
    return msgspec.json.decode(text) if text.startswith('"') else text


class CsvRows:
    """CSV with a header row of field names; ``None`` is an empty cell.

    ``text_fields`` are the positions of ``str`` fields. Before Python 3.13 the csv module
    quotes a value for a line break only if it holds a character of the line terminator
    (``"\n"`` here), so a value with a lone ``"\r"`` would end the row early for every CSV
    reader; there, such rows are written fully quoted. Checking costs a few C-level passes over
    each 4096 rows.
    """

    _CHECKED = 4096

    def __init__(self, out: IO[str], names: Sequence[str], text_fields: Sequence[int] = ()) -> None:
        self._writer = csv.writer(out, lineterminator="\n")
        self._quote_all = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
        self._text = [operator.itemgetter(i) for i in text_fields]
        if sys.version_info >= (3, 13):
            self._text = []
        self._writer.writerow(names)

    def write(self, rows: Iterable[Sequence[Any]]) -> None:
        """Write each row of field values, in field order."""
        if not self._text:
            self._writer.writerows(rows)
            return
        rows = iter(rows)
        while True:
            batch: list[Sequence[Any]] = []
            try:
                batch.extend(itertools.islice(rows, self._CHECKED))
            finally:  # the rows before a failing one are written, as writerows would
                self._write_checked(batch)
            if len(batch) < self._CHECKED:
                return

    def _write_checked(self, batch: list[Sequence[Any]]) -> None:
        if not any("\r" in "".join(filter(None, map(get, batch))) for get in self._text):
            self._writer.writerows(batch)
            return
        for row in batch:
            carriage = any(isinstance(value, str) and "\r" in value for value in row)
            (self._quote_all if carriage else self._writer).writerow(row)


@contextmanager
def text_out(
    out: Any, to: OutputFormat, record_type: Any, allow_nan: bool
) -> Iterator[Callable[[Any], None]]:
    """Write batches of records (tuples of field values, or untyped values) as text, each
    batch flushed: a batch is a read's records, and a reader of the output (a pipe, a
    terminal) sees them as they are read, not when a buffer fills."""
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    write: Callable[[Any], None]
    try:
        if record_type is None:
            write = JsonLines(text, allow_nan=allow_nan).write
        else:
            columns = columns_of(record_type)
            if to == "jsonl":
                kinds = columns.own_columns()
                write = JsonLines(text, columns.names, allow_nan=allow_nan, kinds=kinds).write
            else:
                write = _cells(columns, CsvRows(text, columns.names, columns.text_fields()).write)

        def flushed(batch: Any) -> None:
            write(batch)
            text.flush()

        yield flushed
        text.flush()
    finally:
        text.detach()  # the stream is the caller's to close


def _cells(columns: Columns, write: Callable[[Any], None]) -> Callable[[Any], None]:
    """``write`` of CSV rows, with each field that is not text, a number or a bool as the text
    JSON gives it (``bytes`` as base64)."""
    plain = (str, int, float, bool, type(None))
    rendered = [p for p, a in enumerate(columns.annotations) if members(a)[0] not in plain]
    if not rendered:
        return write

    def write_cells(rows: list[Sequence[Any]]) -> None:
        cells = [list(row) for row in rows]
        for row in cells:
            for position in rendered:
                row[position] = text_cell(row[position])
        write(cells)

    return write_cells


@contextmanager
def columns_out(out: Any, to: OutputFormat, schema: pa.Schema) -> Iterator[Callable[[Any], None]]:
    """Write Arrow batches as Parquet (a row group each) or as an Arrow IPC file."""
    sink: Any = out  # any binary file object: pyarrow wraps it
    if to == "parquet":
        import pyarrow.parquet as pq

        writer: Any = pq.ParquetWriter(sink, schema)
    else:
        import pyarrow as pa

        writer = pa.ipc.new_file(sink, schema)
    try:
        yield writer.write_batch
    finally:
        writer.close()
