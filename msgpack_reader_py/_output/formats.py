"""The output formats, and the codecs of the columnar ones."""

from __future__ import annotations

from typing import Literal

from .._base.checks import positive

__all__ = [
    "CODECS",
    "COLUMNAR",
    "DEFAULT_CODEC",
    "FORMATS",
    "Codec",
    "OutputFormat",
    "output_settings",
]

OutputFormat = Literal["parquet", "arrow", "csv", "jsonl", "table"]
FORMATS: tuple[OutputFormat, ...] = ("parquet", "arrow", "csv", "jsonl")
"""The file formats (``convert --to``); ``table`` is for a person to read (``dump``)."""
COLUMNAR: tuple[OutputFormat, ...] = ("parquet", "arrow", "csv")
"""The formats whose columns are fixed before the first record: untyped records need a
record type inferred for them."""

Codec = Literal["zstd", "lz4", "snappy", "gzip", "none"]
"""What a columnar file is compressed with (``convert(compression=...)``, ``--compression``)."""
CODECS: tuple[Codec, ...] = ("zstd", "lz4", "snappy", "gzip", "none")
DEFAULT_CODEC: dict[OutputFormat, Codec] = {"parquet": "zstd", "arrow": "none"}
"""Each columnar format's codec when none is asked for. Parquet: zstd, the smallest output of
the codecs at about snappy's speed on the reference data (``benchmarks/compression.py``; the
figures are in doc/RESULTS.md). Arrow IPC: uncompressed, which a reader can map into memory
and use without a copy, the point of the format; its buffers compress with zstd or lz4 only."""
_ARROW_CODECS: tuple[Codec, ...] = ("zstd", "lz4", "none")


def output_settings(
    to: OutputFormat, compression: Codec | None, row_group_size: int | None
) -> Codec | None:
    """Check the output options for the format ``to``; the codec it will be written with
    (``None`` for a text format).

    ``compression`` (one of :data:`CODECS`; ``None``: the format's
    :data:`DEFAULT_CODEC`) applies to Parquet, and to Arrow IPC as zstd, lz4 or none:
    its buffers have no snappy or gzip. ``row_group_size`` (a positive int) applies to Parquet
    alone. Raises ``ValueError`` for a value that is not one, or that the format does not take:
    an option that would do nothing is refused rather than ignored."""
    if compression is not None:
        if compression not in CODECS:
            raise ValueError(f"compression must be one of {', '.join(CODECS)}; got {compression!r}")
        if to not in DEFAULT_CODEC:
            raise ValueError(f"compression applies to parquet and arrow, not {to}")
        if to == "arrow" and compression not in _ARROW_CODECS:
            raise ValueError(
                f"arrow compresses with {', '.join(_ARROW_CODECS)} only, not {compression}"
            )
    if row_group_size is not None:
        positive("row_group_size", row_group_size)
        if to != "parquet":
            raise ValueError(f"row_group_size applies to parquet only, not {to}")
    if to not in DEFAULT_CODEC:
        return None
    return DEFAULT_CODEC[to] if compression is None else compression
