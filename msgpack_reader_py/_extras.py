"""Optional dependencies: when one is missing, say in one line which extra installs it."""

from __future__ import annotations

__all__ = ["MissingExtraError", "missing_extra"]


class MissingExtraError(ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra to install."""


def missing_extra(exc: ModuleNotFoundError, extra: str, *, feature: str) -> MissingExtraError:
    """The error to raise (``from None``) when importing ``feature``'s dependencies failed.

    Usage, at the top of a module of the ``extra`` extra::

        try:
            import pyarrow as pa
        except ModuleNotFoundError as exc:
            raise missing_extra(exc, "arrow", feature="msgpack_reader_py.arrow") from None
    """
    # A package that re-raises its own dependency's failure may leave the name on the cause.
    cause = exc.__cause__ or exc.__context__
    name = exc.name or (cause.name if isinstance(cause, ModuleNotFoundError) else None)
    if name:
        name = name.partition(".")[0]  # the distribution to install, not the submodule that failed
    missing = name or "a dependency"
    message = (
        f"{feature} needs {missing}, which is not installed: install the '{extra}' extra "
        f"(pip install '.[{extra}]' in the project's clone, or poetry install --extras {extra})"
    )
    return MissingExtraError(message, name=name)
