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

CSV (:class:`CsvRows`, RFC 4180) has a header row of field names, then one row per record:
text as it is, quoted only where it holds a comma, a quote or a line break; ``None`` an empty
cell; NaN and the infinities ``nan``, ``inf``, ``-inf``; any other value its JSON text as
above (``true``, ``1e-7``, ``[1,2]``), or the text a JSON string of it holds (``bytes`` as
base64, a timestamp as RFC 3339).
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import math
import operator
import re
import threading
import types
import typing
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, Literal

import msgpack
import msgspec
from msgspec.msgpack import Ext

from .._base.ext import rfc3339
from .._types.columns import columns_of, members
from .._types.record_type import literal_values

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "COLUMNAR",
    "COMPRESSIONS",
    "DEFAULT_COMPRESSION",
    "FORMATS",
    "Compression",
    "CsvKind",
    "CsvRows",
    "JsonLines",
    "OutputFormat",
    "TableRows",
    "columns_out",
    "csv_cell",
    "csv_kind",
    "cut",
    "display_width",
    "json_text",
    "output_settings",
    "text_out",
]

OutputFormat = Literal["parquet", "arrow", "csv", "jsonl", "table"]
FORMATS: tuple[OutputFormat, ...] = ("parquet", "arrow", "csv", "jsonl")
"""The file formats (``convert --to``); ``table`` is for a person to read (``dump``)."""
COLUMNAR: tuple[OutputFormat, ...] = ("parquet", "arrow", "csv")
"""The formats whose columns are fixed before the first record: untyped records need a
record type inferred for them."""

Compression = Literal["zstd", "lz4", "snappy", "gzip", "none"]
COMPRESSIONS: tuple[Compression, ...] = ("zstd", "lz4", "snappy", "gzip", "none")
DEFAULT_COMPRESSION: dict[OutputFormat, Compression] = {"parquet": "zstd", "arrow": "none"}
"""Each columnar format's codec when none is asked for. Parquet: zstd, the smallest output of
the codecs at about snappy's speed on the reference data (``benchmarks/compression.py``; the
figures are in doc/RESULTS.md). Arrow IPC: uncompressed, which a reader can map into memory
and use without a copy, the point of the format; its buffers compress with zstd or lz4 only."""
_ARROW_COMPRESSIONS: tuple[Compression, ...] = ("zstd", "lz4", "none")
_IPC_CODECS: dict[Compression | None, Literal["zstd", "lz4"]] = {"zstd": "zstd", "lz4": "lz4"}
# Arrow's own gzip level is 9: on a million reference records it took about six times as long
# as zlib's default, 6 (gzip's), for a file 0.3% smaller.
_PARQUET_LEVELS: dict[Compression | None, int] = {"gzip": 6}


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
        self._out = out
        self._names = None if names is None else tuple(names)
        self._allow_nan = allow_nan
        self._kinds = kinds
        # A row of field values becomes an object as a Struct keyed by the names: made in C
        # and encoded in C, three times as fast as a dict made for each row.
        self._row = None
        if names is not None and kinds is None:
            fields = [f"f{i}" for i in range(len(names))]
            self._row = msgspec.defstruct(
                "Row", [(f, Any) for f in fields], rename=dict(zip(fields, names, strict=True))
            )

    def write(self, rows: Iterable[Any]) -> None:
        """Write each record: a value, or (with ``names``) a tuple of field values."""
        if self._row is not None:
            batch = list(itertools.starmap(self._row, rows))
        else:
            batch = _objects(rows, self._names, self._kinds)
        if not batch:
            return
        if not self._allow_nan:
            try:
                lines = _encoder.encode_lines(batch)
            except _UNWRITABLE:
                pass  # a key msgspec does not write: record by record, the slow way
            else:
                _write_bytes(self._out, lines)
                return
        self._out.write("".join(json_text(v, allow_nan=self._allow_nan) + "\n" for v in batch))


def _write_bytes(out: IO[str], lines: bytes) -> None:
    """UTF-8 as msgspec made it, to the bytes under a text stream where it has them: not
    decoded to be encoded again."""
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(lines.decode("utf-8"))
        return
    out.flush()  # what was written as text goes first
    buffer.write(lines)


