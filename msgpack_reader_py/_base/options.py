"""The reading options: one frozen value, checked once, that every reader takes.

Every entry point (:class:`~msgpack_reader_py.StreamingReader`, the asynchronous reader,
:class:`~msgpack_reader_py.ValueReader`, the Arrow readers, Dask, ``convert`` and the
command line) takes the same keyword arguments, with the same defaults and meaning: the fields
of :class:`ReadOptions`. They are gathered into one ``ReadOptions``, checked when it is made
(a bad value fails at the call, not while reading), and handed on whole: to the reading loop,
and, pickled, to worker processes.

>>> from msgpack_reader_py._base.options import ReadOptions
>>> ReadOptions(on_error="skip", max_record_size=1 << 20).read_size
65536
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, TypedDict

from .checks import positive
from .ext import ExtHook

__all__ = [
    "DEFAULT_MAX_RECORD_SIZE",
    "DEFAULT_READ_SIZE",
    "OPTIONS",
    "OnError",
    "ReadKeywords",
    "ReadOptions",
    "options_table",
    "refuse_follow",
]

DEFAULT_MAX_RECORD_SIZE = 100 * 1024 * 1024
"""100 MiB, the size of msgpack's own default buffer."""

DEFAULT_READ_SIZE = 64 * 1024
"""64 KiB: enough records per read that a run's fixed costs vanish, few enough for a socket."""

OnError = Literal["raise", "skip"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReadOptions:
    """How a stream is read: what each entry point takes as keyword arguments (see
    :data:`OPTIONS` for each one's meaning). Checked when made: ``ValueError`` or
    ``TypeError`` for a value no reader takes."""

    ext_hook: ExtHook | None = None
    forbid_unknown_keys: bool = False
    forbid_repeated_keys: bool = False
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE
    read_size: int = DEFAULT_READ_SIZE
    on_error: OnError = "raise"
    decompress: bool = True
    follow: bool = False

    def __post_init__(self) -> None:
        if self.on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {self.on_error!r}")
        for name in ("max_record_size", "read_size"):
            positive(name, getattr(self, name))
        for name in ("forbid_unknown_keys", "forbid_repeated_keys", "decompress", "follow"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.ext_hook is not None and not callable(self.ext_hook):
            raise TypeError(f"ext_hook must be callable, got {self.ext_hook!r}")

    @classmethod
    def of(
        cls,
        options: ReadOptions | None,
        keywords: dict[str, Any],
        where: str,
        *,
        to_the_end: bool = False,
    ) -> ReadOptions:
        """``options`` (default: the defaults) with ``keywords`` in place of its own values;
        a keyword that names no option is a ``TypeError`` naming ``where``'s caller. With
        ``to_the_end`` (a reader that reads its sources to their end: a table, a DataFrame),
        ``follow=True`` is refused (:func:`refuse_follow`)."""
        unknown = sorted(set(keywords) - _NAMES)
        if unknown:
            raise TypeError(
                f"{where} got an unexpected keyword argument {unknown[0]!r} (the reading "
                f"options are {', '.join(sorted(_NAMES))})"
            )
        if options is None:
            read = cls(**keywords)
        elif not isinstance(options, ReadOptions):
            raise TypeError(f"options must be a ReadOptions, got {type(options).__name__}")
        else:
            read = dataclasses.replace(options, **keywords) if keywords else options
        if to_the_end:
            refuse_follow(read, where)
        return read


class ReadKeywords(TypedDict, total=False):
    """The reading options as keyword arguments (``**options: Unpack[ReadKeywords]``), for a
    type checker: the fields of :class:`ReadOptions`, each optional."""

    ext_hook: ExtHook | None
    forbid_unknown_keys: bool
    forbid_repeated_keys: bool
    max_record_size: int
    read_size: int
    on_error: OnError
    decompress: bool
    follow: bool


_NAMES = frozenset(f.name for f in dataclasses.fields(ReadOptions))

OPTIONS: dict[str, str] = {
    "ext_hook": "`(code, data) -> value` for extension types other than the timestamp, where a "
    "field accepts `Any` or `datetime`",
    "forbid_unknown_keys": "refuse a map-shaped record (at any depth) with a key that names no "
    "field",
    "forbid_repeated_keys": "refuse a record with a map (at any depth) that names a key twice; "
    "by default the last value is read, as msgpack and msgspec read it, and the earlier is lost",
    "max_record_size": "the largest encoded record accepted, in bytes",
    "read_size": "the most bytes asked of the source in one read",
    "on_error": '`"skip"`: pass over records that are not records of the type, counting them '
    "(`skipped`, `errors`)",
    "decompress": "read a source whose first bytes are gzip, bzip2, xz or (with the `zstd` "
    "extra) zstd through a decompressor",
    "follow": "keep reading a file (a path) as it grows, like `tail -F`; readers that read to "
    "the end (`read_table`, Dask) refuse it",
}
"""What each reading option means, as the README's options table says it."""


def options_table() -> str:
    """The README's table of the reading options, made from :class:`ReadOptions`: each
    field's name, its default and :data:`OPTIONS`' word on it."""
    rows = [
        f"| `{field.name}` | {_shown(field.default)} | {OPTIONS[field.name]} |"
        for field in dataclasses.fields(ReadOptions)
    ]
    return "\n".join(["| option | default | meaning |", "|---|---|---|", *rows]) + "\n"


def _shown(value: object) -> str:
    """A default as the table shows it: ``64 KiB`` for a size, code for the rest."""
    if isinstance(value, int) and not isinstance(value, bool) and value % 1024 == 0:
        for unit, size in (("MiB", 1024**2), ("KiB", 1024)):
            if value % size == 0:
                return f"{value // size} {unit}"
    return f"`{value!r}`".replace("'", '"')


def refuse_follow(options: ReadOptions, where: str) -> None:
    """Refuse ``follow=True`` for a reader that reads to the end (``ValueError``)."""
    if options.follow:
        raise ValueError(
            f"{where} reads to the end of its sources: follow=True would never end it; read a "
            "growing file with StreamingReader or read_batches"
        )
