"""The package's logger: notes that need no error (a followed file read again from its
start, the records ``on_error="skip"`` passed over in a file read by a task). The command line
prints them as ``note: ...`` lines."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .errors import RecordError

__all__ = ["logger", "note_skipped"]

logger = logging.getLogger("msgpack_reader_py")


def note_skipped(name: str, count: int, errors: list[RecordError]) -> None:
    """Say, where the file ``name`` was read, what ``on_error="skip"`` passed over in it: a
    reader of many files (a partition, a task, a scan) has no other way to tell it."""
    if count:
        logger.warning(
            "%s: skipped %s; the first: %s",
            name,
            "1 record that is not a record of the type"
            if count == 1
            else f"{count} records that are not records of the type",
            errors[0],
        )
