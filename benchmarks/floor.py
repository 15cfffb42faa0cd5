"""The floor a command is measured against: msgpack's own ``Unpacker`` framing every record of
a file and summing the ids, as a user's few-line script would, checking nothing.

    python -m benchmarks.floor FILE

Prints ``{"records": N, "sum_of_ids": S}``. ``benchmarks/output_cost.py`` runs it in a process
of its own, as it runs each command, so that start-up is in the floor as it is in them.
"""

from __future__ import annotations

import json
import sys

import msgpack


def main(argv: list[str] | None = None) -> int:
    (path,) = sys.argv[1:] if argv is None else argv
    records = total = 0
    with open(path, "rb") as stream:
        for record in msgpack.Unpacker(stream, read_size=1 << 20):
            records += 1
            total += record[0]  # an Item's id
    print(json.dumps({"records": records, "sum_of_ids": total}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
