"""HandoffStore: the envelope it fills, the files it keeps, and what restore() returns when things break."""

from __future__ import annotations

import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from handoff_files import (
    HandoffContent,
    HandoffError,
    HandoffStore,
    HandoffValidationError,
    HandoffWriteError,
    InvalidNameError,
    NoHandoffError,
    load,
)
from handoff_files.foundation.lock import writer_lock

CONTENT = {"narrative": "Working.", "priorities": [{"task": "go on", "urgency": "first"}]}


def saved(store: HandoffStore, n: int) -> list[str]:
    return [store.save({**CONTENT, "narrative": f"step {i}"}).checksum for i in range(1, n + 1)]


def test_the_envelope_is_filled_from_the_directory_and_the_chain(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    first = store.save(CONTENT)
    second = store.save(HandoffContent.model_validate({**CONTENT, "narrative": "Done."}))
    handoff = load(second.path)
    assert (handoff.agent_id, handoff.thread_id) == ("thread-1", "thread-1")
    assert (handoff.generation, handoff.parent) == (2, first.checksum)
    assert handoff.created_at.utcoffset() is not None
    assert handoff.created_at == second.created_at


def test_a_reopened_store_keeps_the_agent_id_the_thread_was_saved_with(thread_dir: Path) -> None:
    HandoffStore(thread_dir, agent_id="alice").save(CONTENT)
    receipt = HandoffStore(thread_dir).save(CONTENT)
    assert load(receipt.path).agent_id == "alice"
    with pytest.raises(HandoffValidationError, match="belongs to agent 'alice'"):
        HandoffStore(thread_dir, agent_id="bob").save(CONTENT)


def test_saving_a_handoff_takes_its_layers_and_replaces_its_envelope(tmp_path: Path) -> None:
    other = HandoffStore(tmp_path / "other", agent_id="elsewhere")
    saved(other, 3)
    handoff = other.restore().handoff
    receipt = HandoffStore(tmp_path / "mine").save(handoff)
    mine = load(receipt.path)
    assert (mine.generation, mine.agent_id, mine.parent) == (1, "mine", None)
    assert mine.content() == handoff.content()


def test_files_are_0600_and_directories_0700(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    saved(store, 2)
    for path in [thread_dir, thread_dir / "history"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    for path in [store.primary, thread_dir / ".lock", *(thread_dir / "history").iterdir()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_history_keeps_the_last_k_generations_including_the_current_one(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, keep=3)
    saved(store, 6)
    names = sorted(p.name for p in (thread_dir / "history").iterdir())
    assert names == ["00000004.json", "00000005.json", "00000006.json"]
    assert load(thread_dir / "history" / "00000006.json") == load(store.primary)


def test_history_is_a_separate_copy_so_editing_the_primary_in_place_leaves_it_sealed(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    receipt = saved(store, 2)[-1]
    assert store.primary.stat().st_nlink == 1
    at = store.primary.read_bytes().index(b"step 2")
    with store.primary.open("r+b") as handle:  # an editor that writes in place, as nano does
        handle.seek(at)
        handle.write(b"step X")
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation, str(restored.handoff.seal)) == ("history", 2, receipt)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.unlink(), id="deleted"),
        pytest.param(lambda p: p.write_bytes(p.read_bytes()[:100]), id="truncated"),
        pytest.param(lambda p: p.write_bytes(b""), id="emptied"),
        pytest.param(lambda p: p.write_bytes(p.read_bytes().replace(b"step 3", b"step 9")), id="edited"),
    ],
)
def test_restore_falls_back_to_history_when_the_primary_is_damaged(thread_dir: Path, damage: object) -> None:
    store = HandoffStore(thread_dir)
    checksums = saved(store, 3)
    damage(store.primary)  # type: ignore[operator]
    restored = HandoffStore(thread_dir).restore()
    assert restored.source == "history"
    assert restored.generation == 3
    assert str(restored.handoff.seal) == checksums[-1]
    assert restored.problems
    assert any("handoff.json" in problem for problem in restored.problems)


def test_restore_climbs_down_history_past_damaged_generations_and_says_what_was_lost(thread_dir: Path) -> None:
    # full saves: a journal-first save's journal line would restore generation 4 (tests/thread/test_durability.py)
    store = HandoffStore(thread_dir, durability="full")
    checksums = saved(store, 4)
    store.primary.unlink()
    (thread_dir / "history" / "00000004.json").write_bytes(b"{")
    (thread_dir / "history" / "00000003.json").unlink()
    (thread_dir / "state.json").unlink()  # with it, generation 4 would be rebuilt (tests/thread/test_recovery.py)
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation) == ("history", 2)
    assert str(restored.handoff.seal) == checksums[1]
    assert any("up to 4 are lost" in p for p in restored.problems)


