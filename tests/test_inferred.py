"""Record types inferred for whole sources: a sample, then every record of a file checked and
the types widened by any that does not fit, so that a conversion never drops a value."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import msgpack
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msgpack_reader_py import RecordError, TruncatedStreamError
from msgpack_reader_py._analysis.inferred import MISFITS, infer_sources
from msgpack_reader_py._base.ext import fluentd_event_time
from msgpack_reader_py._output.convert import convert

from .helpers import examples


def write(path: Path, records: list[Any]) -> Path:
    path.write_bytes(b"".join(msgpack.packb(r) for r in records))
    return path


def arrow_rows(data: bytes) -> list[dict[str, Any]]:
    with pa.ipc.open_file(pa.BufferReader(data)) as reader:
        rows: list[dict[str, Any]] = reader.read_all().to_pylist()
    return rows


def test_a_key_first_seen_late_is_in_the_inferred_type(tmp_path: Path) -> None:
    records = [{"n": i} for i in range(2500)] + [{"n": 1, "trace_id": "t"}]
    path = write(tmp_path / "late.msgpack", records)
    again, schema = infer_sources([path])
    assert again == [path]
    assert (schema.records, schema.checked) == (101, 2501)  # the first 100, and the late one
    assert "    trace_id: str | None = None\n" in schema.source()


def test_a_kind_first_seen_late_joins_the_union(tmp_path: Path) -> None:
    records = [{"type": "a", "n": i} if i % 2 else {"type": "b", "s": str(i)} for i in range(3000)]
    records.append({"type": "c", "flag": True})
    path = write(tmp_path / "kinds.msgpack", records)
    _, schema = infer_sources([path])
    assert schema.kinds == ["B", "A", "C"]
    out = io.BytesIO()
    result = convert(path, out, "arrow", record_type=None)
    assert result.records == len(records)
    assert arrow_rows(out.getvalue())[-1] == {"type": "c", "s": None, "n": None, "flag": True}


def test_a_type_first_seen_late_widens_the_field(tmp_path: Path) -> None:
    records: list[Any] = [{"v": i} for i in range(1500)] + [{"v": 2.5}]
    path = write(tmp_path / "wider.msgpack", records)
    _, schema = infer_sources([path])
    assert "    v: int | float\n" in schema.source()
    assert schema.mixed == []


def test_many_late_misfits_take_rounds_and_keep_every_value(tmp_path: Path) -> None:
    records: list[Any] = [{"n": i} for i in range(1200)]
    records += [{"n": i, f"extra{i % 7}": i, "tags": [str(i)]} for i in range(3 * MISFITS)]
    path = write(tmp_path / "many.msgpack", records)
    out = io.BytesIO()
    assert convert(path, out, "arrow", record_type=None).records == len(records)
    rows = arrow_rows(out.getvalue())
    for row, record in zip(rows, records, strict=True):
        assert {k: v for k, v in row.items() if v is not None} == record


def test_records_the_sample_holds_whole_are_not_read_again(tmp_path: Path) -> None:
    path = write(tmp_path / "small.msgpack", [{"n": 1}, {"n": 2, "m": "x"}])
    _, schema = infer_sources([path], 10)
    assert (schema.records, schema.checked) == (2, 2)


def test_a_stream_is_inferred_from_its_sample_and_replayed() -> None:
    stream = io.BytesIO(b"".join(msgpack.packb({"n": i}) for i in range(50)))
    again, schema = infer_sources([stream], 10)
    assert (schema.records, schema.checked) == (10, None)
    out = io.BytesIO()
    convert(again, out, "arrow", record_type=None)
    assert len(arrow_rows(out.getvalue())) == 50


def test_infer_from_the_first_records_only_checks_nothing(tmp_path: Path) -> None:
    path = write(tmp_path / "late.msgpack", [{"n": i} for i in range(20)] + [{"n": "x"}])
    _, schema = infer_sources([path], 10)
    assert (schema.records, schema.checked, schema.every) == (10, None, False)
    out = io.BytesIO()
    _, error = drain_conversion(path, out, infer_from=10)
    assert isinstance(error, RecordError)
    assert (error.index, error.reason) == (
        20,
        "field `n` expected int, got str 'x'; the record type was inferred from the first 10 "
        "records, and does not hold this one: infer_from='all' infers it from every record",
    )


def drain_conversion(path: Path, out: io.BytesIO, **options: Any) -> tuple[None, Exception]:
    try:
        convert(path, out, "csv", record_type=None, **options)
    except Exception as exc:  # noqa: BLE001 - returned to be looked at
        return None, exc
    raise AssertionError("the conversion did not fail")


def test_broken_data_found_while_checking_fails_the_conversion_after_the_good_records(
    tmp_path: Path,
) -> None:
    records = [{"n": i} for i in range(3000)]
    data = b"".join(msgpack.packb(r) for r in records)
    path = tmp_path / "cut.msgpack"
    path.write_bytes(data[:-2])
    _, schema = infer_sources([path])
    assert schema.checked == 2999
    out = io.BytesIO()
    with pytest.raises(TruncatedStreamError) as caught:
        convert(path, out, "csv", record_type=None)
    assert caught.value.index == 2999
    assert out.getvalue().decode().splitlines()[1:] == [str(i) for i in range(2999)]


def test_several_sources_are_checked_in_turn(tmp_path: Path) -> None:
    first = write(tmp_path / "a.msgpack", [{"n": i} for i in range(1500)])
    second = write(tmp_path / "b.msgpack", [{"n": 1, "late": [1.5]}])
    _, schema = infer_sources([first, second])
    assert schema.checked == 1501
    assert "    late: list[float] | None = None\n" in schema.source()


def test_a_record_an_ext_hook_refuses_is_skipped_or_raised_as_asked(tmp_path: Path) -> None:
    good = msgpack.ExtType(0, (1).to_bytes(4, "big") + (0).to_bytes(4, "big"))
    bad = msgpack.ExtType(0, b"xx")
    records = [{"t": good, "n": i} for i in range(1200)] + [{"t": bad, "n": 1, "new": 1}]
    path = write(tmp_path / "fluent.msgpack", records)
    for on_error in ("skip", "raise"):
        _, schema = infer_sources([path], ext_hook=fluentd_event_time, on_error=on_error)
        assert "new" not in schema.source()  # a record no reader can read says nothing of types
    # The conversion meets it in its turn: every record before it written, then its error
    # (the key the types never saw, found before the hook is called on its extension).
    out = io.BytesIO()
    with pytest.raises(RecordError, match="map has key 'new', which names no field") as e:
        convert(path, out, "csv", record_type=None, ext_hook=fluentd_event_time)
    assert e.value.index == 1200
    assert len(out.getvalue().decode().splitlines()) == 1 + 1200
    out = io.BytesIO()
    result = convert(
        path, out, "csv", record_type=None, ext_hook=fluentd_event_time, on_error="skip"
    )
    assert (result.records, result.skipped) == (1200, 1)


@st.composite
def logs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Map records whose keys (one type each) may first appear at any record, late too."""
    keys = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, unique=True))
    values: dict[str, st.SearchStrategy[Any]] = {
        "a": st.integers(-5, 5),
        "b": st.text(max_size=3),
        "c": st.lists(st.integers(0, 3), max_size=2),
        "d": st.booleans(),
        "e": st.floats(allow_nan=False, allow_infinity=False),
    }
    count = draw(st.integers(1, 60))
    records = []
    for index in range(count):
        record: dict[str, Any] = {"id": index}
        for key in keys:
            if draw(st.integers(0, 9)) == 0:
                record[key] = draw(values[key])
        records.append(record)
    return records


@settings(max_examples=examples(ci=120, local=40), deadline=None)
@given(logs(), st.none() | st.integers(1, 20))
def test_an_inferred_conversion_never_drops_a_value(
    records: list[Any], infer_from: int | None
) -> None:
    """Inferred from every record, every value is written; from the first N, every value
    is written, or a later record that does not fit fails naming it."""
    data = b"".join(msgpack.packb(r) for r in records)
    out = io.BytesIO()
    try:
        result = convert(data, out, "arrow", record_type=None, infer_from=infer_from)
    except RecordError as exc:
        failed: RecordError | None = exc
    else:
        failed = None
    if failed is not None:
        assert infer_from is not None
        assert failed.index >= infer_from
        assert "infer_from='all'" in failed.reason
        return
    assert result.records == len(records)
    rows = arrow_rows(out.getvalue())
    for row, record in zip(rows, records, strict=True):
        kept = {k: v for k, v in row.items() if v is not None}
        assert kept == {k: v for k, v in record.items() if v is not None}
