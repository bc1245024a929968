"""watch_directory: a hint per file event in one folder (filtered by name) and a rescan timer; real inotify."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import pytest

from handoff_files import HandoffNotFoundError, HandoffValidationError
from handoff_files.foundation.atomic import write_durable
from handoff_files.watchers.directory import DirectoryWatch, watch_directory

#: Generous: the waits end as soon as the condition holds, so only a broken watch pays for it.
WAIT = 10.0


class Hints:
    """Counts hints, and the names the filter was asked about, so a test can wait for either."""

    def __init__(self) -> None:
        self.count = 0
        self.names: list[str] = []
        self._cond = threading.Condition()

    def __call__(self) -> None:
        with self._cond:
            self.count += 1
            self._cond.notify_all()

    def wanted(self, name: str) -> bool:
        with self._cond:
            self.names.append(name)
            self._cond.notify_all()
        return name.endswith(".json")

    def wait(self, done: object, timeout: float = WAIT) -> bool:
        with self._cond:
            return self._cond.wait_for(done, timeout)  # type: ignore[arg-type]


def test_a_wanted_file_written_atomically_gives_a_hint_and_an_unwanted_one_does_not(tmp_path: Path) -> None:
    hints = Hints()
    with watch_directory(tmp_path, hints, rescan=60, wanted=hints.wanted):
        (tmp_path / "notes.txt").write_text("a person's file")
        assert hints.wait(lambda: "notes.txt" in hints.names)
        assert hints.count == 0
        write_durable(tmp_path / "request.json", b"{}")  # temp file, then a rename onto the wanted name
        assert hints.wait(lambda: hints.count >= 1)


def test_without_a_filter_every_file_counts(tmp_path: Path) -> None:
    hints = Hints()
    with watch_directory(tmp_path, hints, rescan=60):
        (tmp_path / "anything").write_text("x")
        assert hints.wait(lambda: hints.count >= 1)


def test_the_rescan_timer_hints_with_no_event(tmp_path: Path) -> None:
    hints = Hints()
    started = time.monotonic()
    with watch_directory(tmp_path, hints, rescan=0.05):
        assert hints.wait(lambda: hints.count >= 3)
    assert time.monotonic() - started >= 0.15


def test_no_hint_comes_after_stop_returns(tmp_path: Path) -> None:
    hints = Hints()
    handle = watch_directory(tmp_path, hints, rescan=0.01)
    assert hints.wait(lambda: hints.count >= 1)
    handle.stop()
    handle.stop()  # idempotent
    after = hints.count
    (tmp_path / "late.json").write_text("{}")
    time.sleep(0.1)
    assert hints.count == after
    assert "stopped" in repr(handle)


def test_stop_from_inside_on_hint_returns_and_the_watch_ends(tmp_path: Path) -> None:
    stopped = threading.Event()
    handles: list[DirectoryWatch] = []

    def on_hint() -> None:
        if handles:
            handles[0].stop()
            stopped.set()

    handle = watch_directory(tmp_path, on_hint, rescan=0.01)
    handles.append(handle)
    assert stopped.wait(WAIT)
    handle.stop()  # joins the threads the inner stop could not join from within


def test_an_on_hint_that_raises_is_logged_and_the_watch_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []

    def on_hint() -> None:
        calls.append(1)
        if len(calls) == 1:
            msg = "the caller's bug"
            raise RuntimeError(msg)

    with (
        caplog.at_level(logging.ERROR, logger="handoff_files.watchers.directory"),
        watch_directory(tmp_path, on_hint, rescan=0.02),
    ):
        deadline = time.monotonic() + WAIT
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(calls) >= 3
    assert "the caller's bug" in caplog.text


@pytest.mark.parametrize(
    "rescan", [pytest.param(0, id="zero"), pytest.param(-1, id="negative"), pytest.param(float("nan"), id="nan")]
)
def test_a_rescan_that_is_not_positive_is_refused(tmp_path: Path, rescan: float) -> None:
    with pytest.raises(HandoffValidationError, match="rescan"):
        watch_directory(tmp_path, lambda: None, rescan=rescan)


def test_a_missing_directory_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(HandoffNotFoundError) as caught:
        watch_directory(tmp_path / "absent", lambda: None)
    assert caught.value.path == os.fspath(tmp_path / "absent")
