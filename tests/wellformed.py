"""What a decoded value may be: shared by the fuzz properties and the atheris target."""

from __future__ import annotations

import datetime
from typing import Any

import msgspec

# What an untyped value decodes to: the timestamp extension as a datetime, others as Ext.
DECODED_SCALARS = frozenset({bool, int, float, str, bytes, datetime.datetime, msgspec.msgpack.Ext})


def is_decoded_value(value: Any) -> bool:
    """Whether ``value`` is something MessagePack decodes to (and nothing the reader invented).

    Iterative: a valid record may nest values about 1000 deep.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if item is None or kind in DECODED_SCALARS:
            continue
        if kind is list or kind is tuple:
            pending.extend(item)
        elif kind is dict:
            pending.extend(item)
            pending.extend(item.values())
        else:
            return False
    return True
