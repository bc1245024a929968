"""Issue 19 items 4 and 5: generation numbers and identity come only from this thread's verified generations.

Each test plants what an attacker with write access to the thread folder could: damaged bytes that
mention a huge number, a forged ``state.json``, history files with malformed names, another
thread's sealed file or journal lines. Each is passed over with a named problem, the next save gets
a number no generation of this thread had, chains on this thread's newest seal, and nothing is deleted.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from handoff_files import HandoffStore, load
from handoff_files.thread.doctor import examine
from handoff_files.thread.layout import generation_of
from handoff_files.thread.mirror import mirror_bytes, read_mirror

HUGE = 9223372036854775000


def layers(step: int) -> dict[str, object]:
    return {"narrative": f"Step {step} is done. The rest is routine.", "state": {"data": {"generation": HUGE}}}


def three(thread_dir: Path, **kwargs: object) -> tuple[HandoffStore, str]:
    """A thread with generations 1 to 3 whose state.data mentions a huge generation; the seal of the third."""
    store = HandoffStore(thread_dir, **kwargs)  # type: ignore[arg-type]
    seal = ""
    for step in (1, 2, 3):
        seal = store.save(layers(step)).checksum
    return store, seal


def flip_one_bit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[data.index(b"routine")] ^= 0x01
    before = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # bit rot: the bytes change, the mtime does not


def test_a_flipped_bit_in_a_primary_whose_data_holds_a_huge_number_does_not_set_the_next_generation(
    thread_dir: Path,
) -> None:
    store, seal = three(thread_dir)
    flip_one_bit(store.primary)
    assert str(HUGE).encode() in store.primary.read_bytes()
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation) == ("history", 3)
    assert not any(str(HUGE) in p for p in restored.problems), restored.problems
    receipt = HandoffStore(thread_dir).save(layers(4))
    assert receipt.generation == 4
    assert load(receipt.path).parent == seal
    assert list(store.history_dir.glob("displaced-*"))  # the damaged primary is kept, not overwritten unseen


def test_a_forged_state_json_with_a_huge_generation_is_passed_over(thread_dir: Path) -> None:
    store, seal = three(thread_dir)
    mirror = read_mirror(store.mirror_path)
    store.mirror_path.write_bytes(
        mirror_bytes(
            generation=HUGE,
            seal=mirror.seal,
            agent_id=mirror.agent_id,
            thread_id=mirror.thread_id,
            created_at=mirror.created_at,
            state=mirror.state,
            saves=mirror.saves,
            last_restore=None,
        )
    )
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation) == ("primary", 3)
    assert any("state.json" in p and str(HUGE) in p for p in restored.problems), restored.problems
    receipt = HandoffStore(thread_dir).save(layers(4))
    assert (receipt.generation, load(receipt.path).parent) == (4, seal)


@pytest.mark.parametrize(
    "stem",
    [
        pytest.param("1" + "0" * 29, id="30-digits"),
        pytest.param("92233720368547750001", id="20-digits"),
        pytest.param("0000000009", id="padded-past-8"),
        pytest.param("99999999999999999999", id="past-64-bits"),
        pytest.param("00000000", id="zero"),
    ],
)
def test_a_history_name_that_is_not_exactly_well_formed_is_not_a_generation(thread_dir: Path, stem: str) -> None:
    store, seal = three(thread_dir)
    planted = store.history_dir / f"{stem}.json"
    shutil.copyfile(store.history_dir / "00000003.json", planted)
    assert generation_of(planted.name) is None
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation) == ("primary", 3)
    receipt = HandoffStore(thread_dir).save(layers(4))
    assert (receipt.generation, load(receipt.path).parent) == (4, seal)
    assert planted.exists()  # never deleted, never pruned
    findings = examine(HandoffStore(thread_dir))
    assert any(planted.name in f.what for f in findings), [f.what for f in findings]


def test_history_names_are_exactly_the_librarys_own_width() -> None:
    from handoff_files.foundation.names import generation_from_stem, generation_stem

    assert generation_stem(7) == "00000007"
    assert generation_from_stem("00000007") == 7
    assert generation_from_stem("123456789") == 123456789
    assert generation_from_stem("9223372036854775807") == 2**63 - 1
    for bad in ("0000007", "000000007", "9223372036854775808", "١٢٣٤٥٦٧٨", "+0000007", "0000007 "):
        assert generation_from_stem(bad) is None, bad


def other_thread(tmp_path: Path, *, durability: str = "full") -> HandoffStore:
    """Another agent's thread with five generations (same folder name, other ids)."""
    where = tmp_path / "elsewhere" / "thread-1"
    other = HandoffStore(where, agent_id="intruder", thread_id="theirs", durability=durability)  # type: ignore[arg-type]
    for step in range(1, 6):
        other.save({"narrative": f"Their step {step}."})
    return other


def test_another_threads_sealed_file_copied_into_history_is_refused_named_and_kept(
    thread_dir: Path, tmp_path: Path
) -> None:
    store, seal = three(thread_dir)
    other = other_thread(tmp_path)
    planted = store.history_dir / "00000005.json"
    shutil.copyfile(other.history_dir / "00000005.json", planted)
    restored = HandoffStore(thread_dir).restore()
    assert (restored.generation, restored.handoff.thread_id) == (3, "thread-1")
    assert any("history/00000005.json" in p and "another thread" in p for p in restored.problems), restored.problems
    receipt = HandoffStore(thread_dir).save(layers(4))
    saved = load(receipt.path)
    assert saved.parent == seal  # chained on this thread's generation 3, never on the foreign file
    assert saved.generation == 6  # past every well-formed name: the planted file is never overwritten
    assert load(planted).thread_id == "theirs"
    assert HandoffStore(thread_dir).restore().generation == 6


def test_another_threads_sealed_primary_is_refused_and_kept_aside(thread_dir: Path, tmp_path: Path) -> None:
    store, seal = three(thread_dir)
    other = other_thread(tmp_path)
    shutil.copyfile(other.primary, store.primary)
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation, restored.handoff.thread_id) == ("history", 3, "thread-1")
    assert any("handoff.json" in p and "another thread" in p for p in restored.problems), restored.problems
    receipt = HandoffStore(thread_dir).save(layers(4))
    assert (receipt.generation, load(receipt.path).parent) == (4, seal)
    kept = list(store.history_dir.glob("displaced-*"))
    assert [load(path).thread_id for path in kept] == ["theirs"]


def test_another_threads_journal_lines_appended_are_refused(thread_dir: Path, tmp_path: Path) -> None:
    store, seal = three(thread_dir, durability="journal")
    other = other_thread(tmp_path, durability="journal")
    theirs = other.journal.path.read_bytes().splitlines(keepends=True)
    with store.journal.path.open("ab") as journal:
        journal.writelines(theirs[-2:])  # generation 5's document line and its save line
    restored = HandoffStore(thread_dir).restore()
    assert (restored.generation, restored.handoff.thread_id) == (3, "thread-1")
    assert any("another thread" in p for p in restored.problems), restored.problems
    assert HandoffStore(thread_dir, durability="journal").save(layers(4)).generation == 4
    after = HandoffStore(thread_dir).restore().handoff
    assert (after.generation, after.parent, after.thread_id) == (4, seal, "thread-1")
    assert json.loads(theirs[-1])["generation"] == 5
