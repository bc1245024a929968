"""The watcher: real inotify observers, real files and real writer processes; every wait has a timeout."""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from watchdog.events import (
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from handoff_files import (
    HandoffError,
    HandoffNotFoundError,
    HandoffStore,
    HandoffValidationError,
    Restored,
)
from handoff_files.watchers.watcher import Watcher, watch

#: Generous: these waits end as soon as the condition holds, so only a broken watcher pays for it.
WAIT = 30.0

# a writer in another process: saves COUNT generations into DIR, each narrative "TEXT <n>."
SAVE_CHILD = """
import sys
from handoff_files import HandoffStore
directory, count, text, fmt = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
store = HandoffStore(directory, format=fmt or None)
for n in range(1, count + 1):
    store.save({"state": {}, "narrative": f"{text} {n}.", "decisions": [], "priorities": [], "warnings": []})
"""


def layers(narrative: str) -> dict[str, Any]:
    return {"state": {}, "narrative": narrative, "decisions": [], "priorities": [], "warnings": []}


class Recorder:
    """What a watcher handed its callbacks, on which threads, and whether two calls ever overlapped."""

    def __init__(self, *, fail_first: bool = False) -> None:
        self.changes: list[Restored] = []
        self.errors: list[HandoffError] = []
        self.threads: set[str] = set()
        self.overlapped = False
        self._active = 0
        self._fail_first = fail_first
        self._cond = threading.Condition()

    def _enter(self) -> None:
        with self._cond:
            self._active += 1
            self.overlapped |= self._active > 1
            self.threads.add(threading.current_thread().name)

    def _leave(self) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify_all()

    def on_change(self, restored: Restored) -> None:
        self._enter()
        try:
            with self._cond:
                self.changes.append(restored)
            if self._fail_first:
                self._fail_first = False
                msg = "a callback's own bug"
                raise RuntimeError(msg)
        finally:
            self._leave()

    def on_error(self, exc: HandoffError) -> None:
        self._enter()
        try:
            with self._cond:
                self.errors.append(exc)
        finally:
            self._leave()

    def wait(self, predicate: Callable[[Recorder], bool], timeout: float = WAIT) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self), timeout)

    def narratives(self) -> list[str]:
        with self._cond:
            return [change.handoff.narrative for change in self.changes]


@pytest.fixture
def recorder() -> Recorder:
    """Collects the callbacks of the watcher under test."""
    return Recorder()


@pytest.fixture
def watchers() -> Iterator[list[Watcher]]:
    """Watchers a test starts; stopped at the end even when the test fails, so no thread outlives it."""
    started: list[Watcher] = []
    yield started
    for watcher in started:
        watcher.stop()


def start(watchers: list[Watcher], thread_dir: Path, recorder: Recorder, **options: float) -> Watcher:
    watcher = watch(thread_dir, on_change=recorder.on_change, on_error=recorder.on_error, **options)
    watchers.append(watcher)
    return watcher


class SaveInChild(Protocol):
    def __call__(self, thread_dir: Path, count: int, text: str, *, fmt: str = "") -> None: ...


@pytest.fixture
def save_in_child(python: str, subprocess_env: dict[str, str]) -> SaveInChild:
    """Saves generations from another process, as an agent beside the watcher would."""

    def save(thread_dir: Path, count: int, text: str, *, fmt: str = "") -> None:
        command = [python, "-c", SAVE_CHILD, str(thread_dir), str(count), text, fmt]
        subprocess.run(command, env=subprocess_env, check=True, timeout=120, capture_output=True)

    return save


def sealed_at(primary: Path) -> float:
    """When the primary's generation was sealed (restore passes over an edit to the sealed copy)."""
    return HandoffStore(primary.parent).restore().handoff.created_at.timestamp()


def edit(primary: Path, old: str, new: str, *, how: str) -> None:
    """Edit the primary as a person's editor would, either saving by rename or rewriting in place."""
    text = primary.read_text(encoding="utf-8")
    assert old in text
    text = text.replace(old, new)
    # a person edits later than the save: the loader tells an edit from corruption by the file being
    # rewritten more than EDIT_SLACK_SECONDS after it was sealed, so date the edit 10 s on instead of waiting
    later = sealed_at(primary) + 10
    if how == "rename":
        temp = primary.with_name(".goutputstream-X1Y2Z3")  # gedit's temp name: write beside, then rename over
        temp.write_text(text, encoding="utf-8")
        os.utime(temp, (later, later))
        os.replace(temp, primary)
    else:
        with primary.open("r+", encoding="utf-8") as file:
            file.write(text)
            file.truncate()
        os.utime(primary, (later, later))


