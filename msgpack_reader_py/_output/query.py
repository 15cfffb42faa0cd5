"""Projection and filtering of records in SQL: ``--select a,b.c`` and ``--where EXPR``.

The records are Arrow batches (:mod:`.arrow`); DuckDB, not a parser of ours, evaluates
``SELECT <paths> FROM records WHERE <EXPR>`` on each batch as it is read, so a filter runs in
constant memory and ``EXPR`` is any SQL expression DuckDB takes (``value > 100 and level =
'warn'``, ``filename like '%.py'``, ``inner.level in (1, 2)``, ``regexp_matches(path, '^/srv')``).
A path's dots step into nested records (``b.c`` is field ``c`` of field ``b``), and the column
it makes is named ``b.c``. Needs the ``duckdb`` extra.

The query is checked once, against the record type's columns, before a record is read: a path
or an expression that names no field, or one that does not parse, is a :class:`QueryError`
saying what DuckDB says, with the fields there are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._base.extras import check_version, missing_extra

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Query", "QueryError", "parse_select"]

_TABLE = "records"


class QueryError(ValueError):
    """A ``select`` or ``where`` that names no field, or that SQL cannot read."""


def parse_select(text: str) -> tuple[str, ...]:
    """The paths of a ``--select`` list: ``"a, b.c"`` -> ``("a", "b.c")``."""
    paths = tuple(path.strip() for path in text.split(","))
    if any(not step for path in paths for step in path.split(".")):
        raise QueryError(f"select {text!r}: give field paths separated by commas, like a,b.c")
    return paths


@dataclasses.dataclass(frozen=True)
class Query:
    """``SELECT select FROM records WHERE where``, for batches of one Arrow schema.

    ``select`` lists the paths to keep, in order (default: every column); ``where``, the SQL
    expression a record must satisfy (default: every record). :meth:`apply` runs it on a
    batch; :attr:`schema` is the schema of what comes out.
    """

    source_schema: pa.Schema
    select: tuple[str, ...] | None = None
    where: str | None = None
    schema: pa.Schema = dataclasses.field(init=False)
    _sql: str = dataclasses.field(init=False)
    _connection: Any = dataclasses.field(init=False, repr=False, compare=False)
    # The columns a batch goes to DuckDB without: those whose nanoseconds it would cut, where
    # the query neither reads nor writes them.
    _left_out: tuple[str, ...] = dataclasses.field(init=False, default=())

    def __post_init__(self) -> None:
        try:
            import duckdb
            import pyarrow as pa
        except ModuleNotFoundError as exc:
            raise missing_extra(exc, "duckdb", feature="select and where") from None
        check_version("duckdb", duckdb.__version__, "select and where", "duckdb")
        columns = "*" if self.select is None else ", ".join(map(_column, self.select))
        sql = f"SELECT {columns} FROM {_TABLE}"
        if self.where is not None:
            sql += f" WHERE ({self.where})"  # bracketed: it is one expression, whatever it holds
        connection = duckdb.connect()
        # Timestamps come back in the zone they went in (DuckDB would name it Etc/UTC).
        connection.execute("SET TimeZone = 'UTC'")
        # A JSON column (values of no one type) comes back as JSON, not as text.
        connection.execute("SET arrow_lossless_conversion = true")
        object.__setattr__(self, "_sql", sql)
        object.__setattr__(self, "_connection", connection)
        from .._arrow.duckdb_types import lost_message, lost_nanoseconds

        empty = pa.Table.from_batches([], schema=self.source_schema)
        try:
            schema = self._run(empty).schema
        except duckdb.Error as exc:
            raise QueryError(self._explained(exc)) from None
        lost = lost_nanoseconds(connection, self.source_schema)
        if lost:
            # Asked of DuckDB itself: the query, run without those columns, gives the same
            # columns (it writes none of them) and binds (it reads none of them).
            kept = pa.schema([f for f in self.source_schema if f.name not in lost])
            try:
                without = self._run(pa.Table.from_batches([], schema=kept)).schema
            except duckdb.Error:
                without = None
            if without is None or without.names != schema.names:
                raise QueryError(f"{self._asked()}: {lost_message(lost[0])}")
            object.__setattr__(self, "_left_out", tuple(lost))
            schema = without
        object.__setattr__(self, "schema", schema)

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The batch's records that satisfy ``where``, with the ``select`` columns."""
        import pyarrow as pa

        chunks = self._run(batch).combine_chunks().to_batches()
        if chunks:
            return chunks[0]
        return pa.RecordBatch.from_pylist([], schema=self.schema)

    def close(self) -> None:
        """Close the query's DuckDB connection."""
        self._connection.close()

    def _run(self, batch: pa.RecordBatch | pa.Table) -> pa.Table:
        if self._left_out:
            batch = batch.drop_columns(list(self._left_out))
        self._connection.register(_TABLE, batch)
        try:
            table: pa.Table = self._connection.sql(self._sql).to_arrow_table()
        finally:
            self._connection.unregister(_TABLE)
        return table

    def _explained(self, exc: Exception) -> str:
        """DuckDB's message, its first line (the rest points into SQL the user never wrote),
        and the fields there are."""
        said = str(exc).splitlines()[0]
        fields = ", ".join(_paths(self.source_schema))
        return f"{self._asked()}: {said} (the fields: {fields})"

    def _asked(self) -> str:
        """The query as it was asked for: ``select 'a,b' where 'a > 1'``."""
        asked = [f"select {','.join(self.select)!r}"] if self.select is not None else []
        asked += [f"where {self.where!r}"] if self.where is not None else []
        return " ".join(asked)


def _column(path: str) -> str:
    """A path as a DuckDB column named after it: ``b.c`` -> ``"b"."c" AS "b.c"``."""
    steps = path.split(".")
    expression = ".".join(map(_quoted, steps))
    return expression if len(steps) == 1 else f"{expression} AS {_quoted(path)}"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _paths(schema: pa.Schema | Sequence[Any], prefix: str = "") -> list[str]:
    """Every field's path, nested records' fields included (``inner``, ``inner.level``)."""
    import pyarrow as pa

    paths = []
    for field in schema:
        path = prefix + field.name
        paths.append(path)
        if pa.types.is_struct(field.type):
            paths.extend(_paths(list(field.type), path + "."))
    return paths
