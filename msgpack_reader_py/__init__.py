"""Stream typed records out of concatenated MessagePack: fast, in constant memory, loudly.

>>> from msgpack_reader_py import StreamingReader
>>> with StreamingReader("items.msgpack") as reader:  # doctest: +SKIP
...     for item in reader:
...         print(item.id, item.value)

Everything a user calls is here, by one name each: the readers (typed, untyped, asyncio,
Arrow), :func:`convert`, the record types inferred from records, the statistics of fields,
counting records and the sidecar index, the errors, and the reference fixture's ``Item`` and
its generator. The engines have modules of their own: :mod:`msgpack_reader_py.dask`,
:mod:`msgpack_reader_py.polars`, :mod:`msgpack_reader_py.duckdb`, :mod:`msgpack_reader_py.ray`.
What needs an extra (pyarrow for the Arrow readers and :func:`convert` to Parquet) or is slow
to import (asyncio) is imported when it is first used: ``import msgpack_reader_py`` loads
neither.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._base.errors import (
    DecodeError,
    ReaderError,
    RecordError,
    RecordTooLargeError,
    TruncatedStreamError,
)
from ._base.ext import ExtHook, fluentd_event_time
from ._base.options import DEFAULT_MAX_RECORD_SIZE, ReadOptions
from ._base.version import VERSION
from ._readers.streaming_reader import StreamingReader, read_items
from ._readers.values import ValueReader
from ._reference.generator import generate, get_iter, pack_items, write_items
from ._reference.model import ITEM_VALUES, Item, ItemTuple, ItemValues
from ._split.index import RecordIndex, load_index, write_index
from ._split.seek import count_records

if TYPE_CHECKING:
    from ._analysis.infer import InferenceError, Inferred, infer
    from ._analysis.inferred import infer_sources
    from ._analysis.stats import FieldStats, FieldSummary, summarise_fields
    from ._arrow.json_columns import JSON
    from ._arrow.reader import BatchReader, arrow_schema, read_batches, read_table
    from ._output.convert import Conversion, convert
    from ._readers.aio import AsyncStreamingReader

__all__ = [
    "DEFAULT_MAX_RECORD_SIZE",
    "ITEM_VALUES",
    "JSON",
    "AsyncStreamingReader",
    "BatchReader",
    "Conversion",
    "DecodeError",
    "ExtHook",
    "FieldStats",
    "FieldSummary",
    "InferenceError",
    "Inferred",
    "Item",
    "ItemTuple",
    "ItemValues",
    "ReadOptions",
    "ReaderError",
    "RecordError",
    "RecordIndex",
    "RecordTooLargeError",
    "StreamingReader",
    "TruncatedStreamError",
    "ValueReader",
    "arrow_schema",
    "convert",
    "count_records",
    "fluentd_event_time",
    "generate",
    "get_iter",
    "infer",
    "infer_sources",
    "load_index",
    "pack_items",
    "read_batches",
    "read_items",
    "read_table",
    "summarise_fields",
    "write_index",
    "write_items",
]
__version__ = VERSION

# Imported on first use: pyarrow (an extra) for the Arrow names, asyncio (slower to import
# than the rest of the package) for the asyncio reader, and the conversion and inference
# machinery, which only some programs use.
_LAZY = {
    "AsyncStreamingReader": "._readers.aio",
    "BatchReader": "._arrow.reader",
    "JSON": "._arrow.json_columns",
    "arrow_schema": "._arrow.reader",
    "read_batches": "._arrow.reader",
    "read_table": "._arrow.reader",
    "Conversion": "._output.convert",
    "convert": "._output.convert",
    "InferenceError": "._analysis.infer",
    "Inferred": "._analysis.infer",
    "infer": "._analysis.infer",
    "infer_sources": "._analysis.inferred",
    "FieldStats": "._analysis.stats",
    "FieldSummary": "._analysis.stats",
    "summarise_fields": "._analysis.stats",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # found once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
