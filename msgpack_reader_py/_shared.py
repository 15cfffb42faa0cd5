"""What is worked out from a record type once, and then shared by every reader of the type."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar, cast

__all__ = ["shared"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def shared(maxsize: int) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Make a function of record types (and hooks) run once per set of arguments, its result
    shared from then on: reading a type's annotations or compiling its decoders can cost more
    than reading a small stream, and is paid again by every file of a many-file read.

    The results must not be changed by their users. Arguments that cannot be hashed (a
    generic alias over ``Annotated[int, {"unit": "ms"}]``) are worked out each time.
    """

    def decorate(make: Callable[_P, _R]) -> Callable[_P, _R]:
        # As typed, lru_cache's wrapper takes any hashable arguments; it takes make's.
        cached = cast(Callable[_P, _R], functools.lru_cache(maxsize=maxsize)(make))

        @functools.wraps(make)
        def of(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                hash((args, *kwargs.items()))
            except TypeError:
                return make(*args, **kwargs)
            return cached(*args, **kwargs)

        return of

    return decorate
