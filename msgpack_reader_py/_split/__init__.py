"""One file in pieces: byte ranges cut, their first records guessed and proved
(``ranges``), read by worker processes (``parallel``, settings in one value,
:class:`~.parallel.Splitting`), records counted and found by framing alone (``seek``), and
the sidecar index that makes both a seek (``index``)."""
