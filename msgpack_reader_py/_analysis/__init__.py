"""What records say of themselves: record types inferred from untyped records (``infer``,
with ``seen``, ``tags`` and ``names``), the types of whole sources, every record checked
(``inferred``), and the statistics of every field (``stats``)."""
