"""restore() against a writer saving in a loop: never "rebuilt" while every generation is on disk."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.thread import recovery
from handoff_files.thread import scan as scanning
from handoff_files.thread.identity import Identity
from handoff_files.thread.mirror import Mirror, read_mirror
from handoff_files.thread.settings import ThreadSettings

_WRITER = """
import sys
from handoff_files import HandoffStore
store = HandoffStore(sys.argv[1])
for i in range(1_000_000):
    store.save({"state": {"data": {"i": i}}, "narrative": "saving.", "decisions": [], "priorities": [],
                "warnings": [{"text": "w", "severity": "low"}]})
"""


def test_a_reader_descheduled_between_its_reads_never_rebuilds_a_generation_on_disk(
    thread_dir: Path, python: str, subprocess_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loaded machine pauses a reader between reading state.json / the journal and scanning the files.

    The pauses are injected (5 ms sleeps around each read) to make the race the scheduler makes now
    and then happen on most restores; the writer is a real process saving as fast as it can. With
    the files scanned before state.json is read (the old order), most restores came back rebuilt.
    """
    HandoffStore(thread_dir).save({"state": {}, "narrative": "first."})
    real_files = scanning._scan_files

    def paused_mirror(path: Path) -> Mirror:
        time.sleep(0.005)
        mirror = read_mirror(path)
        time.sleep(0.005)
        return mirror

    def paused_files(store: ThreadSettings, identity: Identity) -> scanning.Scan:
        time.sleep(0.005)
        found = real_files(store, identity)
        time.sleep(0.005)
        return found

    # a pause on each side of each read: whatever order restore reads in, a save lands in between
    monkeypatch.setattr(recovery, "read_mirror", paused_mirror)
    monkeypatch.setattr(scanning, "_scan_files", paused_files)
    writer = subprocess.Popen([python, "-c", _WRITER, str(thread_dir)], env=subprocess_env)
    try:
        time.sleep(0.5)  # let the writer start saving
        sources = [HandoffStore(thread_dir).restore() for _ in range(60)]
    finally:
        writer.kill()
        writer.wait()
    rebuilt = [r for r in sources if r.source == "rebuilt"]
    assert not rebuilt, rebuilt[0].problems
    assert sources[-1].generation > sources[0].generation, "the writer was not saving during the restores"
