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
Each name is imported when it is first used: ``import msgpack_reader_py`` loads nothing else,
so neither what needs an extra (pyarrow for the Arrow readers and :func:`convert` to Parquet)
nor what is slow to import (asyncio) is loaded by a program that does not use it.
"""

from __future__ import annotations

from ._base.version import VERSION

# typing.TYPE_CHECKING without typing: its import is 13 ms of a bare `import msgpack_reader_py`.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from ._analysis.infer import InferenceError, Inferred, infer
    from ._analysis.inferred import infer_sources
    from ._analysis.stats import FieldStats, FieldSummary, summarise_fields
    from ._arrow.json_columns import JSON
    from ._arrow.reader import BatchReader, arrow_schema, read_batches, read_table
    from ._base.errors import (
        DecodeError,
        ReaderError,
        RecordError,
        RecordTooLargeError,
        TruncatedStreamError,
    )
    from ._base.ext import ExtHook, fluentd_event_time
    from ._base.options import DEFAULT_MAX_RECORD_SIZE, ReadOptions
    from ._output.convert import Conversion, convert
    from ._readers.aio import AsyncStreamingReader
    from ._readers.streaming_reader import StreamingReader, read_items
    from ._readers.values import ValueReader
    from ._reference.generator import generate, get_iter, pack_items, write_items
    from ._reference.model import ITEM_VALUES, Item, ItemTuple, ItemValues
    from ._split.index import RecordIndex, load_index, write_index
    from ._split.seek import count_records
    from ._types.ints import UInt64
    from ._types.untyped import AnyValue

__all__ = [
    "DEFAULT_MAX_RECORD_SIZE",
    "ITEM_VALUES",
    "JSON",
    "AnyValue",
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
    "UInt64",
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

# Each name is imported on first use: ``import msgpack_reader_py`` (which the command line
# does before it can handle a Ctrl-C) imports nothing else, and what needs an extra (pyarrow
# for the Arrow names) or is slow to import (asyncio) is imported only by those who use it.
_LAZY = {
    "DecodeError": "._base.errors",
    "ReaderError": "._base.errors",
    "RecordError": "._base.errors",
    "RecordTooLargeError": "._base.errors",
    "TruncatedStreamError": "._base.errors",
    "ExtHook": "._base.ext",
    "fluentd_event_time": "._base.ext",
    "DEFAULT_MAX_RECORD_SIZE": "._base.options",
    "ReadOptions": "._base.options",
    "StreamingReader": "._readers.streaming_reader",
    "read_items": "._readers.streaming_reader",
    "ValueReader": "._readers.values",
    "generate": "._reference.generator",
    "get_iter": "._reference.generator",
    "pack_items": "._reference.generator",
    "write_items": "._reference.generator",
    "ITEM_VALUES": "._reference.model",
    "Item": "._reference.model",
    "ItemTuple": "._reference.model",
    "ItemValues": "._reference.model",
    "RecordIndex": "._split.index",
    "load_index": "._split.index",
    "write_index": "._split.index",
    "count_records": "._split.seek",
    "UInt64": "._types.ints",
    "AnyValue": "._types.untyped",
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
    import importlib  # here: with warnings, which it imports, 2 ms of a bare import

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # found once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
