"""Records written out: the formats and codecs (``formats``), the text formats (``text``),
Parquet and Arrow IPC (``columnar``), SQL filters (``query``), progress bars (``progress``),
and :func:`~msgpack_reader_py.convert`, which ties them to the readers (``convert``)."""
