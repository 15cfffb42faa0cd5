"""The reference fixture's family: :class:`~msgpack_reader_py.Item` (and its tuple forms)
and the generator that writes the reference stream byte for byte, and streams like it."""
