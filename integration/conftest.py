"""Fixtures of the integration tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import distributed
import pytest


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the unprivileged user can enter (tmp_path, mode 700 under root, is not)."""
    path = Path(tempfile.mkdtemp(prefix="msgpack-reader-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for entry in path.iterdir():
            if entry.is_dir():
                entry.chmod(0o755)  # a locked directory, so that it can be removed
        shutil.rmtree(path)


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    """A client of a two-process local cluster, started once for a module."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            # The scheduler still serves HTTP when its dashboard is off: any free port, not
            # 8787, which another test process's cluster may hold.
            scheduler_kwargs={"dashboard_address": ":0"},
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client
    assert client.status == "closed"
    assert cluster.status.name == "closed"
