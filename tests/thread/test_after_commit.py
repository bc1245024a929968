"""A failure after a save's commit point is not a failed save: the receipt names the copies left unwritten.

The failure is real, not injected: the save runs in a child process whose file-size limit
(``RLIMIT_FSIZE``) the kernel enforces (EFBIG). For a full save the journal is made larger than
the limit, so its append is refused while the save's new, small files are written; for a
journal-first save (the default) the generation's files are made larger than the limit while
its compact journal line fits, so the copies are refused after the line committed it.
(Permissions would do for a user, but the tests may run as root.) The torture suite's fault part
checks the same contract at every OS call.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
from pathlib import Path
from typing import Any

from handoff_files import HandoffStore
from tests.writer_child import content

LIMIT = 32 * 1024  # bytes any file of the child may reach: the journal is made larger than this


def _big_journal(thread: Path, durability: str = "full") -> None:
    store = HandoffStore(thread, durability=durability)  # type: ignore[arg-type]
    store.save(content("w", 1, 0))
    while (thread / "journal.jsonl").stat().st_size <= LIMIT:
        store.note("hook", "a note that makes the journal longer than the child's file-size limit " * 3)


def _limited() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal, as a careful program sets
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


_SAVE = """
import json, sys
from handoff_files import HandoffStore, HandoffError
try:
    receipt = HandoffStore(sys.argv[1], durability=sys.argv[2]).save(json.loads(sys.argv[3]))
except HandoffError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
else:
    print(json.dumps({"generation": receipt.generation, "unfinished": list(receipt.unfinished)}))
"""


#: Layers whose indented file is over LIMIT while the compact journal line holding them is under it.
WIDE: dict[str, Any] = {
    "narrative": "A long list, one number a line in the file.",
    "state": {"data": {"n": list(range(4000))}},
}


def _save_limited(
    thread: Path, durability: str, python: str, env: dict[str, str], layers: dict[str, Any] | None = None
) -> dict[str, object]:
    layers_json = json.dumps(layers or content("w", 2, 0))
    done = subprocess.run(
        [python, "-c", _SAVE, str(thread), durability, layers_json],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=_limited,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_journal_line_refused_after_a_full_commit_is_named_in_the_receipt(
    thread_dir: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    _big_journal(thread_dir)
    result = _save_limited(thread_dir, "full", python, subprocess_env)
    assert result["generation"] == 2, result
    unfinished = result["unfinished"]
    assert isinstance(unfinished, list)
    assert len(unfinished) == 1
    assert unfinished[0].startswith(f"{thread_dir / 'journal.jsonl'}: cannot append to the journal: ")
    assert HandoffStore(thread_dir).restore().generation == 2
    assert HandoffStore(thread_dir).save(content("w", 3, 0)).generation == 3  # no second generation 2


def test_a_journal_first_save_whose_commit_line_is_refused_raises_and_commits_nothing(
    thread_dir: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    _big_journal(thread_dir, "journal")
    result = _save_limited(thread_dir, "journal", python, subprocess_env)
    assert result["error"] == "HandoffWriteError", result
    assert "cannot append to the journal" in str(result["message"])
    assert HandoffStore(thread_dir).restore().generation == 1


def test_copies_refused_after_a_journal_first_commit_are_named_in_the_receipt(
    thread_dir: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    first = HandoffStore(thread_dir, durability="journal").save(content("w", 1, 0))
    result = _save_limited(thread_dir, "journal", python, subprocess_env, WIDE)
    assert result["generation"] == 2, result
    unfinished = result["unfinished"]
    assert isinstance(unfinished, list)
    assert {entry.split(": ")[0] for entry in unfinished} >= {
        str(thread_dir / "history" / "00000002.json"),
        str(thread_dir / "handoff.json"),
    }
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation, restored.handoff.parent) == ("journal", 2, first.checksum)
    assert HandoffStore(thread_dir).save(content("w", 3, 0)).generation == 3  # no second generation 2


def test_handoff_save_exits_3_with_the_receipt_and_says_not_to_save_again(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """The command saves journal-first (the default): its copies over the limit fail after the commit."""
    thread = tmp_path / "t1"
    HandoffStore(thread).save(content("w", 1, 0))
    layers = tmp_path / "c.json"
    layers.write_text(json.dumps(WIDE))
    done = subprocess.run(
        [python, "-m", "handoff_files", "save", str(thread), str(layers), "--json"],
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=_limited,
    )
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["generation"] == 2
    *unfinished, advice = done.stderr.splitlines()
    assert unfinished, done.stderr
    assert all(line.startswith("handoff: saved generation 2, but left unfinished: ") for line in unfinished)
    assert any(str(thread / "handoff.json") in line for line in unfinished), done.stderr
    assert "do not save again" in advice
    assert HandoffStore(thread).restore().generation == 2
