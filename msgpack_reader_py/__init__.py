"""Stream typed records out of concatenated MessagePack: fast, in constant memory, loudly.

>>> from msgpack_reader_py import StreamingReader
>>> with StreamingReader("items.msgpack") as reader:  # doctest: +SKIP
...     for item in reader:
...         print(item.id, item.value)
"""

from typing import TYPE_CHECKING, Any

from ._base.errors import (
    DecodeError,
    ReaderError,
    RecordError,
    RecordTooLargeError,
    TruncatedStreamError,
)
from ._base.options import DEFAULT_MAX_RECORD_SIZE, ReadOptions
from ._readers.streaming_reader import StreamingReader, read_items
from ._reference.generator import generate, get_iter, pack_items, write_items
from ._reference.model import ITEM_VALUES, Item, ItemTuple, ItemValues, item_to_list

if TYPE_CHECKING:
    from ._readers.aio import AsyncStreamingReader

__all__ = [
    "DEFAULT_MAX_RECORD_SIZE",
    "ITEM_VALUES",
    "AsyncStreamingReader",
    "DecodeError",
    "Item",
    "ItemTuple",
    "ItemValues",
    "ReadOptions",
    "ReaderError",
    "RecordError",
    "RecordTooLargeError",
    "StreamingReader",
    "TruncatedStreamError",
    "generate",
    "get_iter",
    "item_to_list",
    "pack_items",
    "read_items",
    "write_items",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # asyncio takes longer to import than the rest of the package: only its users pay for it.
    if name == "AsyncStreamingReader":
        from ._readers.aio import AsyncStreamingReader

        return AsyncStreamingReader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
