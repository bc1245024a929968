"""``open_blobs("s3://…")``: the blob store on the storage seam, on SeaweedFS; a checkpoint handed over through it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.foundation.errors import BlobError, BlobNotFoundError
from handoff_files.storage import BucketStorage
from handoff_files.transfers.adopt import adopt_checkpoint
from handoff_files.transfers.blob_layout import sha256_hex
from handoff_files.transfers.blobs import open_blobs
from handoff_files.transfers.bucket_blobs import BucketBlobStore
from handoff_files.transfers.export import handoff_checkpoint


def test_put_get_exists_in_the_shared_layout(bucket_url: str) -> None:
    store = open_blobs(bucket_url)
    assert isinstance(store, BucketBlobStore)
    small, large = b"a small blob", os.urandom(8) * 20_000  # 160 KB: stored compressed
    ids = [store.put(small), store.put(large), store.put(small)]  # the same bytes twice: stored once
    assert ids == [sha256_hex(small), sha256_hex(large), sha256_hex(small)]
    assert (store.get(ids[0]), store.get(ids[1])) == (small, large)
    assert store.exists(ids[0])
    assert BucketStorage(bucket_url).list("") == sorted(
        [f"sha256/{ids[0][:2]}/{ids[0]}", f"sha256/{ids[1][:2]}/{ids[1]}.zz"]
    )
    missing = "0" * 64
    assert not store.exists(missing)
    with pytest.raises(BlobNotFoundError):
        store.get(missing)
    with pytest.raises(BlobError, match="64 lowercase hex"):
        store.get("../../etc/passwd")


def test_an_oversized_blob_is_refused_before_it_is_read(bucket_url: str) -> None:
    big = os.urandom(4096)
    blob_id = BucketBlobStore(bucket_url).put(big)
    with pytest.raises(BlobError, match="refused before downloading"):
        BucketBlobStore(bucket_url, max_bytes=1024).get(blob_id)


def test_an_endpoint_set_only_for_fsspec_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("FSSPEC_S3_ENDPOINT_URL", "http://127.0.0.1:9000")
    with pytest.raises(BlobError, match="set AWS_ENDPOINT_URL to the same endpoint"):
        open_blobs("s3://bucket/blobs")


def test_a_checkpoint_handed_over_through_a_bucket_adopts_verified(bucket_url: str, tmp_path: Path) -> None:
    source = HandoffStore(f"{tmp_path}/alpha")
    source.save({"narrative": "ported the parser", "state": {"data": {"step": 3}}})
    descriptor = handoff_checkpoint(source, blobs=open_blobs(bucket_url))
    result = adopt_checkpoint(descriptor, f"{tmp_path}/beta", blobs=open_blobs(bucket_url))
    adopted = HandoffStore(f"{tmp_path}/beta").restore().handoff
    assert adopted.narrative == "ported the parser"
    assert result.blob_id == descriptor.blob_id
