"""atheris fuzz target: arbitrary bytes through StreamingReader in several configurations.

A crash is any exception other than a ``ReaderError`` (TypeError, IndexError, MemoryError,
an AssertionError from the checks below, ...), a record that is not a well-formed record of
the type, a record yielded after an error, or a different outcome for the same bytes read in
different chunk sizes. See fuzz/README.md for how to run it. Not collected by pytest: the file
name does not start with ``test_``.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import atheris  # type: ignore[import-not-found,import-untyped,unused-ignore]

# Run as a script from the repository root: the well-formedness check is shared with the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.wellformed import is_decoded_value

with atheris.instrument_imports(include=["msgpack_reader_py"]):
    from msgpack_reader_py import (
        ITEM_VALUES,
        Item,
        ItemTuple,
        ReaderError,
        RecordError,
        RecordTooLargeError,
        StreamingReader,
    )

# After the instrumented imports: this imports msgpack_reader_py too.
from tests.corpus.make_corpus import shown as shown_value

# A record may nest values as deep as msgpack allows (about 1000 levels): room for repr().
sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))


@dataclass
class Loose:
    key: str
    payload: Any


ITEM_INT_FIELDS = ("id", "process_id", "thread_id", "timestamp_ns", "line")
Ending = tuple[type[ReaderError], int, int] | None


class OneBytePerRead:
    """A source that hands over one byte per read, whatever it is asked for."""

    def __init__(self, data: bytes) -> None:
        self._stream = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self._stream.read(1)


def shown(record: Any) -> str:
    """A record's repr, with extension values (``msgspec.msgpack.Ext``, whose repr is its
    address) shown by code and data: the same in every read of the same bytes."""
    if is_dataclass(record):
        record_type: Any = type(record)
        return repr(record_type(*(shown_value(getattr(record, f.name)) for f in fields(record))))
    return repr(record)  # ItemTuple, ITEM_VALUES: checked scalars only


def check_item_fields(values: tuple[Any, ...] | list[Any]) -> None:
    """Every record is validated: exact field types, an int for ``value`` became a float."""
    assert len(values) == len(ITEM_INT_FIELDS) + 3, values
    assert all(map(is_decoded_value, values)), values
    assert all(type(v) is int for v in values[:5]), values
    assert type(values[5]) is float, values
    assert type(values[6]) is str, values
    assert type(values[7]) is str, values


def check_item(record: Any) -> None:
    assert type(record) is Item, record
    check_item_fields([getattr(record, f.name) for f in fields(Item)])


def check_item_tuple(record: Any) -> None:
    assert type(record) is ItemTuple, record
    check_item_fields(tuple(record))


def check_item_values(record: Any) -> None:
    assert type(record) is tuple, record
    check_item_fields(record)


def check_loose(record: Any) -> None:
    assert type(record) is Loose, record
    assert type(record.key) is str, record
    assert is_decoded_value(record.payload), record


def check_mapped(record: Any) -> None:
    # mapper=Item.from_list gets each record untyped (a list, or a dict whose keys it takes
    # as the eight values) and checks no field type: only the shape is the mapper's.
    assert type(record) is Item, record
    values = [getattr(record, f.name) for f in fields(Item)]
    assert len(values) == len(ITEM_INT_FIELDS) + 3, values
    assert all(map(is_decoded_value, values)), values


@dataclass(frozen=True)
class Config:
    name: str
    record_type: Any
    check: Callable[[Any], None]
    mapper: Callable[[Any], Any] | None = None
    max_record_size: int = 100 * 1024 * 1024
    on_error: str = "raise"

    def read(self, source: Any, read_size: int) -> tuple[list[str], Ending, int]:
        """Records (as repr), how the stream ended, and how many records were skipped."""
        options: dict[str, Any] = {
            "max_record_size": self.max_record_size,
            "read_size": read_size,
            "on_error": self.on_error,
            # The oracle models MessagePack alone: bytes that happen to begin like a compressed
            # stream (b"\xfd7zXZ\x00" is six valid ints) would be decompressed by default.
            "decompress": False,
        }
        if self.mapper is not None:
            options["mapper"] = self.mapper
        reader = StreamingReader(source, self.record_type, **options)
        records: list[str] = []
        failure: ReaderError | None = None
        try:
            for record in reader:
                self.check(record)
                records.append(shown(record))
        except ReaderError as exc:  # the only exception bad data may raise
            failure = exc
        ending: Ending = None
        if failure is not None:
            assert type(failure) is not ReaderError, failure
            assert failure.index >= 0, failure
            assert failure.offset >= 0, failure
            if self.on_error == "skip":
                assert not isinstance(failure, RecordError), failure
            ending = (type(failure), failure.index, failure.offset)
        assert next(reader, None) is None, "a record after the end or an error"
        reader.close()
        for skipped in reader.errors:
            assert type(skipped) is RecordError, skipped
        if ending is not None:
            assert ending[1] == len(records) + reader.skipped, (ending, len(records))
        return records, ending, reader.skipped


CONFIGS = (
    Config("Item", Item, check_item),
    Config("Item, small limit", Item, check_item, max_record_size=4096),
    Config("ItemTuple", ItemTuple, check_item_tuple),
    Config("ITEM_VALUES", ITEM_VALUES, check_item_values, max_record_size=4096),
    Config("Loose, small limit", Loose, check_loose, max_record_size=256),
    Config("Loose", Loose, check_loose),
    Config("mapper", Item, check_mapped, mapper=Item.from_list),
    Config("skip", Item, check_item, max_record_size=4096, on_error="skip"),
    Config("Loose skip", Loose, check_loose, max_record_size=512, on_error="skip"),
)


def same(first: tuple[list[str], Ending, int], other: tuple[list[str], Ending, int]) -> bool:
    """The same outcome; a record over max_record_size may be found before its bad bytes."""
    (records, ending, skipped), (records2, ending2, skipped2) = first, other
    if records != records2 or skipped != skipped2 or (ending is None) != (ending2 is None):
        return False
    if ending is None or ending2 is None:
        return True
    if ending[1:] != ending2[1:]:
        return False
    return ending[0] is ending2[0] or RecordTooLargeError in (ending[0], ending2[0])


def TestOneInput(data: bytes) -> None:
    for config in CONFIGS:
        whole = config.read(data, 64 * 1024)
        for source, read_size in ((data, 7), (io.BytesIO(data), 3)):
            other = config.read(source, read_size)
            assert same(whole, other), (config.name, read_size, whole, other)
        if len(data) <= 512:
            other = config.read(OneBytePerRead(data), 64 * 1024)
            assert same(whole, other), (config.name, "one byte per read", whole, other)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
