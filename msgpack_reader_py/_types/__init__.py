"""The type layer: what a record type is and how msgspec decodes it.

- ``record_type``: a type's fields in wire order, a union's kinds and tag (read in one place);
- ``forms``: the wire forms a type is decoded through (array and map, tagged per kind), which
  carry what the type refuses into every form, and the converters back to the type;
- ``extensions``: the converters of fields decoded as an extension (a ``msgpack.Timestamp``, a
  ``datetime`` with an ``ext_hook``);
- ``decoding``: runs of records decoded by one msgspec call, a failing record alone;
- ``messages`` and ``locate``: msgspec's errors in the reader's words, and the field of a value
  msgspec refuses without a path;
- ``columns``: a type's columns for the writers of rows;
- ``names``: record types named by text (``--type``);
- ``shipping``: record types sent to other processes, by reference or by value.
"""
