"""The text formats: records written as JSON Lines, CSV or a table for a person to read.

They take batches of records, as tuples of field values (typed) or as values (untyped), or
Arrow batches (the rows of a query); each batch is flushed as it is written, so that what was
read is there to see. Values are JSON as :mod:`.._base.json_text` writes them.

CSV (:class:`CsvRows`, RFC 4180) has a header row of field names, then one row per record:
text as it is, quoted only where it holds a comma, a quote or a line break; ``None`` an empty
cell; NaN and the infinities ``nan``, ``inf``, ``-inf``; any other value its JSON text
(``true``, ``1e-7``, ``[1,2]``, ``[1,NaN]``), or the text a JSON string of it holds (``bytes``
as base64, a timestamp as RFC 3339).
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import math
import operator
import re
import types
import typing
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, Literal

import msgspec

from .._base.atomic import NamedOutput
from .._base.json_text import json_key, json_lines, json_text, json_text_kept
from .._types.columns import columns_of, members
from .._types.record_type import literal_values, unannotated

if TYPE_CHECKING:
    import pyarrow as pa

from .formats import OutputFormat

__all__ = [
    "CsvRows",
    "CsvType",
    "Encoded",
    "Encoder",
    "JsonLines",
    "TableRows",
    "csv_cell",
    "csv_type",
    "cut",
    "display_width",
    "text_encoder",
    "text_out",
]


class JsonLines:
    """JSON Lines: one JSON value per record. With ``names``, each record is a row of field
    values (typed records), written as an object keyed by the names; without, each record is
    an untyped value, written as it is. With ``own_columns`` (rows of a union of kinds, the tag
    first: see :meth:`~.columns.Columns.own_columns`), each object holds its own kind's
    fields only."""

    def __init__(
        self,
        out: IO[str],
        names: Sequence[str] | None = None,
        *,
        allow_nan: bool = False,
        own_columns: dict[Any, tuple[int, ...]] | None = None,
    ) -> None:
        self._out = out
        self._names = None if names is None else tuple(names)
        self._allow_nan = allow_nan
        self._own = own_columns
        # A row of field values becomes an object as a Struct keyed by the names: made in C
        # and encoded in C, three times as fast as a dict made for each row. Untracked by the
        # garbage collector (a row of decoded values makes no cycle): tracked, a batch of them
        # set off two or three collections, a third of the time of `dump --type item`.
        self._row = None
        if names is not None and own_columns is None:
            fields = [f"f{i}" for i in range(len(names))]
            self._row = msgspec.defstruct(
                "Row",
                [(f, Any) for f in fields],
                rename=dict(zip(fields, names, strict=True)),
                gc=False,
            )

    def write(self, rows: Iterable[Any]) -> None:
        """Write each record: a value, or (with ``names``) a tuple of field values."""
        lines = self.encode(rows)
        if lines:
            _write_bytes(self._out, lines)

    def encode(self, rows: Iterable[Any]) -> bytes:
        """The lines :meth:`write` writes of ``rows``, as UTF-8."""
        if self._row is not None:
            batch = list(itertools.starmap(self._row, rows))
        else:
            batch = _objects(rows, self._names, self._own)
        lines = json_lines(batch)
        # msgspec writes NaN and the infinities as null: with allow_nan, only a batch that
        # shows a null is written a value at a time, and only a value that holds such a float
        # the slow way (json_text_kept).
        if lines is not None and not (self._allow_nan and b"null" in lines):
            return lines
        line = json_text_kept if self._allow_nan else json_text
        return "".join(line(v) + "\n" for v in batch).encode("utf-8")


def _write_bytes(out: IO[str], lines: bytes | IO[bytes]) -> None:
    """UTF-8 as msgspec made it (or a file of it), to the bytes under a text stream where it
    has them: not decoded to be encoded again."""
    buffer = getattr(out, "buffer", None)
    if not isinstance(lines, bytes):
        out.flush()
        with lines:  # spooled text comes only to a conversion's output, always named
            typing.cast(NamedOutput, buffer).write_from(lines)
    elif buffer is None:
        out.write(lines.decode("utf-8"))
    else:
        out.flush()  # what was written as text goes first
        buffer.write(lines)


def _objects(
    rows: Iterable[Any], names: Sequence[str] | None, own: dict[Any, tuple[int, ...]] | None
) -> list[Any]:
    """Records as JSON writes them: untyped values as they are, rows of field values (with
    ``names``) as dicts, each kind's with its own fields (with ``own``: each tag's columns)."""
    if names is None:
        return list(rows)
    if own is None:
        return [dict(zip(names, r, strict=True)) for r in rows]
    return [{names[p]: r[p] for p in own[r[0]]} for r in rows]


class TableRows:
    """Aligned columns for a person to read: a header line of field names, then a line per
    record, each cell cut at :attr:`WIDEST` characters with ``…``.

    The columns are every field seen so far, in the order they were first seen (a record
    without one has an empty cell there); the widths are those of the first batch. A batch
    that brings a new field (records of another kind, untyped maps with other keys) or needs
    wider columns begins with a header of its own. An untyped record is a map (its keys the
    columns), an array (columns ``f0``, ``f1``, ..., as untyped columns are named everywhere)
    or a value (the column ``value``). A cell
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
        own_columns: dict[Any, tuple[int, ...]] | None = None,
    ) -> None:
        self._write = out.write
        self._names = None if names is None else tuple(names)
        self._own = own_columns
        self._columns: dict[str, int] = {}  # name -> width

    def write(self, rows: Iterable[Any]) -> None:
        """Write each record: a value, or (with ``names``) a tuple of field values."""
        records = [_columned(r) for r in _objects(rows, self._names, self._own)]
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
        return {json_key(k): v for k, v in record.items()}
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


