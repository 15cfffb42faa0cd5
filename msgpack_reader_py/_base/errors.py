"""The reader's error contract.

Every error the reader raises for bad data is a :class:`ReaderError` (itself a ``ValueError``).
It names the failing record: ``.index`` is its 0-based number, which equals the number of
records yielded before it, and ``.offset`` is the byte offset, counted from where the reader
started reading, at which that record starts. Both appear in the message. The exception
msgpack raised, if any, is chained as ``__cause__``. Where one job reads many files
(:mod:`msgpack_reader_py.dask`), ``.source`` names the file and opens the message.
"""

from __future__ import annotations

__all__ = [
    "DecodeError",
    "ReaderError",
    "RecordError",
    "RecordTooLargeError",
    "TruncatedStreamError",
]


class ReaderError(ValueError):
    """Base class of every data error the reader raises.

    Attributes:
        index: 0-based number of the failing record (the number of records yielded before it).
        offset: byte offset in the stream at which the failing record starts.
        reason: what is wrong, without the location.
        source: the file or URL the record was read from, where a reader of many files set it;
            ``None`` otherwise.
    """

    index: int
    offset: int
    reason: str
    source: str | None

    def __init__(self, reason: str, *, index: int, offset: int, source: str | None = None) -> None:
        where = f"record {index} at byte {offset}"
        super().__init__(f"{source}: {where}: {reason}" if source else f"{where}: {reason}")
        self.reason = reason
        self.index = index
        self.offset = offset
        self.source = source

    def in_source(self, source: str) -> ReaderError:
        """The same error (same class, index, offset and reason), naming ``source``."""
        return type(self)(self.reason, index=self.index, offset=self.offset, source=source)

    def amended(self, more: str) -> ReaderError:
        """The same error (same class, index, offset and source), its reason followed by
        ``more``: what to do about it, known where it is caught."""
        return type(self)(
            self.reason + more, index=self.index, offset=self.offset, source=self.source
        )

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only arguments would break pickling (multiprocessing, dask) otherwise.
        return (_rebuild, (type(self), self.reason, self.index, self.offset, self.source))


def _rebuild(
    cls: type[ReaderError], reason: str, index: int, offset: int, source: str | None = None
) -> ReaderError:
    return cls(reason, index=index, offset=offset, source=source)


class TruncatedStreamError(ReaderError):
    """The stream ends inside a record: its last bytes are not a whole record."""


class DecodeError(ReaderError):
    """The bytes are not valid MessagePack, hold invalid UTF-8, or nest too deeply."""


class RecordTooLargeError(ReaderError):
    """A record is larger than the reader's ``max_record_size``."""


class RecordError(ReaderError):
    """Valid MessagePack that is not a record of the expected type.

    Raised for a value that is neither an array nor a map, an array of the wrong length, a map
    without a required field, and a field that fails its check; the reason names the field's
    path (``inner.tags[2]``), what it expected and what it found.
    """


_REPR_LIMIT = 60


def type_name(tp: type) -> str:
    """Name a type the way a user writes it: ``int``, ``None``, ``Timestamp``."""
    return "None" if tp is type(None) else tp.__name__


def describe(value: object) -> str:
    """Describe a decoded value for an error message, never embedding a huge one."""
    code, data = getattr(value, "code", None), getattr(value, "data", None)
    if isinstance(code, int) and isinstance(data, (bytes, bytearray, memoryview)):
        return f"extension type {code} ({len(data)} bytes)"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)} value{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return f"a map of {len(value)} entr{'y' if len(value) == 1 else 'ies'}"
    if value is None:
        return "None"
    text = repr(value)
    if len(text) > _REPR_LIMIT:
        text = text[: _REPR_LIMIT - 3] + "..."
    return f"{type_name(type(value))} {text}"
