"""One set of reading options: ``ReadOptions``, taken whole or as the same keyword arguments by
every entry point, checked when made, picklable, and the README's table made from it."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import io
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest

from msgpack_reader_py import (
    AsyncStreamingReader,
    DecodeError,
    Item,
    ReadOptions,
    RecordError,
    StreamingReader,
    get_iter,
    pack_items,
    read_items,
)
from msgpack_reader_py._analysis.inferred import infer_sources
from msgpack_reader_py._arrow.reader import BatchReader, read_batches, read_table
from msgpack_reader_py._base.ext import fluentd_event_time
from msgpack_reader_py._base.options import OPTIONS, options_table
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py._readers.values import ValueReader
from msgpack_reader_py.cli import main

# The reading options table lives on the site's reading page.
README = Path(__file__).resolve().parents[1] / "docs" / "reading.md"
ITEMS = pack_items(get_iter(20))
CHANGED: dict[str, Any] = {
    "ext_hook": fluentd_event_time,
    "forbid_unknown_keys": True,
    "forbid_repeated_keys": True,
    "max_record_size": 1 << 20,
    "read_size": 1000,
    "on_error": "skip",
    "decompress": False,
    "follow": False,  # a path is needed: checked apart
}


def test_the_options_are_the_fields_and_each_is_documented() -> None:
    names = [field.name for field in dataclasses.fields(ReadOptions)]
    assert names == list(CHANGED)
    assert list(OPTIONS) == names


def test_the_readme_table_is_made_from_the_options() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- options:start[^\n]*-->\n(.*?)<!-- options:end -->", text, re.S)
    assert block is not None
    assert block.group(1) == options_table()
    assert "| `max_record_size` | 100 MiB |" in options_table()
    assert '| `on_error` | `"raise"` |' in options_table()


READERS: dict[str, Callable[..., Any]] = {
    "StreamingReader": lambda data, **kw: StreamingReader(data, **kw),
    "AsyncStreamingReader": lambda data, **kw: AsyncStreamingReader(data, **kw),
    "ValueReader": lambda data, **kw: ValueReader(data, **kw),
    "BatchReader": lambda data, **kw: BatchReader(data, **kw),
    "read_batches": lambda data, **kw: read_batches(data, **kw),
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_reader_takes_every_option_by_keyword_or_whole(name: str) -> None:
    make = READERS[name]
    options = ReadOptions(**CHANGED)
    assert make(ITEMS, **CHANGED).options == options
    assert make(ITEMS, options=options).options == options
    assert make(ITEMS).options == ReadOptions()
    # A keyword beside the whole value takes the place of its own.
    assert make(ITEMS, options=options, read_size=7).options == dataclasses.replace(
        options, read_size=7
    )


ENTRY_POINTS: dict[str, Callable[..., Any]] = {
    **READERS,
    "read_items": lambda data, **kw: read_items(data, **kw),
    "read_table": lambda data, **kw: read_table(data, **kw),
    "convert": lambda data, **kw: convert(data, io.BytesIO(), "jsonl", **kw),
    "infer_sources": lambda data, **kw: infer_sources([msgpack.packb({"a": 1})], **kw),
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_an_unknown_keyword_is_refused_naming_the_call(name: str) -> None:
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument"):
        ENTRY_POINTS[name](ITEMS, max_record_bytes=10)


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(
    ("keyword", "value", "says"),
    [
        ("on_error", "ignore", "on_error must be 'raise' or 'skip', got 'ignore'"),
        ("max_record_size", 0, "max_record_size must be a positive int, got 0"),
        ("read_size", True, "read_size must be a positive int, got True"),
        ("decompress", "yes", "decompress must be True or False, got 'yes'"),
        ("ext_hook", 3, "ext_hook must be callable, got 3"),
    ],
)
def test_a_bad_option_fails_at_the_call_of_every_entry_point(
    name: str, keyword: str, value: Any, says: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=re.escape(says)):
        ENTRY_POINTS[name](ITEMS, **{keyword: value})


def test_options_pickle_with_their_hook() -> None:
    options = ReadOptions(**CHANGED)
    assert pickle.loads(pickle.dumps(options)) == options


def test_options_must_be_read_options() -> None:
    with pytest.raises(TypeError, match="options must be a ReadOptions, got dict"):
        StreamingReader(ITEMS, options={"on_error": "skip"})  # type: ignore[call-overload]


@pytest.mark.parametrize("name", ["read_table", "read_bag", "read_dataframe"])
def test_readers_that_read_to_the_end_refuse_follow(name: str, tmp_path: Path) -> None:
    path = tmp_path / "items.msgpack"
    path.write_bytes(ITEMS)
    if name == "read_table":
        call: Callable[..., Any] = read_table
    else:
        from msgpack_reader_py import dask

        call = getattr(dask, name)
    with pytest.raises(ValueError, match=rf"{name}\(\) reads to the end of its sources"):
        call(str(path), follow=True)


def test_forbid_unknown_keys_and_skip_work_in_arrow() -> None:
    good = msgpack.packb(Item(0, 1, 2, 3, 4, 5.0, "a", "b").to_list())
    extra = msgpack.packb({**dataclasses.asdict(Item(1, 2, 3, 4, 5, 6.0, "a", "b")), "x": 1})
    with pytest.raises(RecordError, match="map has key 'x', which names no field"):
        read_table(good + extra, forbid_unknown_keys=True)
    assert read_table(good + extra).num_rows == 2
    with read_batches(good + extra + good, forbid_unknown_keys=True, on_error="skip") as batches:
        assert sum(b.num_rows for b in batches) == 2
        assert batches.skipped == 1


def test_decompress_works_in_arrow_and_values_and_convert() -> None:
    compressed = gzip.compress(ITEMS)
    assert read_table(compressed).num_rows == 20
    with pytest.raises(RecordError, match=r"not decompressed \(decompress=False\)"):
        read_table(compressed, decompress=False)
    assert len(list(ValueReader(compressed))) == 20
    with pytest.raises(DecodeError, match="gzip-compressed data, not decompressed"):
        list(ValueReader(compressed, decompress=False))
    out = io.BytesIO()
    assert convert(compressed, out, "csv").records == 20
    with pytest.raises(RecordError):
        convert(compressed, io.BytesIO(), "csv", decompress=False)


def test_the_async_reader_decompresses_what_it_does_not_await() -> None:
    compressed = gzip.compress(ITEMS)

    async def count(**options: Any) -> int:
        async with AsyncStreamingReader(compressed, **options) as reader:
            return len([item async for item in reader])

    assert asyncio.run(count()) == 20
    with pytest.raises(RecordError, match="decompress=False"):
        asyncio.run(count(decompress=False))


def test_the_command_lines_flags_are_the_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "items.msgpack.gz"
    path.write_bytes(gzip.compress(ITEMS))
    assert main(["read", str(path), "--read-size", "100"]) == 0
    assert capsys.readouterr().out.startswith("Read 20 messages")
    assert main(["read", str(path), "--no-decompress"]) == 1
    assert "(--no-decompress), not MessagePack" in capsys.readouterr().err
    keyed = tmp_path / "keyed.msgpack"
    keyed.write_bytes(msgpack.packb({**dataclasses.asdict(next(get_iter(1))), "x": 1}))
    assert main(["read", str(keyed)]) == 0
    capsys.readouterr()
    assert main(["read", str(keyed), "--forbid-unknown-keys"]) == 1
    assert "map has key 'x', which names no field" in capsys.readouterr().err
