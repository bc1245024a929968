"""The local blob store's group-shared mode: what it creates is 2770/0660 whatever the umask; default private."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoff_files.foundation.errors import BlobError
from handoff_files.transfers.blob_layout import blob_path
from handoff_files.transfers.blobs import LocalBlobStore, open_blobs


@pytest.fixture
def strict_umask() -> Iterator[None]:
    # a 077 umask would narrow 0660 to 0600: shared mode must set its modes explicitly
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _stored(root: Path, blob_id: str) -> Path:
    [found] = root.glob(f"{blob_path(blob_id)}*")
    return found


@pytest.mark.usefixtures("strict_umask")
@pytest.mark.parametrize("size", [pytest.param(10, id="plain"), pytest.param(1 << 20, id="compressed")])
def test_shared_store_creates_setgid_group_folders_and_group_blobs(tmp_path: Path, size: int) -> None:
    store = LocalBlobStore(tmp_path / "blobs", shared=True)
    blob_id = store.put(b"x" * size)
    blob = _stored(store.root, blob_id)
    assert _mode(blob) == 0o660
    folder = blob.parent
    while folder != tmp_path:
        assert _mode(folder) == 0o2770, folder
        folder = folder.parent
    assert store.get(blob_id) == b"x" * size


@pytest.mark.usefixtures("strict_umask")
def test_default_store_stays_private(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    blob = _stored(store.root, store.put(b"private"))
    assert _mode(blob) == 0o600
    assert _mode(blob.parent) == 0o700
    assert _mode(store.root) == 0o700


@pytest.mark.usefixtures("strict_umask")
def test_open_blobs_passes_shared_to_a_folder(tmp_path: Path) -> None:
    store = open_blobs(tmp_path / "blobs", shared=True)
    assert isinstance(store, LocalBlobStore)
    assert store.shared
    assert _mode(_stored(store.root, store.put(b"shared"))) == 0o660
    assert not LocalBlobStore(tmp_path / "other").shared


def test_shared_store_refuses_an_existing_private_folder_naming_the_chmod(tmp_path: Path) -> None:
    LocalBlobStore(tmp_path / "blobs").put(b"first")  # root, sha256/ and its fan-out folder: 0700
    store = LocalBlobStore(tmp_path / "blobs", shared=True)
    with pytest.raises(BlobError, match=r"chmod 2770 ") as caught:
        store.put(b"second")
    assert "narrower than a shared store needs" in caught.value.reason
    assert _mode(tmp_path / "blobs") == 0o700  # never widened silently


def test_shared_store_refuses_a_private_root_it_did_not_create(tmp_path: Path) -> None:
    (tmp_path / "blobs").mkdir(mode=0o700)
    with pytest.raises(BlobError, match=r"chmod 2770 .*blobs"):
        LocalBlobStore(tmp_path / "blobs", shared=True).put(b"data")
