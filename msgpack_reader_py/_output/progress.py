"""Progress bars on stderr for the command line: one look for every long-running command.

tqdm comes with the ``arrow`` extra; without it, ``auto`` draws no bar and ``always`` is an
error naming the extra. In ``auto`` mode a bar appears only on a terminal, and only once the
job has run half a second, so a small job never flashes one; a pipe gets none.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal

from .._base.extras import missing_extra

__all__ = ["MODES", "Mode", "ProgressUnavailable", "Update", "progress_bar"]

Mode = Literal["auto", "always", "never"]
MODES: tuple[Mode, ...] = ("auto", "always", "never")

Update = Callable[[int, int], None]
"""Called as ``update(records, position)``: records so far, and the bar's position (bytes read,
or records written for a bar counted in records)."""

_DELAY = 0.5  # seconds a job runs, in auto mode, before its bar appears


class ProgressUnavailable(Exception):
    """``always`` was asked for and tqdm is not installed; the message says what to install."""


@contextmanager
def progress_bar(
    mode: Mode, label: str, total: int | None, *, unit: Literal["bytes", "records"]
) -> Iterator[Update | None]:
    """A callback that draws a bar on stderr, or ``None`` when no bar is to be drawn.

    A bar in ``bytes`` shows sizes and rate in bytes (``12.3MB/27.4MB``, ``10.2MB/s``) and the
    records so far with their rate; a bar in ``records`` shows records and records per second.
    ``total`` (bytes or records) gives a percentage and an estimate of the time left. A bar
    ended by an exception (an error, Ctrl-C) is wiped, so the line after it starts clean.
    """
    if mode == "never" or (mode == "auto" and not sys.stderr.isatty()):
        yield None
        return
    try:
        from tqdm import tqdm
    except ModuleNotFoundError as exc:
        if mode == "always":
            message = str(missing_extra(exc, "arrow", feature="a progress bar"))
            raise ProgressUnavailable(message) from None
        yield None
        return
    # tqdm puts its unit after the rate ({rate_fmt}: "10.2MB/s") but not after the counts.
    name = "B" if unit == "bytes" else " records"
    size = "{n_fmt}" + name + ("/{total_fmt}" + name if total is not None else "")
    timing = "{elapsed}<{remaining}" if total is not None else "{elapsed}"
    head = "{l_bar}{bar}| " if total is not None else "{desc}: "
    bar = tqdm(
        total=total,
        desc=label,
        unit=name,
        unit_scale=True,
        unit_divisor=1024 if unit == "bytes" else 1000,
        bar_format=head + size + " [" + timing + ", {rate_fmt}{postfix}]",
        delay=_DELAY if mode == "auto" else 0,
        file=sys.stderr,
        dynamic_ncols=True,
    )

    def update(records: int, position: int) -> None:
        if unit == "bytes":
            elapsed = bar.format_dict["elapsed"]
            per_second = f", {records / elapsed:,.0f} records/s" if elapsed > 0 else ""
            bar.set_postfix_str(f"{records:,} records{per_second}", refresh=False)
        bar.update(position - bar.n)

    try:
        yield update
    except BaseException:
        bar.leave = False  # close() then clears the line instead of leaving a half bar on it
        raise
    finally:
        bar.close()