def test_the_initial_restore_is_current_on_return_and_delivered_first_on_the_watchers_thread(
    thread_dir: Path, recorder: Recorder, watchers: list[Watcher]
) -> None:
    HandoffStore(thread_dir).save(layers("First."))
    HandoffStore(thread_dir).save(layers("Second."))
    watcher = start(watchers, thread_dir, recorder)
    current = watcher.current
    assert current is not None
    assert (current.generation, current.handoff.narrative, current.source) == (2, "Second.", "primary")
    assert recorder.wait(lambda r: len(r.changes) == 1)
    assert recorder.changes[0] is current
    assert recorder.threads == {f"handoff-watch {thread_dir.name}"}


def test_an_external_process_save_reaches_the_callback(
    thread_dir: Path, recorder: Recorder, watchers: list[Watcher], save_in_child: SaveInChild
) -> None:
    HandoffStore(thread_dir).save(layers("Started here."))
    watcher = start(watchers, thread_dir, recorder)
    save_in_child(thread_dir, 1, "Saved by another process")
    delivered = watcher.wait_for(2, WAIT)
    assert delivered is not None
    assert (delivered.generation, delivered.handoff.narrative) == (2, "Saved by another process 1.")
    assert (delivered.source, delivered.edited, delivered.path) == ("primary", False, thread_dir / "handoff.json")
    assert recorder.wait(lambda r: len(r.changes) == 2)
    assert [change.generation for change in recorder.changes] == [1, 2]
    assert recorder.errors == []


def test_a_thread_with_nothing_yet_starts_empty_and_gets_its_first_save(
    thread_dir: Path, recorder: Recorder, watchers: list[Watcher], save_in_child: SaveInChild
) -> None:
    HandoffStore(thread_dir, format="yaml").init()
    watcher = start(watchers, thread_dir, recorder)
    assert watcher.current is None
    # a YAML first save: the watcher opened the thread as JSON (nothing told it otherwise) and must follow
    save_in_child(thread_dir, 1, "First", fmt="yaml")
    delivered = watcher.wait_for(1, WAIT)
    assert delivered is not None
    assert (delivered.handoff.narrative, delivered.path.name) == ("First 1.", "handoff.yaml")
    assert recorder.errors == []  # no primary yet is not a failure


@pytest.mark.parametrize("how", [pytest.param("rename", id="save-by-rename"), pytest.param("in-place", id="in-place")])
def test_a_human_yaml_edit_reaches_the_callback_as_edited_once_per_distinct_edit(
    thread_dir: Path, recorder: Recorder, watchers: list[Watcher], how: str
) -> None:
    store = HandoffStore(thread_dir, format="yaml")
    store.save(layers("Written by the agent."))
    # rescans re-read the same edit again and again: it must still be delivered once
    watcher = start(watchers, thread_dir, recorder, rescan=0.05)

    edit(store.primary, "Written by the agent.", "Corrected by a person.", how=how)
    assert recorder.wait(lambda r: "Corrected by a person." in r.narratives())
    edited = recorder.changes[-1]
    assert (edited.edited, edited.generation, edited.source, edited.path) == (True, 1, "primary", store.primary)
    assert "seal" in edited.problems[0]
    assert watcher.current is edited

    # the same content written again is not a new edit; a different one is
    edit(store.primary, "Corrected by a person.", "Corrected by a person.", how=how)
    edit(store.primary, "Corrected by a person.", "Corrected twice.", how=how)
    assert recorder.wait(lambda r: "Corrected twice." in r.narratives())
    assert recorder.narratives() == ["Written by the agent.", "Corrected by a person.", "Corrected twice."]
    if how == "rename":
        # an in-place rewrite can be read half-written before its mtime is set (a person's editor has
        # the same window); a rename never shows a partial file
        assert recorder.errors == []


