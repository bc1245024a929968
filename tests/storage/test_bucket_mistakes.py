"""A newcomer's mistakes with a bucket thread, each told in one line, none turned into a local folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from handoff_files import HandoffInbox, HandoffStore, LocalBlobStore
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    InvalidNameError,
    StorageUnavailableError,
)
from handoff_files.mcp_server.targets import Targets
from handoff_files.thread.anchor import thread_name
from handoff_files.thread.objects import ObjectThread


def _saver(root: str) -> object:
    saver = pytest.importorskip("handoff_files.langgraph").HandoffSaver
    return saver(root)


@pytest.mark.parametrize(
    "make",
    [
        lambda: HandoffInbox("s3:/bucket/inbox").request_handoff("alpha", "beta", "x"),  # a typo: never a folder
        lambda: HandoffStore("s3:/bucket/thread").save({"narrative": "x"}),  # one slash: a typo, not a folder
        lambda: HandoffStore("s3:bucket/thread").save({"narrative": "x"}),
        lambda: HandoffStore(Path("s3://bucket/thread")).save({"narrative": "x"}),  # a Path folds the //
        lambda: LocalBlobStore("s3://bucket/blobs").put(b"x"),
        lambda: Targets.of(thread=None, root="s3:/bucket/agents"),  # handoff mcp --root, a typo
        lambda: _saver("s3:/bucket/graphs"),  # a typo: never a folder
    ],
    ids=["inbox-one-slash", "one-slash", "no-slash", "as-a-path", "blob-store", "mcp-root", "langgraph-saver"],
)
def test_a_url_where_a_folder_is_taken_is_refused_never_made_a_folder(
    make: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidNameError, match="URL"):
        make()  # type: ignore[operator]
    assert list(tmp_path.iterdir()) == []


def test_settings_that_cannot_work_say_what_to_change_and_are_not_unavailability(
    aws_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(HandoffError, match="no such bucket") as missing:
        HandoffStore("s3://no-such-bucket-here/thread").restore()
    assert not isinstance(missing.value, StorageUnavailableError)  # a retry would never mend it
    monkeypatch.setenv("AWS_ALLOW_HTTP", "")
    with pytest.raises(HandoffError, match="AWS_ALLOW_HTTP=true"):
        HandoffStore("s3://no-such-bucket-here/thread").restore()
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_env.removeprefix("http://"))
    with pytest.raises(HandoffError, match="AWS_ENDPOINT_URL must be a URL"):
        HandoffStore("s3://no-such-bucket-here/thread")


def test_history_of_a_mistyped_url_is_an_error_as_a_missing_folder_is(bucket_url: str) -> None:
    with pytest.raises(HandoffNotFoundError, match="no thread under this URL"):
        HandoffStore(bucket_url + "-typo").history()


def test_save_after_says_what_is_wrong(bucket_url: str) -> None:
    thread = ObjectThread(bucket_url, thread_id="t1")
    thread.save({"narrative": "one"})
    with pytest.raises(HandoffValidationError, match="no generation 5 here to save after"):
        thread.save({"narrative": "two"}, after=5)
    with pytest.raises(HandoffValidationError, match="after must be a generation number"):
        thread.save({"narrative": "two"}, after=-1)


def test_one_url_on_two_stores_is_two_threads_to_the_pin_and_the_anchor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1111")
    first = thread_name("s3://bucket/thread")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2222")
    assert thread_name("s3://bucket/thread") != first
    assert first == "s3://bucket/thread at http://127.0.0.1:1111"


def test_a_thread_id_made_from_the_urls_last_part_is_said(bucket_url: str) -> None:
    receipt = HandoffStore(bucket_url.rsplit("/", 1)[0] + "/_lead").save({"narrative": "one"})
    assert any("'_lead' is not a valid id, so the thread id was made from it: 'lead'" in p for p in receipt.problems)
    plain = HandoffStore(bucket_url).save({"narrative": "one"})
    assert plain.problems == ()


def test_one_credential_of_two_is_named_in_one_line(aws_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    with pytest.raises(HandoffError, match="AWS_ACCESS_KEY_ID is not: set both, or neither"):
        HandoffStore("s3://bucket/thread")


@pytest.mark.parametrize("typo", ["s3:/bucket/thread", "s3:bucket/thread"])
def test_show_and_watch_name_a_mistyped_url(typo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from handoff_files import watch
    from handoff_files.thread.locate import open_handoff

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidNameError, match="mistyped URL"):
        open_handoff(typo)
    with pytest.raises(InvalidNameError, match="mistyped URL"):
        watch(typo, on_change=lambda _: None)


@pytest.mark.parametrize(
    "make",
    [
        lambda url: HandoffInbox(url).list_handoffs(),
        lambda url: HandoffStore(url).restore(),
    ],
    ids=["inbox", "store"],
)
def test_an_upper_case_scheme_is_told_to_be_written_in_lower_case(make: Any, tmp_path: Path) -> None:
    with pytest.raises(HandoffError, match="write the scheme in lower case") as caught:
        make("S3://bucket/thread")
    assert caught.value.path == "S3://…"
    assert list(tmp_path.iterdir()) == []


def test_a_store_that_does_not_answer_is_said_in_words_and_is_unavailability(
    aws_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")  # nothing listens on port 1
    with pytest.raises(StorageUnavailableError) as caught:
        HandoffInbox("s3://bucket/inbox").list_handoffs()
    assert caught.value.reason == (
        "cannot list it: no answer from http://127.0.0.1:1 (is the store running, and the endpoint right?)"
    )
