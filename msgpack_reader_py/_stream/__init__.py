"""The stream: bytes from a source to delivered records, nothing of the record type but
what :mod:`.._types` says.

``sources`` (paths, bytes and streams as counted chunks; ``compression``, ``sniff``,
``follow`` and ``pending`` plug in) -> ``framing`` (runs of whole records, no value decoded;
``wire`` reads the sizes an unfinished record declares) -> ``delivery`` (runs decoded and
handed over, errors located, skip mode: :func:`~.delivery.reading` builds the pipeline for
every reader). ``files`` names the local files of a path, a glob or a list.
"""