def test_restore_prefers_a_newer_history_generation_over_a_primary_left_behind(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    saved(store, 2)
    old = store.primary.read_bytes()
    store.save(CONTENT)
    store.primary.write_bytes(old)  # as if a crash fell between the history commit and the primary's update
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation) == ("history", 3)
    assert any("interrupted" in p for p in restored.problems)


def test_restore_of_nothing_raises_no_handoff_error_never_returns_empty(tmp_path: Path) -> None:
    with pytest.raises(NoHandoffError, match="no such thread directory"):
        HandoffStore(tmp_path / "never").restore()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(NoHandoffError, match="nothing here verifies"):
        HandoffStore(empty).restore()
    # a full save's journal holds summaries only: with state.json gone too, nothing can be rebuilt from it
    store = HandoffStore(tmp_path / "ruined", durability="full")
    saved(store, 2)
    for path in [store.primary, store.mirror_path, *(tmp_path / "ruined" / "history").iterdir()]:
        path.write_bytes(b"garbage")
    with pytest.raises(NoHandoffError, match="nothing here verifies"):
        HandoffStore(tmp_path / "ruined").restore()
    # a journal-first save's journal holds the whole generation: it is one more channel to ruin
    store = HandoffStore(tmp_path / "ruined-journal")
    saved(store, 2)
    for path in [store.primary, store.mirror_path, store.journal.path, *store.history_dir.iterdir()]:
        path.write_bytes(b"garbage")
    with pytest.raises(NoHandoffError, match="nothing here verifies"):
        HandoffStore(tmp_path / "ruined-journal").restore()


def test_a_save_over_a_damaged_primary_keeps_it_and_never_reuses_a_generation(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, keep=1)
    saved(store, 5)
    (thread_dir / "history" / "00000005.json").unlink()  # generation 5 now lives only in a damaged primary
    store.primary.write_bytes(store.primary.read_bytes()[:-40])
    receipt = HandoffStore(thread_dir).save(CONTENT)
    assert receipt.generation == 6, "generation 5 was seen in the damaged file, so it must not be reused"
    assert any("displaced-" in p for p in receipt.problems)
    displaced = [p for p in (thread_dir / "history").iterdir() if p.name.startswith("displaced-")]
    assert len(displaced) == 1
    with pytest.raises(HandoffError):
        load(displaced[0])


