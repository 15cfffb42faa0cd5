"""The ground floor: what every other part of the package stands on, and that imports
nothing of it.

- ``errors``: the error contract (:class:`~msgpack_reader_py.ReaderError` and its kinds);
- ``options``: the reading options every entry point takes, checked once
  (:class:`~msgpack_reader_py.ReadOptions`);
- ``checks``: one check for each kind of argument (a count, a positive count);
- ``ext``: ready ``ext_hook``s (:func:`~msgpack_reader_py.fluentd_event_time`) and the
  timestamp as text;
- ``json_text``: values as JSON text, as every text output writes them;
- ``atomic``: files that appear whole or not at all, and the stop a signal asks for;
- ``cache``, ``extras``, ``log``, ``version``: what is worked out once per type, the one-line
  message for a missing optional dependency, the package's logger, its version.
"""
