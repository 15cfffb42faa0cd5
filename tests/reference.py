"""The reference stream's published figures, and offsets measured independently of the reader."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from msgpack_reader_py import Item, pack_items

REFERENCE_MESSAGES = 10000
REFERENCE_SEED = 42
REFERENCE_SIZE = 559439
REFERENCE_SHA256 = "1dea4a70945fcd100b88dff2c7736fe877526a97d2bbd5f02ad9ee2f01995db6"
REFERENCE_SUM_OF_IDS = 49995000
# As published with the fixture.
FIRST_REFERENCE_RECORD: list[Any] = [
    0,
    14592,
    3278,
    1730374586108998696,
    36048,
    172.1898038000276,
    "D0TVBDIV",
    "UZZPQK51FPKH1DN",
]


def offsets_of(items: Iterable[Item]) -> list[int]:
    """Byte offset of every record, then the stream's length, packing one record at a time."""
    offsets = [0]
    for item in items:
        offsets.append(offsets[-1] + len(pack_items([item])))
    return offsets