#: How each damage is reported: an invalid edit, a torn file, a deleted primary.
DAMAGE: dict[str, type[HandoffError]] = {
    "invalid-edit": HandoffValidationError,
    "truncated": HandoffError,
    "deleted": HandoffNotFoundError,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_bad_primary_goes_to_on_error_once_and_never_replaces_the_good_context(
    thread_dir: Path, recorder: Recorder, watchers: list[Watcher], save_in_child: SaveInChild, damage: str
) -> None:
    store = HandoffStore(thread_dir, format="yaml")
    store.save(layers("The good context."))
    watcher = start(watchers, thread_dir, recorder, rescan=0.05)  # rescans re-read the damage again and again
    if damage == "invalid-edit":
        edit(store.primary, "energy_level: 1.0", "energy_level: lots", how="rename")
    elif damage == "truncated":
        data = store.primary.read_bytes()
        with store.primary.open("r+b") as file:
            file.truncate(len(data) // 2)
    else:
        store.primary.unlink()
    assert recorder.wait(lambda r: len(r.errors) == 1)
    error = recorder.errors[0]
    assert isinstance(error, DAMAGE[damage])
    assert error.path == os.fspath(store.primary)
    current = watcher.current
    assert current is not None
    assert (current.generation, current.handoff.narrative, current.edited) == (1, "The good context.", False)

    # the watch goes on: the next good save arrives, and the damage was reported only once meanwhile
    save_in_child(thread_dir, 1, "Saved after the damage")
    delivered = watcher.wait_for(2, WAIT)
    assert delivered is not None
    assert delivered.handoff.narrative == "Saved after the damage 1."
    assert len(recorder.errors) == 1
    assert [change.generation for change in recorder.changes] == [1, 2]


def test_an_older_generation_copied_over_the_primary_is_refused(
    thread_dir: Path, recorder: Recorder, watchers: list[Watcher]
) -> None:
    store = HandoffStore(thread_dir)
    store.save(layers("Old."))
    store.save(layers("New."))
    watcher = start(watchers, thread_dir, recorder)
    old = thread_dir / "restored-by-hand.json"
    shutil.copyfile(store.history_dir / "00000001.json", old)
    os.replace(old, store.primary)
    assert recorder.wait(lambda r: len(r.errors) == 1)
    assert "generation 2 was already delivered" in recorder.errors[0].reason
    current = watcher.current
    assert current is not None
    assert current.generation == 2
    assert [change.generation for change in recorder.changes] == [2]


@pytest.mark.slow  # make slow: 1,000 saves; the watcher's other cross-process tests stay
def test_a_burst_of_1000_saves_by_another_process_always_delivers_the_final_generation(
    thread_dir: Path, recorder: Recorder, watchers: list[Watcher], save_in_child: SaveInChild
) -> None:
    HandoffStore(thread_dir).save(layers("Before the burst."))
    watcher = start(watchers, thread_dir, recorder)
    save_in_child(thread_dir, 1000, "Burst")
    final = watcher.wait_for(1001, WAIT)
    assert final is not None
    assert (final.generation, final.handoff.narrative) == (1001, "Burst 1000.")
    assert recorder.wait(lambda r: r.changes[-1].generation == 1001)
    generations = [change.generation for change in recorder.changes]
    assert all(a < b for a, b in itertools.pairwise(generations)), generations
    assert len(generations) < 1001  # debounced: not one read per save
    assert not recorder.overlapped
    assert recorder.errors == []


def test_the_rescan_timer_catches_a_change_no_event_announces(
    tmp_path: Path, thread_dir: Path, recorder: Recorder, watchers: list[Watcher]
) -> None:
    """A write through a hard link in another directory raises no event in the watched one.

    inotify reports a directory's children only when they are reached through that directory,
    so this change is as invisible as one lost to a queue overflow or made from another machine.
    """
    store = HandoffStore(thread_dir)
    store.save(layers("First."))
    # generation 2, sealed in a copy of the thread so it chains from generation 1
    copy = tmp_path / "copy" / thread_dir.name
    shutil.copytree(thread_dir, copy)
    HandoffStore(copy).save(layers("Written where no event sees it."))
    second = (copy / "handoff.json").read_bytes()
    alias = tmp_path / "elsewhere" / "alias.json"
    alias.parent.mkdir()
    os.link(store.primary, alias)

    seen: list[str] = []
    changed = threading.Condition()

    class Names(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            with changed:
                seen.extend(Path(os.fsdecode(p)).name for p in (event.src_path, event.dest_path) if p)
                changed.notify_all()

    observer = Observer()
    # the changes the watcher listens for (opens and reads are no change, and the watchers' own reads raise them)
    hints = [FileMovedEvent, FileCreatedEvent, FileModifiedEvent, FileAttribEvent, FileClosedEvent, FileDeletedEvent]
    observer.schedule(Names(), os.fspath(thread_dir), event_filter=hints)
    observer.start()
    try:
        blind = start(watchers, thread_dir, Recorder(), rescan=600)  # events only, in effect
        rescanning = start(watchers, thread_dir, recorder, rescan=0.2)
        with alias.open("r+b") as file:
            file.write(second)
            file.truncate()
        delivered = rescanning.wait_for(2, WAIT)
        assert delivered is not None
        assert delivered.handoff.narrative == "Written where no event sees it."
        # events arrive in order: once a later sentinel is seen, any event about the primary would have been too
        (thread_dir / "sentinel").touch()
        with changed:
            assert changed.wait_for(lambda: "sentinel" in seen, WAIT)
        assert "handoff.json" not in seen
        blind_current = blind.current
        assert blind_current is not None
        assert blind_current.generation == 1
    finally:
        observer.stop()
        observer.join()


def test_stop_is_idempotent_prompt_and_ends_every_thread(thread_dir: Path, recorder: Recorder) -> None:
    HandoffStore(thread_dir).save(layers("Context."))
    before = set(threading.enumerate())
    with watch(thread_dir, on_change=recorder.on_change) as watcher:
        assert recorder.wait(lambda r: len(r.changes) == 1)
        assert set(threading.enumerate()) > before
        began = time.monotonic()
    assert time.monotonic() - began < 1.0  # leaving the block stopped it: the threads are joined
    watcher.stop()
    watcher.stop()
    assert set(threading.enumerate()) <= before
    assert watcher.wait_for(2, WAIT) is None  # stopped: no waiting out the timeout
    assert "stopped" in repr(watcher)


def test_stop_from_inside_a_callback_returns_at_once_and_ends_the_watch(thread_dir: Path) -> None:
    HandoffStore(thread_dir).save(layers("Context."))
    stopped = threading.Event()
    holder: list[Watcher] = []
    ready = threading.Event()

    def on_change(restored: Restored) -> None:
        ready.wait(WAIT)  # the watcher is handed over once watch() returns
        holder[0].stop()
        stopped.set()

    before = set(threading.enumerate())
    holder.append(watch(thread_dir, on_change=on_change))
    ready.set()
    assert stopped.wait(WAIT)
    holder[0].stop()  # from outside too: joins the threads the first call could not
    assert set(threading.enumerate()) <= before


def test_a_callback_that_raises_is_logged_and_the_watch_goes_on(
    thread_dir: Path, watchers: list[Watcher], caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder(fail_first=True)
    store = HandoffStore(thread_dir)
    store.save(layers("First."))
    with caplog.at_level(logging.ERROR, logger="handoff_files.watchers.watcher"):
        watcher = start(watchers, thread_dir, recorder)
        store.save(layers("Second."))
        assert watcher.wait_for(2, WAIT) is not None
        assert recorder.wait(lambda r: len(r.changes) == 2)
    assert any("raised; still watching" in record.getMessage() for record in caplog.records)


def test_watch_refuses_a_missing_directory_and_bad_timings(tmp_path: Path, thread_dir: Path) -> None:
    with pytest.raises(HandoffNotFoundError, match="no such thread directory"):
        watch(thread_dir, on_change=print)
    HandoffStore(thread_dir).init()
    with pytest.raises(HandoffValidationError, match="debounce"):
        watch(thread_dir, on_change=print, debounce=-1)
    with pytest.raises(HandoffValidationError, match="rescan"):
        watch(thread_dir, on_change=print, rescan=float("nan"))


def test_importing_the_package_does_not_import_watchdog(python: str, subprocess_env: dict[str, str]) -> None:
    code = "import sys, handoff_files; assert 'watchdog' not in sys.modules, 'watchdog imported'"
    subprocess.run([python, "-c", code], env=subprocess_env, check=True, timeout=60)


def test_on_a_pinned_folder_the_watcher_hands_on_only_trusted_generations(
    thread_dir: Path, recorder: Recorder, watchers: list[Watcher], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unsigned save, a forged signature and a person's edit: none replaces the signed context."""
    from handoff_files.signing.keys import allowed_signers_line, create_key

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HANDOFF_FILES_KEY", str(tmp_path / "state" / "ack.key"))
    key = create_key(tmp_path / "alice")
    trust = tmp_path / "config" / "handoff-files" / "allowed_signers"
    trust.parent.mkdir(parents=True)
    trust.write_text(allowed_signers_line(key, "alice@example.com") + "\n", encoding="utf-8")
    HandoffStore(thread_dir, signing_key=key).save(layers("Alice's."))  # signed by a trusted key: pinned
    watcher = start(watchers, thread_dir, recorder, rescan=0.05)
    HandoffStore(thread_dir, signing_key=False).save(layers("Slipped in."))
    assert recorder.wait(lambda r: len(r.changes) >= 1 and r.narratives()[-1] == "Alice's.", WAIT)
    time.sleep(0.3)  # several rescans: the unsigned generation is never handed on
    assert "Slipped in." not in recorder.narratives()
    current = watcher.current
    assert current is not None
    assert current.handoff.narrative == "Alice's."
    assert current.signature is not None
    assert current.signature.principal == "alice@example.com"
    store = HandoffStore(thread_dir)
    edit(store.primary, "Slipped in.", "Edited by someone.", how="rename")
    assert recorder.wait(lambda r: any("not handed on: the folder is pinned" in e.reason for e in r.errors), WAIT)
    assert store.restore(accept_edit=True).handoff.narrative == "Alice's."  # never sealed (and signed) unasked
    assert len(list((thread_dir / "history").iterdir())) == 2
