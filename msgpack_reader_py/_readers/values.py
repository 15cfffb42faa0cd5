"""Records with no record type: every value exactly as the stream holds it, and as text.

What the command line's ``--type any`` reads, dumps and infers columns from. msgpack decodes
each record (``msgpack.Unpacker`` already frames them): maps become dicts, arrays lists,
``bin`` ``bytes``, the timestamp extension a ``msgpack.Timestamp`` exact to the nanosecond
(a ``datetime`` holds microseconds), other extensions ``msgspec.msgpack.Ext``, as in a typed
record's :data:`~msgpack_reader_py.AnyValue` fields (:mod:`.._types.untyped`).

:class:`ValueReader` reads them with :class:`~msgpack_reader_py.StreamingReader`'s lifecycle,
framing and error contract; :mod:`.writers` writes them as JSON Lines and CSV.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._base.options import ReadKeywords, ReadOptions
from .._stream.delivery import Batches, Plan
from .._stream.sources import Source
from .._types.untyped import ValueDecoder
from .streaming_reader import SourceReader, chained, check_start

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ValueDecoder", "ValueReader", "values_plan"]


def values_plan(options: ReadOptions, *, force: bool = False, batches: bool = False) -> Plan:
    """The plan of records read with no type: each as the value it is (``batches``: each run's
    as one list), a stream that looks foreign refused unless ``force``."""
    return Plan(
        Any,
        options,
        decoder=ValueDecoder(options.ext_hook, refuse_repeats=options.forbid_repeated_keys),
        convert=Batches() if batches else None,
        refuse_foreign=not force,
    )


class ValueReader(SourceReader[Any]):
    """Read each record of ``source`` as the value it is (see the module's docstring), with
    :class:`~msgpack_reader_py.StreamingReader`'s lifecycle, framing and error contract.

    With ``batches``, each item is a list: a read's records, as the text formats take them.
    ``ext_hook(code, data)`` turns extensions other than the timestamp into values
    (:func:`~msgpack_reader_py.fluentd_event_time` for Fluentd's EventTime, exact); an
    exception it raises is a ``RecordError``, which ``on_error="skip"`` passes over.
    ``options`` and the reading options are :class:`~msgpack_reader_py.StreamingReader`'s;
    ``forbid_unknown_keys`` has no fields to apply to here. ``start`` is the index of the first
    record read; the records before it are framed, not decoded (as
    :class:`~msgpack_reader_py.StreamingReader`'s ``start``).

    Untyped, almost any bytes are MessagePack: JSON or plain text reads as a stream of small
    integers. So a stream whose first bytes look like something else (JSON, text, UTF-16,
    Parquet, Arrow, zip, 7z, LZ4, snappy, or compressed data not being decompressed) is refused
    before its first record, with a :class:`~msgpack_reader_py.DecodeError` at record 0
    that says what it looks like; ``force=True`` reads its bytes anyway.
    """

    def __init__(
        self,
        source: Source,
        *,
        batches: bool = False,
        force: bool = False,
        start: int = 0,
        options: ReadOptions | None = None,
        **keywords: Unpack[ReadKeywords],
    ) -> None:
        read = ReadOptions.of(options, dict(keywords), "ValueReader()")
        check_start(start)
        plan = values_plan(read, force=force, batches=batches)
        self._records = chained(self.open_batches(source, Any, plan, read, start=start))