def test_opening_a_store_removes_temp_files_a_crashed_writer_left(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    saved(store, 1)
    strays = [thread_dir / ".handoff.json.abc123xy.tmp", thread_dir / "history" / ".00000002.json.zz99zz_0.tmp"]
    for stray in strays:
        stray.write_bytes(b"half a handoff")
    keeps = [thread_dir / "notes.tmp", thread_dir / ".my.notes.backup.tmp"]  # not ours: left alone
    for keep in keeps:
        keep.write_bytes(b"x")
    HandoffStore(thread_dir)
    assert not any(s.exists() for s in strays)
    assert all(keep.exists() for keep in keeps)


def test_a_writer_waiting_for_the_lock_times_out_with_a_typed_error(thread_dir: Path) -> None:
    from handoff_files import HandoffLockedError

    store = HandoffStore(thread_dir, lock_timeout=0.2)
    store.init()
    with writer_lock(thread_dir), pytest.raises(HandoffLockedError, match="another writer"):
        store.save(CONTENT)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"thread_id": "../../etc"}, InvalidNameError, id="traversal-thread-id"),
        pytest.param({"agent_id": "a/b"}, InvalidNameError, id="slash-agent-id"),
        pytest.param({"agent_id": ""}, InvalidNameError, id="empty-agent-id"),
        pytest.param({"keep": 0}, HandoffValidationError, id="keep-zero"),
        pytest.param({"algorithm": "md5"}, HandoffValidationError, id="unknown-algorithm"),
        pytest.param({"format": "xml"}, HandoffValidationError, id="unknown-format"),
    ],
)
def test_bad_store_arguments_are_refused(thread_dir: Path, kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        HandoffStore(thread_dir, **kwargs)  # type: ignore[arg-type]


def test_a_thread_with_both_json_and_yaml_primaries_is_refused(thread_dir: Path) -> None:
    HandoffStore(thread_dir).save(CONTENT)
    (thread_dir / "handoff.yaml").write_text("narrative: x\n", encoding="utf-8")
    with pytest.raises(HandoffError, match=r"both handoff\.json and handoff\.yaml"):
        HandoffStore(thread_dir)


def test_a_yaml_thread_refuses_to_be_opened_as_json(thread_dir: Path) -> None:
    HandoffStore(thread_dir, format="yaml").save(CONTENT)
    assert HandoffStore(thread_dir).format == "yaml"
    with pytest.raises(HandoffValidationError, match="the thread's primary is YAML, not JSON"):
        HandoffStore(thread_dir, format="json")


@pytest.mark.parametrize(
    ("durability", "expected"),
    [
        # a full save's commit point is history/'s new file: its atomic write fails, nothing replaced
        pytest.param("full", ("write failed, the previous file is unchanged", "history"), id="full"),
        # a journal-first save's commit point is its journal line: the append fails before any file is written
        pytest.param("journal", ("cannot append to the journal", "journal.jsonl"), id="journal"),
    ],
)
def test_a_failed_write_raises_and_leaves_the_saved_generation_untouched(
    thread_dir: Path, python: str, subprocess_env: dict[str, str], durability: str, expected: tuple[str, str]
) -> None:
    """A real failing write: the child caps its file size (RLIMIT_FSIZE), so write() fails with EFBIG."""
    refusal, named = expected
    store = HandoffStore(thread_dir)
    saved(store, 2)
    before = {p: p.read_bytes() for p in [store.primary, *(thread_dir / "history").iterdir()]}
    child = textwrap.dedent(
        f"""
        import resource, signal, sys
        from handoff_files import HandoffStore, HandoffWriteError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG from write() instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
        try:
            HandoffStore({str(thread_dir)!r}, durability={durability!r}).save({{"narrative": "x" * 60000}})
        except HandoffWriteError as exc:
            print("refused:", exc)
            sys.exit(0)
        sys.exit("the oversized save was acknowledged")
        """
    )
    done = subprocess.run([python, "-c", child], capture_output=True, text=True, env=subprocess_env, check=False)
    assert done.returncode == 0, done.stderr
    assert refusal in done.stdout
    assert str(thread_dir / named) in done.stdout
    after = {p: p.read_bytes() for p in [store.primary, *(thread_dir / "history").iterdir()]}
    assert after == before
    assert HandoffStore(thread_dir).restore().generation == 2
    assert not list(thread_dir.rglob("*.tmp"))


def test_save_refuses_invalid_content_before_touching_the_disk(thread_dir: Path) -> None:
    with pytest.raises(HandoffValidationError, match="energy_level"):
        HandoffStore(thread_dir).save({"state": {"energy_level": 2}})
    assert not thread_dir.exists()
    blocker = thread_dir.parent / "blocker"
    blocker.write_text("a file where a directory should be", encoding="utf-8")
    with pytest.raises(HandoffWriteError, match="cannot create the thread directory"):
        HandoffStore(blocker / "t").save(CONTENT)