def _objects(
    rows: Iterable[Any], names: Sequence[str] | None, kinds: dict[Any, tuple[int, ...]] | None
) -> list[Any]:
    """Records as JSON writes them: untyped values as they are, rows of field values (with
    ``names``) as dicts, each kind's with its own fields (with ``kinds``)."""
    if names is None:
        return list(rows)
    if kinds is None:
        return [dict(zip(names, r, strict=True)) for r in rows]
    return [{names[p]: r[p] for p in kinds[r[0]]} for r in rows]


class TableRows:
    """Aligned columns for a person to read: a header line of field names, then a line per
    record, each cell cut at :attr:`WIDEST` characters with ``…``.

    The columns are every field seen so far, in the order they were first seen (a record
    without one has an empty cell there); the widths are those of the first batch. A batch
    that brings a new field (records of another kind, untyped maps with other keys) or needs
    wider columns begins with a header of its own. An untyped record is a map (its keys the
    columns), an array (columns ``0``, ``1``, ...) or a value (the column ``value``). A cell
    is a value's text as CSV writes it (JSON text for lists and maps), a string's control
    characters escaped, ``None`` an empty cell; numbers are aligned right, and wide (East
    Asian) characters count two columns.
    """

    WIDEST = 40

    def __init__(
        self,
        out: IO[str],
        names: Sequence[str] | None = None,
        *,
        kinds: dict[Any, tuple[int, ...]] | None = None,
    ) -> None:
        self._write = out.write
        self._names = None if names is None else tuple(names)
        self._kinds = kinds
        self._columns: dict[str, int] = {}  # name -> width

    def write(self, rows: Iterable[Any]) -> None:
        """Write each record: a value, or (with ``names``) a tuple of field values."""
        records = [_columned(r) for r in _objects(rows, self._names, self._kinds)]
        if not records:
            return
        columns = dict(self._columns)
        for record in records:
            for name in record:
                columns.setdefault(name, 0)
        missing = ("", False)
        cells = [[_table_cell(r[c]) if c in r else missing for c in columns] for r in records]
        widths = [
            min(
                max([display_width(name), *(display_width(row[i][0]) for row in cells)]),
                self.WIDEST,
            )
            for i, name in enumerate(columns)
        ]
        lines = []
        if any(w > columns[name] for name, w in zip(columns, widths, strict=True)):
            self._columns = dict(zip(columns, map(max, widths, columns.values()), strict=True))
            lines.append(self._line([(cut(name), False) for name in columns]))
            lines.append(self._line([("-" * w, False) for w in self._columns.values()]))
        lines.extend(self._line(row) for row in cells)
        self._write("".join(lines))

    def _line(self, cells: Sequence[tuple[str, bool]]) -> str:
        padded = []
        for (text, number), width in zip(cells, self._columns.values(), strict=True):
            pad = " " * (width - display_width(text))
            padded.append(pad + text if number else text + pad)
        return "  ".join(padded).rstrip() + "\n"


def _columned(record: Any) -> dict[str, Any]:
    if isinstance(record, dict):
        return {_key(k): v for k, v in record.items()}
    if isinstance(record, (list, tuple)):
        # Named as an untyped record's columns are everywhere (schema, --where, Parquet).
        return {f"f{i}": v for i, v in enumerate(record)}
    return {"value": record}


