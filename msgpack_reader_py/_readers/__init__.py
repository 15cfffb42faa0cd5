"""The readers of records: :class:`~msgpack_reader_py.StreamingReader` and the lifecycle
every reader shares (``streaming_reader``), the asyncio reader (``aio``), and records with no
type (``values``)."""
