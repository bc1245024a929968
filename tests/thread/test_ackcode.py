"""Acknowledgement codes: tied to one generation and the key, absent from the thread's files, checked on acknowledge."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handoff_files import HandoffStore, HandoffValidationError, NoHandoffError, WrongCodeError
from handoff_files.foundation.secret import KEY_ENV
from handoff_files.thread.ackcode import code_for, normalized
from handoff_files.thread.journal import Journal
from tests.writer_child import content


def _thread(thread_dir: Path, saves: int = 1) -> HandoffStore:
    store = HandoffStore(thread_dir)
    for step in range(1, saves + 1):
        store.save(content("w", step, 0))
    return store


def test_a_code_is_short_stable_and_differs_per_generation(thread_dir: Path) -> None:
    store = _thread(thread_dir)
    first = code_for(store.restore().handoff)
    assert len(first) == 9
    assert first[4] == "-"
    assert code_for(store.restore().handoff) == first
    store.save(content("w", 2, 0))
    assert code_for(store.restore().handoff) != first


def test_a_code_depends_on_the_key(thread_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handoff = _thread(thread_dir).restore().handoff
    before = code_for(handoff)
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "another.key"))
    assert code_for(handoff) != before


def test_the_code_appears_in_none_of_the_threads_files(thread_dir: Path) -> None:
    store = _thread(thread_dir, saves=2)
    code = code_for(store.restore().handoff)
    store.acknowledge(code=code)
    for folder, _, names in os.walk(thread_dir):
        for name in names:
            data = (Path(folder) / name).read_bytes().upper()
            assert normalized(code).encode() not in data.replace(b"-", b"")
            assert code.encode() not in data


def test_the_right_code_in_any_spelling_is_journaled_as_acknowledged(thread_dir: Path) -> None:
    store = _thread(thread_dir)
    code = code_for(store.restore().handoff)
    ack = store.acknowledge(code=f" {code.lower()} ")
    assert (ack.generation, ack.with_code) == (1, True)
    last, _ = Journal(thread_dir).last("resumed")
    assert last is not None
    assert last.extra["code"] == "right"
    assert "acknowledged with the briefing's code" in last.summary


def test_no_code_is_accepted_but_journaled_as_missing(thread_dir: Path) -> None:
    store = _thread(thread_dir)
    ack = store.acknowledge(store.restore())
    assert ack.with_code is False
    last, _ = Journal(thread_dir).last("resumed")
    assert last is not None
    assert last.extra["code"] == "missing"


@pytest.mark.parametrize(("given", "why"), [("AAAA-BBBB", "wrong"), ("", "missing"), (" - ", "missing")])
def test_a_wrong_or_empty_code_is_refused_and_journaled(thread_dir: Path, given: str, why: str) -> None:
    store = _thread(thread_dir)
    with pytest.raises(WrongCodeError, match="not the acknowledgement code of generation 1") as caught:
        store.acknowledge(code=given)
    assert caught.value.path == str(thread_dir)
    refused, _ = Journal(thread_dir).last("unacknowledged", "resumed")
    assert refused is not None
    assert (refused.event, refused.extra["code"], refused.generation) == ("unacknowledged", why, 1)


def test_an_older_generations_code_is_refused_once_the_thread_moved_on(thread_dir: Path) -> None:
    store = _thread(thread_dir)
    old = code_for(store.restore().handoff)
    store.save(content("w", 2, 0))
    with pytest.raises(WrongCodeError, match="generation 2"):
        store.acknowledge(code=old)
    assert store.acknowledge(code=code_for(store.restore().handoff)).generation == 2


def test_acknowledging_a_mistyped_thread_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(NoHandoffError):
        HandoffStore(tmp_path / "not-there").acknowledge(code="AAAA-BBBB")
    assert not (tmp_path / "not-there").exists()


@pytest.mark.parametrize(
    ("event", "fields", "what"),
    [
        ("saved", {}, "an event the library writes itself"),
        ("resumed", {}, "an event the library writes itself"),
        ("hook", {"at": "1999-01-01T00:00:00Z"}, "cannot set at"),
        ("hook", {"document": {}, "generation": 3}, "cannot set document, generation"),
    ],
)
def test_a_note_never_poses_as_the_librarys_own_lines(
    thread_dir: Path, event: str, fields: dict[str, object], what: str
) -> None:
    store = _thread(thread_dir)
    before = (thread_dir / "journal.jsonl").read_bytes()
    with pytest.raises(HandoffValidationError, match=what):
        store.note(event, "a note", **fields)
    assert (thread_dir / "journal.jsonl").read_bytes() == before
    store.note("hook", "a session started", agent="claude-code")
    assert Journal(thread_dir).last("hook")[0] is not None
