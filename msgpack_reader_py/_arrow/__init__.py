"""Records as Arrow columns (the ``arrow`` extra): a type's schema and what builds its
columns (``schema``), the readers of batches and tables (``reader``), and columns of JSON
text, where a field's values have no Arrow type of their own (``json_columns``), and what
DuckDB would hold of a type's columns with less precision (``duckdb_types``)."""

from .._base.extras import ARROW_FEATURE, check_version, missing_extra

try:
    import pyarrow
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
    raise missing_extra(exc, "arrow", feature=ARROW_FEATURE) from None

check_version("pyarrow", pyarrow.__version__, ARROW_FEATURE, "arrow")
