"""Optional dependencies: when one is missing, say in one line which extra installs it."""

from __future__ import annotations

__all__ = [
    "ARROW_FEATURE",
    "OLDEST",
    "MissingExtraError",
    "check_version",
    "missing_extra",
    "require",
]

ARROW_FEATURE = "the Arrow readers (read_table, read_batches, BatchReader, arrow_schema)"
"""How a missing pyarrow names what needed it."""

OLDEST: dict[str, tuple[int, ...]] = {"pyarrow": (23,), "duckdb": (1, 5, 4)}
"""The oldest release of each optional package whose output the package can trust, as the
extras require it; an older one installed otherwise is refused (:func:`check_version`), as a
missing one is, for it would give wrong answers, not errors. pyarrow 22 and before made a
``RecordBatch`` from a slice of a struct array with its columns whole, so a batch cut from
the rows read held rows that another batch holds too; 19 and before took no
``maps_as_pydicts`` in ``to_pylist``; before 19 there was no JSON type, and text columns were
written as JSON strings, quotes and all. DuckDB 1.5.3 and before turned ``[false]`` into
``[true]`` in a query's result (``dump --where``)."""


class MissingExtraError(ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra to install."""


def missing_extra(exc: ModuleNotFoundError, extra: str, *, feature: str) -> MissingExtraError:
    """The error to raise (``from None``) when importing ``feature``'s dependencies failed.

    Usage, at the top of a module of the ``extra`` extra::

        try:
            import pyarrow as pa
        except ModuleNotFoundError as exc:
            raise missing_extra(exc, "arrow", feature=ARROW_FEATURE) from None
    """
    # A package that re-raises its own dependency's failure may leave the name on the cause.
    cause = exc.__cause__ or exc.__context__
    name = exc.name or (cause.name if isinstance(cause, ModuleNotFoundError) else None)
    if name:
        name = name.partition(".")[0]  # the distribution to install, not the submodule that failed
    return _missing(feature, [name] if name else [], extra, name)


def check_version(package: str, version: str, feature: str, extra: str) -> None:
    """Raise :class:`MissingExtraError` where ``version`` of ``package`` (one of
    :data:`OLDEST`, which ``feature``, of the ``extra`` extra, needs) is older than its oldest
    release there."""
    oldest = OLDEST[package]
    if _release(version) >= oldest:
        return
    wanted = ".".join(map(str, oldest))
    message = (
        f"{feature} needs {package} {wanted} or later, and {version} is installed: pip install "
        f"-U '{package}>={wanted}' (or install msgpack-reader-py with its '{extra}' extra)"
    )
    raise MissingExtraError(message, name=package)


def _release(version: str) -> tuple[int, ...]:
    """The numbers a version string starts with: ``"2.0.1.dev26"`` -> ``(2, 0, 1)``."""
    numbers = []
    for part in version.split("."):
        digits = part[: len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        numbers.append(int(digits))
        if digits != part:  # "4rc1": the numbers end there
            break
    return tuple(numbers)


def require(feature: str, extra: str, *modules: str) -> None:
    """Raise :class:`MissingExtraError` naming every one of ``modules`` that is not installed
    (what ``feature`` needs, all of them in the ``extra`` extra), so that a user installs what
    a command needs at once, not one package per try."""
    import importlib.util

    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise _missing(feature, missing, extra, missing[0])


def _missing(feature: str, names: list[str], extra: str, name: str | None) -> MissingExtraError:
    # The command installs the packages into whatever environment runs this one, however the
    # package itself got there (a clone, a wheel): the extra is named for those who install it.
    what = " and ".join(names) or "a dependency"
    verb = "is" if len(names) <= 1 else "are"
    how = f"pip install {' '.join(names)}" if names else f"install the '{extra}' extra"
    message = (
        f"{feature} needs {what}, which {verb} not installed: {how} (or install "
        f"msgpack-reader-py with its '{extra}' extra)"
    )
    return MissingExtraError(message, name=name)
