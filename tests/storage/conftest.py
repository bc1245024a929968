"""The storage seam's tests run on a folder and on a bucket of the real object store (tests/objectstore.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handoff_files.storage import BucketStorage, LocalStorage, Storage


@pytest.fixture(params=["local", "bucket"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """The same tests on a folder and on a bucket of the real object store."""
    if request.param == "local":
        return LocalStorage(tmp_path / "store")
    return BucketStorage(request.getfixturevalue("bucket_url"))


@pytest.fixture
def target(storage: Storage) -> str:
    """What :func:`~handoff_files.storage.open_storage` is given for *storage* (a path or a URL)."""
    return storage.where


def child_env() -> dict[str, str]:
    """This process's environment (the AWS variables the fixtures set), for a child that opens the same store."""
    return dict(os.environ)
