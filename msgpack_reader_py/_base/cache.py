"""A memoiser that keys a call on every parameter's value: what is worked out once (from a
record type, its compiled decoders) and then shared by every reader."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

__all__ = ["cached"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def cached(maxsize: int) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Make a function run once per set of arguments, its result shared from then on. The
    package caches what it works out from record types and hooks: reading a type's
    annotations or compiling its decoders can cost more than reading a small stream, and
    would be paid again by every file of a many-file read.

    Calls that say the same thing in other words (a default left out or written out, an
    argument by position or by name) share one result: its key is every parameter's value,
    in order. The results must not be changed by their users. Arguments that cannot be hashed
    (a generic alias over ``Annotated[int, {"unit": "ms"}]``) are worked out each time. For
    functions whose parameters all have names (no ``*args``, ``**kwargs``, or positional-only).
    """

    def decorate(make: Callable[_P, _R]) -> Callable[_P, _R]:
        parameters = inspect.signature(make).parameters.values()
        if any(p.kind not in _NAMED for p in parameters):
            raise TypeError(f"cached: every parameter of {make.__qualname__} must have a name")
        names = tuple(p.name for p in parameters)
        defaults = {p.name: p.default for p in parameters if p.default is not p.empty}
        positional = sum(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters)
        later = [frozenset(names[start:]) for start in range(positional + 1)]

        by_name = cast(Callable[..., _R], make)  # every parameter is named, as checked above

        @functools.lru_cache(maxsize=maxsize)
        def by_key(key: tuple[Any, ...]) -> _R:
            return by_name(**dict(zip(names, key, strict=True)))

        @functools.wraps(make)
        def of(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            if len(args) > positional or not later[len(args)].issuperset(kwargs):
                return make(*args, **kwargs)  # for make to say what is wrong with the call
            key = list(args)
            for name in names[len(args) :]:
                if name in kwargs:
                    key.append(kwargs[name])
                elif name in defaults:
                    key.append(defaults[name])
                else:
                    return make(*args, **kwargs)  # a required argument left out
            whole = tuple(key)
            try:
                hash(whole)
            except TypeError:
                return make(*args, **kwargs)
            return by_key(whole)

        return of

    return decorate
