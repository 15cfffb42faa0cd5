"""``msgpack-reader inspect``: where each record is, how large, and what its first byte says
it is; for a broken stream, where and how framing fails.

Framing only (:class:`~..delivery.Framing`): no value is decoded. A record's shape is read
from its first header with the tables of :mod:`..wire`; a failing record's bytes are kept as
they pass (:class:`_Tail`), so that its account (what its header declares, how many bytes are
missing, which byte is not MessagePack) needs no second read, stdin and compressed input
included.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import json
import sys
from collections.abc import Iterator
from typing import Any

from .._base.errors import DecodeError, ReaderError, TruncatedStreamError
from .._base.options import ReadOptions
from .._split.index import RecordIndex, load_index
from .._split.seek import origin_for
from .._stream.delivery import Framing
from .._stream.pending import Pending, Reopened
from .._stream.sources import Chunks, Source
from .._stream.wire import NEVER_USED, Walk, bytes_text, header_at, walk
from ._common import (
    EXIT_STATUSES,
    UsageFailure,
    command,
    flush_stdout,
    for_the_command_line,
    non_negative_int,
    phrased,
    read_options,
    reader_options,
    size_of,
    sources_of,
)

HEX_BYTES = 64
"""The most bytes of a record ``--hex`` shows."""
_UNKNOWN_WIDTH = 7  # digits a column is aligned to when the source's size is not known

OUTPUT = """\
output:
  a line per record: its index, the byte it starts at, its size in bytes and
  its top-level shape (the values themselves are never decoded), e.g.
    record   0  at byte   0  size  54  array of 8
    record   1  at byte  54  size  12  map of 1
  shapes: array of N and map of N (entries), str of N bytes, bin of N bytes,
  ext T of N bytes (T -1 is a timestamp), int, float, bool, nil. Then, once
  the stream has ended cleanly:
    end         at byte 111  (3 records)
  A stream that breaks ends instead with a line for the failing record that
  says how: cut off (size 46 of 56: the bytes there, of the size its headers
  declare, + where that is the least it can be; how many bytes are missing)
  or invalid (which byte is not MessagePack); then one error: line on stderr,
  and exit status 1. With several SOURCEs each line starts with SOURCE: and
  indexes and offsets count from the start of each (of a compressed SOURCE,
  in its decompressed bytes).
  --json: an object a line. A record: source, index, offset, size, shape,
  length (null for int, float, bool and nil), format (the specification's
  name: fixarray, uint 32, str 8, ...), ext_type (ext only), and with --hex,
  hex and hex_omitted (the bytes left out). The end: source, end, records. A
  failure: source, index, offset, error (TruncatedStreamError, DecodeError or
  RecordTooLargeError), reason, available (the record's bytes there) and,
  where known, shape, length, format, ext_type, needs (the size its headers
  declare), exact (false: needs is the least it can be), missing, bad_offset
  and bad_byte (the byte that is not MessagePack, and where it is)."""


def add(commands: Any) -> None:
    """The ``inspect`` command and its options."""
    inspect = command(
        commands,
        "inspect",
        "show where each record is, its size and its shape",
        "Print a line for each record of each SOURCE: its index, the byte it starts at, its "
        "size and its top-level shape (array of 8, map of 3, str, int, ...), by framing "
        "alone: no value is decoded, so any MessagePack is shown, whatever it holds. The "
        "tool for a broken file: every record before a failure is shown, then where and how "
        "framing fails (a record cut off and how many bytes it lacks, a byte that is not "
        "MessagePack), and --at OFFSET shows what is at a byte. Offsets of a compressed "
        "SOURCE are offsets in its decompressed bytes.",
    )
    inspect.epilog = f"{OUTPUT}\n\n{EXIT_STATUSES}"
    reader_options(inspect, None)
    start = inspect.add_mutually_exclusive_group()
    start.add_argument(
        "--at",
        type=non_negative_int,
        default=None,
        metavar="OFFSET",
        help="begin at the record that holds byte OFFSET (of each SOURCE): the records before "
        "it are framed, not shown (from the nearest entry of a sidecar index, where the file "
        "has one); an OFFSET past the end is an error (status 2) (default: the first record)",
    )
    start.add_argument(
        "--start",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="begin at record N of each SOURCE (counting from 0); the records before it are "
        "framed, not shown (default: %(default)s)",
    )
    inspect.add_argument(
        "--limit",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="stop after N records of each SOURCE; the end line is then not shown (default: "
        "no limit)",
    )
    inspect.add_argument(
        "--hex",
        action="store_true",
        help=f"add each record's bytes in hex, its first {HEX_BYTES} then how many more there "
        "are; for all of them, dd or xxd -s OFFSET -l SIZE (default: off)",
    )
    inspect.add_argument(
        "--json",
        action="store_true",
        help="print a JSON object a line instead, its keys listed under output: below "
        "(default: text)",
    )
    inspect.set_defaults(run=_run_inspect)


# --- the bytes framing has not finished with ------------------------------------------------


class _Tail:
    """The chunks of a source as its framer reads them, those from ``start`` on kept: where
    framing fails, the failing record's bytes are there to be described, even those of
    stdin or of a decompressed stream, which cannot be read again. The framer drops what it
    has framed (:meth:`drop_before`), so at most a record and a chunk are kept, as the
    framer's own buffer holds."""

    def __init__(self, chunks: Chunks) -> None:
        self._chunks = chunks
        self.bytes_read = chunks.bytes_read
        self.source = chunks.source
        self.head = chunks.head
        self.as_is = chunks.as_is
        self._pieces: list[memoryview] = []
        self._start = chunks.bytes_read  # where the first piece kept starts

    @property
    def stopped(self) -> bool:
        """Never: a source inspected is not followed."""
        return self._chunks.stopped

    def __iter__(self) -> Iterator[bytes | bytearray | memoryview | Pending | Reopened]:
        for chunk in self._chunks:
            # Neither followed nor awaited, the source hands over bytes only.
            if isinstance(chunk, (bytes, bytearray, memoryview)):  # pragma: no branch
                self._pieces.append(memoryview(chunk).cast("B"))
            self.bytes_read = self._chunks.bytes_read
            yield chunk

    def drop_before(self, offset: int) -> None:
        """Keep only the bytes from ``offset`` on (where the next record starts)."""
        pieces = self._pieces
        dropped = 0
        while dropped < len(pieces) and self._start + len(pieces[dropped]) <= offset:
            self._start += len(pieces[dropped])
            dropped += 1
        del pieces[:dropped]
        if pieces and self._start < offset:
            pieces[0] = pieces[0][offset - self._start :]
            self._start = offset

    def since(self, offset: int) -> memoryview:
        """The bytes kept from ``offset`` on."""
        self.drop_before(offset)
        return memoryview(b"".join(self._pieces))

    def close(self) -> None:
        self._chunks.close()


# --- the command ----------------------------------------------------------------------------


@dataclasses.dataclass
class _Printer:
    """How lines are written: text columns or JSON, for one source."""

    name: str  # the SOURCE as given, in JSON
    prefix: str  # "SOURCE: " in text where there are several
    width: int
    as_json: bool
    hex: bool
    fluentd: bool

    def record(self, index: int, offset: int, data: memoryview) -> str:
        header = header_at(data, 0)
        assert header is not None  # a framed record is whole
        if self.as_json:
            fields = {"index": index, "offset": offset, "size": len(data), **header.fields()}
            return self._json(fields, data)
        size = f"size {len(data):>{self.width}}"
        return self._text(index, offset, size, header.describe(self.fluentd), data)

    def end(self, end: int, records: int) -> str:
        if self.as_json:
            return json.dumps({"source": self.name, "end": end, "records": records})
        plural = "" if records == 1 else "s"
        label = "end".ljust(len("record ") + self.width)
        return f"{self.prefix}{label}  at byte {end:>{self.width}}  ({records} record{plural})"

    def failure(self, exc: ReaderError, data: memoryview, account: Walk | None) -> str:
        header = header_at(data, 0) if data else None
        if self.as_json:
            fields: dict[str, Any] = {"index": exc.index, "offset": exc.offset}
            reason = for_the_command_line(exc, None).reason
            fields |= {"error": type(exc).__name__, "reason": reason, "available": len(data)}
            if header is not None and header.format != NEVER_USED:
                fields |= header.fields()
            if account is not None:
                fields |= _account_fields(exc, data, account)
            return self._json(fields, data)
        valid = header is not None and header.format != NEVER_USED
        shape = header.describe(self.fluentd) if header is not None and valid else "?"
        if isinstance(exc, TruncatedStreamError) and account is not None:
            least = "" if account.exact else "+"
            size = f"size {len(data):>{self.width}} of {account.needs}{least}"
            missing = account.needs - len(data)
            what = f"cut off: {'' if account.exact else 'at least '}{bytes_text(missing)} missing"
        elif account is not None and account.bad is not None:
            size = f"size {'?':>{self.width}}"
            bad = exc.offset + account.bad
            what = f"invalid: byte {bad} is 0x{data[account.bad]:02x}, never used in MessagePack"
        else:
            size = f"size {'?':>{self.width}}"
            what = f"error: {for_the_command_line(exc, None).reason}"
        return self._text(exc.index, exc.offset, size, f"{shape}  {what}", data)

    def _text(self, index: int, offset: int, size: str, shape: str, data: memoryview) -> str:
        line = f"{self.prefix}record {index:>{self.width}}  at byte {offset:>{self.width}}  {size}"
        if not self.hex:
            return f"{line}  {shape}"
        shown = bytes(data[:HEX_BYTES]).hex(" ")
        more = len(data) - HEX_BYTES
        rest = f" ... ({bytes_text(more)} more)" if more > 0 else ""
        return f"{line}  {shape:<20}  {shown}{rest}"

    def _json(self, fields: dict[str, Any], data: memoryview) -> str:
        if self.hex:
            fields["hex"] = bytes(data[:HEX_BYTES]).hex()
            fields["hex_omitted"] = max(len(data) - HEX_BYTES, 0)
        return json.dumps({"source": self.name, **fields})


def _account_fields(exc: ReaderError, data: memoryview, account: Walk) -> dict[str, Any]:
    if isinstance(exc, TruncatedStreamError):
        missing = account.needs - len(data)
        return {"needs": account.needs, "exact": account.exact, "missing": missing}
    assert account.bad is not None  # the only other account _account gives
    return {"bad_offset": exc.offset + account.bad, "bad_byte": data[account.bad]}


def _hint(exc: ReaderError, data: memoryview, account: Walk | None) -> str:
    """What the error line adds to the reader's message: what the failing record's headers
    say about how it fails."""
    if account is None:
        return ""
    if isinstance(exc, TruncatedStreamError):
        header = header_at(data, 0)
        shape = "its first header cut off" if header is None else header.describe()
        least = "" if account.exact else "at least "
        return (
            f"; the record ({shape}) has {bytes_text(len(data))} of {least}"
            f"{account.needs}: {least}{bytes_text(account.needs - len(data))} missing"
        )
    assert account.bad is not None  # the only other account _account gives
    bad = exc.offset + account.bad
    return f"; byte {bad} is 0x{data[account.bad]:02x}, a byte MessagePack never uses"


def _account(exc: ReaderError, data: memoryview) -> Walk | None:
    """What a failing record's bytes say: how much a cut-off record lacks, where a record
    that is not MessagePack goes wrong; ``None`` where they say nothing more."""
    if not data or not isinstance(exc, (TruncatedStreamError, DecodeError)):
        return None
    account = walk(data)
    if isinstance(exc, TruncatedStreamError):
        # The framer found the record unfinished, so its headers need more than there is;
        # should they not, a count of missing bytes would be nonsense: none is given.
        return account if account.needs > len(data) else None
    return account if account.bad is not None else None


def _run_inspect(args: argparse.Namespace) -> int:
    options = read_options(args)
    sources = sources_of(args.sources)
    for (name, target), argument in zip(sources, args.sources, strict=True):
        size = size_of(target)
        printer = _Printer(
            name=argument,
            prefix=f"{name}: " if len(sources) > 1 else "",
            width=len(str(size)) if size is not None else _UNKNOWN_WIDTH,
            as_json=args.json,
            hex=args.hex,
            fluentd=args.fluentd,
        )
        _inspect(name, target, options, args, printer)
    flush_stdout()
    return 0


def _inspect(
    name: str, target: Source, options: ReadOptions, args: argparse.Namespace, printer: _Printer
) -> None:
    """Print the records of one source, from ``--at`` or ``--start`` on, up to ``--limit``;
    then its end, or how it fails."""
    at: int | None = args.at
    failed: list[str] = []
    limit: int | None = args.limit
    if limit == 0:
        return
    with phrased(name, lambda _exc: failed[0] if failed else ""):
        origin = _origin_at(load_index(target), at) if at is not None else None
        if origin is None:
            origin = origin_for(target, args.start, options, refuse_foreign=not args.force)
        # Framing's own loop (errors named, foreign input refused), over a framer that reads
        # through ``kept``: the failing record's bytes are then at hand.
        tail: list[_Tail] = []

        def tapped(chunks: Chunks) -> _Tail:
            tail.append(_Tail(chunks))
            return tail[0]

        framing = Framing(target, options, origin, refuse_foreign=not args.force, tap=tapped)
        kept = tail[0]
        shown = 0
        write = sys.stdout.write
        try:
            for run in framing.runs():
                kept.drop_before(run.end)
                if run.end <= (at or 0) or run.index + run.count <= args.start:
                    continue  # framed to get there, not shown
                for position, end in enumerate(run.ends()):
                    index, offset = run.where(position)
                    if index < args.start or end <= (at or 0):
                        continue
                    write(printer.record(index, offset, run.record(position)) + "\n")
                    shown += 1
                    if shown == limit:
                        return  # before framing reads on, and fails past what was asked
        except ReaderError as exc:
            data = kept.since(exc.offset)
            account = _account(exc, data)
            failed.append(_hint(exc, data, account))
            write(printer.failure(exc, data, account) + "\n")
            raise
        finally:
            kept.close()  # the runs left unfinished (--limit) close the source only when freed
        end, records = framing.framer.start, framing.framer.index
        if at is not None and at >= end:
            decompressed = ", decompressed" if framing.chunks.compression else ""
            raise UsageFailure(f"{name}: byte {at} is past the end ({end} bytes{decompressed})")
        write(printer.end(end, records) + "\n")


def _origin_at(index: RecordIndex | None, offset: int) -> tuple[int, int]:
    """Where framing can start to reach the record that holds byte ``offset``: the last
    record a sidecar index knows at or before it, else the stream's start."""
    if index is None:
        return 0, 0
    if offset >= index.end:
        return index.count, index.end
    entry = bisect.bisect_right(index.offsets, offset) - 1
    return entry * index.every, index.offsets[entry]
