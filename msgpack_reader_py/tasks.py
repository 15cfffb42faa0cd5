"""What an engine's tasks do with a file's byte ranges (Dask's, Ray's): the steps of the
chain that proves each range's start (:class:`~.ranges.Proof`), and how a range tells its
error and the records it skipped.

A file split into ranges becomes, on an engine, one read task per range (run anywhere, at
once) and a chain of small tasks, one per range in file order, each taking the proof before
its range and where the range's records run (:func:`where`: the piece without its records,
so the chain moves no data) and giving the proof after it (:func:`proof_after`). On Dask,
:func:`settled` then gives each range's records as a sequential read has them (read again, in
that task, from the proved start where the guess was wrong); Ray's chain hands back what each
range came to beside the proof (:mod:`~msgpack_reader_py.ray`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ._log import logger
from .errors import RecordError
from .ranges import FileSource, Piece, Proof

__all__ = ["note_skipped", "proof_after", "raise_in", "settled", "where"]


def where(piece: Piece) -> Piece:
    """What the proof needs of a piece: where its records run, without them."""
    return dataclasses.replace(piece, value=None)


def proof_after(piece: Piece, proof: Proof, file: FileSource, arguments: Any) -> Proof:
    """The proof after the range of ``piece`` (see :meth:`~.ranges.Proof.settle`)."""
    return proof.settle(piece, file, arguments)[1]


def settled(piece: Piece, proof: Proof, file: FileSource, arguments: Any) -> Piece:
    """``piece`` as the sequential read has it, given the ``proof`` before it."""
    return proof.settle(piece, file, arguments)[0]


def raise_in(piece: Piece, name: str) -> None:
    """Say what the range skipped; raise its error, naming the file."""
    note_skipped(name, piece.skipped, piece.errors)
    if piece.error is not None:
        raise piece.error.in_source(name) from None


def note_skipped(name: str, count: int, errors: list[RecordError]) -> None:
    """Say on the package's logger, where the task runs, what ``on_error="skip"`` passed
    over in a file: a partition has no other way to tell it."""
    if count:
        logger.warning(
            "%s: skipped %s; the first: %s",
            name,
            "1 record that is not a record of the type"
            if count == 1
            else f"{count} records that are not records of the type",
            errors[0],
        )
