"""What DuckDB makes of a record type's columns, where it would hold less than they do.

DuckDB 2.0 holds a ``timestamp[ns, tz=UTC]`` column (a ``msgpack.Timestamp`` field) as
``TIMESTAMP WITH TIME ZONE`` to the nanosecond; DuckDB 1.x holds it to the microsecond, and
would drop the last three digits of every value with no word said. So each use of DuckDB on
records (``read_msgpack``, ``--where`` and ``--select``) first asks the DuckDB it has, with
no record read: an empty table of those columns goes in, and what comes back tells. A query
that neither reads nor writes such a field runs without it (:mod:`.._output.query`).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .json_columns import holds_nanoseconds

__all__ = ["lost_nanoseconds", "refuse_lost_nanoseconds"]


def lost_nanoseconds(connection: Any, schema: pa.Schema) -> list[str]:
    """The fields of ``schema`` whose nanoseconds DuckDB's ``connection`` would not keep, in
    order; none where it keeps them all."""
    fields = [field for field in schema if holds_nanoseconds(field.type)]
    if not fields:
        return []
    empty = pa.Table.from_batches([], schema=pa.schema(fields))
    kept = connection.from_arrow(empty).to_arrow_table().schema
    return [f.name for f in fields if not holds_nanoseconds(kept.field(f.name).type)]


def refuse_lost_nanoseconds(connection: Any, schema: pa.Schema) -> None:
    """Raise ``TypeError`` naming the first field of ``schema`` whose nanoseconds DuckDB's
    ``connection`` would not keep; nothing where it keeps them all."""
    lost = lost_nanoseconds(connection, schema)
    if lost:
        raise TypeError(lost_message(lost[0]))


def lost_message(name: str) -> str:
    """Why the field ``name`` is refused: DuckDB would cut its nanoseconds."""
    import duckdb

    return (
        f"field `{name}` holds timestamps to the nanosecond (msgpack.Timestamp), and DuckDB "
        f"{duckdb.__version__} holds them to the microsecond: DuckDB 2.0 keeps every digit; "
        "or declare the field datetime, read rounded to the microsecond"
    )
