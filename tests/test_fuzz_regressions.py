"""Replay every input in tests/corpus_fuzz/: inputs the fuzzer found (fuzz/README.md).

Each is read in every configuration of tests/test_fuzz.py, from every kind of source: only a
``ReaderError`` may escape, every record is well-formed, the outcome does not depend on the
source or the read size, and it agrees with an independent decode of the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_fuzz import (
    ITEM,
    ITEM_DEFAULT_LIMIT,
    ITEM_MAPPER,
    LOOSE,
    LOOSE_DEFAULT_LIMIT,
    SKIP_CONFIGS,
    Config,
    check,
)

CORPUS = Path(__file__).parent / "corpus_fuzz"
INPUTS = sorted(path for path in CORPUS.iterdir() if path.is_file())
CONFIGS = {
    "Item": ITEM,
    "Item, default limit": ITEM_DEFAULT_LIMIT,
    "mapper": ITEM_MAPPER,
    "Loose": LOOSE,
    "Loose, default limit": LOOSE_DEFAULT_LIMIT,
    **{f"skip {i}": config for i, config in enumerate(SKIP_CONFIGS)},
}


def test_the_corpus_is_there() -> None:
    assert len(INPUTS) >= 2


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
@pytest.mark.parametrize("path", INPUTS, ids=[path.name for path in INPUTS])
def test_fuzzer_input(path: Path, config: Config) -> None:
    check(path.read_bytes(), config)
