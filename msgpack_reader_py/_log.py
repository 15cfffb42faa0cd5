"""The package's logger: notes that need no error (a followed file read again from its
start). The command line prints them as ``note: ...`` lines."""

from __future__ import annotations

import logging

__all__ = ["logger"]

logger = logging.getLogger("msgpack_reader_py")
