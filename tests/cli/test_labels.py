"""Labels that say what is so: a rebuilt handoff, migrated ids, a file given as a thread, a transferred thread."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from handoff_files import HandoffStore, LocalBlobStore, load, transfer
from handoff_files.cli.main import main
from tests.cli.shell import handoff, machine
from tests.conftest import ROOT


def test_show_of_a_rebuilt_handoff_says_it_has_no_seal_and_was_not_migrated(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "t1"
    store = HandoffStore(thread, durability="full")  # a journal-first journal would restore the generation itself
    store.save({"narrative": "Ported half the importer."})
    store.save({"narrative": "Ported all of the importer."})
    (thread / "handoff.json").unlink()
    for copy in (thread / "history").iterdir():
        copy.unlink()
    done = handoff("show", thread, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    assert "from: rebuilt" in done.stdout
    assert "migrated" not in head, head
    assert "sealed" not in head.replace("not sealed", ""), head
    assert "rebuilt from state.json and the journal" in head, head


def test_show_of_a_handoff_restored_from_its_journal_line_says_so_and_that_it_is_sealed(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "t1"
    store = HandoffStore(thread)  # journal-first, the default: the journal line holds the whole generation
    store.save({"narrative": "Ported half the importer."})
    receipt = store.save({"narrative": "Ported all of the importer."})
    (thread / "handoff.json").unlink()
    for copy in (thread / "history").iterdir():
        copy.unlink()
    done = handoff("show", thread, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    head, source = done.stdout.splitlines()[:2]
    assert "generation 2, sealed" in head, head
    assert receipt.checksum.split(":")[1][:12] in head, head
    assert source.startswith("from: journal"), source
    assert "restored from its journal line" in done.stdout
    assert "Ported all of the importer." in done.stdout


def test_migrate_prints_the_ids_it_writes(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    old = tmp_path / "old-run"
    old.mkdir()
    shutil.copyfile(ROOT / "samples" / "v1.0" / "coding-task.json", old / "handoff.json")
    dry = handoff("migrate", old, "--dry-run", env=subprocess_env)
    done = handoff("migrate", old, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    written = load(old / "handoff.json")
    assert (written.agent_id, written.thread_id) == ("old-run", "old-run")
    for out in (dry.stdout, done.stdout):
        assert "set to 'legacy'" not in out, out
        assert "the ids of the thread it is sealed in" in out, out


def test_run_refuses_a_file_given_as_the_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    content = tmp_path / "content.yaml"
    content.write_text("narrative: a content file, not a thread\n", encoding="utf-8")
    marker = tmp_path / "started"
    assert main(["run", str(content), "--", "touch", str(marker)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"handoff: {content}: is not a directory: give the thread's directory" in err
    assert not marker.exists(), "the agent was never started"
    assert content.read_text(encoding="utf-8") == "narrative: a content file, not a thread\n"


def test_show_of_a_transferred_thread_names_the_target(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    source, target = tmp_path / "alpha", tmp_path / "beta"
    HandoffStore(source).save({"narrative": "Ported half the importer."})
    transfer(source, target, blobs=LocalBlobStore(tmp_path / "blobs"))
    done = handoff("show", source, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert f"transferred to: {target} (thread beta" in done.stdout
    shown = machine(handoff("show", source, "--json", env=subprocess_env))
    assert (shown["transferred_to"]["target"], shown["transferred_to"]["thread_id"]) == (str(target), "beta")
    assert machine(handoff("show", target, "--json", env=subprocess_env))["transferred_to"] is None
