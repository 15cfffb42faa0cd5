"""The corpus of broken and hostile streams in tests/corpus/, read as its manifest says.

Each case is read three ways: from the file's bytes, from its path (the reader opens the file)
and from a stream one byte per read. Every way must yield exactly the records the manifest
lists, then end cleanly or raise exactly the error class, index and offset it names.
``tests/corpus/make_corpus.py`` made the files and the manifest; a test here checks that it
still makes exactly what is committed.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

import msgpack_reader_py
from msgpack_reader_py import Item, ReaderError, RecordError, StreamingReader
from tests.corpus import make_corpus

from .helpers import Loose

CORPUS = Path(__file__).resolve().parent / "corpus"
MANIFEST = CORPUS / "manifest.json"
RECORD_TYPES: dict[str, type[Any]] = {"Item": Item, "Loose": Loose}
ERROR_CLASSES = {
    name: getattr(msgpack_reader_py, name)
    for name in (
        "TruncatedStreamError",
        "DecodeError",
        "RecordTooLargeError",
        "RecordError",
    )
}


def load_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(MANIFEST.read_text(encoding="utf-8"))["cases"]
    return cases


CASES = load_cases()
WAYS = ["bytes", "path", "stream, read_size=1"]


def open_reader(case: dict[str, Any], way: str) -> StreamingReader[Any]:
    options = case["options"]
    kwargs: dict[str, Any] = {"on_error": options["on_error"]}
    if options["max_record_size"] is not None:
        kwargs["max_record_size"] = options["max_record_size"]
    path = CORPUS / case["file"]
    source: Any
    if way == "bytes":
        source = path.read_bytes()
    elif way == "path":
        source = path
    else:
        source = io.BytesIO(path.read_bytes())
        kwargs["read_size"] = 1
    return StreamingReader(source, RECORD_TYPES[options["record_type"]], **kwargs)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_corpus_case(case: dict[str, Any], way: str) -> None:
    reader = open_reader(case, way)
    records: list[Any] = []
    error: ReaderError | None = None
    try:
        records.extend(reader)  # keeps the records appended before an error
    except ReaderError as exc:
        error = exc

    expected = case["records"]
    assert len(records) == expected["count"]
    if expected["ids"] is not None:
        assert all(type(record) is Item for record in records)
        assert [record.id for record in records] == expected["ids"]
    else:
        assert all(type(record) is Loose for record in records)
    shown = [Loose(r.key, make_corpus.shown(r.payload)) if type(r) is Loose else r for r in records]
    assert hashlib.sha256(repr(shown).encode()).hexdigest() == expected["sha256"], shown

    if case["error"] is None:
        assert error is None, f"{type(error).__name__}: {error}"
        assert reader.bytes_read == (CORPUS / case["file"]).stat().st_size
    else:
        assert error is not None, "the stream ended without an error"
        assert type(error) is ERROR_CLASSES[case["error"]], f"{type(error).__name__}: {error}"
        assert (error.index, error.offset) == (case["index"], case["offset"]), str(error)
        named = f"{CORPUS / case['file']}: " if way == "path" else ""
        assert error.source == (named[:-2] or None)
        assert str(error).startswith(f"{named}record {case['index']} at byte {case['offset']}: ")
        with pytest.raises(StopIteration):  # finished: no resynchronisation
            next(reader)

    assert reader.skipped == case["skipped"]
    assert [[e.index, e.offset] for e in reader.errors] == case["skipped_at"]
    assert all(type(e) is RecordError for e in reader.errors)
    reader.close()


def test_every_file_is_in_the_manifest_and_every_case_has_its_file() -> None:
    on_disk = {path.name for path in CORPUS.glob("*.msgpack")}
    in_manifest = {case["file"] for case in CASES}
    assert on_disk == in_manifest
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names))


def test_make_corpus_makes_exactly_what_is_committed() -> None:
    corpus = make_corpus.build()
    assert sorted(corpus.files) == sorted(path.name for path in CORPUS.glob("*.msgpack"))
    for name, data in corpus.files.items():
        assert (CORPUS / name).read_bytes() == data, f"{name} differs: run make_corpus.py"
    assert MANIFEST.read_text(encoding="utf-8") == make_corpus.manifest_text(corpus)


def test_make_corpus_writes_a_folder(tmp_path: Path) -> None:
    (tmp_path / "stale.msgpack").write_bytes(b"\xc0")
    assert make_corpus.main([str(tmp_path)]) == 0
    written = sorted(path.name for path in tmp_path.iterdir())
    assert written == sorted([*make_corpus.build().files, "manifest.json"])
    assert (tmp_path / "manifest.json").read_bytes() == MANIFEST.read_bytes()


def test_the_corpus_covers_every_outcome() -> None:
    """Every error class, a clean end, both record types and both error modes are exercised."""
    outcomes = {case["error"] for case in CASES}
    assert outcomes == {None, *ERROR_CLASSES}
    assert {case["options"]["record_type"] for case in CASES} == set(RECORD_TYPES)
    assert {case["options"]["on_error"] for case in CASES} == {"raise", "skip"}
    assert any(case["skipped"] > 1 for case in CASES)