def _table_cell(value: Any) -> tuple[str, bool]:
    """A value's text in a table, cut to :attr:`TableRows.WIDEST`, and whether it is a number."""
    if isinstance(value, bool):
        return ("true" if value else "false"), False
    if isinstance(value, (int, float)):
        return cut(repr(value)), True
    cell = csv_cell(value)
    text = "" if cell is None else str(cell)
    if not text.isprintable():
        text = json_text(text)[1:-1]  # a line break or a tab would break the table
    return cut(text), False


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: two for a wide (East Asian) character."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def cut(text: str, width: int | None = None) -> str:
    """``text`` cut to ``width`` columns (default :attr:`TableRows.WIDEST`), with ``…``
    where it was cut."""
    width = TableRows.WIDEST if width is None else width
    if display_width(text) <= width:
        return text
    while display_width(text) > width - 1:
        text = text[: -max(1, (display_width(text) - width + 1) // 2)]
    return text + "…"


CsvKind = Literal["text", "number", "float"]
"""What a CSV column holds, as :class:`CsvRows` needs to know it: ``text`` (``str``), ``number``
(``int`` or ``bool``), ``float`` (``float``, with ints or bools); any of them may be ``None``."""


def csv_kind(annotation: Any) -> CsvKind | None:
    """The :data:`CsvKind` of a field's annotation (``X | None`` as ``X``; a ``Literal`` of
    strings text, of ints a number); ``None`` for a field of any other type, whose values
    are written as :func:`csv_cell` renders them."""
    inner, _ = members(annotation)
    options = set()
    for option in typing.get_args(inner) if _is_union(inner) else (inner,):
        values = literal_values(option)
        option = type(values[0]) if values else _bare(option)
        options.add(option)
    if options == {str}:
        return "text"
    if options <= {int, bool}:
        return "number"
    if options <= {int, bool, float}:
        return "float"
    return None


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _bare(annotation: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` (a constrained type: ``Annotated[int, Meta(ge=0)]``)."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def csv_cell(value: Any) -> str | None:
    """A value as a CSV cell holds it: text as it is; ``None`` as nothing; NaN and the
    infinities as ``nan``, ``inf``, ``-inf``; anything else as its JSON text (``true``,
    ``1.5``, ``1e-7``, ``[1,2]``), or the text of the JSON string it is written as (``bytes``
    as base64, a timestamp as RFC 3339)."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    text = json_text(value)
    return str(msgspec.json.decode(text)) if text.startswith('"') else text


# A text cell JSON would not write as it stands in CSV: one with a character JSON escapes (a
# quote, a backslash, a control character) or CSV quotes for (a comma, a quote, a line break),
# or a bracket, which would blur where a JSON array's values begin and end.
_UNPLAIN = re.compile(r'[",\\\[\]\x00-\x1f]')
_QUOTED = re.compile(r'[",\r\n]')
_NULL = re.compile(rb"(?<=[\[,])null(?=[,\]])")
_MARK = re.compile(rb"\[([0-9]+)\]")
_plain = msgspec.json.Encoder()


def _quoted(text: str) -> str:
    """``text`` as a CSV cell (RFC 4180): quoted, its quotes doubled, where it holds a comma,
    a quote or a line break."""
    return '"' + text.replace('"', '""') + '"' if _QUOTED.search(text) else text


class CsvRows:
    """CSV (RFC 4180): a header row of field names, then one row per record, each cell as
    :func:`csv_cell` gives it, quoted only where it holds a comma, a quote or a line break.

    ``kinds`` are the columns' :data:`CsvKind` values (``None``: a column of any other type,
    whose cells are rendered first). A batch is written without a Python step per plain value:
    msgspec writes its rows as JSON arrays, which are its CSV once the brackets, the quotes and
    each ``null`` are taken out. The values whose JSON is not their cell (text to quote or
    with characters JSON escapes, NaN, the infinities) are first replaced by ``[N]``, which
    plain text cannot hold, and their cells put in its place at the end.
    """

    def __init__(
        self, out: IO[str], names: Sequence[str], kinds: Sequence[CsvKind | None] | None = None
    ) -> None:
        self._out = out
        kinds = [None] * len(names) if kinds is None else list(kinds)
        self._rendered = [p for p, k in enumerate(kinds) if k is None]
        kinds = ["text" if k is None else k for k in kinds]
        self._text = [p for p, k in enumerate(kinds) if k == "text"]
        self._floats = [p for p, k in enumerate(kinds) if k == "float"]
        self._every = list(range(len(kinds)))
        # A row of one empty cell would be a blank line, which CSV readers skip: it is '""'.
        self._one_column = len(names) == 1
        out.write(",".join(map(_quoted, names)) + "\n")

    def write(self, rows: Iterable[Sequence[Any]]) -> None:
        """Write each row of field values, in field order."""
        batch = _with_cells(list(rows), self._rendered)
        if not batch:
            return
        try:
            data = self._csv(batch, self._text, self._floats)
        except (TypeError, OverflowError):  # a value not of its column's kind: its cell's text
            data = self._csv(_with_cells(batch, self._every), self._every, [])
        _write_bytes(self._out, data)

    def _csv(self, batch: list[Sequence[Any]], texts: list[int], floats: list[int]) -> bytes:
        cells: list[bytes] = []
        marked = _marked(batch, texts, floats, cells)
        if self._one_column:  # an empty cell alone is '""', not a blank line
            empty = len(cells)
            cells.append(b'""')
            marked = [(f"[{empty}]",) if row[0] is None or row[0] == "" else row for row in marked]
        lines = _plain.encode_lines(marked)
        if b"null" in lines:
            lines = _NULL.sub(b"", lines)
        data = lines[1:-2].replace(b"]\n[", b"\n").replace(b'"', b"") + b"\n"
        if cells:
            data = _MARK.sub(lambda mark: cells[int(mark[1])], data)
        return data


def _marked(
    batch: list[Sequence[Any]], texts: list[int], floats: list[int], cells: list[bytes]
) -> list[Sequence[Any]]:
    """The rows, with each value whose JSON is not its CSV cell replaced by ``[N]``, its cell
    appended to ``cells`` (N its index there). A column is looked at value by value only where
    all of its values together show there is one: its text joined, its floats summed."""
    marked: dict[int, list[Any]] = {}

    def mark(index: int, position: int, cell: str) -> None:
        row = marked.get(index)
        if row is None:
            row = marked[index] = list(batch[index])
        row[position] = f"[{len(cells)}]"
        cells.append(cell.encode("utf-8"))

    for position in texts:
        get = operator.itemgetter(position)
        if _UNPLAIN.search("".join(filter(None, map(get, batch)))):
            for index, value in enumerate(map(get, batch)):
                if value and _UNPLAIN.search(value):
                    mark(index, position, _quoted(value))
    for position in floats:
        get = operator.itemgetter(position)
        if not math.isfinite(sum(filter(None, map(get, batch)))):
            for index, value in enumerate(map(get, batch)):
                if isinstance(value, float) and not math.isfinite(value):
                    mark(index, position, repr(value))
    if not marked:
        return batch
    return [marked.get(index, row) for index, row in enumerate(batch)]


def _with_cells(batch: list[Sequence[Any]], positions: list[int]) -> list[Sequence[Any]]:
    """The rows, with the values at ``positions`` as :func:`csv_cell` gives them."""
    if not positions:
        return batch
    rows: list[Sequence[Any]] = []
    for row in batch:
        cells = list(row)
        for position in positions:
            cells[position] = csv_cell(cells[position])
        rows.append(cells)
    return rows


@contextmanager
def text_out(
    out: Any, to: OutputFormat, record_type: Any, allow_nan: bool, arrow: pa.Schema | None = None
) -> Iterator[Callable[[Any], None]]:
    """Write batches of records (tuples of field values, or untyped values; or, given their
    ``arrow`` schema, Arrow batches) as text, each batch flushed: a batch is a read's
    records, and a reader of the output (a pipe, a terminal) sees them as they are read, not
    when a buffer fills."""
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    write: Callable[[Any], None]
    try:
        if arrow is not None:
            write = _arrow_rows(text, to, arrow, allow_nan)
        elif record_type is None:
            untyped = TableRows(text) if to == "table" else JsonLines(text, allow_nan=allow_nan)
            write = untyped.write
        else:
            columns = columns_of(record_type)
            if to == "jsonl":
                kinds = columns.own_columns()
                write = JsonLines(text, columns.names, allow_nan=allow_nan, kinds=kinds).write
            elif to == "table":
                write = TableRows(text, columns.names, kinds=columns.own_columns()).write
            else:
                csv_kinds = [csv_kind(a) for a in columns.annotations]
                write = CsvRows(text, columns.names, csv_kinds).write

        def flushed(batch: Any) -> None:
            write(batch)
            text.flush()

        yield flushed
        text.flush()
    finally:
        text.detach()  # the stream is the caller's to close


def _arrow_rows(
    text: IO[str], to: OutputFormat, schema: pa.Schema, allow_nan: bool
) -> Callable[[pa.RecordBatch], None]:
    """``write`` of Arrow batches as JSON Lines or CSV: each row's values as Python has them
    (a map a dict, a timestamp a ``datetime``), rendered as a typed record's are."""
    if to != "csv":
        import pyarrow as pa

        from .._arrow.json_columns import parsed as json_parsed

        lines = JsonLines(text, allow_nan=allow_nan) if to == "jsonl" else TableRows(text)
        parsed = json_parsed(pa.struct(list(schema)))

        def write_lines(batch: pa.RecordBatch) -> None:
            rows = batch.to_pylist(maps_as_pydicts="strict")
            lines.write(rows if parsed is None else list(map(parsed, rows)))

        return write_lines
    from .._arrow.json_columns import parsed as json_parsed

    rows = CsvRows(text, schema.names, [_arrow_csv_kind(f.type) for f in schema])
    parsers = [json_parsed(f.type) for f in schema]

    def write_rows(batch: pa.RecordBatch) -> None:
        columns = batch.to_pydict(maps_as_pydicts="strict").values()
        # JSON text parsed again: a cell holds the value as a typed record's would.
        parsed = [
            c if p is None else list(map(p, c)) for p, c in zip(parsers, columns, strict=True)
        ]
        rows.write(list(zip(*parsed, strict=True)))

    return write_rows


def _arrow_csv_kind(arrow_type: pa.DataType) -> CsvKind | None:
    """The :data:`CsvKind` of an Arrow column (an inferred one's types: see :mod:`.infer`)."""
    import pyarrow as pa

    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return "number"
    if pa.types.is_floating(arrow_type):
        return "float"
    return None


def output_settings(
    to: OutputFormat, compression: Compression | None, row_group_size: int | None
) -> Compression | None:
    """Check the output options for the format ``to``; the codec it will be written with
    (``None`` for a text format).

    ``compression`` (one of :data:`COMPRESSIONS`; ``None``: the format's
    :data:`DEFAULT_COMPRESSION`) applies to Parquet, and to Arrow IPC as zstd, lz4 or none:
    its buffers have no snappy or gzip. ``row_group_size`` (a positive int) applies to Parquet
    alone. Raises ``ValueError`` for a value that is not one, or that the format does not take:
    an option that would do nothing is refused rather than ignored."""
    if compression is not None:
        if compression not in COMPRESSIONS:
            raise ValueError(
                f"compression must be one of {', '.join(COMPRESSIONS)}; got {compression!r}"
            )
        if to not in DEFAULT_COMPRESSION:
            raise ValueError(f"compression applies to parquet and arrow, not {to}")
        if to == "arrow" and compression not in _ARROW_COMPRESSIONS:
            raise ValueError(
                f"arrow compresses with {', '.join(_ARROW_COMPRESSIONS)} only, not {compression}"
            )
    if row_group_size is not None:
        if (
            isinstance(row_group_size, bool)
            or not isinstance(row_group_size, int)
            or row_group_size <= 0
        ):
            raise ValueError(f"row_group_size must be a positive int, got {row_group_size!r}")
        if to != "parquet":
            raise ValueError(f"row_group_size applies to parquet only, not {to}")
    if to not in DEFAULT_COMPRESSION:
        return None
    return DEFAULT_COMPRESSION[to] if compression is None else compression


@contextmanager
def columns_out(
    out: Any,
    to: OutputFormat,
    schema: pa.Schema,
    *,
    compression: Compression | None = None,
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
    kept = _Kept(out)
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
            writer.close()
            sink.detach()  # what is buffered is written; the stream stays the caller's
            kept.raise_failure()


_SINK_BUFFER = 4 << 20
DICTIONARY_SAMPLE = 65536
"""The records whose values decide which Parquet columns are dictionary-encoded."""


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
    import pyarrow.compute as pc
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
            distinct = pc.count_distinct(storage(sample.column(field.name))).as_py()
            if 2 * distinct >= sample.num_rows:
                varied.add(field.name)
    # A plain column's one leaf is its name (dots and all); nested columns are never varied.
    return [leaf for leaf in leaves if leaf not in varied]


class _Kept(io.RawIOBase):
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
        self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def _run(self) -> None:
        while (batch := self._queue.get()) is not _DONE:
            if self._failure is None:  # after a failure, batches are only taken, not written
                try:
                    self._write(batch)
                except BaseException as exc:  # noqa: BLE001 - raised again in the caller
                    self._failure = exc


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
