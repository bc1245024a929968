"""handoff doctor: finds what is wrong with each channel, repairs what can be repaired, says what cannot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handoff_files import HandoffStore, load
from handoff_files.cli.main import main
from handoff_files.thread.doctor import Finding, examine


def thread(thread_dir: Path, saves: int = 3) -> HandoffStore:
    store = HandoffStore(thread_dir)
    for i in range(1, saves + 1):
        store.save({"narrative": f"Step {i} done.", "priorities": [{"task": f"step {i + 1}", "urgency": "first"}]})
    return store


def levels(findings: list[Finding]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in findings:
        out.setdefault(f.level, []).append(f.what)
    return out


def test_a_healthy_thread_is_all_ok_and_exits_0(thread_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread(thread_dir)
    assert set(levels(examine(HandoffStore(thread_dir)))) == {"ok"}
    assert main(["doctor", str(thread_dir)]) == 0
    assert "BAD" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: p.unlink(), id="missing"),
        pytest.param(lambda p: p.write_bytes(b"{"), id="truncated"),
    ],
)
def test_a_damaged_primary_is_an_error_that_repair_rewrites_from_history(thread_dir: Path, damage: object) -> None:
    store = thread(thread_dir)
    damage(store.primary)  # type: ignore[operator]
    found = levels(examine(HandoffStore(thread_dir)))
    assert any("handoff.json" in what for what in found["error"])
    repaired = levels(examine(HandoffStore(thread_dir), repair=True))
    assert any("handoff.json" in what for what in repaired["repaired"])
    assert load(store.primary).generation == 3
    assert set(levels(examine(HandoffStore(thread_dir)))) == {"ok"}
    last, _ = store.journal.last("repaired")
    assert last is not None
    assert "rewrote handoff.json" in last.summary


def test_a_stale_or_damaged_state_json_is_rewritten(thread_dir: Path) -> None:
    store = thread(thread_dir)
    store.mirror_path.write_text("{}", encoding="utf-8")
    assert "warning" in levels(examine(HandoffStore(thread_dir)))
    assert "repaired" in levels(examine(HandoffStore(thread_dir), repair=True))
    assert json.loads(store.mirror_path.read_text(encoding="utf-8"))["generation"] == 3


def test_a_torn_journal_tail_is_cut_and_a_damaged_middle_line_is_set_aside(
    thread_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = thread(thread_dir)
    lines = store.journal.path.read_bytes().split(b"\n")
    # the first save line (a journal-first save's document line comes before it, its seal checks the document)
    at = next(number for number, line in enumerate(lines) if b'"event":"saved"' in line)
    lines[at] = lines[at].replace(b"Step", b"Stop", 1)
    store.journal.path.write_bytes(b"\n".join(lines) + b'{"torn')
    assert main(["doctor", str(thread_dir)]) == 1
    out = capsys.readouterr().out
    assert "torn line" in out
    assert f"line {at + 1} is damaged" in out
    assert main(["doctor", "--repair", str(thread_dir)]) == 0  # the damaged line is moved aside, kept
    out = capsys.readouterr().out
    assert "FIXED" in out
    assert "journal.damaged-" in out
    assert store.journal.path.read_bytes().endswith(b"\n")


def test_wide_modes_are_narrowed_and_stray_temps_removed(thread_dir: Path) -> None:
    store = thread(thread_dir)
    store.mirror_path.chmod(0o644)
    (thread_dir / "history").chmod(0o755)
    stray = thread_dir / ".handoff.json.abcd1234.tmp"
    stray.write_bytes(b"half")
    found = levels(examine(_no_clean(thread_dir)))
    assert any("mode 644" in what for what in found["warning"])
    assert any("temp files" in what for what in found["warning"])
    repaired = levels(examine(_no_clean(thread_dir), repair=True))
    assert len(repaired["repaired"]) >= 3
    assert (store.mirror_path.stat().st_mode & 0o777) == 0o600
    assert ((thread_dir / "history").stat().st_mode & 0o777) == 0o700
    assert not stray.exists()


def _no_clean(thread_dir: Path) -> HandoffStore:
    """A store whose opening does not clean temp files (the lock is held meanwhile), so the doctor sees them."""
    from handoff_files.foundation.lock import writer_lock

    with writer_lock(thread_dir):
        return HandoffStore(thread_dir)


def test_a_broken_chain_is_reported(thread_dir: Path) -> None:
    store = thread(thread_dir)
    second = store.history_dir / "00000002.json"
    document = json.loads(second.read_text(encoding="utf-8"))
    document["parent"] = "blake3:" + "0" * 64
    from handoff_files.format.seal import canonical, digest

    document["seal"] = {"algorithm": "blake3", "digest": digest(canonical(document))}
    second.write_text(json.dumps(document), encoding="utf-8")
    found = levels(examine(HandoffStore(thread_dir)))
    assert any("chain broken: generation 2" in what for what in found["error"])


def test_doctor_of_a_missing_thread_is_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", str(tmp_path / "nowhere")]) == 1
    assert "no such file or thread directory" in capsys.readouterr().err


def test_log_shows_the_journal_as_a_timeline(thread_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = thread(thread_dir)
    store.acknowledge(store.restore())
    assert main(["log", str(thread_dir)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[2] for line in lines] == ["saved", "saved", "saved", "resumed"]
    assert "Step 3 done. Next: step 4" in lines[2]
    assert main(["log", "--json", str(thread_dir)]) == 0
    # machine output keeps every line: a journal-first save's document line (named, not printed) and its save line
    events = [entry["event"] for entry in json.loads(capsys.readouterr().out)["entries"]]
    assert events == ["document", "saved"] * 3 + ["resumed"]
