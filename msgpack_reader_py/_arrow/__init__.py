"""Records as Arrow columns (the ``arrow`` extra): a type's schema and what builds its
columns (``schema``), the readers of batches and tables (``reader``), and columns of JSON
text, where a field's values have no Arrow type of their own (``json_columns``), and what
DuckDB would hold of a type's columns with less precision (``duckdb_types``)."""