CsvType = Literal["text", "number", "float"]
"""What a CSV column holds, as :class:`CsvRows` needs to know it: ``text`` (``str``), ``number``
(``int`` or ``bool``), ``float`` (``float``, with ints or bools); any of them may be ``None``."""


def csv_type(annotation: Any) -> CsvType | None:
    """The :data:`CsvType` of a field's annotation (``X | None`` as ``X``; a ``Literal`` of
    strings text, of ints a number); ``None`` for a field of any other type, whose values
    are written as :func:`csv_cell` renders them."""
    inner, _ = members(annotation)
    options = set()
    for option in typing.get_args(inner) if _is_union(inner) else (inner,):
        values = literal_values(option)
        option = type(values[0]) if values else unannotated(option)
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


def csv_cell(value: Any) -> str | None:
    """A value as a CSV cell holds it: text as it is; ``None`` as nothing; NaN and the
    infinities as ``nan``, ``inf``, ``-inf``; anything else as its JSON text (``true``,
    ``1.5``, ``1e-7``, ``[1,2]``; a NaN or an infinity within it ``NaN``, ``Infinity``,
    ``-Infinity``, not strict JSON's null), or the text of the JSON string it is written as
    (``bytes`` as base64, a timestamp as RFC 3339)."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    text = json_text_kept(value)
    return str(msgspec.json.decode(text)) if text.startswith('"') else text


# A text cell JSON would not write as it stands in CSV: one with a character JSON escapes (a
# quote, a backslash, a control character) or CSV quotes for (a comma, a quote, a line break),
# or a bracket, which the JSON arrays' brackets are deleted with.
_UNPLAIN = re.compile(r'[",\\\[\]\x00-\x1f]')
_UNPLAIN_PRINTABLE = '",\\[]'  # those of them str.isprintable() passes
_QUOTED = re.compile(r'[",\r\n]')
_NULL = re.compile(rb"(?<=[\[,])null(?=[,\]])")
# A marked value, "\x00N", is \u0000N in JSON: text holding a backslash is marked itself, and
# no other value's JSON holds one.
_MARK = re.compile(rb"\\u0000([0-9]+)")
_plain = msgspec.json.Encoder()


def _mark(number: int) -> str:
    return f"\x00{number}"


def _all_plain(text: str) -> bool:
    """Whether ``text`` holds no character of :data:`_UNPLAIN`: a few scans in C, several
    times as fast as the expression's (a false alarm, a printable character outside ASCII
    that is no letter, costs only a look at each value)."""
    return text.isprintable() and not any(c in text for c in _UNPLAIN_PRINTABLE)


def _quoted(text: str) -> str:
    """``text`` as a CSV cell (RFC 4180): quoted, its quotes doubled, where it holds a comma,
    a quote or a line break."""
    return '"' + text.replace('"', '""') + '"' if _QUOTED.search(text) else text


class CsvRows:
    """CSV (RFC 4180): a header row of field names, then one row per record, each cell as
    :func:`csv_cell` gives it, quoted only where it holds a comma, a quote or a line break.

    ``types`` are the columns' :data:`CsvType` values (``None``: a column of any other type,
    whose cells are rendered first). A batch is written without a Python step per plain value:
    msgspec writes its rows as JSON arrays, which are its CSV once the brackets, the quotes and
    each ``null`` are taken out (one ``bytes.translate``). The values whose JSON is not their
    cell (text to quote, with a bracket or with characters JSON escapes; NaN, the infinities)
    are first replaced by a mark no other value's JSON holds, and their cells put in its place
    at the end.
    """

    def __init__(
        self, out: IO[str], names: Sequence[str], types: Sequence[CsvType | None] | None = None
    ) -> None:
        self._out = out
        given = [None] * len(names) if types is None else list(types)
        self._rendered = [p for p, t in enumerate(given) if t is None]
        held = ["text" if t is None else t for t in given]
        self._text = [p for p, t in enumerate(held) if t == "text"]
        self._floats = [p for p, t in enumerate(held) if t == "float"]
        self._every = list(range(len(held)))
        # A row of one empty cell would be a blank line, which CSV readers skip: it is '""'.
        self._one_column = len(names) == 1
        out.write(",".join(map(_quoted, names)) + "\n")

    def write(self, rows: Iterable[Sequence[Any]]) -> None:
        """Write each row of field values, in field order."""
        data = self.encode(rows)
        if data:
            _write_bytes(self._out, data)

    def encode(self, rows: Iterable[Sequence[Any]]) -> bytes:
        """The CSV rows :meth:`write` writes of ``rows``, as UTF-8 (the header row is written
        once, when the writer is made)."""
        batch = _with_cells(list(rows), self._rendered)
        if not batch:
            return b""
        try:
            return self._csv(batch, self._text, self._floats)
        except (TypeError, OverflowError):  # a value not of its column's kind: its cell's text
            return self._csv(_with_cells(batch, self._every), self._every, [])

    def _csv(self, batch: list[Sequence[Any]], texts: list[int], floats: list[int]) -> bytes:
        cells: list[bytes] = []
        lines = data = b""
        nulls = False  # whether lines hold a null: a search as long as the batch's JSON
        if not self._one_column:
            lines = _plain.encode_lines(batch)
            data = lines.translate(None, b'"[]')  # each row's brackets, each text's quotes
            # What the JSON shows of the values (scalars, checked as their columns' types):
            # text JSON escapes holds a backslash; a comma in text makes one more than the
            # rows hold; a bracket, one more taken out than the rows' and the quotes; NaN and
            # the infinities are null, as None is. Only then is each column looked at.
            rows = len(batch)
            nulls = b"null" in lines
            # Without a null, every text cell is one string, two quotes: none to count.
            quotes = lines.count(b'"') if nulls else 2 * rows * len(texts)
            if (
                b"\\" not in lines
                and data.count(b",") == rows * (len(self._every) - 1)
                and len(lines) - len(data) == 2 * rows + quotes
            ):
                texts = []
            if not nulls:
                floats = []
        if texts or floats or self._one_column:
            marked = _marked(batch, texts, floats, cells)
            if self._one_column:  # an empty cell alone is '""', not a blank line
                empty = len(cells)
                cells.append(b'""')
                marked = [
                    (_mark(empty),) if row[0] is None or row[0] == "" else row for row in marked
                ]
            if marked is not batch or not lines:
                lines = _plain.encode_lines(marked)
                data = b""
                nulls = b"null" in lines
        if nulls:
            lines = _NULL.sub(b"", lines)
            data = b""
        if not data:
            data = lines.translate(None, b'"[]')
        if cells:
            data = _MARK.sub(lambda mark: cells[int(mark[1])], data)
        return data


def _marked(
    batch: list[Sequence[Any]], texts: list[int], floats: list[int], cells: list[bytes]
) -> list[Sequence[Any]]:
    """The rows, with each value whose JSON is not its CSV cell replaced by a mark of N, its
    cell appended to ``cells`` (N its index there). A column is looked at value by value only where
    all of its values together show there is one: its text joined, its floats summed."""
    marked: dict[int, list[Any]] = {}

    def mark(index: int, position: int, cell: str) -> None:
        row = marked.get(index)
        if row is None:
            row = marked[index] = list(batch[index])
        row[position] = _mark(len(cells))
        cells.append(cell.encode("utf-8"))

    for position in texts:
        get = operator.itemgetter(position)
        if not _all_plain("".join(filter(None, map(get, batch)))):
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


Encoder = Callable[[Any], bytes]
"""What writes a batch of rows as text, in bytes (:func:`text_encoder`)."""


@dataclasses.dataclass(frozen=True)
class Encoded:
    """A batch of records already written as text (by the worker that read them, as
    :func:`text_encoder` writes them), and how many records it holds."""

    records: int
    data: bytes | IO[bytes]
    """The text, or an open file holding it from where it stands on (a worker's, spooled)."""

    def __len__(self) -> int:
        return self.records


def text_encoder(to: OutputFormat, record_type: Any, allow_nan: bool) -> Encoder:
    """What writes a batch of checked rows of ``record_type`` as JSON Lines or CSV (``to``)
    as :func:`text_out` would, but the CSV header row, as bytes to be written later: a
    batch's text does not depend on the batches before it (a table's would)."""
    writer = _writer(io.StringIO(), to, record_type, allow_nan)  # a header goes nowhere
    return typing.cast("JsonLines | CsvRows", writer).encode


def _writer(
    text: IO[str], to: OutputFormat, record_type: Any, allow_nan: bool
) -> JsonLines | CsvRows | TableRows:
    """The writer of ``to`` of records of ``record_type`` (``None``: untyped values)."""
    if record_type is None:
        return TableRows(text) if to == "table" else JsonLines(text, allow_nan=allow_nan)
    columns = columns_of(record_type)
    if to == "jsonl":
        own = columns.own_columns()
        return JsonLines(text, columns.names, allow_nan=allow_nan, own_columns=own)
    if to == "table":
        return TableRows(text, columns.names, own_columns=columns.own_columns())
    return CsvRows(text, columns.names, [csv_type(a) for a in columns.annotations])


@contextmanager
def text_out(
    out: Any, to: OutputFormat, record_type: Any, allow_nan: bool, arrow: pa.Schema | None = None
) -> Iterator[Callable[[Any], None]]:
    """Write batches of records (tuples of field values, or untyped values; or, given their
    ``arrow`` schema, Arrow batches; or batches :class:`Encoded` already) as text, each batch
    flushed: a batch is a read's records, and a reader of the output (a pipe, a terminal)
    sees them as they are read, not when a buffer fills."""
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    write: Callable[[Any], None]
    try:
        if arrow is not None:
            write = _arrow_rows(text, to, arrow, allow_nan)
        else:
            write = _writer(text, to, record_type, allow_nan).write

        def flushed(batch: Any) -> None:
            if type(batch) is Encoded:
                _write_bytes(text, batch.data)
            else:
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
    (a map a dict, a timestamp a ``datetime``, or a ``msgpack.Timestamp`` where it holds
    nanoseconds), rendered as a typed record's are."""
    from .._arrow.json_columns import nanoseconds_as_ints
    from .._arrow.json_columns import parsed as json_parsed

    as_ints = nanoseconds_as_ints(schema)
    if to != "csv":
        import pyarrow as pa

        lines = JsonLines(text, allow_nan=allow_nan) if to == "jsonl" else TableRows(text)
        parsed = json_parsed(pa.struct(list(schema)))

        def write_lines(batch: pa.RecordBatch) -> None:
            rows = as_ints(batch).to_pylist(maps_as_pydicts="strict")
            lines.write(rows if parsed is None else list(map(parsed, rows)))

        return write_lines
    rows = CsvRows(text, schema.names, [_arrow_csv_type(f.type) for f in schema])
    parsers = [json_parsed(f.type) for f in schema]

    def write_rows(batch: pa.RecordBatch) -> None:
        columns = as_ints(batch).to_pydict(maps_as_pydicts="strict").values()
        # JSON text parsed again: a cell holds the value as a typed record's would.
        parsed = [
            c if p is None else list(map(p, c)) for p, c in zip(parsers, columns, strict=True)
        ]
        rows.write(list(zip(*parsed, strict=True)))

    return write_rows


def _arrow_csv_type(arrow_type: pa.DataType) -> CsvType | None:
    """The :data:`CsvType` of an Arrow column (an inferred one's types: see :mod:`.infer`)."""
    import pyarrow as pa

    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return "number"
    if pa.types.is_floating(arrow_type):
        return "float"
    return None
