"""Deterministic test data: the reference fixture and streams of any length.

``generate(path, 10000, seed=42)`` writes the reference fixture byte for byte: 559,439 bytes,
sha256 ``1dea4a70945fcd100b88dff2c7736fe877526a97d2bbd5f02ad9ee2f01995db6``.
"""

from __future__ import annotations

import os
import string
from collections.abc import Iterable, Iterator
from typing import Protocol

import msgpack

from .model import Item

__all__ = ["ALPHABET", "DEFAULT_SEED", "generate", "get_iter", "pack_items", "write_items"]

DEFAULT_SEED = 42
ALPHABET = string.ascii_uppercase + string.digits
"""The characters ``filename`` and ``path`` are drawn from."""


class Writable(Protocol):
    """Anything with ``write(bytes)``: a binary file, ``io.BytesIO``, ``sys.stdout.buffer``."""

    def write(self, data: bytes, /) -> object: ...


_MIN_TIMESTAMP_NS = 1714290559598901400
_MAX_TIMESTAMP_NS = 1777333982598901400


def get_iter(messages: int, seed: int = DEFAULT_SEED) -> Iterator[Item]:
    """Yield ``messages`` pseudo-random items, ids ``0..messages-1``, reproducibly from ``seed``.

    The draws, per record and in this order, are the reference fixture's: ``process_id``,
    ``thread_id``, ``line``, ``timestamp_ns``, ``value``, ``filename`` (8 characters),
    ``path`` (15 characters). Changing the order changes every byte after the first record.
    """
    if messages < 0:
        raise ValueError(f"messages must be >= 0, got {messages}")
    import random  # here, not at the top: 4 ms of every command's start, for a generator

    rng = random.Random(seed)
    randint = rng.randint
    uniform = rng.uniform
    choices = rng.choices
    for index in range(messages):
        process_id = randint(0, 65535)
        thread_id = randint(0, 65535)
        line = randint(0, 65535)
        timestamp_ns = randint(_MIN_TIMESTAMP_NS, _MAX_TIMESTAMP_NS)
        value = uniform(0.0, 1234.0)
        filename = "".join(choices(ALPHABET, k=8))
        path = "".join(choices(ALPHABET, k=15))
        yield Item(index, process_id, thread_id, timestamp_ns, line, value, filename, path)


def pack_items(items: Iterable[Item]) -> bytes:
    """Return the concatenated MessagePack encoding of ``items``, as ``write_items`` writes it."""
    pack = msgpack.Packer().pack
    return b"".join(pack(item.to_list()) for item in items)


def write_items(stream: Writable, items: Iterable[Item]) -> int:
    """Write ``items`` to the binary ``stream`` as concatenated MessagePack arrays.

    Uses ``msgpack.Packer()`` defaults (floats as float64, str as str). Returns the number of
    bytes written. The stream is neither flushed nor closed.
    """
    pack = msgpack.Packer().pack
    write = stream.write
    written = 0
    for item in items:
        data = pack(item.to_list())
        write(data)
        written += len(data)
    return written


def generate(path: str | os.PathLike[str], messages: int, seed: int = DEFAULT_SEED) -> int:
    """Write ``messages`` generated items to the file at ``path``; return the bytes written.

    With ``messages=10000`` and ``seed=42`` the file is the reference fixture.
    """
    with open(path, "wb") as stream:
        return write_items(stream, get_iter(messages, seed))
