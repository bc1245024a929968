"""Hostile input at the seam: links planted in a folder, URLs carrying credentials, a store that does not answer.

A folder or a bucket is hostile until verified: a link inside the store's root is never followed,
a secret never appears in an error, and a missing extra is one line saying what to install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError
from handoff_files.storage import BucketStorage, LocalStorage, open_storage
from handoff_files.storage.bucket import parse_url


def test_a_link_planted_as_a_folder_of_the_store_is_never_followed(tmp_path: Path) -> None:
    store = LocalStorage(tmp_path / "store")
    store.create("history/00000001.json", b"ours")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "history").mkdir(parents=True)
    (elsewhere / "history" / "00000001.json").write_bytes(b"planted")
    (tmp_path / "store" / "history").rename(tmp_path / "moved")
    (tmp_path / "store" / "history").symlink_to(elsewhere / "history")
    with pytest.raises(HandoffError, match="never followed"):
        store.read("history/00000001.json", limit=64)
    with pytest.raises(HandoffError, match="never followed"):
        store.create("history/00000002.json", b"x")
    assert not (elsewhere / "history" / "00000002.json").exists()
    with pytest.raises(HandoffError, match="never followed"):
        store.list("history/")  # refused, not listed through
    assert store.list() == []  # from the root: the link is passed over


def test_a_link_or_a_fifo_in_an_objects_place_is_refused(tmp_path: Path) -> None:
    store = LocalStorage(tmp_path / "store")
    store.create("a.json", b"x")
    secret = tmp_path / "secret"
    secret.write_bytes(b"not yours")
    (tmp_path / "store" / "link.json").symlink_to(secret)
    os.mkfifo(tmp_path / "store" / "fifo.json")
    with pytest.raises(HandoffError, match="never followed"):
        store.read("link.json", limit=64)
    with pytest.raises(HandoffError, match="not a regular file"):
        store.read("fifo.json", limit=64)  # refused at once: O_NONBLOCK, never a hang
    assert store.list() == ["a.json"]  # only regular files are objects


def test_a_store_whose_folder_does_not_exist_reads_nothing_and_lists_nothing(tmp_path: Path) -> None:
    store = LocalStorage(tmp_path / "none")
    with pytest.raises(HandoffNotFoundError):
        store.read("a.json", limit=64)
    assert store.list() == []
    store.remove("a.json")  # nothing to remove: no error
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("s3://AKIAEXAMPLE:supersecret@bucket/p", "credentials never go in the URL"),
        ("s3://user@bucket/p", "credentials never go in the URL"),
        ("s3://UPPER/p", "not a bucket name"),
        ("s3://ab/p", "not a bucket name"),
        ("s3://bucket/../etc", "not a storage key"),
        ("gs://bucket/p", "not an s3:// URL"),
    ],
)
def test_a_url_that_is_not_a_bucket_prefix_is_refused_and_never_shows_a_secret(url: str, said: str) -> None:
    with pytest.raises(HandoffError, match=said) as caught:
        parse_url(url)
    assert "supersecret" not in str(caught.value)
    assert "AKIAEXAMPLE" not in str(caught.value)


def test_parse_url_gives_the_bucket_and_the_prefix() -> None:
    assert parse_url("s3://team-bucket/agents/importer-fix/") == ("team-bucket", "agents/importer-fix")
    assert parse_url("s3://team-bucket") == ("team-bucket", "")
    assert open_storage("s3://team-bucket/x").where == "s3://team-bucket/x"


def test_a_store_that_does_not_answer_fails_in_bounded_time_without_showing_the_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # the discard port: nothing listens
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "supersecret-value")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    store = BucketStorage("s3://team-bucket/t")
    with pytest.raises(HandoffError) as caught:
        store.read("handoff.json", limit=64)
    said = str(caught.value)
    assert said.startswith("s3://team-bucket/t/handoff.json: cannot read it:")
    assert "supersecret" not in said
    assert "AKIAEXAMPLE" not in said
    assert "\n" not in said


def test_without_the_s3_extra_a_bucket_is_one_line_saying_what_to_install() -> None:
    code = (
        "import sys; sys.modules['obstore'] = None\n"
        "from handoff_files.storage import open_storage\n"
        "from handoff_files.foundation.errors import HandoffError\n"
        "try:\n    open_storage('s3://team-bucket/t')\n"
        "except HandoffError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout == "s3://team-bucket/t: object storage needs the s3 extra: pip install 'handoff-files[s3]'\n"


def test_importing_the_package_never_imports_obstore() -> None:
    code = "import sys, handoff_files, handoff_files.storage; print('obstore' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("url", ["S3://bucket/p", "gs://bucket/p", "file:///tmp/x", "http://127.0.0.1:1/b"])
def test_a_url_of_another_scheme_is_refused_never_taken_for_a_folder(url: str, tmp_path: Path) -> None:
    os.chdir(tmp_path)
    with pytest.raises(HandoffError, match=r"only s3:// URLs name a store|write the scheme in lower case"):
        open_storage(url)
    assert list(tmp_path.iterdir()) == []


def test_text_given_as_data_is_refused_never_read_as_a_file_to_upload(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not to be uploaded")
    store = LocalStorage(tmp_path / "store")
    with pytest.raises(HandoffError, match="must be bytes, not str"):
        store.create("a.json", str(secret))  # type: ignore[arg-type]
    store.create("b.json", b"x")
    with pytest.raises(HandoffError, match="must be bytes, not str"):
        store.replace("b.json", str(secret), store.read("b.json", limit=8).etag)  # type: ignore[arg-type]
