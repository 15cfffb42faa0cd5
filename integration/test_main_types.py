"""Record types defined where users define them (a notebook, ``python -c``, standard input, a
script: ``__main__``), with threads running, read on many processes: every kind, at the top
and nested, under each way a worker process starts, gives exactly the sequential read; what
cannot be sent says so in one line. Each case runs as the user runs it, in a process of its
own (:mod:`tests.user_code`), many reads to a process."""

from __future__ import annotations

from pathlib import Path

from tests.user_code import TYPES, run_user_code

READS = """
import multiprocessing

from msgpack_reader_py._split import parallel
from msgpack_reader_py._arrow.reader import read_table
from msgpack_reader_py._output.convert import convert
from msgpack_reader_py.polars import scan_msgpack
from msgpack_reader_py._split.seek import count_records

events = write("events.msgpack", EVENTS)
broken = write("broken.msgpack", BROKEN)
messages = write("messages.msgpack", [e.message for e in EVENTS])
points = write("points.msgpack", [point(i) for i in range(400)])
pairs = write("pairs.msgpack", [e.pair for e in EVENTS])
owners = write("owners.msgpack", [e.owner for e in EVENTS])
extras = write("extras.msgpack", [e.extra for e in EVENTS])


def text(path, record_type, **workers):
    out = DIRECTORY / "out.jsonl"
    convert(path, out, "jsonl", record_type=record_type, **workers)
    return out.read_bytes()


# Read in this process first: every type used (msgspec has cached what it worked out on each
# class) before any is sent.
expected = {
    "table": read_table(events, Event),
    "frame": scan_msgpack(events, Event).collect(),
    "text": text(events, Event),
    "broken": error_of(lambda: text(broken, Event)),
    "union": text(messages, Ping | Pong),
    "array_like": count_records(points, Point),
    "namedtuple": text(pairs, Pair),
    "attrs": text(owners, Owner),
    "typeddict": count_records(extras, Extra),
}
assert "an id is never negative" in expected["broken"], expected["broken"]
assert expected["array_like"] == expected["typeddict"] == len(EVENTS)
ranged = {"workers": 2, "blocksize": BLOCKSIZE}

# As the package starts workers with a thread running: a fork server. (Reads to Arrow start
# workers that import pyarrow and pandas, which takes them seconds: the text and the counts
# do not. One read to Arrow, Polars' scan.)
assert parallel._context().get_start_method() == "forkserver"
assert scan_msgpack(events, Event, **ranged).collect().equals(expected["frame"])
assert error_of(lambda: text(broken, Event, **ranged)) == expected["broken"]
assert text(messages, Ping | Pong, **ranged) == expected["union"]
assert count_records(points, Point, **ranged) == expected["array_like"]
assert text(pairs, Pair, **ranged) == expected["namedtuple"]
assert text(owners, Owner, **ranged) == expected["attrs"]
assert count_records(extras, Extra, **ranged) == expected["typeddict"]
print("forkserver")
for method in ("spawn", "fork"):  # as on macOS and Windows; and with no thread running
    parallel._context = lambda method=method: multiprocessing.get_context(method)
    if method == "fork":  # its workers start with pyarrow imported
        assert read_table(events, Event, **ranged).equals(expected["table"])
    assert text(events, Event, **ranged) == expected["text"]
    assert error_of(lambda: text(broken, Event, **ranged)) == expected["broken"]
    print(method)
"""


def test_every_kind_of_type_from_a_notebook_reads_on_many_processes(tmp_path: Path) -> None:
    # Standard input, as a notebook: no file to run again, and __main__.__file__ "<stdin>".
    assert run_user_code(TYPES + READS, "stdin", tmp_path).split() == [
        "forkserver",
        "spawn",
        "fork",
    ]


WITHOUT_CLOUDPICKLE = """
for copy in ("cloudpickle", "ray.cloudpickle", "pyspark.cloudpickle"):
    sys.modules[copy] = None  # as if none were installed

from msgpack_reader_py import Item, generate
from msgpack_reader_py._split.seek import count_records

events = write("events.msgpack", EVENTS)
print(error_of(lambda: count_records(events, Event, workers=2, blocksize=BLOCKSIZE)))
items = DIRECTORY / "items.msgpack"
generate(items, 2000)
assert count_records(items, Item, workers=2, blocksize=4096) == 2000  # by reference, as ever
"""


def test_without_cloudpickle_a_type_from_a_notebook_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    out = run_user_code(TYPES + WITHOUT_CLOUDPICKLE, "-c", tmp_path)
    assert out.splitlines() == [
        "UnshippableType: the record type Event cannot be sent to worker processes: Event is "
        "defined in __main__ (a notebook, python -c or standard input), which they cannot "
        "import; define it in a module, or install cloudpickle (then it is sent by value)"
    ]


SCRIPT = """
import multiprocessing

from msgpack_reader_py._split import parallel
from msgpack_reader_py._output.convert import convert


def text(path, record_type, **workers):
    out = DIRECTORY / "out.jsonl"
    convert(path, out, "jsonl", record_type=record_type, **workers)
    return out.read_bytes()


def main(methods) -> None:
    events = write("events.msgpack", EVENTS)
    late = write("late.msgpack", [Late(i) for i in range(300)])
    expected = text(events, Event), text(late, Late)
    for method in methods:
        parallel._context = lambda method=method: multiprocessing.get_context(method)
        assert text(events, Event, workers=2, blocksize=BLOCKSIZE) == expected[0]
        # Defined only when the script is run, not when a worker runs it again: it can go
        # by value only.
        try:
            same = text(late, Late, workers=2, blocksize=BLOCKSIZE) == expected[1]
        except Exception as exc:
            print(f"{method}: {type(exc).__name__}: {exc}")
        else:
            print(f"{method}: {'the same' if same else 'not the same'}")


if __name__ == "__main__":

    @dataclasses.dataclass
    class Late:
        id: int

    if sys.argv[2:] == ["without cloudpickle"]:
        for copy in ("cloudpickle", "ray.cloudpickle", "pyspark.cloudpickle"):
            sys.modules[copy] = None  # as if none were installed
        main(["forkserver"])
    else:
        main(["forkserver", "spawn"])
"""


def test_types_from_a_script_read_on_many_processes(tmp_path: Path) -> None:
    out = run_user_code(TYPES + SCRIPT, "script", tmp_path)
    assert out.splitlines() == ["forkserver: the same", "spawn: the same"]
    script = tmp_path / "user_script.py"
    out = run_user_code(TYPES + SCRIPT, "script", tmp_path, "without cloudpickle")
    assert out.splitlines() == [
        "forkserver: UnshippableType: the record type Late cannot be made in this process "
        f"(Can't get attribute 'Late' on <module '__mp_main__' from '{script}'>): define what "
        "it needs in a module this process can import"
    ]
